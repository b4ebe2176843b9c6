// Rows on the move between ranks (sharding.h): slices and element reads of
// sharded arrays, updates of their rows, and the rebalancing that filters
// and sorts end with. A rank sends only the rows another rank needs (a
// slice shifted by one row moves one row per boundary: the halo of a
// stencil such as `u[2:] - 2.0 * u[1:-1] + u[:-2]`).
#include <algorithm>
#include <cstring>

#include "codegen/sharding.h"
#include "lang/builtin_helpers.h"
#include "lang/builtins_eval.h"
#include "lang/parser.h"
#include "lang/typecheck.h"

namespace shoal::compiled {

namespace {

// Bytes of one row (the elements past the leading axis) of `a`.
int64_t row_bytes(const Array& a) {
    int64_t n = prim_size(a.elem);
    for (size_t k = 1; k < a.shape.size(); ++k) n *= a.shape[k];
    return n;
}

Shape with_rows(const Array& like, int64_t rows) {
    Shape s = like.shape;
    s[0] = rows;
    return s;
}

// [first row, end row) of the block of `rows` rows starting at `first`,
// prefixed to its bytes: one message of rows.
std::vector<char> rows_message(const Array& block, int64_t first, int64_t begin, int64_t end) {
    const int64_t rb = row_bytes(block);
    std::vector<char> m(sizeof(int64_t) + static_cast<size_t>((end - begin) * rb));
    std::memcpy(m.data(), &begin, sizeof begin);
    if (end > begin) std::memcpy(m.data() + sizeof begin, block.bytes.data() + (begin - first) * rb, m.size() - sizeof begin);
    return m;
}

// Places a rows message into `out`, whose first row is row `out_first`.
int64_t place_rows(Array& out, int64_t out_first, const char* message, size_t bytes) {
    int64_t begin = 0;
    std::memcpy(&begin, message, sizeof begin);
    const int64_t rb = row_bytes(out);
    const size_t data = bytes - sizeof begin;
    if (data) std::memcpy(out.bytes.data() + (begin - out_first) * rb, message + sizeof begin, data);
    return rb ? static_cast<int64_t>(data) / rb : 0;
}

// The rank whose block holds `row` (0 <= row < rows).
int owner_of(const Layout& layout, int64_t row) {
    const int ranks = layout.ranks;
    int owner = static_cast<int>(row * ranks / std::max<int64_t>(layout.global[0], 1));  // balanced blocks: near it
    while (owner > 0 && layout.begin(owner) > row) --owner;
    while (owner + 1 < ranks && layout.end(owner) <= row) ++owner;
    return owner;
}

// Global target rows as rows of the block [lo, hi): -1 (which scatter and
// permute drop) for a row another rank holds.
ArrayPtr targets_in_block(const Array& targets, int64_t lo, int64_t hi) {
    auto mine = std::make_shared<Array>(Prim::Int, targets.shape, Array::Uninitialised{});
    for (int64_t k = 0; k < targets.size(); ++k) {
        const int64_t j = targets.get(k).as_long();
        mine->set(k, Scalar::of_int(static_cast<int32_t>(j >= lo && j < hi ? j - lo : -1)));
    }
    return mine;
}

// The concatenation, in rank order, of what each rank sent (`parts[r]`):
// bytes of rows shaped like `like`'s rows.
ArrayPtr rows_from_parts(const std::vector<std::vector<char>>& parts, Prim elem, const Shape& like) {
    size_t bytes = 0;
    for (const auto& p : parts) bytes += p.size();
    Shape shape = like;
    const int64_t row = prim_size(elem) * shape_size(Shape(like.begin() + 1, like.end()));
    shape[0] = row ? static_cast<int64_t>(bytes) / row : 0;
    auto out = std::make_shared<Array>(elem, shape, Array::Uninitialised{});
    char* at = reinterpret_cast<char*>(out->bytes.data());
    for (const auto& p : parts) {
        if (!p.empty()) std::memcpy(at, p.data(), p.size());
        at += p.size();
    }
    return out;
}

// The positions k (0 <= k < s.count) of a slice of the leading axis whose
// rows s.start + k s.step lie in [lo, hi): one range, as the rows are.
std::pair<int64_t, int64_t> positions_in(const ops::AxisSelect& s, int64_t lo, int64_t hi) {
    auto ceil_div = [](int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); };  // b > 0
    int64_t k0, k1;
    if (s.step > 0) {
        k0 = ceil_div(lo - s.start, s.step);
        k1 = ceil_div(hi - s.start, s.step);
    } else {
        k0 = ceil_div(s.start - (hi - 1), -s.step);
        k1 = ceil_div(s.start - lo + 1, -s.step);
    }
    k0 = std::clamp<int64_t>(k0, 0, s.count);
    k1 = std::clamp<int64_t>(k1, 0, s.count);
    return {k0, std::max(k0, k1)};
}

}  // namespace

