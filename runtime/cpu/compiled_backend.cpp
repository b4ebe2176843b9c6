// The compiled backend: delayed graph nodes, fusion into pull arrays, plan
// building for consumers and forcing, the kernel cache, and running plans on
// the CPU executor. See compiled_backend.h.
#include "runtime/cpu/compiled_backend.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "codegen/compile_function.h"
#include "codegen/cuda_printer.h"
#include "codegen/lower_primitives.h"
#include "lang/array_ops.h"
#include "runtime/cpu/run_plan.h"

namespace shoal::cpu {

using compiled::Decline;
using compiled::FuseContext;
using ir::PullArray;

namespace {

// How to recompute a node with the reference evaluator, when its function
// turns out not to compile: the builtin call again, on forced arguments. The
// result is forced (an array, or a tuple of arrays for a map returning a tuple).
using Replay = std::function<Value()>;

}  // namespace

class CpuCompiledBackend;

// Same-shape nodes computed together: one for most builtins, one per
// component for a map returning a tuple. Forcing any member forces all of
// them through one map kernel with an output per component, so the work they
// share (Black-Scholes' call and put) is done once.
struct NodeGroup {
    std::function<ir::PullTuple(FuseContext&)> pull;
    std::vector<Prim> elems;
    Shape shape;
    Replay replay;
    EvalContext ctx;  // a copy: a node may be forced after its statement's context is gone
    mutable std::vector<ArrayPtr> forced;  // empty until forced
};

// A node of the delayed graph: shape and element type known eagerly, the
// elements described as a pull array built on demand in a FuseContext.
class Node final : public DelayedArray {
public:
    using MakePull = std::function<PullArray(FuseContext&)>;
    Node(std::shared_ptr<CpuCompiledBackend> backend, std::shared_ptr<const NodeGroup> group, size_t component,
         MakePull pull)
        : backend_(std::move(backend)), group_(std::move(group)), component_(component), pull_(std::move(pull)) {}

    Prim elem() const override { return group_->elems[component_]; }
    const Shape& shape() const override { return group_->shape; }
    ArrayPtr force() const override;
    // The host array once this node (or a sibling) was forced, else null.
    ArrayPtr forced() const { return group_->forced.empty() ? nullptr : group_->forced[component_]; }
    PullArray pull(FuseContext& fc) const { return pull_(fc); }

private:
    std::shared_ptr<CpuCompiledBackend> backend_;
    std::shared_ptr<const NodeGroup> group_;
    size_t component_;
    MakePull pull_;
};

class CpuCompiledBackend final : public CompiledBackend, public std::enable_shared_from_this<CpuCompiledBackend> {
public:
    std::optional<Value> apply_builtin(std::string_view name, const Type& type, std::span<const Value> args,
                                       EvalContext& ctx, const Loc& loc) override;
    std::optional<Value> slice(const Value& a, int64_t start, int64_t step, int64_t count) override;
    void set_check(bool on) override { options_.check = on; }
    std::string explain(const std::function<void()>& run, bool cuda) override;

    // Forces a group: one map kernel writing every member, or (when a
    // function does not compile) the reference evaluator's replay.
    void force_group(const NodeGroup& g);
    // Builds (or finds in the cache) and runs a plan made by `build`.
    PlanResult run(const std::string& name, FuseContext& fc, const std::function<void(ir::PlanBuilder&)>& build);

