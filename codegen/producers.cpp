// Producers: the builtins that become delayed nodes (pull arrays fused into
// whatever consumes them): elementwise operators and functions, map,
// zipWith, generate, iota, fill, slices, index maps, random.
#include <algorithm>
#include <map>
#include <set>

#include "codegen/engine.h"
#include "codegen/kernel_code.h"
#include "codegen/lower_common.h"
#include "lang/array_ops.h"
#include "lang/random.h"

namespace shoal::compiled {

namespace {

const std::set<std::string>& elementwise_names() {
    static const std::set<std::string> names = {
        "+", "-", "*", "/", "%", "**", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "&", "|", "^", "<<", ">>",
        "negate", "!", "~", "sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
        "tanh", "erf", "floor", "ceil", "round", "abs", "atan2", "pow", "min", "max", "int", "long", "float", "double",
        "where"};
    return names;
}

// The element type an elementwise builtin produces, or nullopt when the
// compiled subset does not cover it (found by emitting it on dummy operands,
// once per name and operand types: every elementwise node asks).
std::optional<Prim> elementwise_result(const std::string& name, const std::vector<Prim>& operands) {
    thread_local std::map<std::pair<std::string, std::vector<Prim>>, std::optional<Prim>> known;
    std::pair<std::string, std::vector<Prim>> key{name, operands};
    if (auto it = known.find(key); it != known.end()) return it->second;
    std::vector<ir::ScalarType> ts;
    for (Prim p : operands) ts.push_back(ir::scalar_of(p));
    std::optional<Prim> result;
    try {
        const ir::ScalarType r = compiled::builtin_result(name, ts);
        for (Prim p : {Prim::Bool, Prim::Int, Prim::Long, Prim::Float, Prim::Double})
            if (ir::scalar_of(p) == r) {
                result = p;
                break;
            }
    } catch (const Decline&) {
    }
    known.emplace(std::move(key), result);
    return result;
}

// Broadcasting as index maps (ops::broadcast_shapes is the rule): an
// operand stretched along an axis reads index 0 there, and one of lower
// rank drops the result's leading indices. Which axes stretch is known when
// the node is made, so it is in the kernel's text and the plan's key (an
// extent of 1 that stretches is a constant 0, not a run-time test).
std::vector<ir::ExprPtr> broadcast_read(const std::vector<ir::ExprPtr>& i, const Shape& from, const Shape& to) {
    if (from == to) return i;
    const size_t lead = to.size() - from.size();
    std::vector<ir::ExprPtr> out;
    for (size_t k = lead; k < to.size(); ++k) out.push_back(ops::stretched_axis(from, to, k) ? ir::i64(0) : i[k]);
    return out;
}

// The result's extents: on each axis an extent of an operand that is not
// stretched there (so it is the result's).
std::vector<ir::ExprPtr> broadcast_extents(const std::vector<PullArray>& srcs, const std::vector<Shape>& shapes,
                                           const Shape& to) {
    std::vector<ir::ExprPtr> out(to.size());
    for (size_t k = 0; k < to.size(); ++k)
        for (size_t s = 0; s < srcs.size() && !out[k]; ++s)
            if (srcs[s].at && !ops::stretched_axis(shapes[s], to, k))
                out[k] = srcs[s].shape[k - (to.size() - shapes[s].size())];
    return out;
}

// Extents the shape check found equal (an axis both operands have and
// neither stretches along) are one extent to the kernel builder: a read of
// either at the same position is the same read.
void note_aligned_extents(ir::KernelBuilder& kb, const std::vector<PullArray>& srcs, const std::vector<Shape>& shapes,
                          const Shape& to) {
    if (srcs.size() != 2 || !srcs[0].at || !srcs[1].at) return;
    for (size_t k = 0; k < to.size(); ++k) {
        const size_t la = to.size() - shapes[0].size(), lb = to.size() - shapes[1].size();
        if (k < la || k < lb || ops::stretched_axis(shapes[0], to, k) || ops::stretched_axis(shapes[1], to, k))
            continue;
        kb.note_same_extents({srcs[0].shape[k - la]}, {srcs[1].shape[k - lb]});
    }
}

Type result_of(Type t, int arity) {
    for (int k = 0; k < arity; ++k) t = func_result(t);
    return prune(t);
}

}  // namespace

// ---------------------------------------------------------------- producers
std::optional<Value> FusionEngine::slice(const Value& a, std::span<const ops::AxisSelect> selection, const Loc& loc) {
    if (!is_like(a)) return std::nullopt;
    const Restore<Loc> during(origin_, origin_.valid() ? origin_ : loc);  // inside a builtin: its call
    const Restore<std::string> named(origin_name_, "slice");
    const std::vector<ops::AxisSelect> sel(selection.begin(), selection.end());
    const Shape in = like_shape(a);
    Shape out_shape;
    for (size_t k = 0; k < in.size(); ++k)
        if (k >= sel.size() || !sel[k].drops) out_shape.push_back(k < sel.size() ? sel[k].count : in[k]);
    if (out_shape.empty()) return std::nullopt;  // an element: scalar code reads it
    bool whole_selected = true;  // every element read (then an error of any element is raised)
    for (size_t k = 0; k < sel.size(); ++k)
        whole_selected = whole_selected && !sel[k].drops && sel[k].start == 0 && sel[k].step == 1 && sel[k].count == in[k];
    const Replay whole = [a, sel] {
        return per_leaf(force(a), [&](const Value& l, size_t) { return Value(ops::index_array(*l.array(), sel)); });
    };
    return per_leaf(a, [&](const Value& leaf, size_t k) {
        // Source index along axis k: start_k (a plain index) or start_k + i * step_k.
        auto pull = [leaf, sel, whole_selected](FuseContext& fc) {
            const PullArray src = whole_selected ? pull_of(leaf, fc) : partial_pull_of(leaf, fc, "slice");
            PullArray out{{}, src.elem, nullptr};
            std::vector<ir::ExprPtr> starts, steps;
            for (size_t axis = 0; axis < sel.size(); ++axis) {
                starts.push_back(fc.extent(sel[axis].start));
                // A unit step is a constant: unit-stride reads are what coalesce
                // and what shared tiles serve (shared_tiles.h).
                const int64_t step = sel[axis].step;
                steps.push_back(sel[axis].drops ? nullptr : step == 1 ? ir::i64(1) : fc.extent(step));
                if (!sel[axis].drops) out.shape.push_back(fc.extent(sel[axis].count));
            }
            for (size_t axis = sel.size(); axis < src.shape.size(); ++axis) out.shape.push_back(src.shape[axis]);
            out.at = [src, starts, steps](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
                std::vector<ir::ExprPtr> at;
                size_t next = 0;
                for (size_t axis = 0; axis < starts.size(); ++axis)
                    at.push_back(!steps[axis] ? use(kb, starts[axis])
                                              : ir::binary(ir::BinaryOp::Add, use(kb, starts[axis]),
                                                           ir::binary(ir::BinaryOp::Mul, i[next++], use(kb, steps[axis]))));
                while (next < i.size()) at.push_back(i[next++]);
                return src.at(kb, at);
            };
            return out;
        };
        return node(elem_of(leaf), out_shape, pull, leaf_replay(whole, k), last_ctx_, {leaf});
    });
}

// a with [sel] = v: element i is v's (at i's position in the selected part)
// where i is selected on every axis, else a's: a node like any producer, so
// a stencil step `u with [1:-1, 1:-1] = f (u[...])` is one kernel, and
// nothing is forced. Arrays of tuples and mismatched element types stay the
// host's.
std::optional<Value> FusionEngine::update(const Value& a, std::span<const ops::AxisSelect> selection, const Value& v,
                                          const Loc& loc) {
    const bool scalar_value = v.is_scalar();
    if (!is_operand(a) || (!scalar_value && !is_operand(v)) || elem_of(a) != (scalar_value ? v.scalar().type : elem_of(v)))
        return std::nullopt;
    const Shape in = like_shape(a);
    const std::vector<ops::AxisSelect> sel =
        ops::full_selection(in, std::vector<ops::AxisSelect>(selection.begin(), selection.end()));
    if (!scalar_value) ops::require_update_shape(ops::selected_shape(sel), like_shape(v), loc);
    if (std::any_of(sel.begin(), sel.end(), [](const ops::AxisSelect& s) { return s.count == 0; }))
        return a;  // nothing selected: the array itself
    const Restore<Loc> during(origin_, loc);
    const Restore<std::string> named(origin_name_, "with");
    const Replay whole = [a, sel, v, loc] { return Value(ops::update_array(*force(a).array(), sel, force(v), loc)); };
    const Shape part_shape = ops::selected_shape(sel), value_shape = scalar_value ? Shape{} : like_shape(v);
    auto pull = [a, v, sel, scalar_value, part_shape, value_shape](FuseContext& fc) {
        const PullArray src = pull_of(a, fc);
        std::optional<PullArray> part;
        if (!scalar_value) part = pull_of(v, fc);
        std::vector<ir::ExprPtr> starts, steps, counts;
        for (const ops::AxisSelect& s : sel) {
            starts.push_back(fc.extent(s.start));
            steps.push_back(s.drops ? nullptr : s.step == 1 ? ir::i64(1) : fc.extent(s.step));
            counts.push_back(fc.extent(s.count));
        }
        PullArray out{src.shape, src.elem, nullptr};
        const Scalar value = scalar_value ? v.scalar() : Scalar{};
        auto keep = std::make_shared<const Scalar>(value);
        out.at = [&fc, src, part, starts, steps, counts, keep, part_shape, value_shape](ir::KernelBuilder& kb,
                                                                                       const std::vector<ir::ExprPtr>& i) {
            using ir::BinaryOp;
            ir::ExprPtr selected = ir::const_bool(true);
            std::vector<ir::ExprPtr> j;  // the position in the selected part
            for (size_t axis = 0; axis < starts.size(); ++axis) {
                const ir::ExprPtr d = kb.bind("offset", ir::binary(BinaryOp::Sub, i[axis], use(kb, starts[axis])));
                if (!steps[axis]) {
                    selected = ir::binary(BinaryOp::And, selected, ir::binary(BinaryOp::Eq, d, ir::i64(0)));
                    continue;
                }
                ir::ExprPtr q = d, on_step = ir::const_bool(true);
                if (!(steps[axis]->kind == ir::ExprKind::Const && steps[axis]->i == 1)) {
                    q = kb.bind("step_index", ir::binary(BinaryOp::Div, d, use(kb, steps[axis])));
                    on_step = ir::binary(BinaryOp::Eq, ir::binary(BinaryOp::Mul, q, use(kb, steps[axis])), d);
                }
                const ir::ExprPtr within = ir::binary(BinaryOp::And, ir::binary(BinaryOp::Ge, q, ir::i64(0)),
                                                      ir::binary(BinaryOp::Lt, q, use(kb, counts[axis])));
                selected = ir::binary(BinaryOp::And, selected, ir::binary(BinaryOp::And, on_step, within));
                j.push_back(q);
            }
            const ir::ExprPtr in_part = kb.bind("selected", selected);
            // Both sides are read, so that the loop vectorises: outside the
            // part, the part's element 0 (the part is not empty), which the
            // reference computes too (no error it would not raise).
            for (ir::ExprPtr& q : j) q = kb.bind("part_index", ir::select(in_part, q, ir::i64(0)));
            const ir::ExprPtr new_value =
                part ? part->at(kb, broadcast_read(j, value_shape, part_shape)) : fc.lift(kb, *keep, keep.get());
            return ir::select(in_part, kb.bind("new_value", new_value), src.at(kb, i));
        };
        return out;
    };
    return node(elem_of(a), in, pull, whole, last_ctx_, scalar_value ? std::vector<Value>{a} : std::vector<Value>{a, v});
}

// map/zipWith/zipWith3: the function compiled into the element code; its
// arguments may be arrays of tuples. A function returning a tuple gives a
// tuple of nodes computed by one kernel with an output per leaf.
std::optional<Value> FusionEngine::map_node(const std::string& name, const Type& type,
                                                  const std::vector<Value>& a, const EvalContext& ctx,
                                                  const Loc& loc) {
    const Type r = result_of(type, static_cast<int>(a.size()));
    std::vector<Prim> elems;
    if (!mentions_array(r) || !prim_leaves(r, elems)) return std::nullopt;
    for (size_t k = 1; k < a.size(); ++k)
        if (!is_like(a[k])) return std::nullopt;
    std::vector<Shape> shapes;  // the arrays broadcast together (zipWith)
    for (size_t k = 1; k < a.size(); ++k) shapes.push_back(like_shape(a[k]));
    const Shape shape = ops::require_broadcast(shapes, name.c_str(), loc);
    std::vector<Type> types;
    for (size_t k = 1; k < a.size(); ++k) types.push_back(elem_type(a[k]));
    auto pull = [a, elems, types, shapes, shape](FuseContext& fc) {
        std::vector<PullArray> srcs;
        std::vector<Shape> leaf_shapes;  // each leaf's array's shape
        for (size_t k = 1; k < a.size(); ++k)
            for (const PullArray& p : pulls_of(a[k], fc)) {
                srcs.push_back(p);
                leaf_shapes.push_back(shapes[k - 1]);
            }
        const std::vector<ir::ExprPtr> extents = broadcast_extents(srcs, leaf_shapes, shape);
        for (size_t k = 0; k < srcs.size(); ++k)
            if (leaf_shapes[k] != shape)  // read through the broadcast's index map
                srcs[k] = PullArray{extents, srcs[k].elem,
                                    [p = srcs[k], from = leaf_shapes[k], shape](ir::KernelBuilder& kb,
                                                                               const std::vector<ir::ExprPtr>& i) {
                                        return p.at(kb, broadcast_read(i, from, shape));
                                    }};
        ir::PullTuple out{extents, scalar_types(elems), nullptr};
        out.at = [srcs, fn = a[0], types, &fc](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
            return compiled::compile_call(fc, kb, fn, element_at(kb, srcs, i), types);
        };
        return out;
    };
    const std::vector<Value> operands(a.begin() + 1, a.end());
    const std::vector<Value> members = tuple_nodes(elems, shape, pull, make_replay(name, type, a, ctx, loc), ctx, operands);
    size_t at = 0;
    return rebuild_type(r, members, at);
}

// Index maps (reverse, gather, take, drop, reshape, flatten, col, row): fused pull
// arrays, one node per leaf of an array of tuples.
std::optional<Value> FusionEngine::index_map(const std::string& name, const Type& type,
                                                   const std::vector<Value>& a, const EvalContext& ctx,
                                                   const Loc& loc) {
    static const std::set<std::string> names = {"reverse", "flatten", "gather", "take",
                                                "drop",    "reshape", "col",    "row"};
    if (!names.count(name)) return std::nullopt;
    const bool unary = name == "reverse" || name == "flatten" || name == "col" || name == "row";
    const Value& src = a[unary ? 0 : 1];
    if (!is_like(src)) return std::nullopt;
    Shape s = like_shape(src);
    std::function<PullArray(FuseContext&, const PullArray&)> map;
    bool partial = false;  // it reads only some of src's elements
    if (name == "reverse") {
        map = [](FuseContext&, const PullArray& x) { return ir::reverse_array(x); };
    } else if (name == "gather") {
        if (!is_operand(a[0]) || shape_of(a[0]).size() != 1) return std::nullopt;
        s[0] = shape_of(a[0])[0];
        map = [idx = a[0], loc](FuseContext& fc, const PullArray& x) {
            return ir::gather_array(pull_of(idx, fc), x, loc);
        };
        partial = true;
    } else if (name == "take" || name == "drop") {
        if (!a[0].is_scalar()) return std::nullopt;
        const int64_t n = a[0].scalar().as_long();
        const int64_t kept = std::clamp<int64_t>(n, 0, s[0]);
        s[0] = name == "take" ? kept : s[0] - kept;
        partial = s[0] != like_shape(src)[0];
        // n itself is the parameter (the index map clamps it), so the kernel
        // does not depend on its value.
        map = [take = name == "take", n](FuseContext& fc, const PullArray& x) {
            return take ? ir::take_array(x, fc.extent(n)) : ir::drop_array(x, fc.extent(n));
        };
    } else if (name == "reshape" || name == "flatten" || name == "col" || name == "row") {
        Shape to = {shape_size(s)};
        if (name == "col") to = {shape_size(s), 1};
        if (name == "row") to = {1, shape_size(s)};
        if (name == "reshape") {
            const std::optional<Shape> target = ops::shape_argument(a[0]);
            if (!target || target->empty() || target->size() > 3 || shape_size(*target) != shape_size(s))
                return std::nullopt;  // the reference raises the error
            to = *target;
        }
        s = to;
        map = [to](FuseContext& fc, const PullArray& x) { return ir::reshape_array(x, extents(fc, to)); };
    } else {
        return std::nullopt;
    }
    const Replay whole = make_replay(name, type, a, ctx, loc);
    std::vector<Value> operands = {src};
    if (name == "gather") operands.push_back(a[0]);
    return per_leaf(src, [&](const Value& leaf, size_t k) {
        auto pull = [leaf, map, partial, name](FuseContext& fc) {
            return map(fc, partial ? partial_pull_of(leaf, fc, name) : pull_of(leaf, fc));
        };
        operands[0] = leaf;
        return node(elem_of(leaf), s, pull, leaf_replay(whole, k), ctx, operands);
    });
}

// random shape: Philox in the kernel, the stream number taken now (as the
// reference evaluator takes it), so the numbers equal the reference's.
std::optional<Value> FusionEngine::random(const Value& shape, EvalContext& ctx) {
    const std::optional<Shape> s = ops::shape_argument(shape);
    if (!s || s->empty()) return std::nullopt;
    check_fits(Prim::Float, *s);
    const uint64_t seed = ctx.seed, stream = ctx.random_stream++;
    return random_numbers(*s, seed, stream, 0, false, ctx);
}

std::optional<Value> FusionEngine::random_block(const Shape& shape, uint64_t seed, uint64_t stream, int64_t first,
                                                EvalContext& ctx) {
    if (shape.empty()) return std::nullopt;
    check_fits(Prim::Float, shape);
    return random_numbers(shape, seed, stream, first, true, ctx);
}

Value FusionEngine::random_numbers(const Shape& s, uint64_t seed, uint64_t stream, int64_t first, bool offset,
                                   const EvalContext& ctx) {
    Replay replay = [s, seed, stream, first] {
        auto out = std::make_shared<Array>(Prim::Float, s);
        float* x = out->data<float>();
        for (int64_t i = 0, n = out->size(); i < n; ++i)
            x[i] = random_uniform(seed, stream, static_cast<uint64_t>(first + i));
        return Value(std::move(out));
    };
    auto keep = std::make_shared<const std::vector<Scalar>>(
        std::vector<Scalar>{Scalar::of_long(static_cast<int64_t>(seed)), Scalar::of_long(static_cast<int64_t>(stream)),
                            Scalar::of_long(first)});
    auto pull = [s, keep, offset](FuseContext& fc) {
        PullArray out{extents(fc, s), ir::ScalarType::F32, nullptr};
        out.at = [&fc, keep, offset, shape = out.shape](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
            const std::vector<ir::ExprPtr> key = lift_all(fc, kb, *keep);
            ir::ExprPtr index = linear_index(kb, i, shape);
            if (offset) index = kb.bind("element", ir::binary(ir::BinaryOp::Add, index, key[2]));
            return philox_uniform(kb, key[0], key[1], index);
        };
        return out;
    };
    EvalContext reference = ctx;
    reference.backend = nullptr;
    return node(Prim::Float, s, pull, replay, reference, {});
}

// a @ b with a short inner extent (X @ w for X of n x 3): each element is k
// products and their sum, a map rather than a product, so it is a node like
// any elementwise operator (`X @ w - y` is one kernel, fused into whatever
// reads it). The BLAS (sgemv: 10000 x 3 in 10 us, ~100k instructions) and
// the tiled kernel (a 32 x 32 tile for 3 columns) both spend their time on
// the shape, not the arithmetic. The sum is the reference's: from zero, in
// order. A scalar result (vector . vector) and mismatched extents are the
// consumer's. (kThinInner: array_graph.h.)

namespace {

// The left operand of a thin product when it is a matrix in memory: its
// rows' length is k, a constant in the kernel, so that the native compiler
// turns the k loads of a row into vector loads and shuffles (with the
// length a run-time extent they stay scalar loads).
PullArray rows_of_known_length(const Value& x, FuseContext& fc, int64_t k) {
    PullArray p = pull_of(x, fc);
    const std::string buffer = memory_buffer(x, fc);
    if (buffer.empty() || p.shape.size() != 2) return p;
    p.at = [buffer, elem = p.elem, shape = p.shape, k](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
        kb.buffer_param(buffer, elem, ir::Access::Read);
        for (const ir::ExprPtr& s : shape) ir::use_params(kb, s);  // the buffer's extents, as buffer_array binds them
        const ir::ExprPtr row = ir::cast(ir::ScalarType::I64, i[0]), col = ir::cast(ir::ScalarType::I64, i[1]);
        return ir::load(buffer, ir::binary(ir::BinaryOp::Add, ir::binary(ir::BinaryOp::Mul, row, ir::i64(k)), col), elem);
    };
    return p;
}

}  // namespace

std::optional<Value> FusionEngine::thin_product(const Type& type, std::span<const Value> args,
                                                const EvalContext& ctx, const Loc& loc) {
    const std::optional<ProductShape> shape = product_shape(args[0], args[1]);
    if (!shape || shape->result.empty()) return std::nullopt;
    const int64_t k = shape->k;
    const Prim elem = elem_of(args[0]);
    if (k < 1 || k > kThinInner || elem_of(args[1]) != elem || (elem != Prim::Float && elem != Prim::Double))
        return std::nullopt;
    const bool rows = shape->a_is_matrix, cols = shape->b_is_matrix;
    const Restore<Loc> during(origin_, loc);
    const Restore<std::string> named(origin_name_, "matmul");
    auto pull = [x = args[0], y = args[1], rows, cols, k](FuseContext& fc) {
        const PullArray pa = rows ? rows_of_known_length(x, fc, k) : pull_of(x, fc), pb = pull_of(y, fc);
        PullArray out{{}, pa.elem, nullptr};
        if (rows) out.shape.push_back(pa.shape[0]);
        if (cols) out.shape.push_back(pb.shape[1]);
        out.at = [pa, pb, rows, cols, k](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
            ir::ExprPtr sum = ir::const_float(0, pa.elem);
            for (int64_t l = 0; l < k; ++l) {
                const ir::ExprPtr at = ir::i64(l);
                const ir::ExprPtr av = rows ? pa.at(kb, {i[0], at}) : pa.at(kb, {at});
                const ir::ExprPtr bv = cols ? pb.at(kb, {at, i[rows ? 1 : 0]}) : pb.at(kb, {at});
                sum = ir::binary(ir::BinaryOp::Add, sum, ir::binary(ir::BinaryOp::Mul, av, bv));
            }
            return sum;
        };
        return out;
    };
    return node(elem, shape->result, pull, make_replay("matmul", type, args, ctx, loc), ctx, {args[0], args[1]},
                std::nullopt, /*reads=*/k);
}

// The footgun (row_values.h): a vector of one value per row of a matrix,
// stretched along the rows of a matrix read at the reduced one's index, so
// that it lines up with the columns. Only a square matrix gets here (else
// the shapes do not broadcast, and that error suggests `col`).
void FusionEngine::warn_rows_along_columns(const std::vector<Value>& a, const std::vector<Shape>& shapes,
                                           const EvalContext& ctx, const Loc& loc) {
    if (!ctx.warnings) return;
    for (size_t k = 0; k < 2; ++k) {
        const Shape& v = shapes[k];
        const Shape& m = shapes[1 - k];
        if (v.size() != 1 || m.size() != 2 || m[0] != m[1] || m[0] <= 1) continue;
        const RowValues::Reduction* r = row_values_.reduced_from(a[k], aligned_sources(a[1 - k]));
        if (!r) continue;
        const std::string at = r->at.valid() ? " at " + r->at.position() : "";
        const std::string text = source_text(r->at, r->what);
        const std::string shown = text.empty() ? r->what + " ..." : text;
        ctx.warnings->push_back(
            {loc,
             "`" + shown + "`" + at + " has one value per row of a matrix, but broadcasting lines a vector up " +
                 "with a matrix's columns (its last axis): each row here is combined with every row's value",
             {"write `col (" + shown + ")` to combine each row with its own value (shape (" + std::to_string(v[0]) +
                  ", 1)); to reduce each column instead, reduce the transpose (`" + r->what + " (transpose m)`)",
              "NumPy gives the same wrong result without a word; a matrix that is not square would not broadcast"}});
    }
}

std::optional<Value> FusionEngine::producer(const std::string& name, const Type& type,
                                                  std::span<const Value> args, const EvalContext& ctx,
                                                  const Loc& loc) {
    std::vector<Value> a(args.begin(), args.end());
    if (elementwise_names().count(name)) {
        if (std::none_of(a.begin(), a.end(), is_operand)) return std::nullopt;
        for (const Value& v : a)
            if (!is_operand(v) && !v.is_scalar()) return std::nullopt;
        std::vector<Prim> elems;
        for (const Value& v : a) elems.push_back(elem_of(v));
        const auto result = elementwise_result(name, elems);
        if (!result) return std::nullopt;
        std::vector<Shape> shapes, arrays;  // each operand's shape (empty: a scalar); the arrays'
        for (const Value& v : a) {
            shapes.push_back(is_operand(v) ? shape_of(v) : Shape{});
            if (is_operand(v)) arrays.push_back(shapes.back());
        }
        const Shape shape = ops::require_broadcast(arrays, name.c_str(), loc);
        const bool two_arrays = a.size() == 2 && is_operand(a[0]) && is_operand(a[1]);
        if (two_arrays) warn_rows_along_columns(a, shapes, ctx, loc);
        // The operands read at the result's index, and theirs: only a
        // matrix's are ever asked for (the footgun check), so a loop of
        // vector operations keeps none.
        AlignedSources aligned;
        bool reads_transposed = false;
        if (shape.size() == 2)
            for (size_t k = 0; k < a.size(); ++k)
                if (is_operand(a[k]) && shapes[k] == shape) {
                    for (const void* s : aligned_sources(a[k]))
                        if (aligned.size() < kMaxAlignedSources) aligned.push_back(s);
                    if (a[k].is_delayed()) {
                        const NodeGroup& g = static_cast<const Node&>(*a[k].delayed()).group();
                        reads_transposed = reads_transposed || g.reads_transposed;
                    }
                }
        // Shared by the node and every pull of it (each copy of a shape, a
        // name or the operands is an allocation, and every plan pulls).
        struct Operation {
            std::vector<Value> a;
            std::string name;
            Shape shape;
            std::vector<Shape> shapes;
        };
        auto op = std::make_shared<const Operation>(Operation{a, name, shape, shapes});
        auto pull = [op, elem = ir::scalar_of(*result)](FuseContext& fc) {
            struct Pulled {
                std::vector<PullArray> srcs;
                std::vector<Value> keep;  // addresses key the lifted scalars
            };
            auto in = std::make_shared<Pulled>();
            in->srcs.reserve(op->a.size());
            for (const Value& v : op->a) in->srcs.push_back(is_operand(v) ? pull_of(v, fc) : PullArray{});
            in->keep = op->a;
            PullArray out;
            out.elem = elem;
            out.shape = broadcast_extents(in->srcs, op->shapes, op->shape);
            out.at = [op, in = std::shared_ptr<const Pulled>(in), &fc](ir::KernelBuilder& kb,
                                                                     const std::vector<ir::ExprPtr>& i) {
                note_aligned_extents(kb, in->srcs, op->shapes, op->shape);
                std::vector<ir::ExprPtr> xs;
                xs.reserve(in->srcs.size());
                for (size_t k = 0; k < in->srcs.size(); ++k)
                    xs.push_back(in->srcs[k].at ? in->srcs[k].at(kb, broadcast_read(i, op->shapes[k], op->shape))
                                                : fc.lift(kb, in->keep[k].scalar(), &in->keep[k]));
                return compiled::emit_builtin(kb, op->name, xs);
            };
            return out;
        };
        Value v = node(*result, shape, pull, make_replay(name, type, args, ctx, loc), ctx, a, std::nullopt, 1,
                       std::move(aligned), reads_transposed);
        if (shape.size() == 1 && !row_values_.empty())  // `sum m / 3.0`: one value per row of m as `sum m`
            for (size_t k = 0; k < a.size(); ++k)
                if (is_operand(a[k]) && shapes[k] == shape) row_values_.carry(a[k], v);
        return v;
    }
    if (name == "map" || name == "zipWith" || name == "zipWith3") return map_node(name, type, a, ctx, loc);
    if (name == "iota") {
        const std::optional<Shape> s = ops::shape_argument(a[0]);
        if (!s || s->size() != 1) return std::nullopt;
        auto pull = [s = *s](FuseContext& fc) {
            return PullArray{extents(fc, s), ir::ScalarType::I32,
                             [](ir::KernelBuilder&, const std::vector<ir::ExprPtr>& i) {
                                 return ir::cast(ir::ScalarType::I32, i[0]);  // indices are ints
                             }};
        };
        return node(Prim::Int, *s, pull, make_replay(name, type, args, ctx, loc), ctx, {});
    }
    if (name == "fill") {
        const std::optional<Shape> s = ops::shape_argument(a[0]);
        std::vector<Scalar> vs;
        if (!s || s->empty() || !scalar_leaves(a[1], vs)) return std::nullopt;
        const Replay whole = make_replay(name, type, args, ctx, loc);
        auto keep = std::make_shared<const std::vector<Scalar>>(vs);
        std::vector<Value> nodes;
        for (size_t k = 0; k < vs.size(); ++k) {
            auto pull = [s = *s, keep, k](FuseContext& fc) {
                PullArray out{extents(fc, s), ir::scalar_of((*keep)[k].type), nullptr};
                out.at = [&fc, keep, k](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>&) {
                    return fc.lift(kb, (*keep)[k], &(*keep)[k]);
                };
                return out;
            };
            nodes.push_back(node(vs[k].type, *s, pull, leaf_replay(whole, k), ctx, {}));
        }
        return rebuild(a[1], nodes);
    }
    if (name == "generate") {
        const std::optional<Shape> s = ops::shape_argument(a[0]);
        const Type r = result_of(type, 2);
        std::vector<Prim> elems;
        if (!s || s->empty() || !mentions_array(r) || !prim_leaves(r, elems)) return std::nullopt;
        auto pull = [s = *s, fn = a[1], elems](FuseContext& fc) {
            ir::PullTuple out{extents(fc, s), scalar_types(elems), nullptr};
            out.at = [&fc, fn](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
                std::vector<ir::ExprPtr> idx;
                for (const auto& x : i) idx.push_back(ir::cast(ir::ScalarType::I32, x));  // indices are ints
                return compiled::compile_call(fc, kb, fn, idx);
            };
            return out;
        };
        const std::vector<Value> members =
            tuple_nodes(elems, *s, pull, make_replay(name, type, args, ctx, loc), ctx, {});
        size_t at = 0;
        return rebuild_type(r, members, at);
    }
    return index_map(name, type, a, ctx, loc);
}

}  // namespace shoal::compiled