Value ShardingBackend::rebalanced_in_rank_order(const Array& block) {
    const int64_t mine = block.shape[0];
    std::vector<int64_t> offsets;
    const std::vector<char> all = comm_->allgather(&mine, sizeof mine, offsets);
    std::vector<int64_t> counts(static_cast<size_t>(comm_->size()));
    std::memcpy(counts.data(), all.data(), counts.size() * sizeof(int64_t));
    int64_t first = 0, total = 0;
    for (int r = 0; r < comm_->size(); ++r) {
        if (r < comm_->rank()) first += counts[static_cast<size_t>(r)];
        total += counts[static_cast<size_t>(r)];
    }
    return rebalanced(block, first, total);
}

ArrayPtr ShardingBackend::move_rows(const Array& block, int64_t first,
                                    const std::vector<std::pair<int64_t, int64_t>>& want) {
    const int64_t end = first + block.shape[0];
    std::vector<std::vector<char>> sends(want.size());
    for (size_t d = 0; d < want.size(); ++d) {
        const int64_t b = std::max(first, want[d].first), e = std::min(end, want[d].second);
        if (b < e) sends[d] = rows_message(block, first, b, e);
    }
    const std::vector<std::vector<char>> received = comm_->alltoall(sends);
    const auto [lo, hi] = want[static_cast<size_t>(comm_->rank())];
    auto out = std::make_shared<Array>(block.elem, with_rows(block, hi - lo), Array::Uninitialised{});
    int64_t rows = 0;
    for (const std::vector<char>& m : received)
        if (!m.empty()) rows += place_rows(*out, lo, m.data(), m.size());
    if (rows != hi - lo && row_bytes(block) > 0)
        internal_error(__FILE__, __LINE__, "sharding: the rows received do not make this rank's block");
    return out;
}

ArrayPtr ShardingBackend::gather_rows(const Array& block, int64_t first, int64_t total) {
    const std::vector<char> mine = rows_message(block, first, first, first + block.shape[0]);
    std::vector<int64_t> offsets;
    const std::vector<char> all = comm_->allgather(mine.data(), static_cast<int64_t>(mine.size()), offsets);
    auto whole = std::make_shared<Array>(block.elem, with_rows(block, total), Array::Uninitialised{});
    for (size_t r = 0; r + 1 < offsets.size(); ++r)
        place_rows(*whole, 0, all.data() + offsets[r], static_cast<size_t>(offsets[r + 1] - offsets[r]));
    return whole;
}

Value ShardingBackend::rebalanced(const Array& block, int64_t first, int64_t total) {
    const Layout layout{with_rows(block, total), comm_->size()};
    if (total == 0 || shape_size(layout.global) < threshold_) return Value(gather_rows(block, first, total));
    std::vector<std::pair<int64_t, int64_t>> want;
    for (int r = 0; r < layout.ranks; ++r) want.emplace_back(layout.begin(r), layout.end(r));
    return sharded(layout, Value(move_rows(block, first, want)));
}

std::pair<Value, int64_t> ShardingBackend::select_local(const ShardedArray& a, std::vector<ops::AxisSelect> sel,
                                                        const Loc& loc) {
    const int r = comm_->rank();
    const auto [k0, k1] = positions_in(sel[0], a.layout().begin(r), a.layout().end(r));
    sel[0] = ops::AxisSelect{false, k1 > k0 ? sel[0].start + sel[0].step * k0 - a.layout().begin(r) : 0, sel[0].step,
                             k1 - k0};
    return {select(a.local(), sel, loc), k0};
}

