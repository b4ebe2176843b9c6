#!/usr/bin/env python3
"""Writes the small numpy-made .npy files that tests/unit/test_io.cpp reads.

Run from anywhere with numpy installed: python3 tests/data/make_npy.py
The outputs are committed, so building and testing Shoal never needs numpy.
"""
import os

import numpy as np
from numpy.lib import format as npf

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "npy")


def save(name, array, version=None):
    path = os.path.join(HERE, name)
    if version is None:
        np.save(path, array)  # numpy's default: version 1.0
    else:
        with open(path, "wb") as f:
            npf.write_array(f, array, version=version)


def main():
    os.makedirs(HERE, exist_ok=True)
    # Readable files, one per dtype (values chosen to need exact round trips).
    save("b1_3.npy", np.array([True, False, True]))
    save("i4_4.npy", np.array([1, -2, 3, 2147483647], dtype="<i4"))
    save("i8_2x2x2.npy", (np.arange(8, dtype="<i8") - 4).reshape(2, 2, 2) * 1000000000000)
    save("f4_3.npy", np.array([0.1, 1 / 3, -np.inf], dtype="<f4"))
    save("f8_2x3.npy", np.arange(6, dtype="<f8").reshape(2, 3) * 0.5 + 0.1)
    save("f8_0.npy", np.zeros(0, dtype="<f8"))
    save("f8_v2.npy", np.array([1.5, -2.5], dtype="<f8"), version=(2, 0))
    save("f8_v3.npy", np.array([1.5, -2.5], dtype="<f8"), version=(3, 0))
    # Files Shoal must reject with a clear error.
    save("fortran_2x3.npy", np.asfortranarray(np.arange(6, dtype="<f8").reshape(2, 3)))
    save("big_endian.npy", np.array([1.0, 2.0], dtype=">f8"))
    save("u2.npy", np.array([1, 2], dtype="<u2"))
    save("rank0.npy", np.array(1.0))
    save("rank4.npy", np.zeros((1, 1, 1, 2), dtype="<f8"))


if __name__ == "__main__":
    main()
