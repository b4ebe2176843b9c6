#!/usr/bin/env bash
# Runs Shoal and numpy side by side on the same inputs and prints, per case,
# ns/element on each side and the ratio shoal/numpy (below 1: Shoal is faster):
#   1. the CPU executor alone, on plans built by the lowerings (bench_executor);
#   2. whole programs (examples/*.shoal) through a session with the compiled
#      backend (bench_programs), against their numpy versions;
#   3. with the CUDA toolkit, the NVRTC compile latency of the seed programs'
#      kernels (bench/compile/run.sh, about 30 s on 2 cores; no numpy side).
# The machines are noisy: each side is timed ROUNDS times (default 2),
# alternating with the other, and keeps its best. numpy comes from a venv in
# the build directory, created on first use, as are the programs' inputs.
#   BUILD=dir   the CMake build directory (default build)
#   AGAINST=dir another build of Shoal (say of the commit before a change),
#               timed in the same rounds: the tables add its ns/element and
#               the ratio this/against (below 1: this build is faster)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
rounds=${ROUNDS:-2}
cmake -S . -B "$build" >/dev/null
targets="shoal_bench_executor shoal_bench_programs"
# The compile latency benchmark (bench/compile) is built only with the CUDA toolkit.
compile=$(cmake --build "$build" --target help | grep -c shoal_bench_compile || true)
[ "$compile" != 0 ] && targets="$targets shoal_bench_compile"
cmake --build "$build" -j "$(nproc)" --target $targets >/dev/null
python=$build/bench-venv/bin/python
if [ ! -x "$python" ]; then
  python3 -m venv "$build/bench-venv" && "$build/bench-venv/bin/pip" install -q numpy
fi
# The inputs (about 350 MB), written again when the script that makes them changes.
data=$build/bench-data
stamp=$(sha1sum bench/programs_numpy.py | cut -c1-16)
if [ "$(cat "$data/stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$data" && "$python" bench/programs_numpy.py data "$data" && echo "$stamp" >"$data/stamp"
fi

out=$build/bench-results
rm -rf "$out" && mkdir -p "$out"
for r in $(seq "$rounds"); do
  "$build/bench/shoal_bench_executor" >"$out/executor-shoal.$r"
  "$python" bench/bench_numpy.py >"$out/executor-numpy.$r"
  "$build/bench/shoal_bench_programs" "$data" >"$out/programs-shoal.$r"
  if [ -n "${AGAINST:-}" ]; then
    "$AGAINST/bench/shoal_bench_executor" >"$out/executor-against.$r"
    "$AGAINST/bench/shoal_bench_programs" "$data" >"$out/programs-against.$r"
  fi
  "$python" bench/programs_numpy.py time "$data" >"$out/programs-numpy.$r"
done

# table TITLE NAME: the best of every round per (case, n), both sides.
table() {
  echo "$1 (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  printf "%-13s %-9s %14s %14s %7s" case n "shoal ns/elem" "numpy ns/elem" ratio
  [ -n "${AGAINST:-}" ] && printf " %16s %13s" "against ns/elem" "this/against"
  echo
  awk '
    FNR == 1 { side = FILENAME ~ /-shoal\./ ? "s" : FILENAME ~ /-against\./ ? "a" : "n" }
    { key = $1 " " $2; v = $3 + 0
      if (!(key in seen)) { seen[key] = 1; order[++count] = key }
      if (!((side, key) in best) || v < best[side, key]) best[side, key] = v }
    END { for (i = 1; i <= count; ++i) { k = order[i]; split(k, f, " ")
            printf "%-13s %-9s %14.3f %14.3f %7.2f", f[1], f[2], best["s", k], best["n", k], best["s", k] / best["n", k]
            if (("a", k) in best) printf " %16.3f %13.2f", best["a", k], best["s", k] / best["a", k]
            printf "\n" } }
  ' "$out/$2"-shoal.* "$out/$2"-numpy.* $(ls "$out/$2"-against.* 2>/dev/null)
}
table "CPU executor, plans built by the lowerings" executor
echo
table "Whole programs, compiled backend" programs
if [ "$compile" != 0 ]; then
  echo
  echo "Kernel compile latency (bench/compile)"
  BUILD=$build bash bench/compile/run.sh
fi