Value ShardingBackend::sharded_slice(const ShardedArray& a, std::span<const ops::AxisSelect> selection,
                                     const Loc& loc) {
    if (const ArrayPtr& whole = a.gathered()) {  // here already (printed, say): no messages
        const bool slices = std::any_of(selection.begin(), selection.end(), [](const ops::AxisSelect& s) { return !s.drops; });
        if (slices)  // the engine takes a selection with a slice; a plain read is the host's
            if (std::optional<Value> part = inner_->slice(Value(whole), selection, loc)) return *part;
        return ops::index_array(*whole, std::vector<ops::AxisSelect>(selection.begin(), selection.end()));
    }
    std::vector<ops::AxisSelect> sel =
        ops::full_selection(a.shape(), std::vector<ops::AxisSelect>(selection.begin(), selection.end()));
    const bool row_read = sel[0].drops;  // a[i, ...]: the row comes from its owner
    if (row_read) sel[0] = ops::AxisSelect{false, sel[0].start, 1, 1};
    const int64_t rows_out = sel[0].count;
    if (!row_read && sel[0].step == 1 && rows_out > 0 &&
        shape_size(a.shape()) / std::max<int64_t>(a.shape()[0], 1) * rows_out >= threshold_)
        return halo_slice(a, sel, loc);
    const auto [part, first] = select_local(a, sel, loc);
    const ArrayPtr block = force(part).array();
    if (!row_read) return rebalanced(*block, first, sel[0].count);
    return ops::index_array(*gather_rows(*block, first, 1), {ops::AxisSelect{true, 0, 1, 1}});
}

Value ShardingBackend::gather_across_ranks(const Value& idx, const ShardedArray& xs, const Loc& loc) {
    const int ranks = comm_->size(), me = comm_->rank();
    const Layout& from = xs.layout();
    const int64_t n = from.global[0];
    // This rank's share of the indices (all of a whole idx is on every rank).
    const Layout out_rows{array_like_shape(idx), ranks};
    const ArrayPtr mine = force(rows_of(idx, out_rows, loc)).array();
    // Row numbers asked of each owner, in order, and where each answer goes.
    std::vector<std::vector<int64_t>> asked(static_cast<size_t>(ranks));
    std::vector<std::pair<int, int64_t>> answer_of(static_cast<size_t>(mine->size()));
    for (int64_t k = 0; k < mine->size(); ++k) {
        const int64_t row = mine->get(k).as_long();
        if (row < 0 || row >= n)
            user_error(ErrorKind::Runtime, loc,
                       "gather: index " + std::to_string(row) + " is out of bounds for axis 0 with extent " +
                           std::to_string(n));
        const int owner = owner_of(from, row);
        auto& list = asked[static_cast<size_t>(owner)];
        answer_of[static_cast<size_t>(k)] = {owner, static_cast<int64_t>(list.size())};
        list.push_back(row);
    }
    std::vector<std::vector<char>> requests(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
        const auto& list = asked[static_cast<size_t>(r)];
        requests[static_cast<size_t>(r)].assign(reinterpret_cast<const char*>(list.data()),
                                                reinterpret_cast<const char*>(list.data() + list.size()));
    }
    const std::vector<std::vector<char>> wanted = comm_->alltoall(requests);
    // The rows asked of this rank, from its block.
    const ArrayPtr block = force(xs.local()).array();
    const int64_t rb = row_bytes(*block);
    std::vector<std::vector<char>> replies(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
        const auto& m = wanted[static_cast<size_t>(r)];
        auto& reply = replies[static_cast<size_t>(r)];
        reply.resize(m.size() / sizeof(int64_t) * static_cast<size_t>(rb));
        for (size_t k = 0; k < m.size() / sizeof(int64_t); ++k) {
            int64_t row = 0;
            std::memcpy(&row, m.data() + k * sizeof row, sizeof row);
            std::memcpy(reply.data() + k * static_cast<size_t>(rb),
                        block->bytes.data() + (row - from.begin(me)) * rb, static_cast<size_t>(rb));
        }
    }
    const std::vector<std::vector<char>> rows = comm_->alltoall(replies);
    auto result = std::make_shared<Array>(block->elem, with_rows(*block, mine->size()), Array::Uninitialised{});
    for (int64_t k = 0; k < mine->size(); ++k) {
        const auto [owner, at] = answer_of[static_cast<size_t>(k)];
        std::memcpy(result->bytes.data() + k * rb, rows[static_cast<size_t>(owner)].data() + at * rb,
                    static_cast<size_t>(rb));
    }
    Shape whole = result->shape;
    whole[0] = out_rows.global[0];
    if (shape_size(whole) < threshold_) return Value(gather_rows(*result, out_rows.begin(me), whole[0]));
    return sharded(Layout{whole, ranks}, Value(result));
}

