// Scans: the three-phase algorithm (Accelerate, "fast scan"):
//   1. totals:  block b folds its contiguous chunk -> partials[b]
//   2. carries: one block scans the partials exclusively -> carries[b]
//   3. scan:    block b scans its chunk again, seeded with carries[b]
// Chunks are whole tiles (block * items_per_thread elements) and there are at
// most max_blocks of them, so the partials fit one block's loop. Every step
// keeps operands in order, so any associative operator works (no
// commutativity needed), and integer results equal a left fold exactly.
// Rank 2 (each row) and segscan use the flag-value operator transformation:
// the carrier is (flag, value) and a flag restarts the scan.
#include "codegen/lower_common.h"
#include "lang/diagnostics.h"

namespace shoal::ir {

using namespace lowering;

namespace lowering {

ExprPtr padded(ExprPtr k) { return binary(BinaryOp::Add, k, binary(BinaryOp::Shr, k, i32(5))); }

void TileScan::prepare(KernelBuilder& kb) {
    const int64_t tile = int64_t{kb.kernel().block_size} * items_per_thread;
    stage = shared_arrays(kb, "stage", op.types, tile + tile / 32);
    scan_a = shared_arrays(kb, "scan_a", op.types, kb.kernel().block_size);
    scan_b = shared_arrays(kb, "scan_b", op.types, kb.kernel().block_size);
}

void TileScan::emit(KernelBuilder& kb, ExprPtr lo, ExprPtr hi, const std::vector<ExprPtr>& carry) {
    const int bs = kb.kernel().block_size;
    const int ipt = items_per_thread;
    const ExprPtr tid = thread_idx();
    const std::string t0_name = kb.fresh("tile");
    const ExprPtr t0 = var(t0_name, ScalarType::I64);
    auto items = [&](const std::function<void(ExprPtr j)>& body) {
        thread_loop(kb, "item", i32(0), i32(ipt), i32(1), body);
    };
    // Element j of this thread in the coalesced (striped) arrangement.
    auto striped = [&](ExprPtr j) { return kb.bind("slot", binary(BinaryOp::Add, binary(BinaryOp::Mul, j, i32(bs)), tid)); };
    auto global_of = [&](ExprPtr k) { return kb.bind("gi", binary(BinaryOp::Add, t0, cast(ScalarType::I64, k))); };

    kb.block_loop(t0_name, lo, hi, i64(int64_t{bs} * ipt), [&] {
        // Load the tile, coalesced; past the end, the neutral element.
        items([&](ExprPtr j) {
            ExprPtr k = striped(j);
            ExprPtr g = global_of(k);
            ExprPtr p = kb.bind("pos", padded(k));
            emit_if(kb, binary(BinaryOp::Lt, g, hi),
                    [&] { store_all(kb, stage, p, bind_all(kb, "elem", element(kb, g)), MemSpace::Shared); },
                    [&] { store_all(kb, stage, p, op.neutral, MemSpace::Shared); });
        });
        kb.end_phase();
        // Each thread folds its ipt adjacent elements.
        std::vector<ExprPtr> acc = declare_vars(kb, "acc", op.neutral);
        items([&](ExprPtr j) {
            ExprPtr p = kb.bind("pos", padded(binary(BinaryOp::Add, binary(BinaryOp::Mul, tid, i32(ipt)), j)));
            assign_all(kb, acc, combine(kb, op, acc, load_all(stage, op.types, p, MemSpace::Shared)));
        });
        store_all(kb, scan_a, tid, acc, MemSpace::Shared);
        kb.end_phase();
        // Hillis-Steele inclusive scan of the thread totals, double buffered.
        const std::vector<std::string>* src = &scan_a;
        const std::vector<std::string>* dst = &scan_b;
        for (int d = 1; d < bs; d *= 2) {
            std::vector<ExprPtr> v = declare_vars(kb, "hs", load_all(*src, op.types, tid, MemSpace::Shared));
            emit_if(kb, binary(BinaryOp::Ge, tid, i32(d)), [&] {
                auto left = load_all(*src, op.types, binary(BinaryOp::Sub, tid, i32(d)), MemSpace::Shared);
                assign_all(kb, v, combine(kb, op, left, v));
            });
            store_all(kb, *dst, tid, v, MemSpace::Shared);
            kb.end_phase();
            std::swap(src, dst);
        }
        const std::vector<std::string>& scanned = *src;
        if (output) {
            // Rescan this thread's elements seeded with carry + the totals of earlier threads.
            std::vector<ExprPtr> pre = declare_vars(kb, "pre", carry);
            emit_if(kb, binary(BinaryOp::Gt, tid, i32(0)), [&] {
                auto before = load_all(scanned, op.types, binary(BinaryOp::Sub, tid, i32(1)), MemSpace::Shared);
                assign_all(kb, pre, combine(kb, op, carry, before));
            });
            items([&](ExprPtr j) {
                ExprPtr p = kb.bind("pos", padded(binary(BinaryOp::Add, binary(BinaryOp::Mul, tid, i32(ipt)), j)));
                auto x = bind_all(kb, "elem", load_all(stage, op.types, p, MemSpace::Shared));
                if (kind == ScanKind::Exclusive) store_all(kb, stage, p, pre, MemSpace::Shared);
                assign_all(kb, pre, combine(kb, op, pre, x));
                if (kind == ScanKind::Inclusive) store_all(kb, stage, p, pre, MemSpace::Shared);
            });
        }
        // Every thread absorbs the tile total into its copy of the carry.
        assign_all(kb, carry, combine(kb, op, carry, load_all(scanned, op.types, i32(bs - 1), MemSpace::Shared)));
        kb.end_phase();
        if (output) {
            items([&](ExprPtr j) {
                ExprPtr k = striped(j);
                ExprPtr g = global_of(k);
                emit_if(kb, binary(BinaryOp::Lt, g, hi), [&] {
                    output(kb, g, bind_all(kb, "res", load_all(stage, op.types, padded(k), MemSpace::Shared)));
                });
            });
            kb.end_phase();
        }
    });
}

}  // namespace lowering

namespace {

// What one scan computes: the carrier operator, its value at element g, and
// how a carrier result becomes the stored element.
struct ScanSpec {
    std::string name;
    Combine carrier;
    std::function<std::vector<ExprPtr>(KernelBuilder&, ExprPtr g)> element;
    // The output components of a carrier value (the value without the flag).
    std::function<std::vector<ExprPtr>(KernelBuilder&, ExprPtr g, const std::vector<ExprPtr>& value)> result;
    std::vector<ScalarType> result_types;
    ExprPtr n;  // elements (I64 host expression)
    ScanKind kind = ScanKind::Inclusive;
};

std::vector<std::string> temp_buffers(PlanBuilder& pb, const std::string& prefix, const std::vector<ScalarType>& types,
                                      ExprPtr count) {
    std::vector<std::string> out;
    for (auto t : types) out.push_back(pb.temp_buffer(pb.fresh(prefix), t, count));
    return out;
}

std::vector<ExprPtr> load_global(KernelBuilder& kb, const std::vector<std::string>& bufs,
                                 const std::vector<ScalarType>& types, ExprPtr index) {
    for (size_t k = 0; k < bufs.size(); ++k) kb.buffer_param(bufs[k], types[k], Access::Read);
    return load_all(bufs, types, std::move(index), MemSpace::Global);
}

void declare_writes(KernelBuilder& kb, const std::vector<std::string>& bufs, const std::vector<ScalarType>& types) {
    for (size_t k = 0; k < bufs.size(); ++k) kb.buffer_param(bufs[k], types[k], Access::Write);
}

// This block's chunk [lo, hi) of n elements.
std::pair<ExprPtr, ExprPtr> chunk_range(KernelBuilder& kb, const std::string& chunk, ExprPtr n) {
    ExprPtr c = param(kb.scalar_param(chunk, ScalarType::I64), ScalarType::I64);
    ExprPtr lo = binary(BinaryOp::Mul, block_idx(), c);
    ExprPtr hi = min_expr(binary(BinaryOp::Add, lo, c), use_params(kb, n));
    return {lo, hi};
}

// One chunk needs no carries: its scan is phase 3 alone (a 2000-element
// cumsum: 1 launch, not 3, on the CPU and on a GPU). Phases 1 and 2 run
// only with several chunks (an empty launch is skipped), and block 0 starts
// from the neutral element, which is its carry whatever the count.
ExprPtr several(ExprPtr blocks) { return select(binary(BinaryOp::Gt, blocks, i64(1)), blocks, i64(0)); }
ExprPtr one_if_several(ExprPtr blocks) { return select(binary(BinaryOp::Gt, blocks, i64(1)), i64(1), i64(0)); }

std::vector<ExprPtr> chunk_carry(KernelBuilder& kb, const Combine& op, const std::vector<std::string>& carries) {
    std::vector<ExprPtr> carry = declare_vars(kb, "carry", op.neutral);
    emit_if(kb, binary(BinaryOp::Gt, block_idx(), i64(0)),
            [&] { assign_all(kb, carry, load_global(kb, carries, op.types, block_idx())); });
    return carry;
}

}  // namespace

namespace lowering {
// Ordered fold of chunks: block b writes the total of its chunk to outs[b]
// (with one block and chunk >= n: the whole fold). Used by scans (phase 1)
// and by reductions of non-commutative operators.
void lower_ordered_totals(PlanBuilder& pb, const std::string& kernel_name, const Combine& op,
                          const std::function<std::vector<ExprPtr>(KernelBuilder&, ExprPtr g)>& element, ExprPtr n,
                          const std::string& chunk, ExprPtr grid, const std::vector<std::string>& outs,
                          const LoweringOptions& opt, const std::string& comment) {
    KernelBuilder kb(kernel_name, opt.block_size);
    declare_writes(kb, outs, op.types);
    TileScan ts{op, opt.scan_items_per_thread, element, nullptr, ScanKind::Inclusive, {}, {}, {}};
    ts.prepare(kb);
    auto [lo, hi] = chunk_range(kb, chunk, n);
    std::vector<ExprPtr> carry = declare_vars(kb, "carry", op.neutral);
    ts.emit(kb, lo, hi, carry);
    emit_if(kb, binary(BinaryOp::Eq, thread_idx(), const_int(0, ScalarType::I32)),
            [&] { store_all(kb, outs, block_idx(), carry, MemSpace::Global); });
    add_launch(pb, kb, std::move(grid), comment);
}
}  // namespace lowering

// The CPU form (LoweringOptions::cpu_cores > 0, native code): the same three
// phases with one thread per block walking its chunk in order, a plain loop
// the compiler keeps in registers (the tiles' shared-memory steps and
// barriers cost more than the adds natively: 4M ints 18-23 ms -> see
// docs/optimisations.md). Chunks are kCpuScanChunk elements whatever the
// cores, so a float scan's association depends on n alone.
constexpr int64_t kCpuScanChunk = 1 << 16;

static void lower_scan_chunks_cpu(PlanBuilder& pb, const ScanSpec& s, const std::vector<std::string>& outs) {
    const Combine& op = s.carrier;
    for (size_t k = 0; k < outs.size(); ++k) pb.output_buffer(outs[k], s.result_types[k], s.n);
    const ExprPtr blocks_p = param(pb.derived(pb.fresh(s.name + "_blocks"), ceil_div(s.n, i64(kCpuScanChunk))),
                                   ScalarType::I64);
    const std::string chunk = pb.derived(pb.fresh(s.name + "_chunk"), i64(kCpuScanChunk));
    auto partials = temp_buffers(pb, s.name + "_block_totals", op.types, blocks_p);
    auto carries = temp_buffers(pb, s.name + "_block_carries", op.types, blocks_p);
    // for g in [lo, hi): visit(g, acc) then acc = op(acc, element(g)), in order.
    auto walk = [&](KernelBuilder& kb, ExprPtr lo, ExprPtr hi, const std::vector<ExprPtr>& acc,
                    const std::function<void(ExprPtr g, const std::vector<ExprPtr>& before, const std::vector<ExprPtr>& after)>& visit) {
        thread_loop(kb, "g", lo, hi, i64(1), [&](ExprPtr g) {
            const std::vector<ExprPtr> before = bind_all(kb, "before", acc);
            const std::vector<ExprPtr> after = bind_all(kb, "after", combine(kb, op, before, s.element(kb, g)));
            if (visit) visit(g, before, after);
            assign_all(kb, acc, after);
        });
    };
    {
        KernelBuilder kb(s.name + "_totals", 1);
        declare_writes(kb, partials, op.types);
        auto [lo, hi] = chunk_range(kb, chunk, s.n);
        std::vector<ExprPtr> acc = declare_vars(kb, "acc", op.neutral);
        walk(kb, lo, hi, acc, nullptr);
        store_all(kb, partials, block_idx(), acc, MemSpace::Global);
        add_launch(pb, kb, several(blocks_p), "scan phase 1 (CPU): each thread folds its chunk in order");
    }
    {
        KernelBuilder kb(s.name + "_carries", 1);
        declare_writes(kb, carries, op.types);
        std::vector<ExprPtr> acc = declare_vars(kb, "acc", op.neutral);
        thread_loop(kb, "b", i64(0), use_params(kb, blocks_p), i64(1), [&](ExprPtr b) {
            store_all(kb, carries, b, acc, MemSpace::Global);
            assign_all(kb, acc, bind_all(kb, "next", combine(kb, op, acc, load_global(kb, partials, op.types, b))));
        });
        add_launch(pb, kb, one_if_several(blocks_p), "scan phase 2 (CPU): exclusive scan of the chunk totals");
    }
    {
        KernelBuilder kb(s.name, 1);
        for (size_t k = 0; k < outs.size(); ++k) kb.buffer_param(outs[k], s.result_types[k], Access::Write);
        auto [lo, hi] = chunk_range(kb, chunk, s.n);
        std::vector<ExprPtr> acc = chunk_carry(kb, op, carries);
        walk(kb, lo, hi, acc, [&](ExprPtr g, const std::vector<ExprPtr>& before, const std::vector<ExprPtr>& after) {
            const std::vector<ExprPtr> r = s.result(kb, g, s.kind == ScanKind::Inclusive ? after : before);
            for (size_t k = 0; k < outs.size(); ++k) kb.emit(store(outs[k], g, r[k]));
        });
        add_launch(pb, kb, blocks_p, "scan phase 3 (CPU): each thread scans its chunk from its carry");
    }
}

static void lower_scan_spec(PlanBuilder& pb, const ScanSpec& s, const std::vector<std::string>& outs,
                            const LoweringOptions& opt) {
    if (opt.cpu_cores > 0) {
        lower_scan_chunks_cpu(pb, s, outs);
        return;
    }
    const int64_t tile = int64_t{opt.block_size} * opt.scan_items_per_thread;
    const Combine& op = s.carrier;
    for (size_t k = 0; k < outs.size(); ++k) pb.output_buffer(outs[k], s.result_types[k], s.n);
    const std::string tiles = pb.derived(pb.fresh(s.name + "_tiles"), ceil_div(s.n, i64(tile)));
    const ExprPtr tiles_p = param(tiles, ScalarType::I64);
    const std::string blocks = pb.derived(pb.fresh(s.name + "_blocks"), min_expr(tiles_p, i64(opt.max_blocks)));
    const ExprPtr blocks_p = param(blocks, ScalarType::I64);
    const std::string chunk =
        pb.derived(pb.fresh(s.name + "_chunk"), binary(BinaryOp::Mul, ceil_div(tiles_p, blocks_p), i64(tile)));
    auto partials = temp_buffers(pb, s.name + "_block_totals", op.types, blocks_p);
    auto carries = temp_buffers(pb, s.name + "_block_carries", op.types, blocks_p);

    lower_ordered_totals(pb, s.name + "_totals", op, s.element, s.n, chunk, several(blocks_p), partials, opt,
                         "scan phase 1: the total of each block's chunk");

    {  // phase 2: one block scans the chunk totals exclusively
        KernelBuilder kb(s.name + "_carries", opt.block_size);
        declare_writes(kb, carries, op.types);
        auto element = [&](KernelBuilder& b, ExprPtr g) { return load_global(b, partials, op.types, g); };
        auto output = [&](KernelBuilder& b, ExprPtr g, const std::vector<ExprPtr>& v) {
            store_all(b, carries, g, v, MemSpace::Global);
        };
        TileScan ts{op, opt.scan_items_per_thread, element, output, ScanKind::Exclusive, {}, {}, {}};
        ts.prepare(kb);
        std::vector<ExprPtr> carry = declare_vars(kb, "carry", op.neutral);
        ts.emit(kb, i64(0), use_params(kb, blocks_p), carry);
        add_launch(pb, kb, one_if_several(blocks_p), "scan phase 2: exclusive scan of the chunk totals");
    }
    {  // phase 3: each block scans its chunk from its carry
        KernelBuilder kb(s.name, opt.block_size);
        for (size_t k = 0; k < outs.size(); ++k) kb.buffer_param(outs[k], s.result_types[k], Access::Write);
        auto output = [&](KernelBuilder& b, ExprPtr g, const std::vector<ExprPtr>& v) {
            const std::vector<ExprPtr> r = s.result(b, g, v);
            for (size_t k = 0; k < outs.size(); ++k) b.emit(store(outs[k], g, r[k]));
        };
        TileScan ts{op, opt.scan_items_per_thread, s.element, output, s.kind, {}, {}, {}};
        ts.prepare(kb);
        auto [lo, hi] = chunk_range(kb, chunk, s.n);
        std::vector<ExprPtr> carry = chunk_carry(kb, op, carries);
        ts.emit(kb, lo, hi, carry);
        add_launch(pb, kb, blocks_p, "scan phase 3: scan each chunk from its carry");
    }
}

// The carrier of a scan along the innermost axis: plain for rank 1 without
// flags, else (flag, value...) with flag = user flag || first column.
static ScanSpec scan_spec(const std::string& name, const PullArray* flags, const PullTuple& src, const Combine& op,
                          ScanKind kind) {
    SHOAL_INTERNAL_ASSERT(src.rank() == 1 || src.rank() == 2, "scan: rank 1 or 2");
    SHOAL_INTERNAL_ASSERT(op.types.size() == src.elems.size(), "scan: one component per element");
    ScanSpec s;
    s.name = name;
    s.n = element_count(src.shape);
    s.kind = kind;
    s.result_types = src.elems;
    const bool rows = src.rank() == 2;
    if (!flags && !rows) {
        s.carrier = op;
        s.element = [src](KernelBuilder& kb, ExprPtr g) { return flat_at(kb, src, g); };
        s.result = [](KernelBuilder&, ExprPtr, const std::vector<ExprPtr>& v) { return v; };
        return s;
    }
    s.carrier = segmented(op);
    const ExprPtr cols = src.shape.back();
    std::optional<PullTuple> ft;
    if (flags) ft = tuple_of(*flags);
    s.element = [src, ft, rows](KernelBuilder& kb, ExprPtr g) {
        std::vector<ExprPtr> index = unflatten(kb, g, src.shape);
        ExprPtr flag = const_bool(false);
        if (ft) flag = ft->at(kb, index)[0];
        if (rows) flag = binary(BinaryOp::Or, flag, binary(BinaryOp::Eq, index[1], i64(0)));
        std::vector<ExprPtr> out{kb.bind("flag", flag)};
        for (const ExprPtr& v : src.at(kb, index)) out.push_back(v);
        return out;
    };
    const std::vector<ExprPtr> z = op.neutral;
    s.result = [kind, cols, z](KernelBuilder& kb, ExprPtr g, const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> out(v.begin() + 1, v.end());
        if (kind == ScanKind::Inclusive) return out;
        // Exclusive per row: a row's first element is the neutral element,
        // not the carried prefix of the previous row.
        ExprPtr first = kb.bind("first", binary(BinaryOp::Eq, binary(BinaryOp::Mod, g, use_params(kb, cols)), i64(0)));
        for (size_t k = 0; k < out.size(); ++k) out[k] = select(first, z[k], out[k]);
        return out;
    };
    return s;
}

void lower_scan(PlanBuilder& pb, const std::string& name, const PullTuple& src, const PullArray* flags,
                const Combine& op, ScanKind kind, const std::vector<std::string>& outs, const LoweringOptions& opt) {
    lower_scan_spec(pb, scan_spec(name, flags, src, op, kind), outs, opt);
}

void lower_scan(PlanBuilder& pb, const std::string& name, const PullArray& src, const Combine& op, ScanKind kind,
                const std::string& out, const LoweringOptions& opt) {
    lower_scan(pb, name, tuple_of(src), nullptr, op, kind, {out}, opt);
}

void lower_segscan(PlanBuilder& pb, const std::string& name, const PullArray& flags, const PullArray& src,
                   const Combine& op, const std::string& out, const LoweringOptions& opt) {
    lower_scan(pb, name, tuple_of(src), &flags, op, ScanKind::Inclusive, {out}, opt);
}

}  // namespace shoal::ir
