#!/usr/bin/env python3
"""A session on 1-4 MPI ranks (docs/scale-out.md): what the control plane
costs. Per rank count, in one run, alternating rounds, best of each:

  start    a session that runs nothing: spawning the workers (--ranks N)
  stmt     the cost of one statement beyond one rank's: 4000 trivial
           statements (`let a = 1`), less the start, per statement: the
           hand-over and the agreement
  reduce   `:time` of sum (x * x) over 2^22 floats: arrays are replicated
           today, so every rank computes it whole (no speed-up until
           sharding; this shows what the agreement adds to a real statement)

Usage: python3 bench/ranks/bench_ranks.py [SHOAL_BINARY] (default build/shoal)
Fix the threads per rank first (SHOAL_THREADS=1 is set here): one rank
already uses every core with its own pool.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

ROUNDS = int(os.environ.get("ROUNDS", "3"))
STATEMENTS = 4000


def run(binary, ranks, text):
    args = [binary] + (["--ranks", str(ranks)] if ranks > 1 else [])
    env = dict(os.environ, SHOAL_THREADS="1")
    start = time.perf_counter()
    proc = subprocess.run(args, input=text.encode(), capture_output=True, env=env, cwd=tempfile.gettempdir(),
                          timeout=600)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"shoal --ranks {ranks} failed:\n{proc.stderr.decode()}")
    return took, proc.stdout.decode()


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/shoal")
    many = "let a = 1\n" * STATEMENTS
    reduce = "let x = random 4194304\n:time sum (x * x)\n"
    best = {}
    for _ in range(ROUNDS):
        for ranks in (1, 2, 3, 4):
            start, _ = run(binary, ranks, "")
            lots, _ = run(binary, ranks, many)
            _, out = run(binary, ranks, reduce)
            m = re.search(r"time: ([0-9.]+) ms", out)
            ms = float(m.group(1)) if m else float("nan")
            b = best.setdefault(ranks, [1e9, 1e9, 1e9])
            b[0] = min(b[0], start)
            b[1] = min(b[1], (lots - start) / STATEMENTS)
            b[2] = min(b[2], ms)
    print(f"{'ranks':>5} {'start s':>8} {'stmt us':>8} {'vs 1':>6} {'reduce ms':>10} {'vs 1':>6}")
    for ranks, (start, stmt, ms) in sorted(best.items()):
        print(f"{ranks:>5} {start:8.3f} {stmt * 1e6:8.1f} {stmt / best[1][1]:6.2f} {ms:10.2f} {ms / best[1][2]:6.2f}")


if __name__ == "__main__":
    main()
