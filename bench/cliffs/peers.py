"""NumPy on the cases of bench/cliffs/cases.shoal (issue 22), best of ROUNDS
after a first run. Prints `<case> <milliseconds>` lines."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from peer_timing import best  # noqa: E402

rng = np.random.default_rng(1)
f32 = np.float32



X = rng.random((10000, 3), dtype=f32)
y = X @ np.array([1, -2, 0.5], dtype=f32) + f32(0.1)


def gd():
    w = np.zeros(3, dtype=f32)
    for _ in range(500):
        r = X @ w - y
        w = w - f32(0.00005) * (X.T @ r.reshape(-1, 1)).ravel()
    return w


px, py = rng.random(100000, dtype=f32), rng.random(100000, dtype=f32)
cx, cy = rng.random(8, dtype=f32), rng.random(8, dtype=f32)
m1 = rng.random(1000000, dtype=f32)
ints = (np.arange(1 << 22) % 10).astype(np.int32)
f4 = rng.random(1 << 22, dtype=f32)
u0 = rng.random((512, 512), dtype=f32)


def heat():
    u = u0.copy()
    for _ in range(50):
        c = u[1:-1, 1:-1]
        u[1:-1, 1:-1] = c + f32(0.1) * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - f32(4) * c)
    return u


a512, b512 = rng.random((512, 512), dtype=f32), rng.random((512, 512), dtype=f32)
tall, wide = rng.random((4096, 64), dtype=f32), rng.random((64, 4096), dtype=f32)
t3, col = rng.random((3, 10000), dtype=f32), rng.random((10000, 1), dtype=f32)
w3 = rng.random(3, dtype=f32)
row1, big = rng.random((1, 4096), dtype=f32), rng.random((4096, 4096), dtype=f32)

x1k = rng.random(1000, dtype=f32)


def mm_loop():
    e = t3 @ col
    for _ in range(1000):
        e = t3 @ col
    return e


def mv_loop():
    e = X @ w3
    for _ in range(1000):
        e = X @ w3 - e * f32(0.5)
    return e


def loop2000():
    a = f32(0)
    for i in range(2000):
        a = a + np.sum(x1k * f32(i))
    return a


cases = {
    "gd500": gd,
    "kmeans_assign": lambda: np.argmin((px[:, None] - cx[None, :]) ** 2 + (py[:, None] - cy[None, :]) ** 2, axis=1),
    "nested_argmin": lambda: np.argmin((px[:, None] - cx[None, :4]) ** 2 + (py[:, None] - cy[None, :4]) ** 2, axis=1),
    "median_sort": lambda: np.median(m1),
    "scan_int": lambda: np.cumsum(ints, dtype=np.int32),
    "filter": lambda: f4[f4 > 0.5],
    "heat50": heat,
    "mm_512": lambda: a512 @ b512,
    "mm_4096x64x4096": lambda: tall @ wide,
    "mm_3x10000x1": lambda: t3 @ col,
    "mv_10000x3": lambda: X @ w3,
    "mm_3x10000x1_loop1000": mm_loop,
    "mv_10000x3_loop1000": mv_loop,
    "mm_1x4096x4096": lambda: row1 @ big,
    "loop2000_sum": loop2000,
    "stmt_sum1k": lambda: np.sum(x1k * f32(2)),
}
for name, f in cases.items():
    print(name, "%.3f" % best(f), flush=True)
