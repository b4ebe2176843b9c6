#!/usr/bin/env python3
"""A session on 1-4 MPI ranks (docs/scale-out.md): what the control plane
costs. Per rank count, in one run, alternating rounds, best of each:

  start    a session that runs nothing: spawning the workers (--ranks N)
  stmt     the cost of one statement beyond one rank's: 4000 trivial
           statements (`let a = 1`), less the start, per statement: the
           hand-over and the agreement
  reduce   `:time` of sum (x * x) over 2^22 floats, replicated: every rank
           computes it whole (what the agreement adds to a real statement)
  sharded  the same with `:set shard 1`: each rank folds its block, then
           one value per rank is exchanged (map and reduce scaling)
  map      `:time let y = x * 2.0 + 1.0` sharded (each rank its block)

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


def milliseconds(text):
    value, unit = text.split()
    return float(value) * {"s": 1000.0, "ms": 1.0, "us": 0.001, "ns": 1e-6}[unit]


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/shoal")
    many = "let a = 1\n" * STATEMENTS
    reduce = "let x = random 4194304\n:time sum (x * x)\n"
    sharded = ":set shard 1\n" + reduce + ":time let y = x * 2.0 + 1.0\n"
    best = {}
    for _ in range(ROUNDS):
        for ranks in (1, 2, 3, 4):
            start, _ = run(binary, ranks, "")
            lots, _ = run(binary, ranks, many)
            _, out = run(binary, ranks, reduce)
            _, out_sharded = run(binary, ranks, sharded)
            # rank 0's time plus its wait until every rank had finished: the statement's wall time
            ms = [milliseconds(a) + (milliseconds(b) if b else 0.0) for a, b in re.findall(
                r"time: ([0-9.]+ (?:ns|us|ms|s))\b.*?(?:then ([0-9.]+ (?:ns|us|ms|s)) until every rank had finished)?$",
                out + out_sharded, re.M)]
            b = best.setdefault(ranks, [1e9] * 5)
            b[0] = min(b[0], start)
            b[1] = min(b[1], (lots - start) / STATEMENTS)
            for k in range(3):
                b[2 + k] = min(b[2 + k], ms[k] if k < len(ms) else float("nan"))
    print(f"{'ranks':>5} {'start s':>8} {'stmt us':>8} {'vs 1':>6} {'reduce ms':>10} {'sharded ms':>11} {'speed-up':>9}"
          f" {'map ms':>8} {'speed-up':>9}")
    for ranks, (start, stmt, rep, sh, mp) in sorted(best.items()):
        print(f"{ranks:>5} {start:8.3f} {stmt * 1e6:8.1f} {stmt / best[1][1]:6.2f} {rep:10.2f} {sh:11.2f}"
              f" {best[1][3] / sh:9.2f} {mp:8.2f} {best[1][4] / mp:9.2f}")


if __name__ == "__main__":
    main()
