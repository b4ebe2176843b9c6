#!/usr/bin/env bash
# The MPI collectives (tests/mpi/comm_tests.cpp) on 1, 2, 3 and 4 ranks,
# oversubscribed on this machine.
set -u
binary="$1"
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
status=0
for n in 1 2 3 4; do
  mpirun -q --oversubscribe "${root[@]}" -np "$n" "$binary" || status=1
done
exit $status
