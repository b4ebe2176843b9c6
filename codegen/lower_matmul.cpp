// Matrix product through shared-memory tiles with register blocking.
//
// C (n x m) = A (n x k) B (k x m). A block owns a T x T tile of C (T =
// matmul_tile, 32) and walks k in steps of T: each step loads the T x T
// tiles of A and B it needs into shared memory (coalesced: consecutive
// threads read consecutive columns), synchronises, and every thread adds
// T products to each of its T*T/block outputs, kept in registers (4 at the
// defaults: rows ty, ty + 8, ty + 16, ty + 24 of column tx). Every element
// of A and B is loaded from global memory m/T and n/T times instead of m
// and n times: T times less traffic than the naive kernel, where each
// thread reads a row of A and a column of B.
//
// The sum of each output runs over k in order from 0, as the reference
// evaluator's does (sequential within a tile, tiles in order), so results
// differ from it only where the GPU contracts a * b + c into one rounding.
#include "codegen/library_calls.h"
#include "codegen/lower_common.h"
#include "lang/diagnostics.h"

namespace shoal::ir {

using namespace lowering;

void lower_matmul(PlanBuilder& pb, const std::string& name, const PullArray& a, const PullArray& b,
                  const std::string& out, const LoweringOptions& opt) {
    SHOAL_INTERNAL_ASSERT(a.rank() == 2 && b.rank() == 2 && a.elem == b.elem, "lower_matmul: two matrices of one type");
    const int64_t T = opt.matmul_tile, block = opt.block_size;
    SHOAL_INTERNAL_ASSERT(block % T == 0 && (T * T) % block == 0, "lower_matmul: the block covers tile rows");
    const int64_t rows_per_pass = block / T, per_thread = T / rows_per_pass;
    const ScalarType t = a.elem;
    const ExprPtr n = a.shape[0], k = a.shape[1], m = b.shape[1];
    pb.output_buffer(out, t, binary(BinaryOp::Mul, n, m));

    KernelBuilder kb(name, opt.block_size);
    kb.buffer_param(out, t, Access::Write);
    const ExprPtr kn = use_params(kb, n), kk = use_params(kb, k), km = use_params(kb, m);
    // Tiles padded to T + 1 columns: a column of B read by a warp and a row
    // of A written by one hit distinct banks.
    const std::string sa = kb.shared_array("tile_a", t, T * (T + 1)), sb = kb.shared_array("tile_b", t, T * (T + 1));
    const ExprPtr zero = is_float(t) ? const_float(0, t) : const_int(0, t);
    const ExprPtr across = ceil_div(m, i64(T));
    const ExprPtr tiles = binary(BinaryOp::Mul, ceil_div(n, i64(T)), across);
    const std::string tile = kb.fresh("tile");
    kb.block_loop(tile, block_idx(), use_params(kb, tiles), grid_dim(), [&] {
        const ExprPtr tv = var(tile, ScalarType::I64);
        kb.emit(comment(std::to_string(T) + "x" + std::to_string(T) + " tile of the product; each thread keeps " +
                        std::to_string(per_thread) + " sums in registers"));
        const ExprPtr row0 = kb.bind("row0", binary(BinaryOp::Mul, binary(BinaryOp::Div, tv, use_params(kb, across)), i64(T)));
        const ExprPtr col0 = kb.bind("col0", binary(BinaryOp::Mul, binary(BinaryOp::Mod, tv, use_params(kb, across)), i64(T)));
        const ExprPtr tx = kb.bind("tx", binary(BinaryOp::Mod, thread_idx(), i32(T)));
        const ExprPtr ty = kb.bind("ty", binary(BinaryOp::Div, thread_idx(), i32(T)));
        std::vector<ExprPtr> acc;
        for (int64_t r = 0; r < per_thread; ++r) acc.push_back(kb.bind("acc", zero));
        // acc's Lets are thread code at this phase's top level: the k loop's phases assign them.
        const std::string step = kb.fresh("k0");
        kb.block_loop(step, i64(0), kk, i64(T), [&] {
            const ExprPtr k0 = var(step, ScalarType::I64);
            // Load A[row0 .. +T, k0 .. +T] and B[k0 .. +T, col0 .. +T] (zeros outside).
            for (int64_t q = 0; q < per_thread; ++q) {
                const ExprPtr r = binary(BinaryOp::Add, ty, i32(q * rows_per_pass));
                const ExprPtr at = binary(BinaryOp::Add, binary(BinaryOp::Mul, r, i32(T + 1)), tx);
                auto load_tile = [&](const std::string& shared, const PullArray& src, ExprPtr row, ExprPtr col,
                                     ExprPtr rows, ExprPtr cols) {
                    const std::string v = kb.fresh("v");
                    kb.emit(let(v, zero));
                    const ExprPtr inside = binary(BinaryOp::And, binary(BinaryOp::Lt, row, rows), binary(BinaryOp::Lt, col, cols));
                    emit_if(kb, inside, [&] { kb.emit(assign(v, src.at(kb, {row, col}))); });
                    kb.emit(store(shared, at, var(v, t), MemSpace::Shared));
                };
                load_tile(sa, a, kb.bind("ar", binary(BinaryOp::Add, row0, widen(r))),
                          kb.bind("ac", binary(BinaryOp::Add, k0, widen(tx))), kn, kk);
                load_tile(sb, b, kb.bind("br", binary(BinaryOp::Add, k0, widen(r))),
                          kb.bind("bc", binary(BinaryOp::Add, col0, widen(tx))), kk, km);
            }
            kb.end_phase();
            // Beyond k's end the tiles hold zeros: adding them changes no sum.
            thread_loop(kb, "kk", i32(0), i32(T), i32(1), [&](ExprPtr j) {
                const ExprPtr bv = kb.bind("bv", load(sb, binary(BinaryOp::Add, binary(BinaryOp::Mul, j, i32(T + 1)), tx), t,
                                                      MemSpace::Shared));
                for (int64_t q = 0; q < per_thread; ++q) {
                    const ExprPtr r = binary(BinaryOp::Add, ty, i32(q * rows_per_pass));
                    const ExprPtr av = load(sa, binary(BinaryOp::Add, binary(BinaryOp::Mul, r, i32(T + 1)), j), t, MemSpace::Shared);
                    kb.emit(assign(acc[q]->name, binary(BinaryOp::Add, acc[q], binary(BinaryOp::Mul, av, bv))));
                }
            });
        });
        for (int64_t q = 0; q < per_thread; ++q) {
            const ExprPtr row = kb.bind("row", binary(BinaryOp::Add, row0, widen(binary(BinaryOp::Add, ty, i32(q * rows_per_pass)))));
            const ExprPtr col = kb.bind("col", binary(BinaryOp::Add, col0, widen(tx)));
            emit_if(kb, binary(BinaryOp::And, binary(BinaryOp::Lt, row, kn), binary(BinaryOp::Lt, col, km)), [&] {
                kb.emit(store(out, binary(BinaryOp::Add, binary(BinaryOp::Mul, row, km), col), acc[q]));
            });
        }
    });
    add_launch(pb, kb, min_expr(tiles, i64(opt.max_blocks)),
               "matmul: " + std::to_string(T) + "x" + std::to_string(T) + " shared tiles, " + std::to_string(per_thread) +
                   " outputs per thread");
}

// A product through the library: operands in memory are passed as they
// are. A fused operand must be written to memory first, which the call
// repays when the product reads each of its elements several times (the
// other side has >= kLibraryReuse columns / rows) or when it is not the
// larger operand (the copy is then cheap beside the product's own reads);
// otherwise (a matrix-vector product of a fused matrix) the tiled kernel
// reads the expression in place. The extents are known only at run time,
// so the plan holds both paths under a guard. On the CPU the copy always
// pays: the BLAS is 10-100x faster than the tiled kernel's native code,
// which wastes most of a 32 x 32 tile on a vector.
constexpr int64_t kLibraryReuse = 4;

void lower_gemm(PlanBuilder& pb, const ProductOperand& a, const ProductOperand& b, const std::string& out,
                const std::string& why) {
    const ScalarType t = a.pull.elem;
    pb.call(gemm_call(a.pull.shape[0], b.pull.shape[1], a.pull.shape[1], a.transposed, b.transposed,
                      pb.input_buffer(a.buffer, t), pb.input_buffer(b.buffer, t), out),
            why);
}

void lower_product(PlanBuilder& pb, const std::string& name, const ProductOperand& a, const ProductOperand& b,
                   const std::string& out, const LoweringOptions& opt) {
    if (!opt.library_gemm || !is_float(a.pull.elem)) {
        lower_matmul(pb, name, a.pull, b.pull, out, opt);
        return;
    }
    const ScalarType t = a.pull.elem;
    const ExprPtr n = a.pull.shape[0], k = a.pull.shape[1], m = b.pull.shape[1];
    pb.output_buffer(out, t, binary(BinaryOp::Mul, n, m));
    auto worth = [&](ExprPtr reuse, ExprPtr mine, ExprPtr other) {
        return binary(BinaryOp::Or, binary(BinaryOp::Ge, reuse, i64(kLibraryReuse)), binary(BinaryOp::Le, mine, other));
    };
    ExprPtr library;  // null: always
    const bool always = opt.cpu_cores > 0;
    if (a.buffer.empty() && !always) library = worth(m, n, m);  // |a| <= |b|  <=>  n <= m
    if (b.buffer.empty() && !always) {
        const ExprPtr w = worth(n, m, n);
        library = library ? binary(BinaryOp::And, library, w) : w;
    }
    if (library) pb.set_guard(library);
    auto in_memory = [&](const ProductOperand& x, const char* suffix) {
        if (!x.buffer.empty()) return pb.input_buffer(x.buffer, t);  // its size: FuseContext::size_inputs
        const std::string temp = pb.temp_buffer(pb.fresh(name + suffix), t, element_count(x.pull.shape));
        lower_map(pb, pb.fresh(name + suffix + "_copy"), tuple_of(x.pull), {temp}, opt);
        return temp;
    };
    const ProductOperand ab{a.pull, in_memory(a, "_a"), a.transposed}, bb{b.pull, in_memory(b, "_b"), b.transposed};
    const bool copied = a.buffer.empty() || b.buffer.empty();
    lower_gemm(pb, ab, bb, out,
               !copied   ? "matmul: the BLAS (both operands in memory; a `transpose` view passed transposed)"
               : library ? "matmul: the BLAS, the fused operand written to memory first (it is read often enough)"
                         : "matmul: the BLAS, the fused operand written to memory first (the BLAS beats the tiled kernel on the CPU)");
    if (!library) return;
    pb.set_guard(unary(UnaryOp::Not, library));
    lower_matmul(pb, name, a.pull, b.pull, out, opt);
    pb.set_guard(nullptr);
}

}  // namespace shoal::ir
