"""numpy's side of bench/run.sh: the same cases, same inputs, same output format."""
import sys
import time

import numpy as np


def best(reps, f):
    t = 1e30
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    for n in (1 << 20, 1 << 24):
        i = np.arange(n)
        x = ((i % 1000) * 0.001).astype(np.float32)
        y = ((i % 777) * 0.002).astype(np.float32)
        a = np.float32(2.0)
        reps = 3 if n > (1 << 20) else 10
        cases = {
            "saxpy": lambda: a * x + y,
            "sum": lambda: np.sum(x),
            "rmse": lambda: np.sum((x - y) * (x - y)),
        }
        for name, f in cases.items():
            print(name, n, "%.3f" % (best(reps, f) * 1e9 / n))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
