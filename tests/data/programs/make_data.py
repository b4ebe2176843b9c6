#!/usr/bin/env python3
"""Writes the input files of the program tests (tests/programs/io_numpy.shoal
and errors_npy.shoal) with numpy itself, so .npy interoperability is tested
against the real thing. run_programs.py copies this folder into each test's
temporary working directory. The files are committed; run this (with numpy)
only to regenerate them."""
import os

import numpy as np

os.chdir(os.path.dirname(os.path.abspath(__file__)))

# readable files
np.save("np_int32_matrix.npy", np.arange(6, dtype="<i4").reshape(2, 3))
np.save("np_float64_vector.npy", np.array([0.5, -1.25, 3.0], dtype="<f8"))
np.save("np_float32_cube.npy", np.arange(8, dtype="<f4").reshape(2, 2, 2) / 4)
np.save("np_bool.npy", np.array([True, False, True]))
np.save("np_int64.npy", np.array([3000000000, -1], dtype="<i8"))
with open("np_version2.npy", "wb") as f:
    np.lib.format.write_array(f, np.array([1, 2, 3], dtype="<i4"), version=(2, 0))
np.save("np_empty.npy", np.zeros(0, dtype="<f4"))

# files Shoal must reject with a clear error
np.save("bad_fortran.npy", np.asfortranarray(np.arange(6, dtype="<f8").reshape(2, 3)))
np.save("bad_big_endian.npy", np.arange(3, dtype=">i4"))
np.save("bad_rank4.npy", np.zeros((1, 1, 1, 2), dtype="<f4"))
np.save("bad_scalar.npy", np.array(1.5, dtype="<f8"))
np.save("bad_complex.npy", np.zeros(2, dtype="<c8"))
np.save("bad_uint8.npy", np.zeros(2, dtype="u1"))
raw = open("np_int32_matrix.npy", "rb").read()
with open("bad_truncated.npy", "wb") as f:
    f.write(raw[:-8])  # header says 6 ints, only 4 follow
with open("bad_header.npy", "wb") as f:
    f.write(raw[:8] + raw[8:10] + b"{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }".ljust(
        int.from_bytes(raw[8:10], "little"), b"\x00"))

# CSV
with open("good.csv", "w") as f:
    f.write("1,2.5\n3,4\n-0.5,1e3\n")
with open("bad_ragged.csv", "w") as f:
    f.write("1,2\n3\n")
with open("bad_text.csv", "w") as f:
    f.write("1,2\n3,abc\n")
with open("header.csv", "w") as f:
    f.write("time,value\n0,1.5\n1,2.5\n")
