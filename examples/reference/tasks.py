"""The first-hour tasks written the NumPy way (examples/softmax.shoal, ...):
the same inputs built the same way in float32 / float64, computed with
NumPy, printed in Shoal's format. Imported by make_reference.py."""
import numpy as np

f32, f64 = np.float32, np.float64


def grid(rows, cols, f):
    i, j = np.meshgrid(np.arange(rows, dtype=np.int64), np.arange(cols, dtype=np.int64), indexing="ij")
    return f(i, j)


def softmax(o):
    m = grid(1000, 64, lambda i, j: ((i * 37 + j * 11) % 101).astype(f32) / f32(25.0))
    e = np.exp(m - m.max(axis=1, keepdims=True))
    s = e / e.sum(axis=1, keepdims=True)
    o((s[0, 0:4], s[999, 60:], f32(s.sum(dtype=np.float64))))


def standardise(o):
    m = grid(500, 6, lambda i, j: ((i * 13 + j * 7) % 29).astype(f32) * (j + 1).astype(f32) + j.astype(f32))
    z = (m - m.mean(axis=0)) / m.std(axis=0)
    o((z[0], z[499], z.std(axis=0)))


def histogram_numpy(o):
    i = np.arange(100000, dtype=np.int64)
    u = ((i * 7919 + 17) % 100003).astype(f32) / f32(100003.0)
    xs = u * u * f32(1.2)
    h = np.histogram(xs, 10, range=(0.0, 1.0))[0].astype(np.int32)
    o(h)
    o((np.int32(h.sum()), np.bincount((xs * f32(4.0)).astype(np.int32)).astype(np.int32)))


def moving_average(o):
    i = np.arange(2000, dtype=np.int64)
    p = f32(100.0) + ((i * 7919) % 211).astype(f32) / f32(10.0) - (i % 97).astype(f32) / f32(4.0) + i.astype(f32) / f32(50.0)
    c = np.cumsum(p.astype(f64))
    ma = (c[20:] - c[:-20]) / 20.0
    o((ma[0:3], ma[1977:], f32((p / np.maximum.accumulate(p) - f32(1.0)).min())))


def nearest_neighbour(o):
    pts = grid(5000, 2, lambda i, j: ((i * (7919 + j * 104)) % 10007).astype(f32) / f32(10007.0))
    qs = grid(100, 2, lambda i, j: ((i * (613 + j * 31) + 7) % 1009).astype(f32) / f32(1009.0))
    d = (qs[:, 0:1] - pts[None, :, 0]) ** 2 + (qs[:, 1:2] - pts[None, :, 1]) ** 2
    near = d.argmin(axis=1).astype(np.int32)
    o((near[0:10], np.int32(near.sum())))


def normal_equations(o):
    X = grid(1000, 3, lambda i, j: np.where(j == 0, f32(1.0), ((i * (37 + j * 17)) % 101).astype(f32) / f32(50.0))).astype(f32)
    i = np.arange(1000)
    y = X @ np.array([0.5, -2.0, 1.25], f32) + ((i % 7 - 3).astype(f32) / f32(100.0))
    w = np.linalg.solve(X.T @ X, X.T @ y)
    g = np.zeros(3, f32)
    for _ in range(300):
        g = g - f32(0.5) * (X.T @ (X @ g - y)) / f32(1000.0)
    o((w.astype(f32), g))


def top10_median(o):
    i = np.arange(200000, dtype=np.int64)
    xs = np.sin(i.astype(f32) * f32(0.001)) * f32(100.0) + ((i * 7919) % 1009).astype(f32) / f32(100.0)
    top = np.argsort(-xs, kind="stable")[:10]
    o((xs[top], top.astype(np.int32)))
    o((np.median(xs), np.quantile(xs, 0.9), np.quantile(xs, 0.25)))


def heat(o):
    u = np.zeros(200, f32)
    u[0] = 100.0
    for _ in range(500):
        u = np.concatenate([u[:1], u[1:-1] + f32(0.25) * (u[2:] - f32(2.0) * u[1:-1] + u[:-2]), u[-1:]])
    o((u[0:6], f32(u.sum(dtype=np.float64))))


TASKS = {
    "softmax": softmax, "standardise": standardise, "histogram_numpy": histogram_numpy,
    "moving_average": moving_average, "nearest_neighbour": nearest_neighbour,
    "normal_equations": normal_equations, "top10_median": top10_median, "heat": heat,
}


def mandelbrot_counts():
    """The steps each point of the 24 x 64 grid stays inside (also bench/tasks)."""
    cx = np.linspace(-2.0, 0.5, 64).astype(f32)[None, :]
    cy = np.linspace(-1.0, 1.0, 24).astype(f32)[:, None]
    x = np.zeros((24, 64), f32)
    y = np.zeros((24, 64), f32)
    n = np.zeros((24, 64), np.int32)
    for _ in range(50):
        inside = x * x + y * y <= f32(4.0)
        x, y = np.where(inside, x * x - y * y + cx, x), np.where(inside, f32(2.0) * x * y + cy, y)
        n = n + inside.astype(np.int32)
    return n


def mandelbrot(o):
    n = mandelbrot_counts()
    o((n[12], np.int32(n.sum())))


def kmeans(o):
    pts = grid(3000, 2, lambda i, j: ((i * (7919 + 13 * j)) % 1000).astype(f32) / f32(1000.0)
               + (i % 3).astype(f32) * (f32(1.5) - j.astype(f32)))
    c = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.5]], f32)
    for _ in range(10):
        d = (pts[:, 0:1] - c[None, :, 0]) ** 2 + (pts[:, 1:2] - c[None, :, 1]) ** 2
        lab = d.argmin(axis=1)
        cnt = np.bincount(lab, minlength=3).astype(f32)
        sums = np.zeros((3, 2), f32)
        for i in range(len(lab)):  # permute adds in index order
            sums[lab[i]] += pts[i]
        c = sums / cnt[:, None]
    o(c)


TASKS.update({"mandelbrot": mandelbrot, "kmeans": kmeans})
