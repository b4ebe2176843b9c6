// Consumers: the builtins that force their operands and run a plan of their
// own with every producer fused in: reductions, count, argmax/argmin, scans,
// ++/interleave/transpose, matmul, filter, sort, permute, scatter.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "codegen/engine.h"
#include "codegen/kernel_code.h"
#include "codegen/lower_common.h"

namespace shoal::compiled {

namespace {

std::optional<ir::AssocOp> reduction_op(const std::string& name) {
    if (name == "sum" || name == "+") return ir::AssocOp::Add;
    if (name == "product" || name == "*") return ir::AssocOp::Mul;
    if (name == "maximum" || name == "max") return ir::AssocOp::Max;
    if (name == "minimum" || name == "min") return ir::AssocOp::Min;
    if (name == "all" || name == "&&") return ir::AssocOp::And;
    if (name == "any" || name == "||") return ir::AssocOp::Or;
    return std::nullopt;
}

// The operator of `reduce`/`scan`: a bare operator section such as (+) or max.
std::optional<ir::AssocOp> operator_arg(const Value& f) {
    if (!f.is_function()) return std::nullopt;
    const evalimpl::CallableView v = evalimpl::as_callable(f).view();
    if (!v.builtin || !v.args.empty()) return std::nullopt;
    return reduction_op(v.builtin->name);
}

}  // namespace

// A function that does not compile declines (counted by reason): the
// builtin is then the reference evaluator's.
std::optional<Value> FusionEngine::consumer(const std::string& name, std::span<const Value> args,
                                                  EvalContext& ctx) {
    try {
        return lower_consumer(name, args, ctx);
    } catch (const Decline& d) {
        ++stats.declines[d.why];
        return std::nullopt;
    }
}

namespace {

enum class ConsumerKind : uint8_t { Sort, Scan, Push, Filter, Compress, Matmul, Permute, Scatter, Tally, Linalg, Count, ArgExtreme, Reduce, Known };

// Looked up once per builtin call: a loop step calls several, and a chain
// of string comparisons per call was ~5k instructions of each step.
std::optional<ConsumerKind> consumer_kind(const std::string& name) {
    static const std::unordered_map<std::string_view, ConsumerKind> kinds = {
        {"sort", ConsumerKind::Sort},       {"sortByKey", ConsumerKind::Sort},   {"scan", ConsumerKind::Scan},
        {"scanExclusive", ConsumerKind::Scan}, {"segscan", ConsumerKind::Scan},  {"++", ConsumerKind::Push},
        {"interleave", ConsumerKind::Push}, {"transpose", ConsumerKind::Push},   {"filter", ConsumerKind::Filter},
        {"compress", ConsumerKind::Compress},
        {"matmul", ConsumerKind::Matmul},   {"@", ConsumerKind::Matmul},         {"permute", ConsumerKind::Permute},
        {"scatter", ConsumerKind::Scatter}, {"tally", ConsumerKind::Tally},    {"solve", ConsumerKind::Linalg},
        {"inv", ConsumerKind::Linalg},      {"det", ConsumerKind::Linalg},       {"lstsq", ConsumerKind::Linalg}, {"count", ConsumerKind::Count},      {"argmax", ConsumerKind::ArgExtreme},
        {"argmin", ConsumerKind::ArgExtreme}, {"reduce", ConsumerKind::Reduce},  {"sum", ConsumerKind::Known},
        {"product", ConsumerKind::Known},   {"maximum", ConsumerKind::Known},    {"minimum", ConsumerKind::Known},
        {"all", ConsumerKind::Known},       {"any", ConsumerKind::Known}};
    const auto it = kinds.find(name);
    if (it == kinds.end()) return std::nullopt;
    return it->second;
}

}  // namespace

std::optional<Value> FusionEngine::lower_consumer(const std::string& name, std::span<const Value> args,
                                                        EvalContext& ctx) {
    const std::optional<ConsumerKind> kind = consumer_kind(name);
    if (!kind) return std::nullopt;
    switch (*kind) {
        case ConsumerKind::Sort: return sort(name == "sortByKey", args, ctx);
        case ConsumerKind::Scan: return scan(name, args, ctx);
        case ConsumerKind::Push: return push(name, args, ctx);
        case ConsumerKind::Filter: return filter(args, ctx);
        case ConsumerKind::Compress: return compress(args, ctx);
        case ConsumerKind::Matmul: return matmul(args, ctx);
        case ConsumerKind::Permute: return permute(args, ctx);
        case ConsumerKind::Scatter: return scatter(args, ctx);
        case ConsumerKind::Tally: return tally(args[0], args[1], ctx);
        case ConsumerKind::Linalg: return linalg(name, args, ctx);
        case ConsumerKind::Count: return count(args[0], args[1], ctx);
        case ConsumerKind::ArgExtreme: return arg_extreme(name == "argmax", args[0], ctx);
        case ConsumerKind::Reduce:
            if (operator_arg(args[0]) && args[1].is_scalar() && is_operand(args[2])) return known_reduce(name, args, ctx);
            return general_reduce(args[0], args[1], args[2], ctx);
        case ConsumerKind::Known: return known_reduce(name, args, ctx);
    }
    return std::nullopt;
}

// sum/product/maximum/minimum/all/any and `reduce` with an operator section,
// along the innermost axis of a rank-1 or rank-2 array: one reduce plan with
// every producer fused in.
std::optional<Value> FusionEngine::known_reduce(const std::string& name, std::span<const Value> args,
                                                      EvalContext& ctx) {
    const bool is_reduce = name == "reduce";
    const std::optional<ir::AssocOp> op = is_reduce ? operator_arg(args[0]) : reduction_op(name);
    const Value& xs = is_reduce ? args[2] : args[0];
    if (!op || !is_operand(xs)) return std::nullopt;
    const Shape s = shape_of(xs);
    if (s.size() != 1 && s.size() != 2) return std::nullopt;
    const Prim elem = elem_of(xs);
    FuseContext fc(ctx);
    // The columns of m (`sum (transpose m)`, a view) on a CPU: read m's rows
    // contiguously rather than its columns with a stride (sum 4096 x 256: 2.2
    // -> 0.3 ms). Sums and products only: GCC vectorises their folds across
    // the lanes, not fmaxf's (maximum got slower that way).
    // So too an expression reading a transpose at its own index (`var
    // (transpose m)` folds `(transpose m - col mu) ** 2`): its transpose's
    // columns, whose reads of m run along m's rows.
    const bool vectorises = *op == ir::AssocOp::Add || *op == ir::AssocOp::Mul;
    const bool columns = s.size() == 2 && vectorises && xs.is_delayed() && lowering_options().cpu_cores > 0 &&
                         static_cast<const Node&>(*xs.delayed()).group().reads_transposed;
    const PullArray x = columns ? ir::transposed_array(pull_of(xs, fc)) : pull_of(xs, fc);
    const std::string described = name + " " + std::to_string(static_cast<int>(*op)) + (columns ? " columns" : "");
    ir::PlanOutcome r = run(name, fc, {described, {ir::tuple_of(x)}}, [&](ir::PlanBuilder& pb) {
        const ir::LoweringFacts facts = fc.facts(pb);
        if (columns) ir::lower_column_reduce(pb, name, x, *op, "out", lowering_options(facts));
        else ir::lower_reduce(pb, name, x, ir::known_combine(*op, ir::scalar_of(elem)), "out", lowering_options(facts));
    });
    const ir::ArrayData& out = r.outputs.at("out");
    Value v = s.size() == 1 ? Value(first_element(out, elem)) : result(out, elem, {s[0]});
    if (s.size() == 2) note_row_values(v, xs, name);
    // Checking mode: an int sum that wrapped is an error (the reference
    // evaluator's check, on the elements: checking mode is slow anyway).
    if (ctx.check && name == "sum" && elem == Prim::Int)
        ops::check_int_sums(*force(xs).array(), force(v), name, origin_);
    if (ctx.check && name == "product" && elem == Prim::Int)
        ops::check_int_products(*force(xs).array(), force(v), name, origin_);
    if (!is_reduce) return v;
    // reduce f z xs folds from z: combine z with each row's total (the operators commute).
    static const std::map<ir::AssocOp, const char*> names = {
        {ir::AssocOp::Add, "+"}, {ir::AssocOp::Mul, "*"}, {ir::AssocOp::Min, "min"},
        {ir::AssocOp::Max, "max"}, {ir::AssocOp::And, "&&"}, {ir::AssocOp::Or, "||"}};
    const evalimpl::BuiltinDef* def = evalimpl::find_builtin(names.at(*op));
    EvalContext reference = ctx;
    reference.backend = nullptr;
    const Value pair[2] = {args[1], v};
    return evalimpl::apply_builtin(*def, nullptr, pair, reference, Loc{});
}

// reduce f z xs with any associative function (and arrays of tuples): the
// optional monoid over f, the first element of each row folded with z.
std::optional<Value> FusionEngine::general_reduce(const Value& f, const Value& z, const Value& xs,
                                                        EvalContext& ctx) {
    std::vector<Scalar> zs;
    if (!f.is_function() || !is_like(xs) || !scalar_leaves(z, zs)) return std::nullopt;
    const Shape s = like_shape(xs);
    const std::vector<Prim> prims = prims_of(xs);
    if ((s.size() != 1 && s.size() != 2) || zs.size() != prims.size()) return std::nullopt;
    const Type et = elem_type(xs);
    auto zkeep = std::make_shared<const std::vector<Scalar>>(zs);
    FuseContext fc(ctx);
    std::vector<std::string> outs = leaf_buffers("out", prims.size(), false);
    outs.insert(outs.begin(), "valid");
    const UserOp op{&fc, f, et};
    const ir::PullTuple src = folded_input(
        fc, op, zkeep, pulls_of(xs, fc),
        [](ir::KernelBuilder&, const std::vector<ir::ExprPtr>& i) { return column_zero(i)[0]; }, true);
    const ir::Combine combine = optional_combine(op, scalar_types(prims));
    ir::PlanOutcome r = run("reduce", fc, {"reduce", {src}, {combine}}, [&](ir::PlanBuilder& pb) {
        const ir::LoweringFacts facts = fc.facts(pb);
        ir::lower_reduce(pb, "reduce", src, combine, outs, lowering_options(facts));
    });
    // The host patches empty rows with z (rows are few: one per reduction).
    const int64_t rows = s.size() == 1 ? 1 : s[0];
    const ArrayPtr valid = ir::host_array(r.outputs.at("valid"), Prim::Bool, {rows});
    std::vector<Value> results;
    for (size_t k = 0; k < prims.size(); ++k) {
        const ir::ArrayData& out = r.outputs.at(outs[k + 1]);
        if (s.size() == 1) {
            results.emplace_back(valid->get(0).b ? first_element(out, prims[k]) : zs[k]);
            continue;
        }
        auto a = std::make_shared<Array>(*ir::host_array(out, prims[k], {rows}));  // written below: a copy
        for (int64_t row = 0; row < rows; ++row)
            if (!valid->get(row).b) a->set(row, zs[k]);  // an empty row folds to z
        results.emplace_back(a);
    }
    return rebuild(z, results);
}

// count p xs: the predicate compiled into a sum of 0/1 ints (wrapping as the
// reference's int counter does).
std::optional<Value> FusionEngine::count(const Value& p, const Value& xs, EvalContext& ctx) {
    if (!p.is_function() || !is_like(xs)) return std::nullopt;
    const Shape s = like_shape(xs);
    if (s.size() != 1 && s.size() != 2) return std::nullopt;
    const Type et = elem_type(xs);
    FuseContext fc(ctx);
    const std::vector<PullArray> x = pulls_of(xs, fc);
    PullArray ones{x[0].shape, ir::ScalarType::I32, nullptr};
    ones.at = [&fc, x, p, et](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
        const ir::ExprPtr keep = compiled::compile_call(fc, kb, p, element_at(kb, x, i), {et}).at(0);
        return ir::select(keep, ir::const_int(1, ir::ScalarType::I32), ir::const_int(0, ir::ScalarType::I32));
    };
    ir::PlanOutcome r = run("count", fc, {"count", {ir::tuple_of(ones)}}, [&](ir::PlanBuilder& pb) {
        const ir::LoweringFacts facts = fc.facts(pb);
        ir::lower_reduce(pb, "count", ones, ir::known_combine(ir::AssocOp::Add, ir::ScalarType::I32), "out",
                         lowering_options(facts));
    });
    const ir::ArrayData& out = r.outputs.at("out");
    return s.size() == 1 ? Value(first_element(out, Prim::Int)) : result(out, Prim::Int, {s[0]});
}

// argmax/argmin: a reduction of (value, index) pairs. NaN is never better
// (as in the reference), and among equals the smaller index wins, which
// makes the operator commutative as well as associative.
std::optional<Value> FusionEngine::arg_extreme(bool largest, const Value& xs, EvalContext& ctx) {
    if (!is_operand(xs)) return std::nullopt;
    const Shape s = shape_of(xs);
    if ((s.size() != 1 && s.size() != 2) || s.back() == 0) return std::nullopt;  // the reference raises "empty"
    const ir::ScalarType t = ir::scalar_of(elem_of(xs));
    using ir::BinaryOp;
    ir::Combine op;
    // The index is the result's own type (int), so the kernel writes the
    // result itself: no conversion on the host (2.8 ms for 100000 rows).
    op.types = {t, ir::ScalarType::I32};
    ir::ExprPtr worst = is_float(t)               ? ir::const_float(std::nan(""), t)
                        : t == ir::ScalarType::Bool ? ir::const_bool(!largest)
                                                    : ir::neutral_of(largest ? ir::AssocOp::Max : ir::AssocOp::Min, t);
    op.neutral = {worst, ir::const_int(std::numeric_limits<int32_t>::max(), ir::ScalarType::I32)};
    op.commutative = true;
    op.fn = [largest, t](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& a, const std::vector<ir::ExprPtr>& b) {
        auto nan = [&](const ir::ExprPtr& x) { return is_float(t) ? ir::binary(BinaryOp::Ne, x, x) : ir::const_bool(false); };
        auto better = [&](const ir::ExprPtr& x, const ir::ExprPtr& cur) {
            const ir::ExprPtr order = largest ? ir::binary(BinaryOp::Lt, cur, x) : ir::binary(BinaryOp::Lt, x, cur);
            return ir::binary(BinaryOp::And, ir::unary(ir::UnaryOp::Not, nan(x)), ir::binary(BinaryOp::Or, nan(cur), order));
        };
        const ir::ExprPtr b_better = kb.bind("better", better(b[0], a[0]));
        const ir::ExprPtr a_better = kb.bind("worse", better(a[0], b[0]));
        const ir::ExprPtr tie = ir::binary(BinaryOp::And, ir::unary(ir::UnaryOp::Not, a_better),
                                           ir::binary(BinaryOp::Lt, b[1], a[1]));
        const ir::ExprPtr take_b = kb.bind("take", ir::binary(BinaryOp::Or, b_better, tie));
        return std::vector<ir::ExprPtr>{ir::select(take_b, b[0], a[0]), ir::select(take_b, b[1], a[1])};
    };
    FuseContext fc(ctx);
    const PullArray x = pull_of(xs, fc);
    ir::PullTuple src{x.shape, {t, ir::ScalarType::I32}, nullptr};
    src.at = [x](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
        return std::vector<ir::ExprPtr>{x.at(kb, i), ir::cast(ir::ScalarType::I32, i.back())};
    };
    const std::string name = largest ? "argmax" : "argmin";
    ir::PlanOutcome r = run(name, fc, {name, {src}}, [&](ir::PlanBuilder& pb) {
        const ir::LoweringFacts facts = fc.facts(pb);
        ir::lower_reduce(pb, name, src, op, {"best", "index"}, lowering_options(facts));
    });
    const ir::ArrayData& index = r.outputs.at("index");
    if (s.size() == 1) return Value(first_element(index, Prim::Int));
    Value v = result(index, Prim::Int, {s[0]});
    note_row_values(v, xs, name);
    return v;
}

// scan/scanExclusive (rank 1 or 2, per row) and segscan (rank 1): one scan
// plan with the producers fused in. An operator section on one array takes
// the direct path; any other function (or an array of tuples) the optional
// monoid over it.
std::optional<Value> FusionEngine::scan(const std::string& name, std::span<const Value> args,
                                              EvalContext& ctx) {
    const Value& f = args[0];
    const Value& xs = args.back();
    std::vector<Scalar> zs;
    if (!f.is_function() || !is_like(xs) || !scalar_leaves(args[1], zs)) return std::nullopt;
    const Shape s = like_shape(xs);
    const bool segmented = name == "segscan";
    if (s.size() != 1 && (segmented || s.size() != 2)) return std::nullopt;
    // Mismatched flags are the reference evaluator's error to raise.
    if (segmented && (!is_operand(args[2]) || elem_of(args[2]) != Prim::Bool || shape_of(args[2]) != s))
        return std::nullopt;
    const std::vector<Prim> prims = prims_of(xs);
    if (zs.size() != prims.size()) return std::nullopt;
    std::optional<ir::AssocOp> known;  // (assigned, not a conditional expression: gcc 12 then warns of a maybe-uninitialized read)
    if (prims.size() == 1) known = operator_arg(f);
    auto zkeep = std::make_shared<const std::vector<Scalar>>(zs);
    const Type et = elem_type(xs);
    FuseContext fc(ctx);
    const std::vector<std::string> outs = leaf_buffers("out", prims.size(), false);
    if (name == "scanExclusive")  // each row's last element is not read
        for (const Value& leaf : leaves(xs)) materialise_if_skipped_may_raise(leaf, ctx, name);
    const std::vector<PullArray> x = pulls_of(xs, fc);
    std::optional<PullArray> flags;
    if (segmented) flags = pull_of(args[2], fc);
    auto starts = [flags](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
        const ir::ExprPtr first = column_zero(i)[0];
        return flags ? ir::binary(ir::BinaryOp::Or, flags->at(kb, i), first) : first;
    };
    ir::PullTuple src;
    ir::Combine combine;
    std::vector<std::string> all = outs;
    if (known) {  // the direct path: z folded into the input with the operator
        const ir::AssocOp a = *known;
        const SeedStep step = [a](ir::KernelBuilder&, const std::vector<ir::ExprPtr>& z,
                                  const std::vector<ir::ExprPtr>& v) {
            return std::vector<ir::ExprPtr>{ir::apply_op(a, z[0], v[0])};
        };
        src = name == "scanExclusive" ? shifted_input(fc, zkeep, x, false) : folded_input(fc, step, zkeep, x, starts, false);
        combine = ir::known_combine(a, ir::scalar_of(prims[0]));
    } else {  // the optional monoid over the user's function
        const UserOp op{&fc, f, et};
        src = name == "scanExclusive" ? shifted_input(fc, zkeep, x, true) : folded_input(fc, op, zkeep, x, starts, true);
        combine = optional_combine(op, scalar_types(prims));
        all.insert(all.begin(), "valid");
    }
    PlanOperands in{std::string(known ? "known" : "general") + (flags ? " segmented" : ""), {src}, {combine}};
    if (flags) in.operands.push_back(ir::tuple_of(*flags));
    const ir::PlanOutcome r = run(name, fc, in, [&](ir::PlanBuilder& pb) {
        ir::lower_scan(pb, name, src, flags ? &*flags : nullptr, combine, ir::ScanKind::Inclusive, all,
                       lowering_options());
    });
    Value scanned = rebuild(args[1], results(r, outs, prims, s));
    // Checking mode: a running int sum or product that wrapped (the reference's check).
    if (ctx.check && !segmented && known && (*known == ir::AssocOp::Add || *known == ir::AssocOp::Mul) &&
        prims[0] == Prim::Int && zs.size() == 1)
        ops::check_int_scan(*force(xs).array(), *force(scanned).array(), zs[0].as_long(), *known == ir::AssocOp::Mul,
                            name != "scanExclusive", name, origin_);
    return scanned;
}

// ++, interleave (push arrays: each thread writes into both parts) and
// transpose (shared-memory tiles) are not index maps of one source, so they
// run at once as their own plan (one kernel per leaf of an array of tuples),
// with their producers fused in. Mismatched shapes decline: the reference
// evaluator raises the error.
std::optional<Value> FusionEngine::push(const std::string& name, std::span<const Value> args,
                                              EvalContext& ctx) {
    for (const Value& v : args)
        if (!is_like(v)) return std::nullopt;
    Shape s = like_shape(args[0]);
    if (name == "transpose") {
        if (s.size() != 2) return std::nullopt;
        // An array in memory: a view (NodeGroup::transpose_of), not a copy.
        // On a CPU a delayed operand too: `sum (transpose (d * d))` then
        // folds d * d's columns reading it row by row (lower_column_reduce),
        // where the tiled transpose wrote all of it first (standardising the
        // columns of 4096 x 256: 2.9 -> see bench/README.md); forced, the
        // view is that same tiled transpose with d * d fused in. A GPU's
        // consumers would read the expression with a stride: it keeps the
        // tiles.
        const Value& a = args[0];
        const bool in_memory = a.is_array() || (is_operand(a) && static_cast<const Node&>(*a.delayed()).computed());
        if (is_operand(a) && (in_memory || lowering_options().cpu_cores > 0)) {
            Node::MakePull swapped = [a](FuseContext& fc) { return ir::transposed_array(pull_of(a, fc)); };
            return node(elem_of(a), {s[1], s[0]}, std::move(swapped), make_replay(name, nullptr, args, ctx, origin_), ctx,
                        {a}, a);
        }
        std::swap(s[0], s[1]);
    } else {
        const Shape b = like_shape(args[1]);
        const bool fits = name == "++" ? Shape(s.begin() + 1, s.end()) == Shape(b.begin() + 1, b.end()) : s == b;
        if (!fits || b.size() != s.size() || leaves(args[1]).size() != leaves(args[0]).size()) return std::nullopt;
        s[0] += b[0];
    }
    const std::vector<Value> as = leaves(args[0]);
    FuseContext fc(ctx);
    const std::vector<std::string> outs = leaf_buffers("out", as.size(), true);
    const std::vector<PullArray> a = pulls_of(args[0], fc);
    std::vector<PullArray> b;
    if (name != "transpose") b = pulls_of(args[1], fc);
    PlanOperands in{name + " " + std::to_string(a.size()), {}};
    for (const PullArray& x : a) in.operands.push_back(ir::tuple_of(x));
    for (const PullArray& x : b) in.operands.push_back(ir::tuple_of(x));
    const ir::PlanOutcome r = run(name, fc, in, [&](ir::PlanBuilder& pb) {
        const ir::LoweringFacts facts = fc.facts(pb);
        for (size_t k = 0; k < a.size(); ++k) {
            const std::string kernel = pb.fresh(name == "++" ? "concat" : name);
            if (name == "transpose")
                ir::lower_transpose(pb, kernel, a[k], outs[k], lowering_options(facts));
            else if (name == "++")
                ir::lower_concat(pb, kernel, a[k], b[k], outs[k], lowering_options(facts));
            else
                ir::lower_interleave(pb, kernel, a[k], b[k], outs[k], lowering_options(facts));
        }
    });
    return rebuild(args[0], results(r, outs, prims_of(args[0]), s));
}

// matmul a b / a @ b (NumPy's ranks: a vector on the left is a row, on the
// right a column, and that axis is dropped from the result): one plan,
// lower_product's library call or tiled kernel, the operands' producers
// fused where they are not in memory. Mismatched extents decline: the
// reference evaluator raises the error.
std::optional<Value> FusionEngine::matmul(std::span<const Value> args, EvalContext& ctx) {
    const std::optional<ProductShape> shape = product_shape(args[0], args[1]);
    if (!shape) return std::nullopt;
    // `:emit` keeps products as generated kernels (docs/emit.md): an emitted
    // project links no BLAS. The executor is asked here, not for every plan:
    // its answer may load the library.
    const bool library = optimisations.blas && !emitting_ && (!shaped_for_executor() || executor_->has_library("gemm"));
    if (std::optional<Value> v = tiny_product(args, *shape, library, ctx)) return v;
    const Prim elem = elem_of(args[0]);
    if (library && !shape->result.empty() && is_floating(elem) && in_memory_for_blas(args[0]) &&
        in_memory_for_blas(args[1]))
        return product_node(args, *shape, ctx);
    FuseContext fc(ctx);
    const ir::PlanOutcome r = run_product(args[0], args[1], library, fc, "out");
    if (shape->result.empty()) return Value(first_element(r.outputs.at("out"), elem));
    return result(r.outputs.at("out"), elem, shape->result);
}

ir::ProductOperand FusionEngine::product_operand(const Value& v, bool row, FuseContext& fc) {
    ir::ProductOperand x{pull_of(v, fc), memory_buffer(v, fc)};
    if (v.is_delayed())  // `transpose a` of `a` in memory: `a` itself, read transposed by the BLAS
        if (const auto& of = static_cast<const Node&>(*v.delayed()).group().transpose_of; of && x.buffer.empty())
            if (std::string in_memory = memory_buffer(*of, fc); !in_memory.empty()) {
                x.buffer = std::move(in_memory);
                x.transposed = true;
            }
    if (x.pull.rank() == 1) {  // the same elements as a 1 x k row or a k x 1 column
        PullArray vec = x.pull;
        x.pull.shape = row ? std::vector<ir::ExprPtr>{ir::i64(1), vec.shape[0]} : std::vector<ir::ExprPtr>{vec.shape[0], ir::i64(1)};
        x.pull.at = [vec, row](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
            return vec.at(kb, {i[row ? 1 : 0]});
        };
    }
    return x;
}

std::string product_words(const ir::ProductOperand& left, const ir::ProductOperand& right, bool library) {
    return std::string("matmul") + (library ? " blas" : "") + " a " + left.buffer + (left.transposed ? " transposed" : "") +
           " b " + right.buffer + (right.transposed ? " transposed" : "");
}

ir::PlanOutcome FusionEngine::run_product(const Value& a, const Value& b, bool library, FuseContext& fc,
                                          const std::string& out) {
    const ir::ProductOperand left = product_operand(a, true, fc), right = product_operand(b, false, fc);
    return run("matmul", fc, {product_words(left, right, library), {ir::tuple_of(left.pull), ir::tuple_of(right.pull)}},
               [&](ir::PlanBuilder& pb) {
                   ir::LoweringOptions opt = lowering_options();
                   opt.library_gemm = library;
                   ir::lower_product(pb, "matmul", left, right, out, opt);
               });
}

// A product the BLAS computes from operands in memory is a node computed
// when first read (pull_of): solve, inv and det take it as it is into their
// own plan, the gemm call writing straight into the buffer LAPACK works on
// (normal equations: one plan where there were three); every other
// consumer reads the BLAS's result from memory, as before.
Value FusionEngine::product_node(std::span<const Value> args, const ProductShape& shape, const EvalContext& ctx) {
    check_fits(elem_of(args[0]), shape.result);
    const Restore<std::string> named(origin_name_, "matmul");
    auto g = std::make_shared<NodeGroup>();
    g->elems = {elem_of(args[0])};
    g->shape = shape.result;
    g->replay = make_replay("matmul", nullptr, args, ctx, origin_);
    g->ctx = ctx;
    g->origin = origin_;
    g->what = origin_name_;
    g->product_of = std::pair(args[0], args[1]);
    Node::MakePull never = [](FuseContext&) -> PullArray {
        internal_error(__FILE__, __LINE__, "a product node is read through pull_of, which computes it first");
    };
    Value v(std::make_shared<const Node>(shared_from_this(), std::move(g), 0, std::move(never)));
    if (!optimisations.fusion) static_cast<const Node&>(*v.delayed()).compute_because(kFusionOff);
    return v;
}

// a @ b with a few result elements and a long inner extent (X'X and X'y
// of a tall X: 9 and 3 sums over its rows) where there is no BLAS (`:set
// blas off`, `:emit`, a build without one): a reduction, each result
// element a row of k products, the operands' producers fused in. The tiled
// kernel spent 650 us on a 1000 x 3 X'X (a 32 x 32 tile with 9 live
// elements); this takes 30 us. With a BLAS the library keeps it: its 4.5 us
// beat both this and one pass over the inner index computing every sum (a
// tuple reduction: 3 us of kernels, but 9 outputs and a long probe cost
// more than the BLAS saves at this size).
std::optional<Value> FusionEngine::tiny_product(std::span<const Value> args, const ProductShape& shape, bool library,
                                                EvalContext& ctx) {
    const int64_t cells = shape.n * shape.m;
    if (library || cells < 1 || cells > kTinyProduct || shape.k <= kThinInner) return std::nullopt;
    const Prim elem = elem_of(args[0]);
    if (elem_of(args[1]) != elem) return std::nullopt;
    FuseContext fc(ctx);
    const PullArray a = pull_of(args[0], fc), b = pull_of(args[1], fc);
    const bool matrix_a = shape.a_is_matrix, matrix_b = shape.b_is_matrix;
    const ir::ExprPtr rows = matrix_a ? a.shape[0] : ir::i64(1), cols = matrix_b ? b.shape[1] : ir::i64(1);
    // Row r of the reduction is result element (i, j) = (r / m, r % m).
    PullArray src{{ir::binary(ir::BinaryOp::Mul, rows, cols), matrix_a ? a.shape[1] : a.shape[0]}, a.elem, nullptr};
    src.at = [a, b, rows, cols, matrix_a, matrix_b](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
        const std::vector<ir::ExprPtr> ij = ir::lowering::unflatten(kb, i[0], {rows, cols});
        const ir::ExprPtr x = matrix_a ? a.at(kb, {ij[0], i[1]}) : a.at(kb, {i[1]});
        const ir::ExprPtr y = matrix_b ? b.at(kb, {i[1], ij[1]}) : b.at(kb, {i[1]});
        return ir::binary(ir::BinaryOp::Mul, x, y);
    };
    const ir::PlanOutcome r = run("matmul", fc, {"matmul as a reduction per element", {ir::tuple_of(src)}},
                                  [&](ir::PlanBuilder& pb) {
        const ir::LoweringFacts facts = fc.facts(pb);
        ir::lower_reduce(pb, "matmul", src, ir::known_combine(ir::AssocOp::Add, ir::scalar_of(elem)), "out",
                         lowering_options(facts));
    });
    if (shape.result.empty()) return Value(first_element(r.outputs.at("out"), elem));
    return result(r.outputs.at("out"), elem, shape.result);
}

// filter p xs (rank 1, arrays of tuples too): the predicate compiled into the
// flags of a flags -> scan -> scatter plan; the kept count is read back and
// sizes the result.
std::optional<Value> FusionEngine::filter(std::span<const Value> args, EvalContext& ctx) {
    const Value& xs = args[1];
    if (!args[0].is_function() || !is_like(xs) || like_shape(xs).size() != 1) return std::nullopt;
    const Type et = elem_type(xs);
    FuseContext fc(ctx);
    const std::vector<PullArray> x = pulls_of(xs, fc);
    PullArray keep{x[0].shape, ir::ScalarType::Bool, nullptr};
    keep.at = [&fc, x, p = args[0], et](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
        return compiled::compile_call(fc, kb, p, element_at(kb, x, i), {et}).at(0);
    };
    return rebuild(xs, kept_elements("filter", fc, prims_of(xs), keep, x));
}

// compress mask xs (xs[mask]): filter's plan with the mask as the keep
// flags. A matrix's rows: the plan keeps the rows' indices (a pass over the
// mask alone), and the rows are a gather of them, fused into what reads it
// (keeping the elements of the flattened matrix instead scanned every
// element: 45x NumPy's time for 4096 rows of 256).
std::optional<Value> FusionEngine::compress(std::span<const Value> args, EvalContext& ctx) {
    const Value &mask = args[0], &xs = args[1];
    if (!is_operand(mask) || !is_like(xs)) return std::nullopt;
    const Shape s = like_shape(xs);
    if (shape_of(mask).size() != 1) return std::nullopt;
    ops::require_mask_length(shape_of(mask)[0], s[0], origin_);
    FuseContext fc(ctx);
    const PullArray m = pull_of(mask, fc);
    if (s.size() == 1) return rebuild(xs, kept_elements("compress", fc, prims_of(xs), m, pulls_of(xs, fc)));
    const PullArray row_index{m.shape, ir::ScalarType::I32, [](ir::KernelBuilder&, const std::vector<ir::ExprPtr>& i) {
                                  return ir::cast(ir::ScalarType::I32, i[0]);  // indices are ints
                              }};
    const Value rows = kept_elements("compress_rows", fc, {Prim::Int}, m, {row_index}).at(0);
    return index_map("gather", nullptr, {rows, xs}, ctx, origin_);
}

// The elements of `x` (rank 1, one per leaf of `prims`) where `keep` holds:
// one filter plan.
std::vector<Value> FusionEngine::kept_elements(const std::string& name, FuseContext& fc, const std::vector<Prim>& prims,
                                               const PullArray& keep, const std::vector<PullArray>& x) {
    const std::vector<std::string> outs = leaf_buffers("out", prims.size(), true);
    ir::PlanOutcome r = run(name, fc, {name, {ir::tuple_of(keep), ir::tuple_of(x)}},
                            [&](ir::PlanBuilder& pb) {
        const ir::LoweringFacts facts = fc.facts(pb);
        ir::lower_filter(pb, name, keep, x, outs, "count", lowering_options(facts));
    });
    return results(r, outs, prims, {r.scalars.at("count").i});
}

// sort (each innermost row, any rank) and sortByKey (rank-1 keys; values of
// any rank, arrays of tuples too): one radix sort plan with the producers of
// the keys and values fused into its first pass. Mismatched lengths decline:
// the reference raises the error.
std::optional<Value> FusionEngine::sort(bool by_key, std::span<const Value> args, EvalContext& ctx) {
    const Value& keys = args[0];
    if (!is_operand(keys)) return std::nullopt;
    const Shape ks = shape_of(keys);
    if (by_key && (ks.size() != 1 || !is_like(args[1]) || like_shape(args[1])[0] != ks[0])) return std::nullopt;
    const std::vector<Prim> prims = by_key ? prims_of(args[1]) : std::vector<Prim>{};
    FuseContext fc(ctx);
    const std::vector<std::string> outs = leaf_buffers("vals", prims.size(), false);
    const char* name = by_key ? "sortByKey" : "sort";
    const std::vector<PullArray> vals = by_key ? pulls_of(args[1], fc) : std::vector<PullArray>{};
    const PullArray key = pull_of(keys, fc);
    PlanOperands in{name, {ir::tuple_of(key)}};
    for (const PullArray& v : vals) in.operands.push_back(ir::tuple_of(v));
    const ir::PlanOutcome r = run(name, fc, in, [&](ir::PlanBuilder& pb) {
        ir::lower_sort(pb, name, key, vals, "keys", outs, lowering_options());
    });
    const Value sorted = result(r.outputs.at("keys"), elem_of(keys), ks);
    if (!by_key) return sorted;
    return Value(std::vector<Value>{sorted, rebuild(args[1], results(r, outs, prims, like_shape(args[1])))});
}

// permute f dest g vals. With an operator section on integers: atomics (or a
// CAS loop) combine every element into dest[g i], the target function
// compiled into the kernel, exactly; on floats: block partials per target
// combined in a fixed order (deterministic; lower_permute.cpp).
// With any other function (arrays of tuples too): sorted by target, each
// target folded in source order, exactly as the reference.
std::optional<Value> FusionEngine::permute(std::span<const Value> args, EvalContext& ctx) {
    const std::optional<ir::AssocOp> op = operator_arg(args[0]);
    const Value &f = args[0], &dest = args[1], &g = args[2], &vals = args[3];
    if (!f.is_function() || !g.is_function() || !is_like(dest) || !is_like(vals) ||
        leaves(dest).size() != leaves(vals).size())
        return std::nullopt;
    const std::vector<Prim> prims = prims_of(dest);
    if (prims != prims_of(vals)) return std::nullopt;
    const Shape ds = like_shape(dest), vs = like_shape(vals);
    if (Shape(ds.begin() + 1, ds.end()) != Shape(vs.begin() + 1, vs.end())) return std::nullopt;  // the reference raises
    const bool atomics = op && prims.size() == 1 && prims[0] != Prim::Bool;
    FuseContext fc(ctx);
    std::vector<PullArray> v = pulls_of(vals, fc), d = pulls_of(dest, fc);
    // A matrix's rows are the elements: the arrays are permuted flat, element
    // e of vals going to (g (e / row)) * row + e % row (out of range when g
    // is: dropped, as a whole row).
    const int64_t row_length = shape_size(Shape(ds.begin() + 1, ds.end()));
    const bool rows = ds.size() > 1;
    if (rows) {
        for (PullArray& p : v) p = ir::reshape_array(p, {ir::element_count(p.shape)});
        for (PullArray& p : d) p = ir::reshape_array(p, {ir::element_count(p.shape)});
    }
    const ir::ExprPtr dest_rows = rows ? extents(fc, {ds[0]})[0] : nullptr;
    // The target of element i (flat, an int as in the reference).
    const std::vector<ir::ExprPtr> vshape = v[0].shape;
    PullArray target{vshape, ir::ScalarType::I64, [&fc, g, vshape, rows, row_length, dest_rows](
                                                      ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
                         const ir::ExprPtr flat = linear_index(kb, i, vshape);
                         if (!rows) {
                             const ir::ExprPtr at = ir::cast(ir::ScalarType::I32, flat);
                             return ir::cast(ir::ScalarType::I64, compiled::compile_call(fc, kb, g, {at}).at(0));
                         }
                         const ir::ExprPtr k = ir::i64(row_length);
                         const ir::ExprPtr row = ir::cast(ir::ScalarType::I32, ir::binary(ir::BinaryOp::Div, flat, k));
                         const ir::ExprPtr to = kb.bind("to_row", ir::cast(ir::ScalarType::I64, compiled::compile_call(fc, kb, g, {row}).at(0)));
                         const ir::ExprPtr inside = ir::binary(ir::BinaryOp::And, ir::binary(ir::BinaryOp::Ge, to, ir::i64(0)),
                                                               ir::binary(ir::BinaryOp::Lt, to, ir::use_params(kb, dest_rows)));
                         return ir::select(inside,
                                           ir::binary(ir::BinaryOp::Add, ir::binary(ir::BinaryOp::Mul, to, k),
                                                      ir::binary(ir::BinaryOp::Mod, flat, k)),
                                           ir::i64(-1));
                     }};
    const std::vector<std::string> outs = leaf_buffers("out", prims.size(), true);
    const UserOp combine{&fc, f, elem_type(vals)};
    PlanOperands in{atomics ? "atomics" : "ordered", {ir::tuple_of(d), ir::tuple_of(target), ir::tuple_of(v)}};
    if (atomics) {
        in.combines.push_back(ir::known_combine(*op, ir::scalar_of(prims[0])));
    } else {  // the user's function, probed as an operator without a neutral element
        ir::Combine user;
        user.types = scalar_types(prims);
        user.fn = combine;
        in.combines.push_back(user);
    }
    const ir::PlanOutcome r = run("permute", fc, in, [&](ir::PlanBuilder& pb) {
        if (atomics) {
            // The number of targets picks a float permute's path (lower_permute.cpp).
            const ir::LoweringFacts facts = fc.facts(pb);
            ir::LoweringOptions opt = lowering_options();
            opt.facts = &facts;
            ir::lower_permute(pb, "permute", d[0], target, v[0], ir::known_combine(*op, ir::scalar_of(prims[0])), outs[0],
                              opt);
            return;
        }
        ir::lower_permute_ordered(pb, "permute", ir::tuple_of(d), target, ir::tuple_of(v), combine, outs,
                                  lowering_options());  // its sort by target
    });
    return rebuild(dest, results(r, outs, prims, ds));
}

// tally n xs: a permute (+) of ones into n zeros with xs as the targets
// (lower_permute: each CPU core counts into its own copy, a GPU uses
// atomics; values outside [0, n) are dropped by the permute's range test).
std::optional<Value> FusionEngine::tally(const Value& n, const Value& xs, EvalContext& ctx) {
    if (!n.is_scalar() || !is_operand(xs) || shape_of(xs).size() != 1 || n.scalar().as_long() < 0)
        return std::nullopt;  // a negative count: the reference raises
    const int64_t bins = n.scalar().as_long();
    FuseContext fc(ctx);
    const PullArray x = pull_of(xs, fc);
    const PullArray zeros = ir::constant_array(extents(fc, {bins}), ir::const_int(0, ir::ScalarType::I32));
    const PullArray ones = ir::constant_array(x.shape, ir::const_int(1, ir::ScalarType::I32));
    const PullArray target{x.shape, ir::ScalarType::I64, [x](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
                               return ir::cast(ir::ScalarType::I64, x.at(kb, i));
                           }};
    const ir::Combine add = ir::known_combine(ir::AssocOp::Add, ir::ScalarType::I32);
    const ir::PlanOutcome r =
        run("tally", fc, {"tally", {ir::tuple_of(zeros), ir::tuple_of(target)}, {add}}, [&](ir::PlanBuilder& pb) {
            const ir::LoweringFacts facts = fc.facts(pb);
            ir::lower_permute(pb, "tally", zeros, target, ones, add, "out", lowering_options(facts));
        });
    return result(r.outputs.at("out"), Prim::Int, {bins});
}

// scatter dest idx vals (rank 1 or 2, arrays of tuples too): deterministic,
// the last write wins. Mismatched extents decline: the reference raises.
std::optional<Value> FusionEngine::scatter(std::span<const Value> args, EvalContext& ctx) {
    const Value &dest = args[0], &idx = args[1], &vals = args[2];
    if (!is_like(dest) || !is_operand(idx) || !is_like(vals) || shape_of(idx).size() != 1) return std::nullopt;
    const Shape ds = like_shape(dest), vs = like_shape(vals);
    if (ds.size() > 2 || vs[0] != shape_of(idx)[0] || Shape(ds.begin() + 1, ds.end()) != Shape(vs.begin() + 1, vs.end()) ||
        leaves(dest).size() != leaves(vals).size())
        return std::nullopt;
    const std::vector<Prim> prims = prims_of(dest);
    FuseContext fc(ctx);
    const std::vector<std::string> outs = leaf_buffers("out", prims.size(), true);
    const std::vector<PullArray> d = pulls_of(dest, fc), v = pulls_of(vals, fc);
    const PullArray i = pull_of(idx, fc);
    const ir::PlanOutcome r =
        run("scatter", fc, {"scatter", {ir::tuple_of(d), ir::tuple_of(i), ir::tuple_of(v)}}, [&](ir::PlanBuilder& pb) {
            const ir::LoweringFacts facts = fc.facts(pb);
            const ir::LoweringOptions opt = lowering_options(facts);
            for (size_t k = 0; k < d.size(); ++k)
                ir::lower_scatter(pb, pb.fresh("scatter"), d[k], i, v[k], outs[k], opt);
        });
    return rebuild(dest, results(r, outs, prims, ds));
}

}  // namespace shoal::compiled
