// solve, inv, det: one plan each around the "lu" library call (LAPACK /
// cuSOLVER, lower_linalg.cpp), with what their operands read fused into the
// kernels that copy them column-major.
#include "codegen/engine.h"
#include "lang/linalg.h"

namespace shoal::compiled {

std::optional<Value> FusionEngine::linalg(const std::string& name, std::span<const Value> args, EvalContext& ctx) {
    if (name == "lstsq") return least_squares(args, ctx);
    const Value& a = args[0];
    const bool solving = name == "solve";
    if (!is_operand(a) || (solving && !is_operand(args[1]))) return std::nullopt;
    const Shape sa = shape_of(a);
    const Prim elem = elem_of(a);
    // Shapes the reference evaluator refuses are its to report.
    if (sa.size() != 2 || sa[0] != sa[1] || !is_floating(elem)) return std::nullopt;
    Shape sb;
    if (solving) {
        sb = shape_of(args[1]);
        if (sb.empty() || sb.size() > 2 || sb[0] != sa[0] || elem_of(args[1]) != elem) return std::nullopt;
    }
    if (emitting_)
        user_error(ErrorKind::Runtime, origin_,
                   "`:emit` cannot export `" + name + "` yet: it calls LAPACK / cuSOLVER, which an exported project does not link");
    // The executor is asked here, not for every plan: its answer may load the library.
    if (shaped_for_executor() && !executor_->has_library("lu")) return std::nullopt;
    FuseContext fc(ctx);
    PlanOperands in{name + " rank " + std::to_string(sb.size()), {}};
    // A product operand's two operands are the plan's (its gemm call writes it).
    auto operand = [&](const Value& v, bool may_be_product) {
        ir::MatrixOperand x = may_be_product ? matrix_operand(v, fc) : ir::MatrixOperand{pull_of(v, fc), std::nullopt};
        if (!x.product) {
            in.operands.push_back(ir::tuple_of(x.pull));
            return x;
        }
        const auto& [left, right] = *x.product;
        in.descriptor += " (" + product_words(left, right, true) + ")";
        in.operands.push_back(ir::tuple_of(left.pull));
        in.operands.push_back(ir::tuple_of(right.pull));
        return x;
    };
    const ir::MatrixOperand pa = operand(a, true);
    std::optional<ir::MatrixOperand> pb_operand;
    // A matrix right-hand side is transposed in from its elements.
    if (solving) pb_operand = operand(args[1], sb.size() == 1);
    const Loc loc = origin_;
    const ir::PlanOutcome r = run(name, fc, in, [&](ir::PlanBuilder& pb) {
        if (name == "det") {
            ir::lower_det(pb, name, pa, "out", lowering_options());
            return;
        }
        ir::lower_solve(pb, name, pa, pb_operand ? &*pb_operand : nullptr, ops::singular_message(name, "{index}", "{extent}"),
                        loc, "out", lowering_options());
    });
    const ir::ArrayData& out = r.outputs.at("out");
    if (name == "det") {
        const Scalar d = first_element(out, elem);
        // +0.0 for a singular matrix whatever the sign of the zero pivot's product, as NumPy.
        return Value(d.as_double() == 0 ? convert_scalar(Scalar::of_double(0.0), elem) : d);
    }
    return result(out, elem, solving ? sb : sa);
}

// A product the BLAS would compute (a pending product node) as its two
// operands, for the plan's own gemm call; anything else as its pull array.
ir::MatrixOperand FusionEngine::matrix_operand(const Value& v, FuseContext& fc) {
    const Node* product = pending_product(v);
    if (!product) return {pull_of(v, fc), std::nullopt};
    const auto& [a, b] = *product->group().product_of;
    ir::ProductOperand left = product_operand(a, true, fc), right = product_operand(b, false, fc);
    if (left.buffer.empty() || right.buffer.empty()) return {pull_of(v, fc), std::nullopt};  // not as it was made
    if (fc.notes_decisions()) fc.note_fused(product->description());
    const std::optional<ProductShape> ps = product_shape(a, b);
    PullArray shape{{}, left.pull.elem, nullptr};
    if (ps->a_is_matrix) shape.shape.push_back(left.pull.shape[0]);
    if (ps->b_is_matrix) shape.shape.push_back(right.pull.shape[1]);
    return {std::move(shape), std::pair(std::move(left), std::move(right))};
}

// lstsq a b: one plan around the "svd" call and two products.
std::optional<Value> FusionEngine::least_squares(std::span<const Value> args, EvalContext& ctx) {
    const Value &a = args[0], &b = args[1];
    if (!is_operand(a) || !is_operand(b)) return std::nullopt;
    const Shape sa = shape_of(a), sb = shape_of(b);
    const Prim elem = elem_of(a);
    if (sa.size() != 2 || !is_floating(elem) || sb.empty() || sb.size() > 2 || sb[0] != sa[0] || elem_of(b) != elem)
        return std::nullopt;  // the reference evaluator's to report
    if (emitting_)
        user_error(ErrorKind::Runtime, origin_,
                   "`:emit` cannot export `lstsq` yet: it calls LAPACK / cuSOLVER, which an exported project does not link");
    if (shaped_for_executor() && (!executor_->has_library("svd") || !executor_->has_library("gemm"))) return std::nullopt;
    FuseContext fc(ctx);
    const PullArray pa = pull_of(a, fc), pb_operand = pull_of(b, fc);
    PlanOperands in{"lstsq rank " + std::to_string(sb.size()), {ir::tuple_of(pa), ir::tuple_of(pb_operand)}};
    const Loc loc = origin_;
    const ir::PlanOutcome r = run("lstsq", fc, in, [&](ir::PlanBuilder& pb) {
        ir::lower_lstsq(pb, "lstsq", pa, pb_operand,
                        "lstsq: the singular value decomposition did not converge (info {index}; NumPy raises "
                        "LinAlgError: SVD did not converge)",
                        loc, "out", lowering_options());
    });
    Shape sx{sa[1]};
    if (sb.size() == 2) sx.push_back(sb[1]);
    return result(r.outputs.at("out"), elem, sx);
}

}  // namespace shoal::compiled
