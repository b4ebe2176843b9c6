// Reductions along the innermost axis.
//
// Rank 2 rows of at most 32 elements (256 on the CPU) are folded by one
// thread each, in order; longer rows as below.
//
// Commutative operators (the known ones: + * min max and or, or a Combine
// marked commutative) use algorithm cascading: each thread folds many
// elements sequentially in a coalesced grid-stride loop, then the block
// combines its threads' values in a shared-memory tree. Rank 1 needs a
// second single-block kernel over the block partials; rank 2 gives every
// row to one block (a uniform BlockFor over rows), one kernel.
//
// Other operators are only associative, so elements are combined strictly
// in order: the ordered tile fold of lower_scan.cpp over contiguous chunks.
//
// Exactness: integer and min/max results equal the left fold (the operators
// are associative and commutative); float sums are reassociated, within the
// usual tolerance (pairwise-like error, better than a sequential fold).
// Empty input: no element is folded, so the result is the neutral element
// (the final kernel always runs on one block).
#include "codegen/lower_common.h"
#include "lang/diagnostics.h"

namespace shoal::ir {

using namespace lowering;

namespace {

using ElementFn = std::function<std::vector<ExprPtr>(KernelBuilder&, ExprPtr g)>;

// Each thread folds elements start, start + step, ... < end; the block tree
// combines the threads; thread 0 stores the result at outs[k][at], or, when
// `alone` is given and the grid is one block, at alone[k][0] (the block's
// total is then the whole result).
void emit_cascade(KernelBuilder& kb, const Combine& op, const ElementFn& element, ExprPtr start, ExprPtr end,
                  ExprPtr step, const std::vector<std::string>& tree, const std::vector<std::string>& outs, ExprPtr at,
                  const std::vector<std::string>* alone = nullptr) {
    std::vector<ExprPtr> acc = declare_vars(kb, "acc", op.neutral);
    thread_loop(kb, "gid", start, end, step, [&](ExprPtr i) {
        assign_all(kb, acc, combine(kb, op, acc, element(kb, i)));
    });
    block_tree_reduce(kb, op, tree, acc, /*ordered=*/false);
    emit_if(kb, binary(BinaryOp::Eq, thread_idx(), const_int(0, ScalarType::I32)), [&] {
        const std::vector<ExprPtr> total =
            bind_all(kb, "total", load_all(tree, op.types, const_int(0, ScalarType::I32), MemSpace::Shared));
        if (!alone) {
            store_all(kb, outs, at, total, MemSpace::Global);
            return;
        }
        emit_if(kb, binary(BinaryOp::Eq, grid_dim(), i64(1)),
                [&] { store_all(kb, *alone, i64(0), total, MemSpace::Global); },
                [&] { store_all(kb, outs, at, total, MemSpace::Global); });
    });
}

void declare_outputs(KernelBuilder& kb, const std::vector<std::string>& outs, const std::vector<ScalarType>& types) {
    for (size_t k = 0; k < outs.size(); ++k) kb.buffer_param(outs[k], types[k], Access::Write);
}

ElementFn buffer_elements(const std::vector<std::string>& bufs, const std::vector<ScalarType>& types) {
    return [bufs, types](KernelBuilder& kb, ExprPtr g) {
        for (size_t k = 0; k < bufs.size(); ++k) kb.buffer_param(bufs[k], types[k], Access::Read);
        return load_all(bufs, types, g, MemSpace::Global);
    };
}

std::vector<std::string> temps(PlanBuilder& pb, const std::string& prefix, const std::vector<ScalarType>& types,
                               ExprPtr count) {
    std::vector<std::string> out;
    for (auto t : types) out.push_back(pb.temp_buffer(pb.fresh(prefix), t, count));
    return out;
}

// Rank 1, commutative: block partials by cascading, then one block folds them.
void reduce_vector_cascade(PlanBuilder& pb, const std::string& name, const PullTuple& src, const Combine& op,
                           const std::vector<std::string>& outs, const LoweringOptions& opt) {
    const ExprPtr n = element_count(src.shape);
    const int64_t per_block = int64_t{opt.block_size} * opt.reduce_items_per_thread;
    const ExprPtr blocks = param(pb.derived(pb.fresh(name + "_blocks"), capped_grid(n, per_block, opt.max_blocks)),
                                 ScalarType::I64);
    auto partials = temps(pb, name + "_block_partials", op.types, blocks);
    // One block's total is the result: pass 1 stores it and pass 2 is
    // skipped (a 2000-element sum: 1 launch, not 2). No block (no element):
    // pass 2 alone stores the neutral element.
    {
        KernelBuilder kb(name + "_partials", opt.block_size);
        declare_outputs(kb, partials, op.types);
        declare_outputs(kb, outs, op.types);
        auto tree = shared_arrays(kb, "tree", op.types, opt.block_size);
        ElementFn element = [&src](KernelBuilder& b, ExprPtr g) { return flat_at(b, src, g); };
        emit_cascade(kb, op, element, global_thread(), use_params(kb, n), grid_threads(), tree, partials, block_idx(),
                     &outs);
        add_launch(pb, kb, blocks, "reduce pass 1: each block folds a grid-stride share (cascading), then a tree");
    }
    {
        KernelBuilder kb(name, opt.block_size);
        declare_outputs(kb, outs, op.types);
        auto tree = shared_arrays(kb, "tree", op.types, opt.block_size);
        emit_cascade(kb, op, buffer_elements(partials, op.types), tid64(), use_params(kb, blocks),
                     cast(ScalarType::I64, block_dim()), tree, outs, i64(0));
        add_launch(pb, kb, select(binary(BinaryOp::Eq, blocks, i64(1)), i64(0), i64(1)),
                   "reduce pass 2: one block folds the block partials (several blocks, or none)");
    }
}

// Rank 1, only associative: ordered chunk totals, then one block folds them in order.
void reduce_vector_ordered(PlanBuilder& pb, const std::string& name, const PullTuple& src, const Combine& op,
                           const std::vector<std::string>& outs, const LoweringOptions& opt) {
    const ExprPtr n = element_count(src.shape);
    const int64_t tile = int64_t{opt.block_size} * opt.scan_items_per_thread;
    const ExprPtr tiles = param(pb.derived(pb.fresh(name + "_tiles"), ceil_div(n, i64(tile))), ScalarType::I64);
    const std::string blocks_name = pb.derived(pb.fresh(name + "_blocks"), min_expr(tiles, i64(opt.max_blocks)));
    const ExprPtr blocks = param(blocks_name, ScalarType::I64);
    const std::string chunk =
        pb.derived(pb.fresh(name + "_chunk"), binary(BinaryOp::Mul, ceil_div(tiles, blocks), i64(tile)));
    auto partials = temps(pb, name + "_block_partials", op.types, blocks);
    ElementFn element = [src](KernelBuilder& b, ExprPtr g) { return flat_at(b, src, g); };
    lower_ordered_totals(pb, name + "_partials", op, element, n, chunk, blocks, partials, opt,
                         "reduce pass 1: each block folds its chunk in order");
    // One block whose chunk (= the number of partials) covers them all.
    lower_ordered_totals(pb, name, op, buffer_elements(partials, op.types), blocks, blocks_name, i64(1), outs, opt,
                         "reduce pass 2: one block folds the partials in order");
}

// Rank 2: one block per row.
void reduce_rows(PlanBuilder& pb, const std::string& name, const PullTuple& src, const Combine& op,
                 const std::vector<std::string>& outs, const LoweringOptions& opt,
                 const std::string& form = "reduce: one block per row") {
    const ExprPtr rows = src.shape[0], cols = src.shape[1];
    KernelBuilder kb(name, opt.block_size);
    declare_outputs(kb, outs, op.types);
    const std::string row_name = kb.fresh("row");
    const ExprPtr row = var(row_name, ScalarType::I64);
    // Indexed by (row, column): a flat index's division per element made a
    // row of a `generate` 20x slower than the same row in memory.
    ElementFn element = [&src, row](KernelBuilder& b, ExprPtr col) { return src.at(b, {row, col}); };
    std::vector<std::string> tree;
    std::optional<TileScan> ts;
    if (op.commutative) {
        tree = shared_arrays(kb, "tree", op.types, opt.block_size);
    } else {
        ts = TileScan{op, opt.scan_items_per_thread, element, nullptr, ScanKind::Inclusive, {}, {}, {}};
        ts->prepare(kb);
    }
    kb.block_loop(row_name, block_idx(), use_params(kb, rows), grid_dim(), [&] {
        const ExprPtr hi = use_params(kb, cols);
        if (op.commutative) {
            emit_cascade(kb, op, element, tid64(), hi, cast(ScalarType::I64, block_dim()), tree, outs, row);
            return;
        }
        std::vector<ExprPtr> carry = declare_vars(kb, "carry", op.neutral);
        ts->emit(kb, i64(0), hi, carry);
        emit_if(kb, binary(BinaryOp::Eq, thread_idx(), const_int(0, ScalarType::I32)),
                [&] { store_all(kb, outs, row, carry, MemSpace::Global); });
    });
    add_launch(pb, kb, min_expr(rows, i64(opt.max_blocks)), form);
}

// Rank 2, rows of a few warps' length on a GPU: a block of one warp per row.
// A block of 256 threads per row of 64 elements left 192 idle; blocks of 32
// threads, many per SM, keep every lane busy (the grid cap grows to match).
void reduce_medium_rows(PlanBuilder& pb, const std::string& name, const PullTuple& src, const Combine& op,
                        const std::vector<std::string>& outs, const LoweringOptions& opt) {
    LoweringOptions warp = opt;
    warp.block_size = 32;
    warp.max_blocks = opt.max_blocks * (opt.block_size / 32);
    reduce_rows(pb, name + "_warps", src, op, outs, warp, "reduce: one warp (a block of 32 threads) per row");
}

// Rank 2, short rows: one thread folds a whole row, in order (exactly the
// reference's left fold, for any operator). A block per row of 8 elements
// (k-means' distances to 8 centres) kept 248 of its 256 threads idle and
// paid a shared-memory tree per row: 37 ms for 100000 rows natively.
void reduce_short_rows(PlanBuilder& pb, const std::string& name, const PullTuple& src, const Combine& op,
                       const std::vector<std::string>& outs, const LoweringOptions& opt) {
    const ExprPtr rows = src.shape[0], cols = src.shape[1];
    KernelBuilder kb(name + "_rows", opt.block_size);
    declare_outputs(kb, outs, op.types);
    grid_stride_loop(kb, use_params(kb, rows), [&](ExprPtr row) {
        std::vector<ExprPtr> acc = declare_vars(kb, "acc", op.neutral);
        // Indexed by (row, column): no division of a flat index per element.
        thread_loop(kb, "col", i64(0), use_params(kb, cols), i64(1), [&](ExprPtr j) {
            assign_all(kb, acc, combine(kb, op, acc, src.at(kb, {row, j})));
        });
        store_all(kb, outs, row, acc, MemSpace::Global);
    });
    add_launch(pb, kb, capped_grid(rows, opt.block_size, opt.max_blocks), "reduce: one thread per short row, in order");
}

}  // namespace

void lower_reduce(PlanBuilder& pb, const std::string& name, const PullTuple& src, const Combine& op,
                  const std::vector<std::string>& outs, const LoweringOptions& opt) {
    SHOAL_INTERNAL_ASSERT(src.rank() == 1 || src.rank() == 2, "reduce: rank 1 or 2");
    SHOAL_INTERNAL_ASSERT(src.elems == op.types && outs.size() == op.types.size(),
                          "reduce: element types must match the operator");
    const ExprPtr count = src.rank() == 1 ? i64(1) : src.shape[0];
    for (size_t k = 0; k < outs.size(); ++k) pb.output_buffer(outs[k], op.types[k], count);
    if (src.rank() == 2) {
        // The row length decides: a thread per short row, on a GPU a warp per
        // row of up to 1024, a block per longer one (the CPU's threads run a
        // block's lanes as loops, so its rows stay short longer and it has no
        // warp form). Known when the plan is built, one form is printed;
        // otherwise (`:emit`'s trace) each, under a guard.
        const bool gpu = opt.cpu_cores == 0;
        const int64_t longest_short = gpu ? 32 : 256, longest_medium = gpu ? 1024 : longest_short;
        if (const std::optional<int64_t> cols = known_value(src.shape[1], opt)) {
            if (*cols <= longest_short) reduce_short_rows(pb, name, src, op, outs, opt);
            else if (*cols <= longest_medium) reduce_medium_rows(pb, name, src, op, outs, opt);
            else reduce_rows(pb, name, src, op, outs, opt);
            return;
        }
        const ExprPtr short_rows = binary(BinaryOp::Le, src.shape[1], i64(longest_short));
        const ExprPtr long_rows = binary(BinaryOp::Gt, src.shape[1], i64(longest_medium));
        pb.set_guard(short_rows);
        reduce_short_rows(pb, name, src, op, outs, opt);
        if (gpu) {
            pb.set_guard(binary(BinaryOp::And, unary(UnaryOp::Not, short_rows), unary(UnaryOp::Not, long_rows)));
            reduce_medium_rows(pb, name, src, op, outs, opt);
        }
        pb.set_guard(long_rows);
        reduce_rows(pb, name, src, op, outs, opt);
        pb.set_guard(nullptr);
    } else if (op.commutative) reduce_vector_cascade(pb, name, src, op, outs, opt);
    else reduce_vector_ordered(pb, name, src, op, outs, opt);
}

void lower_reduce(PlanBuilder& pb, const std::string& name, const PullArray& src, const Combine& op,
                  const std::string& out, const LoweringOptions& opt) {
    lower_reduce(pb, name, tuple_of(src), op, std::vector<std::string>{out}, opt);
}

// The columns of a (rows x cols), as `sum (transpose m)` asks of a CPU:
// block b folds its band of rows into its own partial row, reading each row
// contiguously (the threads stride over the columns, so the CPU's lanes run
// along a row and vectorise); then each column folds the blocks' partials in
// block order. Within a band the rows are folded in order.
void lower_column_reduce(PlanBuilder& pb, const std::string& name, const PullArray& a, AssocOp op,
                         const std::string& out, const LoweringOptions& opt) {
    SHOAL_INTERNAL_ASSERT(a.rank() == 2, "column reduce: rank 2");
    const ExprPtr rows = a.shape[0], cols = a.shape[1];
    const ScalarType t = a.elem;
    pb.output_buffer(out, t, cols);
    const int64_t bands = std::max<int64_t>(1, int64_t{opt.cpu_cores} * 4);
    const ExprPtr blocks = param(pb.derived(pb.fresh(name + "_bands"), capped_grid(rows, 64, bands)), ScalarType::I64);
    const ExprPtr per = param(pb.derived(pb.fresh(name + "_band_rows"), ceil_div(rows, blocks)), ScalarType::I64);
    const std::string partials = pb.temp_buffer(pb.fresh(name + "_partials"), t, binary(BinaryOp::Mul, blocks, cols));
    const ExprPtr neutral = neutral_of(op, t);
    {
        KernelBuilder kb(name + "_bands", opt.block_size);
        kb.buffer_param(partials, t, Access::ReadWrite);
        const ExprPtr n = use_params(kb, cols), band = use_params(kb, per);
        const ExprPtr block = cast(ScalarType::I64, block_idx());
        const ExprPtr base = binary(BinaryOp::Mul, block, n);
        const ExprPtr r0 = binary(BinaryOp::Mul, block, band);
        const ExprPtr r1 = min_expr(use_params(kb, rows), binary(BinaryOp::Add, r0, band));
        const ExprPtr stride = cast(ScalarType::I64, block_dim());
        thread_loop(kb, "col", tid64(), n, stride,
                    [&](ExprPtr j) { kb.emit(store(partials, binary(BinaryOp::Add, base, j), neutral)); });
        // The rows as a block-level loop, the columns across the threads
        // inside it: on a CPU the lanes run along the row (contiguous).
        const std::string row = kb.fresh("row");
        kb.block_loop(row, r0, r1, i64(1), [&] {
            thread_loop(kb, "col", tid64(), n, stride, [&](ExprPtr j) {
                const ExprPtr at = kb.bind("at", binary(BinaryOp::Add, base, j));
                kb.emit(store(partials, at, apply_op(op, load(partials, at, t), a.at(kb, {var(row, ScalarType::I64), j}))));
            });
        });
        add_launch(pb, kb, blocks, "column reduce: each block folds a band of rows, reading them contiguously");
    }
    fold_partials(pb, name, constant_array({cols}, neutral), partials, blocks, op, out, opt,
                  "column reduce: each column folds the bands' partials in order");
}

void lowering::fold_partials(PlanBuilder& pb, const std::string& name, const PullArray& dest,
                             const std::string& partials, const ExprPtr& blocks, AssocOp op, const std::string& out,
                             const LoweringOptions& opt, const std::string& comment) {
    const ScalarType t = dest.elem;
    const ExprPtr m = element_count(dest.shape);
    KernelBuilder kb(name, opt.block_size);
    kb.buffer_param(out, t, Access::Write);
    kb.buffer_param(partials, t, Access::Read);
    const PullTuple dt = tuple_of(dest);
    grid_stride_loop(kb, m, [&](ExprPtr j) {
        const std::vector<ExprPtr> acc = declare_vars(kb, "acc", flat_at(kb, dt, j));
        thread_loop(kb, "block", i64(0), use_params(kb, blocks), i64(1), [&](ExprPtr b) {
            ExprPtr at = binary(BinaryOp::Add, binary(BinaryOp::Mul, b, use_params(kb, m)), j);
            kb.emit(assign(acc[0]->name, apply_op(op, acc[0], load(partials, at, t))));
        });
        kb.emit(store(out, j, acc[0]));
    });
    add_launch(pb, kb, capped_grid(m, int64_t{opt.block_size} * opt.items_per_thread, opt.max_blocks), comment);
}

}  // namespace shoal::ir
