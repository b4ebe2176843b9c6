#!/usr/bin/env bash
# Issue 23's ten first-hour tasks (examples/softmax.shoal, ...) side by side
# with NumPy (bench/side_by_side.sh), on the examples' own inputs.
dir=$(cd "$(dirname "$0")" && pwd)
cd "$dir/../.."
source bench/side_by_side.sh
