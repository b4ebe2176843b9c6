// Lowering array primitives to kernels: every function here appends kernels,
// buffers and steps to a PlanBuilder. Inputs are PullArrays (delayed
// producers: fusion hands a lowering the code computing each element, so a
// fused producer costs no temporary), combining functions are C++ callables
// emitting IR. Outputs are plan buffers named by the caller and declared
// Output (set_role turns one into a Temp when another lowering consumes it).
//
// The algorithms (sizes are LoweringOptions, never constants in the code):
//   map          grid-stride loop, ~items_per_thread elements per thread, I64 indices;
//                a tuple-valued map is one kernel with several outputs
//   reduce       rank 1: cascading (sequential per thread) + shared-memory tree
//                per block, then one block combines the block partials (2 kernels);
//                rank 2: one block per row (BlockFor over rows), 1 kernel
//   scan         three phases: per-chunk totals, scan of the totals (1 block),
//                per-chunk scan seeded with its carry; tiles staged through
//                shared memory for coalescing, per-thread sequential scan,
//                Hillis-Steele across the block; order preserving (associative
//                operators need not commute); rank 2 and segscan through the
//                flag-value operator transformation (Accelerate)
//   permute      atomics for known operators on supported types, CAS loop otherwise
//   scatter      deterministic last-write-wins: atomicMax of the source position
//                per target, then a second pass where only the winner writes
//   ++/interleave push arrays: each thread writes both parts (Obsidian concP/unpairP)
//   transpose    32x32 shared tiles padded to 33 columns (no bank conflicts)
//   matmul       32x32 output tiles, k in steps of 32 through shared tiles, 4 sums per thread in registers
//   filter       flags -> exclusive scan -> scatter, the count read back to the host
//   sort         stable LSD radix sort, per pass: block digit histograms, one-block
//                scan of them, stable scatter through a block-local sort (no atomics)
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_builder.h"
#include "codegen/launch_plan.h"

namespace shoal::ir {

// What a lowering may ask of the plan being built beyond its arguments:
// the value a plan scalar has now (nullopt when it is not fixed, e.g. a
// symbolic argument during :emit's trace) and the element count of a
// buffer the kernel reads (null when unknown). Decisions taken from values
// must show in the kernel text (constants), which keys the plan cache.
struct LoweringFacts {
    std::function<std::optional<int64_t>(const std::string& scalar)> value;
    std::function<ExprPtr(const std::string& buffer)> buffer_count;
};

struct LoweringOptions {
    int block_size = 256;              // threads per block (a power of two, >= 32)
    int items_per_thread = 4;          // map: the grid gives each thread about this many elements
    int reduce_items_per_thread = 16;  // reduce: elements each thread accumulates sequentially (cascading)
    int scan_items_per_thread = 8;     // scan: elements per thread per shared-memory tile
    int64_t max_blocks = 1024;         // grid cap; grid-stride loops and chunks cover the rest
    int transpose_tile = 32;           // transpose: tile edge (elements)
    int transpose_rows = 8;            // transpose: block = tile x rows threads, each thread tile/rows elements
    int radix_bits = 4;                // sort: bits per LSD radix pass (2^radix_bits digits, < block_size)
    int sort_items_per_thread = 8;     // sort: each thread ranks this many adjacent keys per tile
    // > 0: the plan runs as native CPU code on this many cores, each logical
    // block one OS thread's loops. Sorts then take their CPU form (one thread
    // per block walks a contiguous chunk, 8-bit digits; the same bits as the
    // GPU form). 0: the GPU's form, which :cuda, :compile and :emit show.
    int cpu_cores = 0;
    // map: overlapping reads of one array served from shared tiles (shared_tiles.h);
    // needs `facts` (the offsets' values).
    bool shared_memory = true;
    int tile_rows = 16, tile_cols = 64;  // map, rank 2: the shared tile (tile_cols a power of two)
    int matmul_tile = 32;              // matmul: square tiles of the product (block_size a multiple of it)
    // matmul: the executor calls a vendor BLAS' gemm (library_calls.h) for
    // a product whose operands are in memory, or worth materialising.
    bool library_gemm = false;
    const LoweringFacts* facts = nullptr;
};

// ---------------------------------------------------------------- operators
// Associative operators with a known identity; they commute, so a reduction
// may visit elements in any order, and map onto CUDA atomics.
enum class AssocOp : uint8_t { Add, Mul, Min, Max, And, Or };

using CombineFn = std::function<ExprPtr(KernelBuilder&, ExprPtr, ExprPtr)>;
using TupleCombineFn =
    std::function<std::vector<ExprPtr>(KernelBuilder&, const std::vector<ExprPtr>&, const std::vector<ExprPtr>&)>;

// An associative operator over tuples of scalars with its neutral element.
// `fn(a, b)` must treat a as the earlier operand: non-commutative operators
// are combined strictly in order (scan, and reductions unless commutative).
struct Combine {
    std::vector<ScalarType> types;
    std::vector<ExprPtr> neutral;
    TupleCombineFn fn;
    bool commutative = false;       // lets reductions use the faster unordered cascading
    std::optional<AssocOp> known;   // one component: enables atomics in permute
};

Combine combine_of(ScalarType t, ExprPtr neutral, CombineFn fn, bool commutative = false);
Combine known_combine(AssocOp op, ScalarType t);
ExprPtr neutral_of(AssocOp op, ScalarType t);  // 0, 1, +inf/max, -inf/min, all ones, 0
ExprPtr apply_op(AssocOp op, ExprPtr a, ExprPtr b);
// The flag-value transformation: (fa, a) + (fb, b) = (fa || fb, fb ? b : a + b).
// A scan with it restarts at every flagged element.
Combine segmented(const Combine& c);

// ---------------------------------------------------------------- arrays
// Several same-shape arrays computed together (a map returning a tuple): one
// `at` returns every component, so shared subexpressions are computed once.
struct PullTuple {
    std::vector<ExprPtr> shape;
    std::vector<ScalarType> elems;
    SharedFunction<std::vector<ExprPtr>(KernelBuilder&, const std::vector<ExprPtr>& index)> at;

