#!/usr/bin/env bash
# The collectives (tests/mpi/comm_tests.cpp) on 1, 2, 3 and 4 ranks,
# oversubscribed on this machine, over MPI and over NCCL (simulated).
set -u
binary="$1"
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
status=0
for backend in mpi nccl; do
  for n in 1 2 3 4; do
    mpirun -q --oversubscribe "${root[@]}" -np "$n" "$binary" "$backend" || status=1
  done
done
# Blocks larger than one MPI message (2 GiB) go in two parts: the limit
# lowered to 4 KiB sends the large cases' blocks that way.
SHOAL_MPI_MESSAGE_LIMIT=4096 mpirun -q --oversubscribe "${root[@]}" -np 3 "$binary" mpi || status=1
exit $status
