// Forward permutations: permute (combining with an operator, or in order with
// any function) and scatter (last write wins), plus filter (flags -> scan ->
// scatter).
//
// permute with an operator on integers: the output starts as a copy of dest;
// every source element is combined into its target with an atomic: the
// native one where CUDA has it (atomicAdd, atomicMin/Max/And/Or), else a
// compare-and-swap loop (Accelerate thesis, section "Permute"). Integer
// results are exact whatever the order.
//
// permute with an operator on floats is DETERMINISTIC (docs/semantics.md):
// the order of float additions would otherwise be the order in which atomics
// happen to land, and the last digits would change from run to run. The
// elements are combined in an order fixed by n alone, on every executor:
//   bins     (up to kBinsWindows windows of bins_per_window targets) block b
//            of a fixed grid takes elements b*64 + t, (b + grid)*64 + t, ...
//            (grid-stride, coalesced); thread t folds its elements in index
//            order into its own column of bins in shared memory (no races);
//            the block then folds each bin over its 64 columns in thread
//            order -> partials[b][target]. More targets than a window holds
//            take one pass over the input per window.
//   combine  out[j] = dest[j] folded with partials[0][j], partials[1][j], ...
//            in block order.
// Folds start from the operator's EXACT identity (-0.0 for +, NaN for the
// NaN-losing min/max), so a block without elements for j changes nothing.
// With more targets than kBinsWindows windows hold, the ordered path below
// (sort by target, fold each target in source order) is cheaper than more
// passes; when the number of targets is not known while lowering (`:emit`),
// the plan holds both and a run-time guard picks one.
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
#include <algorithm>
#include <bit>
#include <cmath>

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

}  // namespace

PullArray constant_array(std::vector<ExprPtr> shape, ExprPtr value) {
    PullArray a;
    a.shape = std::move(shape);
    a.elem = value->type;
    a.at = [value](KernelBuilder&, const std::vector<ExprPtr>&) { return value; };
    return a;
}

