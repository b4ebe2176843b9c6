// Work across the blocks of a sharded vector that depends on what the
// other ranks hold (sharding.h; docs/scale-out.md, "What moves"):
//  - fold (sum, ..., reduce f z): each block's fold, then the blocks'
//    results folded in rank order;
//  - scan: the blocks' totals, each rank's prefix of the totals before it,
//    then the block scanned from that prefix;
//  - filter / compress: each block filtered, then rebalanced by the prefix
//    of the counts;
//  - sort: a sample sort (splitters from an allgather of samples, an
//    all-to-all of the buckets, each bucket sorted, then rebalanced).
// Every rank computes the same combination of the same partial results, so
// the ranks agree bit for bit.
#include <algorithm>
#include <cstring>

#include "codegen/sharding.h"
#include "lang/builtin_helpers.h"
#include "lang/types.h"

namespace shoal::compiled {

std::optional<ir::CommOp> fold_op(std::string_view name) {
    if (name == "sum") return ir::CommOp::Sum;
    if (name == "product") return ir::CommOp::Product;
    if (name == "maximum" || name == "any") return ir::CommOp::Max;
    if (name == "minimum" || name == "all") return ir::CommOp::Min;
    return std::nullopt;
}

namespace {

// The partial results present among the first `upto` ranks, in rank order.
std::optional<Array> present(const std::vector<std::optional<Scalar>>& parts, size_t upto) {
    std::vector<Scalar> have;
    for (size_t r = 0; r < upto && r < parts.size(); ++r)
        if (parts[r]) have.push_back(*parts[r]);
    if (have.empty()) return std::nullopt;
    Array a(have.front().type, {static_cast<int64_t>(have.size())});
    for (size_t k = 0; k < have.size(); ++k) a.set(static_cast<int64_t>(k), have[k]);
    return a;
}

// reduce's type for the function and element of a scan's type
// (a -> a -> a) -> a -> [a] -> [a].
Type reduce_type_of_scan(const Type& scan) {
    const Type f = func_param(scan), elem = func_param(func_result(scan));
    return t_func(std::vector<Type>{f, elem, t_array(1, elem)}, elem);
}

}  // namespace

std::vector<std::optional<Scalar>> ShardingBackend::partials(const ShardedArray& x,
                                                             const std::function<Value()>& part) {
    // [has one, its element type, its bytes] from each rank.
    const bool mine = x.layout().end(x.rank()) > x.layout().begin(x.rank());
    std::vector<char> block{static_cast<char>(mine), 0};
    if (mine) {
        const Scalar p = force(part()).scalar();
        Array one(p.type, {1});
        one.set(0, p);
        block[1] = static_cast<char>(p.type);
        block.insert(block.end(), one.bytes.begin(), one.bytes.end());
    }
    std::vector<int64_t> offsets;
    const std::vector<char> all = comm_->allgather(block.data(), static_cast<int64_t>(block.size()), offsets);
    std::vector<std::optional<Scalar>> parts(static_cast<size_t>(comm_->size()));
    for (size_t r = 0; r < parts.size(); ++r) {
        const char* at = all.data() + offsets[r];
        if (!at[0]) continue;
        Array one(static_cast<Prim>(at[1]), {1});
        std::memcpy(one.bytes.data(), at + 2, one.bytes.size());
        parts[r] = one.get(0);
    }
    return parts;
}

Value ShardingBackend::fold_across_ranks(std::string_view name, const Type& type, const ShardedArray& x,
                                         EvalContext& ctx, const Loc& loc) {
    const std::vector<Value> block{x.local()};
    if (ctx.check && name == "sum" && x.elem() == Prim::Int) {
        // Checking mode: the blocks' exact sums in 64 bits, added exactly, so
        // an int sum that wraps is the error it is alone (with its exact value).
        const Type longs = t_prim(Prim::Long);
        const auto parts = partials(x, [&] {
            const Value wide = local_builtin("long", nullptr, block, ctx, loc);
            return local_builtin("sum", t_func(t_array(1, longs), longs), std::vector<Value>{wide}, ctx, loc);
        });
        int64_t exact = 0;
        for (const auto& p : parts)
            if (p) exact += p->l;
        const auto wrapped = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(exact)));
        if (exact != wrapped)
            ops::raise_int_overflow(std::string(name), "sum", -1, -1, exact, wrapped, "sum in 64 bits with `sum (long xs)`",
                                    loc);
        return Value(Scalar::of_int(wrapped));
    }
    const auto parts = partials(x, [&] { return local_builtin(name, type, block, ctx, loc); });
    std::optional<Array> acc = present(parts, parts.size());
    // Every block empty: the empty array's own answer (0, or its error).
    if (!acc) return local_builtin(name, type, block, ctx, loc);
    for (int64_t k = 1; k < acc->size(); ++k)
        ir::fold_into(acc->bytes.data(), acc->bytes.data() + k * prim_size(acc->elem), 1, ir::scalar_of(acc->elem),
                      *fold_op(name));
    return Value(acc->get(0));
}

