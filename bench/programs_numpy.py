"""numpy's side of the whole-program benchmark (bench/run.sh).

  programs_numpy.py data DIR       writes the inputs as .npy files (both sides read them)
  programs_numpy.py time DIR [N]   times the numpy version of every program on them
                                   (N: one of the sizes; default all)

The programs are those of examples/*.shoal, written the way a numpy user
would (whole-array operations, one temporary per operation); each takes the
array module (numpy here; gpu/cupy_side.py passes cupy). Prints one line per
program and size, as bench_programs does:
  <program> <n> <ns per element>
"""
import os
import sys

import numpy as np

from bench_numpy import best  # the same timing on both numpy sides

SIZES = (1 << 20, 1 << 24)
INPUT_NAMES = ("x", "y", "price", "strike", "years")


def inputs(n):
    """The input arrays of size n, by name (float32, fixed seed)."""
    rng = np.random.default_rng(n)
    f32 = np.float32
    return {
        "x": rng.random(n, dtype=f32),
        "y": rng.random(n, dtype=f32),
        # Black-Scholes: the ranges of the CUDA SDK sample
        "price": rng.uniform(5.0, 30.0, n).astype(f32),
        "strike": rng.uniform(1.0, 100.0, n).astype(f32),
        "years": rng.uniform(0.25, 10.0, n).astype(f32),
    }


def path(directory, n, name):
    return os.path.join(directory, "%s_%d.npy" % (name, n))


def saxpy(d, xp=np):
    return np.float32(2.5) * d["x"] + d["y"]


def rmse(d, xp=np):
    diff = d["x"] - d["y"]
    return xp.sqrt(xp.sum(diff * diff) / len(diff))


RISKFREE = 0.02
VOLATILITY = 0.30


def cnd(d, xp=np):
    a1, a2, a3, a4, a5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
    rsqrt2pi = 0.39894228040143267793994605993438
    k = 1.0 / (1.0 + 0.2316419 * xp.abs(d))
    c = rsqrt2pi * xp.exp(-0.5 * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))))
    return xp.where(d > 0.0, 1.0 - c, c)


def blackscholes(d, xp=np):
    s, x, t = d["price"], d["strike"], d["years"]
    sqrt_t = xp.sqrt(t)
    d1 = (xp.log(s / x) + (RISKFREE + 0.5 * VOLATILITY * VOLATILITY) * t) / (VOLATILITY * sqrt_t)
    d2 = d1 - VOLATILITY * sqrt_t
    cnd_d1 = cnd(d1, xp)
    cnd_d2 = cnd(d2, xp)
    exp_rt = xp.exp(-RISKFREE * t)
    call = s * cnd_d1 - x * exp_rt * cnd_d2
    put = x * exp_rt * (1.0 - cnd_d2) - s * (1.0 - cnd_d1)
    return call, put


def forward_difference(d, xp=np):
    x = d["x"]
    return x[1:] - x[:-1]


SPENCER_WEIGHTS = np.array([-3, -6, -5, 3, 21, 46, 67, 74, 67, 46, 21, 3, -5, -6, -3], dtype=np.float32)


def spencer(d, xp=np):
    x = d["x"]
    m = len(x) - 14
    acc = xp.zeros(m, dtype=np.float32)
    for k in range(15):
        acc = acc + SPENCER_WEIGHTS[k] * x[k:k + m]
    return acc / 320.0


def total(d, xp=np):
    return xp.sum(d["x"])


# In the order of bench_programs.cpp's table.
PROGRAMS = {
    "saxpy": saxpy,
    "rmse": rmse,
    "blackscholes": blackscholes,
    "fwd_diff": forward_difference,
    "spencer": spencer,
    "sum": total,
}


def main():
    mode, directory = sys.argv[1], sys.argv[2]
    sizes = [int(sys.argv[3])] if len(sys.argv) > 3 else SIZES
    if mode == "data":
        os.makedirs(directory, exist_ok=True)
        for n in SIZES:
            for name, a in inputs(n).items():
                np.save(path(directory, n, name), a)
        return
    for n in sizes:
        d = {name: np.load(path(directory, n, name)) for name in INPUT_NAMES}
        reps = 5 if n > (1 << 20) else 20
        for name, f in PROGRAMS.items():
            f(d)  # warm-up
            print(name, n, "%.3f" % (best(reps, lambda: f(d)) * 1e9 / n))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
