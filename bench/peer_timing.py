"""Timing shared by the CPU peers (bench/tiers/peers.py, bench/cliffs/peers.py)."""
import os
import time

ROUNDS = int(os.environ.get("ROUNDS", "5"))


def best(f):
    """The best of ROUNDS runs of f in milliseconds, after a first run."""
    f()
    t = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t) * 1e3