Value ShardingBackend::fold_block(const Value& f, const Type& reduce_type, const Value& block, EvalContext& ctx,
                                  const Loc& loc) {
    const ops::AxisSelect first[1] = {ops::AxisSelect{true, 0, 1, 1}};
    const ops::AxisSelect rest[1] = {ops::AxisSelect{false, 1, 1, array_like_shape(block)[0] - 1}};
    return local_builtin("reduce", reduce_type,
                         std::vector<Value>{f, force(select(block, first, loc)), select(block, rest, loc)}, ctx, loc);
}

Value ShardingBackend::reduce_across_ranks(const Type& type, std::span<const Value> args, const ShardedArray& x,
                                           EvalContext& ctx, const Loc& loc) {
    const std::vector<Value> block{args[0], args[1], x.local()};
    // Each block folded from its first element, so that z enters once, as
    // alone (z need not be neutral for the result to be one rank's).
    const auto parts = partials(x, [&] { return fold_block(args[0], type, x.local(), ctx, loc); });
    const std::optional<Array> p = present(parts, parts.size());
    if (!p) return local_builtin("reduce", type, block, ctx, loc);
    return local_builtin("reduce", type, std::vector<Value>{args[0], args[1], Value(std::make_shared<Array>(*p))}, ctx,
                         loc);
}

Value ShardingBackend::extreme_across_ranks(std::string_view name, const Type& type, const ShardedArray& x,
                                            EvalContext& ctx, const Loc& loc) {
    // Each block's first extreme and its value; the first extreme of those
    // values (rank order) names the block, whose index is then made global.
    const std::vector<Value> block{x.local()};
    const auto index = partials(x, [&] { return local_builtin(name, type, block, ctx, loc); });
    const auto value = partials(x, [&] {
        const int64_t i = index[static_cast<size_t>(x.rank())]->i;  // computed on this rank first
        const ops::AxisSelect at[1] = {ops::AxisSelect{true, i, 1, 1}};
        return select(x.local(), at, loc);
    });
    const std::optional<Array> values = present(value, value.size());
    if (!values) return local_builtin(name, type, block, ctx, loc);  // every block empty: its error
    const int64_t k = force(local_builtin(name, type, std::vector<Value>{Value(std::make_shared<Array>(*values))},
                                          ctx, loc))
                          .scalar()
                          .i;
    int64_t seen = 0;
    for (int r = 0; r < comm_->size(); ++r)
        if (value[static_cast<size_t>(r)] && seen++ == k)
            return Value(Scalar::of_int(static_cast<int32_t>(x.layout().begin(r) + index[static_cast<size_t>(r)]->i)));
    internal_error(__FILE__, __LINE__, "sharding: no block holds the extreme");
}

