"""NumPy on the cases of bench/numpy_forms/cases.shoal (issue 23), best of
ROUNDS after a first run. Prints `<case> <milliseconds>` lines."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from peer_timing import best  # noqa: E402

rng = np.random.default_rng(1)
f32 = np.float32
m = rng.random((4096, 256), dtype=f32)
v256, v4096 = rng.random(256, dtype=f32), rng.random(4096, dtype=f32)
f4 = rng.random(1 << 22, dtype=f32)
ib = (f4 * 1000).astype(np.int32)
fb = ib.astype(f32)
a1k = rng.random((1000, 1000), dtype=f32) + np.eye(1000, dtype=f32) * 4
b1k = rng.random(1000, dtype=f32)
X8, y8 = rng.random((10000, 8), dtype=f32), rng.random(10000, dtype=f32)


def scalar_loop():
    x = 0
    for i in range(1000000):
        x = x + i
    return x


def softmax():
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def standardise():
    d = m - m.mean(axis=0)
    return d / np.sqrt((d * d).mean(axis=0))


def mask_update():
    u = f4.copy()
    u[u > 0.5] = 0
    return u


cases = {
    "softmax_rows": softmax,
    "standardise_cols": standardise,
    "sub_row_means": lambda: m - m.mean(axis=1, keepdims=True),
    "outer_sum": lambda: v256[None, :] + v4096[:, None],
    "relu_where": lambda: np.where(m > 0.5, m, f32(0)),
    "mask_select": lambda: f4[f4 > 0.5],
    "mask_rows": lambda: m[m[:, 0] > 0.5],
    "mask_update": mask_update,
    "median": lambda: np.median(f4),
    "quantile": lambda: np.quantile(f4, 0.9),
    "topk10": lambda: np.argsort(-f4[np.argpartition(-f4, 10)[:10]]),
    "histogram50": lambda: np.histogram(f4, 50, (0, 1)),
    "bincount1000": lambda: np.bincount(ib),
    "unique1000": lambda: np.unique(fb),
    "median_rows": lambda: np.median(m, axis=1),
    "scalar_loop": scalar_loop,
    "solve1000": lambda: np.linalg.solve(a1k, b1k),
    "inv1000": lambda: np.linalg.inv(a1k),
    "det1000": lambda: np.linalg.det(a1k),
    "normal_equations": lambda: np.linalg.solve(X8.T @ X8, X8.T @ y8),
}
for name, f in cases.items():
    print(name, "%.3f" % best(f), flush=True)
