"""NumPy on the ten tasks of bench/tasks/cases.shoal (examples/reference/tasks.py
builds the same inputs), best of ROUNDS after a first run. Prints
`<case> <milliseconds>` lines."""
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, os.path.join(here, "..", "..", "examples", "reference"))
from peer_timing import best  # noqa: E402
from tasks import grid, mandelbrot_counts  # noqa: E402

f32, f64 = np.float32, np.float64
m = grid(1000, 64, lambda i, j: ((i * 37 + j * 11) % 101).astype(f32) / f32(25.0))
sm = grid(500, 6, lambda i, j: ((i * 13 + j * 7) % 29).astype(f32) * (j + 1).astype(f32) + j.astype(f32))
i = np.arange(100000, dtype=np.int64)
u = ((i * 7919 + 17) % 100003).astype(f32) / f32(100003.0)
hx = u * u * f32(1.2)
i = np.arange(2000, dtype=np.int64)
p = f32(100.0) + ((i * 7919) % 211).astype(f32) / f32(10.0) - (i % 97).astype(f32) / f32(4.0) + i.astype(f32) / f32(50.0)
pts = grid(5000, 2, lambda i, j: ((i * (7919 + j * 104)) % 10007).astype(f32) / f32(10007.0))
qs = grid(100, 2, lambda i, j: ((i * (613 + j * 31) + 7) % 1009).astype(f32) / f32(1009.0))
X = grid(1000, 3, lambda i, j: np.where(j == 0, f32(1.0), ((i * (37 + j * 17)) % 101).astype(f32) / f32(50.0))).astype(f32)
y = X @ np.array([0.5, -2.0, 1.25], f32) + ((np.arange(1000) % 7 - 3).astype(f32) / f32(100.0))
i = np.arange(200000, dtype=np.int64)
tx = np.sin(i.astype(f32) * f32(0.001)) * f32(100.0) + ((i * 7919) % 1009).astype(f32) / f32(100.0)
kp = grid(3000, 2, lambda i, j: ((i * (7919 + 13 * j)) % 1000).astype(f32) / f32(1000.0) + (i % 3).astype(f32) * (f32(1.5) - j.astype(f32)))


def softmax():
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def moving_average():
    c = np.cumsum(p.astype(f64))
    return (c[20:] - c[:-20]) / 20.0, (p / np.maximum.accumulate(p) - f32(1)).min()


def gradient_descent():
    g = np.zeros(3, f32)
    for _ in range(300):
        g = g - f32(0.5) * (X.T @ (X @ g - y)) / f32(1000.0)
    return g


def top10_median():
    top = np.argpartition(-tx, 10)[:10]
    return top[np.argsort(-tx[top], kind="stable")], np.median(tx), np.quantile(tx, 0.9)


def heat():
    u = np.zeros(200, f32)
    u[0] = 100.0
    for _ in range(500):
        u[1:-1] = u[1:-1] + f32(0.25) * (u[2:] - f32(2.0) * u[1:-1] + u[:-2])
    return u


def kmeans():
    c = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.5]], f32)
    for _ in range(10):
        lab = ((kp[:, 0:1] - c[None, :, 0]) ** 2 + (kp[:, 1:2] - c[None, :, 1]) ** 2).argmin(axis=1)
        cnt = np.bincount(lab, minlength=3).astype(f32)
        c = np.stack([np.bincount(lab, kp[:, 0], 3), np.bincount(lab, kp[:, 1], 3)], axis=1).astype(f32) / cnt[:, None]
    return c


cases = {
    "softmax": softmax,
    "standardise": lambda: (sm - sm.mean(axis=0)) / sm.std(axis=0),
    "histogram": lambda: np.histogram(hx, 10, range=(0.0, 1.0)),
    "moving_average": moving_average,
    "nearest_neighbour": lambda: ((qs[:, 0:1] - pts[None, :, 0]) ** 2 + (qs[:, 1:2] - pts[None, :, 1]) ** 2).argmin(axis=1),
    "normal_equations": lambda: np.linalg.solve(X.T @ X, X.T @ y),
    "gradient_descent": gradient_descent,
    "top10_median": top10_median,
    "heat": heat,
    "mandelbrot": mandelbrot_counts,
    "kmeans": kmeans,
}
for name, f in cases.items():
    print(name, "%.3f" % best(f), flush=True)
