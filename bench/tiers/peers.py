"""The CPU peers of bench/tiers/run.sh: numpy, numexpr and JAX (XLA on the
CPU) on the programs of tiers.shoal, n = 2^22 float32, best of ROUNDS.
Prints `<program> <peer> <milliseconds>` lines."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from peer_timing import best  # noqa: E402

N = 1 << 22
rng = np.random.default_rng(1)
x = rng.random(N, dtype=np.float32)
y = rng.random(N, dtype=np.float32)
price, strike, years = 5 + 25 * x, 1 + 99 * y, 0.25 + 9.75 * x
W = np.array([-3, -6, -5, 3, 21, 46, 67, 74, 67, 46, 21, 3, -5, -6, -3], dtype=np.float32)
R, V = np.float32(0.02), np.float32(0.30)



def cnd(d, xp):
    k = 1 / (1 + 0.2316419 * xp.abs(d))
    c = 0.3989422804 * xp.exp(-0.5 * d * d) * (k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))))
    return xp.where(d > 0, 1 - c, c)


def bs(s, k, t, xp):
    sq = xp.sqrt(t)
    d1 = (xp.log(s / k) + (R + 0.5 * V * V) * t) / (V * sq)
    d2 = d1 - V * sq
    e = xp.exp(-R * t)
    return s * cnd(d1, xp) - k * e * cnd(d2, xp), k * e * (1 - cnd(d2, xp)) - s * (1 - cnd(d1, xp))


def spencer(a, xp):
    m = a.shape[0] - 14
    acc = xp.zeros(m, dtype=a.dtype)
    for j in range(15):
        acc = acc + W[j] * a[j:j + m]
    return acc / 320


numpy_side = {
    "saxpy": lambda: 2.0 * x + y,
    "rmse": lambda: np.sqrt(np.sum((x - y) * (x - y)) / N),
    "sum": lambda: np.sum(x),
    "fwd_diff": lambda: x[1:] - x[:-1],
    "spencer": lambda: spencer(x, np),
    "blackscholes": lambda: bs(price, strike, years, np),
    "scan": lambda: np.cumsum(x),
    "filter": lambda: x[x > 0.5],
    "sort": lambda: np.sort(x),
}
for name, f in numpy_side.items():
    print(name, "numpy", "%.3f" % best(f), flush=True)

# The copy floor (STREAM's "copy"): x into an existing array, on one thread
# and on as many as the cores (np.copyto releases the GIL), the better one.
from concurrent.futures import ThreadPoolExecutor
dst = np.empty_like(x)
cores = os.cpu_count() or 1
pool = ThreadPoolExecutor(cores)
parts = [slice(i * N // cores, (i + 1) * N // cores) for i in range(cores)]
def copy_all():
    list(pool.map(lambda s: np.copyto(dst[s], x[s]), parts))
print("copy", "floor", "%.3f" % min(best(lambda: np.copyto(dst, x)), best(copy_all)), flush=True)

try:
    import numexpr as ne
    ne_side = {
        "saxpy": lambda: ne.evaluate("2.0 * x + y"),
        "rmse": lambda: np.sqrt(ne.evaluate("sum((x - y) * (x - y))") / N),
        "sum": lambda: ne.evaluate("sum(x)"),
        "fwd_diff": lambda: ne.evaluate("a - b", local_dict={"a": x[1:], "b": x[:-1]}),
    }
    for name, f in ne_side.items():
        print(name, "numexpr", "%.3f" % best(f), flush=True)
except ImportError:
    print("# numexpr not installed", file=sys.stderr)

try:
    import jax
    import jax.numpy as jnp
    jx, jy = jnp.asarray(x), jnp.asarray(y)
    jp, js, jt = jnp.asarray(price), jnp.asarray(strike), jnp.asarray(years)
    jit = {
        "saxpy": jax.jit(lambda a, b: 2.0 * a + b),
        "rmse": jax.jit(lambda a, b: jnp.sqrt(jnp.sum((a - b) * (a - b)) / N)),
        "sum": jax.jit(lambda a, b: jnp.sum(a)),
        "fwd_diff": jax.jit(lambda a, b: a[1:] - a[:-1]),
        "spencer": jax.jit(lambda a, b: spencer(a, jnp)),
        "scan": jax.jit(lambda a, b: jnp.cumsum(a)),
        "sort": jax.jit(lambda a, b: jnp.sort(a)),
    }
    for name, f in jit.items():
        print(name, "jax", "%.3f" % best(lambda: f(jx, jy).block_until_ready()), flush=True)
    f = jax.jit(lambda s, k, t: bs(s, k, t, jnp))
    print("blackscholes", "jax", "%.3f" % best(lambda: [r.block_until_ready() for r in f(jp, js, jt)]), flush=True)
except ImportError:
    print("# jax not installed", file=sys.stderr)