Value ShardingBackend::scan_across_ranks(std::string_view name, const Type& type, std::span<const Value> args,
                                         const ShardedArray& x, EvalContext& ctx, const Loc& loc) {
    const Type reduce_type = type ? reduce_type_of_scan(type) : nullptr;
    const auto totals = partials(x, [&] { return fold_block(args[0], reduce_type, x.local(), ctx, loc); });
    // This block starts from the fold of the blocks before it (z on rank 0).
    Value from = args[1];
    if (const std::optional<Array> before = present(totals, static_cast<size_t>(x.rank())))
        from = local_builtin("reduce", reduce_type,
                             std::vector<Value>{args[0], args[1], Value(std::make_shared<Array>(*before))}, ctx, loc);
    try {
        return sharded(x.layout(), local_builtin(name, type, std::vector<Value>{args[0], from, x.local()}, ctx, loc));
    } catch (Error& e) {  // checking mode: the element as alone
        renumber_error(e, " at element ", x.layout().begin(x.rank()));
        throw;
    }
}

Value ShardingBackend::filter_across_ranks(std::string_view name, const Type& type, std::span<const Value> args,
                                           EvalContext& ctx, const Loc& loc) {
    // filter p xs: xs sharded. compress mask xs: either or both sharded, with
    // the same rows (else nothing is local: the caller gathers).
    const ShardedArray* rows = as_sharded(args[1]) ? as_sharded(args[1]) : as_sharded(args[0]);
    std::vector<Value> block(args.begin(), args.end());
    if (name == "filter") {
        block[1] = rows->local();
    } else {
        for (Value& b : block) b = rows_of(b, rows->layout(), loc);
    }
    return rebalanced_in_rank_order(*force(local_builtin(name, type, block, ctx, loc)).array());
}

namespace {

// The sample sort's buckets of a sorted block (positions [bounds[d],
// bounds[d + 1]) go to rank d): each rank contributes 2 regular samples
// per rank, all of them are sorted alike on every rank, and the splitters
// are evenly spaced in them. Bucket d gets the elements in [splitter d-1,
// splitter d): equal keys go to one bucket on every rank, so their order
// is kept.
template <class T>
std::vector<int64_t> bucket_bounds(const T* xs, int64_t n, ir::Comm& comm) {
    const int ranks = comm.size();
    const int64_t m = std::min<int64_t>(n, 2 * ranks);
    std::vector<T> mine;
    for (int64_t j = 0; j < m; ++j) mine.push_back(xs[(2 * j + 1) * n / (2 * m)]);
    std::vector<int64_t> offsets;
    const std::vector<char> all = comm.allgather(mine.data(), static_cast<int64_t>(mine.size() * sizeof(T)), offsets);
    std::vector<T> samples(all.size() / sizeof(T));
    std::memcpy(samples.data(), all.data(), all.size());
    std::stable_sort(samples.begin(), samples.end(), ops::less_nan_last<T>);
    std::vector<int64_t> bounds{0};
    for (int d = 0; d < ranks; ++d) {
        int64_t to = n;
        if (d + 1 < ranks && !samples.empty()) {
            const T splitter = samples[static_cast<size_t>(d + 1) * samples.size() / static_cast<size_t>(ranks)];
            to = std::lower_bound(xs + bounds.back(), xs + n, splitter, ops::less_nan_last<T>) - xs;
        }
        bounds.push_back(to);
    }
    return bounds;
}

template <class T>
using SortKey = std::conditional_t<std::is_same_v<T, bool>, unsigned char, T>;  // bools are bytes 0 and 1

}  // namespace

