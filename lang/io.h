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
// `rows` >= 0: only rows [first_row, first_row + rows) of the leading axis
// are read (a sharded array's block), after the same checks of the whole file.
ArrayPtr load_npy(const std::string& path, const Loc& loc, int64_t first_row = 0, int64_t rows = -1);
// Writes atomically (temporary file + rename).
void save_npy(const std::string& path, const Array& a, const Loc& loc);

// One .npy file written by several processes, each its own rows (a sharded
// array's blocks: codegen/sharding.cpp): rank 0 begins it (a temporary file
// beside `path`, the header written and the file as long as it will be),
// every rank writes its rows' bytes at their offset in the data, and rank 0
// ends it, renamed over `path` (a reader never sees half a file) or removed.
struct NpyInParts {
    std::string path, target, temporary;  // temporary empty: `path` is no regular file (write it whole)
    int64_t data_offset = 0;
};
NpyInParts begin_npy_in_parts(const std::string& path, Prim elem, const Shape& shape, const Loc& loc);
void write_npy_part(const NpyInParts& file, int64_t offset, const void* data, int64_t bytes, const Loc& loc);
void end_npy_in_parts(const NpyInParts& file, bool keep, const Loc& loc);

// A CSV of numbers -> [[double]] (every row the same number of fields); a
// first line with no number in it is a header and is skipped. `vector`:
// one value per line -> [double] (loadCsv1, what saveCsv writes for a vector).
ArrayPtr load_csv(const std::string& path, const Loc& loc, bool vector = false);
// Rank 1 -> one value per line; rank 2 -> one row per line. Atomic.
void save_csv(const std::string& path, const Array& a, const Loc& loc);

}  // namespace shoal
