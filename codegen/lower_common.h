// Helpers shared by the lower_*.cpp files (not part of the lowering API,
// which is codegen/lower_primitives.h).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/lower_primitives.h"

namespace shoal::ir::lowering {

// blockIdx.x * blockDim.x + threadIdx.x and gridDim.x * blockDim.x, as I64.
ExprPtr global_thread();
ExprPtr grid_threads();
ExprPtr tid64();  // threadIdx.x as I64
ExprPtr i32(int64_t v);     // an I32 constant (shared-memory indices, thread positions)
ExprPtr widen(ExprPtr e);   // e as I64 (a global index from an I32 position)

// The value of a host expression whose plan scalars the facts know (null e is 0), or none.
std::optional<int64_t> known_value(const ExprPtr& e, const LoweringFacts& facts);
// The same through opt.facts: none without facts (during :emit's trace).
std::optional<int64_t> known_value(const ExprPtr& e, const LoweringOptions& opt);

// Host formula for a grid of about n / per_block blocks, capped: min(ceil(n / per_block), max_blocks).
ExprPtr capped_grid(ExprPtr n, int64_t per_block, int64_t max_blocks);

// for (i = global thread; i < n; i += all threads) body(i): the grid-stride loop.
void grid_stride_loop(KernelBuilder& kb, ExprPtr n, const std::function<void(ExprPtr i)>& body);
// Emits `for (v = lo; v < hi; v += step) body(v)` as thread code.
void thread_loop(KernelBuilder& kb, const std::string& prefix, ExprPtr lo, ExprPtr hi, ExprPtr step,
                 const std::function<void(ExprPtr v)>& body);
// Emits `if (cond) then() [else otherwise()]`.
void emit_if(KernelBuilder& kb, ExprPtr cond, const std::function<void()>& then,
             const std::function<void()>& otherwise = nullptr);

// The multi-index of row-major element i of an array of this shape.
std::vector<ExprPtr> unflatten(KernelBuilder& kb, ExprPtr i, const std::vector<ExprPtr>& shape);
// Element i (row-major) of a pull tuple: every component.
std::vector<ExprPtr> flat_at(KernelBuilder& kb, const PullTuple& src, ExprPtr i);

// let-binds every value (Barracuda's slet), so using one twice never duplicates code.
std::vector<ExprPtr> bind_all(KernelBuilder& kb, const std::string& prefix, const std::vector<ExprPtr>& values);
// Declares mutable variables initialised to values; returns their Vars.
std::vector<ExprPtr> declare_vars(KernelBuilder& kb, const std::string& prefix, const std::vector<ExprPtr>& values);
void assign_all(KernelBuilder& kb, const std::vector<ExprPtr>& vars, const std::vector<ExprPtr>& values);
// op(a, b) with both operands bound first.
std::vector<ExprPtr> combine(KernelBuilder& kb, const Combine& op, const std::vector<ExprPtr>& a,
                             const std::vector<ExprPtr>& b);

// One shared array per component of op ("name0", "name1", ...).
std::vector<std::string> shared_arrays(KernelBuilder& kb, const std::string& name, const std::vector<ScalarType>& types,
                                       int64_t size);
std::vector<ExprPtr> load_all(const std::vector<std::string>& mems, const std::vector<ScalarType>& types, ExprPtr index,
                              MemSpace space);
void store_all(KernelBuilder& kb, const std::vector<std::string>& mems, ExprPtr index, const std::vector<ExprPtr>& values,
               MemSpace space);

// Registers a kernel and launches it.
void add_launch(PlanBuilder& pb, KernelBuilder& kb, ExprPtr grid, const std::string& comment);
// out[j] = dest[j] folded with partials[b * m + j] for every block b < blocks,
// in block order (m: dest's element count): the second pass of a lowering
// whose blocks each folded into their own row of partials (permute's bins
// and private copies, column reductions).
void fold_partials(PlanBuilder& pb, const std::string& name, const PullArray& dest, const std::string& partials,
                   const ExprPtr& blocks, AssocOp op, const std::string& out, const LoweringOptions& opt,
                   const std::string& comment);

// Shared-memory reduction of one value per thread (left in vars) to element 0
// of the shared arrays `tree`, as log2(block) phases. Ends the current phase
// first. When `ordered`, pairs are adjacent (tree[2s*t] + tree[2s*t + s]), so
// non-commutative operators are combined in order.
void block_tree_reduce(KernelBuilder& kb, const Combine& op, const std::vector<std::string>& tree,
                       const std::vector<ExprPtr>& values, bool ordered);

}  // namespace shoal::ir::lowering

namespace shoal::ir::lowering {

// Ordered, coalesced processing of elements [lo, hi) by one block, in tiles
// of block * items_per_thread elements staged through shared memory (padded
// against bank conflicts): each thread folds its items_per_thread adjacent
// elements sequentially, a Hillis-Steele scan combines the thread totals
// across the block, and the block's carry (thread-local copies, equal in
// every thread) absorbs each tile in order. With `output`, every element's
// scan value (inclusive or exclusive of the element, seeded by the carry) is
// passed to output(g, value) in a coalesced final phase.
struct TileScan {
    Combine op;
    int items_per_thread = 8;
    std::function<std::vector<ExprPtr>(KernelBuilder&, ExprPtr g)> element;  // the carrier value of element g
    std::function<void(KernelBuilder&, ExprPtr g, const std::vector<ExprPtr>& value)> output;  // null: totals only
    ScanKind kind = ScanKind::Inclusive;
    // shared memory, made by prepare()
    std::vector<std::string> stage, scan_a, scan_b;

    void prepare(KernelBuilder& kb);
    // Emits the tile loop (a BlockFor); ends the current phase first.
    void emit(KernelBuilder& kb, ExprPtr lo, ExprPtr hi, const std::vector<ExprPtr>& carry);
};

// Index of element k of a staged tile: one padding slot every 32 elements.
ExprPtr padded(ExprPtr k);

}  // namespace shoal::ir::lowering

namespace shoal::ir::lowering {

// Ordered fold of chunks (lower_scan.cpp): block b folds elements
// [b * chunk, min((b + 1) * chunk, n)) in order and writes the total to
// outs[k][b]; `chunk` is an I64 plan scalar (a multiple of the scan tile).
void lower_ordered_totals(PlanBuilder& pb, const std::string& kernel_name, const Combine& op,
                          const std::function<std::vector<ExprPtr>(KernelBuilder&, ExprPtr g)>& element, ExprPtr n,
                          const std::string& chunk, ExprPtr grid, const std::vector<std::string>& outs,
                          const LoweringOptions& opt, const std::string& comment);

}  // namespace shoal::ir::lowering
