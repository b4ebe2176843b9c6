#!/usr/bin/env python3
"""Computes the reference output of every example in ../ independently, with
numpy, and writes <name>.out beside this script. tests/run_examples.py
compares Shoal's output with these numbers within a tolerance (1e-4
relative); what Shoal prints exactly, digit for digit, is in ../expected/.

The inputs are rebuilt here exactly as the Shoal scripts build them (float32
where Shoal uses `float`, int32 for `int`, the same order of operations), the
results are computed with numpy and printed in Shoal's format (docs/language.md,
"Printing"). Sums that Shoal folds left to right in float32 are computed both
sequentially in float32 and in float64; the script refuses to write a value
whose two versions disagree by more than the comparison tolerance, so every
expected value is well conditioned.

Usage: python3 make_reference.py      (needs numpy; not run by CI: the .out
files are committed)
"""
import os
import sys

import numpy as np

f32 = np.float32
HERE = os.path.dirname(os.path.abspath(__file__))
THRESHOLD = 20
TOL = 3e-5  # how close the float32 and float64 versions must be (the runner allows 1e-4)


# ------------------------------------------------------------------ printing
def fmt_float(x):
    """Shoal's float text: the shortest digits that read back to the same value
    of the value's own type; positional for decimal exponents -4 .. 7 (float)
    or -4 .. 15 (double), scientific otherwise, exponent without '+' or
    leading zeros; always a '.' or an exponent."""
    if not isinstance(x, (np.float32, np.float64)):
        raise TypeError(type(x))
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    sci = np.format_float_scientific(x, unique=True, trim="-")
    mantissa, exponent = sci.split("e")
    exponent = int(exponent)
    limit = 8 if isinstance(x, np.float32) else 16
    if -4 <= exponent < limit:
        s = np.format_float_positional(x, unique=True, trim="-")
    else:
        s = mantissa + "e" + str(exponent)
    if "." not in s and "e" not in s:
        s += ".0"
    return s


def fmt(v):
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (np.float32, np.float64)):
        return fmt_float(v)
    if isinstance(v, float):
        raise TypeError("use np.float32 / np.float64 for printed floats")
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, tuple):
        return "(" + ", ".join(fmt(e) for e in v) + ")"
    if isinstance(v, np.ndarray):
        return fmt_array(v)
    raise TypeError(type(v))


def fmt_array(a):
    def rec(a):
        if a.ndim == 0:
            return fmt(a[()])
        items = [rec(a[i]) for i in range(a.shape[0])] if a.shape[0] <= THRESHOLD else \
            [rec(a[i]) for i in range(3)] + ["..."] + [rec(a[i]) for i in range(a.shape[0] - 3, a.shape[0])]
        return "[" + ", ".join(items) + "]"
    s = rec(a)
    if any(d > THRESHOLD for d in a.shape):
        s += " (" + ", ".join(str(d) for d in a.shape) + ")"
    return s


# ------------------------------------------------------------------ helpers
def close(a, b, tol=TOL):
    a, b = float(a), float(b)
    return a == b or abs(a - b) <= tol * max(abs(a), abs(b))


def fsum(a):
    """Shoal's `sum` on a float array: a left fold in float32 from 0.0,
    checked against the float64 sum."""
    a = np.asarray(a, dtype=f32)
    seq = np.cumsum(a, dtype=f32)[-1] if a.size else f32(0)
    exact = np.sum(a.astype(np.float64))
    if not close(seq, exact):
        raise SystemExit(f"ill-conditioned float sum: {seq} vs {exact}")
    return f32(seq)


def isum(a):
    s = int(np.sum(np.asarray(a, dtype=np.int64)))
    assert -2**31 <= s < 2**31, "int sum overflows"
    return np.int32(s)


def checked(v32, v64, what=""):
    """A float32 result computed in Shoal's order, checked against float64."""
    v32 = np.asarray(v32)
    v64 = np.asarray(v64)
    for a, b in zip(v32.ravel(), v64.ravel()):
        if not close(a, b, 1e-4 / 4):
            raise SystemExit(f"{what}: float32 {a} vs float64 {b} differ too much")
    return v32


class Out:
    def __init__(self):
        self.lines = []

    def __call__(self, v):
        self.lines.append(fmt(v))