namespace {

// The bins kernel's threads per block: each thread has its own column of
// bins in shared memory, so fewer threads leave room for more bins.
constexpr int kBinsBlock = 64;
constexpr int64_t kBinsSharedBytes = 32 * 1024;
// Passes over the input the bins path may take before sorting is cheaper.
constexpr int64_t kBinsWindows = 8;
// Elements per thread the grid aims for (the block partials are read again
// per target, so fewer, fuller blocks keep the combine short).
constexpr int64_t kBinsItemsPerThread = 16;

// Bins a window holds: a row of kBinsBlock + 1 slots per bin (the extra
// slot keeps the per-bin fold across the threads free of bank conflicts).
int64_t bins_per_window(ScalarType t) { return kBinsSharedBytes / ((kBinsBlock + 1) * int64_t(scalar_size(t))); }

// e with op(x, e) == x bit for bit for every x, NaN and -0.0 included.
ExprPtr exact_identity(AssocOp op, ScalarType t) {
    switch (op) {
        case AssocOp::Add: return const_float(-0.0, t);  // +0.0 would turn -0.0 into +0.0
        case AssocOp::Mul: return const_float(1.0, t);
        case AssocOp::Min:
        case AssocOp::Max: return const_float(std::nan(""), t);  // fmin/fmax: NaN loses
        default: break;
    }
    internal_error(__FILE__, __LINE__, "permute: no float identity for a bitwise operator");
}

// partials[b * m + j] = block b's fold of its elements with target j (see
// the file comment), then out[j] = dest[j] folded with every block's partial.
// `targets`: m when the lowering knows it.
void permute_by_bins(PlanBuilder& pb, const std::string& name, const PullArray& dest, const PullArray& target,
                     const PullArray& vals, AssocOp op, const std::string& out, std::optional<int64_t> targets,
                     const LoweringOptions& opt) {
    const ScalarType t = dest.elem;
    const ExprPtr m = element_count(dest.shape), n = element_count(vals.shape);
    const ExprPtr blocks = param(pb.derived(pb.fresh(name + "_blocks"),
                                            capped_grid(n, kBinsBlock * kBinsItemsPerThread, opt.max_blocks)),
                                 ScalarType::I64);
    const std::string partials = pb.temp_buffer(pb.fresh(name + "_partials"), t, binary(BinaryOp::Mul, blocks, m));
    const ExprPtr identity = exact_identity(op, t);
    // A window as wide as the targets (rounded up to a power of two, so a few
    // kernels serve every size) when they are known: less shared memory, more
    // blocks per multiprocessor.
    int64_t window = bins_per_window(t);
    if (targets && *targets < window) window = std::max<int64_t>(1, std::bit_ceil(static_cast<uint64_t>(*targets)));
    const int64_t row = kBinsBlock + 1;
    {
        KernelBuilder kb(name + "_bins", kBinsBlock);
        kb.buffer_param(partials, t, Access::Write);
        const std::string bins = kb.shared_array("bins", t, window * row);
        const PullTuple vt = tuple_of(vals), tt = tuple_of(target);
        const std::string w_name = kb.fresh("window");
        const ExprPtr w0 = var(w_name, ScalarType::I64), count = use_params(kb, m);
        kb.block_loop(w_name, i64(0), count, i64(window), [&] {
            const ExprPtr width = kb.bind("width", cast(ScalarType::I32, min_expr(i64(window), binary(BinaryOp::Sub, count, w0))));
            // Each thread clears and fills only its own column: no barrier until the fold.
            auto slot = [&](ExprPtr bin, ExprPtr column) {
                return binary(BinaryOp::Add, binary(BinaryOp::Mul, bin, i32(row)), column);
            };
            thread_loop(kb, "bin", i32(0), width, i32(1),
                        [&](ExprPtr k) { kb.emit(store(bins, slot(k, thread_idx()), identity, MemSpace::Shared)); });
            grid_stride_loop(kb, n, [&](ExprPtr i) {
                std::vector<ExprPtr> index = unflatten(kb, i, vt.shape);
                ExprPtr j = kb.bind("dst_index", binary(BinaryOp::Sub, cast(ScalarType::I64, tt.at(kb, index)[0]), w0));
                emit_if(kb, in_range(j, cast(ScalarType::I64, width)), [&] {
                    ExprPtr at = kb.bind("at", slot(cast(ScalarType::I32, j), thread_idx()));
                    ExprPtr v = kb.bind("src_val", vt.at(kb, index)[0]);
                    kb.emit(store(bins, at, apply_op(op, load(bins, at, t, MemSpace::Shared), v), MemSpace::Shared));
                });
            });
            kb.end_phase();
            // Each bin of the window folded over the columns in thread order.
            thread_loop(kb, "bin", thread_idx(), width, i32(kBinsBlock), [&](ExprPtr k) {
                const std::vector<ExprPtr> acc = declare_vars(kb, "acc", {identity});
                thread_loop(kb, "column", i32(0), i32(kBinsBlock), i32(1), [&](ExprPtr c) {
                    kb.emit(assign(acc[0]->name, apply_op(op, acc[0], load(bins, slot(k, c), t, MemSpace::Shared))));
                });
                ExprPtr at = binary(BinaryOp::Add, binary(BinaryOp::Add, binary(BinaryOp::Mul, block_idx(), count), w0),
                                    cast(ScalarType::I64, k));
                kb.emit(store(partials, at, acc[0]));
            });
        });
        add_launch(pb, kb, blocks, "permute pass 1: each block folds its elements per target in a fixed order");
    }
    fold_partials(pb, name, dest, partials, blocks, op, out, opt,
                  "permute pass 2: each target folds the block partials in block order");
}

// On a CPU, an integer permute with an operator and a known, modest number
// of targets gives every core a private copy of the targets: block b (one
// thread, so one core's loop) folds every gridDim-th element into
// partials[b * m + j] with plain loads and stores, then fold_partials.
// Atomics on a few shared targets make the cores fight over their cache
// lines (a 50-bin histogram of 4M elements took 110 ms that way, NumPy 28
// ms). Integers are exact in any order: the result is the atomics path's.
constexpr int64_t kPrivateTargets = int64_t{1} << 20;

void permute_private_copies(PlanBuilder& pb, const std::string& name, const PullArray& dest, const PullArray& target,
                            const PullArray& vals, AssocOp op, const std::string& out, const LoweringOptions& opt) {
    const ScalarType t = dest.elem;
    const ExprPtr m = element_count(dest.shape), n = element_count(vals.shape);
    const ExprPtr blocks = i64(opt.cpu_cores);
    const std::string partials = pb.temp_buffer(pb.fresh(name + "_partials"), t, binary(BinaryOp::Mul, blocks, m));
    {
        KernelBuilder kb(name + "_private", 1);
        kb.buffer_param(partials, t, Access::ReadWrite);
        const PullTuple vt = tuple_of(vals), tt = tuple_of(target);
        const ExprPtr count = use_params(kb, m);
        const ExprPtr base = kb.bind("base", binary(BinaryOp::Mul, cast(ScalarType::I64, block_idx()), count));
        thread_loop(kb, "bin", i64(0), count, i64(1), [&](ExprPtr j) {
            kb.emit(store(partials, binary(BinaryOp::Add, base, j), neutral_of(op, t)));
        });
        grid_stride_loop(kb, n, [&](ExprPtr i) {
            std::vector<ExprPtr> index = unflatten(kb, i, vt.shape);
            ExprPtr j = kb.bind("dst_index", cast(ScalarType::I64, tt.at(kb, index)[0]));
            emit_if(kb, in_range(j, count), [&] {
                ExprPtr at = kb.bind("at", binary(BinaryOp::Add, base, j));
                ExprPtr v = kb.bind("src_val", vt.at(kb, index)[0]);
                kb.emit(store(partials, at, apply_op(op, load(partials, at, t), v)));
            });
        });
        add_launch(pb, kb, blocks, "permute pass 1: each core folds its elements into its own copy of the targets");
    }
    fold_partials(pb, name, dest, partials, blocks, op, out, opt,
                  "permute pass 2: each target folds the cores' copies in order");
}

// On a GPU, an integer permute with a native atomic into a known, modest
// number of targets (a histogram) gives every block its own copy of the
// targets in shared memory: the block's atomics land there, then each
// target it touched is combined into the result with one global atomic.
// Every atomic of the grid on a few shared cache lines serialised: 2^26
// elements into 256 bins took 8.3 ms on an H200 (CuPy 1.9 ms). Integers are
// exact in any order: the result is the global atomics path's.
constexpr int64_t kSharedTargetsBytes = 32 * 1024;

void permute_shared_copies(PlanBuilder& pb, const std::string& name, const PullArray& dest, const PullArray& target,
                           const PullArray& vals, AssocOp op, AtomicOp atomic_op, int64_t targets,
                           const std::string& out, const LoweringOptions& opt) {
    const ScalarType t = dest.elem;
    const ExprPtr n = element_count(vals.shape);
    copy_into(pb, name + "_init", dest, out, opt);
    KernelBuilder kb(name + "_shared", opt.block_size);
    kb.buffer_param(out, t, Access::ReadWrite);
    const std::string copy = kb.shared_array("targets", t, targets);
    const PullTuple vt = tuple_of(vals), tt = tuple_of(target);
    const ExprPtr count = i32(static_cast<int32_t>(targets)), step = i32(opt.block_size);
    thread_loop(kb, "bin", thread_idx(), count, step,
                [&](ExprPtr j) { kb.emit(store(copy, j, neutral_of(op, t), MemSpace::Shared)); });
    kb.end_phase();
    grid_stride_loop(kb, n, [&](ExprPtr i) {
        std::vector<ExprPtr> index = unflatten(kb, i, vt.shape);
        ExprPtr j = kb.bind("dst_index", cast(ScalarType::I64, tt.at(kb, index)[0]));
        emit_if(kb, in_range(j, i64(targets)), [&] {
            ExprPtr v = kb.bind("src_val", vt.at(kb, index)[0]);
            kb.emit(atomic(atomic_op, copy, cast(ScalarType::I32, j), v, t, "", nullptr, MemSpace::Shared));
        });
    });
    kb.end_phase();
    thread_loop(kb, "bin", thread_idx(), count, step, [&](ExprPtr j) {
        ExprPtr v = kb.bind("partial", load(copy, j, t, MemSpace::Shared));
        emit_if(kb, binary(BinaryOp::Ne, v, neutral_of(op, t)),
                [&] { kb.emit(atomic(atomic_op, out, cast(ScalarType::I64, j), v, t)); });
    });
    add_launch(pb, kb, capped_grid(n, int64_t{opt.block_size} * opt.items_per_thread, opt.max_blocks),
               "permute: each block's atomics on its own copy of the targets in shared memory, then one global "
               "atomic per target it touched");
}

// A float permute with an operator: bins or sort, both deterministic.
void permute_floats(PlanBuilder& pb, const std::string& name, const PullArray& dest, const PullArray& target,
                    const PullArray& vals, const Combine& op, const std::string& out, const LoweringOptions& opt) {
    SHOAL_INTERNAL_ASSERT(op.known.has_value(), "permute: floats take the atomics path only with a known operator");
    const ExprPtr m = element_count(dest.shape);
    pb.output_buffer(out, dest.elem, m);  // before any guard: the result always exists
    const int64_t max_bins = kBinsWindows * bins_per_window(dest.elem);
    const std::optional<int64_t> known = known_value(m, opt);
    const bool both = !known;
    if (!known || *known <= max_bins) {
        if (both) pb.set_guard(binary(BinaryOp::Le, m, i64(max_bins)));
        permute_by_bins(pb, name, dest, target, vals, *op.known, out, known, opt);
    }
    if (!known || *known > max_bins) {
        if (both) pb.set_guard(binary(BinaryOp::Gt, m, i64(max_bins)));
        lower_permute_ordered(pb, both ? name + "_sorted" : name, tuple_of(dest), target, tuple_of(vals), op.fn, {out},
                              opt);
    }
    pb.set_guard(nullptr);
}

}  // namespace

