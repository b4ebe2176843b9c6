// Sharded arrays (docs/scale-out.md, "Layouts"): on a session of several
// ranks, an array of at least `:set shard N` elements is split into
// contiguous blocks of its leading axis, one per rank. Each rank holds and
// computes only its block; the array compiler fuses the block's work as it
// would the whole array's.
//
// ShardingBackend sits in front of the session's array backend (the fusion
// engine). It makes sharded arrays (`iota`, `random`, `fill`, `generate`,
// `load`: each rank reads its rows), writes them (`save`: each its rows),
// keeps elementwise and per-row work local, folds, scans, filters and sorts
// across the ranks (ir::Comm), moves only the rows another rank needs for
// slices and updates (a stencil's halo), and answers `length` from the
// layout. Any other builtin given a sharded array gathers it whole on every
// rank first, and says so (a warning naming the builtin): nothing falls back
// in silence. docs/scale-out.md has the table.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "codegen/comm.h"
#include "lang/array_ops.h"
#include "lang/eval.h"
#include "lang/value.h"

namespace shoal::compiled {

// Contiguous, balanced blocks of the leading axis: rank r of R holds rows
// [floor(n r / R), floor(n (r + 1) / R)), so sizes differ by at most one
// and a rank may hold none (fewer rows than ranks).
struct Layout {
    Shape global;
    int ranks = 1;
    int64_t begin(int r) const { return global.empty() ? 0 : global[0] * r / ranks; }
    int64_t end(int r) const { return begin(r + 1); }
    int64_t row_elements() const;  // elements per row of the leading axis
    Shape local_shape(int r) const;
    bool operator==(const Layout& o) const { return global == o.global && ranks == o.ranks; }
};

class ShardedArray final : public DelayedArray {
public:
    ShardedArray(Layout layout, std::shared_ptr<ir::Comm> comm, Value local);
    Prim elem() const override { return elem_; }
    const Shape& shape() const override { return layout_.global; }
    // The whole array on every rank: the blocks gathered (every rank forces
    // it at the same point of the statement, as every rank runs it).
    ArrayPtr force() const override;
    void compute() const override;
    std::string layout_description() const override;
    bool distributed() const override { return true; }
    // Only the rows asked for move (printing shows a few).
    ArrayPtr rows(const std::vector<int64_t>& which) const override;

    const Layout& layout() const { return layout_; }
    const Value& local() const { return local_; }
    // The whole array when it has been gathered already (every rank alike).
    const ArrayPtr& gathered() const { return gathered_; }
    // Halo rows: every rank's block widened by (rows before, rows after)
    // from its neighbours, and this rank's widened block (a host array):
    // the slices of a stencil read it, fused, without moving rows again.
    // The same on every rank's copy of the array (decided from the layout).
    const std::vector<std::pair<int64_t, int64_t>>& halo() const { return halo_; }
    const Value& widened() const { return widened_; }
    void set_halo(std::vector<std::pair<int64_t, int64_t>> halo, Value widened) const {
        halo_ = std::move(halo);
        widened_ = std::move(widened);
    }
    int rank() const { return comm_->rank(); }

private:
    // Every rank's `mine` (none: nothing), concatenated in rank order into
    // an array of `shape` on every rank.
    ArrayPtr gather_in_rank_order(const Array* mine, const Shape& shape) const;

    Layout layout_;
    std::shared_ptr<ir::Comm> comm_;
    mutable Value local_;
    Prim elem_;
    mutable ArrayPtr gathered_;
    mutable std::vector<std::pair<int64_t, int64_t>> halo_;
    mutable Value widened_;
};

class ShardingBackend final : public ArrayBackend {
public:
    // `inner`: the session's backend, which computes each block; `threshold`:
    // the fewest elements an array made here is sharded at.
    ShardingBackend(ArrayBackend* inner, std::shared_ptr<ir::Comm> comm);
    void set_threshold(int64_t elements) { threshold_ = elements; }

