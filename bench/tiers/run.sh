#!/usr/bin/env bash
# The CPU tiers side by side (issue 21): each program of tiers.shoal (n = 2^22
# floats) timed with :time inside one session (best of 7 after a first run) on the interpreter and as native
# code (SHOAL_CPU_TIER=native: built before the first run, which is dropped),
# then numpy, numexpr and JAX on the CPU (peers.py, from a venv made on first
# use in $BUILD/bench-venv-tiers). Prints a table of best times in ms and the
# ratios, the copy floor (STREAM's copy, numpy on every core) against the
# memory-bound programs, and each program's native build and cache-load
# times. BUILD=dir picks the build (default build).
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/cpu_peers.sh
out=$(mktemp -d)
export SHOAL_CACHE_DIR=$out/cache
# native-cached: the native tier again, every plan from the disk cache.
for tier in interpret native native-cached; do
  SHOAL_CPU_TIER=${tier%-cached} "$build/shoal" bench/tiers/tiers.shoal 2>&1 | grep '^time: ' >"$out/$tier"
done
"$python" bench/tiers/peers.py >"$out/peers"
"$python" - "$out" <<'PY'
import sys, collections, math, re, statistics
out = sys.argv[1]
names = ["saxpy", "rmse", "sum", "fwd_diff", "spencer", "blackscholes", "scan", "filter", "sort"]
# arrays of 2^22 floats a program must read and write at least (memory-bound ones)
arrays = {"saxpy": 3, "rmse": 2, "sum": 1, "fwd_diff": 2, "spencer": 2}
def ms(text):
    v, unit = text.split()
    return float(v) * {"ms": 1, "s": 1000, "us": 1e-3, "ns": 1e-6}[unit]
def lines(tier):
    return [l for l in open(out + "/" + tier)]
shoal, built, loaded = {}, {}, {}
for tier in ("interpret", "native"):
    times = [ms(re.match(r"time: ([0-9.]+ [mun]?s)", l).group(1)) for l in lines(tier)]
    # eight runs per program; the first (the build, fresh pages) is dropped
    shoal[tier] = {n: min(times[8 * i + 1:8 * i + 8]) for i, n in enumerate(names)}
for i, n in enumerate(names):
    m = re.search(r"compiled \d+ kernels? \(([0-9.]+ [mun]?s)\)", lines("native")[8 * i])
    built[n] = ms(m.group(1)) if m else float("nan")
    m = re.search(r"from the cache \(([0-9.]+ [mun]?s)\)", lines("native-cached")[8 * i])
    loaded[n] = ms(m.group(1)) if m else float("nan")
peers = collections.defaultdict(dict)
for line in open(out + "/peers"):
    prog, peer, t = line.split()
    peers[prog][peer] = float(t)
copy = peers["copy"]["floor"]  # 2 arrays moved
print("copy floor: %.2f ms for 2 arrays of 2^22 floats (%.1f GB/s)" % (copy, 2 * 4 * 2**22 / copy / 1e6))
print("%-13s %9s %9s %7s %8s %8s %8s %11s %9s %9s %9s" % ("program", "interp", "native", "speedup", "numpy", "numexpr",
      "jax", "best/native", "floor/nat", "build ms", "load ms"))
logs = []
for n in names:
    p = peers[n]
    best = min(p.values()) if p else float("nan")
    r = best / shoal["native"][n]
    logs.append(math.log(r))
    floor = "%.2fx" % (copy * arrays[n] / 2 / shoal["native"][n]) if n in arrays else "-"
    print("%-13s %9.2f %9.2f %6.1fx %8.2f %8s %8s %10.2fx %9s %9.1f %9.2f" % (n, shoal["interpret"][n], shoal["native"][n],
          shoal["interpret"][n] / shoal["native"][n], p.get("numpy", float("nan")),
          "%.2f" % p["numexpr"] if "numexpr" in p else "-", "%.2f" % p["jax"] if "jax" in p else "-", r, floor,
          built[n], loaded[n]))
six = logs[:6]
print("geomean best-peer/native over the six seed programs: %.2fx (above 1: Shoal is faster)" % math.exp(sum(six) / len(six)))
b = [v for v in built.values() if v == v]
l = [v for v in loaded.values() if v == v]
print("native build per program's first statement: median %.0f ms, max %.0f ms; from the cache: median %.2f ms, max %.2f ms"
      % (statistics.median(b), max(b), statistics.median(l), max(l)))
PY
rm -rf "$out"