void lower_permute(PlanBuilder& pb, const std::string& name, const PullArray& dest, const PullArray& target,
                   const PullArray& vals, const Combine& op, const std::string& out, const LoweringOptions& opt) {
    SHOAL_INTERNAL_ASSERT(op.types.size() == 1 && op.types[0] == dest.elem && vals.elem == dest.elem,
                          "permute: one component of dest's type");
    const ScalarType t = dest.elem;
    if (is_float(t)) return permute_floats(pb, name, dest, target, vals, op, out, opt);
    const ExprPtr m = element_count(dest.shape), n = element_count(vals.shape);
    if (const std::optional<int64_t> targets = known_value(m, opt);
        opt.cpu_cores > 0 && op.known && t != ScalarType::Bool && targets && *targets <= kPrivateTargets) {
        pb.output_buffer(out, t, m);
        return permute_private_copies(pb, name, dest, target, vals, *op.known, out, opt);
    }
    if (const std::optional<int64_t> targets = known_value(m, opt); opt.cpu_cores == 0 && opt.shared_memory &&
                                                                    targets && *targets > 0 &&
                                                                    *targets * int64_t(scalar_size(t)) <= kSharedTargetsBytes)
        if (const std::optional<AtomicOp> native = native_atomic(op, t)) {
            pb.output_buffer(out, t, m);
            return permute_shared_copies(pb, name, dest, target, vals, *op.known, *native, *targets, out, opt);
        }
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
    lower_sort(pb, name + "_by_target", keys, flat_vals, sorted_keys, sorted_vals, opt, n);
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
