#!/usr/bin/env bash
# Instructions per statement (valgrind's callgrind), for the fixed cost of
# small statements: deterministic where this machine's timings move 10-30%
# between runs. Each case of cases.txt (`name|setup|statement`) runs in two
# scripts, the setup then the statement once and then N times; the
# difference over N-1 is one statement's cost, startup and first-run
# compiles cancelling. The native tier is built without AVX-512 so that
# valgrind can run it (SHOAL_NATIVE_FLAGS). `bash bench/instructions/run.sh
# [case...]`; BUILD=dir picks the build, N the repetitions (default 300).
# With PROFILE=1 the top functions of each case (inclusive, per statement;
# a rough guide: a recursive function counts once per level, and what the
# first statement compiled does not always cancel at a small N).
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
cd "$dir/../.."
build=${BUILD:-build}
n=${N:-300}
if ! command -v valgrind >/dev/null; then
  echo "bench/instructions: valgrind is not installed (apt-get install valgrind)" >&2
  exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() {  # script -> instructions
  SHOAL_NATIVE_FLAGS="-mno-avx512f" SHOAL_CACHE_DIR=$out/cache SHOAL_CPU_TIER=native \
    valgrind --tool=callgrind --callgrind-out-file="$2" "$build/shoal" "$1" 2>&1 >/dev/null |
    awk '/refs:/ {gsub(/,/, "", $4); print $4}'
}
printf "%-22s %14s\n" case "instructions"
while IFS='|' read -r name setup statement; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  if [ $# -gt 0 ] && [[ ! " $* " == *" $name "* ]]; then continue; fi
  { printf '%b\n' "$setup"; echo "$statement"; } >"$out/once.shoal"
  { printf '%b\n' "$setup"; for _ in $(seq "$n"); do echo "$statement"; done; } >"$out/many.shoal"
  once=$(count "$out/once.shoal" "$out/once.cg")
  many=$(count "$out/many.shoal" "$out/many.cg")
  printf "%-22s %14d\n" "$name" $(((many - once) / (n - 1)))
  if [ "${PROFILE:-0}" = 1 ]; then
    for f in once many; do callgrind_annotate --inclusive=yes --threshold=100 "$out/$f.cg" >"$out/$f.txt" 2>/dev/null; done
    python3 - "$out/once.txt" "$out/many.txt" "$((n - 1))" <<'PY'
import re, sys
def load(path):
    d = {}
    for line in open(path):
        m = re.match(r'\s*([0-9,]+) \([ 0-9.]+%\)\s+(.*)$', line)
        if not m or re.search(r'\([0-9,]+x\)', m.group(2)):
            continue
        name = re.sub(r'^[^:]*:', '', re.sub(r' \[.*\]$', '', m.group(2)), count=1)
        name = re.sub(r'\(.*', '', name)
        d[name] = d.get(name, 0) + int(m.group(1).replace(',', ''))
    return d
once, many, n = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
rows = sorted(((many.get(k, 0) - once.get(k, 0)) / n, k) for k in many)
for v, k in reversed(rows[-25:]):
    print("    %9.0f  %s" % (v, k[:100]))
PY
  fi
done <"$dir/cases.txt"
