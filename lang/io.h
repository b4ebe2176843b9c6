// Array files: NumPy .npy (version 1.0-3.0 read, 1.0 written; C order;
// dtypes |b1 <i4 <i8 <f4 <f8) and CSV (numbers, one row per line).
// Every problem is an Error of kind Io that names the file and what was wrong.
#pragma once
#include <string>

#include "diagnostics.h"
#include "value.h"

namespace shoal {

struct NpyHeader {
    Prim elem;
    Shape shape;
};

// Reads only the header (the type checker uses it to type `load "x.npy"`).
NpyHeader read_npy_header(const std::string& path, const Loc& loc);
ArrayPtr load_npy(const std::string& path, const Loc& loc);
// Writes atomically (temporary file + rename).
void save_npy(const std::string& path, const Array& a, const Loc& loc);

// A CSV of numbers -> [[double]] (every row the same number of fields); a
// first line with no number in it is a header and is skipped. `vector`:
// one value per line -> [double] (loadCsv1, what saveCsv writes for a vector).
ArrayPtr load_csv(const std::string& path, const Loc& loc, bool vector = false);
// Rank 1 -> one value per line; rank 2 -> one row per line. Atomic.
void save_csv(const std::string& path, const Array& a, const Loc& loc);

}  // namespace shoal
