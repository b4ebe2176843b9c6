// The compiled backend: delayed graph nodes, fusion into pull arrays, plan
// building for consumers and forcing, the kernel cache, and running plans on
// the CPU executor. See compiled_backend.h.
#include "runtime/cpu/compiled_backend.h"

#include <atomic>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "codegen/compile_function.h"
#include "codegen/cuda_printer.h"
#include "codegen/lower_primitives.h"
#include "codegen/pipeline.h"
#include "lang/array_ops.h"
#include "lang/random.h"
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
    int64_t weight = 1;  // nodes fused into this one (bounded, see fusion_weight)
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
    // The nodes a consumer would fuse by fusing this one (0 once forced).
    int64_t weight() const { return forced() ? 0 : group_->weight; }
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
    std::vector<KernelProfile> profile(const std::function<void()>& run) override;

    // Forces a group: one map kernel writing every member, or (when a
    // function does not compile) the reference evaluator's replay.
    void force_group(const NodeGroup& g);
    // Builds (or finds in the cache) and runs a plan made by `build`.
    // Lowers (build), looks the plan up in the kernel cache and runs it.
    // `into`: arrays the named Output buffers are written to in place.
    PlanResult run(const std::string& name, FuseContext& fc, const std::function<void(ir::PlanBuilder&)>& build,
                   const std::map<std::string, ArrayPtr>& into = {});

    BackendStats stats;

