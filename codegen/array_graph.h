// The delayed array graph of the fusion engine (docs/compiler.md, "Delayed
// arrays"): array builtins return nodes whose shape and element type are
// known at once and whose elements are a pull array built on demand, so a
// consumer fuses every producer it reads into its own kernels. Also the
// helpers on values the producers and consumers share: array-likes (an
// operand, or a tuple of operands of one shape: an array of tuples), their
// leaves, and replays on the reference evaluator.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codegen/compile_function.h"
#include "codegen/lower_primitives.h"
#include "codegen/row_values.h"
#include "lang/eval.h"

namespace shoal::compiled {

using ir::PullArray;

// How to recompute a node with the reference evaluator, when its function
// turns out not to compile: the builtin call again, on forced arguments. The
// result is forced (an array, or a tuple of arrays for a map returning a tuple).
using Replay = std::function<Value()>;

class FusionEngine;

// Same-shape nodes computed together: one for most builtins, one per
// component for a map returning a tuple. Forcing any member forces all of
// them through one map kernel with an output per component, so the work they
// share (Black-Scholes' call and put) is done once.
struct NodeGroup {
    // pull and replay hold the node's operands: both are dropped once the
    // group is computed, so that a computed node does not keep the graph
    // that made it alive (an `iterate` of updates kept every step's array).
    mutable std::function<ir::PullTuple(FuseContext&)> pull;
    std::vector<Prim> elems;
    Shape shape;
    mutable Replay replay;
    EvalContext ctx;  // a copy: a node may be forced after its statement's context is gone
    int64_t weight = 1;  // nodes fused into this one (bounded, see fusion_weight)
    Loc origin;          // the builtin call that made it (the kernel comment `:cuda` shows)
    std::string what;    // that builtin's name ("map", "-", "slice"), for `:profile`'s fusion decisions
    // Empty until computed; then one array per member, in host or device
    // memory (the executor's), rank 1: the node's shape is `shape`.
    mutable std::vector<ir::ArrayData> forced;
    mutable std::string why_forced;  // why it was materialised rather than fused (`:profile`)
    // `transpose a` of an array in memory is a view (NumPy's `.T`): fused
    // into a consumer it reads `a` with its axes swapped, a product passes
    // `a` to the BLAS as a transposed operand, and forced it is the tiled
    // transpose kernel. On a CPU a delayed `a` is viewed too (consumers.cpp
    // push). Unset for every other node, and once the node is computed.
    mutable std::optional<Value> transpose_of;
    // The arrays it reads element for element at its own index (an
    // elementwise operator's operands of its shape, transitively), for the
    // broadcasting footgun's provenance (row_values.h).
    AlignedSources aligned;
    // It reads a transpose view at its own index: it is one (transpose_of),
    // or an elementwise operator reads one (`transpose m - col mu`). A CPU
    // folds its rows as the columns of its transpose, which reads the view's
    // source row by row (known_reduce). Unset once the node is computed.
    mutable bool reads_transposed = false;
    // `a @ b` that the BLAS computes from operands in memory: computed when
    // first read (pull_of, memory_buffer), so that solve, inv and det can
    // put the gemm call into their own plan instead (FusionEngine::
    // product_node). Unset for every other node, and once it is computed.
    mutable std::optional<std::pair<Value, Value>> product_of = std::nullopt;
    // Whether reading an element can raise an error (materialise_if_skipped_may_raise
    // asks once: it builds the pull to see).
    mutable std::optional<bool> may_raise = std::nullopt;
};

// A node of the delayed graph: shape and element type known eagerly, the
// elements described as a pull array built on demand in a FuseContext.
class Node final : public DelayedArray {
public:
    using MakePull = std::function<PullArray(FuseContext&)>;
    Node(std::shared_ptr<FusionEngine> backend, std::shared_ptr<const NodeGroup> group, size_t component,
         MakePull pull)
        : backend_(std::move(backend)), group_(std::move(group)), component_(component), pull_(std::move(pull)) {}

