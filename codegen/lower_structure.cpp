// Structural primitives.
// - Index maps (gather, reverse, take, drop, row slices) are pull arrays:
//   fused into their consumer, never materialised.
// - ++ and interleave are PUSH arrays (Obsidian's concP and unpairP): a pull
//   array for them would need a per-element conditional choosing the source
//   (divergent and slower); instead each thread writes into both parts.
// - transpose goes through shared-memory tiles, so that both the loads and
//   the stores are coalesced; the tile has one padding column so that reading
//   a column of it hits 32 different banks.
#include "codegen/lower_common.h"
#include "lang/diagnostics.h"

namespace shoal::ir {

using namespace lowering;

namespace {

// The rows of a pull array, with the row index mapped by f.
PullArray map_rows(const PullArray& a, ExprPtr rows, std::function<ExprPtr(ExprPtr)> f) {
    PullArray r = a;
    r.shape[0] = std::move(rows);
    r.at = [a, f](KernelBuilder& kb, const std::vector<ExprPtr>& index) {
        std::vector<ExprPtr> moved = index;
        // The map may read extents (reverse's n, drop's start) that the
        // consumer's loops do not: declare them in this kernel.
        moved[0] = use_params(kb, f(index[0]));
        return a.at(kb, moved);
    };
    return r;
}

ExprPtr clamp_rows(ExprPtr n, ExprPtr rows) { return min_expr(max_expr(cast(ScalarType::I64, n), i64(0)), rows); }

ExprPtr inner_count(const PullArray& a) {
    return element_count(std::vector<ExprPtr>(a.shape.begin() + 1, a.shape.end()));
}

}  // namespace

PullArray gather_array(const PullArray& idx, const PullArray& a, const Loc& loc) {
    SHOAL_INTERNAL_ASSERT(idx.rank() == 1, "gather: a vector of indices");
    PullArray r = a;
    r.shape[0] = idx.shape[0];
    const ExprPtr n = a.shape[0];
    r.at = [idx, a, n, loc](KernelBuilder& kb, const std::vector<ExprPtr>& index) {
        ExprPtr j = kb.bind("src", cast(ScalarType::I64, idx.at(kb, {index[0]})));
        ExprPtr v = kb.bind("gathered", a.elem == ScalarType::Bool ? const_bool(false)
                                         : is_float(a.elem)      ? const_float(0, a.elem)
                                                                 : const_int(0, a.elem));
        std::vector<ExprPtr> moved = index;
        moved[0] = j;
        ExprPtr extent = use_params(kb, n);
        ExprPtr ok = binary(BinaryOp::And, binary(BinaryOp::Ge, j, i64(0)), binary(BinaryOp::Lt, j, extent));
        // Out of range: record the error (the reference evaluator's message) and load nothing (the thread goes on).
        int check = kb.add_check("gather: index {index} is out of bounds for axis 0 with extent {extent}", loc);
        emit_if(kb, ok, [&] { kb.emit(assign(v->name, a.at(kb, moved))); }, [&] { kb.emit(error(check, j, extent)); });
        return v;
    };
    return r;
}

PullArray transposed_array(const PullArray& a) {
    SHOAL_INTERNAL_ASSERT(a.rank() == 2, "transposed_array: rank 2");
    return PullArray{{a.shape[1], a.shape[0]}, a.elem,
                     [a](KernelBuilder& kb, const std::vector<ExprPtr>& i) { return a.at(kb, {i[1], i[0]}); }};
}

PullArray reverse_array(const PullArray& a) {
    const ExprPtr n = a.shape[0];
    return map_rows(a, n, [n](ExprPtr i) { return binary(BinaryOp::Sub, binary(BinaryOp::Sub, n, i64(1)), i); });
}

PullArray slice_rows(const PullArray& a, ExprPtr start, ExprPtr count) {
    return map_rows(a, std::move(count), [start](ExprPtr i) { return binary(BinaryOp::Add, start, i); });
}

PullArray take_array(const PullArray& a, ExprPtr n) { return slice_rows(a, i64(0), clamp_rows(std::move(n), a.shape[0])); }

PullArray drop_array(const PullArray& a, ExprPtr n) {
    ExprPtr start = clamp_rows(std::move(n), a.shape[0]);
    return slice_rows(a, start, binary(BinaryOp::Sub, a.shape[0], start));
}

PullArray reshape_array(const PullArray& a, std::vector<ExprPtr> shape) {
    PullArray r = a;
    r.shape = std::move(shape);
    r.at = [a, to = r.shape](KernelBuilder& kb, const std::vector<ExprPtr>& index) {
        // The row-major position in the new shape is the position in a.
        ExprPtr flat = kb.flat_of(index, to);
        if (!flat) {
            flat = i64(0);
            for (size_t k = 0; k < index.size(); ++k)
                flat = binary(BinaryOp::Add, binary(BinaryOp::Mul, flat, use_params(kb, to[k])), index[k]);
            flat = kb.bind("flat", flat);
        }
        return a.at(kb, a.rank() == 1 ? std::vector<ExprPtr>{flat} : unflatten(kb, flat, a.shape));
    };
    return r;
}

// ---------------------------------------------------------------- push arrays
// concP: part a to out[0 .. |a|), part b to out[|a| .. |a| + |b|); two loops
// in one kernel, no conditional choosing between a and b.
void lower_concat(PlanBuilder& pb, const std::string& name, const PullArray& a, const PullArray& b,
                  const std::string& out, const LoweringOptions& opt) {
    SHOAL_INTERNAL_ASSERT(a.rank() == b.rank() && a.elem == b.elem, "++: same rank and type");
    const ExprPtr na = element_count(a.shape), nb = element_count(b.shape);
    pb.output_buffer(out, a.elem, binary(BinaryOp::Add, na, nb));
    KernelBuilder kb(name, opt.block_size);
    kb.buffer_param(out, a.elem, Access::Write);
    const PullTuple at = tuple_of(a), bt = tuple_of(b);
    grid_stride_loop(kb, na, [&](ExprPtr i) { kb.emit(store(out, i, flat_at(kb, at, i)[0])); });
    grid_stride_loop(kb, nb, [&](ExprPtr i) {
        kb.emit(store(out, binary(BinaryOp::Add, use_params(kb, na), i), flat_at(kb, bt, i)[0]));
    });
    ExprPtr larger = max_expr(na, nb);
    add_launch(pb, kb, capped_grid(larger, int64_t{opt.block_size} * opt.items_per_thread, opt.max_blocks),
               "++ as a push array: every thread writes into both parts");
}

// unpairP: element e of row r of a goes to row 2r, of b to row 2r + 1.
void lower_interleave(PlanBuilder& pb, const std::string& name, const PullArray& a, const PullArray& b,
                      const std::string& out, const LoweringOptions& opt) {
    SHOAL_INTERNAL_ASSERT(a.rank() == b.rank() && a.elem == b.elem, "interleave: same shape and type");
    const ExprPtr n = element_count(a.shape), inner = inner_count(a);
    pb.output_buffer(out, a.elem, binary(BinaryOp::Mul, n, i64(2)));
    KernelBuilder kb(name, opt.block_size);
    kb.buffer_param(out, a.elem, Access::Write);
    const PullTuple at = tuple_of(a), bt = tuple_of(b);
    grid_stride_loop(kb, n, [&](ExprPtr e) {
        ExprPtr w = use_params(kb, inner);
        ExprPtr row = kb.bind("row", binary(BinaryOp::Div, e, w));
        // (2 row) * inner + column = e + row * inner
        ExprPtr first = kb.bind("dst", binary(BinaryOp::Add, e, binary(BinaryOp::Mul, row, w)));
        kb.emit(store(out, first, flat_at(kb, at, e)[0]));
        kb.emit(store(out, binary(BinaryOp::Add, first, w), flat_at(kb, bt, e)[0]));
    });
    add_launch(pb, kb, capped_grid(n, int64_t{opt.block_size} * opt.items_per_thread, opt.max_blocks),
               "interleave as a push array: every thread writes a row of each part");
}

// ---------------------------------------------------------------- transpose
void lower_transpose(PlanBuilder& pb, const std::string& name, const PullArray& a, const std::string& out,
                     const LoweringOptions& opt) {
    SHOAL_INTERNAL_ASSERT(a.rank() == 2, "transpose: rank 2");
    const int T = opt.transpose_tile, R = opt.transpose_rows;
    const ExprPtr rows = a.shape[0], cols = a.shape[1];
    pb.output_buffer(out, a.elem, binary(BinaryOp::Mul, rows, cols));
    if (opt.cpu_cores > 0) {
        // A thin array on the CPU (10000 x 3) is a map reading a[j, i] for
        // out[i, j], 10x faster natively than tiles of which it fills a few
        // rows (256 threads at each barrier for 96 elements); a wide one
        // keeps the tiles (the map is 1.3x slower there). Chosen from the
        // extents when the plan is built, else at run time by a guard.
        const ExprPtr thin = binary(BinaryOp::Or, binary(BinaryOp::Lt, rows, i64(T)), binary(BinaryOp::Lt, cols, i64(T)));
        const std::optional<int64_t> known = known_value(thin, opt);
        const PullArray swapped = transposed_array(a);
        if (known && *known) {
            lower_map(pb, name + "_thin", tuple_of(swapped), {out}, opt);
            return;
        }
        if (!known) {
            pb.set_guard(thin);
            lower_map(pb, name + "_thin", tuple_of(swapped), {out}, opt);
            pb.set_guard(unary(UnaryOp::Not, thin));
        }
    }
    const ExprPtr tiles_c = param(pb.derived(pb.fresh(name + "_tiles_c"), ceil_div(cols, i64(T))), ScalarType::I64);
    const ExprPtr tiles =
        param(pb.derived(pb.fresh(name + "_tiles"), binary(BinaryOp::Mul, ceil_div(rows, i64(T)), tiles_c)), ScalarType::I64);

    KernelBuilder kb(name, T * R);
    kb.buffer_param(out, a.elem, Access::Write);
    const std::string tile = kb.shared_array("tile", a.elem, int64_t{T} * (T + 1));
    const ExprPtr tx = binary(BinaryOp::Mod, thread_idx(), i32(T));
    const ExprPtr ty = binary(BinaryOp::Div, thread_idx(), i32(T));
    const std::string t_name = kb.fresh("tile_id");
    const ExprPtr t = var(t_name, ScalarType::I64);
    kb.block_loop(t_name, block_idx(), use_params(kb, tiles), grid_dim(), [&] {
        ExprPtr r0 = binary(BinaryOp::Mul, binary(BinaryOp::Div, t, use_params(kb, tiles_c)), i64(T));
        ExprPtr c0 = binary(BinaryOp::Mul, binary(BinaryOp::Mod, t, tiles_c), i64(T));
        // Load: consecutive threads read consecutive columns of a row.
        thread_loop(kb, "dy", i32(0), i32(T), i32(R), [&](ExprPtr dy) {
            ExprPtr ly = kb.bind("ly", binary(BinaryOp::Add, ty, dy));
            ExprPtr r = kb.bind("irow", binary(BinaryOp::Add, r0, cast(ScalarType::I64, ly)));
            ExprPtr c = kb.bind("icol", binary(BinaryOp::Add, c0, cast(ScalarType::I64, tx)));
            ExprPtr ok = binary(BinaryOp::And, binary(BinaryOp::Lt, r, use_params(kb, rows)),
                                binary(BinaryOp::Lt, c, use_params(kb, cols)));
            emit_if(kb, ok, [&] {
                kb.emit(store(tile, binary(BinaryOp::Add, binary(BinaryOp::Mul, ly, i32(T + 1)), tx), a.at(kb, {r, c}),
                              MemSpace::Shared));
            });
        });
        kb.end_phase();
        // Store: consecutive threads write consecutive columns of an output row
        // (a column of the tile: stride T + 1, conflict free).
        thread_loop(kb, "dy", i32(0), i32(T), i32(R), [&](ExprPtr dy) {
            ExprPtr ly = kb.bind("ly", binary(BinaryOp::Add, ty, dy));
            ExprPtr orow = kb.bind("orow", binary(BinaryOp::Add, c0, cast(ScalarType::I64, ly)));
            ExprPtr ocol = kb.bind("ocol", binary(BinaryOp::Add, r0, cast(ScalarType::I64, tx)));
            ExprPtr ok = binary(BinaryOp::And, binary(BinaryOp::Lt, orow, cols), binary(BinaryOp::Lt, ocol, rows));
            emit_if(kb, ok, [&] {
                ExprPtr v = load(tile, binary(BinaryOp::Add, binary(BinaryOp::Mul, tx, i32(T + 1)), ly), a.elem,
                                 MemSpace::Shared);
                kb.emit(store(out, binary(BinaryOp::Add, binary(BinaryOp::Mul, orow, rows), ocol), v));
            });
        });
        kb.end_phase();
    });
    add_launch(pb, kb, min_expr(tiles, i64(opt.max_blocks)), "transpose through padded shared-memory tiles");
    pb.set_guard(nullptr);
}

}  // namespace shoal::ir
