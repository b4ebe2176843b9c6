// Sharded arrays and the backend that keeps their work local (sharding.h).
#include "codegen/sharding.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "lang/array_ops.h"
#include "lang/builtin_helpers.h"
#include "lang/memory_limit.h"
#include "lang/random.h"

namespace shoal::compiled {

namespace {

using evalimpl::find_builtin;
using evalimpl::shape_value;

// Elementwise builtins: each element of the result depends on the elements
// at the same index of the arguments, so a block's result is the result's block.
bool elementwise(std::string_view name) {
    static const std::vector<std::string_view> names = {
        "+", "-", "*", "/", "%", "**", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "negate", "!", "~", "&", "|",
        "^", "<<", ">>", "sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
        "tanh", "abs", "floor", "ceil", "round", "min", "max", "pow", "erf", "int", "long", "float", "double", "map",
        "zipWith", "zipWith3", "where"};
    return std::find(names.begin(), names.end(), name) != names.end();
}

// Builtins that work on each innermost row of a matrix (or each row of a
// deeper array) alone: on rows sharded by the leading axis, they are local.
bool per_row(std::string_view name) {
    static const std::vector<std::string_view> names = {"reduce", "sum",    "product", "maximum", "minimum",
                                                        "all",    "any",    "count",   "argmax",  "argmin",
                                                        "scan",   "scanExclusive", "sort"};
    return std::find(names.begin(), names.end(), name) != names.end();
}


// The sharded arrays a value reads, with the names they are read by: a
// closure's free variables and the parameters already applied to it, a
// partial builtin's arguments, and the same of the functions among them.
void sharded_reads(const Value& v, const std::string& name, EvalContext& ctx,
                   std::vector<std::pair<std::string, const ShardedArray*>>& found, int depth = 0) {
    if (depth > 16) return;
    if (const ShardedArray* s = as_sharded(v)) {
        if (std::none_of(found.begin(), found.end(), [s](const auto& f) { return f.second == s; }))
            found.emplace_back(name, s);
        return;
    }
    if (v.is_tuple()) {
        for (const Value& x : v.tuple()) sharded_reads(x, name, ctx, found, depth + 1);
        return;
    }
    if (!v.is_function()) return;
    const evalimpl::Callable& f = evalimpl::as_callable(v);
    const evalimpl::CallableView view = f.view();
    if (!view.lambda) {
        for (const Value& a : view.args) sharded_reads(a, name, ctx, found, depth + 1);
        return;
    }
    auto read = [&](Expr& var) {
        if (std::optional<Value> x = f.resolve(var, ctx)) sharded_reads(*x, var.text, ctx, found, depth + 1);
    };
    for (size_t k = 0; k < view.bound && k < view.lambda->params.size(); ++k) {
        const PatternPtr& p = view.lambda->params[k];
        if (!p || p->kind != PatternKind::Var) continue;
        Expr var{};
        var.kind = ExprKind::Var;
        var.text = p->name;
        read(var);
    }
    std::vector<std::string> locals;
    for_each_free_variable(*view.lambda, locals, read);
}

}  // namespace

void renumber_error(Error& e, std::string_view what, int64_t offset) {
    const size_t at = e.message.find(what);
    if (at == std::string::npos || offset == 0) return;
    const size_t digits = at + what.size();
    size_t end = digits;
    while (end < e.message.size() && std::isdigit(static_cast<unsigned char>(e.message[end]))) ++end;
    if (end == digits) return;
    const int64_t n = std::stoll(e.message.substr(digits, end - digits));
    e.message.replace(digits, end - digits, std::to_string(n + offset));
}

// ---------------------------------------------------------------- layout
int64_t Layout::row_elements() const {
    int64_t n = 1;
    for (size_t k = 1; k < global.size(); ++k) n *= global[k];
    return n;
}

Shape Layout::local_shape(int r) const {
    Shape s = global;
    s[0] = end(r) - begin(r);
    return s;
}

const ShardedArray* as_sharded(const Value& v) {
    return v.is_delayed() ? dynamic_cast<const ShardedArray*>(v.delayed().get()) : nullptr;
}

// ---------------------------------------------------------------- the array
ShardedArray::ShardedArray(Layout layout, std::shared_ptr<ir::Comm> comm, Value local)
    : layout_(std::move(layout)), comm_(std::move(comm)), local_(std::move(local)),
      elem_(ops::prim_of_value(local_)) {}

ArrayPtr ShardedArray::force() const {
    if (gathered_) return gathered_;
    check_array_fits(prim_size(elem_), layout_.global);  // the whole, here: before anything moves
    gathered_ = gather_in_rank_order(shoal::force(local_).array().get(), layout_.global);
    return gathered_;
}

ArrayPtr ShardedArray::gather_in_rank_order(const Array* mine, const Shape& shape) const {
    std::vector<int64_t> offsets;
    const std::vector<char> all =
        comm_->allgather(mine ? mine->bytes.data() : nullptr, mine ? static_cast<int64_t>(mine->bytes.size()) : 0, offsets);
    auto out = std::make_shared<Array>(elem_, shape, Array::Uninitialised{});
    if (all.size() != out->bytes.size())
        internal_error(__FILE__, __LINE__, "sharding: the parts gathered do not make the array asked for");
    std::memcpy(out->bytes.data(), all.data(), all.size());
    return out;
}

ArrayPtr ShardedArray::rows(const std::vector<int64_t>& which) const {
    if (gathered_) return rows_of_array(*gathered_, which);
    // The rows asked for that this rank holds, in order: every rank's, in
    // rank order, are the rows asked for, in order (they ascend).
    const int r = comm_->rank();
    std::vector<int64_t> mine;
    for (int64_t w : which)
        if (w >= layout_.begin(r) && w < layout_.end(r)) mine.push_back(w - layout_.begin(r));
    const ArrayPtr part = mine.empty() ? nullptr : rows_of_array(*shoal::force(local_).array(), mine);
    Shape shape = layout_.global;
    shape[0] = static_cast<int64_t>(which.size());
    return gather_in_rank_order(part.get(), shape);
}

void ShardedArray::compute() const { local_ = settle(local_); }

std::string ShardedArray::layout_description() const {
    std::string s = "sharded over " + std::to_string(layout_.ranks) + " ranks by rows:";
    for (int r = 0; r < layout_.ranks; ++r)
        s += std::string(r ? "," : "") + " " + std::to_string(layout_.begin(r)) + ".." + std::to_string(layout_.end(r));
    return s;
}

// ---------------------------------------------------------------- the backend
ShardingBackend::ShardingBackend(ArrayBackend* inner, std::shared_ptr<ir::Comm> comm)
    : inner_(inner), comm_(std::move(comm)) {}

Value ShardingBackend::local_builtin(std::string_view name, const Type& type, std::span<const Value> args,
                                     EvalContext& ctx, const Loc& loc) {
    EvalContext here = ctx;
    here.backend = inner_;  // the block is an ordinary array to the engine
    Value r = evalimpl::apply_builtin(*find_builtin(name), type, args, here, loc);
    ctx.random_stream = here.random_stream;
    ctx.effects = here.effects;
    return r;
}

Value ShardingBackend::gathered(const std::string& what, const Value& v, const Loc& loc) {
    const ShardedArray* s = as_sharded(v);
    if (!s) return v;
    if (warnings_)
        warnings_->push_back({loc,
                              std::string(what) + " gathered an array of " +
                                  std::to_string(shape_size(s->shape())) + " elements sharded over " +
                                  std::to_string(s->layout().ranks) + " ranks whole on every rank",
                              {"docs/scale-out.md lists the builtins that keep an array sharded"}});
    return Value(s->force());
}

std::optional<Value> ShardingBackend::make_sharded(std::string_view name, const Type& type,
                                                   std::span<const Value> args, EvalContext& ctx, const Loc& loc) {
    if (name != "iota" && name != "random" && name != "fill" && name != "generate") return std::nullopt;
    const std::optional<Shape> global = ops::shape_argument(args[0]);
    if (!global || global->empty() || (*global)[0] < 1 || shape_size(*global) < threshold_) return std::nullopt;
    if (name == "generate" && (!type || global->size() > 2)) return std::nullopt;  // a 3-d generate: whole
    const Layout layout{*global, comm_->size()};
    try {
        return make_blocks(name, layout, type, args, ctx, loc);
    } catch (Error& e) {  // "array of shape (block) is too large": say the whole and the block
        const std::string block = "array of shape " + shape_to_string(layout.local_shape(comm_->rank()));
        if (const size_t at = e.message.find(block); at != std::string::npos)
            e.message.replace(at, block.size(), "array of shape " + shape_to_string(layout.global) + " sharded over " +
                                                    std::to_string(layout.ranks) + " ranks, whose block " +
                                                    shape_to_string(layout.local_shape(comm_->rank())));
        throw;
    }
}

Value ShardingBackend::make_blocks(std::string_view name, const Layout& layout, const Type& type,
                                   std::span<const Value> args, EvalContext& ctx, const Loc& loc) {
    if (name == "generate") return generate_blocks(layout.global, type, args[1], ctx, loc);
    const int r = comm_->rank();
    const int64_t lo = layout.begin(r);
    const Shape local_shape = layout.local_shape(r);
    Value local;
    if (name == "iota") {
        local = global_rows(lo, local_shape[0], ctx, loc);
    } else if (name == "fill") {
        local = local_builtin("fill", type, std::vector<Value>{shape_value(local_shape), args[1]}, ctx, loc);
    } else {
        // Element i of the whole array is random_uniform(seed, stream, i),
        // whatever the number of ranks; one stream number per call, as alone.
        const uint64_t stream = ctx.random_stream++;
        try {
            check_array_fits(prim_size(Prim::Float), local_shape);
        } catch (Error& e) {
            e.message = "random: " + e.message;  // as the builtin says it alone
            throw;
        }
        // The engine's generator from the block's first global element
        // (fused, on the device); the host's where the engine declines.
        const int64_t first = lo * layout.row_elements();
        if (std::optional<Value> made = inner_->random_block(local_shape, ctx.seed, stream, first, ctx)) {
            local = *made;
        } else {
            auto block = std::make_shared<Array>(Prim::Float, local_shape, Array::Uninitialised{});
            float* x = block->data<float>();
            for (int64_t i = 0, n = block->size(); i < n; ++i) {
                if ((i & 0xffff) == 0) evalimpl::check_cancel(ctx, loc);
                x[i] = random_uniform(ctx.seed, stream, static_cast<uint64_t>(first + i));
            }
            local = Value(std::move(block));
        }
    }
    return Value(std::make_shared<const ShardedArray>(layout, comm_, std::move(local)));
}

// Each leaf of a block's result becomes a sharded array whose rows are the
// result's rows: the leading axis keeps its layout.
Value wrap_blocks(const Value& local, const Layout& like, const std::shared_ptr<ir::Comm>& comm) {
    if (local.is_tuple()) {
        std::vector<Value> parts;
        for (const Value& x : local.tuple()) parts.push_back(wrap_blocks(x, like, comm));
        return Value(std::move(parts));
    }
    if (!array_like(local)) return local;
    Shape global = array_like_shape(local);
    global[0] = like.global[0];
    return Value(std::make_shared<const ShardedArray>(Layout{global, like.ranks}, comm, local));
}

void ShardingBackend::gather_function_reads(std::string_view builtin, std::span<const Value> args, EvalContext& ctx,
                                            const Loc& loc) {
    std::vector<std::pair<std::string, const ShardedArray*>> found;
    for (const Value& a : args)
        if (a.is_function()) sharded_reads(a, "", ctx, found);
    for (const auto& [name, s] : found) {
        if (s->gathered()) continue;
        if (warnings_)
            warnings_->push_back({loc,
                                  "the function given to `" + std::string(builtin) + "` reads " +
                                      (name.empty() ? std::string("an array") : "`" + name + "`") + " of " +
                                      std::to_string(shape_size(s->shape())) + " elements sharded over " +
                                      std::to_string(s->layout().ranks) + " ranks: it was gathered whole on every rank",
                                  {"a function that reads elements of a sharded array (`\\i -> y[i]`) needs all of it; "
                                   "docs/scale-out.md lists the builtins that keep an array sharded"}});
        s->force();
    }
}

namespace {
// What the collectives' backend had to say during a call (NCCL not used,
// and why) becomes a warning of the statement, at the call's location.
class NoticesAsWarnings {
public:
    NoticesAsWarnings(ir::Comm& comm, std::vector<Warning>* warnings, const Loc& loc)
        : comm_(comm), warnings_(warnings), loc_(loc) {}
    ~NoticesAsWarnings() {
        if (std::string notice = comm_.take_notice(); !notice.empty() && warnings_)
            warnings_->push_back({loc_, std::move(notice), {"`:ranks` shows what moves sharded arrays"}});
    }

private:
    ir::Comm& comm_;
    std::vector<Warning>* warnings_;
    Loc loc_;
};
}  // namespace

std::optional<Value> ShardingBackend::apply_builtin(std::string_view name, const Type& type,
                                                    std::span<const Value> args, EvalContext& ctx, const Loc& loc) {
    warnings_ = ctx.warnings;
    const NoticesAsWarnings notices(*comm_, warnings_, loc);
    gather_function_reads(name, args, ctx, loc);
    const ShardedArray* first = nullptr;
    for (const Value& a : args)
        if (const ShardedArray* s = as_sharded(a); s && !first) first = s;
    if (!first) {
        if (threshold_ > 0)
            if (std::optional<Value> made = make_sharded(name, type, args, ctx, loc)) return made;
        if (name == "load")
            if (std::optional<Value> loaded = load_blocks(type, args, loc)) return loaded;
        return inner_->apply_builtin(name, type, args, ctx, loc);
    }
    const evalimpl::BuiltinDef* def = find_builtin(name);
    if (!def) return std::nullopt;
    if (def->composite) return std::nullopt;  // its parts come back here (mean: sum and length)
    if (name == "length") return Value(Scalar::of_int(static_cast<int32_t>(first->shape()[0])));
    // The sharded array the builtin works on (its last argument), the
    // others scalars or functions: which builtins keep it where it is.
    const ShardedArray* last = as_sharded(args.back());
    const bool only_last = last && std::none_of(args.begin(), args.end() - 1, array_like);
    if (only_last && last->shape().size() >= 2 && per_row(name)) {
        std::vector<Value> blocks(args.begin(), args.end());
        blocks.back() = last->local();
        try {
            return wrap_blocks(local_builtin(name, type, blocks, ctx, loc), last->layout(), comm_);
        } catch (Error& e) {  // checking mode: the row as alone
            const Layout& l = last->layout();
            renumber_error(e, " of row ", l.begin(comm_->rank()) * l.row_elements() / l.global.back());
            throw;
        }
    }
    // Checking mode checks an int product's exact value on the whole array.
    const bool checked_product = ctx.check && name == "product" && last && last->elem() == Prim::Int;
    if (only_last && last->shape().size() == 1) {
        if (fold_op(name) && args.size() == 1 && !checked_product)
            return fold_across_ranks(name, type, *last, ctx, loc);
        if (name == "reduce") return reduce_across_ranks(type, args, *last, ctx, loc);
        if (name == "argmax" || name == "argmin") return extreme_across_ranks(name, type, *last, ctx, loc);
        if (name == "scan" || name == "scanExclusive") return scan_across_ranks(name, type, args, *last, ctx, loc);
        if (name == "filter") return filter_across_ranks(name, type, args, ctx, loc);
        if (name == "sort") return sort_across_ranks(type, *last, ctx, loc);
        if (name == "count" || name == "tally") return counted_across_ranks(name, type, args, *last, ctx, loc);
    }
    if (name == "compress" && same_rows(args[0], args[1])) return filter_across_ranks(name, type, args, ctx, loc);
    if (name == "sortByKey" && args.size() == 2)
        if (std::optional<Value> sorted = sort_by_key_across_ranks(type, args, ctx, loc)) return sorted;
    if (only_last && (name == "take" || name == "drop" || name == "reverse")) {
        // Slices of the rows (NumPy's x[:n], x[n:], x[::-1]): rows move only where they must.
        const int64_t rows = last->shape()[0];
        const int64_t n = name == "reverse" ? 0 : std::clamp<int64_t>(args[0].scalar().as_long(), 0, rows);
        const ops::AxisSelect sel[1] = {name == "take"   ? ops::AxisSelect{false, 0, 1, n}
                                        : name == "drop" ? ops::AxisSelect{false, n, 1, rows - n}
                                                         : ops::AxisSelect{false, rows - 1, -1, rows}};
        if (name != "reverse" || rows > 0) return sharded_slice(*last, sel, loc);
    }
    if (name == "gather" && args.size() == 2 && array_like(args[0]) && array_like_shape(args[0]).size() == 1) {
        if (as_sharded(args[1])) return gather_across_ranks(args[0], *as_sharded(args[1]), loc);
        // Sharded indices into a whole array: each rank gathers its own.
        const ShardedArray* idx = as_sharded(args[0]);
        return wrap_blocks(local_builtin(name, type, std::vector<Value>{idx->local(), args[1]}, ctx, loc),
                           idx->layout(), comm_);
    }
    if (name == "save" && as_sharded(args.back()))
        if (std::optional<Value> saved = save_blocks(args, *as_sharded(args.back()), loc)) return saved;
    if (name == "permute" && args.size() == 4 && as_sharded(args[1]))
        if (std::optional<Value> combined = permute_across_ranks(type, args, *as_sharded(args[1]), ctx, loc))
            return *combined;
    if (name == "scatter" && args.size() == 3 && as_sharded(args[0]))
        if (std::optional<Value> scattered = scatter_across_ranks(type, args, *as_sharded(args[0]), ctx, loc))
            return *scattered;
    if ((name == "matmul" || name == "@") && args.size() == 2 && as_sharded(args[0]) &&
        as_sharded(args[0])->shape().size() == 2 && array_like(args[1])) {
        // Rows of a times the whole b: b is gathered (the one operand that
        // moves, without a warning: it is the plan), the rows stay.
        const ShardedArray& a = *as_sharded(args[0]);
        const Shape b = array_like_shape(args[1]);
        if (b.empty() || b[0] != a.shape()[1]) return local_builtin(name, type, std::vector<Value>{Value(a.force()), args[1]}, ctx, loc);
        const Value whole_b = as_sharded(args[1]) ? Value(as_sharded(args[1])->force()) : args[1];
        return wrap_blocks(local_builtin(name, type, std::vector<Value>{a.local(), whole_b}, ctx, loc), a.layout(), comm_);
    }
    if ((name == "matmul" || name == "@") && args.size() == 2 && as_sharded(args[0]) &&
        as_sharded(args[0])->shape().size() == 1 && array_like(args[1])) {
        // A sharded vector times b of its length: each rank's rows, summed.
        const Shape b = array_like_shape(args[1]);
        const ShardedArray* sb = as_sharded(args[1]);
        if (!b.empty() && b.size() <= 2 && b[0] == args[0].delayed()->shape()[0] && (!sb || sb->layout().ranks == comm_->size()))
            return vector_product_across_ranks(name, type, *as_sharded(args[0]), args[1], ctx, loc);
    }
    if ((name == "reshape" || name == "flatten") && only_last) {
        const std::optional<Shape> to = name == "flatten" ? Shape{shape_size(last->shape())}
                                                           : ops::shape_argument(args[0]);
        if (to && !to->empty() && (*to)[0] > 0 && shape_size(*to) == shape_size(last->shape()))  // extents >= 0
            return reshape_across_ranks(*to, *last);
    }
    if (name == "col" && only_last && last->shape().size() == 1)  // n x 1: the same rows
        return wrap_blocks(local_builtin(name, type, std::vector<Value>{last->local()}, ctx, loc), last->layout(), comm_);
    if (name == "transpose" && only_last && args.size() == 1 && last->shape().size() == 2)
        return transpose_across_ranks(*last);
    if (name == "interleave" && args.size() == 2 && array_like(args[0]) && array_like(args[1]) &&
        array_like_shape(args[0]) == array_like_shape(args[1]) && !array_like_shape(args[0]).empty()) {
        // Rows a0 b0 a1 b1 ...: each rank interleaves its rows (a whole
        // operand gives its rows alike), then the rows are rebalanced.
        const Layout rows{array_like_shape(args[0]), comm_->size()};
        const Value local =
            local_builtin(name, type, std::vector<Value>{rows_of(args[0], rows, loc), rows_of(args[1], rows, loc)}, ctx, loc);
        return rebalanced_in_rank_order(*force(local).array());
    }
    if (name == "++" && args.size() == 2 && array_like(args[0]) && array_like(args[1])) {
        const Shape a = array_like_shape(args[0]), b = array_like_shape(args[1]);
        if (a.size() == b.size() && std::equal(a.begin() + 1, a.end(), b.begin() + 1))
            return concat_across_ranks(args[0], args[1], loc);
    }
    if (elementwise(name)) {
        // Every array argument sharded alike, or one that broadcasts along
        // the leading axis unchanged (fewer axes, or one row).
        bool local = true;
        std::vector<Value> blocks;
        for (const Value& a : args) {
            if (const ShardedArray* s = as_sharded(a)) {
                // The same rows on every rank (broadcasting aligns the last axes: equal ranks).
                local = local && s->shape().size() == first->shape().size() && s->shape()[0] == first->shape()[0] &&
                        s->layout().ranks == first->layout().ranks;
                blocks.push_back(s->local());
            } else if (array_like(a) && array_like_shape(a).size() == first->shape().size() &&
                       array_like_shape(a)[0] == first->shape()[0] && first->shape()[0] > 1) {
                // A whole array with the same rows: its block is this rank's rows of it (no communication).
                blocks.push_back(rows_of(a, first->layout(), loc));
            } else {
                if (array_like(a)) {
                    const Shape sh = array_like_shape(a);
                    local = local && (sh.size() < first->shape().size() || (sh.size() == first->shape().size() && sh[0] == 1));
                }
                blocks.push_back(a);
            }
        }
        if (local) {
            // Shapes are checked whole, so an error names them as alone, not the blocks.
            std::vector<Shape> shapes;
            for (const Value& a : args)
                if (array_like(a)) shapes.push_back(array_like_shape(a));
            if (shapes.size() > 1) ops::require_broadcast(shapes, std::string(name).c_str(), loc);
            return wrap_blocks(local_builtin(name, type, blocks, ctx, loc), first->layout(), comm_);
        }
    }
    // Anything else: the sharded arguments whole, and the builtin as alone
    // (`show` is printing, which gathers without a word).
    std::vector<Value> whole;
    for (const Value& a : args)
        whole.push_back(name == "show" && as_sharded(a) ? Value(as_sharded(a)->force())
                                                        : gathered("`" + std::string(name) + "`", a, loc));
    return local_builtin(name, type, whole, ctx, loc);
}

Value ShardingBackend::global_rows(int64_t first, int64_t count, EvalContext& ctx, const Loc& loc) {
    const Value rows = local_builtin("iota", nullptr, std::vector<Value>{evalimpl::int_value(count)}, ctx, loc);
    return first ? local_builtin("+", nullptr, std::vector<Value>{rows, evalimpl::int_value(first)}, ctx, loc) : rows;
}

Value ShardingBackend::select(const Value& v, std::span<const ops::AxisSelect> sel, const Loc& loc) {
    if (std::optional<Value> part = inner_->slice(v, sel, loc)) return *part;
    return ops::index_array(*force(v).array(),
                            ops::full_selection(array_like_shape(v), std::vector<ops::AxisSelect>(sel.begin(), sel.end())));
}

Value ShardingBackend::rows_of(const Value& x, const Layout& layout, const Loc& loc) {
    if (const ShardedArray* s = as_sharded(x)) {
        SHOAL_INTERNAL_ASSERT(s->layout().global[0] == layout.global[0] && s->layout().ranks == layout.ranks,
                              "rows_of: a sharded array whose rows are laid out otherwise");
        return s->local();
    }
    const int r = comm_->rank();
    const ops::AxisSelect rows[1] = {ops::AxisSelect{false, layout.begin(r), 1, layout.end(r) - layout.begin(r)}};
    return select(x, rows, loc);
}

std::optional<Value> ShardingBackend::slice(const Value& a, std::span<const ops::AxisSelect> sel, const Loc& loc) {
    const NoticesAsWarnings notices(*comm_, warnings_, loc);
    if (const ShardedArray* s = as_sharded(a)) return sharded_slice(*s, sel, loc);
    return inner_->slice(a, sel, loc);
}

std::optional<Value> ShardingBackend::update(const Value& a, std::span<const ops::AxisSelect> sel, const Value& v,
                                             const Loc& loc) {
    const NoticesAsWarnings notices(*comm_, warnings_, loc);
    if (const ShardedArray* s = as_sharded(a))
        if (std::optional<Value> updated = sharded_update(*s, sel, v, loc)) return updated;
    return inner_->update(gathered("an update", a, loc), sel, gathered("an update", v, loc), loc);
}

bool ShardingBackend::same_rows(const Value& mask, const Value& rows) const {
    const ShardedArray* m = as_sharded(mask);
    const ShardedArray* x = as_sharded(rows);
    if (!array_like(mask) || !array_like(rows) || (!m && !x)) return false;
    const Shape ms = array_like_shape(mask), xs = array_like_shape(rows);
    return ms.size() == 1 && !xs.empty() && ms[0] == xs[0] && (!m || !x || m->layout().ranks == x->layout().ranks);
}

Value ShardingBackend::sharded(const Layout& layout, Value local) const {
    return Value(std::make_shared<const ShardedArray>(layout, comm_, std::move(local)));
}

// No replay: a replayed loop step runs its plans without evaluating its
// body, so the collectives of a sharded step would not run.
std::unique_ptr<LoopReplay> ShardingBackend::replay_loop(const EvalContext&) { return nullptr; }

}  // namespace shoal::compiled
