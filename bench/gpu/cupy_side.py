"""CuPy's side of the GPU benchmark (bench/gpu/run.sh).

  cupy_side.py ROUNDS LOG2...

times CuPy's version of every program shoal_bench_gpu runs, written as a
numpy user would (bench/programs_numpy.py's where it has one), at sizes
2^LOG2 (Jacobi: a square of that many elements), on inputs CuPy generates
on the device (the same distributions as Shoal's, not the same numbers).
Each program runs once to warm up (CuPy compiles its kernels), then ROUNDS
times; it keeps the best time between CUDA events recorded around the call
and the best wall time of the call with a synchronisation. Prints, for
shoal_bench_gpu --cupy:
  cupy <version> on <device>
  <program> <log2> <ms> <wall ms>
or a single line `skipped <why>` when CuPy cannot run here.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import programs_numpy as pn  # noqa: E402

JACOBI_SWEEPS = 10  # bench_gpu.cpp's kJacobiSweeps


def sdot(d, xp):
    return xp.dot(d["x"], d["y"])


def jacobi(d, xp):
    u = d["u0"]
    h = 1.0 / (u.shape[0] - 1)
    for _ in range(JACOBI_SWEEPS):
        v = u.copy()
        v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] + h * h)
        u = v
    return u


def scan(d, xp):
    return xp.cumsum(d["x"])


def histogram(d, xp):
    return xp.bincount(xp.minimum(255, (d["x"] * 256.0).astype(xp.int32)), minlength=256)


def filter_(d, xp):
    x = d["x"]
    return x[x > 0.5]


def sort(d, xp):
    return xp.sort(d["x"])


# In the order of bench_gpu.cpp's table.
PROGRAMS = {
    "saxpy": pn.saxpy,
    "sdot": sdot,
    "rmse": pn.rmse,
    "blackscholes": pn.blackscholes,
    "fwd_diff": pn.forward_difference,
    "spencer": pn.spencer,
    "jacobi": jacobi,
    "scan": scan,
    "histogram": histogram,
    "filter": filter_,
    "sort": sort,
}


def inputs(cp, log2):
    """bench_gpu.cpp's inputs: uniform floats, and the Jacobi grid u0."""
    n = 1 << log2
    side = int(n ** 0.5)
    cp.random.seed(log2)

    def uniform(lo, hi):
        return lo + (hi - lo) * cp.random.random(n, dtype=cp.float32)

    u0 = cp.zeros((side, side), dtype=cp.float32)
    u0[0, :] = 1.0
    return {"x": uniform(0.0, 1.0), "y": uniform(0.0, 1.0), "price": uniform(5.0, 30.0),
            "strike": uniform(1.0, 100.0), "years": uniform(0.25, 10.0), "u0": u0}


def timed(cp, f, rounds):
    """Best event time and best wall time of f(), in ms, after a warm-up."""
    f()
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    best, best_wall = float("inf"), float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        start.record()
        f()
        end.record()
        end.synchronize()
        best_wall = min(best_wall, (time.perf_counter() - t0) * 1e3)
        best = min(best, cp.cuda.get_elapsed_time(start, end))
    return best, best_wall


def one_line(e):
    return " ".join(("%s: %s" % (type(e).__name__, e)).split())


def main():
    rounds, sizes = int(sys.argv[1]), [int(k) for k in sys.argv[2:]]
    try:
        import cupy as cp
    except Exception as e:  # not installed, or its CUDA libraries missing
        print("skipped import cupy failed:", one_line(e))
        return
    try:
        int(cp.arange(4).sum())
        device = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    except Exception as e:  # no driver, no device
        print("skipped CuPy cannot use a GPU here:", one_line(e))
        return
    print("cupy", cp.__version__, "on", device.decode() if isinstance(device, bytes) else device)
    sys.stdout.flush()
    for log2 in sizes:
        d = inputs(cp, log2)
        for name, f in PROGRAMS.items():
            ms, wall = timed(cp, lambda: f(d, cp), rounds)
            print(name, log2, "%.4f" % ms, "%.4f" % wall)
            sys.stdout.flush()
        del d
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
