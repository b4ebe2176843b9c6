// The NumPy footgun, caught (docs/language.md, "Broadcasting"). Under
// NumPy's rules `m - maximum m` is legal on a square matrix, and wrong: the
// vector of row maxima is lined up with the matrix's last axis, so each row
// has every row's maximum subtracted, one per column. No shape check can
// see it; provenance can. An innermost reduction of a matrix notes that its
// result holds one value per row of that matrix; an elementwise operator
// that stretches such a vector along a matrix read at the same index as the
// reduced one (`m`, `exp m - 1.0`, but not `transpose m`) warns and
// suggests `col (...)`. Correct code (`m - mean (transpose m)`, `m - col
// (maximum m)`) is left alone.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lang/source.h"
#include "lang/value.h"

namespace shoal::compiled {

// Identities of the arrays a value reads element for element at its own
// index: itself, and for an elementwise operator its operands of its shape,
// transitively (bounded).
using AlignedSources = std::vector<const void*>;
inline constexpr size_t kMaxAlignedSources = 16;

// A value's identity: its array or its delayed node.
const void* value_identity(const Value& v);
// The source text at a location on one line (`maximum m`), or "" if it
// does not start with `what`.
std::string source_text(const Loc& at, const std::string& what);

class RowValues {
public:
    // `v`, a vector, holds one value per row of the matrix whose aligned
    // sources are `of`; `what` and `at` name the reduction (`maximum` at 1:5).
    void note_reduction(const Value& v, AlignedSources of, std::string what, Loc at);
    struct Reduction {
        std::weak_ptr<const void> value;  // the vector (its record dies with it)
        AlignedSources of;
        std::string what;
        Loc at;
    };
    // The reduction that made `v`, if its matrix shares a source with
    // `matrix` (a matrix's aligned sources); else null.
    const Reduction* reduced_from(const Value& v, const AlignedSources& matrix) const;
    // The reduction that made `v` (or the vector it was computed from
    // elementwise, see carry); null if none.
    const Reduction* find(const Value& v) const;
    // `to` is computed elementwise from `from` with scalars or same-shape
    // vectors (`sum m / 3.0`): it holds one value per row of the same matrix.
    void carry(const Value& from, const Value& to);
    bool empty() const { return records_.empty(); }

private:
    std::unordered_map<const void*, Reduction> records_;
};

}  // namespace shoal::compiled