std::optional<Value> ShardingBackend::scatter_across_ranks(const Type& type, std::span<const Value> args,
                                                           const ShardedArray& dest, EvalContext& ctx, const Loc& loc) {
    const Value &idx = args[1], &vals = args[2];
    if (!array_like(idx) || !array_like(vals)) return std::nullopt;  // tuples of arrays: gathered
    const int me = comm_->rank();
    const Layout& to = dest.layout();
    const int64_t lo = to.begin(me), hi = to.end(me);
    const ShardedArray *sharded_idx = as_sharded(idx), *sharded_vals = as_sharded(vals);
    Value local_idx, local_vals;
    if (!sharded_idx && !sharded_vals) {
        // Every rank has every pair: it keeps the writes to its own rows
        // (the others' targets become -1, which scatter ignores). Mismatched
        // shapes raise one rank's error in the engine's scatter.
        local_idx = Value(targets_in_block(*force(idx).array(), lo, hi));
        local_vals = vals;
    } else {
        const Shape idx_shape = array_like_shape(idx), vals_shape = array_like_shape(vals);
        if (idx_shape.size() != 1 || vals_shape.empty() || idx_shape[0] != vals_shape[0] ||
            !std::equal(vals_shape.begin() + 1, vals_shape.end(), dest.shape().begin() + 1, dest.shape().end()))
            return std::nullopt;  // the error one rank gives, on the gathered arrays
        // This rank's share of the pairs, in the order of k.
        const Layout pairs{idx_shape, comm_->size()};  // either one's, sharded
        const ArrayPtr idx_block = force(rows_of(idx, pairs, loc)).array();
        const ArrayPtr val_block = force(rows_of(vals, pairs, loc)).array();
        std::tie(local_idx, local_vals) = send_to_owners(*idx_block, *val_block, to);
    }
    const Value written =
        local_builtin("scatter", type, std::vector<Value>{dest.local(), local_idx, local_vals}, ctx, loc);
    return wrap_blocks(written, to, comm_);
}

std::pair<Value, Value> ShardingBackend::send_to_owners(const Array& targets, const Array& rows, const Layout& dest) {
    // Each pair goes to the owner of its target row; the owners receive them
    // in rank order, which is the order of the pairs.
    const int ranks = comm_->size();
    const int64_t n = dest.global[0], rb = row_bytes(rows);
    std::vector<std::vector<char>> at_owner(static_cast<size_t>(ranks)), rows_to(static_cast<size_t>(ranks));
    for (int64_t k = 0; k < targets.size(); ++k) {
        const int64_t j = targets.get(k).as_long();
        if (j < 0 || j >= n) continue;  // dropped, as alone
        const int owner = owner_of(dest, j);
        const int32_t at = static_cast<int32_t>(j - dest.begin(owner));
        auto& t = at_owner[static_cast<size_t>(owner)];
        t.insert(t.end(), reinterpret_cast<const char*>(&at), reinterpret_cast<const char*>(&at + 1));
        auto& r = rows_to[static_cast<size_t>(owner)];
        const char* row = reinterpret_cast<const char*>(rows.bytes.data()) + k * rb;
        r.insert(r.end(), row, row + rb);
    }
    return {Value(rows_from_parts(comm_->alltoall(at_owner), Prim::Int, Shape{0})),
            Value(rows_from_parts(comm_->alltoall(rows_to), rows.elem, rows.shape))};
}