    BackendStats stats;

private:
    Value node(Prim elem, Shape shape, Node::MakePull pull, Replay replay, const EvalContext& ctx);
    // The nodes of a map returning a tuple: one per component (a plain node for one).
    Value tuple_node(std::vector<Prim> elems, Shape shape, std::function<ir::PullTuple(FuseContext&)> pull,
                     Replay replay, const EvalContext& ctx);
    std::vector<ArrayPtr> materialise(const NodeGroup& g);
    std::optional<Value> producer(const std::string& name, const Type& type, std::span<const Value> args,
                                  const Replay& replay, const EvalContext& ctx, const Loc& loc);
    std::optional<Value> map_node(const std::string& name, const Type& type, const std::vector<Value>& a,
                                  const Replay& replay, const EvalContext& ctx, const Loc& loc);
    std::optional<Value> consumer(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> scan(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> push(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> filter(std::span<const Value> args, EvalContext& ctx);

    ExecOptions options_;
    std::map<std::string, std::shared_ptr<const ir::LaunchPlan>> cache_;  // key: the printed plan and kernels
    std::vector<std::shared_ptr<const ir::LaunchPlan>>* recording_ = nullptr;
    EvalContext last_ctx_;  // the context of the last builtin (slices have none of their own)
};

namespace {

// ---------------------------------------------------------------- values
// An array operand of the compiled subset: a host Array or one of our nodes.
bool is_operand(const Value& v) { return v.is_array() || (v.is_delayed() && dynamic_cast<const Node*>(v.delayed().get())); }

Shape shape_of(const Value& v) { return v.is_array() ? v.array()->shape : v.delayed()->shape(); }
Prim elem_of(const Value& v) { return v.is_array() ? v.array()->elem : v.is_delayed() ? v.delayed()->elem() : v.scalar().type; }

// The pull array reading an operand: a host array (or a forced node) is an
// input buffer; an unforced node fuses.
PullArray pull_of(const Value& v, FuseContext& fc) {
    const ArrayPtr host = v.is_array() ? v.array() : static_cast<const Node&>(*v.delayed()).forced();
    if (!host) return static_cast<const Node&>(*v.delayed()).pull(fc);
    const FuseContext::Input& in = fc.input(host);
    std::vector<std::string> extents;
    for (const auto& e : in.extents) extents.push_back(e->name);
    return ir::buffer_array(in.buffer, ir::scalar_of(host->elem), extents);
}

std::vector<ir::ExprPtr> extents(FuseContext& fc, const Shape& s) {
    std::vector<ir::ExprPtr> out;
    for (int64_t n : s) out.push_back(fc.extent(n));
    return out;
}

ir::ExprPtr use(ir::KernelBuilder& kb, const ir::ExprPtr& p) { return ir::use_params(kb, p); }

// ---------------------------------------------------------------- builtins
const std::set<std::string>& elementwise_names() {
    static const std::set<std::string> names = {
        "+", "-", "*", "/", "%", "**", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "&", "|", "^", "<<", ">>",
        "negate", "!", "~", "sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
        "tanh", "erf", "floor", "ceil", "round", "abs", "atan2", "pow", "min", "max", "int", "long", "float", "double"};
    return names;
}

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

// z (op) x, with z lifted to a kernel parameter.
ir::ExprPtr seeded(FuseContext& fc, ir::KernelBuilder& kb, ir::AssocOp op, const std::shared_ptr<const Value>& z,
                   ir::ExprPtr x) {
    return ir::apply_op(op, fc.lift(kb, z->scalar(), z.get()), std::move(x));
}

// The scans' seed z is usually not the operator's neutral element (`scan max
// 0`), while the lowerings start from the neutral element; these index maps
// fold z into the input instead, so any z costs one operation per element.
// Inclusive: element 0 of each row becomes z (op) x0.
PullArray seed_rows(FuseContext& fc, const PullArray& x, ir::AssocOp op, const std::shared_ptr<const Value>& z) {
    PullArray out = x;
    out.at = [&fc, x, op, z](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
        const ir::ExprPtr v = kb.bind("e", x.at(kb, i));
        const ir::ExprPtr first = ir::binary(ir::BinaryOp::Eq, i.back(), ir::const_int(0));
        return ir::select(first, seeded(fc, kb, op, z, v), v);
    };
    return out;
}

// Exclusive: each row shifted right by one with z in front, so that an
// inclusive scan of it is the exclusive scan from z. An If, not a Select:
// x at column -1 must never be read (an index map there may raise an error).
PullArray shift_rows(FuseContext& fc, const PullArray& x, const std::shared_ptr<const Value>& z) {
    PullArray out = x;
    out.at = [&fc, x, z](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
        const std::string r = kb.fresh("sh");
        kb.emit(ir::let(r, fc.lift(kb, z->scalar(), z.get())));
        std::vector<ir::ExprPtr> prev = i;
        prev.back() = ir::binary(ir::BinaryOp::Sub, i.back(), ir::const_int(1));
        kb.open();
        kb.emit(ir::assign(r, x.at(kb, prev)));
        std::vector<ir::StmtPtr> body = kb.close();
        kb.emit(ir::if_then(ir::binary(ir::BinaryOp::Gt, i.back(), ir::const_int(0)), std::move(body)));
        return ir::var(r, x.elem);
    };
    return out;
}

// Segmented: every segment head (and element 0) becomes z (op) x.
PullArray seed_segments(FuseContext& fc, const PullArray& flags, const PullArray& x, ir::AssocOp op,
                        const std::shared_ptr<const Value>& z) {
    PullArray out = x;
    out.at = [&fc, flags, x, op, z](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
        const ir::ExprPtr v = kb.bind("e", x.at(kb, i));
        const ir::ExprPtr head = ir::binary(ir::BinaryOp::Or, flags.at(kb, i),
                                            ir::binary(ir::BinaryOp::Eq, i[0], ir::const_int(0)));
        return ir::select(head, seeded(fc, kb, op, z, v), v);
    };
    return out;
}

// The element type an elementwise builtin produces, or nullopt when the
// compiled subset does not cover it (found by emitting it on dummy operands).
std::optional<Prim> elementwise_result(const std::string& name, Prim operand, size_t arity) {
    const ir::ScalarType t = ir::scalar_of(operand);
    try {
        std::vector<ir::ExprPtr> xs(arity, ir::param("x", t));
        const ir::ScalarType r = compiled::emit_builtin(name, xs)->type;
        for (Prim p : {Prim::Bool, Prim::Int, Prim::Long, Prim::Float, Prim::Double})
            if (ir::scalar_of(p) == r) return p;
    } catch (const Decline&) {
    }
    return std::nullopt;
}

std::optional<Shape> shape_arg(const Value& v) {
    Shape s;
    if (v.is_tuple())
        for (const Value& e : v.tuple()) s.push_back(e.scalar().as_long());
    else
        s.push_back(v.scalar().as_long());
    for (int64_t n : s)
        if (n < 0) return std::nullopt;  // the reference raises the error
    return s;
}

// The element types of an array of scalars ({p}) or of flat tuples of scalars.
std::optional<std::vector<Prim>> leaf_prims(const Type& elem) {
    if (is_prim(elem)) return std::vector<Prim>{prim_of(elem)};
    if (!is_tuple(elem)) return std::nullopt;
    std::vector<Prim> out;
    for (const Type& k : prune(elem)->args) {
        if (!is_prim(k)) return std::nullopt;
        out.push_back(prim_of(k));
    }
    return out;
}

Type result_of(Type t, int arity) {
    for (int k = 0; k < arity; ++k) t = func_result(t);
    return prune(t);
}

Scalar scalar_from(const HostBuffer& b, Prim p, int64_t i) {
    Scalar s;
    s.type = p;
    std::memcpy(&s.l, b.bytes.data() + i * static_cast<int64_t>(prim_size(p)), prim_size(p));
    return s;
}

ArrayPtr array_from(const HostBuffer& b, Prim p, const Shape& shape) {
    auto a = std::make_shared<Array>(p, shape);
    if (!a->bytes.empty()) std::memcpy(a->bytes.data(), b.bytes.data(), a->bytes.size());
    return a;
}

ir::HostValue host_value(const Scalar& s) {
    ir::HostValue h;
    h.type = ir::scalar_of(s.type);
    if (s.type == Prim::Float || s.type == Prim::Double)
        h.f = s.as_double();
    else
        h.i = s.as_long();
    return h;
}

}  // namespace

// ---------------------------------------------------------------- forcing
ArrayPtr Node::force() const {
    if (!forced()) backend_->force_group(*group_);
    return forced();
}

void CpuCompiledBackend::force_group(const NodeGroup& g) {
    g.forced = materialise(g);
    if (!g.forced.empty()) return;
    ++stats.reference_replays;
    const Value v = g.replay();
    if (!v.is_tuple()) {
        g.forced = {v.array()};
        return;
    }
    for (const Value& x : v.tuple()) g.forced.push_back(x.array());
}

// Empty when a function does not compile.
std::vector<ArrayPtr> CpuCompiledBackend::materialise(const NodeGroup& g) {
    try {
        FuseContext fc(g.ctx);
        std::vector<std::string> outs;
        for (size_t k = 0; k < g.elems.size(); ++k) outs.push_back(g.elems.size() == 1 ? "out" : "out" + std::to_string(k));
        PlanResult r = run("force", fc, [&](ir::PlanBuilder& pb) { ir::lower_map(pb, "force", g.pull(fc), outs); });
        std::vector<ArrayPtr> arrays;
        for (size_t k = 0; k < outs.size(); ++k) arrays.push_back(array_from(r.outputs.at(outs[k]), g.elems[k], g.shape));
        return arrays;
    } catch (const Decline&) {
        return {};
    }
}

Value CpuCompiledBackend::node(Prim elem, Shape shape, Node::MakePull pull, Replay replay, const EvalContext& ctx) {
    check_array_size(elem, shape);  // "array of shape ... is too large", as the reference raises it
    auto g = std::make_shared<NodeGroup>(
        NodeGroup{[pull](FuseContext& fc) { return ir::tuple_of(pull(fc)); }, {elem}, std::move(shape),
                  std::move(replay), ctx, {}});
    return Value(std::make_shared<const Node>(shared_from_this(), std::move(g), 0, std::move(pull)));
}

Value CpuCompiledBackend::tuple_node(std::vector<Prim> elems, Shape shape,
                                     std::function<ir::PullTuple(FuseContext&)> pull, Replay replay,
                                     const EvalContext& ctx) {
    for (Prim p : elems) check_array_size(p, shape);
    auto g = std::make_shared<const NodeGroup>(
        NodeGroup{std::move(pull), std::move(elems), std::move(shape), std::move(replay), ctx, {}});
    std::vector<Value> members;
    for (size_t k = 0; k < g->elems.size(); ++k) {
        // Fused into a consumer, a member computes the whole tuple and keeps
        // its component (the others are dead code).
        Node::MakePull component = [g, k](FuseContext& fc) {
            const ir::PullTuple t = g->pull(fc);
            return PullArray{t.shape, t.elems[k], [t, k](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
                                 return t.at(kb, i)[k];
                             }};
        };
        members.emplace_back(std::make_shared<const Node>(shared_from_this(), g, k, std::move(component)));
    }
    return members.size() == 1 ? members[0] : Value(std::move(members));
}

// ---------------------------------------------------------------- running plans
PlanResult CpuCompiledBackend::run(const std::string& name, FuseContext& fc,
                                   const std::function<void(ir::PlanBuilder&)>& build) {
    ir::PlanBuilder pb(name);
    build(pb);
    ir::LaunchPlan plan = pb.finish();
    // The kernel cache: keyed by structure (the printed plan and IR), never by
    // data, since extents and literals are parameters.
    std::string key = ir::to_string(plan);
    for (const ir::Kernel& k : plan.kernels) key += ir::to_string(k);
    auto [it, fresh] = cache_.try_emplace(key, nullptr);
    if (fresh) it->second = std::make_shared<const ir::LaunchPlan>(std::move(plan));
    ++(fresh ? stats.cache_misses : stats.cache_hits);
    if (recording_) recording_->push_back(it->second);

    PlanArgs args;
    for (const ir::PlanScalar& s : it->second->scalars)
        if (s.source == ir::ScalarSource::Input) args.scalars[s.name] = host_value(fc.scalars().at(s.name));
    for (const auto& [buffer, array] : fc.buffers())
        args.buffers[buffer] = BufferArg{array->bytes.data(), array->size()};
    PlanResult r = run_plan(*it->second, args, options_);
    ++stats.plans_run;
    stats.last = r.total;
    stats.last_plan = name;
    stats.total += r.total;
    return r;
}

std::string CpuCompiledBackend::explain(const std::function<void()>& run_it, bool cuda) {
    std::vector<std::shared_ptr<const ir::LaunchPlan>> plans;
    recording_ = &plans;
    try {
        run_it();
    } catch (...) {
        recording_ = nullptr;
        throw;
    }
    recording_ = nullptr;
    std::string out;
    for (const auto& p : plans) {
        out += (out.empty() ? "" : "\n\n") + ir::to_string(*p);
        if (cuda) {
            out += "\n" + ir::print_cuda(p->kernels);
        } else {
            for (const ir::Kernel& k : p->kernels) out += "\n" + ir::to_string(k);
        }
    }
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

// ---------------------------------------------------------------- producers
std::optional<Value> CpuCompiledBackend::slice(const Value& a, int64_t start, int64_t step, int64_t count) {
    if (!is_operand(a)) return std::nullopt;
    const Prim elem = elem_of(a);
    Replay reference = [a, start, step, count] {
        return ops::index_array(*force(a).array(), {ops::AxisSelect{false, start, step, count}});
    };
    auto pull = [a, start, step, count, elem](FuseContext& fc) {
        PullArray src = pull_of(a, fc);
        PullArray out;
        out.elem = ir::scalar_of(elem);
        out.shape = {fc.extent(count)};
        const ir::ExprPtr lo = fc.extent(start), st = fc.extent(step);
        out.at = [src, lo, st](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
            return src.at(kb, {ir::binary(ir::BinaryOp::Add, use(kb, lo), ir::binary(ir::BinaryOp::Mul, i[0], use(kb, st)))});
        };
        return out;
    };
    return node(elem, {count}, pull, reference, last_ctx_);
}

// map/zipWith/zipWith3: the function compiled into the element code. A
// function returning a flat tuple of scalars gives a tuple of nodes computed
// by one kernel with an output per component.
std::optional<Value> CpuCompiledBackend::map_node(const std::string& name, const Type& type,
                                                  const std::vector<Value>& a, const Replay& replay,
                                                  const EvalContext& ctx, const Loc& loc) {
    const Type r = result_of(type, static_cast<int>(a.size()));
    if (!is_array(r)) return std::nullopt;
    const std::optional<std::vector<Prim>> elems = leaf_prims(array_elem(r));
    if (!elems) return std::nullopt;
    for (size_t k = 1; k < a.size(); ++k)
        if (!is_operand(a[k])) return std::nullopt;
    for (size_t k = 2; k < a.size(); ++k) ops::require_same_shape(shape_of(a[1]), shape_of(a[k]), name.c_str(), loc);
    auto pull = [a, elems = *elems](FuseContext& fc) {
        std::vector<PullArray> srcs;
        for (size_t k = 1; k < a.size(); ++k) srcs.push_back(pull_of(a[k], fc));
        ir::PullTuple out{srcs[0].shape, {}, nullptr};
        for (Prim p : elems) out.elems.push_back(ir::scalar_of(p));
        const Value fn = a[0];
        out.at = [srcs, fn, &fc](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
            std::vector<ir::ExprPtr> xs;
            for (const PullArray& s : srcs) xs.push_back(kb.bind("e", s.at(kb, i)));
            return compiled::compile_call(fc, kb, fn, xs);
        };
        return out;
    };
    return tuple_node(*elems, shape_of(a[1]), pull, replay, ctx);
}

std::optional<Value> CpuCompiledBackend::producer(const std::string& name, const Type& type,
                                                  std::span<const Value> args, const Replay& replay,
                                                  const EvalContext& ctx, const Loc& loc) {
    std::vector<Value> a(args.begin(), args.end());
    if (elementwise_names().count(name)) {
        if (std::none_of(a.begin(), a.end(), is_operand)) return std::nullopt;
        for (const Value& v : a)
            if (!is_operand(v) && !v.is_scalar()) return std::nullopt;
        const auto result = elementwise_result(name, elem_of(a[0]), a.size());
        if (!result) return std::nullopt;
        const Value& arr = is_operand(a[0]) ? a[0] : a[1];
        if (a.size() == 2 && is_operand(a[0]) && is_operand(a[1]))
            ops::require_same_shape(shape_of(a[0]), shape_of(a[1]), name.c_str(), loc);
        auto pull = [a, name, result](FuseContext& fc) {
            std::vector<PullArray> srcs;
            for (const Value& v : a) srcs.push_back(is_operand(v) ? pull_of(v, fc) : PullArray{});
            const size_t shape_from = srcs[0].at ? 0 : 1;
            PullArray out;
            out.elem = ir::scalar_of(*result);
            out.shape = srcs[shape_from].shape;
            auto keep = std::make_shared<const std::vector<Value>>(a);  // addresses key the lifted scalars
            out.at = [srcs, name, keep, &fc](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
                std::vector<ir::ExprPtr> xs;
                for (size_t k = 0; k < srcs.size(); ++k)
                    xs.push_back(srcs[k].at ? srcs[k].at(kb, i) : fc.lift(kb, (*keep)[k].scalar(), &(*keep)[k]));
                return compiled::emit_builtin(name, xs);
            };
            return out;
        };
        return node(*result, shape_of(arr), pull, replay, ctx);
    }
    if (name == "map" || name == "zipWith" || name == "zipWith3") return map_node(name, type, a, replay, ctx, loc);
    if (name == "generate" || name == "iota" || name == "fill") {
        const std::optional<Shape> shape = shape_arg(a[0]);
        if (!shape || (name == "iota" && shape->size() != 1)) return std::nullopt;
        const Type r = result_of(type, name == "iota" ? 1 : 2);
        if (name != "iota" && (!is_array(r) || !is_prim(array_elem(r)))) return std::nullopt;
        if (name == "fill" && !a[1].is_scalar()) return std::nullopt;
        const Prim elem = name == "iota" ? Prim::Int : prim_of(r);
        auto pull = [a, name, elem, s = *shape](FuseContext& fc) {
            PullArray out{extents(fc, s), ir::scalar_of(elem), nullptr};
            const Value fn = a.size() > 1 ? a[1] : Value();
            auto keep = std::make_shared<Value>(fn);
            out.at = [name, keep, &fc](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) -> ir::ExprPtr {
                if (name == "fill") return fc.lift(kb, keep->scalar(), keep.get());
                std::vector<ir::ExprPtr> idx;
                for (const auto& x : i) idx.push_back(ir::cast(ir::ScalarType::I32, x));  // indices are ints
                if (name == "iota") return idx[0];
                return compiled::compile_call(fc, kb, *keep, idx).at(0);
            };
            return out;
        };
        return node(elem, *shape, pull, replay, ctx);
    }
    if (name == "reverse" && is_operand(a[0])) {
        return node(elem_of(a[0]), shape_of(a[0]), [a](FuseContext& fc) { return ir::reverse_array(pull_of(a[0], fc)); },
                    replay, ctx);
    }
    if (name == "gather" && is_operand(a[0]) && is_operand(a[1])) {
        Shape s = shape_of(a[1]);
        s[0] = shape_of(a[0])[0];
        auto pull = [a, loc](FuseContext& fc) { return ir::gather_array(pull_of(a[0], fc), pull_of(a[1], fc), loc); };
        return node(elem_of(a[1]), s, pull, replay, ctx);
    }
    if ((name == "take" || name == "drop") && a[0].is_scalar() && is_operand(a[1])) {
        const int64_t n = a[0].scalar().as_long();
        Shape s = shape_of(a[1]);
        const int64_t kept = std::clamp<int64_t>(n, 0, s[0]);
        s[0] = name == "take" ? kept : s[0] - kept;
        // n itself is the parameter (the index map clamps it), so the kernel
        // does not depend on its value.
        auto pull = [a, name, n](FuseContext& fc) {
            const PullArray src = pull_of(a[1], fc);
            return name == "take" ? ir::take_array(src, fc.extent(n)) : ir::drop_array(src, fc.extent(n));
        };
        return node(elem_of(a[1]), s, pull, replay, ctx);
    }
    return std::nullopt;
}

// ---------------------------------------------------------------- consumers
// sum/product/maximum/minimum/all/any and `reduce` with an operator section,
// along the innermost axis of a rank-1 or rank-2 array: one reduce plan with
// every producer fused in.
std::optional<Value> CpuCompiledBackend::consumer(const std::string& name, std::span<const Value> args,
                                                  EvalContext& ctx) {
    std::optional<ir::AssocOp> op;
    Value xs, z;
    if (name == "scan" || name == "scanExclusive" || name == "segscan") return scan(name, args, ctx);
    if (name == "++" || name == "interleave" || name == "transpose") return push(name, args, ctx);
    if (name == "filter") return filter(args, ctx);
    if (name == "reduce") {
        if (!args[1].is_scalar()) return std::nullopt;
        op = operator_arg(args[0]);
        xs = args[2];
        z = args[1];
    } else if (name == "sum" || name == "product" || name == "maximum" || name == "minimum" || name == "all" ||
               name == "any") {
        op = reduction_op(name);
        xs = args[0];
    }
    if (!op || !is_operand(xs)) return std::nullopt;
    const Shape s = shape_of(xs);
    if (s.size() != 1 && s.size() != 2) return std::nullopt;
    const Prim elem = elem_of(xs);
    try {
        FuseContext fc(ctx);
        PlanResult r = run(name, fc, [&](ir::PlanBuilder& pb) {
            ir::lower_reduce(pb, name, pull_of(xs, fc), ir::known_combine(*op, ir::scalar_of(elem)), "out");
        });
        const HostBuffer& out = r.outputs.at("out");
        Value v = s.size() == 1 ? Value(scalar_from(out, elem, 0)) : Value(array_from(out, elem, {s[0]}));
        if (z.is_unit()) return v;
        // reduce f z xs folds from z: combine z with each row's total (the operators commute).
        static const std::map<ir::AssocOp, const char*> names = {
            {ir::AssocOp::Add, "+"}, {ir::AssocOp::Mul, "*"}, {ir::AssocOp::Min, "min"},
            {ir::AssocOp::Max, "max"}, {ir::AssocOp::And, "&&"}, {ir::AssocOp::Or, "||"}};
        const evalimpl::BuiltinDef* def = evalimpl::find_builtin(names.at(*op));
        EvalContext reference = ctx;
        reference.backend = nullptr;
        const Value pair[2] = {z, v};
        return evalimpl::apply_builtin(*def, nullptr, pair, reference, Loc{});
    } catch (const Decline&) {
        return std::nullopt;
    }
}

// scan/scanExclusive (rank 1 or 2, per row) and segscan (rank 1) with an
// operator section: one scan plan with the producers fused in.
std::optional<Value> CpuCompiledBackend::scan(const std::string& name, std::span<const Value> args,
                                              EvalContext& ctx) {
    const std::optional<ir::AssocOp> op = operator_arg(args[0]);
    const Value& xs = args.back();
    if (!op || !args[1].is_scalar() || !is_operand(xs)) return std::nullopt;
    const Shape s = shape_of(xs);
    const bool segmented = name == "segscan";
    if (s.size() != 1 && (segmented || s.size() != 2)) return std::nullopt;
    // Mismatched flags are the reference evaluator's error to raise.
    if (segmented && (!is_operand(args[2]) || elem_of(args[2]) != Prim::Bool || shape_of(args[2]) != s))
        return std::nullopt;
    const Prim elem = elem_of(xs);
    auto z = std::make_shared<const Value>(args[1]);  // its address keys the lifted parameter
    const ir::Combine combine = ir::known_combine(*op, ir::scalar_of(elem));
    try {
        FuseContext fc(ctx);
        PlanResult r = run(name, fc, [&](ir::PlanBuilder& pb) {
            const PullArray x = pull_of(xs, fc);
            if (segmented) {
                const PullArray flags = pull_of(args[2], fc);
                ir::lower_segscan(pb, name, flags, seed_segments(fc, flags, x, *op, z), combine, "out");
            } else if (name == "scan") {
                ir::lower_scan(pb, name, seed_rows(fc, x, *op, z), combine, ir::ScanKind::Inclusive, "out");
            } else {
                ir::lower_scan(pb, name, shift_rows(fc, x, z), combine, ir::ScanKind::Inclusive, "out");
            }
        });
        return Value(array_from(r.outputs.at("out"), elem, s));
    } catch (const Decline&) {
        return std::nullopt;
    }
}

// ++, interleave (push arrays: each thread writes into both parts) and
// transpose (shared-memory tiles) are not index maps of one source, so they
// run at once as their own plan, with their producers fused in. Mismatched
// shapes decline: the reference evaluator raises the error.
std::optional<Value> CpuCompiledBackend::push(const std::string& name, std::span<const Value> args,
                                              EvalContext& ctx) {
    for (const Value& v : args)
        if (!is_operand(v)) return std::nullopt;
    Shape s = shape_of(args[0]);
    if (name == "transpose") {
        if (s.size() != 2) return std::nullopt;
        std::swap(s[0], s[1]);
    } else {
        const Shape b = shape_of(args[1]);
        const bool fits = name == "++" ? Shape(s.begin() + 1, s.end()) == Shape(b.begin() + 1, b.end()) : s == b;
        if (!fits || b.size() != s.size()) return std::nullopt;
        s[0] += b[0];
    }
    const Prim elem = elem_of(args[0]);
    try {
        FuseContext fc(ctx);
        PlanResult r = run(name, fc, [&](ir::PlanBuilder& pb) {
            const PullArray a = pull_of(args[0], fc);
            if (name == "transpose") return ir::lower_transpose(pb, "transpose", a, "out");
            const PullArray b = pull_of(args[1], fc);
            if (name == "++") return ir::lower_concat(pb, "concat", a, b, "out");
            ir::lower_interleave(pb, name, a, b, "out");
        });
        return Value(array_from(r.outputs.at("out"), elem, s));
    } catch (const Decline&) {
        return std::nullopt;
    }
}

// filter p xs (rank 1): the predicate compiled into the flags of a
// flags -> scan -> scatter plan; the kept count is read back and sizes the result.
std::optional<Value> CpuCompiledBackend::filter(std::span<const Value> args, EvalContext& ctx) {
    const Value& xs = args[1];
    if (!args[0].is_function() || !is_operand(xs) || shape_of(xs).size() != 1) return std::nullopt;
    const Prim elem = elem_of(xs);
    try {
        FuseContext fc(ctx);
        PlanResult r = run("filter", fc, [&](ir::PlanBuilder& pb) {
            const PullArray x = pull_of(xs, fc);
            PullArray keep{x.shape, ir::ScalarType::Bool, nullptr};
            keep.at = [&fc, x, p = args[0]](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
                return compiled::compile_call(fc, kb, p, {kb.bind("e", x.at(kb, i))}).at(0);
            };
            ir::lower_filter(pb, "filter", keep, {x}, {"out"}, "count");
        });
        return Value(array_from(r.outputs.at("out"), elem, {r.scalars.at("count").i}));
    } catch (const Decline&) {
        return std::nullopt;
    }
}

std::optional<Value> CpuCompiledBackend::apply_builtin(std::string_view name_view, const Type& type,
                                                       std::span<const Value> args, EvalContext& ctx, const Loc& loc) {
    const std::string name(name_view);
    for (const Value& v : args)
        if (v.is_tuple() || v.is_string()) return std::nullopt;  // arrays of tuples are not compiled yet
    if (std::optional<Value> r = consumer(name, args, ctx)) return r;
    EvalContext reference = ctx;
    reference.backend = nullptr;
    last_ctx_ = reference;
    const evalimpl::BuiltinDef* def = evalimpl::find_builtin(name);
    Replay replay = [def, type, a = std::vector<Value>(args.begin(), args.end()), loc, reference]() mutable {
        return force(evalimpl::apply_builtin(*def, type, a, reference, loc));
    };
    return producer(name, type, args, replay, reference, loc);
}

// ---------------------------------------------------------------- interface
std::shared_ptr<CompiledBackend> make_compiled_backend() { return std::make_shared<CpuCompiledBackend>(); }

const BackendStats& backend_stats(CompiledBackend& b) { return dynamic_cast<CpuCompiledBackend&>(b).stats; }
void reset_backend_stats(CompiledBackend& b) { dynamic_cast<CpuCompiledBackend&>(b).stats = BackendStats{}; }

}  // namespace shoal::cpu
