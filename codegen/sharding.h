// Sharded arrays (docs/scale-out.md, "Layouts"): on a session of several
// ranks, an array of at least `:set shard N` elements is split into
// contiguous blocks of its leading axis, one per rank. Each rank holds and
// computes only its block; the array compiler fuses the block's work as it
// would the whole array's.
//
// ShardingBackend sits in front of the session's array backend (the fusion
// engine). It makes sharded arrays (`iota`, `random`, `fill`), keeps
// elementwise work local, folds reductions across the ranks (ir::Comm), and
// answers `length` and `shape` from the layout. Any other builtin given a
// sharded array gathers it whole on every rank first, and says so (a warning
// naming the builtin): nothing falls back in silence.
#pragma once
#include <memory>
#include <string>

#include "codegen/comm.h"
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

    const Layout& layout() const { return layout_; }
    const Value& local() const { return local_; }
    int rank() const { return comm_->rank(); }

private:
    Layout layout_;
    std::shared_ptr<ir::Comm> comm_;
    mutable Value local_;
    Prim elem_;
    mutable ArrayPtr gathered_;
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
    Value local_builtin(std::string_view name, const Type& type, std::span<const Value> args, EvalContext& ctx,
                        const Loc& loc);
    Value fold_across_ranks(std::string_view name, const Type& type, const ShardedArray& x, EvalContext& ctx,
                            const Loc& loc);
    // This rank's rows of a whole (replicated) array laid out like `layout`.
    Value rows_of(const Value& whole, const Layout& layout, const Loc& loc);
    // v whole (gathered) if it is sharded, with a warning naming `what` needed it.
    Value gathered(const std::string& what, const Value& v, const Loc& loc);

    ArrayBackend* inner_;
    std::shared_ptr<ir::Comm> comm_;
    int64_t threshold_ = 0;
    std::vector<Warning>* warnings_ = nullptr;  // the statement's (the session keeps one list)
};

// The sharded array a value is, or null.
const ShardedArray* as_sharded(const Value& v);

}  // namespace shoal::compiled