namespace {
// `\i -> targets[i]`: the index function of a permute on one rank's rows.
Value index_function(const Value& targets, EvalContext& ctx, const Loc& loc) {
    static const ExprPtr lambda = [] {
        const auto source = std::make_shared<const Source>("<sharded permute>", "\\(t : [int]) (i : int) -> t[i]");
        ExprPtr e = parse_expression(source, 0, source->text.size());
        check_expression(e, TypeEnvironment{});
        return e;
    }();
    return evalimpl::apply_value(evaluate(lambda, ctx), std::span<const Value>(&targets, 1), ctx, loc);
}
}  // namespace

std::optional<Value> ShardingBackend::permute_across_ranks(const Type& type, std::span<const Value> args,
                                                           const ShardedArray& dest, EvalContext& ctx, const Loc& loc) {
    const Value &f = args[0], &g = args[2], &vals = args[3];
    if (!array_like(vals)) return std::nullopt;  // tuples of arrays: gathered
    const Shape vals_shape = array_like_shape(vals);
    if (vals_shape.empty() ||
        !std::equal(vals_shape.begin() + 1, vals_shape.end(), dest.shape().begin() + 1, dest.shape().end()))
        return std::nullopt;  // the error one rank gives, on the gathered arrays
    // A float permute into few targets folds in blocks that depend on the
    // number of elements (docs/semantics.md, "permute"): on one rank's share
    // its bits would differ from one rank's. It runs whole (gathered), as
    // alone; with more targets the order is the sequential one, kept here.
    const int64_t few_targets = dest.elem() == Prim::Float ? 1008 : dest.elem() == Prim::Double ? 504 : 0;
    if (shape_size(dest.shape()) <= few_targets) return std::nullopt;
    const int me = comm_->rank();
    const Layout& to = dest.layout();
    const ShardedArray* sharded_vals = as_sharded(vals);
    // This rank's share of vals and the global index of its first row.
    const Layout pairs = sharded_vals ? sharded_vals->layout() : Layout{vals_shape, 1};
    const int64_t first = sharded_vals ? pairs.begin(me) : 0;
    const int64_t count = sharded_vals ? pairs.end(me) - first : vals_shape[0];
    // The targets g i of those rows, computed by the engine (fused as alone).
    const Type ints = t_array(1, t_prim(Prim::Int));
    const Value i = global_rows(first, count, ctx, loc);
    const ArrayPtr targets =
        force(local_builtin("map", t_func(std::vector<Type>{func_param(func_result(func_result(type))), ints}, ints),
                            std::vector<Value>{g, i}, ctx, loc))
            .array();
    Value local_targets, local_vals;
    if (!sharded_vals) {
        // Every rank has every row of vals: it keeps those aimed at its rows.
        local_targets = Value(targets_in_block(*targets, to.begin(me), to.end(me)));
        local_vals = vals;
    } else {
        std::tie(local_targets, local_vals) = send_to_owners(*targets, *force(sharded_vals->local()).array(), to);
    }
    const Value combined = local_builtin(
        "permute", type,
        std::vector<Value>{f, dest.local(), index_function(local_targets, ctx, loc), local_vals}, ctx, loc);
    return wrap_blocks(combined, to, comm_);
}

Value ShardingBackend::reshape_across_ranks(const Shape& to, const ShardedArray& x) {
    const int ranks = comm_->size(), me = comm_->rank();
    const Layout out{to, ranks};
    const int64_t per_row = shape_size(Shape(to.begin() + 1, to.end()));
    // The block's bytes are its elements in row-major order: a vector of
    // elements [first, first + size) of the whole.
    const ArrayPtr block = force(x.local()).array();
    Array flat = *block;
    flat.shape = Shape{block->size()};
    std::vector<std::pair<int64_t, int64_t>> want;
    for (int r = 0; r < ranks; ++r) want.emplace_back(out.begin(r) * per_row, out.end(r) * per_row);
    const ArrayPtr mine = move_rows(flat, x.layout().begin(me) * x.layout().row_elements(), want);
    mine->shape = out.local_shape(me);
    return sharded(out, Value(mine));
}

