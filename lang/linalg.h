// Dense linear algebra of the reference evaluator: the LU factorisation
// with partial pivoting that LAPACK's getrf computes (unblocked, in the
// element type), and what solve, inv and det make of it. The compiled
// backend calls LAPACK / cuSOLVER instead (codegen/library_calls.h "lu");
// their results agree within floating-point tolerance, the one kind of
// difference docs/semantics.md allows for library calls.
#pragma once
#include <cstdint>
#include <string>

#include "source.h"
#include "value.h"

namespace shoal::ops {

// The checks every form shares, raising the error at `loc`: a square matrix
// (`what`: "solve", ...), a right-hand side of rank 1 or 2 with as many rows.
void require_square(const Shape& a, const std::string& what, const Loc& loc);
void require_rhs(const Shape& a, const Shape& b, const std::string& what, const Loc& loc);
// The message of a singular matrix at the 1-based pivot `pivot` of n (NumPy:
// LinAlgError); the compiled backend's check passes "{index}" and "{extent}".
std::string singular_message(const std::string& what, const std::string& pivot, const std::string& n);

// solve a b: x with a x = b (b a vector or n x k); a singular a is an error.
ArrayPtr solve(const Array& a, const Array& b, const std::string& what, const Loc& loc);
// The inverse (solve a I).
ArrayPtr inverse(const Array& a, const Loc& loc);
// The determinant: the product of U's diagonal in order, negated once per
// row exchange; 0 for a singular matrix (NumPy's det).
Scalar determinant(const Array& a, const Loc& loc);
// lstsq a b: the minimum-norm least-squares solution of a x = b for any
// m x n matrix a (NumPy's lstsq, LAPACK's gelsd): x = pinv(a) b from the
// SVD, singular values at most eps * max(m, n) * the largest treated as
// zero (NumPy's default rcond; eps of a's element type). b a vector of m or
// m x k; x has n rows. The reference computes the SVD by one-sided Jacobi
// rotations in double, then rounds.
ArrayPtr lstsq(const Array& a, const Array& b, const Loc& loc);
// The error for a b whose rows are not a's (both evaluators raise it).
std::string lstsq_rhs_message(const Shape& a, const Shape& b);

}  // namespace shoal::ops