private:
    // A node computed from `operands` (array-likes it reads; they are fused
    // into it unless that would make kernels too large, then forced first).
    Value node(Prim elem, Shape shape, Node::MakePull pull, Replay replay, const EvalContext& ctx,
               const std::vector<Value>& operands);
    // The nodes of a map returning a tuple: one per leaf component.
    std::vector<Value> tuple_nodes(std::vector<Prim> elems, Shape shape,
                                   std::function<ir::PullTuple(FuseContext&)> pull, Replay replay,
                                   const EvalContext& ctx, const std::vector<Value>& operands);
    std::vector<ArrayPtr> materialise(const NodeGroup& g);
    std::optional<Value> compile_builtin(const std::string& name, const Type& type, std::span<const Value> args,
                                         EvalContext& ctx, const Loc& loc);
    std::optional<Value> producer(const std::string& name, const Type& type, std::span<const Value> args,
                                  const EvalContext& ctx, const Loc& loc);
    std::optional<Value> map_node(const std::string& name, const Type& type, const std::vector<Value>& a,
                                  const EvalContext& ctx, const Loc& loc);
    std::optional<Value> index_map(const std::string& name, const Type& type, const std::vector<Value>& a,
                                   const EvalContext& ctx, const Loc& loc);
    std::optional<Value> random(const Value& shape, EvalContext& ctx);
    std::optional<Value> consumer(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> lower_consumer(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> sort(bool by_key, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> known_reduce(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> general_reduce(const Value& f, const Value& z, const Value& xs, EvalContext& ctx);
    std::optional<Value> count(const Value& p, const Value& xs, EvalContext& ctx);
    std::optional<Value> arg_extreme(bool largest, const Value& xs, EvalContext& ctx);
    std::optional<Value> scan(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> push(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> filter(std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> permute(std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> scatter(std::span<const Value> args, EvalContext& ctx);

    ExecOptions options_;
    std::map<std::string, std::shared_ptr<const ir::LaunchPlan>> cache_;  // key: the printed plan and kernels
    std::vector<std::shared_ptr<const ir::LaunchPlan>>* recording_ = nullptr;
    std::vector<KernelProfile>* profiling_ = nullptr;  // during profile()
    void record_profile(const ir::LaunchPlan& plan, const PlanResult& r);
    EvalContext last_ctx_;  // the context of the last builtin (slices have none of their own)
};

namespace {

// ---------------------------------------------------------------- values
// An array operand of the compiled subset: a host Array or one of our nodes.
bool is_operand(const Value& v) { return v.is_array() || (v.is_delayed() && dynamic_cast<const Node*>(v.delayed().get())); }

// Whether a value or a builtin's result involves arrays (what the backend
// should compute rather than the reference evaluator).
bool holds_array(const Value& v) {
    if (v.is_tuple()) return std::any_of(v.tuple().begin(), v.tuple().end(), holds_array);
    return v.is_array() || v.is_delayed();
}
bool holds_array_type(const Type& fn_type, size_t arity) {
    Type t = fn_type;
    for (size_t k = 0; k < arity; ++k) t = func_result(t);
    return mentions_array(t);
}

Shape shape_of(const Value& v) { return v.is_array() ? v.array()->shape : v.delayed()->shape(); }
Prim elem_of(const Value& v) { return v.is_array() ? v.array()->elem : v.is_delayed() ? v.delayed()->elem() : v.scalar().type; }

// ---------------------------------------------------------------- array-likes
// An array of tuples is a tuple of arrays of one shape (docs/language.md):
// an array-like is an operand or a tuple of array-likes of one shape; its
// leaves are the operands in order.
void leaves_into(const Value& v, std::vector<Value>& out) {
    if (!v.is_tuple()) {
        out.push_back(v);
        return;
    }
    for (const Value& k : v.tuple()) leaves_into(k, out);
}
std::vector<Value> leaves(const Value& v) {
    std::vector<Value> out;
    leaves_into(v, out);
    return out;
}

bool is_like(const Value& v) {
    const std::vector<Value> ls = leaves(v);
    if (ls.empty() || !std::all_of(ls.begin(), ls.end(), is_operand)) return false;
    const Shape s = shape_of(ls[0]);
    return std::all_of(ls.begin(), ls.end(), [&](const Value& l) { return shape_of(l) == s; });
}

Shape like_shape(const Value& v) { return shape_of(leaves(v).at(0)); }

// The value with the structure of `like` and these leaves (consumed from at).
Value rebuild(const Value& like, const std::vector<Value>& ls, size_t& at) {
    if (!like.is_tuple()) return ls.at(at++);
    std::vector<Value> out;
    for (const Value& k : like.tuple()) out.push_back(rebuild(k, ls, at));
    return Value(std::move(out));
}
Value rebuild(const Value& like, const std::vector<Value>& ls) {
    size_t at = 0;
    return rebuild(like, ls, at);
}

// The value of Shoal type `t` built from leaves: one per scalar of a tuple of
// scalars, or one per array of an array of tuples (which the type checker may
// also write as a tuple of arrays).
Value rebuild_type(const Type& t, const std::vector<Value>& ls, size_t& at) {
    const Type p = prune(t);
    if (is_array(p)) return rebuild_type(array_elem(p), ls, at);
    if (!is_tuple(p)) return ls.at(at++);
    std::vector<Value> out;
    for (const Type& k : p->args) out.push_back(rebuild_type(k, ls, at));
    return Value(std::move(out));
}

// The element type of an array-like (or the type of a scalar or tuple of scalars).
Type elem_type(const Value& v) {
    if (v.is_tuple()) {
        std::vector<Type> ks;
        for (const Value& k : v.tuple()) ks.push_back(elem_type(k));
        return t_tuple(std::move(ks));
    }
    return t_prim(v.is_scalar() ? v.scalar().type : elem_of(v));
}

// The scalar leaves of a scalar or a tuple of scalars; false for anything else.
bool scalar_leaves(const Value& v, std::vector<Scalar>& out) {
    if (v.is_scalar()) {
        out.push_back(v.scalar());
        return true;
    }
    if (!v.is_tuple()) return false;
    for (const Value& k : v.tuple())
        if (!scalar_leaves(k, out)) return false;
    return true;
}

// The leaf element types of a Shoal type made of scalars, tuples and arrays
// of them (the element types of an array of tuples).
bool prim_leaves(const Type& t, std::vector<Prim>& out) {
    Type p = prune(t);
    if (is_array(p)) p = prune(array_elem(p));
    if (is_prim(p)) {
        out.push_back(prim_of(p));
        return true;
    }
    if (!is_tuple(p)) return false;
    for (const Type& k : p->args)
        if (!prim_leaves(k, out)) return false;
    return true;
}

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

// The element type an elementwise builtin produces, or nullopt when the
// compiled subset does not cover it (found by emitting it on dummy operands).
std::optional<Prim> elementwise_result(const std::string& name, Prim operand, size_t arity) {
    const ir::ScalarType t = ir::scalar_of(operand);
    try {
        const ir::ScalarType r = compiled::builtin_result(name, std::vector<ir::ScalarType>(arity, t));
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

// Output buffer names for n leaves: prefix0, prefix1, ...; a single leaf
// is plain `prefix` when bare_single.
std::vector<std::string> leaf_buffers(const std::string& prefix, size_t n, bool bare_single) {
    std::vector<std::string> names;
    for (size_t k = 0; k < n; ++k) names.push_back(n == 1 && bare_single ? prefix : prefix + std::to_string(k));
    return names;
}

// The arrays a consumer returns, made before its plan runs and written by
// its kernels in place (uninitialised: the kernels write every element).
struct InPlaceOutputs {
    std::map<std::string, ArrayPtr> into;
    ArrayPtr add(const std::string& buffer, Prim p, const Shape& shape) {
        auto a = std::make_shared<Array>(p, shape, Array::Uninitialised{});
        into[buffer] = a;
        return a;
    }
    // One array per leaf, all of `shape`, for the buffers `names`.
    std::vector<Value> add_all(const std::vector<std::string>& names, const std::vector<Prim>& prims,
                               const Shape& shape) {
        std::vector<Value> arrays;
        for (size_t k = 0; k < names.size(); ++k) arrays.emplace_back(add(names[k], prims[k], shape));
        return arrays;
    }
};

ArrayPtr array_from(const HostBuffer& b, Prim p, const Shape& shape) {
    auto a = std::make_shared<Array>(p, shape, Array::Uninitialised{});
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
    for (const Value& x : leaves(g.replay())) g.forced.push_back(x.array());
}

// Empty when a function does not compile.
std::vector<ArrayPtr> CpuCompiledBackend::materialise(const NodeGroup& g) {
    try {
        FuseContext fc(g.ctx);
        // The kernel writes the bindings' arrays directly: no copy, no zeroing.
        const std::vector<std::string> outs = leaf_buffers("out", g.elems.size(), true);
        InPlaceOutputs results;
        std::vector<ArrayPtr> arrays;
        for (size_t k = 0; k < outs.size(); ++k) arrays.push_back(results.add(outs[k], g.elems[k], g.shape));
        run("force", fc, [&](ir::PlanBuilder& pb) { ir::lower_map(pb, "force", g.pull(fc), outs); }, results.into);
        return arrays;
    } catch (const Decline& d) {
        ++stats.declines[d.why];
        return {};
    }
}

// Fusion is bounded: a graph built by a long loop (`iterate 1000 f x`), or
// one that shares a node many times (x = x + x repeated), would otherwise
// become one enormous kernel. A node whose fused graph would exceed this many
// nodes forces its operands first (then they are buffers, weight 0).
constexpr int64_t kMaxFusedNodes = 200;

int64_t fusion_weight(const std::vector<Value>& operands) {
    int64_t w = 1;
    for (const Value& v : operands)
        for (const Value& l : leaves(v))
            if (l.is_delayed()) w += static_cast<const Node&>(*l.delayed()).weight();
    return w;
}

int64_t bounded_weight(const std::vector<Value>& operands) {
    int64_t w = fusion_weight(operands);
    if (w <= kMaxFusedNodes) return w;
    for (const Value& v : operands)
        for (const Value& l : leaves(v))
            if (l.is_delayed()) l.delayed()->force();
    return 1;
}

Value CpuCompiledBackend::node(Prim elem, Shape shape, Node::MakePull pull, Replay replay, const EvalContext& ctx,
                               const std::vector<Value>& operands) {
    check_array_size(elem, shape);  // "array of shape ... is too large", as the reference raises it
    auto g = std::make_shared<NodeGroup>(
        NodeGroup{[pull](FuseContext& fc) { return ir::tuple_of(pull(fc)); }, {elem}, std::move(shape),
                  std::move(replay), ctx, bounded_weight(operands), {}});
    return Value(std::make_shared<const Node>(shared_from_this(), std::move(g), 0, std::move(pull)));
}

std::vector<Value> CpuCompiledBackend::tuple_nodes(std::vector<Prim> elems, Shape shape,
                                                   std::function<ir::PullTuple(FuseContext&)> pull, Replay replay,
                                                   const EvalContext& ctx, const std::vector<Value>& operands) {
    for (Prim p : elems) check_array_size(p, shape);
    auto g = std::make_shared<const NodeGroup>(NodeGroup{std::move(pull), std::move(elems), std::move(shape),
                                                         std::move(replay), ctx, bounded_weight(operands), {}});
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
    return members;
}

// ---------------------------------------------------------------- running plans
namespace {
std::atomic<PlanObserver> g_plan_observer{nullptr};
}  // namespace

void set_plan_observer(PlanObserver observer) { g_plan_observer.store(observer); }

PlanResult CpuCompiledBackend::run(const std::string& name, FuseContext& fc,
                                   const std::function<void(ir::PlanBuilder&)>& build,
                                   const std::map<std::string, ArrayPtr>& into) {
    ir::PlanBuilder pb(name);
    pb.defer_optimization = true;
    build(pb);
    ir::LaunchPlan plan = pb.finish();
    // The kernel cache: keyed by structure (the printed plan and IR as
    // lowered), never by data, since extents and literals are parameters.
    // Only a miss pays for verifying and optimising the kernels.
    std::string key = ir::to_string(plan);
    for (const ir::Kernel& k : plan.kernels) key += ir::to_string(k);
    auto it = cache_.find(key);
    const bool fresh = it == cache_.end();
    if (fresh) {
        ir::optimize_plan(plan);
        it = cache_.emplace(std::move(key), std::make_shared<const ir::LaunchPlan>(std::move(plan))).first;
        if (g_plan_observer) g_plan_observer(*it->second);
    }
    ++(fresh ? stats.cache_misses : stats.cache_hits);
    if (recording_) recording_->push_back(it->second);

    PlanArgs args;
    for (const ir::PlanScalar& s : it->second->scalars)
        if (s.source == ir::ScalarSource::Input) args.scalars[s.name] = host_value(fc.scalars().at(s.name));
    for (const auto& [buffer, array] : fc.buffers())
        args.buffers[buffer] = BufferArg{array->bytes.data(), array->size()};
    for (const auto& [buffer, array] : into) args.outputs[buffer] = BufferArg{array->bytes.data(), array->size()};
    ExecOptions options = options_;
    options.cancel = fc.eval_context().cancel;  // Ctrl-C stops a running kernel
    // The plan compiled: its advice applies (even if running it fails).
    if (std::vector<Warning>* w = fc.eval_context().warnings) w->insert(w->end(), fc.warnings.begin(), fc.warnings.end());
    PlanResult r = run_plan(*it->second, args, options);
    ++stats.plans_run;
    if (profiling_) record_profile(*it->second, r);
    stats.last = r.total;
    stats.last_plan = name;
    stats.total += r.total;
    return r;
}

void CpuCompiledBackend::record_profile(const ir::LaunchPlan& plan, const PlanResult& r) {
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
        const Counters& c = r.kernel_counters[k];
        if (c.launches == 0) continue;
        auto same = [&](const KernelProfile& p) { return p.plan == plan.name && p.kernel == plan.kernels[k].name; };
        auto it = std::find_if(profiling_->begin(), profiling_->end(), same);
        if (it == profiling_->end()) it = profiling_->insert(it, KernelProfile{plan.name, plan.kernels[k].name});
        KernelProfile counts;
        counts.launches = c.launches;
        counts.nanoseconds = c.nanoseconds;
        counts.bytes_loaded = c.global_bytes_loaded;
        counts.bytes_stored = c.global_bytes_stored;
        counts.sectors = c.global_sectors;
        counts.bank_conflicts = c.shared_bank_conflicts;
        counts.atomics = c.atomics;
        *it += counts;
    }
}

namespace {
// Runs `run` with `slot` pointing at `target`, cleared again even if it throws.
template <class T> void run_observed(T*& slot, T* target, const std::function<void()>& run) {
    slot = target;
    try {
        run();
    } catch (...) {
        slot = nullptr;
        throw;
    }
    slot = nullptr;
}
}  // namespace

std::vector<KernelProfile> CpuCompiledBackend::profile(const std::function<void()>& run_it) {
    std::vector<KernelProfile> rows;
    run_observed(profiling_, &rows, run_it);
    return rows;
}

std::string CpuCompiledBackend::explain(const std::function<void()>& run_it, bool cuda) {
    std::vector<std::shared_ptr<const ir::LaunchPlan>> plans;
    run_observed(recording_, &plans, run_it);
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

// ---------------------------------------------------------------- kernel-code helpers
namespace {

// The reference evaluator's result of one builtin call, forced (a node whose
// function turns out not to compile is computed this way).
Replay make_replay(const std::string& name, const Type& type, std::span<const Value> args, const EvalContext& ctx,
                   const Loc& loc) {
    const evalimpl::BuiltinDef* def = evalimpl::find_builtin(name);
    EvalContext reference = ctx;
    reference.backend = nullptr;
    return [def, type, a = std::vector<Value>(args.begin(), args.end()), loc, ctx = reference]() mutable {
        return force(evalimpl::apply_builtin(*def, type, a, ctx, loc));
    };
}
// Leaf k of a replayed array-like.
Replay leaf_replay(Replay whole, size_t k) {
    return [whole = std::move(whole), k] { return leaves(whole()).at(k); };
}

// Applies `make` to every leaf of an array-like, keeping its structure.
Value per_leaf(const Value& v, const std::function<Value(const Value& leaf, size_t k)>& make) {
    const std::vector<Value> ls = leaves(v);
    std::vector<Value> out;
    for (size_t k = 0; k < ls.size(); ++k) out.push_back(make(ls[k], k));
    return rebuild(v, out);
}

std::vector<PullArray> pulls_of(const Value& v, FuseContext& fc) {
    std::vector<PullArray> out;
    for (const Value& l : leaves(v)) out.push_back(pull_of(l, fc));
    return out;
}

std::vector<ir::ExprPtr> element_at(ir::KernelBuilder& kb, const std::vector<PullArray>& xs,
                                    const std::vector<ir::ExprPtr>& i) {
    std::vector<ir::ExprPtr> out;
    for (const PullArray& x : xs) out.push_back(kb.bind("e", x.at(kb, i)));
    return out;
}

std::vector<ir::ScalarType> scalar_types(const std::vector<Prim>& ps) {
    std::vector<ir::ScalarType> out;
    for (Prim p : ps) out.push_back(ir::scalar_of(p));
    return out;
}
std::vector<Prim> prims_of(const Value& like) {
    std::vector<Prim> out;
    for (const Value& l : leaves(like)) out.push_back(elem_of(l));
    return out;
}

// Mutable kernel variables initialised to values.
std::vector<ir::ExprPtr> variables(ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& values) {
    std::vector<ir::ExprPtr> out;
    for (const ir::ExprPtr& v : values) {
        const std::string name = kb.fresh("m");
        kb.emit(ir::let(name, v));
        out.push_back(ir::var(name, v->type));
    }
    return out;
}

// if (cond) vars = body(): an If, never a Select, so that a user function
// runs only where the reference evaluator would run it (it may raise errors).
void assign_if(ir::KernelBuilder& kb, const ir::ExprPtr& cond, const std::vector<ir::ExprPtr>& vars,
               const std::function<std::vector<ir::ExprPtr>()>& body) {
    kb.open();
    const std::vector<ir::ExprPtr> r = body();
    for (size_t k = 0; k < vars.size(); ++k) kb.emit(ir::assign(vars[k]->name, r[k]));
    kb.emit(ir::if_then(cond, kb.close()));
}

// The user's combining function f (of type et -> et -> et) applied in kernel code.
struct UserOp {
    FuseContext* fc;
    Value f;
    Type et;
    std::vector<ir::ExprPtr> operator()(ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& a,
                                        const std::vector<ir::ExprPtr>& b) const {
        std::vector<ir::ExprPtr> args = a;
        args.insert(args.end(), b.begin(), b.end());
        return compiled::compile_call(*fc, kb, f, args, {et, et});
    }
};

// Any associative user function as a monoid: the carrier (valid, value...)
// with the neutral element (false, ...), since the lowerings pad and seed with
// a neutral element and a user function has no known one:
//   (va, a) + (vb, b) = va && vb ? (true, f a b) : va ? (true, a) : (vb, b).
ir::Combine optional_combine(const UserOp& f, const std::vector<ir::ScalarType>& types) {
    ir::Combine c;
    c.types.push_back(ir::ScalarType::Bool);
    c.neutral.push_back(ir::const_bool(false));
    for (ir::ScalarType t : types) {
        c.types.push_back(t);
        c.neutral.push_back(compiled::zero_of(t));
    }
    c.fn = [f](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& a, const std::vector<ir::ExprPtr>& b) {
        const std::vector<ir::ExprPtr> av(a.begin() + 1, a.end()), bv(b.begin() + 1, b.end());
        std::vector<ir::ExprPtr> picked;
        for (size_t k = 0; k < av.size(); ++k) picked.push_back(ir::select(a[0], av[k], bv[k]));
        std::vector<ir::ExprPtr> vars = variables(kb, picked);
        assign_if(kb, ir::binary(ir::BinaryOp::And, a[0], b[0]), vars, [&] { return f(kb, av, bv); });
        vars.insert(vars.begin(), kb.bind("ok", ir::binary(ir::BinaryOp::Or, a[0], b[0])));
        return vars;
    };
    return c;  // not commutative: f is combined in order
}

std::vector<ir::ExprPtr> lift_all(FuseContext& fc, ir::KernelBuilder& kb, const std::vector<Scalar>& zs) {
    std::vector<ir::ExprPtr> out;
    for (const Scalar& z : zs) out.push_back(fc.lift(kb, z, &z));  // the address keys the parameter
    return out;
}

std::vector<ir::ExprPtr> column_zero(const std::vector<ir::ExprPtr>& i) {
    return {ir::binary(ir::BinaryOp::Eq, i.back(), ir::const_int(0))};
}

// The scans' and folds' seed z is usually not the operator's neutral element
// (`scan max 0`), while the lowerings start from the neutral element; these
// index maps fold z into the input instead, so any z costs one operation per
// element. `with_valid` prepends the optional monoid's flag (always true: a
// real element) for user functions; operator sections need none.
using SeedStep = std::function<std::vector<ir::ExprPtr>(ir::KernelBuilder&, const std::vector<ir::ExprPtr>& z,
                                                        const std::vector<ir::ExprPtr>& x)>;

ir::PullTuple seed_input_tuple(const std::vector<PullArray>& xs, bool with_valid) {
    ir::PullTuple t{xs[0].shape, {}, nullptr};
    if (with_valid) t.elems.push_back(ir::ScalarType::Bool);
    for (const PullArray& x : xs) t.elems.push_back(x.elem);
    return t;
}

// x, except at the starts (`is_start`: each row's first element, or a
// segment head) where it is step z x.
ir::PullTuple folded_input(FuseContext& fc, SeedStep step, std::shared_ptr<const std::vector<Scalar>> zs,
                           const std::vector<PullArray>& xs,
                           std::function<ir::ExprPtr(ir::KernelBuilder&, const std::vector<ir::ExprPtr>&)> is_start,
                           bool with_valid) {
    ir::PullTuple t = seed_input_tuple(xs, with_valid);
    t.at = [&fc, step, zs, xs, is_start, with_valid](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
        std::vector<ir::ExprPtr> vals = variables(kb, element_at(kb, xs, i));
        assign_if(kb, kb.bind("start", is_start(kb, i)), vals, [&] { return step(kb, lift_all(fc, kb, *zs), vals); });
        if (with_valid) vals.insert(vals.begin(), ir::const_bool(true));
        return vals;
    };
    return t;
}

// The input of an exclusive scan from z: each row shifted right by one with z
// in front, so that its inclusive scan is the exclusive scan. An If, not a
// Select: column -1 must never be read (an index map there may raise an error).
ir::PullTuple shifted_input(FuseContext& fc, std::shared_ptr<const std::vector<Scalar>> zs,
                            const std::vector<PullArray>& xs, bool with_valid) {
    ir::PullTuple t = seed_input_tuple(xs, with_valid);
    t.at = [&fc, zs, xs, with_valid](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
        std::vector<ir::ExprPtr> vals = variables(kb, lift_all(fc, kb, *zs));
        std::vector<ir::ExprPtr> prev = i;
        prev.back() = ir::binary(ir::BinaryOp::Sub, i.back(), ir::const_int(1));
        assign_if(kb, ir::binary(ir::BinaryOp::Gt, i.back(), ir::const_int(0)), vals,
                  [&] { return element_at(kb, xs, prev); });
        if (with_valid) vals.insert(vals.begin(), ir::const_bool(true));
        return vals;
    };
    return t;
}

// Element k of the row-major flat index of multi-index i in shape.
ir::ExprPtr linear_index(ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i, const std::vector<ir::ExprPtr>& shape) {
    ir::ExprPtr flat = ir::const_int(0);
    for (size_t k = 0; k < i.size(); ++k)
        flat = ir::binary(ir::BinaryOp::Add, ir::binary(ir::BinaryOp::Mul, flat, use(kb, shape[k])), i[k]);
    return kb.bind("flat", flat);
}

// Philox-4x32-10 in kernel code, bit for bit lang/random.cpp: element i of
// the stream is random_uniform(seed, stream, i).
ir::ExprPtr philox_uniform(ir::KernelBuilder& kb, const ir::ExprPtr& seed, const ir::ExprPtr& stream,
                           const ir::ExprPtr& index) {
    using ir::BinaryOp;
    const ir::ScalarType u32 = ir::ScalarType::U32, u64 = ir::ScalarType::U64;
    auto word = [&](const ir::ExprPtr& x, int shift) {  // bits [shift, shift + 32) of a 64-bit value
        const ir::ExprPtr w = ir::cast(u64, x);
        return kb.bind("w", ir::cast(u32, shift ? ir::binary(BinaryOp::Shr, w, ir::const_int(shift, u64)) : w));
    };
    std::vector<ir::ExprPtr> c = {word(index, 0), word(index, 32), word(stream, 0), word(stream, 32)};
    std::vector<ir::ExprPtr> k = {word(seed, 0), word(seed, 32)};
    auto mulhilo = [&](uint32_t m, const ir::ExprPtr& x) {
        const ir::ExprPtr p = kb.bind("p", ir::binary(BinaryOp::Mul, ir::const_int(m, u64), ir::cast(u64, x)));
        return std::pair{kb.bind("hi", ir::cast(u32, ir::binary(BinaryOp::Shr, p, ir::const_int(32, u64)))),
                         kb.bind("lo", ir::cast(u32, p))};
    };
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {  // the key schedule bumps the key before every round but the first
            k[0] = kb.bind("k", ir::binary(BinaryOp::Add, k[0], ir::const_int(0x9E3779B9, u32)));
            k[1] = kb.bind("k", ir::binary(BinaryOp::Add, k[1], ir::const_int(0xBB67AE85, u32)));
        }
        const auto [hi0, lo0] = mulhilo(0xD2511F53, c[0]);
        const auto [hi1, lo1] = mulhilo(0xCD9E8D57, c[2]);
        c = {kb.bind("c", ir::binary(BinaryOp::Xor, ir::binary(BinaryOp::Xor, hi1, c[1]), k[0])), lo1,
             kb.bind("c", ir::binary(BinaryOp::Xor, ir::binary(BinaryOp::Xor, hi0, c[3]), k[1])), lo0};
    }
    // 24 bits fill a float's mantissa exactly, so the result is < 1 and exact.
    const ir::ExprPtr bits = ir::binary(BinaryOp::Shr, c[0], ir::const_int(8, u32));
    return ir::binary(BinaryOp::Mul, ir::cast(ir::ScalarType::F32, bits), ir::const_float(0x1p-24, ir::ScalarType::F32));
}

}  // namespace

// ---------------------------------------------------------------- producers
std::optional<Value> CpuCompiledBackend::slice(const Value& a, int64_t start, int64_t step, int64_t count) {
    if (!is_like(a)) return std::nullopt;
    const Replay whole = [a, start, step, count] {
        return per_leaf(force(a), [&](const Value& l, size_t) {
            return Value(ops::index_array(*l.array(), {ops::AxisSelect{false, start, step, count}}));
        });
    };
    return per_leaf(a, [&](const Value& leaf, size_t k) {
        auto pull = [leaf, start, step, count](FuseContext& fc) {
            const PullArray src = pull_of(leaf, fc);
            PullArray out{{fc.extent(count)}, src.elem, nullptr};
            const ir::ExprPtr lo = fc.extent(start), st = fc.extent(step);
            out.at = [src, lo, st](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
                return src.at(kb, {ir::binary(ir::BinaryOp::Add, use(kb, lo),
                                              ir::binary(ir::BinaryOp::Mul, i[0], use(kb, st)))});
            };
            return out;
        };
        return node(elem_of(leaf), {count}, pull, leaf_replay(whole, k), last_ctx_, {leaf});
    });
}

// map/zipWith/zipWith3: the function compiled into the element code; its
// arguments may be arrays of tuples. A function returning a tuple gives a
// tuple of nodes computed by one kernel with an output per leaf.
std::optional<Value> CpuCompiledBackend::map_node(const std::string& name, const Type& type,
                                                  const std::vector<Value>& a, const EvalContext& ctx,
                                                  const Loc& loc) {
    const Type r = result_of(type, static_cast<int>(a.size()));
    std::vector<Prim> elems;
    if (!mentions_array(r) || !prim_leaves(r, elems)) return std::nullopt;
    for (size_t k = 1; k < a.size(); ++k)
        if (!is_like(a[k])) return std::nullopt;
    for (size_t k = 2; k < a.size(); ++k) ops::require_same_shape(like_shape(a[1]), like_shape(a[k]), name.c_str(), loc);
    std::vector<Type> types;
    for (size_t k = 1; k < a.size(); ++k) types.push_back(elem_type(a[k]));
    auto pull = [a, elems, types](FuseContext& fc) {
        std::vector<PullArray> srcs;
        for (size_t k = 1; k < a.size(); ++k)
            for (const PullArray& p : pulls_of(a[k], fc)) srcs.push_back(p);
        ir::PullTuple out{srcs[0].shape, scalar_types(elems), nullptr};
        out.at = [srcs, fn = a[0], types, &fc](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
            return compiled::compile_call(fc, kb, fn, element_at(kb, srcs, i), types);
        };
        return out;
    };
    const std::vector<Value> operands(a.begin() + 1, a.end());
    const std::vector<Value> members =
        tuple_nodes(elems, like_shape(a[1]), pull, make_replay(name, type, a, ctx, loc), ctx, operands);
    size_t at = 0;
    return rebuild_type(r, members, at);
}

// Index maps (reverse, gather, take, drop, reshape, flatten): fused pull
// arrays, one node per leaf of an array of tuples.
std::optional<Value> CpuCompiledBackend::index_map(const std::string& name, const Type& type,
                                                   const std::vector<Value>& a, const EvalContext& ctx,
                                                   const Loc& loc) {
    static const std::set<std::string> names = {"reverse", "flatten", "gather", "take", "drop", "reshape"};
    if (!names.count(name)) return std::nullopt;
    const bool unary = name == "reverse" || name == "flatten";
    const Value& src = a[unary ? 0 : 1];
    if (!is_like(src)) return std::nullopt;
    Shape s = like_shape(src);
    std::function<PullArray(FuseContext&, const PullArray&)> map;
    if (name == "reverse") {
        map = [](FuseContext&, const PullArray& x) { return ir::reverse_array(x); };
    } else if (name == "gather") {
        if (!is_operand(a[0]) || shape_of(a[0]).size() != 1) return std::nullopt;
        s[0] = shape_of(a[0])[0];
        map = [idx = a[0], loc](FuseContext& fc, const PullArray& x) {
            return ir::gather_array(pull_of(idx, fc), x, loc);
        };
    } else if (name == "take" || name == "drop") {
        if (!a[0].is_scalar()) return std::nullopt;
        const int64_t n = a[0].scalar().as_long();
        const int64_t kept = std::clamp<int64_t>(n, 0, s[0]);
        s[0] = name == "take" ? kept : s[0] - kept;
        // n itself is the parameter (the index map clamps it), so the kernel
        // does not depend on its value.
        map = [take = name == "take", n](FuseContext& fc, const PullArray& x) {
            return take ? ir::take_array(x, fc.extent(n)) : ir::drop_array(x, fc.extent(n));
        };
    } else if (name == "reshape" || name == "flatten") {
        Shape to = {shape_size(s)};
        if (name == "reshape") {
            const std::optional<Shape> target = shape_arg(a[0]);
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
        auto pull = [leaf, map](FuseContext& fc) { return map(fc, pull_of(leaf, fc)); };
        operands[0] = leaf;
        return node(elem_of(leaf), s, pull, leaf_replay(whole, k), ctx, operands);
    });
}

// random shape: Philox in the kernel, the stream number taken now (as the
// reference evaluator takes it), so the numbers equal the reference's.
std::optional<Value> CpuCompiledBackend::random(const Value& shape, EvalContext& ctx) {
    const std::optional<Shape> s = shape_arg(shape);
    if (!s || s->empty()) return std::nullopt;
    check_array_size(Prim::Float, *s);
    const uint64_t seed = ctx.seed, stream = ctx.random_stream++;
    Replay replay = [s = *s, seed, stream] {
        auto out = std::make_shared<Array>(Prim::Float, s);
        float* x = out->data<float>();
        for (int64_t i = 0, n = out->size(); i < n; ++i) x[i] = random_uniform(seed, stream, static_cast<uint64_t>(i));
        return Value(std::move(out));
    };
    auto keep = std::make_shared<const std::vector<Scalar>>(
        std::vector<Scalar>{Scalar::of_long(static_cast<int64_t>(seed)), Scalar::of_long(static_cast<int64_t>(stream))});
    auto pull = [s = *s, keep](FuseContext& fc) {
        PullArray out{extents(fc, s), ir::ScalarType::F32, nullptr};
        out.at = [&fc, keep, shape = out.shape](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
            const std::vector<ir::ExprPtr> key = lift_all(fc, kb, *keep);
            return philox_uniform(kb, key[0], key[1], linear_index(kb, i, shape));
        };
        return out;
    };
    EvalContext reference = ctx;
    reference.backend = nullptr;
    return node(Prim::Float, *s, pull, replay, reference, {});
}

std::optional<Value> CpuCompiledBackend::producer(const std::string& name, const Type& type,
                                                  std::span<const Value> args, const EvalContext& ctx,
                                                  const Loc& loc) {
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
                return compiled::emit_builtin(kb, name, xs);
            };
            return out;
        };
        return node(*result, shape_of(arr), pull, make_replay(name, type, args, ctx, loc), ctx, a);
    }
    if (name == "map" || name == "zipWith" || name == "zipWith3") return map_node(name, type, a, ctx, loc);
    if (name == "iota") {
        const std::optional<Shape> s = shape_arg(a[0]);
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
        const std::optional<Shape> s = shape_arg(a[0]);
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
        const std::optional<Shape> s = shape_arg(a[0]);
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

// ---------------------------------------------------------------- consumers
// A function that does not compile declines (counted by reason): the
// builtin is then the reference evaluator's.
std::optional<Value> CpuCompiledBackend::consumer(const std::string& name, std::span<const Value> args,
                                                  EvalContext& ctx) {
    try {
        return lower_consumer(name, args, ctx);
    } catch (const Decline& d) {
        ++stats.declines[d.why];
        return std::nullopt;
    }
}

std::optional<Value> CpuCompiledBackend::lower_consumer(const std::string& name, std::span<const Value> args,
                                                        EvalContext& ctx) {
    if (name == "sort" || name == "sortByKey") return sort(name == "sortByKey", args, ctx);
    if (name == "scan" || name == "scanExclusive" || name == "segscan") return scan(name, args, ctx);
    if (name == "++" || name == "interleave" || name == "transpose") return push(name, args, ctx);
    if (name == "filter") return filter(args, ctx);
    if (name == "permute") return permute(args, ctx);
    if (name == "scatter") return scatter(args, ctx);
    if (name == "count") return count(args[0], args[1], ctx);
    if (name == "argmax" || name == "argmin") return arg_extreme(name == "argmax", args[0], ctx);
    if (name == "reduce") {
        if (operator_arg(args[0]) && args[1].is_scalar() && is_operand(args[2]))
            return known_reduce(name, args, ctx);
        return general_reduce(args[0], args[1], args[2], ctx);
    }
    if (name == "sum" || name == "product" || name == "maximum" || name == "minimum" || name == "all" || name == "any")
        return known_reduce(name, args, ctx);
    return std::nullopt;
}

// sum/product/maximum/minimum/all/any and `reduce` with an operator section,
// along the innermost axis of a rank-1 or rank-2 array: one reduce plan with
// every producer fused in.
std::optional<Value> CpuCompiledBackend::known_reduce(const std::string& name, std::span<const Value> args,
                                                      EvalContext& ctx) {
    const bool is_reduce = name == "reduce";
    const std::optional<ir::AssocOp> op = is_reduce ? operator_arg(args[0]) : reduction_op(name);
    const Value& xs = is_reduce ? args[2] : args[0];
    if (!op || !is_operand(xs)) return std::nullopt;
    const Shape s = shape_of(xs);
    if (s.size() != 1 && s.size() != 2) return std::nullopt;
    const Prim elem = elem_of(xs);
    FuseContext fc(ctx);
    PlanResult r = run(name, fc, [&](ir::PlanBuilder& pb) {
        ir::lower_reduce(pb, name, pull_of(xs, fc), ir::known_combine(*op, ir::scalar_of(elem)), "out");
    });
    const HostBuffer& out = r.outputs.at("out");
    Value v = s.size() == 1 ? Value(scalar_from(out, elem, 0)) : Value(array_from(out, elem, {s[0]}));
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
std::optional<Value> CpuCompiledBackend::general_reduce(const Value& f, const Value& z, const Value& xs,
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
    PlanResult r = run("reduce", fc, [&](ir::PlanBuilder& pb) {
        const UserOp op{&fc, f, et};
        const ir::PullTuple src = folded_input(
            fc, op, zkeep, pulls_of(xs, fc),
            [](ir::KernelBuilder&, const std::vector<ir::ExprPtr>& i) { return column_zero(i)[0]; }, true);
        ir::lower_reduce(pb, "reduce", src, optional_combine(op, scalar_types(prims)), outs);
    });
    const HostBuffer& valid = r.outputs.at("valid");
    const int64_t rows = s.size() == 1 ? 1 : s[0];
    std::vector<Value> results;
    for (size_t k = 0; k < prims.size(); ++k) {
        const HostBuffer& out = r.outputs.at(outs[k + 1]);
        if (s.size() == 1) {
            results.emplace_back(valid.bytes[0] != std::byte{0} ? scalar_from(out, prims[k], 0) : zs[k]);
            continue;
        }
        ArrayPtr a = array_from(out, prims[k], {rows});
        for (int64_t row = 0; row < rows; ++row)
            if (valid.bytes[row] == std::byte{0}) a->set(row, zs[k]);  // an empty row folds to z
        results.emplace_back(a);
    }
    return rebuild(z, results);
}

// count p xs: the predicate compiled into a sum of 0/1 ints (wrapping as the
// reference's int counter does).
std::optional<Value> CpuCompiledBackend::count(const Value& p, const Value& xs, EvalContext& ctx) {
    if (!p.is_function() || !is_like(xs)) return std::nullopt;
    const Shape s = like_shape(xs);
    if (s.size() != 1 && s.size() != 2) return std::nullopt;
    const Type et = elem_type(xs);
    FuseContext fc(ctx);
    PlanResult r = run("count", fc, [&](ir::PlanBuilder& pb) {
        const std::vector<PullArray> x = pulls_of(xs, fc);
        PullArray ones{x[0].shape, ir::ScalarType::I32, nullptr};
        ones.at = [&fc, x, p, et](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
            const ir::ExprPtr keep = compiled::compile_call(fc, kb, p, element_at(kb, x, i), {et}).at(0);
            return ir::select(keep, ir::const_int(1, ir::ScalarType::I32), ir::const_int(0, ir::ScalarType::I32));
        };
        ir::lower_reduce(pb, "count", ones, ir::known_combine(ir::AssocOp::Add, ir::ScalarType::I32), "out");
    });
    const HostBuffer& out = r.outputs.at("out");
    return s.size() == 1 ? Value(scalar_from(out, Prim::Int, 0)) : Value(array_from(out, Prim::Int, {s[0]}));
}

// argmax/argmin: a reduction of (value, index) pairs. NaN is never better
// (as in the reference), and among equals the smaller index wins, which
// makes the operator commutative as well as associative.
std::optional<Value> CpuCompiledBackend::arg_extreme(bool largest, const Value& xs, EvalContext& ctx) {
    if (!is_operand(xs)) return std::nullopt;
    const Shape s = shape_of(xs);
    if ((s.size() != 1 && s.size() != 2) || s.back() == 0) return std::nullopt;  // the reference raises "empty"
    const ir::ScalarType t = ir::scalar_of(elem_of(xs));
    using ir::BinaryOp;
    ir::Combine op;
    op.types = {t, ir::ScalarType::I64};
    ir::ExprPtr worst = is_float(t)               ? ir::const_float(std::nan(""), t)
                        : t == ir::ScalarType::Bool ? ir::const_bool(!largest)
                                                    : ir::neutral_of(largest ? ir::AssocOp::Max : ir::AssocOp::Min, t);
    op.neutral = {worst, ir::const_int(std::numeric_limits<int64_t>::max())};
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
    PlanResult r = run(largest ? "argmax" : "argmin", fc, [&](ir::PlanBuilder& pb) {
        const PullArray x = pull_of(xs, fc);
        ir::PullTuple src{x.shape, {t, ir::ScalarType::I64}, nullptr};
        src.at = [x](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
            return std::vector<ir::ExprPtr>{x.at(kb, i), ir::cast(ir::ScalarType::I64, i.back())};
        };
        ir::lower_reduce(pb, largest ? "argmax" : "argmin", src, op, {"best", "index"});
    });
    const HostBuffer& idx = r.outputs.at("index");
    const int64_t rows = s.size() == 1 ? 1 : s[0];
    auto out = std::make_shared<Array>(Prim::Int, Shape{rows});
    for (int64_t row = 0; row < rows; ++row)
        out->set(row, Scalar::of_int(static_cast<int32_t>(scalar_from(idx, Prim::Long, row).l)));
    return s.size() == 1 ? Value(out->get(0)) : Value(out);
}

// scan/scanExclusive (rank 1 or 2, per row) and segscan (rank 1): one scan
// plan with the producers fused in. An operator section on one array takes
// the direct path; any other function (or an array of tuples) the optional
// monoid over it.
std::optional<Value> CpuCompiledBackend::scan(const std::string& name, std::span<const Value> args,
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
    const std::optional<ir::AssocOp> known = prims.size() == 1 ? operator_arg(f) : std::nullopt;
    auto zkeep = std::make_shared<const std::vector<Scalar>>(zs);
    const Type et = elem_type(xs);
    FuseContext fc(ctx);
    const std::vector<std::string> outs = leaf_buffers("out", prims.size(), false);
    InPlaceOutputs results;
    const std::vector<Value> arrays = results.add_all(outs, prims, s);
    run(name, fc, [&](ir::PlanBuilder& pb) {
        const std::vector<PullArray> x = pulls_of(xs, fc);
        std::optional<PullArray> flags;
        if (segmented) flags = pull_of(args[2], fc);
        auto starts = [flags](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
            const ir::ExprPtr first = column_zero(i)[0];
            return flags ? ir::binary(ir::BinaryOp::Or, flags->at(kb, i), first) : first;
        };
        if (known) {  // the direct path: z folded into the input with the operator
            const ir::AssocOp a = *known;
            const SeedStep step = [a](ir::KernelBuilder&, const std::vector<ir::ExprPtr>& z,
                                      const std::vector<ir::ExprPtr>& v) {
                return std::vector<ir::ExprPtr>{ir::apply_op(a, z[0], v[0])};
            };
            const ir::PullTuple src = name == "scanExclusive" ? shifted_input(fc, zkeep, x, false)
                                                              : folded_input(fc, step, zkeep, x, starts, false);
            ir::lower_scan(pb, name, src, flags ? &*flags : nullptr, ir::known_combine(a, ir::scalar_of(prims[0])),
                           ir::ScanKind::Inclusive, outs);
            return;
        }
        const UserOp op{&fc, f, et};
        const ir::PullTuple src = name == "scanExclusive" ? shifted_input(fc, zkeep, x, true)
                                                          : folded_input(fc, op, zkeep, x, starts, true);
        std::vector<std::string> all = outs;
        all.insert(all.begin(), "valid");
        ir::lower_scan(pb, name, src, flags ? &*flags : nullptr, optional_combine(op, scalar_types(prims)),
                       ir::ScanKind::Inclusive, all);
    }, results.into);
    return rebuild(args[1], arrays);
}

// ++, interleave (push arrays: each thread writes into both parts) and
// transpose (shared-memory tiles) are not index maps of one source, so they
// run at once as their own plan (one kernel per leaf of an array of tuples),
// with their producers fused in. Mismatched shapes decline: the reference
// evaluator raises the error.
std::optional<Value> CpuCompiledBackend::push(const std::string& name, std::span<const Value> args,
                                              EvalContext& ctx) {
    for (const Value& v : args)
        if (!is_like(v)) return std::nullopt;
    Shape s = like_shape(args[0]);
    if (name == "transpose") {
        if (s.size() != 2) return std::nullopt;
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
    InPlaceOutputs results;
    const std::vector<Value> arrays = results.add_all(outs, prims_of(args[0]), s);
    run(name, fc, [&](ir::PlanBuilder& pb) {
        const std::vector<PullArray> a = pulls_of(args[0], fc);
        std::vector<PullArray> b;
        if (name != "transpose") b = pulls_of(args[1], fc);
        for (size_t k = 0; k < a.size(); ++k) {
            const std::string kernel = pb.fresh(name == "++" ? "concat" : name);
            if (name == "transpose")
                ir::lower_transpose(pb, kernel, a[k], outs[k]);
            else if (name == "++")
                ir::lower_concat(pb, kernel, a[k], b[k], outs[k]);
            else
                ir::lower_interleave(pb, kernel, a[k], b[k], outs[k]);
        }
    }, results.into);
    return rebuild(args[0], arrays);
}

// filter p xs (rank 1, arrays of tuples too): the predicate compiled into the
// flags of a flags -> scan -> scatter plan; the kept count is read back and
// sizes the result.
std::optional<Value> CpuCompiledBackend::filter(std::span<const Value> args, EvalContext& ctx) {
    const Value& xs = args[1];
    if (!args[0].is_function() || !is_like(xs) || like_shape(xs).size() != 1) return std::nullopt;
    const std::vector<Prim> prims = prims_of(xs);
    const Type et = elem_type(xs);
    FuseContext fc(ctx);
    const std::vector<std::string> outs = leaf_buffers("out", prims.size(), true);
    PlanResult r = run("filter", fc, [&](ir::PlanBuilder& pb) {
        const std::vector<PullArray> x = pulls_of(xs, fc);
        PullArray keep{x[0].shape, ir::ScalarType::Bool, nullptr};
        keep.at = [&fc, x, p = args[0], et](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
            return compiled::compile_call(fc, kb, p, element_at(kb, x, i), {et}).at(0);
        };
        ir::lower_filter(pb, "filter", keep, x, outs, "count");
    });
    const int64_t n = r.scalars.at("count").i;
    std::vector<Value> results;
    for (size_t k = 0; k < prims.size(); ++k) results.emplace_back(array_from(r.outputs.at(outs[k]), prims[k], {n}));
    return rebuild(xs, results);
}

// sort (each innermost row, any rank) and sortByKey (rank-1 keys; values of
// any rank, arrays of tuples too): one radix sort plan with the producers of
// the keys and values fused into its first pass. Mismatched lengths decline:
// the reference raises the error.
std::optional<Value> CpuCompiledBackend::sort(bool by_key, std::span<const Value> args, EvalContext& ctx) {
    const Value& keys = args[0];
    if (!is_operand(keys)) return std::nullopt;
    const Shape ks = shape_of(keys);
    if (by_key && (ks.size() != 1 || !is_like(args[1]) || like_shape(args[1])[0] != ks[0])) return std::nullopt;
    const std::vector<Prim> prims = by_key ? prims_of(args[1]) : std::vector<Prim>{};
    FuseContext fc(ctx);
    InPlaceOutputs results;
    const Value sorted = results.add("keys", elem_of(keys), ks);
    const std::vector<std::string> outs = leaf_buffers("vals", prims.size(), false);
    const std::vector<Value> values = by_key ? results.add_all(outs, prims, like_shape(args[1])) : std::vector<Value>{};
    const char* name = by_key ? "sortByKey" : "sort";
    run(name, fc, [&](ir::PlanBuilder& pb) {
        const std::vector<PullArray> vals = by_key ? pulls_of(args[1], fc) : std::vector<PullArray>{};
        ir::lower_sort(pb, name, pull_of(keys, fc), vals, "keys", outs);
    }, results.into);
    if (!by_key) return sorted;
    return Value(std::vector<Value>{sorted, rebuild(args[1], values)});
}

// permute f dest g vals. With an operator section: atomics (or a CAS loop)
// combine every element into dest[g i], the target function compiled into
// the kernel; integer results are exact, float sums depend on the order.
// With any other function (arrays of tuples too): sorted by target, each
// target folded in source order, exactly as the reference.
std::optional<Value> CpuCompiledBackend::permute(std::span<const Value> args, EvalContext& ctx) {
    const std::optional<ir::AssocOp> op = operator_arg(args[0]);
    const Value &f = args[0], &dest = args[1], &g = args[2], &vals = args[3];
    if (!f.is_function() || !g.is_function() || !is_like(dest) || !is_like(vals) ||
        leaves(dest).size() != leaves(vals).size())
        return std::nullopt;
    const std::vector<Prim> prims = prims_of(dest);
    if (prims != prims_of(vals)) return std::nullopt;
    const bool atomics = op && prims.size() == 1 && prims[0] != Prim::Bool;
    FuseContext fc(ctx);
    // The target of element i (flat, an int as in the reference).
    auto target_of = [&fc, g](const std::vector<ir::ExprPtr>& shape) {
        PullArray target{shape, ir::ScalarType::I64, nullptr};
        target.at = [&fc, g, shape](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
            const ir::ExprPtr flat = ir::cast(ir::ScalarType::I32, linear_index(kb, i, shape));
            return ir::cast(ir::ScalarType::I64, compiled::compile_call(fc, kb, g, {flat}).at(0));
        };
        return target;
    };
    const std::vector<std::string> outs = leaf_buffers("out", prims.size(), true);
    InPlaceOutputs results;
    const std::vector<Value> arrays = results.add_all(outs, prims, like_shape(dest));
    run("permute", fc, [&](ir::PlanBuilder& pb) {
        const std::vector<PullArray> v = pulls_of(vals, fc), d = pulls_of(dest, fc);
        const PullArray target = target_of(v[0].shape);
        if (atomics) {
            ir::lower_permute(pb, "permute", d[0], target, v[0], ir::known_combine(*op, ir::scalar_of(prims[0])), outs[0]);
            return;
        }
        const Type et = elem_type(vals);
        const UserOp combine{&fc, f, et};
        ir::lower_permute_ordered(pb, "permute", ir::tuple_of(d), target, ir::tuple_of(v), combine, outs);
    }, results.into);
    return rebuild(dest, arrays);
}

// scatter dest idx vals (rank 1 or 2, arrays of tuples too): deterministic,
// the last write wins. Mismatched extents decline: the reference raises.
std::optional<Value> CpuCompiledBackend::scatter(std::span<const Value> args, EvalContext& ctx) {
    const Value &dest = args[0], &idx = args[1], &vals = args[2];
    if (!is_like(dest) || !is_operand(idx) || !is_like(vals) || shape_of(idx).size() != 1) return std::nullopt;
    const Shape ds = like_shape(dest), vs = like_shape(vals);
    if (ds.size() > 2 || vs[0] != shape_of(idx)[0] || Shape(ds.begin() + 1, ds.end()) != Shape(vs.begin() + 1, vs.end()) ||
        leaves(dest).size() != leaves(vals).size())
        return std::nullopt;
    const std::vector<Prim> prims = prims_of(dest);
    FuseContext fc(ctx);
    const std::vector<std::string> outs = leaf_buffers("out", prims.size(), true);
    InPlaceOutputs results;
    const std::vector<Value> arrays = results.add_all(outs, prims, ds);
    run("scatter", fc, [&](ir::PlanBuilder& pb) {
        const std::vector<PullArray> d = pulls_of(dest, fc), v = pulls_of(vals, fc);
        const PullArray i = pull_of(idx, fc);
        for (size_t k = 0; k < d.size(); ++k) ir::lower_scatter(pb, pb.fresh("scatter"), d[k], i, v[k], outs[k]);
    }, results.into);
    return rebuild(dest, arrays);
}

// ---------------------------------------------------------------- entry
std::optional<Value> CpuCompiledBackend::apply_builtin(std::string_view name_view, const Type& type,
                                                       std::span<const Value> args, EvalContext& ctx, const Loc& loc) {
    std::optional<Value> r = compile_builtin(std::string(name_view), type, args, ctx, loc);
    if (!r && (std::any_of(args.begin(), args.end(), holds_array) || (type && holds_array_type(type, args.size()))))
        ++stats.reference_builtins[std::string(name_view)];
    return r;
}

std::optional<Value> CpuCompiledBackend::compile_builtin(const std::string& name, const Type& type,
                                                         std::span<const Value> args, EvalContext& ctx,
                                                         const Loc& loc) {
    for (const Value& v : args)
        if (v.is_string()) return std::nullopt;  // file I/O: the reference evaluator's
    // Shapes are known without computing anything.
    if ((name == "length" || name == "rows" || name == "cols" || name == "shape") && is_like(args[0])) {
        const Shape s = like_shape(args[0]);
        auto int_of = [](int64_t n) { return Value(Scalar::of_int(static_cast<int32_t>(n))); };
        if (name == "length") return int_of(s[0]);
        if (name != "shape") return s.size() == 2 ? std::optional(int_of(s[name == "rows" ? 0 : 1])) : std::nullopt;
        if (s.size() == 1) return int_of(s[0]);
        std::vector<Value> t;
        for (int64_t e : s) t.push_back(int_of(e));
        return Value(std::move(t));
    }
    // An array of tuples is a tuple of arrays: zip pairs them, unzip is the identity.
    if ((name == "zip" || name == "zip3") && is_like(Value(std::vector<Value>(args.begin(), args.end()))))
        return Value(std::vector<Value>(args.begin(), args.end()));
    if (name == "unzip" && is_like(args[0])) return args[0];
    // iterate: host control flow; its steps build the graph (bounded by kMaxFusedNodes).
    if (name == "iterate" && args[0].is_scalar() && args[1].is_function()) {
        Value x = args[2];
        for (int64_t k = 0, n = args[0].scalar().as_long(); k < n; ++k) {
            evalimpl::check_cancel(ctx, loc);
            x = evalimpl::apply_value(args[1], std::span<const Value>(&x, 1), ctx, loc);
        }
        return x;
    }
    if (name == "random") return random(args[0], ctx);
    if (std::optional<Value> r = consumer(name, args, ctx)) return r;
    // Nodes keep the context with this backend: functions compiled into
    // them hoist invariant array expressions, computed by this backend too.
    last_ctx_ = ctx;
    return producer(name, type, args, ctx, loc);
}

// ---------------------------------------------------------------- interface
std::shared_ptr<CompiledBackend> make_compiled_backend() { return std::make_shared<CpuCompiledBackend>(); }

const BackendStats& backend_stats(CompiledBackend& b) { return dynamic_cast<CpuCompiledBackend&>(b).stats; }
void reset_backend_stats(CompiledBackend& b) { dynamic_cast<CpuCompiledBackend&>(b).stats = BackendStats{}; }

}  // namespace shoal::cpu