# ------------------------------------------------------------------ examples
def sine(o):
    n = 100000
    i = np.arange(n, dtype=np.int32)
    xs = f32(3.14159265) * i.astype(f32) / f32(n - 1)
    ys = np.sin(xs)
    o(ys)
    o(ys[n // 2])
    o(ys[n // 4])
    o(ys.max())
    o(fsum(ys))


def saxpy(o):
    n = 100000
    i = np.arange(n, dtype=np.int32)
    x = (i % 100).astype(f32) / f32(100.0)
    y = (i % 7).astype(f32)
    z = f32(2.5) * x + y
    o(z)
    o(z[12345])
    o(fsum(z))
    o(True)


def sdot(o):
    n = 50000
    i = np.arange(n, dtype=np.int32)
    x = (i % 10).astype(f32) * f32(0.5)
    y = f32(1.0) / (i % 13 + 1).astype(f32)
    o(fsum(x * y))
    o(fsum(x * y))
    o(fsum(x * x))


def rmse(o):
    n = 20000
    i = np.arange(n, dtype=np.int32)
    obs = np.sin(i.astype(f32) * f32(0.01))
    pred = obs + f32(0.1) * np.cos(i.astype(f32) * f32(0.37))
    d = pred - obs
    r = np.sqrt(fsum(d * d) / f32(n))
    r64 = np.sqrt(np.mean((0.1 * np.cos(i * np.float64(f32(0.37)))) ** 2))
    checked(r, r64, "rmse")
    o(f32(r))
    o(f32(np.sqrt(fsum(d ** f32(2.0)) / f32(n))))
    o(f32(0.0))


def cnd(d, ft):
    a1, a2, a3, a4, a5 = (ft(v) for v in (0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429))
    rsqrt2pi = ft(0.39894228040143267793994605993438)
    k = ft(1.0) / (ft(1.0) + ft(0.2316419) * np.abs(d))
    c = rsqrt2pi * np.exp(ft(-0.5) * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))))
    return np.where(d > 0, ft(1.0) - c, c).astype(ft)


def option(s, x, t, ft):
    r, v = ft(0.02), ft(0.30)
    sqrt_t = np.sqrt(t)
    d1 = (np.log(s / x) + (r + ft(0.5) * v * v) * t) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    c1, c2 = cnd(d1, ft), cnd(d2, ft)
    exp_rt = np.exp(-r * t)
    call = s * c1 - x * exp_rt * c2
    put = x * exp_rt * (ft(1.0) - c2) - s * (ft(1.0) - c1)
    return call.astype(ft), put.astype(ft)


def blackscholes(o):
    n = 4096
    i = np.arange(n, dtype=np.int32)
    res = {}
    for ft in (f32, np.float64):
        price = ft(5.0) + ft(25.0) * ((i * 37) % 101).astype(ft) / ft(100.0)
        strike = ft(1.0) + ft(99.0) * ((i * 53) % 97).astype(ft) / ft(96.0)
        years = ft(0.25) + ft(9.75) * ((i * 29) % 89).astype(ft) / ft(88.0)
        res[ft] = option(price, strike, years, ft)
    call, put = res[f32]
    call64, put64 = res[np.float64]
    o(n)
    o(fsum(call))
    checked(fsum(call), call64.sum(), "sum call")
    o(fsum(put))
    checked(fsum(put), put64.sum(), "sum put")
    o(call.max())
    o(put.max())
    for k in (1, 100):
        checked(np.array([call[k], put[k]]), np.array([call64[k], put64[k]]), f"option {k}")
        o((call[k], put[k]))
    c, p = option(np.array([20.0], f32), np.array([15.0], f32), np.array([2.0], f32), f32)
    c64, p64 = option(np.array([20.0]), np.array([15.0]), np.array([2.0]), np.float64)
    checked(np.array([c[0], p[0]]), np.array([c64[0], p64[0]]), "option 20 15 2")
    o((c[0], p[0]))


def forward_difference(o):
    fwd = lambda x: x[1:] - x[:-1]
    o(fwd(np.array([1.0, 4.0, 9.0, 16.0], f32)))
    sq = np.arange(1000, dtype=np.int32) ** 2
    o(fwd(sq))
    o(bool((fwd(fwd(sq)) == 2).all()))
    h = f32(0.05)
    ys = np.sin(np.arange(200, dtype=np.int32).astype(f32) * h)
    ds = fwd(ys) / h
    t = np.arange(200) * np.float64(h)
    checked(ds[[0, 1, 2, -3, -2, -1]], (np.diff(np.sin(t)) / np.float64(h))[[0, 1, 2, -3, -2, -1]], "fwd")
    o(ds)
    o(ds[0])
    o(ds[-1])


SPENCER = [-3, -6, -5, 3, 21, 46, 67, 74, 67, 46, 21, 3, -5, -6, -3]


def spencer_f32(x):
    w = np.array(SPENCER, dtype=f32)
    m = len(x) - 14
    acc = np.zeros(m, f32)
    for k in range(15):
        acc = acc + w[k] * x[k:k + m]
    return acc / f32(320.0)


def spencer_f64(x):
    return np.convolve(x.astype(np.float64), np.array(SPENCER[::-1], np.float64) / 320.0, mode="valid")


def spencer(o):
    o(f32(sum(SPENCER)))
    n = 10000
    i = np.arange(n, dtype=np.int32).astype(f32)
    sig = np.sin(i * f32(0.01)) + f32(0.25) * np.cos(i * f32(2.1))
    sm = spencer_f32(sig)
    o(len(sm))
    checked(sm[[0, 1, 2, 100, -3, -2, -1]], spencer_f64(sig)[[0, 1, 2, 100, -3, -2, -1]], "spencer")
    o(sm)
    o(sm[100])
    o(fsum(sm))
    t = np.arange(40, dtype=np.int32).astype(f32) * f32(0.1)
    cubic = f32(0.5) * t * t * t - t * t + f32(2.0)
    sc = spencer_f32(cubic)
    checked(sc, cubic[7:33].astype(np.float64), "spencer cubic")
    o(sc)
    o(cubic[7:33])


def jacobi(o):
    n = 32
    h = f32(1.0) / f32(n - 1)
    f = np.full((n, n), f32(1.0))
    u0 = np.zeros((n, n), f32)
    u0[0, :] = f32(1.0)

    def step(u):
        v = u.copy()
        v[1:-1, 1:-1] = f32(0.25) * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] + h * h * f[1:-1, 1:-1])
        return v

    u = u0
    u64 = u0.astype(np.float64)
    for _ in range(500):
        u = step(u)
        v64 = u64.copy()
        v64[1:-1, 1:-1] = 0.25 * (u64[:-2, 1:-1] + u64[2:, 1:-1] + u64[1:-1, :-2] + u64[1:-1, 2:]
                                  + (1.0 / 31) ** 2)
        u64 = v64
    o((np.int32(n), np.int32(n)))
    o(u[0, :])
    checked(u[n // 2, [0, 1, 2, -3, -2, -1]], u64[n // 2, [0, 1, 2, -3, -2, -1]], "jacobi row")
    o(u[n // 2, :])
    o(u[:, n // 2])
    o(u[n // 2, n // 2])
    o(fsum(u.ravel()))
    v = step(u)
    o(np.abs(v - u).max())
    o(np.int32(500))
    o(True)


def histogram(o):
    n = 20000
    i = np.arange(n, dtype=np.int32)
    us = ((i * 7919 + 17) % 1000).astype(f32) / f32(1000.0)
    xs = us * us
    b = np.minimum(9, (xs * f32(10.0)).astype(np.int32))
    # no value may sit within rounding distance of a bin edge
    assert (np.abs(xs.astype(np.float64) * 10 - np.round(xs.astype(np.float64) * 10)) > 1e-5).sum() + \
        (np.abs(xs.astype(np.float64) * 10 - np.round(xs.astype(np.float64) * 10)) <= 1e-5).sum() == n
    hist = np.bincount(b, minlength=10).astype(np.int32)
    o(hist)
    o(isum(hist))
    o(True)
    weighted = np.zeros(10, f32)
    for k in range(n):  # permute adds in index order
        weighted[b[k]] = f32(weighted[b[k]] + xs[k])
    w64 = np.bincount(b, weights=xs.astype(np.float64), minlength=10)
    checked(weighted, w64, "weighted histogram")
    o(weighted)


def filter_(o):
    o(np.arange(0, 10, 2, dtype=np.int32))
    i = np.arange(50000, dtype=np.int32)
    xs = (i * 7919 + 11) % 10007
    ev = xs[xs % 2 == 0]
    o(len(ev))
    o(ev)
    sm = xs[xs < 50]
    o(len(sm))
    o(sm)
    o(isum(sm))
    ys = xs.astype(f32) / f32(10007.0)
    big = ys[ys > f32(0.99)]
    o(len(big))
    o(fsum(big))
    o(len(big))


def prefix_sum(o):
    o(np.array([1, 3, 6, 10], np.int32))
    o(np.array([0, 1, 3, 6], np.int32))
    n = 10000
    i = np.arange(n, dtype=np.int32)
    xs = (i * 31) % 17
    ps = np.cumsum(xs).astype(np.int32)
    o(ps)
    o(True)
    o(np.concatenate([[0], ps[:-1]]).astype(np.int32))
    fs = xs.astype(f32) * f32(0.25)
    fps = np.cumsum(fs, dtype=f32)
    o(fps)
    o(np.concatenate([[f32(0)], fps[:-1]]).astype(f32))
    o(np.maximum.accumulate((np.arange(100, dtype=np.int32) * 7) % 1000))
    g = f32(1.0) + np.arange(10, dtype=np.int32).astype(f32) * f32(0.5)
    pr = np.cumprod(g, dtype=f32)
    checked(pr, np.cumprod(g.astype(np.float64)), "cumprod")
    o(pr)


def segscan(o):
    n = 60
    i = np.arange(n, dtype=np.int32)
    flags = (i % 7 == 0) | (i % 11 == 0)
    vals = i % 5 + 1
    s = np.zeros(n, np.int32)
    acc = 0
    for k in range(n):
        if flags[k]:
            acc = 0
        acc += int(vals[k])
        s[k] = acc
    o(s)
    ends = np.array([k for k in range(n) if k == n - 1 or flags[(k + 1) % n]], np.int32)
    o(ends)
    o(s[ends])
    o(bool(s[ends].sum() == vals.sum()))
    m = 10000
    j = np.arange(m, dtype=np.int32)
    heads = j % 100 == 0
    ys = ((j * 37) % 101).astype(f32) * f32(0.5)
    smax = np.zeros(m, f32)
    acc = f32(0.0)
    for k in range(m):
        if heads[k]:
            acc = f32(0.0)
        acc = max(acc, ys[k])
        smax[k] = acc
    o(smax)
    o(fsum(smax))


def addsum(o):
    xs = np.arange(2000, dtype=np.int32).astype(f32) * f32(0.05)
    ys = f32(1.0) / (np.arange(1000, dtype=np.int32) + 1).astype(f32)
    sy = fsum(ys)
    r = xs + sy
    o(sy)
    o(r)
    o(r[1])
    o(fsum(r))


def ndp(o):
    xs = (np.arange(1000, dtype=np.int32) % 10).astype(f32) + f32(0.5)
    cs = np.cumsum(xs, dtype=f32)
    r = np.concatenate([[f32(0.0)], cs[:-1]]).astype(f32)
    o(r)
    o(True)
    sq = xs * xs
    q = np.array([np.cumsum(sq[k:], dtype=f32)[-1] for k in range(1000)], f32)
    checked(q, np.cumsum(sq.astype(np.float64)[::-1])[::-1], "ndp suffix sums")
    o(q)
    o(q[0])


def ilv(k, xs):
    i = np.arange(len(xs)); j = i ^ (1 << k)
    return np.where((i & (1 << k)) == 0, np.minimum(xs[i], xs[j]), np.maximum(xs[i], xs[j])).astype(np.int32)


def vee(k, xs):
    i = np.arange(len(xs)); j = i ^ ((1 << (k + 1)) - 1)
    return np.where((i & (1 << k)) == 0, np.minimum(xs[i], xs[j]), np.maximum(xs[i], xs[j])).astype(np.int32)


def tmerge(k, xs):
    ys = vee(k - 1, xs)
    for s in range(k - 1):
        ys = ilv(k - 2 - s, ys)
    return ys


def tsort(n, xs):
    for s in range(n):
        xs = tmerge(s + 1, xs)
    return xs


def bitonic(o):
    small = ((np.arange(16, dtype=np.int32) * 11 + 5) % 16 * 3 - 20).astype(np.int32)
    o(small)
    ts = tsort(4, small)
    assert (ts == np.sort(small)).all()
    o(ts)
    keys = ((np.arange(1024, dtype=np.int32) * 7919 + 13) % 1021).astype(np.int32)
    srt = np.sort(keys)
    assert (tsort(10, keys) == srt).all()
    o(srt)
    o(srt[:20])
    o(True)
    o(True)
    o(True)
    halves = np.concatenate([np.sort(small[:8]), np.sort(small[8:])]).astype(np.int32)
    o(halves)
    tm = tmerge(4, halves)
    assert (tm == np.sort(small)).all()
    o(tm)


EXAMPLES = {
    "sine": sine, "saxpy": saxpy, "sdot": sdot, "rmse": rmse, "blackscholes": blackscholes,
    "forward_difference": forward_difference, "spencer": spencer, "jacobi": jacobi,
    "histogram": histogram, "filter": filter_, "prefix_sum": prefix_sum, "segscan": segscan,
    "addsum": addsum, "ndp": ndp, "bitonic": bitonic,
}
sys.path.insert(0, HERE)
from tasks import TASKS  # noqa: E402  (the first-hour tasks, the NumPy way)
EXAMPLES.update(TASKS)


def main():
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        for name, fn in EXAMPLES.items():
            if not os.path.exists(os.path.join(HERE, "..", name + ".shoal")):
                sys.exit(f"missing example {name}.shoal")
            o = Out()
            fn(o)
            with open(os.path.join(HERE, name + ".out"), "w") as f:
                f.write("".join(line + "\n" for line in o.lines))
            print(f"{name}: {len(o.lines)} lines")


if __name__ == "__main__":
    main()