    Prim elem() const override { return group_->elems[component_]; }
    const Shape& shape() const override { return group_->shape; }
    ArrayPtr force() const override;
    void compute() const override;
    // None while a loop step is recorded: the value stays a node, so that a
    // host read of its elements goes through force() and is seen.
    ArrayPtr host() const override;
    // compute(), saying why it is materialised rather than fused into its consumer.
    void compute_because(const std::string& why) const;
    // "map at <stdin>:1:9" ("" for a computed result with no origin).
    std::string description() const;
    const NodeGroup& group() const { return *group_; }
    // Whether this node (or a sibling) was computed; then data() is its memory.
    bool computed() const { return !group_->forced.empty(); }
    const ir::ArrayData& data() const { return group_->forced.at(component_); }
    // The nodes a consumer would fuse by fusing this one (0 once computed).
    int64_t weight() const { return computed() ? 0 : group_->weight; }
    PullArray pull(FuseContext& fc) const { return pull_(fc); }  // only while not computed

private:
    std::shared_ptr<FusionEngine> backend_;
    std::shared_ptr<const NodeGroup> group_;
    size_t component_;
    mutable MakePull pull_;  // dropped once computed (its operands with it)
};


// ---------------------------------------------------------------- values
// An array operand of the compiled subset: a host Array or one of our nodes.
bool is_operand(const Value& v);
// Whether a value or a builtin's result involves arrays (what the backend
// should compute rather than the reference evaluator).
bool holds_array(const Value& v);
bool holds_array_type(const Type& fn_type, size_t arity);
Shape shape_of(const Value& v);
Prim elem_of(const Value& v);
// The shapes of `a @ b` (NumPy's ranks: a vector on the left is a 1 x k row,
// on the right a k x 1 column, and that axis is dropped from the result):
// null unless both are operands of rank 1 or 2 with equal inner extents
// (the reference evaluator raises the error).
struct ProductShape {
    bool a_is_matrix = true, b_is_matrix = true;
    int64_t n = 1, k = 0, m = 1;
    Shape result;  // (n, m) less the dropped axes; empty: a scalar
};
std::optional<ProductShape> product_shape(const Value& a, const Value& b);
// Whether the BLAS reads an operand from memory as it is: a host array, a
// computed node, a product node (computed when read) or a `transpose` view
// of one of those.
bool in_memory_for_blas(const Value& v);
// The product node v is, while it is not computed (NodeGroup::product_of).
const Node* pending_product(const Value& v);
// A product's inner extent up to which it is a map (FusionEngine::thin_product).
constexpr int64_t kThinInner = 8;
// A product's result size up to which, past a thin inner extent, it is a
// reduction over the inner index (FusionEngine::matmul).
constexpr int64_t kTinyProduct = 16;

// ---------------------------------------------------------------- array-likes
// An array of tuples is a tuple of arrays of one shape (docs/language.md):
// an array-like is an operand or a tuple of array-likes of one shape; its
// leaves are the operands in order.
std::vector<Value> leaves(const Value& v);
bool is_like(const Value& v);
Shape like_shape(const Value& v);
// The value with the structure of `like` and these leaves.
Value rebuild(const Value& like, const std::vector<Value>& ls);
// The value of Shoal type `t` built from leaves (consumed from `at`): one per
// scalar of a tuple of scalars, or one per array of an array of tuples (which
// the type checker may also write as a tuple of arrays).
Value rebuild_type(const Type& t, const std::vector<Value>& ls, size_t& at);
// The element type of an array-like (or the type of a scalar or tuple of scalars).
Type elem_type(const Value& v);
// The scalar leaves of a scalar or a tuple of scalars; false for anything else.
bool scalar_leaves(const Value& v, std::vector<Scalar>& out);
// The leaf element types of a Shoal type made of scalars, tuples and arrays
// of them (the element types of an array of tuples).
bool prim_leaves(const Type& t, std::vector<Prim>& out);
std::vector<Prim> prims_of(const Value& like);
std::vector<ir::ScalarType> scalar_types(const std::vector<Prim>& ps);
// Applies `make` to every leaf of an array-like, keeping its structure.
Value per_leaf(const Value& v, const std::function<Value(const Value& leaf, size_t k)>& make);

// ---------------------------------------------------------------- pull arrays
// The pull array reading an operand: a host array (or a computed node, in
// host or device memory) is an input buffer; a node not computed fuses.
PullArray pull_of(const Value& v, FuseContext& fc);
std::vector<PullArray> pulls_of(const Value& v, FuseContext& fc);
// The pull array of an operand that the reader reads only in part (a slice,
// take, drop, the source of a gather, scanExclusive, which skips each row's
// last element). Where reading an element of it can raise an error (a
// gather's bounds, an index in a function), the operand is materialised
// first: an element the reader skips must still raise the error the
// reference evaluator raises, never give a result in silence. `reader`
// names the reader for `:profile`.
PullArray partial_pull_of(const Value& v, FuseContext& fc, const std::string& reader);
// Only the decision of partial_pull_of (for readers that pull later).
void materialise_if_skipped_may_raise(const Value& v, const EvalContext& ctx, const std::string& reader);
// The input buffer holding an operand's elements (row-major) when they are
// in memory (a host array, a computed node); "" for a node that would fuse.
std::string memory_buffer(const Value& v, FuseContext& fc);
// Extent parameters for a concrete shape.
std::vector<ir::ExprPtr> extents(FuseContext& fc, const Shape& s);
ir::ExprPtr use(ir::KernelBuilder& kb, const ir::ExprPtr& p);
// The elements of several pull arrays at one index, each bound once.
std::vector<ir::ExprPtr> element_at(ir::KernelBuilder& kb, const std::vector<PullArray>& xs,
                                    const std::vector<ir::ExprPtr>& i);

// ---------------------------------------------------------------- replays
// The reference evaluator's result of one builtin call, forced (a node whose
// function turns out not to compile is computed this way).
Replay make_replay(const std::string& name, const Type& type, std::span<const Value> args, const EvalContext& ctx,
                   const Loc& loc);
// Leaf k of a replayed array-like.
Replay leaf_replay(Replay whole, size_t k);

// ---------------------------------------------------------------- fusion bound
// Fusion is bounded: a graph built by a long loop (`iterate 1000 f x`), or
// one that shares a node many times (x = x + x repeated), would otherwise
// become one enormous kernel. A node whose fused graph would exceed this many
// nodes forces its operands first (then they are buffers, weight 0).
constexpr int64_t kMaxFusedNodes = 200;
// The weight of a node reading `operands`, each `reads` times per element
// (a product's inner extent: its fused operands are repeated that often in
// the kernel, and a loop of `a @ m` would grow the kernel exponentially),
// forcing them first when it would exceed kMaxFusedNodes.
int64_t bounded_weight(const std::vector<Value>& operands, int64_t reads = 1);
// A value's identity with the arrays it reads at its own index (NodeGroup::aligned).
AlignedSources aligned_sources(const Value& v);

}  // namespace shoal::compiled
