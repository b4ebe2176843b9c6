#!/usr/bin/env python3
"""Writes the input files of the program tests (tests/programs/io_numpy.shoal,
errors_npy.shoal and the hostile_*.shoal corpus) with numpy itself, so .npy
interoperability is tested against the real thing. run_programs.py copies
this folder into each test's temporary working directory. The files are
committed; run this (with numpy) only to regenerate them."""
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

# hostile input (tests/programs/hostile_files.shoal): .npy files whose magic,
# version, header or dtype is wrong, or whose header lies about the data
hdr_len = int.from_bytes(raw[8:10], "little")
data = raw[10 + hdr_len:]


def npy_with_header(name, header):
    """A version 1.0 .npy file with this header text, padded as numpy pads it,
    followed by the data of np_int32_matrix.npy (24 bytes)."""
    h = header.encode("latin1")
    h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
    with open(name, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h + data)


with open("hostile_magic.npy", "wb") as f:
    f.write(b"PK\x03\x04" + raw[4:])  # a zip file's magic
with open("hostile_version9.npy", "wb") as f:
    f.write(raw[:6] + b"\x09\x00" + raw[8:])
with open("hostile_header_len.npy", "wb") as f:
    f.write(raw[:8] + (60000).to_bytes(2, "little") + raw[10:])  # header "60000 bytes long"
with open("hostile_cut_header.npy", "wb") as f:
    f.write(raw[:30])  # the file ends inside the header
open("hostile_empty.npy", "wb").close()
np.save("hostile_float16.npy", np.zeros(3, dtype="<f2"))
np.save("hostile_int16.npy", np.zeros(2, dtype="<i2"))
np.save("hostile_unicode.npy", np.array(["ab", "cd"]))
np.save("hostile_object.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
np.save("hostile_struct.npy", np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")]))
npy_with_header("hostile_garbage.npy", "hello world")
npy_with_header("hostile_no_shape.npy", "{'descr': '<i4', 'fortran_order': False, }")
npy_with_header("hostile_no_descr.npy", "{'fortran_order': False, 'shape': (2, 3), }")
npy_with_header("hostile_neg_shape.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (-2, 3), }")
npy_with_header("hostile_huge_shape.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (1000000000000,), }")
npy_with_header("hostile_overflow_shape.npy",
                "{'descr': '<i4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }")
npy_with_header("hostile_fortran_str.npy", "{'descr': '<i4', 'fortran_order': 'no', 'shape': (2, 3), }")
npy_with_header("hostile_unclosed.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3")

# hostile CSV files
with open("hostile_empty_field.csv", "w") as f:
    f.write("1,,3\n4,5,6\n")
with open("hostile_trailing_comma.csv", "w") as f:
    f.write("1,2,\n3,4,\n")
with open("hostile_semicolon.csv", "w") as f:
    f.write("1;2\n3;4\n")
with open("hostile_spaces.csv", "w") as f:
    f.write("1 2\n3 4\n")
with open("hostile_hex.csv", "w") as f:
    f.write("0x10,2\n3,4\n")
with open("hostile_two_headers.csv", "w") as f:
    f.write("a,b\nc,d\n1,2\n")
with open("hostile_header_only.csv", "w") as f:
    f.write("a,b\n")
with open("hostile_blank_lines.csv", "w") as f:
    f.write("\n\n\n")
with open("hostile_overflow.csv", "w") as f:
    f.write("1e999,2\n3,4\n")
with open("hostile_ragged_long.csv", "w") as f:
    f.write("1,2\n3,4,5\n")
# quoted fields, as spreadsheets and pandas write them
with open("quoted_numbers.csv", "w") as f:
    f.write('"1","2.5"\n"3", 4\n')
with open("quoted_header.csv", "w") as f:
    f.write('"x","y"\n1,2\n')
with open("hostile_quote_unclosed.csv", "w") as f:
    f.write('1,2\n3,"4\n')
with open("hostile_quote_trailing.csv", "w") as f:
    f.write('"1"x,2\n')
with open("hostile_quoted_comma.csv", "w") as f:
    f.write('"1,000",2\n')

# hostile scripts for :load (tests/programs/hostile_commands.shoal)
with open("hostile_self_load.shoal", "w") as f:
    f.write(":load hostile_self_load.shoal\n")
with open("hostile_broken.shoal", "w") as f:
    f.write("let fromScript = 5\nlet = 6\nfromScript + 1 +\nlet alsoFromScript = fromScript * 2\n")