Value ShardingBackend::transpose_across_ranks(const ShardedArray& m) {
    const int ranks = comm_->size(), me = comm_->rank();
    const int64_t n = m.shape()[0], k = m.shape()[1];
    const Layout& in = m.layout();
    const Layout out{Shape{k, n}, ranks};
    const ArrayPtr block = force(m.local()).array();
    const size_t w = static_cast<size_t>(prim_size(block->elem));
    const int64_t rows = in.end(me) - in.begin(me);
    const char* from = reinterpret_cast<const char*>(block->bytes.data());
    // To rank s: this rank's rows of the columns s holds in the result, transposed.
    std::vector<std::vector<char>> sends(static_cast<size_t>(ranks));
    for (int s = 0; s < ranks; ++s) {
        const int64_t c0 = out.begin(s), c1 = out.end(s);
        std::vector<char>& to = sends[static_cast<size_t>(s)];
        to.resize(static_cast<size_t>((c1 - c0) * rows) * w);
        for (int64_t c = c0; c < c1; ++c)
            for (int64_t i = 0; i < rows; ++i)
                std::memcpy(to.data() + static_cast<size_t>((c - c0) * rows + i) * w,
                            from + static_cast<size_t>(i * k + c) * w, w);
    }
    const std::vector<std::vector<char>> received = comm_->alltoall(sends);
    // Each sender's part holds columns [its first row, its end) of every row here.
    const int64_t here = out.end(me) - out.begin(me);
    auto local = std::make_shared<Array>(block->elem, Shape{here, n}, Array::Uninitialised{});
    char* t = reinterpret_cast<char*>(local->bytes.data());
    for (int r = 0; r < ranks; ++r) {
        const int64_t lo = in.begin(r), nr = in.end(r) - lo;
        const char* part = received[static_cast<size_t>(r)].data();
        for (int64_t c = 0; c < here && nr > 0; ++c)
            std::memcpy(t + static_cast<size_t>(c * n + lo) * w, part + static_cast<size_t>(c * nr) * w,
                        static_cast<size_t>(nr) * w);
    }
    return sharded(out, Value(local));
}

Value ShardingBackend::concat_across_ranks(const Value& a, const Value& b, const Loc& loc) {
    const int ranks = comm_->size(), me = comm_->rank();
    const int64_t na = array_like_shape(a)[0], nb = array_like_shape(b)[0];
    Shape whole = array_like_shape(a);
    whole[0] = na + nb;
    const Layout out{whole, ranks};
    // Each operand's rows on this rank (a whole operand: this rank's share of
    // it, as if it were sharded), sent to their ranks in the result.
    auto part = [&](const Value& x, int64_t n, int64_t offset) {
        const Layout own{array_like_shape(x), ranks};
        const Value block = rows_of(x, own, loc);
        std::vector<std::pair<int64_t, int64_t>> want;
        for (int r = 0; r < ranks; ++r) {
            const int64_t lo = std::clamp<int64_t>(out.begin(r), offset, offset + n);
            const int64_t hi = std::clamp<int64_t>(out.end(r), offset, offset + n);
            want.emplace_back(lo, hi);
        }
        return move_rows(*force(block).array(), offset + own.begin(me), want);
    };
    const ArrayPtr from_a = part(a, na, 0), from_b = part(b, nb, na);
    auto block = std::make_shared<Array>(from_a->elem, out.local_shape(me), Array::Uninitialised{});
    std::memcpy(block->bytes.data(), from_a->bytes.data(), from_a->bytes.size());
    std::memcpy(block->bytes.data() + from_a->bytes.size(), from_b->bytes.data(), from_b->bytes.size());
    if (shape_size(whole) < threshold_) return Value(gather_rows(*block, out.begin(me), whole[0]));
    return sharded(out, Value(block));
}

