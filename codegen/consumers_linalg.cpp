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
    const PullArray pa = pull_of(a, fc);
    std::optional<PullArray> pb_operand;
    if (solving) pb_operand = pull_of(args[1], fc);
    PlanOperands in{name + " rank " + std::to_string(sb.size()), {ir::tuple_of(pa)}};
    if (pb_operand) in.operands.push_back(ir::tuple_of(*pb_operand));
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