    std::optional<Value> apply_builtin(std::string_view name, const Type& type, std::span<const Value> args,
                                       EvalContext& ctx, const Loc& loc) override;
    std::optional<Value> slice(const Value& a, std::span<const ops::AxisSelect> sel, const Loc& loc) override;
    std::optional<Value> update(const Value& a, std::span<const ops::AxisSelect> sel, const Value& v,
                                const Loc& loc) override;
    int64_t plans_run() const override { return inner_->plans_run(); }
    std::unique_ptr<LoopReplay> replay_loop(const EvalContext& ctx) override;

private:
    std::optional<Value> make_sharded(std::string_view name, const Type& type, std::span<const Value> args,
                                      EvalContext& ctx, const Loc& loc);
    Value make_blocks(std::string_view name, const Layout& layout, const Type& type, std::span<const Value> args,
                      EvalContext& ctx, const Loc& loc);
    // first, first + 1, ... (`count` of them) by the engine: a block's global row indices.
    Value global_rows(int64_t first, int64_t count, EvalContext& ctx, const Loc& loc);
    // generate (vectors, matrices) over row blocks: the function applied to the block's global indices.
    Value generate_blocks(const Shape& global, const Type& type, const Value& f, EvalContext& ctx, const Loc& loc);
    Value sharded(const Layout& layout, Value local) const;
    Value local_builtin(std::string_view name, const Type& type, std::span<const Value> args, EvalContext& ctx,
                        const Loc& loc);
    Value fold_across_ranks(std::string_view name, const Type& type, const ShardedArray& x, EvalContext& ctx,
                            const Loc& loc);
    // v[sel] by the engine (delayed, fused into what reads it), else on the host.
    Value select(const Value& v, std::span<const ops::AxisSelect> sel, const Loc& loc);
    // This rank's rows of `x` laid out like `layout`: a sharded x's own block
    // (its rows are laid out alike), else its rows of the whole array.
    Value rows_of(const Value& x, const Layout& layout, const Loc& loc);

    // ---- rows on the move (sharding_rows.cpp)
    // `block` holds rows [first, first + its rows) of an array of `total`
    // rows on this rank; the ranks' blocks do not overlap and cover it.
    // The rows each rank wants (`want[r]`: [begin, end)), sent by alltoall.
    ArrayPtr move_rows(const Array& block, int64_t first, const std::vector<std::pair<int64_t, int64_t>>& want);
    // The array whole on every rank (allgather).
    ArrayPtr gather_rows(const Array& block, int64_t first, int64_t total);
    // Sharded in balanced blocks, or whole below the threshold.
    Value rebalanced(const Array& block, int64_t first, int64_t total);
    // Every rank's `block` (rows of a result, in rank order: a filter's or a
    // sort's), rebalanced by the prefix of the ranks' row counts.
    Value rebalanced_in_rank_order(const Array& block);
    // `sel` (a full selection of the global array) applied to this rank's
    // block: the rows of it this rank holds, and their first output row.
    std::pair<Value, int64_t> select_local(const ShardedArray& a, std::vector<ops::AxisSelect> sel, const Loc& loc);
    Value sharded_slice(const ShardedArray& a, std::span<const ops::AxisSelect> sel, const Loc& loc);
    // A slice with step 1 along the leading axis into balanced blocks: each
    // rank's rows are its own and a few of its neighbours' (the halo).
    // gather idx xs, xs sharded: each rank asks the owners for the rows its
    // share of idx names (an all-to-all of row numbers, then of rows).
    Value gather_across_ranks(const Value& idx, const ShardedArray& xs, const Loc& loc);
    // scatter dest idx vals, dest sharded: each write goes to the rank that
    // owns its row (an all-to-all of the pairs when idx or vals is sharded;
    // none when both are whole), and each owner applies its writes in the
    // order of k, as one rank would. nullopt: the shapes disagree or the
    // values are tuples (gathered then, and the error or the result is one rank's).
    std::optional<Value> scatter_across_ranks(const Type& type, std::span<const Value> args, const ShardedArray& dest,
                                              EvalContext& ctx, const Loc& loc);
    // permute f dest g vals, dest sharded: the targets g i of each rank's
    // share of vals (all of a whole vals, on every rank: no communication)
    // go with their rows to the owners (an all-to-all), and each owner
    // combines them into its rows in the order of i, as one rank would.
    // nullopt as scatter's.
    std::optional<Value> permute_across_ranks(const Type& type, std::span<const Value> args, const ShardedArray& dest,
                                              EvalContext& ctx, const Loc& loc);
    // The writes of a scatter or permute into `dest`'s rows: `targets` (an
    // int vector of global rows, one per row of `rows`) of this rank's
    // share of the pairs, sent to their owners in order; returns the local
    // rows (ints) and the rows of values this rank received, in rank order.
    std::pair<Value, Value> send_to_owners(const Array& targets, const Array& rows, const Layout& dest);
    // reshape s x, flatten x (x sharded, the sizes agreeing): the elements
    // keep their row-major order, so each rank sends the ones another
    // rank's rows of the new shape hold (most stay where they are).
    Value reshape_across_ranks(const Shape& to, const ShardedArray& x);
    // transpose m, m a sharded matrix: rank s gets rows [begin s, end s) of
    // the result, the columns it is made of from every rank (an all-to-all
    // of the sub-blocks, each transposed by its sender).
    Value transpose_across_ranks(const ShardedArray& m);
    // a ++ b, either sharded (the same row shape): rebalanced over the ranks.
    Value concat_across_ranks(const Value& a, const Value& b, const Loc& loc);
    Value halo_slice(const ShardedArray& a, std::vector<ops::AxisSelect> sel, const Loc& loc);
    std::optional<Value> sharded_update(const ShardedArray& a, std::span<const ops::AxisSelect> sel, const Value& v,
                                        const Loc& loc);