Value ShardingBackend::halo_slice(const ShardedArray& a, std::vector<ops::AxisSelect> sel, const Loc& loc) {
    const Layout& in = a.layout();
    const int ranks = in.ranks, me = comm_->rank();
    Shape out_rows = a.shape();
    out_rows[0] = sel[0].count;
    const Layout out{out_rows, ranks};
    // Rows each rank needs beyond its block, before and after it.
    std::vector<std::pair<int64_t, int64_t>> halo = a.halo();
    halo.resize(static_cast<size_t>(ranks));
    bool wider = false;
    for (int r = 0; r < ranks; ++r) {
        if (out.end(r) == out.begin(r)) continue;
        const int64_t first = sel[0].start + out.begin(r), last = sel[0].start + out.end(r);
        auto& [before, after] = halo[static_cast<size_t>(r)];
        const int64_t need_before = std::max<int64_t>(0, in.begin(r) - first), need_after = std::max<int64_t>(0, last - in.end(r));
        wider = wider || need_before > before || need_after > after;
        before = std::max(before, need_before);
        after = std::max(after, need_after);
    }
    if (wider) {  // every rank decides alike, from the layouts: all exchange or none
        std::vector<std::pair<int64_t, int64_t>> want;
        for (int r = 0; r < ranks; ++r)
            want.emplace_back(in.begin(r) - halo[static_cast<size_t>(r)].first, in.end(r) + halo[static_cast<size_t>(r)].second);
        a.set_halo(halo, Value(move_rows(*force(a.local()).array(), in.begin(me), want)));
    }
    const bool widened = !a.halo().empty();
    const Value& block = widened ? a.widened() : a.local();
    const int64_t block_first = in.begin(me) - (widened ? a.halo()[static_cast<size_t>(me)].first : 0);
    sel[0] = ops::AxisSelect{false, out.end(me) > out.begin(me) ? sel[0].start + out.begin(me) - block_first : 0, 1,
                             out.end(me) - out.begin(me)};
    const Value part = select(block, sel, loc);
    Shape global = array_like_shape(part);
    global[0] = out_rows[0];
    return sharded(Layout{global, ranks}, part);
}

std::optional<Value> ShardingBackend::sharded_update(const ShardedArray& a, std::span<const ops::AxisSelect> selection,
                                                     const Value& v, const Loc& loc) {
    std::vector<ops::AxisSelect> sel =
        ops::full_selection(a.shape(), std::vector<ops::AxisSelect>(selection.begin(), selection.end()));
    const Layout& layout = a.layout();
    const int me = comm_->rank();
    // The new part's shape must broadcast to the selection's, as alone.
    Shape part_shape;
    for (const ops::AxisSelect& s : sel)
        if (!s.drops) part_shape.push_back(s.count);
    const bool v_array = array_like(v);
    const Shape v_shape = v_array ? array_like_shape(v) : Shape{};
    // It broadcasts to the selection unchanged, or the whole update says why not.
    if (v.is_tuple() || ops::broadcast_shapes(v_shape, part_shape) != part_shape) return std::nullopt;

    // This rank's share of the new part: none when the selection drops the
    // leading axis or the part broadcasts along it, else its rows.
    Value mine = v;
    const bool rows_of_v = !sel[0].drops && v_array && v_shape.size() == part_shape.size() && v_shape[0] == sel[0].count;
    const auto [k0, k1] = sel[0].drops ? std::pair<int64_t, int64_t>{0, 0}
                                       : positions_in(sel[0], layout.begin(me), layout.end(me));
    if (rows_of_v) {
        if (const ShardedArray* s = as_sharded(v)) {
            std::vector<std::pair<int64_t, int64_t>> want;
            for (int r = 0; r < layout.ranks; ++r) want.push_back(positions_in(sel[0], layout.begin(r), layout.end(r)));
            mine = Value(move_rows(*force(s->local()).array(), s->layout().begin(me), want));
        } else {
            mine = ops::index_array(*force(v).array(), {ops::AxisSelect{false, k0, 1, k1 - k0}});
        }
    } else if (as_sharded(v)) {
        mine = gathered("an update", v, loc);
    }
    // This rank's rows of the selection, in its block.
    const int64_t lo = layout.begin(me);
    if (sel[0].drops) {
        if (sel[0].start < lo || sel[0].start >= layout.end(me)) return sharded(layout, a.local());  // a new array: nothing of a's gathered copy
        sel[0].start -= lo;
    } else {
        if (k1 == k0) return sharded(layout, a.local());  // a new array: nothing of a's gathered copy
        sel[0] = ops::AxisSelect{false, sel[0].start + sel[0].step * k0 - lo, sel[0].step, k1 - k0};
    }
    const Value block = settle(a.local());
    if (std::optional<Value> updated = inner_->update(block, sel, mine, loc)) return sharded(layout, *updated);
    return sharded(layout, Value(ops::update_array(*force(block).array(), sel, force(mine), loc)));
}

}  // namespace shoal::compiled
