#!/usr/bin/env bash
# Shoal's kernels on the GPU, side by side in one run with the bandwidth limit
# (a device-to-device copy of the bytes each program must move) and with CuPy:
# one table (bench_gpu.cpp says what is timed and how). Without a GPU it says
# why and exits 77.
#   BUILD=dir     the CMake build directory (default build); shoal_bench_gpu is built there
#   ROUNDS=n      timed rounds after a warm-up, on both sides (default 10)
#   LOG2="24 26"  the sizes, as powers of two (Jacobi: a square of that many)
#   PYTHON=path   a python that imports cupy; default $BUILD/bench-venv, where
#                 cupy-cuda13x is installed on first use if PyPI can be reached.
#                 Without CuPy its columns are left out and the table says why.
# Arguments go to shoal_bench_gpu (--simulated: the simulated device, with LOG2=10).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
rounds=${ROUNDS:-10}
log2=${LOG2:-24 26}
cmake -S . -B "$build" >/dev/null
if [ "$(cmake --build "$build" --target help | grep -c shoal_bench_gpu || true)" = 0 ]; then
  echo "bench/gpu needs the CUDA toolkit at build time: $build has no shoal_bench_gpu" >&2
  exit 77
fi
cmake --build "$build" -j "$(nproc)" --target shoal_bench_gpu >/dev/null

out=$build/bench-results
mkdir -p "$out"
python=${PYTHON:-$build/bench-venv/bin/python}
if [ -z "${PYTHON:-}" ] && ! "$python" -c 'import cupy' 2>/dev/null; then
  [ -x "$python" ] || python3 -m venv "$build/bench-venv"
  "$build/bench-venv/bin/pip" install -q --retries 1 cupy-cuda13x >/dev/null 2>&1 || true
fi
if "$python" -c 'import cupy' 2>/dev/null; then
  "$python" bench/gpu/cupy_side.py "$rounds" $log2 >"$out/gpu-cupy" ||
    echo "skipped cupy_side.py failed (exit $?; its error is above)" >>"$out/gpu-cupy"
else
  echo "skipped $python cannot import cupy (pip install cupy-cuda13x there, or set PYTHON)" >"$out/gpu-cupy"
fi
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$build/bench/shoal_bench_gpu" --rounds "$rounds" --log2 "${log2// /,}" --cupy "$out/gpu-cupy" "$@"
