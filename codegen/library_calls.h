// The library functions a launch plan's host program may call (a Call step,
// launch_plan.h), and what their arguments mean. Every executor implements
// each of them with its device's vendor library: the CPU executor with the
// CPU BLAS (OpenBLAS, runtime/cpu/blas.h), the CUDA executor with cuBLAS
// (the simulated device with the CPU BLAS on its host-backed memory). The
// later issues add LAPACK / cuSOLVER and collectives across ranks here.
//
//   gemm(n, m, k, trans_a, trans_b; a, b; c)
//       c (n x m, row-major) = op(a) op(b), float or double (all three of
//       one type), where op(a) is n x k: a stored row-major as n x k, or as
//       k x n when trans_a != 0; op(b) is k x m: b stored as k x m, or as
//       m x k when trans_b != 0. k == 0 gives zeros. Results are within
//       float tolerance of the reference evaluator's sums in order (the one
//       documented exception to bit-identical results, docs/semantics.md).
//
//   lu(n, nrhs, trans; ; a, pivots, b, info)
//       the LU factorisation with partial pivoting of a (n x n, float or
//       double, COLUMN-major, in place: U on and above the diagonal, L's unit
//       diagonal below it), pivots (I32, n: row i was exchanged with row
//       pivots[i] - 1, LAPACK's ipiv) and info (I32, one element: 0, or the
//       1-based index of the first exactly zero pivot); then, when nrhs > 0
//       and info is 0, b (n x nrhs, column-major, a's type) is overwritten
//       by the solution x of a x = b, or of transpose(a) x = b when trans
//       != 0. LAPACK's getrf + getrs on a CPU, cuSOLVER's on a GPU. Results
//       are within floating-point tolerance of the reference evaluator's
//       unblocked factorisation. (A row-major matrix is its transpose
//       column-major: lower_linalg.cpp factors it as it is.)
//
//   svd(rows, cols; ; a, s, u, v, info)
//       the thin singular value decomposition a = u diag(s) v' of a (rows x
//       cols, float or double, COLUMN-major, destroyed): s (p = min(rows,
//       cols) values, descending, non-negative), u (rows x p) and v (cols x
//       p; v itself, not its transpose), both column-major, and info (I32,
//       one element: 0, or > 0 when the iteration did not converge).
//       LAPACK's gesdd on a CPU (its v' transposed after the call),
//       cuSOLVER's gesvdj on a GPU. Within floating-point tolerance of the
//       reference evaluator's Jacobi SVD (singular vectors are unique only
//       up to sign: lstsq's solution, which the tests compare, is unique).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "codegen/launch_plan.h"

namespace shoal::ir {

struct LibraryFunction {
    const char* name;
    int args, reads, writes;  // how many of each a call has
    const char* summary;      // one line: `:cuda` and docs
};

// The function of that name, or null.
const LibraryFunction* find_library_function(const std::string& name);

// Checks a call against its function: arity, buffer element types
// (an internal error names what is wrong).
void verify_library_call(const LaunchPlan& plan, const LibraryCall& call);

// ---------------------------------------------------------------- gemm
struct GemmShape {
    int64_t n = 0, m = 0, k = 0;
    bool trans_a = false, trans_b = false;
    // What it moves and computes at least (`:profile`).
    int64_t flops() const { return 2 * n * m * k; }
    int64_t elements() const { return n * k + k * m + n * m; }
};
LibraryCall gemm_call(ExprPtr n, ExprPtr m, ExprPtr k, bool trans_a, bool trans_b, const std::string& a,
                      const std::string& b, const std::string& c);
// The extents of a gemm call, its arguments evaluated.
GemmShape gemm_shape(const LibraryCall& call, const std::function<HostValue(const std::string&)>& lookup);

// ---------------------------------------------------------------- lu
struct LuShape {
    int64_t n = 0, nrhs = 0;
    bool trans = false;
    int64_t flops() const { return 2 * n * n * n / 3 + 2 * n * n * nrhs; }
    int64_t elements() const { return n * n + 2 * n * nrhs; }
};
LibraryCall lu_call(ExprPtr n, ExprPtr nrhs, bool trans, const std::string& a, const std::string& pivots, const std::string& b,
                    const std::string& info);
LuShape lu_shape(const LibraryCall& call, const std::function<HostValue(const std::string&)>& lookup);

// ---------------------------------------------------------------- svd
struct SvdShape {
    int64_t rows = 0, cols = 0;
    int64_t p() const { return rows < cols ? rows : cols; }
    int64_t flops() const { return 4 * rows * cols * p() + 8 * p() * p() * p(); }
    int64_t elements() const { return rows * cols + p() + (rows + cols) * p(); }
};
LibraryCall svd_call(ExprPtr rows, ExprPtr cols, const std::string& a, const std::string& s, const std::string& u,
                     const std::string& v, const std::string& info);
SvdShape svd_shape(const LibraryCall& call, const std::function<HostValue(const std::string&)>& lookup);

}  // namespace shoal::ir
