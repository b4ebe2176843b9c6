#!/usr/bin/env bash
# The gpu suite on a GPU machine, from binaries prepare.sh carried in DIR:
# the program tests, the examples (numbers within tolerance), the unit
# suite's differential cases and the random programs in 8 parallel shards,
# all with the structural plan cache checked (SHOAL_CHECK_PLAN_CACHE=1).
# Logs go to OUT (default .); prints a summary line per part.
#   bash tests/gpu_machine/run.sh DIR [OUT]
set -u
cd "$(dirname "$0")/../.."
dir=$(cd "$1" && pwd)
out=${2:-.}
mkdir -p "$out"
export LD_LIBRARY_PATH=$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SHOAL_CACHE_DIR=${SHOAL_CACHE_DIR:-/tmp/shoal-gpu-cache} SHOAL_CHECK_PLAN_CACHE=1
shoal=$dir/shoal
unit=$dir/shoal_unit_tests
# The unit tests read tests/data under the path they were built in.
built_in=$(strings "$unit" | grep -m1 -o '^/.*/tests/unit/test_[a-z_]*\.cpp$' | sed 's|/tests/unit/.*||')
[ -n "$built_in" ] && [ ! -e "$built_in" ] && mkdir -p "$(dirname "$built_in")" && ln -s "$PWD" "$built_in"
"$shoal" -e :device
timeout 300 python3 tests/run_programs.py "$shoal" tests/programs >"$out/programs.txt" 2>&1 &
timeout 300 python3 tests/run_examples.py --tolerance-only "$shoal" examples >"$out/examples.txt" 2>&1 &
timeout 300 "$unit" --no-intro -tce="*random*" \
  -tc="*agree with the reference*,*every array builtin*,*tuples, general folds*,*every example runs*,*nested arrays*,*products: every shape*,*take a product*,*plan memo*,reduce:*" \
  >"$out/unit.txt" 2>&1 &
for k in 0 1 2 3 4 5 6 7; do
  SHOAL_RANDOM_PROGRAMS=$((k * 50 + 1))-$((k * 50 + 50)) timeout 300 "$unit" --no-intro -tc="*random well-typed*" \
    >"$out/random$k.txt" 2>&1 &
done
wait
# One file for the shards (a lent machine returns a few files only).
cat "$out"/random?.txt >"$out/random.txt" && rm -f "$out"/random?.txt
tail -n1 "$out/programs.txt" "$out/examples.txt"
grep -h "test cases:\|random programs" "$out/unit.txt" "$out/random.txt"