    // ---- .npy files (sharding_files.cpp)
    // load of a file of at least the threshold's elements: each rank reads
    // its rows. nullopt: whole (small) or the engine's error.
    std::optional<Value> load_blocks(const Type& type, std::span<const Value> args, const Loc& loc);
    // save of a sharded array: each rank writes its rows into one file.
    // nullopt: the path is no regular file (rank 0 writes it whole).
    std::optional<Value> save_blocks(std::span<const Value> args, const ShardedArray& x, const Loc& loc);

    // ---- folds, scans, filters and sorts across ranks (sharding_order.cpp)
    // reduce f x0 x[1:] of a non-empty block: its fold without z.
    Value fold_block(const Value& f, const Type& reduce_type, const Value& block, EvalContext& ctx, const Loc& loc);
    Value reduce_across_ranks(const Type& type, std::span<const Value> args, const ShardedArray& x, EvalContext& ctx,
                              const Loc& loc);
    Value extreme_across_ranks(std::string_view name, const Type& type, const ShardedArray& x, EvalContext& ctx,
                               const Loc& loc);
    Value scan_across_ranks(std::string_view name, const Type& type, std::span<const Value> args,
                            const ShardedArray& x, EvalContext& ctx, const Loc& loc);
    Value filter_across_ranks(std::string_view name, const Type& type, std::span<const Value> args,
                              EvalContext& ctx, const Loc& loc);
    Value sort_across_ranks(const Type& type, const ShardedArray& x, EvalContext& ctx, const Loc& loc);
    // sortByKey keys vals (vectors, either sharded): the sample sort with
    // the values carried along; nullopt when the lengths differ (gathered:
    // one rank's error).
    std::optional<Value> sort_by_key_across_ranks(const Type& type, std::span<const Value> args, EvalContext& ctx,
                                                  const Loc& loc);
    // count p x, tally n x of a vector: each rank counts its block, and the
    // counts are added across the ranks (exact: integers).
    Value counted_across_ranks(std::string_view name, const Type& type, std::span<const Value> args,
                               const ShardedArray& x, EvalContext& ctx, const Loc& loc);
    // v @ b, v a sharded vector (b a vector or matrix of v's length, whole or
    // sharded alike): each rank's rows of the product, added across the
    // ranks in rank order (as a float sum is: docs/scale-out.md).
    Value vector_product_across_ranks(std::string_view name, const Type& type, const ShardedArray& v, const Value& b,
                                      EvalContext& ctx, const Loc& loc);
    // Each rank's one-element result of `part` (none where its block is
    // empty), gathered in rank order: the ranks' partial results.
    std::vector<std::optional<Scalar>> partials(const ShardedArray& x, const std::function<Value()>& part);
    // compress's mask and rows: sharded alike, or one whole with the other's rows.
    bool same_rows(const Value& mask, const Value& rows) const;
    // v whole (gathered) if it is sharded, with a warning naming `what` needed it.
    Value gathered(const std::string& what, const Value& v, const Loc& loc);
    // The sharded arrays the function arguments read (through their closures),
    // gathered whole on every rank now, with a warning: a kernel that reads
    // one runs on some ranks only (not on an empty block), so it must not
    // gather it itself.
    void gather_function_reads(std::string_view builtin, std::span<const Value> args, EvalContext& ctx,
                               const Loc& loc);

    ArrayBackend* inner_;
    std::shared_ptr<ir::Comm> comm_;
    int64_t threshold_ = 0;
    std::vector<Warning>* warnings_ = nullptr;  // the statement's (the session keeps one list)
};

// A checking-mode error raised on a block names its row (`what` " of row ")
// or element (" at element ") within the block: renumbered by the block's
// first, so it names the one it is in the whole array, as alone.
void renumber_error(Error& e, std::string_view what, int64_t offset);

// The fold across ranks of sum, product, maximum, minimum, all and any (each
// rank folds its block, then the blocks' results are folded in rank order).
std::optional<ir::CommOp> fold_op(std::string_view name);

// An array in memory or delayed (a sharded one included), not a tuple of them.
inline bool array_like(const Value& v) { return v.is_array() || v.is_delayed(); }

// The sharded array a value is, or null.
const ShardedArray* as_sharded(const Value& v);
// Each leaf of a block's result as a sharded array whose rows are the
// result's rows: the leading axis keeps its layout (`like`'s).
Value wrap_blocks(const Value& local, const Layout& like, const std::shared_ptr<ir::Comm>& comm);

}  // namespace shoal::compiled
