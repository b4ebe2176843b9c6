"""NumPy on bench/tasks_large/cases.shoal (the inputs of bench/tasks/peers.py,
1000x larger), best of ROUNDS after a first run. Prints `<case> <milliseconds>`."""
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, os.path.join(here, "..", "..", "examples", "reference"))
from peer_timing import best  # noqa: E402
from tasks import grid  # noqa: E402

f32, f64 = np.float32, np.float64
sm = grid(500000, 6, lambda i, j: ((i * 13 + j * 7) % 29).astype(f32) * (j + 1).astype(f32) + j.astype(f32))
i = np.arange(2000000, dtype=np.int64)
p = f32(100.0) + ((i * 7919) % 211).astype(f32) / f32(10.0) - (i % 97).astype(f32) / f32(4.0) + i.astype(f32) / f32(50.0)
X = grid(1000000, 3, lambda i, j: np.where(j == 0, f32(1.0), ((i * (37 + j * 17)) % 101).astype(f32) / f32(50.0))).astype(f32)
y = X @ np.array([0.5, -2.0, 1.25], f32) + ((np.arange(1000000) % 7 - 3).astype(f32) / f32(100.0))


def moving_average():
    c = np.cumsum(p.astype(f64))
    return (c[20:] - c[:-20]) / 20.0, (p / np.maximum.accumulate(p) - f32(1)).min()


cases = {
    "standardise": lambda: (sm - sm.mean(axis=0)) / sm.std(axis=0),
    "moving_average": moving_average,
    "normal_equations": lambda: np.linalg.solve(X.T @ X, X.T @ y),
}
for name, f in cases.items():
    print(name, "%.3f" % best(f), flush=True)
