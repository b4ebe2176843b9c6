// The compiled backend: delayed graph nodes, fusion into pull arrays, plan
// building for consumers and forcing, the kernel cache, and running plans on
// the CPU executor. See compiled_backend.h.
#include "runtime/cpu/compiled_backend.h"

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
// turns out not to compile: the builtin call again, on forced arguments.
using Replay = std::function<ArrayPtr()>;

}  // namespace

class CpuCompiledBackend;

// A node of the delayed graph: shape and element type known eagerly, the
// elements described as a pull array built on demand in a FuseContext.
class Node final : public DelayedArray {
public:
    using MakePull = std::function<PullArray(FuseContext&)>;
    Node(std::shared_ptr<CpuCompiledBackend> backend, Prim elem, Shape shape, MakePull pull, Replay replay,
         const EvalContext& ctx)
        : backend_(std::move(backend)), elem_(elem), shape_(std::move(shape)), pull_(std::move(pull)),
          replay_(std::move(replay)), ctx_(ctx) {}

    Prim elem() const override { return elem_; }
    const Shape& shape() const override { return shape_; }
    ArrayPtr force() const override;
    const ArrayPtr& forced() const { return forced_; }
    PullArray pull(FuseContext& fc) const { return pull_(fc); }

private:
    std::shared_ptr<CpuCompiledBackend> backend_;
    Prim elem_;
    Shape shape_;
    MakePull pull_;
    Replay replay_;
    EvalContext ctx_;  // a copy: a node may be forced after its statement's context is gone
    mutable ArrayPtr forced_;
};

class CpuCompiledBackend final : public CompiledBackend, public std::enable_shared_from_this<CpuCompiledBackend> {
public:
    std::optional<Value> apply_builtin(std::string_view name, const Type& type, std::span<const Value> args,
                                       EvalContext& ctx, const Loc& loc) override;
    std::optional<Value> slice(const Value& a, int64_t start, int64_t step, int64_t count) override;
    void set_check(bool on) override { options_.check = on; }
    std::string explain(const std::function<void()>& run, bool cuda) override;

    // Materialises a node through one map kernel; null when it does not compile.
    ArrayPtr materialise(const Node& n, const EvalContext& ctx);
    // Builds (or finds in the cache) and runs a plan made by `build`.
    PlanResult run(const std::string& name, FuseContext& fc, const std::function<void(ir::PlanBuilder&)>& build);

    BackendStats stats;

private:
    Value node(Prim elem, Shape shape, Node::MakePull pull, Replay replay, const EvalContext& ctx) {
        check_array_size(elem, shape);  // "array of shape ... is too large", as the reference raises it
        return Value(std::make_shared<const Node>(shared_from_this(), elem, std::move(shape), std::move(pull),
                                                  std::move(replay), ctx));
    }
    std::optional<Value> producer(const std::string& name, const Type& type, std::span<const Value> args,
                                  const Replay& replay, const EvalContext& ctx, const Loc& loc);
    std::optional<Value> consumer(const std::string& name, std::span<const Value> args, EvalContext& ctx);

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
    if (forced_) return forced_;
    forced_ = backend_->materialise(*this, ctx_);
    if (!forced_) {
        ++backend_->stats.reference_replays;
        forced_ = replay_();
    }
    return forced_;
}

ArrayPtr CpuCompiledBackend::materialise(const Node& n, const EvalContext& ctx) {
    try {
        FuseContext fc(ctx);
        PlanResult r = run("force", fc, [&](ir::PlanBuilder& pb) {
            ir::lower_map(pb, "force", ir::tuple_of(n.pull(fc)), {"out"});
        });
        return array_from(r.outputs.at("out"), n.elem(), n.shape());
    } catch (const Decline&) {
        return nullptr;
    }
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
    auto add = [](Counters& a, const Counters& b) {
        a.launches += b.launches;
        a.global_bytes_loaded += b.global_bytes_loaded;
        a.global_bytes_stored += b.global_bytes_stored;
        a.global_sectors += b.global_sectors;
        a.shared_bank_conflicts += b.shared_bank_conflicts;
        a.atomics += b.atomics;
        a.barriers += b.barriers;
    };
    add(stats.total, r.total);
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
        const Value v = ops::index_array(*force(a).array(), {ops::AxisSelect{false, start, step, count}});
        return v.array();
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
    if (name == "map" || name == "zipWith" || name == "zipWith3") {
        const Type r = result_of(type, static_cast<int>(a.size()));
        if (!is_array(r) || !is_prim(array_elem(r))) return std::nullopt;
        for (size_t k = 1; k < a.size(); ++k)
            if (!is_operand(a[k])) return std::nullopt;
        for (size_t k = 2; k < a.size(); ++k)
            ops::require_same_shape(shape_of(a[1]), shape_of(a[k]), name.c_str(), loc);
        const Prim elem = prim_of(r);
        auto pull = [a, elem](FuseContext& fc) {
            std::vector<PullArray> srcs;
            for (size_t k = 1; k < a.size(); ++k) srcs.push_back(pull_of(a[k], fc));
            PullArray out{srcs[0].shape, ir::scalar_of(elem), nullptr};
            const Value fn = a[0];
            out.at = [srcs, fn, &fc](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
                std::vector<ir::ExprPtr> xs;
                for (const PullArray& s : srcs) xs.push_back(kb.bind("e", s.at(kb, i)));
                return compiled::compile_call(fc, kb, fn, xs).at(0);
            };
            return out;
        };
        return node(elem, shape_of(a[1]), pull, replay, ctx);
    }
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
    if (name == "reduce") {
        if (!args[0].is_function() || !args[1].is_scalar()) return std::nullopt;
        const evalimpl::CallableView f = evalimpl::as_callable(args[0]).view();
        if (!f.builtin || !f.args.empty()) return std::nullopt;
        op = reduction_op(f.builtin->name);
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
        return force(evalimpl::apply_builtin(*def, type, a, reference, loc)).array();
    };
    return producer(name, type, args, replay, reference, loc);
}

// ---------------------------------------------------------------- interface
std::shared_ptr<CompiledBackend> make_compiled_backend() { return std::make_shared<CpuCompiledBackend>(); }

const BackendStats& backend_stats(CompiledBackend& b) { return dynamic_cast<CpuCompiledBackend&>(b).stats; }
void reset_backend_stats(CompiledBackend& b) { dynamic_cast<CpuCompiledBackend&>(b).stats = BackendStats{}; }

}  // namespace shoal::cpu
