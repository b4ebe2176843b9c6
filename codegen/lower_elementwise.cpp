// Elementwise lowering (map, zipWith, generate, a tuple-valued map) and the
// helpers every lowering shares: grid-stride loops, index arithmetic,
// operators and their neutral elements, block-level trees.
#include <algorithm>
#include <cmath>
#include <limits>

#include "codegen/lower_common.h"
#include "codegen/shared_tiles.h"
#include "lang/diagnostics.h"

namespace shoal::ir {

using namespace lowering;

// ---------------------------------------------------------------- operators
ExprPtr neutral_of(AssocOp op, ScalarType t) {
    const bool f = is_float(t);
    switch (op) {
        case AssocOp::Add: return f ? const_float(0, t) : const_int(0, t);
        case AssocOp::Mul: return f ? const_float(1, t) : const_int(1, t);
        case AssocOp::And: return t == ScalarType::Bool ? const_bool(true) : const_int(-1, t);
        case AssocOp::Or: return t == ScalarType::Bool ? const_bool(false) : const_int(0, t);
        case AssocOp::Min:
        case AssocOp::Max: {
            const bool mn = op == AssocOp::Min;  // min's identity is the largest value
            const double inf = std::numeric_limits<double>::infinity();
            switch (t) {
                case ScalarType::F32:
                case ScalarType::F64: return const_float(mn ? inf : -inf, t);
                case ScalarType::I32: return const_int(mn ? INT32_MAX : INT32_MIN, t);
                case ScalarType::I64: return const_int(mn ? INT64_MAX : INT64_MIN, t);
                case ScalarType::U32: return const_int(mn ? UINT32_MAX : 0, t);
                case ScalarType::U64: return const_int(mn ? -1 : 0, t);
                case ScalarType::Bool: return const_bool(mn);
            }
        }
    }
    internal_error(__FILE__, __LINE__, "neutral_of: unknown operator");
}

ExprPtr apply_op(AssocOp op, ExprPtr a, ExprPtr b) {
    switch (op) {
        case AssocOp::Add: return binary(BinaryOp::Add, a, b);
        case AssocOp::Mul: return binary(BinaryOp::Mul, a, b);
        case AssocOp::Min: return binary(BinaryOp::Min, a, b);
        case AssocOp::Max: return binary(BinaryOp::Max, a, b);
        case AssocOp::And: return binary(BinaryOp::And, a, b);
        case AssocOp::Or: return binary(BinaryOp::Or, a, b);
    }
    internal_error(__FILE__, __LINE__, "apply_op: unknown operator");
}

Combine combine_of(ScalarType t, ExprPtr neutral, CombineFn fn, bool commutative) {
    Combine c;
    c.types = {t};
    c.neutral = {std::move(neutral)};
    c.fn = [fn](KernelBuilder& kb, const std::vector<ExprPtr>& a, const std::vector<ExprPtr>& b) {
        return std::vector<ExprPtr>{fn(kb, a[0], b[0])};
    };
    c.commutative = commutative;
    return c;
}

Combine known_combine(AssocOp op, ScalarType t) {
    Combine c = combine_of(t, neutral_of(op, t), [op](KernelBuilder&, ExprPtr a, ExprPtr b) { return apply_op(op, a, b); },
                           true);
    c.known = op;
    return c;
}

Combine segmented(const Combine& c) {
    Combine s;
    s.types.push_back(ScalarType::Bool);
    s.neutral.push_back(const_bool(false));
    for (size_t k = 0; k < c.types.size(); ++k) {
        s.types.push_back(c.types[k]);
        s.neutral.push_back(c.neutral[k]);
    }
    s.fn = [c](KernelBuilder& kb, const std::vector<ExprPtr>& a, const std::vector<ExprPtr>& b) {
        std::vector<ExprPtr> av(a.begin() + 1, a.end()), bv(b.begin() + 1, b.end());
        std::vector<ExprPtr> ab = bind_all(kb, "sg", c.fn(kb, av, bv));
        std::vector<ExprPtr> out = {binary(BinaryOp::Or, a[0], b[0])};
        for (size_t k = 0; k < ab.size(); ++k) out.push_back(select(b[0], bv[k], ab[k]));
        return out;
    };
    return s;  // neither commutative nor known: segments must stay in order
}

// ---------------------------------------------------------------- arrays
// One array: its read alone is kept (every node's group pulls one).
PullTuple tuple_of(const PullArray& a) {
    PullTuple t;
    t.shape = a.shape;
    t.elems = {a.elem};
    t.at = [at = a.at](KernelBuilder& kb, const std::vector<ExprPtr>& index) {
        return std::vector<ExprPtr>{at(kb, index)};
    };
    return t;
}

PullTuple tuple_of(const std::vector<PullArray>& arrays) {
    SHOAL_INTERNAL_ASSERT(!arrays.empty(), "tuple_of: no arrays");
    PullTuple t;
    t.shape = arrays[0].shape;
    for (const auto& a : arrays) t.elems.push_back(a.elem);
    t.at = [arrays](KernelBuilder& kb, const std::vector<ExprPtr>& index) {
        std::vector<ExprPtr> out;
        for (const auto& a : arrays) out.push_back(a.at(kb, index));
        return out;
    };
    return t;
}

ExprPtr element_count(const std::vector<ExprPtr>& shape) { return product(shape); }

ExprPtr use_params(KernelBuilder& kb, const ExprPtr& e) {
    if (e->kind == ExprKind::Param) kb.scalar_param(e->name, e->type);
    for (const auto& a : e->args) use_params(kb, a);
    return e;
}

// Row-major linear index of a multi-index.
static ExprPtr linear_index(const std::vector<ExprPtr>& index, const std::vector<ExprPtr>& shape) {
    ExprPtr lin = index[0];
    for (size_t k = 1; k < index.size(); ++k) lin = binary(BinaryOp::Add, binary(BinaryOp::Mul, lin, shape[k]), index[k]);
    return lin;
}

PullArray buffer_array(const std::string& buffer, ScalarType elem, const std::vector<std::string>& extents) {
    std::vector<ExprPtr> shape;
    for (const auto& e : extents) shape.push_back(param(e, ScalarType::I64));
    return shaped_buffer_array(buffer, elem, shape);
}

PullArray shaped_buffer_array(const std::string& buffer, ScalarType elem, const std::vector<ExprPtr>& shape) {
    PullArray a;
    a.elem = elem;
    a.shape = shape;
    a.at = [buffer, elem, shape](KernelBuilder& kb, const std::vector<ExprPtr>& index) {
        kb.buffer_param(buffer, elem, Access::Read);
        for (const auto& s : shape) use_params(kb, s);
        const ExprPtr flat = kb.flat_of(index, shape);
        return load(buffer, flat ? flat : linear_index(index, shape), elem);
    };
    return a;
}

namespace lowering {

// ---------------------------------------------------------------- thread geometry
ExprPtr tid64() { return cast(ScalarType::I64, thread_idx()); }
ExprPtr i32(int64_t v) { return const_int(v, ScalarType::I32); }
ExprPtr widen(ExprPtr e) { return cast(ScalarType::I64, std::move(e)); }
ExprPtr global_thread() {
    return binary(BinaryOp::Add, binary(BinaryOp::Mul, block_idx(), cast(ScalarType::I64, block_dim())), tid64());
}
ExprPtr grid_threads() { return binary(BinaryOp::Mul, grid_dim(), cast(ScalarType::I64, block_dim())); }

std::optional<int64_t> known_value(const ExprPtr& e, const LoweringFacts& facts) {
    if (!e) return 0;
    bool known = true;
    const int64_t v = eval_host_int(e, [&](const std::string& name) {
        HostValue h;
        if (auto x = facts.value(name)) h.i = *x;
        else known = false;
        return h;
    });
    return known ? std::optional<int64_t>(v) : std::nullopt;
}

std::optional<int64_t> known_value(const ExprPtr& e, const LoweringOptions& opt) {
    if (!opt.facts || !opt.facts->value) return std::nullopt;
    return known_value(e, *opt.facts);
}

ExprPtr capped_grid(ExprPtr n, int64_t per_block, int64_t max_blocks) {
    if (per_block == 1) return min_expr(std::move(n), i64(max_blocks));
    return min_expr(ceil_div(std::move(n), i64(per_block)), i64(max_blocks));
}

void thread_loop(KernelBuilder& kb, const std::string& prefix, ExprPtr lo, ExprPtr hi, ExprPtr step,
                 const std::function<void(ExprPtr v)>& body) {
    std::string v = kb.fresh(prefix);
    kb.open();
    body(var(v, lo->type));
    kb.emit(for_loop(v, lo, hi, step, kb.close()));
}

void grid_stride_loop(KernelBuilder& kb, ExprPtr n, const std::function<void(ExprPtr i)>& body) {
    thread_loop(kb, "gid", global_thread(), use_params(kb, n), grid_threads(), body);
}

void emit_if(KernelBuilder& kb, ExprPtr cond, const std::function<void()>& then, const std::function<void()>& otherwise) {
    kb.open();
    then();
    auto then_body = kb.close();
    std::vector<StmtPtr> else_body;
    if (otherwise) {
        kb.open();
        otherwise();
        else_body = kb.close();
    }
    kb.emit(if_then(std::move(cond), std::move(then_body), std::move(else_body)));
}

std::vector<ExprPtr> unflatten(KernelBuilder& kb, ExprPtr i, const std::vector<ExprPtr>& shape) {
    std::vector<ExprPtr> index(shape.size());
    if (shape.empty()) return index;
    ExprPtr rest = i;
    for (size_t k = shape.size() - 1; k > 0; --k) {
        ExprPtr extent = use_params(kb, shape[k]);
        index[k] = kb.bind("col", binary(BinaryOp::Mod, rest, extent));
        rest = kb.bind("rest", binary(BinaryOp::Div, rest, extent));
    }
    index[0] = rest;
    // Only a variable or parameter stands for the position later (an
    // expression would be evaluated again where it is read).
    if (i->kind == ExprKind::Var || i->kind == ExprKind::Param) kb.note_unflattened(index, shape, i);
    return index;
}

std::vector<ExprPtr> flat_at(KernelBuilder& kb, const PullTuple& src, ExprPtr i) {
    return src.at(kb, unflatten(kb, std::move(i), src.shape));
}

std::vector<ExprPtr> bind_all(KernelBuilder& kb, const std::string& prefix, const std::vector<ExprPtr>& values) {
    std::vector<ExprPtr> out;
    for (const auto& v : values)
        out.push_back(v->kind == ExprKind::Var || v->kind == ExprKind::Const ? v : kb.bind(prefix, v));
    return out;
}

std::vector<ExprPtr> declare_vars(KernelBuilder& kb, const std::string& prefix, const std::vector<ExprPtr>& values) {
    std::vector<ExprPtr> out;
    for (const auto& v : values) out.push_back(kb.bind(prefix, v));
    return out;
}

void assign_all(KernelBuilder& kb, const std::vector<ExprPtr>& vars, const std::vector<ExprPtr>& values) {
    // Bind first: later assignments must not see earlier ones (a, b = b, a),
    // also where a value is one of the variables assigned.
    std::vector<ExprPtr> vs;
    for (const ExprPtr& v : values) {
        const bool assigned = v->kind == ExprKind::Var &&
                              std::any_of(vars.begin(), vars.end(), [&](const ExprPtr& x) { return x->name == v->name; });
        vs.push_back(v->kind == ExprKind::Const || (v->kind == ExprKind::Var && !assigned) ? v : kb.bind("nv", v));
    }
    for (size_t k = 0; k < vars.size(); ++k) kb.emit(assign(vars[k]->name, vs[k]));
}

std::vector<ExprPtr> combine(KernelBuilder& kb, const Combine& op, const std::vector<ExprPtr>& a,
                             const std::vector<ExprPtr>& b) {
    return op.fn(kb, bind_all(kb, "lhs", a), bind_all(kb, "rhs", b));
}

std::vector<std::string> shared_arrays(KernelBuilder& kb, const std::string& name, const std::vector<ScalarType>& types,
                                       int64_t size) {
    std::vector<std::string> out;
    for (size_t k = 0; k < types.size(); ++k)
        out.push_back(kb.shared_array(types.size() == 1 ? name : name + std::to_string(k), types[k], size));
    return out;
}

std::vector<ExprPtr> load_all(const std::vector<std::string>& mems, const std::vector<ScalarType>& types, ExprPtr index,
                              MemSpace space) {
    std::vector<ExprPtr> out;
    for (size_t k = 0; k < mems.size(); ++k) out.push_back(load(mems[k], index, types[k], space));
    return out;
}

void store_all(KernelBuilder& kb, const std::vector<std::string>& mems, ExprPtr index, const std::vector<ExprPtr>& values,
               MemSpace space) {
    for (size_t k = 0; k < mems.size(); ++k) kb.emit(store(mems[k], index, values[k], space));
}

void add_launch(PlanBuilder& pb, KernelBuilder& kb, ExprPtr grid, const std::string& comment) {
    int k = pb.add_kernel(kb.finish(/*verify=*/false));
    pb.launch(k, std::move(grid), comment);
}

void block_tree_reduce(KernelBuilder& kb, const Combine& op, const std::vector<std::string>& tree,
                       const std::vector<ExprPtr>& values, bool ordered) {
    const int bs = kb.kernel().block_size;
    const ExprPtr tid = thread_idx();
    store_all(kb, tree, tid, values, MemSpace::Shared);
    kb.end_phase();
    for (int s = ordered ? 1 : bs / 2; ordered ? s < bs : s >= 1; s = ordered ? s * 2 : s / 2) {
        // ordered: thread t combines the adjacent runs starting at 2st and 2st + s;
        // otherwise thread t < s folds in element t + s (sequential addressing, no bank conflicts).
        ExprPtr active = ordered ? binary(BinaryOp::Lt, tid, i32(bs / (2 * s))) : binary(BinaryOp::Lt, tid, i32(s));
        emit_if(kb, active, [&] {
            ExprPtr left = ordered ? kb.bind("lft", binary(BinaryOp::Mul, tid, i32(2 * s))) : tid;
            ExprPtr right = kb.bind("rgt", binary(BinaryOp::Add, left, i32(s)));
            auto a = load_all(tree, op.types, left, MemSpace::Shared);
            auto b = load_all(tree, op.types, right, MemSpace::Shared);
            store_all(kb, tree, left, bind_all(kb, "tv", combine(kb, op, a, b)), MemSpace::Shared);
        });
        kb.end_phase();
    }
}

}  // namespace lowering

// ---------------------------------------------------------------- map
void lower_map(PlanBuilder& pb, const std::string& name, const PullTuple& src, const std::vector<std::string>& outs,
               const LoweringOptions& opt) {
    SHOAL_INTERNAL_ASSERT(outs.size() == src.elems.size(), "lower_map: one output per component");
    const ExprPtr n = element_count(src.shape);
    for (size_t k = 0; k < outs.size(); ++k) pb.output_buffer(outs[k], src.elems[k], n);

    KernelBuilder kb(name, opt.block_size);
    for (size_t k = 0; k < outs.size(); ++k) kb.buffer_param(outs[k], src.elems[k], Access::Write);
    use_params(kb, n);
    // The element code is built once, then placed: in shared tiles when it
    // reads an array at overlapping offsets, else in a grid-stride loop.
    MapBody map{kb.fresh("gid"), {}, src.shape, n, {}};
    const ExprPtr gid = var(map.gid, ScalarType::I64);
    kb.open();
    map.index = unflatten(kb, gid, src.shape);
    std::vector<StmtPtr> index_lets = kb.close();
    kb.open();
    std::vector<ExprPtr> v = src.at(kb, map.index);
    for (size_t k = 0; k < outs.size(); ++k) kb.emit(store(outs[k], gid, v[k]));
    map.body = kb.close();
    if (lower_map_shared_tiles(pb, kb, map, opt)) return;
    if (opt.cpu_cores > 0 && src.rank() == 2) {
        // Natively, rows of at least 64 columns go a block per row with the
        // threads along the columns: the row is the same for the whole loop
        // and the columns are consecutive, so there is no 64-bit division per
        // element (unflatten's) and the lanes vectorise. Decided from the
        // extent when the plan is built: the form shows in the kernel text.
        const std::optional<int64_t> cols = known_value(src.shape[1], opt);
        if (cols && *cols >= 64) {
            const ExprPtr rows_p = use_params(kb, src.shape[0]), cols_p = use_params(kb, src.shape[1]);
            const std::string row_name = kb.fresh("row");
            const ExprPtr row = var(row_name, ScalarType::I64);
            kb.block_loop(row_name, block_idx(), rows_p, grid_dim(), [&] {
                const ExprPtr first = kb.bind("first", binary(BinaryOp::Mul, row, cols_p));
                thread_loop(kb, "col", tid64(), cols_p, cast(ScalarType::I64, block_dim()), [&](ExprPtr col) {
                    const ExprPtr at = kb.bind(map.gid, binary(BinaryOp::Add, first, col));
                    const std::vector<ExprPtr> w = src.at(kb, {row, col});
                    for (size_t k = 0; k < outs.size(); ++k) kb.emit(store(outs[k], at, w[k]));
                });
            });
            add_launch(pb, kb, min_expr(src.shape[0], i64(opt.max_blocks)),
                       "map: a block per row, its threads along the columns (CPU)");
            return;
        }
    }
    index_lets.insert(index_lets.end(), map.body.begin(), map.body.end());
    kb.emit(for_loop(map.gid, global_thread(), use_params(kb, n), grid_threads(), std::move(index_lets)));
    add_launch(pb, kb, capped_grid(n, int64_t{opt.block_size} * opt.items_per_thread, opt.max_blocks),
               "map: grid-stride, ~" + std::to_string(opt.items_per_thread) + " elements per thread");
}

}  // namespace shoal::ir
