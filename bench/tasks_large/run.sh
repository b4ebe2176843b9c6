#!/usr/bin/env bash
# The three of issue 23's tasks whose example inputs are so small that a
# statement's fixed cost decides their ratio (bench/tasks): standardise,
# moving average and drawdown, normal equations, on inputs 1000x larger,
# where the work decides it. Side by side with NumPy (bench/side_by_side.sh).
dir=$(cd "$(dirname "$0")" && pwd)
cd "$dir/../.."
source bench/side_by_side.sh