Value ShardingBackend::sort_across_ranks(const Type& type, const ShardedArray& x, EvalContext& ctx, const Loc& loc) {
    const int ranks = comm_->size();
    const ArrayPtr sorted = force(local_builtin("sort", type, std::vector<Value>{x.local()}, ctx, loc)).array();
    const int64_t n = sorted->size();
    const int64_t width = prim_size(sorted->elem);
    return ops::with_prim(sorted->elem, [&]<class B>(B) -> Value {
        using T = SortKey<B>;
        const T* xs = sorted->data<T>();
        const std::vector<int64_t> bounds = bucket_bounds(xs, n, *comm_);
        std::vector<std::vector<char>> sends(static_cast<size_t>(ranks));
        for (int d = 0; d < ranks; ++d)
            sends[static_cast<size_t>(d)].assign(reinterpret_cast<const char*>(xs + bounds[static_cast<size_t>(d)]),
                                                 reinterpret_cast<const char*>(xs + bounds[static_cast<size_t>(d) + 1]));
        const std::vector<std::vector<char>> buckets = comm_->alltoall(sends);
        int64_t size = 0;
        for (const auto& b : buckets) size += static_cast<int64_t>(b.size()) / width;
        // The bucket: each rank's sorted run, in rank order, merged pairwise
        // (a merge takes the earlier run's element first: stable).
        auto bucket = std::make_shared<Array>(sorted->elem, Shape{size}, Array::Uninitialised{});
        T* first_run = bucket->data<T>();
        std::vector<int64_t> runs{0};
        for (const auto& b : buckets) {
            std::memcpy(first_run + runs.back(), b.data(), b.size());
            runs.push_back(runs.back() + static_cast<int64_t>(b.size()) / width);
        }
        for (size_t step = 1; step + 1 < runs.size(); step *= 2) {
            for (size_t k = 0; k + step + 1 < runs.size(); k += 2 * step) {
                evalimpl::check_cancel(ctx, loc);
                const size_t end = std::min(k + 2 * step, runs.size() - 1);
                std::inplace_merge(first_run + runs[k], first_run + runs[k + step], first_run + runs[end],
                                   ops::less_nan_last<T>);
            }
        }
        return rebalanced_in_rank_order(*bucket);
    });
}

std::optional<Value> ShardingBackend::sort_by_key_across_ranks(const Type& type, std::span<const Value> args,
                                                               EvalContext& ctx, const Loc& loc) {
    if (!array_like(args[0]) || !array_like(args[1])) return std::nullopt;
    const Shape ks = array_like_shape(args[0]), vs = array_like_shape(args[1]);
    if (ks.size() != 1 || ks != vs) return std::nullopt;  // the error one rank gives, gathered
    const int ranks = comm_->size();
    const Layout rows{ks, ranks};
    const Value local = force(local_builtin(
        "sortByKey", type, std::vector<Value>{rows_of(args[0], rows, loc), rows_of(args[1], rows, loc)}, ctx, loc));
    const ArrayPtr keys = local.tuple()[0].array(), vals = local.tuple()[1].array();
    const int64_t n = keys->size(), kw = prim_size(keys->elem), vw = prim_size(vals->elem);
    return ops::with_prim(keys->elem, [&]<class B>(B) -> Value {
        using T = SortKey<B>;
        const T* xs = keys->data<T>();
        const std::vector<int64_t> bounds = bucket_bounds(xs, n, *comm_);
        // Each bucket as its keys, then its values.
        std::vector<std::vector<char>> sends(static_cast<size_t>(ranks));
        for (size_t d = 0; d < sends.size(); ++d) {
            const int64_t from = bounds[d], to = bounds[d + 1];
            auto& m = sends[d];
            const char* k = reinterpret_cast<const char*>(keys->bytes.data());
            const char* v = reinterpret_cast<const char*>(vals->bytes.data());
            m.insert(m.end(), k + from * kw, k + to * kw);
            m.insert(m.end(), v + from * vw, v + to * vw);
        }
        const std::vector<std::vector<char>> buckets = comm_->alltoall(sends);
        std::vector<T> all_keys;
        std::vector<char> all_vals;
        for (const auto& b : buckets) {
            const size_t count = b.size() / static_cast<size_t>(kw + vw);
            const T* k = reinterpret_cast<const T*>(b.data());
            all_keys.insert(all_keys.end(), k, k + count);
            all_vals.insert(all_vals.end(), b.begin() + static_cast<ptrdiff_t>(count * kw), b.end());
        }
        // The runs are sorted and in rank order: a stable sort of the
        // positions by key keeps every tie in the order of the whole array.
        std::vector<int64_t> order(all_keys.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
        evalimpl::check_cancel(ctx, loc);
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t b) { return ops::less_nan_last<T>(all_keys[a], all_keys[b]); });
        const auto m = static_cast<int64_t>(order.size());
        auto sorted_keys = std::make_shared<Array>(keys->elem, Shape{m}, Array::Uninitialised{});
        auto sorted_vals = std::make_shared<Array>(vals->elem, Shape{m}, Array::Uninitialised{});
        for (int64_t i = 0; i < m; ++i) {
            sorted_keys->data<T>()[i] = all_keys[static_cast<size_t>(order[static_cast<size_t>(i)])];
            std::memcpy(sorted_vals->bytes.data() + i * vw, all_vals.data() + order[static_cast<size_t>(i)] * vw,
                        static_cast<size_t>(vw));
        }
        return Value(std::vector<Value>{rebalanced_in_rank_order(*sorted_keys), rebalanced_in_rank_order(*sorted_vals)});
    });
}

