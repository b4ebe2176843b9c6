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
  scan     `:time let c = cumsum x` sharded: each block's total, the
           prefix of the totals before it, the block scanned from it
  sort     `:time let s = sort x` sharded: a sample sort (an all-to-all
           of buckets, then rebalanced)
  stencil  `:time let d = x[2:] - 2.0 * x[1:-1] + x[:-2]` sharded: each
           slice moves the rows its neighbours hold (the halo)
For the sharded statements, `comm` is the share of rank 0's time spent
inside collectives (transfers and waiting for the other ranks).

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


SHARDED = [("sum", "sum (x * x)"), ("map", "let y = x * 2.0 + 1.0"), ("scan", "let c = cumsum x"),
           ("sort", "let s = sort x"), ("stencil", "let d = x[2:] - 2.0 * x[1:-1] + x[:-2]")]
DURATION = r"([0-9.]+ (?:ns|us|ms|s))\b"


def times(out):
    """(wall ms, collectives ms) per :time line: rank 0's time plus its wait
    until every rank had finished, and rank 0's time inside collectives."""
    found = []
    for line in out.splitlines():
        t = re.match(r"time: " + DURATION, line)
        if not t:
            continue
        c = re.search(r"of which " + DURATION + " in collectives", line)
        w = re.search(r"then " + DURATION + " until every rank had finished", line)
        found.append((milliseconds(t[1]) + (milliseconds(w[1]) if w else 0.0), milliseconds(c[1]) if c else 0.0))
    return found


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/shoal")
    many = "let a = 1\n" * STATEMENTS
    # Each statement twice, the second measured: the first runs while its
    # native code compiles (the interpreter meanwhile).
    reduce = "let x = random 4194304\n:time sum (x * x)\n:time sum (x * x)\n"
    sharded = ":set shard 1\nlet x = random 4194304\n" + "".join(f":time {s}\n:time {s}\n" for _, s in SHARDED)
    best = {}
    for _ in range(ROUNDS):
        for ranks in (1, 2, 3, 4):
            start, _ = run(binary, ranks, "")
            lots, _ = run(binary, ranks, many)
            _, out = run(binary, ranks, reduce)
            _, out_sharded = run(binary, ranks, sharded)
            b = best.setdefault(ranks, {"start": 1e9, "stmt": 1e9, "reduce": (1e9, 0.0)})
            b["start"] = min(b["start"], start)
            b["stmt"] = min(b["stmt"], (lots - start) / STATEMENTS)
            b["reduce"] = min(b["reduce"], times(out)[1])
            for (name, _), t in zip(SHARDED, times(out_sharded)[1::2]):
                b[name] = min(b.get(name, (1e9, 0.0)), t)
    print(f"{'ranks':>5} {'start s':>8} {'stmt us':>8} {'vs 1':>6} {'replicated sum ms':>18}")
    for ranks, b in sorted(best.items()):
        print(f"{ranks:>5} {b['start']:8.3f} {b['stmt'] * 1e6:8.1f} {b['stmt'] / best[1]['stmt']:6.2f}"
              f" {b['reduce'][0]:18.2f}")
    print()
    print("sharded over the ranks, 2^22 floats: wall ms (speed-up over 1 rank, share in collectives)")
    print(f"{'ranks':>5}" + "".join(f" {name:>24}" for name, _ in SHARDED))
    for ranks, b in sorted(best.items()):
        cells = []
        for name, _ in SHARDED:
            wall, comm = b[name]
            cells.append(f"{wall:9.2f} ({best[1][name][0] / wall:4.2f}x, {100 * comm / wall:3.0f}%)")
        print(f"{ranks:>5}" + "".join(f" {c:>24}" for c in cells))


if __name__ == "__main__":
    main()
