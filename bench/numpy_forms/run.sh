#!/usr/bin/env bash
# Issue 23's NumPy forms (broadcasting, where, masks) side by side with
# NumPy (bench/side_by_side.sh).
dir=$(cd "$(dirname "$0")" && pwd)
cd "$dir/../.."
source bench/side_by_side.sh
