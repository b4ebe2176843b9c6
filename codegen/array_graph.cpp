// The delayed array graph: nodes, array-likes and replays (array_graph.h).
#include "codegen/array_graph.h"

#include <algorithm>

#include "codegen/engine.h"

namespace shoal::compiled {

namespace {
void leaves_into(const Value& v, std::vector<Value>& out) {
    if (!v.is_tuple()) {
        out.push_back(v);
        return;
    }
    for (const Value& k : v.tuple()) leaves_into(k, out);
}

Value rebuild_from(const Value& like, const std::vector<Value>& ls, size_t& at) {
    if (!like.is_tuple()) return ls.at(at++);
    std::vector<Value> out;
    for (const Value& k : like.tuple()) out.push_back(rebuild_from(k, ls, at));
    return Value(std::move(out));
}

// The weights of v's delayed leaves (tuples walked in place: every node
// asks, and leaves() builds a vector).
int64_t leaf_weights(const Value& v) {
    if (v.is_tuple()) {
        int64_t w = 0;
        for (const Value& x : v.tuple()) w += leaf_weights(x);
        return w;
    }
    return v.is_delayed() ? static_cast<const Node&>(*v.delayed()).weight() : 0;
}

int64_t fusion_weight(const std::vector<Value>& operands, int64_t reads) {
    int64_t w = 0;
    for (const Value& v : operands) w += leaf_weights(v);
    return 1 + reads * w;
}
}  // namespace

void Node::compute() const {
    if (!computed()) backend_->force_group(*group_);
    pull_ = nullptr;
}

void Node::compute_because(const std::string& why) const {
    if (!computed()) backend_->force_group(*group_, why);
    pull_ = nullptr;
}

std::string Node::description() const {
    if (group_->what.empty()) return "";
    const Loc& at = group_->origin;
    return "`" + group_->what + "`" + (at.valid() ? " at " + at.position() : "");
}

ArrayPtr Node::host() const {
    if (!computed() || backend_->step_recording()) return nullptr;
    return group_->forced[component_].host;
}

ArrayPtr Node::force() const {
    if (StepRecording* r = backend_->step_recording()) r->refuse("the step reads an array's elements on the host");
    compute();
    ir::ArrayData& d = group_->forced[component_];
    if (!d.host) d.host = ir::host_array(d, elem(), shape());
    return d.host;
}

// ---------------------------------------------------------------- values
bool is_operand(const Value& v) { return v.is_array() || (v.is_delayed() && dynamic_cast<const Node*>(v.delayed().get())); }

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
std::optional<ProductShape> product_shape(const Value& a, const Value& b) {
    if (!is_operand(a) || !is_operand(b)) return std::nullopt;
    const Shape sa = shape_of(a), sb = shape_of(b);
    if (sa.empty() || sb.empty() || sa.size() > 2 || sb.size() > 2 || sa.back() != sb.front()) return std::nullopt;
    ProductShape p{sa.size() == 2, sb.size() == 2, sa.size() == 2 ? sa[0] : 1, sb.front(), sb.size() == 2 ? sb[1] : 1, {}};
    if (p.a_is_matrix) p.result.push_back(p.n);
    if (p.b_is_matrix) p.result.push_back(p.m);
    return p;
}

const Node* pending_product(const Value& v) {
    const auto* n = v.is_delayed() ? dynamic_cast<const Node*>(v.delayed().get()) : nullptr;
    return n && !n->computed() && n->group().product_of ? n : nullptr;
}

bool in_memory_for_blas(const Value& v) {
    if (v.is_array()) return true;
    const auto* n = v.is_delayed() ? dynamic_cast<const Node*>(v.delayed().get()) : nullptr;
    if (!n) return false;
    if (n->computed() || pending_product(v)) return true;
    const std::optional<Value>& of = n->group().transpose_of;
    return of && in_memory_for_blas(*of);
}

Prim elem_of(const Value& v) { return v.is_array() ? v.array()->elem : v.is_delayed() ? v.delayed()->elem() : v.scalar().type; }

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

// ---------------------------------------------------------------- array-likes

Value rebuild(const Value& like, const std::vector<Value>& ls) {
    size_t at = 0;
    return rebuild_from(like, ls, at);
}

Value rebuild_type(const Type& t, const std::vector<Value>& ls, size_t& at) {
    const Type p = prune(t);
    if (is_array(p)) return rebuild_type(array_elem(p), ls, at);
    if (!is_tuple(p)) return ls.at(at++);
    std::vector<Value> out;
    for (const Type& k : p->args) out.push_back(rebuild_type(k, ls, at));
    return Value(std::move(out));
}

Type elem_type(const Value& v) {
    if (v.is_tuple()) {
        std::vector<Type> ks;
        for (const Value& k : v.tuple()) ks.push_back(elem_type(k));
        return t_tuple(std::move(ks));
    }
    return t_prim(v.is_scalar() ? v.scalar().type : elem_of(v));
}

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

namespace {
const char* kProductWhole = "a product: the BLAS computes it whole (solve, inv and det take it into their own plan)";
}  // namespace

PullArray pull_of(const Value& v, FuseContext& fc) {
    const FuseContext::Input* in = nullptr;
    if (v.is_array()) {
        in = &fc.input(ir::ArrayData{v.array(), nullptr}, v.array()->elem, v.array()->shape, v.array().get());
        fc.note_materialised(in->buffer, "", "");
    } else {
        const Node& n = static_cast<const Node&>(*v.delayed());
        if (pending_product(v)) n.compute_because(kProductWhole);
        if (!n.computed()) {
            if (fc.notes_decisions()) fc.note_fused(n.description());
            if (const PullArray* p = fc.pulled(v.delayed())) return *p;
            return fc.remember_pulled(v.delayed(), n.pull(fc));
        }
        in = &fc.input(n.data(), n.elem(), n.shape(), &n);
        if (fc.notes_decisions()) fc.note_materialised(in->buffer, n.description(), n.group().why_forced);
    }
    return ir::shaped_buffer_array(in->buffer, ir::scalar_of(elem_of(v)), in->extents);
}

namespace {
// Builds the node's element code in a scratch kernel and looks for checks
// (error statements): the code of any element is the code of every element.
bool element_may_raise(const Node& n, const EvalContext& ctx) {
    if (n.group().may_raise) return *n.group().may_raise;
    bool raises = false;
    try {
        FuseContext probe(ctx);
        raises = ir::element_code_checks(n.pull(probe));
    } catch (const Decline&) {
        // The function does not compile: the consumer declines too, and the
        // reference evaluator computes the whole operand.
    }
    if (!n.computed()) n.group().may_raise = raises;
    return raises;
}
}  // namespace

void materialise_if_skipped_may_raise(const Value& v, const EvalContext& ctx, const std::string& reader) {
    const auto* n = v.is_delayed() ? dynamic_cast<const Node*>(v.delayed().get()) : nullptr;
    if (!n || n->computed() || pending_product(v) || shape_size(n->shape()) == 0) return;
    if (element_may_raise(*n, ctx))
        n->compute_because("`" + reader + "` reads only some of its elements, and an element can raise an error: "
                           "materialised so that one it does not read still raises it");
}

PullArray partial_pull_of(const Value& v, FuseContext& fc, const std::string& reader) {
    materialise_if_skipped_may_raise(v, fc.eval_context(), reader);
    return pull_of(v, fc);
}

std::string memory_buffer(const Value& v, FuseContext& fc) {
    if (v.is_array()) return fc.input(ir::ArrayData{v.array(), nullptr}, v.array()->elem, v.array()->shape, v.array().get()).buffer;
    const Node& n = static_cast<const Node&>(*v.delayed());
    if (pending_product(v)) n.compute_because(kProductWhole);
    return n.computed() ? fc.input(n.data(), n.elem(), n.shape(), &n).buffer : "";
}

std::vector<ir::ExprPtr> extents(FuseContext& fc, const Shape& s) {
    std::vector<ir::ExprPtr> out;
    for (int64_t n : s) out.push_back(fc.extent(n));
    return out;
}

ir::ExprPtr use(ir::KernelBuilder& kb, const ir::ExprPtr& p) { return ir::use_params(kb, p); }

Replay make_replay(const std::string& name, const Type& type, std::span<const Value> args, const EvalContext& ctx,
                   const Loc& loc) {
    const evalimpl::BuiltinDef* def = evalimpl::find_builtin(name);
    EvalContext reference = ctx;
    reference.backend = nullptr;
    return [def, type, a = std::vector<Value>(args.begin(), args.end()), loc, ctx = reference]() mutable {
        return force(evalimpl::apply_builtin(*def, type, a, ctx, loc));
    };
}
Replay leaf_replay(Replay whole, size_t k) {
    return [whole = std::move(whole), k] { return leaves(whole()).at(k); };
}

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

AlignedSources aligned_sources(const Value& v) {
    AlignedSources out = {value_identity(v)};
    if (const auto* n = v.is_delayed() ? dynamic_cast<const Node*>(v.delayed().get()) : nullptr)
        for (const void* s : n->group().aligned)
            if (out.size() < kMaxAlignedSources) out.push_back(s);
    return out;
}

// ---------------------------------------------------------------- fusion bound
int64_t bounded_weight(const std::vector<Value>& operands, int64_t reads) {
    int64_t w = fusion_weight(operands, reads);
    if (w <= kMaxFusedNodes) return w;
    for (const Value& v : operands)
        for (const Value& l : leaves(v))
            if (const auto* n = l.is_delayed() ? dynamic_cast<const Node*>(l.delayed().get()) : nullptr)
                n->compute_because("the fusion size bound: fusing it would make a kernel of more than " +
                                   std::to_string(kMaxFusedNodes) + " primitives");
    return 1;
}

}  // namespace shoal::compiled
