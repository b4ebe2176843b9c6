// Forward permutations: permute (combining with an operator, or in order with
// any function) and scatter (last write wins), plus filter (flags -> scan ->
// scatter).
//
// permute: the output starts as a copy of dest; every source element is
// combined into its target with an atomic: the native one where CUDA has it
// for the operator and type (atomicAdd on int/unsigned/long long/float/double,
// atomicMin/Max/And/Or on integers), else a compare-and-swap loop (Accelerate
// thesis, section "Permute"). Integer results are exact whatever the order;
// float sums depend on the order of the atomics (within tolerance).
//
// permute with any other function (not known to be associative or to
// commute): the reference folds each target's elements in source order, so
// the elements are stably radix-sorted by target, and one thread per target
// folds its run (found by binary search) into dest[j] sequentially. Exact
// for any function; a target with many elements is a long sequential loop.
//
// scatter: docs/semantics.md says the LAST write wins for duplicate indices.
// Racing plain stores would make the winner arbitrary, so the winner is
// decided first: winner[j] = atomicMax over the source positions k that
// target j; then only the winning k stores its row. Two passes, fully
// deterministic, and the copy of dest is overwritten only where a write wins.
#include "codegen/lower_common.h"
#include "lang/diagnostics.h"

namespace shoal::ir {

using namespace lowering;

namespace {

ExprPtr in_range(ExprPtr j, ExprPtr n) {
    return binary(BinaryOp::And, binary(BinaryOp::Ge, j, i64(0)), binary(BinaryOp::Lt, j, n));
}

// The native atomic for op on t, if CUDA has one.
std::optional<AtomicOp> native_atomic(const Combine& op, ScalarType t) {
    if (!op.known || t == ScalarType::Bool) return std::nullopt;
    const bool integer = !is_float(t);
    switch (*op.known) {
        case AssocOp::Add: return AtomicOp::Add;
        case AssocOp::Min: return integer ? std::optional(AtomicOp::Min) : std::nullopt;
        case AssocOp::Max: return integer ? std::optional(AtomicOp::Max) : std::nullopt;
        case AssocOp::And: return integer ? std::optional(AtomicOp::And) : std::nullopt;
        case AssocOp::Or: return integer ? std::optional(AtomicOp::Or) : std::nullopt;
        case AssocOp::Mul: return std::nullopt;
    }
    return std::nullopt;
}

// mem[j] = op(mem[j], v) atomically with a compare-and-swap loop. The loop
// ends when the CAS saw the value the combination was computed from; for
// floats, NaN == NaN is also success (the CAS compares bits, `==` does not).
void emit_cas_loop(KernelBuilder& kb, const Combine& op, const std::string& mem, ExprPtr j, ExprPtr v, ScalarType t) {
    SHOAL_INTERNAL_ASSERT(t != ScalarType::Bool, "permute: no compare-and-swap on bool in CUDA");
    ExprPtr old = kb.bind("old", load(mem, j, t));
    ExprPtr done = kb.bind("done", const_bool(false));
    kb.open();
    ExprPtr assumed = kb.bind("assumed", old);
    ExprPtr next = kb.bind("next", combine(kb, op, {assumed}, {v})[0]);
    kb.emit(atomic(AtomicOp::CAS, mem, j, next, t, old->name, assumed));
    ExprPtr same = binary(BinaryOp::Eq, old, assumed);
    if (is_float(t))
        same = binary(BinaryOp::Or, same,
                      binary(BinaryOp::And, binary(BinaryOp::Ne, old, old), binary(BinaryOp::Ne, assumed, assumed)));
    kb.emit(assign(done->name, same));
    auto body = kb.close();
    kb.emit(while_loop(unary(UnaryOp::Not, done), std::move(body)));
}

// out = a copy of src (one map kernel).
void copy_into(PlanBuilder& pb, const std::string& name, const PullArray& src, const std::string& out,
               const LoweringOptions& opt) {
    lower_map(pb, name, tuple_of(src), {out}, opt);
}

PullArray constant_array(std::vector<ExprPtr> shape, ExprPtr value) {
    PullArray a;
    a.shape = std::move(shape);
    a.elem = value->type;
    a.at = [value](KernelBuilder&, const std::vector<ExprPtr>&) { return value; };
    return a;
}

}  // namespace

void lower_permute(PlanBuilder& pb, const std::string& name, const PullArray& dest, const PullArray& target,
                   const PullArray& vals, const Combine& op, const std::string& out, const LoweringOptions& opt) {
    SHOAL_INTERNAL_ASSERT(op.types.size() == 1 && op.types[0] == dest.elem && vals.elem == dest.elem,
                          "permute: one component of dest's type");
    const ScalarType t = dest.elem;
    const ExprPtr m = element_count(dest.shape), n = element_count(vals.shape);
    copy_into(pb, name + "_init", dest, out, opt);

    KernelBuilder kb(name, opt.block_size);
    kb.buffer_param(out, t, Access::ReadWrite);
    const PullTuple vt = tuple_of(vals), tt = tuple_of(target);
    const std::optional<AtomicOp> native = native_atomic(op, t);
    grid_stride_loop(kb, n, [&](ExprPtr i) {
        std::vector<ExprPtr> index = unflatten(kb, i, vt.shape);
        ExprPtr j = kb.bind("dst_index", cast(ScalarType::I64, tt.at(kb, index)[0]));
        emit_if(kb, in_range(j, use_params(kb, m)), [&] {
            ExprPtr v = kb.bind("src_val", vt.at(kb, index)[0]);
            if (native) kb.emit(atomic(*native, out, j, v, t));
            else emit_cas_loop(kb, op, out, j, v, t);
        });
    });
    add_launch(pb, kb, capped_grid(n, int64_t{opt.block_size} * opt.items_per_thread, opt.max_blocks),
               native ? "permute: native atomics" : "permute: compare-and-swap loops");
}

namespace {

// The first position p in [0, m) with keys[p] >= key (m if none): a binary
// search over an ascending I32 buffer, as a while loop in the thread.
ExprPtr emit_lower_bound(KernelBuilder& kb, const std::string& keys, ExprPtr m, ExprPtr key) {
    ExprPtr lo = kb.bind("lo", i64(0));
    ExprPtr hi = kb.bind("hi", m);
    kb.open();
    ExprPtr mid = kb.bind("mid", binary(BinaryOp::Add, lo, binary(BinaryOp::Div, binary(BinaryOp::Sub, hi, lo), i64(2))));
    emit_if(kb, binary(BinaryOp::Lt, load(keys, mid, ScalarType::I32), key),
            [&] { kb.emit(assign(lo->name, binary(BinaryOp::Add, mid, i64(1)))); },
            [&] { kb.emit(assign(hi->name, mid)); });
    auto body = kb.close();
    kb.emit(while_loop(binary(BinaryOp::Lt, lo, hi), std::move(body)));
    return lo;
}

}  // namespace

void lower_permute_ordered(PlanBuilder& pb, const std::string& name, const PullTuple& dest, const PullArray& target,
                           const PullTuple& vals, const TupleCombineFn& f, const std::vector<std::string>& outs,
                           const LoweringOptions& opt) {
    SHOAL_INTERNAL_ASSERT(outs.size() == dest.elems.size() && dest.elems == vals.elems,
                          "permute: one output per component of dest, values of dest's type");
    const ExprPtr n = element_count(dest.shape), m = element_count(vals.shape);
    // Sort keys: the target, or n for a dropped element (out of range), as
    // I32 (extents fit an int): a stable sort keeps each target's elements in
    // source order.
    PullArray keys{{m}, ScalarType::I32, nullptr};
    keys.at = [target, vals, n](KernelBuilder& kb, const std::vector<ExprPtr>& i) {
        ExprPtr j = kb.bind("dst_index", cast(ScalarType::I64, target.at(kb, unflatten(kb, i[0], vals.shape))));
        return cast(ScalarType::I32, select(in_range(j, use_params(kb, n)), j, use_params(kb, n)));
    };
    std::vector<PullArray> flat_vals;
    std::vector<std::string> sorted_vals;
    for (size_t c = 0; c < vals.elems.size(); ++c) {
        flat_vals.push_back(PullArray{{m}, vals.elems[c], [vals, c](KernelBuilder& kb, const std::vector<ExprPtr>& i) {
                                          return flat_at(kb, vals, i[0])[c];
                                      }});
        sorted_vals.push_back(pb.fresh(name + "_sorted_vals"));
    }
    const std::string sorted_keys = pb.fresh(name + "_sorted_keys");
    lower_sort(pb, name + "_by_target", keys, flat_vals, sorted_keys, sorted_vals, opt);
    pb.set_role(sorted_keys, BufferRole::Temp);
    for (const auto& v : sorted_vals) pb.set_role(v, BufferRole::Temp);

    KernelBuilder kb(name, opt.block_size);
    for (size_t c = 0; c < outs.size(); ++c) {
        pb.output_buffer(outs[c], dest.elems[c], n);
        kb.buffer_param(outs[c], dest.elems[c], Access::Write);
        kb.buffer_param(sorted_vals[c], vals.elems[c], Access::Read);
    }
    kb.buffer_param(sorted_keys, ScalarType::I32, Access::Read);
    grid_stride_loop(kb, n, [&](ExprPtr j) {
        const std::vector<ExprPtr> acc = declare_vars(kb, "acc", flat_at(kb, dest, j));
        const ExprPtr count = use_params(kb, m);
        const ExprPtr key = kb.bind("key", cast(ScalarType::I32, j));
        const ExprPtr first = kb.bind("first", emit_lower_bound(kb, sorted_keys, count, key));
        const ExprPtr last = emit_lower_bound(kb, sorted_keys, count,
                                              binary(BinaryOp::Add, key, const_int(1, ScalarType::I32)));
        thread_loop(kb, "k", first, last, i64(1), [&](ExprPtr k) {
            assign_all(kb, acc, f(kb, acc, load_all(sorted_vals, vals.elems, k, MemSpace::Global)));
        });
        store_all(kb, outs, j, acc, MemSpace::Global);
    });
    add_launch(pb, kb, capped_grid(n, int64_t{opt.block_size} * opt.items_per_thread, opt.max_blocks),
               "permute: each target folds its elements in source order (sorted by target)");
}

void lower_scatter(PlanBuilder& pb, const std::string& name, const PullArray& dest, const PullArray& idx,
                   const PullArray& vals, const std::string& out, const LoweringOptions& opt) {
    SHOAL_INTERNAL_ASSERT(idx.rank() == 1 && vals.rank() == dest.rank(), "scatter: rows of dest");
    const ExprPtr rows = dest.shape[0];
    const ExprPtr inner = element_count(std::vector<ExprPtr>(dest.shape.begin() + 1, dest.shape.end()));
    const ExprPtr count = idx.shape[0];
    copy_into(pb, name + "_init", dest, out, opt);
    const std::string winner = pb.fresh(name + "_winners");
    copy_into(pb, name + "_clear", constant_array({rows}, i64(-1)), winner, opt);
    pb.set_role(winner, BufferRole::Temp);
    const int64_t per_block = int64_t{opt.block_size} * opt.items_per_thread;
    {  // pass 1: the largest source position targeting each row wins
        KernelBuilder kb(name + "_winner", opt.block_size);
        kb.buffer_param(winner, ScalarType::I64, Access::ReadWrite);
        grid_stride_loop(kb, count, [&](ExprPtr k) {
            ExprPtr j = kb.bind("dst_index", cast(ScalarType::I64, idx.at(kb, {k})));
            emit_if(kb, in_range(j, use_params(kb, rows)),
                    [&] { kb.emit(atomic(AtomicOp::Max, winner, j, k, ScalarType::I64)); });
        });
        add_launch(pb, kb, capped_grid(count, per_block, opt.max_blocks), "scatter pass 1: atomicMax picks the last write");
    }
    {  // pass 2: winners store their rows
        KernelBuilder kb(name, opt.block_size);
        kb.buffer_param(out, dest.elem, Access::Write);
        kb.buffer_param(winner, ScalarType::I64, Access::Read);
        const PullTuple vt = tuple_of(vals);
        const ExprPtr total = binary(BinaryOp::Mul, count, inner);
        grid_stride_loop(kb, total, [&](ExprPtr e) {
            std::vector<ExprPtr> index = unflatten(kb, e, vt.shape);
            ExprPtr k = index[0];
            ExprPtr j = kb.bind("dst_index", cast(ScalarType::I64, idx.at(kb, {k})));
            emit_if(kb, in_range(j, use_params(kb, rows)), [&] {
                emit_if(kb, binary(BinaryOp::Eq, load(winner, j, ScalarType::I64), k), [&] {
                    ExprPtr at = binary(BinaryOp::Sub, binary(BinaryOp::Add, binary(BinaryOp::Mul, j, use_params(kb, inner)), e),
                                        binary(BinaryOp::Mul, k, inner));
                    kb.emit(store(out, at, vt.at(kb, index)[0]));
                });
            });
        });
        add_launch(pb, kb, capped_grid(total, per_block, opt.max_blocks), "scatter pass 2: the winners store");
    }
}

void lower_filter(PlanBuilder& pb, const std::string& name, const PullArray& keep, const std::vector<PullArray>& vals,
                  const std::vector<std::string>& outs, const std::string& count, const LoweringOptions& opt) {
    SHOAL_INTERNAL_ASSERT(keep.rank() == 1 && outs.size() == vals.size(), "filter: rank 1, one output per array");
    const ExprPtr n = keep.shape[0];
    // Flags extended by one zero, so the exclusive scan's last element is the count.
    PullArray flags;
    flags.shape = {binary(BinaryOp::Add, n, i64(1))};
    flags.elem = ScalarType::I64;
    flags.at = [keep, n](KernelBuilder& kb, const std::vector<ExprPtr>& i) {
        ExprPtr f = kb.bind("flag", i64(0));
        emit_if(kb, binary(BinaryOp::Lt, i[0], use_params(kb, n)),
                [&] { kb.emit(assign(f->name, cast(ScalarType::I64, keep.at(kb, i)))); });
        return f;
    };
    const std::string pos = pb.fresh(name + "_pos");
    lower_scan(pb, name + "_pos", flags, known_combine(AssocOp::Add, ScalarType::I64), ScanKind::Exclusive, pos, opt);
    pb.set_role(pos, BufferRole::Temp);
    pb.read_back(count, pos, n, "the number of kept elements sizes the outputs");
    const ExprPtr k = param(count, ScalarType::I64);
    for (size_t c = 0; c < outs.size(); ++c) pb.output_buffer(outs[c], vals[c].elem, k);

    // The predicate is recomputed rather than stored: fused, it costs reading
    // its inputs again, a stored flag array would cost a write and a read.
    KernelBuilder kb(name, opt.block_size);
    for (size_t c = 0; c < outs.size(); ++c) kb.buffer_param(outs[c], vals[c].elem, Access::Write);
    kb.buffer_param(pos, ScalarType::I64, Access::Read);
    grid_stride_loop(kb, n, [&](ExprPtr i) {
        emit_if(kb, keep.at(kb, {i}), [&] {
            ExprPtr at = kb.bind("dst", load(pos, i, ScalarType::I64));
            for (size_t c = 0; c < outs.size(); ++c) kb.emit(store(outs[c], at, vals[c].at(kb, {i})));
        });
    });
    add_launch(pb, kb, capped_grid(n, int64_t{opt.block_size} * opt.items_per_thread, opt.max_blocks),
               "filter: kept elements to their scanned positions");
}

}  // namespace shoal::ir
