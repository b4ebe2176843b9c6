#!/usr/bin/env bash
# The CPU tiers side by side (issue 21): each program of tiers.shoal (n = 2^22
# floats) timed with :time inside one session (best of 7 after a first run) on the interpreter and as native
# code (SHOAL_CPU_TIER=native: built before the first run, which is dropped),
# then numpy, numexpr and JAX on the CPU (peers.py, from a venv made on first
# use in $BUILD/bench-venv-tiers). Prints a table of best times in ms and the
# ratios. BUILD=dir picks the build (default build).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
python=$build/bench-venv-tiers/bin/python
if [ ! -x "$python" ]; then
  python3 -m venv "$build/bench-venv-tiers" && "$build/bench-venv-tiers/bin/pip" install -q numpy numexpr "jax[cpu]"
fi
out=$(mktemp -d)
export SHOAL_CACHE_DIR=$out/cache
for tier in interpret native; do
  SHOAL_CPU_TIER=$tier "$build/shoal" bench/tiers/tiers.shoal 2>&1 | grep -o 'time: [0-9.]* [mu]*s' >"$out/$tier"
done
"$python" bench/tiers/peers.py >"$out/peers"
"$python" - "$out" <<'PY'
import sys, collections
out = sys.argv[1]
names = ["saxpy", "rmse", "sum", "fwd_diff", "spencer", "blackscholes", "scan", "filter", "sort"]
def ms(t):
    v, unit = t.split()[1:]
    return float(v) * {"ms": 1, "s": 1000, "us": 1e-3}[unit]
shoal = {}
for tier in ("interpret", "native"):
    times = [ms(l) for l in open(out + "/" + tier)]
    # eight runs per program; the first (the build, fresh pages) is dropped
    shoal[tier] = {n: min(times[8 * i + 1:8 * i + 8]) for i, n in enumerate(names)}
peers = collections.defaultdict(dict)
for line in open(out + "/peers"):
    prog, peer, t = line.split()
    peers[prog][peer] = float(t)
print("%-13s %10s %10s %8s %9s %9s %9s %12s" % ("program", "interp ms", "native ms", "speedup", "numpy", "numexpr", "jax", "best/native"))
import math
logs = []
for n in names:
    p = peers[n]
    best = min(p.values()) if p else float("nan")
    r = best / shoal["native"][n]
    logs.append(math.log(r))
    print("%-13s %10.2f %10.2f %7.1fx %9.2f %9s %9s %11.2fx" % (n, shoal["interpret"][n], shoal["native"][n],
          shoal["interpret"][n] / shoal["native"][n], p.get("numpy", float("nan")),
          "%.2f" % p["numexpr"] if "numexpr" in p else "-", "%.2f" % p["jax"] if "jax" in p else "-", r))
six = logs[:6]
print("geomean best-peer/native over the six seed programs: %.2fx (above 1: Shoal is faster)" % math.exp(sum(six) / len(six)))
PY
rm -rf "$out"
