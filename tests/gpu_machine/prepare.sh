#!/usr/bin/env bash
# Prepares a folder to carry to a GPU machine that has the CUDA driver and
# toolkit but none of Shoal's build dependencies (docs/cuda-backend.md, "On a
# machine with a GPU"): the stripped binaries of BUILD (default build) and
# the shared libraries they need that such a machine lacks.
#   bash tests/gpu_machine/prepare.sh [DIR]   (default .gpucarry, ignored by git)
# Then, on the GPU machine, from the repository root:
#   bash tests/gpu_machine/run.sh DIR OUT
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
dir=${1:-.gpucarry}
grep -qx "/$dir/" .git/info/exclude 2>/dev/null || echo "/$dir/" >> .git/info/exclude
mkdir -p "$dir/lib"
cmake --build "$build" -j "$(nproc)" --target shoal shoal_unit_tests >/dev/null
for f in shoal tests/shoal_unit_tests; do strip -o "$dir/$(basename $f)" "$build/$f"; done
# The terminal's line editor, its dependencies and the allocator (not on CUDA images).
for lib in $(ldd "$build/shoal" | awk '/libedit|libbsd|libmd|libmimalloc/ {print $3}'); do cp -L "$lib" "$dir/lib/"; done
du -sh "$dir"
