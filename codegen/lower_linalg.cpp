// Dense linear algebra through the plan's "lu" library call
// (library_calls.h): LAPACK's getrf + getrs on a CPU, cuSOLVER's on a GPU.
// The libraries work column-major and in place. A row-major a, read
// column-major, is a's transpose t, and a x = b is t' x = b: so a kernel
// copies a as it is (every producer of a fused into the copy), or a gemm
// call writes a product there (MatrixOperand), and the call factors t and
// solves with getrs 'T'. No transpose is needed for a vector
// b, for det (det t = det a), nor for inv (t X = I gives X = inv(a)', whose
// column-major storage is inv(a) row-major); only a matrix b is transposed
// in and its solution out (the tiled transpose, n x k). A one-thread kernel
// turns a zero pivot into the user's error, a last kernel writes the result
// (or folds the diagonal into the determinant).
#include "codegen/library_calls.h"
#include "codegen/lower_common.h"
#include "codegen/lower_primitives.h"
#include "lang/diagnostics.h"

namespace shoal::ir {

using namespace lowering;

namespace {

struct Factored {
    std::string lu, pivots, info;
};

// The operand's elements row-major in `target`: the product's gemm call, or
// a kernel copying the pull array.
void write_operand(PlanBuilder& pb, const std::string& name, const MatrixOperand& x, const std::string& target,
                   const LoweringOptions& opt) {
    if (x.product)
        lower_gemm(pb, x.product->first, x.product->second, target,
                   name + ": the product by the BLAS, straight into the buffer LAPACK works on");
    else
        lower_map(pb, name, tuple_of(x.pull), {target}, opt);
}

// a (n x n) written as it is (t, column-major) and factored by the "lu"
// call, which also solves t x = rhs (or t' x = rhs) when nrhs > 0.
Factored factor(PlanBuilder& pb, const std::string& name, const MatrixOperand& a, ExprPtr nrhs, bool trans,
                const std::string& rhs, const LoweringOptions& opt) {
    const ExprPtr n = a.pull.shape[0];
    Factored f{pb.temp_buffer(pb.fresh(name + "_lu"), a.pull.elem, binary(BinaryOp::Mul, n, n)),
               pb.temp_buffer(pb.fresh(name + "_pivots"), ScalarType::I32, n),
               pb.temp_buffer(pb.fresh(name + "_info"), ScalarType::I32, i64(1))};
    write_operand(pb, name + "_matrix", a, f.lu, opt);
    pb.call(lu_call(n, std::move(nrhs), trans, f.lu, f.pivots, rhs, f.info),
            "LU with partial pivoting of a's copy (its transpose, column-major)" +
                std::string(rhs.empty() ? "" : ", then the solve"));
    return f;
}

// A zero pivot is the user's error (`message` with {index}: the pivot, {extent}: n).
void check_pivots(PlanBuilder& pb, const std::string& name, const Factored& f, ExprPtr n, const std::string& message,
                  const Loc& loc) {
    KernelBuilder kb(name + "_singular", 32);
    kb.buffer_param(f.info, ScalarType::I32, Access::Read);
    const int code = kb.add_check(message, loc);
    const ExprPtr info = kb.bind("info", load(f.info, i64(0), ScalarType::I32));
    emit_if(kb, binary(BinaryOp::And, binary(BinaryOp::Eq, thread_idx(), i32(0)), binary(BinaryOp::Ne, info, i32(0))),
            [&] { kb.emit(error(code, cast(ScalarType::I64, info), use_params(kb, n))); });
    add_launch(pb, kb, i64(1), "a zero pivot: the matrix is singular");
}

}  // namespace

void lower_solve(PlanBuilder& pb, const std::string& name, const MatrixOperand& a, const MatrixOperand* b,
                 const std::string& singular, const Loc& loc, const std::string& out, const LoweringOptions& opt) {
    const ExprPtr n = a.pull.shape[0];
    const ScalarType t = a.pull.elem;
    if (!b) {  // inv: t X = I, X column-major is inv(a) row-major
        const PullArray identity{{n, n}, t, [t](KernelBuilder&, const std::vector<ExprPtr>& i) {
                                     return select(binary(BinaryOp::Eq, i[0], i[1]), const_float(1.0, t), const_float(0.0, t));
                                 }};
        lower_map(pb, name + "_identity", tuple_of(identity), {pb.output_buffer(out, t, binary(BinaryOp::Mul, n, n))}, opt);
        check_pivots(pb, name, factor(pb, name, a, n, false, out, opt), n, singular, loc);
        return;
    }
    if (b->pull.rank() == 1) {  // t' x = b in place in the result
        write_operand(pb, name + "_rhs", *b, pb.output_buffer(out, t, n), opt);
        check_pivots(pb, name, factor(pb, name, a, i64(1), true, out, opt), n, singular, loc);
        return;
    }
    // b (n x k row-major) transposed in, t' x = b, x (column-major) transposed out.
    SHOAL_INTERNAL_ASSERT(!b->product, "lower_solve: a matrix right-hand side is transposed in from its elements");
    const ExprPtr k = b->pull.shape[1];
    const std::string x = pb.temp_buffer(pb.fresh(name + "_rhs"), t, binary(BinaryOp::Mul, n, k));
    lower_transpose(pb, name + "_rhs", b->pull, x, opt);
    check_pivots(pb, name, factor(pb, name, a, k, true, x, opt), n, singular, loc);
    const PullArray solution{{k, n}, t, [x, t, n](KernelBuilder& kb, const std::vector<ExprPtr>& i) {
                                 kb.buffer_param(x, t, Access::Read);
                                 return load(x, binary(BinaryOp::Add, binary(BinaryOp::Mul, i[0], use_params(kb, n)), i[1]), t);
                             }};
    lower_transpose(pb, name, solution, out, opt);
}

void lower_det(PlanBuilder& pb, const std::string& name, const MatrixOperand& a, const std::string& out,
               const LoweringOptions& opt) {
    const ExprPtr n = a.pull.shape[0];
    const ScalarType t = a.pull.elem;
    const std::string none = pb.temp_buffer(pb.fresh(name + "_no_rhs"), t, i64(0));
    const Factored f = factor(pb, name, a, i64(0), false, none, opt);
    // det = the product of U's diagonal, negated at every row exchange
    // (pivots are 1-based); a zero pivot makes it zero, as it should.
    PullArray diagonal{{n}, t, [f, t, n](KernelBuilder& kb, const std::vector<ExprPtr>& i) {
                           kb.buffer_param(f.lu, t, Access::Read);
                           kb.buffer_param(f.pivots, ScalarType::I32, Access::Read);
                           const ExprPtr u = kb.bind("u", load(f.lu, binary(BinaryOp::Mul, i[0], binary(BinaryOp::Add, use_params(kb, n), i64(1))), t));
                           const ExprPtr swapped = binary(BinaryOp::Ne, cast(ScalarType::I64, load(f.pivots, i[0], ScalarType::I32)),
                                                          binary(BinaryOp::Add, i[0], i64(1)));
                           return select(swapped, unary(UnaryOp::Neg, u), u);
                       }};
    lower_reduce(pb, name, diagonal, known_combine(AssocOp::Mul, t), out, opt);
}

// lstsq: the row-major a (m x n) is a' column-major (n x m), so the "svd"
// call on its copy gives a' = u diag(s) v', a = v diag(s) u' and
// pinv(a) = u diag(1/s) v': x = u ((v' b) / s), two products (the BLAS /
// cuBLAS) around a kernel that divides by the singular values above NumPy's
// cutoff (eps * max(m, n) * the largest) and zeroes the others, which gives
// the minimum-norm solution of a rank-deficient a, as LAPACK's gelsd.
void lower_lstsq(PlanBuilder& pb, const std::string& name, const PullArray& a, const PullArray& b,
                 const std::string& no_convergence, const Loc& loc, const std::string& out, const LoweringOptions& opt) {
    const ExprPtr m = a.shape[0], n = a.shape[1];
    const ScalarType t = a.elem;
    const ExprPtr k = b.rank() == 2 ? b.shape[1] : i64(1);
    const ExprPtr p = binary(BinaryOp::Min, m, n);
    const std::string copy = pb.temp_buffer(pb.fresh(name + "_a"), t, binary(BinaryOp::Mul, m, n));
    lower_map(pb, name + "_matrix", tuple_of(a), {copy}, opt);
    const std::string s = pb.temp_buffer(pb.fresh(name + "_s"), t, p),
                      u = pb.temp_buffer(pb.fresh(name + "_u"), t, binary(BinaryOp::Mul, n, p)),
                      v = pb.temp_buffer(pb.fresh(name + "_v"), t, binary(BinaryOp::Mul, m, p)),
                      info = pb.temp_buffer(pb.fresh(name + "_info"), ScalarType::I32, i64(1));
    pb.call(svd_call(n, m, copy, s, u, v, info), "lstsq: the SVD of a's copy (its transpose, column-major)");
    {
        KernelBuilder kb(name + "_converged", 32);
        kb.buffer_param(info, ScalarType::I32, Access::Read);
        const int code = kb.add_check(no_convergence, loc);
        const ExprPtr status = kb.bind("info", load(info, i64(0), ScalarType::I32));
        emit_if(kb, binary(BinaryOp::And, binary(BinaryOp::Eq, thread_idx(), i32(0)), binary(BinaryOp::Ne, status, i32(0))),
                [&] { kb.emit(error(code, cast(ScalarType::I64, status), use_params(kb, p))); });
        add_launch(pb, kb, i64(1), "the SVD did not converge");
    }
    const std::string rhs = pb.temp_buffer(pb.fresh(name + "_b"), t, binary(BinaryOp::Mul, m, k));
    lower_map(pb, name + "_rhs", tuple_of(b), {rhs}, opt);
    // v (m x p column-major) is v' row-major (p x m).
    const std::string y = pb.temp_buffer(pb.fresh(name + "_vb"), t, binary(BinaryOp::Mul, p, k));
    pb.call(gemm_call(p, k, m, false, false, v, rhs, y), "lstsq: v' b (the BLAS)");
    const double eps = t == ScalarType::F32 ? 1.1920928955078125e-07 : 2.220446049250313e-16;
    const PullArray scaled{{p, k}, t, [=](KernelBuilder& kb, const std::vector<ExprPtr>& i) {
                               kb.buffer_param(y, t, Access::Read);
                               kb.buffer_param(s, t, Access::Read);
                               const ExprPtr si = kb.bind("s", load(s, i[0], t));
                               const ExprPtr cutoff = binary(BinaryOp::Mul, load(s, i64(0), t),
                                                             binary(BinaryOp::Mul, const_float(eps, t),
                                                                    cast(t, use_params(kb, binary(BinaryOp::Max, m, n)))));
                               const ExprPtr yi = load(y, binary(BinaryOp::Add, binary(BinaryOp::Mul, i[0], use_params(kb, k)), i[1]), t);
                               return select(binary(BinaryOp::Gt, si, cutoff), binary(BinaryOp::Div, yi, si), const_float(0.0, t));
                           }};
    const std::string z = pb.temp_buffer(pb.fresh(name + "_scaled"), t, binary(BinaryOp::Mul, p, k));
    lower_map(pb, name + "_scale", tuple_of(scaled), {z}, opt);
    // u (n x p column-major) is u' row-major (p x n): x = (u')' z.
    pb.call(gemm_call(n, k, p, true, false, u, z, pb.output_buffer(out, t, binary(BinaryOp::Mul, n, k))),
            "lstsq: u (s^-1 v' b) (the BLAS)");
}

}  // namespace shoal::ir
