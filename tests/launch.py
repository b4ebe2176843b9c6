"""How the test runners start Shoal on a script: alone, or as a session on
several MPI ranks (docs/scale-out.md), from the environment variable
SHOAL_TEST_RANKS:

  (unset)      SHOAL_BINARY script
  N            SHOAL_BINARY --ranks N script      (rank 0 spawns N-1 workers)
  mpirun:N     mpirun -np N SHOAL_BINARY script   (mpirun starts N ranks)

SHOAL_TEST_SHARD=N adds `--shard N` (arrays of at least N elements sharded).
Every rank count must print what one rank prints. Standard library only.
"""
import os


def shoal_command(binary, script):
    ranks = os.environ.get("SHOAL_TEST_RANKS", "")
    shard = os.environ.get("SHOAL_TEST_SHARD", "")
    if shard:
        script = ["--shard", shard, script]
    else:
        script = [script]
    if not ranks:
        return [binary, *script]
    if ranks.startswith("mpirun:"):
        # -q: no help text from mpirun when rank 0 exits with status 1 (a
        # script whose errors are expected); as root, Open MPI must be told.
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        return ["mpirun", "-q", "--oversubscribe", *root, "-np", ranks.split(":", 1)[1], binary, *script]
    return [binary, "--ranks", ranks, *script]
