#!/usr/bin/env bash
# NVRTC compile latency of the kernels of the seed programs (examples/*.shoal
# and bench/compile/unit_seeds/*.shoal, the statements of
# tests/unit/test_seed_programs.cpp) through the CUDA backend's
# KernelCompiler: cold, from the disk cache, from the memory cache; per
# kernel and per statement (compile_latency.cpp says how). No GPU needed.
#   BUILD=dir   the CMake build directory (default build); this script builds
#               nothing: cmake --build "$BUILD" --target shoal_bench_compile
# Arguments go to the tool: --arch sm_80 (default sm_90), --kernels (a line per kernel).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
tool=$build/bench/shoal_bench_compile
if [ ! -x "$tool" ]; then
  echo "no $tool: build it with cmake --build $build --target shoal_bench_compile (needs the CUDA toolkit)" >&2
  exit 1
fi
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$tool" "$@" examples/*.shoal bench/compile/unit_seeds/*.shoal
