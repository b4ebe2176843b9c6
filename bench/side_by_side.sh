# Sourced by bench/cliffs/run.sh and bench/numpy_forms/run.sh: times each
# case of $dir/cases.shoal with :time in one native-tier session (best of 5
# after a first run, which builds its plans), then NumPy ($dir/peers.py, in
# the venv cpu_peers.sh makes on first use), and prints case, Shoal ms,
# NumPy ms and the ratio. A case is a `-- name` line followed by six
# `:time` statements. BUILD=dir picks the build.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cpu_peers.sh"
out=$(mktemp -d)
SHOAL_CACHE_DIR=$out/cache SHOAL_CPU_TIER=native "$build/shoal" "$dir/cases.shoal" >"$out/shoal" 2>&1
"$python" "$dir/peers.py" >"$out/peers"
"$python" - "$out" "$dir/cases.shoal" <<'PY'
import re, sys
out, script = sys.argv[1], sys.argv[2]
names = [l[3:].strip() for l in open(script) if re.match(r"-- [a-z0-9_x]+$", l.strip())]
def ms(text):
    v, unit = text.split()
    return float(v) * {"ms": 1, "s": 1000, "us": 1e-3, "ns": 1e-6}[unit]
# A statement's time with its parsing and type checking (the front end).
times = [ms(m.group(1)) + ms(m.group(2)) for m in
         (re.match(r"time: ([0-9.]+ [mun]?s).*; front end ([0-9.]+ [mun]?s)", l) for l in open(out + "/shoal")) if m]
peers = dict(l.split() for l in open(out + "/peers"))
print("%-22s %10s %10s %7s" % ("case", "shoal ms", "numpy ms", "ratio"))
for i, n in enumerate(names):
    s = min(times[6 * i + 1:6 * i + 6])
    p = float(peers[n])
    print("%-22s %10.3f %10.3f %6.2fx" % (n, s, p, s / p))
PY
rm -rf "$out"