Value ShardingBackend::generate_blocks(const Shape& global, const Type& type, const Value& f, EvalContext& ctx,
                                       const Loc& loc) {
    const Layout layout{global, comm_->size()};
    const int r = comm_->rank();
    const int64_t lo = layout.begin(r), rows = layout.end(r) - lo;
    const Type fn = func_param(func_result(type)), result = func_result(func_result(type));
    const Type ints = t_prim(Prim::Int);
    const Value row_index = global_rows(lo, rows, ctx, loc);
    Value local;
    if (global.size() == 1) {
        local = local_builtin("map", t_func(std::vector<Type>{fn, t_array(1, ints)}, result),
                              std::vector<Value>{f, row_index}, ctx, loc);
    } else {
        // f i j over (rows, 1) and (1, columns) index arrays, broadcast.
        const Value i = local_builtin("col", nullptr, std::vector<Value>{row_index}, ctx, loc);
        const Value j = local_builtin(
            "row", nullptr,
            std::vector<Value>{global_rows(0, global[1], ctx, loc)},
            ctx, loc);
        local = local_builtin("zipWith", t_func(std::vector<Type>{fn, t_array(2, ints), t_array(2, ints)}, result),
                              std::vector<Value>{f, i, j}, ctx, loc);
    }
    return wrap_blocks(local, layout, comm_);
}

namespace {
// A rank's partial result (a scalar or an array), added elementwise across
// the ranks in rank order: the same on every rank.
Value summed_across_ranks(ir::Comm& comm, const Value& partial) {
    const Value local = force(partial);
    auto sum = local.is_scalar() ? std::make_shared<Array>(local.scalar().type, Shape{1})
                                 : std::make_shared<Array>(*local.array());
    if (local.is_scalar()) sum->set(0, local.scalar());
    comm.allreduce(sum->bytes.data(), sum->size(), ir::scalar_of(sum->elem), ir::CommOp::Sum);
    return local.is_scalar() ? Value(sum->get(0)) : Value(sum);
}
}  // namespace

Value ShardingBackend::counted_across_ranks(std::string_view name, const Type& type, std::span<const Value> args,
                                           const ShardedArray& x, EvalContext& ctx, const Loc& loc) {
    std::vector<Value> block(args.begin(), args.end());
    block.back() = x.local();
    return summed_across_ranks(*comm_, local_builtin(name, type, block, ctx, loc));  // count's int, tally's n ints
}

Value ShardingBackend::vector_product_across_ranks(std::string_view name, const Type& type, const ShardedArray& v,
                                                   const Value& b, EvalContext& ctx, const Loc& loc) {
    return summed_across_ranks(
        *comm_, local_builtin(name, type, std::vector<Value>{v.local(), rows_of(b, v.layout(), loc)}, ctx, loc));
}

}  // namespace shoal::compiled