    int rank() const { return static_cast<int>(shape.size()); }
};

PullTuple tuple_of(const PullArray& a);
PullTuple tuple_of(const std::vector<PullArray>& arrays);  // equal shapes (checked by the caller)

// A row-major buffer parameter read as a pull array; extents are I64 scalar params.
PullArray buffer_array(const std::string& buffer, ScalarType elem, const std::vector<std::string>& extents);
// The same with the extents as I64 parameter expressions (a fuse context's).
PullArray shaped_buffer_array(const std::string& buffer, ScalarType elem, const std::vector<ExprPtr>& shape);

// Index maps (pull arrays: fused, never materialised). Along axis 0.
// gather: element k is a[idx[k]]; an index outside [0, n) is a runtime error at loc.
PullArray gather_array(const PullArray& idx, const PullArray& a, const Loc& loc);
PullArray reverse_array(const PullArray& a);
// Every element `value` (zeros to fold into, ones to count).
PullArray constant_array(std::vector<ExprPtr> shape, ExprPtr value);
PullArray transposed_array(const PullArray& a);  // rank 2: element [i, j] is a[j, i]
// Rows [start, start + count) of a; start and count are I64 expressions already clamped.
PullArray slice_rows(const PullArray& a, ExprPtr start, ExprPtr count);
PullArray take_array(const PullArray& a, ExprPtr n);  // clamps n to [0, rows]
PullArray drop_array(const PullArray& a, ExprPtr n);  // clamps n to [0, rows]
// The same elements in row-major order with another shape (equal sizes, checked by the caller).
PullArray reshape_array(const PullArray& a, std::vector<ExprPtr> shape);

// The number of elements (I64 product of the extents).
ExprPtr element_count(const std::vector<ExprPtr>& shape);
// Declares in kb every Param of e (kernel code may use host formulas).
ExprPtr use_params(KernelBuilder& kb, const ExprPtr& e);

// ---------------------------------------------------------------- lowerings
// map: outs[k][i] = src.at(i)[k]; one kernel.
void lower_map(PlanBuilder& pb, const std::string& name, const PullTuple& src, const std::vector<std::string>& outs,
               const LoweringOptions& opt = {});

// reduce along the innermost axis: rank 1 -> out[1], rank 2 -> out[rows].
// One output buffer per Combine component.
void lower_reduce(PlanBuilder& pb, const std::string& name, const PullTuple& src, const Combine& op,
                  const std::vector<std::string>& outs, const LoweringOptions& opt = {});
void lower_reduce(PlanBuilder& pb, const std::string& name, const PullArray& src, const Combine& op,
                  const std::string& out, const LoweringOptions& opt = {});

// The reduction of each column of a (rows x cols) into out[cols], for a
// CPU (reads rows contiguously): `sum (transpose m)` without the transpose.
void lower_column_reduce(PlanBuilder& pb, const std::string& name, const PullArray& a, AssocOp op,
                         const std::string& out, const LoweringOptions& opt = {});

// scan / scanExclusive along the innermost axis (rank 1 or 2, each row independently).
enum class ScanKind : uint8_t { Inclusive, Exclusive };
void lower_scan(PlanBuilder& pb, const std::string& name, const PullArray& src, const Combine& op, ScanKind kind,
                const std::string& out, const LoweringOptions& opt = {});
// The general form: every component of src (a tuple element) scanned with a
// Combine over all of them, one output per component; with flags (Bool, same
// shape as src), a segmented scan that restarts where a flag is true.
void lower_scan(PlanBuilder& pb, const std::string& name, const PullTuple& src, const PullArray* flags,
                const Combine& op, ScanKind kind, const std::vector<std::string>& outs,
                const LoweringOptions& opt = {});
// segscan: restarts from the neutral element where flags[i] (Bool, same shape) is true.
void lower_segscan(PlanBuilder& pb, const std::string& name, const PullArray& flags, const PullArray& src,
                   const Combine& op, const std::string& out, const LoweringOptions& opt = {});

// permute op dest target vals: out = dest; for each i: j = target[i]; if 0 <= j < size(dest):
// out[j] = op(out[j], vals[i]). target: I64 pull array shaped like vals; element indices into dest.
void lower_permute(PlanBuilder& pb, const std::string& name, const PullArray& dest, const PullArray& target,
                   const PullArray& vals, const Combine& op, const std::string& out, const LoweringOptions& opt = {});
// permute f dest target vals with any function f(acc, v), combined in the
// reference's order (for each i in order: out[j] = f(out[j], vals[i])): a
// stable sort of the elements by target, then one thread per target folds
// its run. dest and vals are tuples of the same component types.
void lower_permute_ordered(PlanBuilder& pb, const std::string& name, const PullTuple& dest, const PullArray& target,
                           const PullTuple& vals, const TupleCombineFn& f, const std::vector<std::string>& outs,
                           const LoweringOptions& opt = {});
// scatter dest idx vals: out = dest; rows: out[idx[k]] = vals[k] for idx[k] in range, the largest k wins.
// dest is rank 1 or 2 (then vals is (length idx) x cols).
void lower_scatter(PlanBuilder& pb, const std::string& name, const PullArray& dest, const PullArray& idx,
                   const PullArray& vals, const std::string& out, const LoweringOptions& opt = {});

// a ++ b (rows of a then rows of b; equal inner extents) and interleave a b
// (rows a0 b0 a1 b1 ...; equal shapes), as push arrays: no source-selecting conditional.
void lower_concat(PlanBuilder& pb, const std::string& name, const PullArray& a, const PullArray& b,
                  const std::string& out, const LoweringOptions& opt = {});
void lower_interleave(PlanBuilder& pb, const std::string& name, const PullArray& a, const PullArray& b,
                      const std::string& out, const LoweringOptions& opt = {});

// matmul: out (n x m) = a (n x k) times b (k x m), float or double, through
// shared-memory tiles with several outputs per thread in registers; each
// sum runs over k in order (lower_matmul.cpp).
void lower_matmul(PlanBuilder& pb, const std::string& name, const PullArray& a, const PullArray& b,
                  const std::string& out, const LoweringOptions& opt = {});

// An operand of a product: its elements as a pull array (rank 2) and, when
// they are in memory row-major, the buffer holding them.
struct ProductOperand {
    PullArray pull;
    std::string buffer;        // "" for a fused expression
    bool transposed = false;   // `buffer` holds the operand's transpose (a `transpose` view)
};
// a @ b by the gemm library call into `out` (a buffer of the plan), both
// operands in memory (their buffers set).
void lower_gemm(PlanBuilder& pb, const ProductOperand& a, const ProductOperand& b, const std::string& out,
                const std::string& why);

// An operand of solve, inv or det: its elements as a pull array, or a
// product of two operands in memory (both set) that the plan's gemm call
// writes straight into the buffer LAPACK works on, where a kernel would copy
// the pull array: `solve (transpose X @ X) (transpose X @ y)` is one plan.
struct MatrixOperand {
    PullArray pull;  // its shape always; its elements unless a product
    std::optional<std::pair<ProductOperand, ProductOperand>> product;
};

// solve / inv through the "lu" library call (lower_linalg.cpp): out = a^-1 b
// (b rank 1: out has n elements; rank 2: n x k row-major), or a^-1 when b is
// null. A singular a raises `singular` ({index}: the zero pivot, {extent}: n) at loc.
void lower_solve(PlanBuilder& pb, const std::string& name, const MatrixOperand& a, const MatrixOperand* b,
                 const std::string& singular, const Loc& loc, const std::string& out, const LoweringOptions& opt = {});
// lstsq: out = the minimum-norm least-squares solution of a x = b (a m x n,
// b m or m x k; out n or n x k row-major) through the "svd" library call and
// two gemm calls; a failed SVD raises `no_convergence` at loc.
void lower_lstsq(PlanBuilder& pb, const std::string& name, const PullArray& a, const PullArray& b,
                 const std::string& no_convergence, const Loc& loc, const std::string& out, const LoweringOptions& opt = {});
// det: out[1] = the determinant of a (n x n), from the same call.
void lower_det(PlanBuilder& pb, const std::string& name, const MatrixOperand& a, const std::string& out,
               const LoweringOptions& opt = {});

// matmul as the target does it best: with opt.library_gemm, a gemm library
// call where both operands are in memory; where one is a fused expression,
// a run-time choice (a plan guard) between materialising it for the call
// and the tiled kernel with the expression fused (lower_matmul.cpp says
// when); without a library, lower_matmul.
void lower_product(PlanBuilder& pb, const std::string& name, const ProductOperand& a, const ProductOperand& b,
                   const std::string& out, const LoweringOptions& opt = {});

// transpose of a rank-2 array through shared-memory tiles.
void lower_transpose(PlanBuilder& pb, const std::string& name, const PullArray& a, const std::string& out,
                     const LoweringOptions& opt = {});

// filter: keeps the rows i of every vals[k] (rank 1) where keep[i]; the count
// is read back into the plan scalar `count` and sizes the outputs.
void lower_filter(PlanBuilder& pb, const std::string& name, const PullArray& keep, const std::vector<PullArray>& vals,
                  const std::vector<std::string>& outs, const std::string& count, const LoweringOptions& opt = {});

// sort / sortByKey: a stable ascending radix sort in the reference's order
// (NaNs last and equal to each other, -0.0 equal to 0.0; keys keep their
// exact bits). Keys are bool, i32, i64, f32 or f64. Without vals: sorts each
// innermost row of keys (any rank) into keys_out. With vals: keys are rank 1,
// keys_out gets them sorted and vals_out[k] the rows of vals[k] (any rank and
// type, outer extent = the number of keys) in the same stable order.
// With max_key (a host expression), the keys are known to be integers in
// [0, max_key]: digit passes above max_key's highest bit are skipped at run
// time (their digits are equal in every key, so the order is the same).
void lower_sort(PlanBuilder& pb, const std::string& name, const PullArray& keys, const std::vector<PullArray>& vals,
                const std::string& keys_out, const std::vector<std::string>& vals_out, const LoweringOptions& opt = {},
                ExprPtr max_key = nullptr);

}  // namespace shoal::ir
