#!/usr/bin/env bash
# Runs the CPU executor and numpy side by side on the same cases and prints
# ns/element and the ratio (executor / numpy; below 1 means Shoal is faster).
# numpy comes from a venv under build/ (created on first use).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)" --target shoal_bench_executor >/dev/null
if [ ! -x build/bench-venv/bin/python ]; then
  python3 -m venv build/bench-venv && build/bench-venv/bin/pip install -q numpy
fi
./build/bench/shoal_bench_executor > build/bench-shoal.txt
build/bench-venv/bin/python bench/bench_numpy.py > build/bench-numpy.txt
echo "case      n          shoal ns/elem  numpy ns/elem  ratio"
paste build/bench-shoal.txt build/bench-numpy.txt |
  awk '{ printf "%-8s %-10s %13.2f %14.2f %6.2f\n", $1, $2, $3, $6, $3 / $6 }'
