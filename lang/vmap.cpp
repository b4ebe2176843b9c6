// vmap f xs (JAX's name and meaning): f applied to every row of xs (every
// element of a vector), the results stacked along a new leading axis.
//
// The reference evaluator applies f to each row and stacks the results: that
// is the definition. With a backend, f's body is evaluated once for all rows
// ("batching", as JAX traces vmap): a value that differs per row carries the
// mapped axis in front of its own axes, and each operation that meets one is
// rewritten to act on every row at once:
//   - an elementwise operator or math function aligns its operands: a
//     per-row scalar becomes a column, so `r - maximum r` is
//     `m - col (maximum m)` (NumPy's broadcasting does the rest);
//   - a reduction, scan or sort along the innermost axis already works per
//     row (`sum`, `mean`, `sort`, `topk k`, `median`, `scan`, ...);
//   - an index or slice selects inside each row; `length r` is the row's;
//   - `if` on a per-row condition is `where` (both branches are computed);
//   - `map`, `zipWith` and calls of user functions are batched through their
//     bodies; a loop carries per-row state.
// So `vmap softmax m` builds the same fused kernels as the broadcasting form.
//   - an array literal of per-row values gains an axis after the mapped ones
//     (`[mean r, std r]` is a matrix of two columns).
// A construct without a rule (generate, filter, gather, ... reading the row)
// runs f row by row instead, with a warning that says which and why.
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "array_ops.h"
#include "builtin_helpers.h"
#include "diagnostics.h"

namespace shoal::evalimpl {

namespace {

// ---------------------------------------------------------------- batched values
struct BLambda;

// A value during batching: the same for every row (batch == 0), or an array
// whose `batch` leading axes are mapped (the vmap's rows, then the elements
// of a `map` inside it), the value's own axes after them. A mapped axis may
// have extent 1 (it broadcasts). A tuple keeps its components apart when
// some differ per row and others do not.
struct BVal {
    BVal() = default;
    BVal(Value value, int mapped = 0) : v(std::move(value)), batch(mapped) {}
    Value v;
    int batch = 0;
    bool tuple = false;
    std::vector<BVal> parts;                // tuple
    std::shared_ptr<const BLambda> lambda;  // a lambda that reads per-row values
};

bool batched(const BVal& b) {
    if (b.lambda || b.batch > 0) return true;
    return std::any_of(b.parts.begin(), b.parts.end(), batched);
}

BVal same(Value v) { return BVal{std::move(v)}; }

BVal part(const BVal& b, size_t k) {
    if (b.tuple) return b.parts[k];
    return BVal{b.v.tuple()[k], b.batch};
}

size_t tuple_size(const BVal& b) { return b.tuple ? b.parts.size() : b.v.is_tuple() ? b.v.tuple().size() : 0; }

Shape shape_of(const Value& v) {
    if (v.is_scalar()) return {};
    return array_like_shape(v);
}
// The value's own rank: its axes after the mapped ones.
int own_rank(const BVal& b) { return static_cast<int>(shape_of(b.v).size()) - b.batch; }

// Locals bound while batching (a persistent list, innermost first).
struct Local {
    std::string name;
    BVal value;
    std::shared_ptr<const Local> next;
};
using Locals = std::shared_ptr<const Local>;

const BVal* find_local(const Locals& locals, const std::string& name) {
    for (const Local* l = locals.get(); l; l = l->next.get())
        if (l->name == name) return &l->value;
    return nullptr;
}

// Where a body is batched: the closure whose body it is (its environment and
// the globals answer every other name) and the locals bound inside it.
struct Scope {
    Value closure;
    Locals locals;
    const Callable& callable() const { return as_callable(closure); }
};

struct BLambda {
    ExprPtr lambda;
    Scope scope;
};

// Thrown where a construct has no batching rule: vmap runs f row by row.
struct Unbatchable {
    Loc loc;
    std::string what;
};

void pattern_names(const Pattern& p, std::vector<std::string>& out) {
    if (p.kind == PatternKind::Var) out.push_back(p.name);
    for (const PatternPtr& e : p.elems) pattern_names(*e, out);
}

// Whether `e` reads a local that differs per row (names bound inside `e`
// shadow the locals).
bool reads_batched(const Expr& e, const Locals& locals, std::vector<std::string>& bound) {
    auto inside = [&](const std::vector<std::string>& names, auto&& f) {
        const size_t mark = bound.size();
        bound.insert(bound.end(), names.begin(), names.end());
        const bool r = f();
        bound.resize(mark);
        return r;
    };
    auto kid = [&](const ExprPtr& k) { return k && reads_batched(*k, locals, bound); };
    switch (e.kind) {
        case ExprKind::Var: {
            if (std::find(bound.begin(), bound.end(), e.text) != bound.end()) return false;
            const BVal* l = find_local(locals, e.text);
            return l && batched(*l);
        }
        case ExprKind::Lambda: {
            std::vector<std::string> names;
            for (const PatternPtr& p : e.params) pattern_names(*p, names);
            return inside(names, [&] { return kid(e.kids[0]); });
        }
        case ExprKind::Let: {
            if (kid(e.kids[0])) return true;
            std::vector<std::string> names;
            pattern_names(*e.pattern, names);
            return inside(names, [&] { return kid(e.kids[1]); });
        }
        case ExprKind::LoopFor:
        case ExprKind::LoopWhile: {
            if (kid(e.kids[0])) return true;
            if (e.kind == ExprKind::LoopFor && kid(e.kids[1])) return true;
            std::vector<std::string> names;
            pattern_names(*e.pattern, names);
            if (e.kind == ExprKind::LoopFor) names.push_back(e.counter);
            return inside(names, [&] { return (e.kind == ExprKind::LoopWhile && kid(e.kids[1])) || kid(e.kids[2]); });
        }
        default:
            break;
    }
    for (const ExprPtr& k : e.kids)
        if (kid(k)) return true;
    for (const IndexArg& a : e.indices)
        if (kid(a.index) || kid(a.lo) || kid(a.hi) || kid(a.step)) return true;
    return false;
}

bool reads_batched(const Expr& e, const Locals& locals) {
    std::vector<std::string> bound;
    return reads_batched(e, locals, bound);
}

// `t` with `n` more leading axes (a scalar becomes an array of rank n).
Type with_axes(const Type& t0, int n) {
    const Type t = prune(t0);
    if (n == 0) return t;
    if (t->kind == TypeKind::Tuple) {
        std::vector<Type> parts;
        for (const Type& e : t->args) parts.push_back(with_axes(e, n));
        return t_tuple(std::move(parts));
    }
    if (t->kind == TypeKind::Array) return t_array(array_rank(t) + n, array_elem(t));
    if (t->kind == TypeKind::Prim) return t_array(n, t);
    return t;
}

// ---------------------------------------------------------------- the batcher
// The elementwise builtins: operands aligned, then applied as they are.
const std::unordered_set<std::string_view>& elementwise_builtins() {
    static const std::unordered_set<std::string_view> names = {
        "+", "-", "*", "/", "%", "**", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "&", "|", "^", "<<", ">>",
        "negate", "!", "~", "sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
        "tanh", "floor", "ceil", "round", "erf", "abs", "atan2", "pow", "min", "max", "int", "long", "float",
        "double", "where"};
    return names;
}

// Builtins that act along the innermost axis of their last argument (per
// row of a matrix): the per-row array is that argument, the others are the
// same for every row.
const std::unordered_set<std::string_view>& innermost_builtins() {
    static const std::unordered_set<std::string_view> names = {
        "sum",  "product", "maximum", "minimum", "mean",   "var",     "std",    "norm",          "median",
        "all",  "any",     "argmax",  "argmin",  "sort",   "cumsum",  "cumprod", "quantile",     "topk",
        "scan", "scanExclusive", "reduce", "count"};
    return names;
}

class Batcher {
public:
    Batcher(EvalContext& ctx, int64_t rows, const Loc& loc) : ctx_(ctx), rows_(rows), loc_(loc) {}

    BVal walk(const ExprPtr& e, const Scope& s) {
        if (!reads_batched(*e, s.locals)) return same(unbatched(*e, s));
        check_cancel(ctx_, e->loc);
        switch (e->kind) {
            case ExprKind::Var: return *find_local(s.locals, e->text);
            case ExprKind::Annot: return walk(e->kids[0], s);
            case ExprKind::Let: {
                Scope inner = s;
                bind(inner.locals, *e->pattern, walk(e->kids[0], s));
                return walk(e->kids[1], inner);
            }
            case ExprKind::Tuple: {
                BVal t;
                t.tuple = true;
                for (const ExprPtr& k : e->kids) t.parts.push_back(walk(k, s));
                return t;
            }
            case ExprKind::Lambda: {
                BVal f;
                f.lambda = std::make_shared<const BLambda>(BLambda{e, s});
                return f;
            }
            case ExprKind::Binary:
            case ExprKind::Unary: {
                std::vector<BVal> args;
                for (const ExprPtr& k : e->kids) args.push_back(walk(k, s));
                return builtin(*find_builtin(e->text), nullptr, args, e->loc);
            }
            case ExprKind::If: return walk_if(*e, s);
            case ExprKind::App: return walk_app(e, s);
            case ExprKind::Index: return walk_index(*e, s);
            case ExprKind::LoopFor: return walk_loop(*e, s);
            case ExprKind::ArrayLit: return walk_array_literal(*e, s);
            case ExprKind::With: return walk_with(*e, s);
            case ExprKind::LoopWhile: throw Unbatchable{e->loc, "a `while` loop reading values that differ per row"};
            default: break;
        }
        throw Unbatchable{e->loc, "this expression"};
    }

    // f applied to `args` (some differ per row).
    BVal apply(const BVal& f, std::vector<BVal> args, const Loc& loc) {
        if (f.lambda) return call_lambda(f.lambda->lambda, f.lambda->scope, 0, std::move(args), loc);
        const Callable& c = as_callable(f.v);
        const CallableView view = c.view();
        if (view.lambda) return call_lambda(view.lambda, Scope{f.v, nullptr}, view.bound, std::move(args), loc);
        std::vector<BVal> all;
        for (const Value& a : view.args) all.push_back(same(a));
        for (BVal& a : args) all.push_back(std::move(a));
        if (all.size() != static_cast<size_t>(view.builtin->arity))
            throw Unbatchable{loc, "a partial application of `" + std::string(view.builtin->name) + "`"};
        return builtin(*view.builtin, view.type, all, loc);
    }

    // Physical rows of the result: every value with the mapped axis in front
    // (one the same for every row is repeated, as an index map).
    Value rows_of(const BVal& b) {
        if (b.tuple || (b.batch == 0 && b.v.is_tuple())) {
            std::vector<Value> parts;
            for (size_t k = 0; k < tuple_size(b); ++k) parts.push_back(rows_of(part(b, k)));
            return Value(std::move(parts));
        }
        SHOAL_INTERNAL_ASSERT(b.batch <= 1 && !b.lambda, "vmap's result has more than the mapped axis");
        const Shape s = shape_of(b.v);
        if (b.batch == 1 && s[0] == rows_) return b.v;
        return spread_rows(b.v, b.batch);
    }

    // x (with `batch` mapped axes, 0 or an extent-1 one) repeated for every
    // row: an index map, not copies.
    Value spread_rows(const Value& x, int batch) {
        Shape flags{rows_};
        flags.insert(flags.end(), shape_of(x).size() - static_cast<size_t>(batch), 1);
        const Type shape_type = flags.size() == 1 ? t_prim(Prim::Int)
                                                  : t_tuple(std::vector<Type>(flags.size(), t_prim(Prim::Int)));
        const Type bool_type = t_prim(Prim::Bool);
        const Value mask = named("fill", {shape_value(flags), Value(Scalar::of_bool(true))},
                                 t_func({shape_type, bool_type}, t_array(static_cast<int>(flags.size()), bool_type)));
        return named("where", {mask, x, x});
    }

private:
    Value named(const char* name, std::initializer_list<Value> args, const Type& type = nullptr) {
        return apply_builtin(*find_builtin(name), type, std::span<const Value>(args.begin(), args.size()), ctx_, loc_);
    }

    // `reshape want v`, typed (the reference evaluator builds its result from the type).
    Value reshaped(const Value& v, const Shape& want) {
        const Type extents = want.size() == 1 ? t_prim(Prim::Int)
                                              : t_tuple(std::vector<Type>(want.size(), t_prim(Prim::Int)));
        const Type elem = t_prim(ops::prim_of_value(v));
        const Type t = t_func({extents, t_array(static_cast<int>(shape_of(v).size()), elem)},
                              t_array(static_cast<int>(want.size()), elem));
        return named("reshape", {shape_value(want), v}, t);
    }

    Value unbatched(const Expr& e, const Scope& s) {
        std::vector<std::pair<std::string, Value>> locals;
        for (const Local* l = s.locals.get(); l; l = l->next.get())
            if (!batched(l->value)) locals.emplace_back(l->name, value_of(l->value));
        std::reverse(locals.begin(), locals.end());
        // A part that draws random numbers or touches a file does so once per
        // row by vmap's definition, but would do it once for all rows here.
        const uint64_t stream = ctx_.random_stream, effects = ctx_.effects;
        Value v = s.callable().evaluate_with(e, locals, ctx_);
        if (ctx_.random_stream != stream || ctx_.effects != effects)
            throw Unbatchable{e.loc, "a part that draws random numbers or reads or writes a file (once per row)"};
        return v;
    }

    static Value value_of(const BVal& b) {
        if (!b.tuple) return b.v;
        std::vector<Value> parts;
        for (const BVal& p : b.parts) parts.push_back(value_of(p));
        return Value(std::move(parts));
    }

    void bind(Locals& locals, const Pattern& p, const BVal& v) {
        switch (p.kind) {
            case PatternKind::Var: locals = std::make_shared<const Local>(Local{p.name, v, locals}); return;
            case PatternKind::Wildcard: return;
            case PatternKind::Tuple:
                for (size_t k = 0; k < p.elems.size(); ++k) bind(locals, *p.elems[k], part(v, k));
                return;
        }
    }

    BVal call_lambda(const ExprPtr& lambda, Scope scope, size_t bound, std::vector<BVal> args, const Loc& loc) {
        const auto& params = lambda->params;
        if (args.size() != params.size() - bound)
            throw Unbatchable{loc, "a function applied to " + std::to_string(args.size()) + " of its " +
                                       std::to_string(params.size() - bound) + " arguments"};
        for (size_t k = 0; k < args.size(); ++k) bind(scope.locals, *params[bound + k], args[k]);
        return walk(lambda->kids[0], scope);
    }

    // ------------------------------------------------------------ alignment
    // The operands of an elementwise operation as arrays of one rank: each
    // per-row operand gets axes of extent 1 after its mapped axes (for the
    // mapped axes of a `map` inside) and before its own (a per-row scalar
    // beside a row becomes a column). Operands the same for every row are
    // left as they are: NumPy's broadcasting aligns them at the trailing axis.
    std::vector<Value> align(const std::vector<BVal>& args, int& batch, const Loc& loc) {
        batch = 0;
        int own = 0;
        for (const BVal& a : args) {
            if (a.lambda || a.tuple || (a.v.is_tuple()))
                throw Unbatchable{loc, "an elementwise operation on tuples or functions that differ per row"};
            batch = std::max(batch, a.batch);
            own = std::max(own, own_rank(a));
        }
        if (batch + own > 3)
            throw Unbatchable{loc, "an operation that would need " + std::to_string(batch + own) +
                                       " axes with the mapped ones (arrays have at most 3)"};
        std::vector<Value> out;
        for (const BVal& a : args) {
            if (a.batch == 0) {
                out.push_back(a.v);
                continue;
            }
            const Shape s = shape_of(a.v);
            Shape want(s.begin(), s.begin() + a.batch);
            want.insert(want.end(), static_cast<size_t>(batch - a.batch + own - own_rank(a)), 1);
            want.insert(want.end(), s.begin() + a.batch, s.end());
            out.push_back(want == s ? a.v : reshaped(a.v, want));
        }
        return out;
    }

    BVal elementwise(const BuiltinDef& def, const std::vector<BVal>& args, const Loc& loc) {
        int batch = 0;
        const std::vector<Value> values = align(args, batch, loc);
        return BVal{apply_builtin(def, nullptr, values, ctx_, loc), batch};
    }

    // ------------------------------------------------------------ builtins
    BVal builtin(const BuiltinDef& def, const Type& type, std::vector<BVal>& args, const Loc& loc) {
        const std::string_view name = def.name;
        if (elementwise_builtins().count(name)) return elementwise(def, args, loc);
        const BVal& last = args.back();
        for (size_t k = 0; k + 1 < args.size(); ++k)
            if (batched(args[k]) && name != "map" && name != "zipWith" && name != "zipWith3" && name != "dot" && name != "@")
                throw Unbatchable{loc, "`" + std::string(name) + "` with an argument other than the array that differs per row"};
        if (innermost_builtins().count(name)) {
            if (last.tuple || last.lambda) throw Unbatchable{loc, "`" + std::string(name) + "` of a tuple that differs per row"};
            std::vector<Value> values;
            for (const BVal& a : args) values.push_back(a.v);
            return BVal{apply_builtin(def, physical_type(type, values, last.batch), values, ctx_, loc), last.batch};
        }
        if (name == "length" || name == "rows" || name == "cols" || name == "shape") {
            const Shape s = shape_of(last.v);
            const Shape own(s.begin() + last.batch, s.end());
            if (name == "shape") return same(shape_value(own));
            return same(int_value(own[name == "cols" ? 1 : 0]));
        }
        if (name == "col" || name == "row") {
            const Shape s = shape_of(last.v);
            Shape want(s.begin(), s.begin() + last.batch);
            if (name == "row") want.push_back(1);
            want.push_back(s.back());
            if (name == "col") want.push_back(1);
            if (want.size() > 3) throw Unbatchable{loc, "`" + std::string(name) + "` with more than 3 axes"};
            return BVal{reshaped(last.v, want), last.batch};
        }
        if (name == "dot") {
            int batch = 0;
            const std::vector<Value> values = align(args, batch, loc);
            return BVal{apply_builtin(def, nullptr, values, ctx_, loc), batch};
        }
        if (name == "@" || name == "matmul") {
            // A row (vector) times a matrix or vector: every row at once is a matrix product.
            if (args[0].batch == 1 && own_rank(args[0]) == 1 && !batched(args[1]) && !args[0].tuple) {
                const std::vector<Value> values{args[0].v, args[1].v};
                const Type t = physical_type(type, values, 1);
                return BVal{apply_builtin(def, t, values, ctx_, loc), 1};
            }
            throw Unbatchable{loc, "`@` with a matrix that differs per row"};
        }
        if (name == "map" || name == "zipWith" || name == "zipWith3") return map(def, type, args, loc);
        // generate n g reading the row: map g (iota n).
        if (name == "generate" && args[1].lambda && !batched(args[0]) && args[0].v.is_scalar()) {
            const Type int_type = t_prim(Prim::Int);
            std::vector<BVal> mapped{args[1], same(named("iota", {args[0].v}, t_func(int_type, t_array(1, int_type))))};
            return map(*find_builtin("map"), nullptr, mapped, loc);
        }
        if (name == "reverse" || name == "take" || name == "drop") return along_rows(std::string(name), args, loc);
        throw Unbatchable{loc, "`" + std::string(name) + "` of a value that differs per row"};
    }

    // The builtin's type for the physical arguments: array parameters as
    // they are, the result with `batch` more axes.
    static Type physical_type(const Type& type, const std::vector<Value>& values, int batch) {
        if (!type) return nullptr;
        std::vector<Type> params;
        Type t = type;
        for (const Value& v : values) {
            const Type p = func_param(t);
            if (v.is_array() || v.is_delayed()) params.push_back(t_array(static_cast<int>(shape_of(v).size()), array_elem(p)));
            else params.push_back(p);
            t = func_result(t);
        }
        return t_func(params, with_axes(t, batch));
    }

    // map f xs, zipWith f xs ys: the arrays aligned; f applied to the whole
    // arrays (elementwise over every axis: they count as mapped axes) when f
    // reads per-row values, else the builtin as it is.
    BVal map(const BuiltinDef& def, const Type& type, std::vector<BVal>& args, const Loc& loc) {
        const BVal f = args[0];
        std::vector<BVal> arrays(args.begin() + 1, args.end());
        int batch = 0;
        std::vector<Value> values = align(arrays, batch, loc);
        if (!f.lambda) {
            std::vector<Value> all{f.v};
            all.insert(all.end(), values.begin(), values.end());
            return BVal{apply_builtin(def, physical_type(type, all, batch), all, ctx_, loc), batch};
        }
        // Every axis of the operands is mapped for f's body; operands the
        // same for every row get a mapped axis of extent 1 in front.
        int axes = 0;
        for (const Value& v : values) axes = std::max(axes, static_cast<int>(shape_of(v).size()));
        if (batch == 0) ++axes;
        if (axes > 3) throw Unbatchable{loc, "`map` over more than 3 axes with the mapped ones"};
        std::vector<BVal> elems;
        for (Value& v : values) {
            Shape s = shape_of(v);
            Shape want(static_cast<size_t>(axes) - s.size(), 1);
            want.insert(want.end(), s.begin(), s.end());
            if (want != s) v = reshaped(v, want);
            elems.push_back(BVal{v, axes});
        }
        BVal r = apply(f, elems, loc);
        if (r.tuple || r.v.is_tuple()) throw Unbatchable{loc, "`map` with a function returning tuples"};
        // A result that does not read the element is spread over the operand's shape.
        if (r.batch < axes) {
            int b = 0;
            const std::vector<Value> like = align({r, elems[0]}, b, loc);
            r = BVal{named("where", {named("==", {like[1], like[1]}), like[0], like[0]}), b};
        }
        return BVal{r.v, batch == 0 ? 1 : batch};
    }

    // ------------------------------------------------------------ syntax
    BVal walk_if(const Expr& e, const Scope& s) {
        const BVal c = walk(e.kids[0], s);
        if (!batched(c)) return walk(e.kids[force(c.v).scalar().b ? 1 : 2], s);
        // Both branches for every row, then each row's: as JAX's select.
        return select(c, walk(e.kids[1], s), walk(e.kids[2], s), e.loc);
    }

    BVal select(const BVal& c, const BVal& a, const BVal& b, const Loc& loc) {
        if (a.tuple || b.tuple || a.v.is_tuple() || b.v.is_tuple()) {
            BVal t;
            t.tuple = true;
            for (size_t k = 0; k < std::max(tuple_size(a), tuple_size(b)); ++k)
                t.parts.push_back(select(c, part(a, k), part(b, k), loc));
            return t;
        }
        return elementwise(*find_builtin("where"), {c, a, b}, loc);
    }

    BVal walk_app(const ExprPtr& e, const Scope& s) {
        std::vector<const Expr*> apps;
        const Expr* head = e.get();
        while (head->kind == ExprKind::App) {
            apps.push_back(head);
            head = head->kids[0].get();
        }
        std::reverse(apps.begin(), apps.end());
        std::vector<BVal> args;
        for (const Expr* a : apps) args.push_back(walk(a->kids[1], s));
        const ExprPtr& head_ptr = apps.front()->kids[0];
        if (head->kind == ExprKind::Var && !find_local(s.locals, head->text) &&
            !s.callable().resolve(*head, ctx_)) {
            if (const BuiltinDef* def = find_builtin(head->text)) {
                if (args.size() != static_cast<size_t>(def->arity))
                    throw Unbatchable{e->loc, "`" + head->text + "` applied to " + std::to_string(args.size()) +
                                                  " of its " + std::to_string(def->arity) + " arguments"};
                return builtin(*def, head->type, args, e->loc);
            }
        }
        return apply(walk(head_ptr, s), std::move(args), e->loc);
    }

    // An int that must be the same for every row (an index, a count).
    int64_t same_int(const ExprPtr& p, const Scope& s, const char* what) {
        const BVal v = walk(p, s);
        if (batched(v)) throw Unbatchable{p->loc, std::string(what) + " that differs per row"};
        return force(v.v).scalar().as_long();
    }

    // The selection of an Index or With node on a per-row array: the mapped
    // axes whole, then the node's own indices and slices (the same for every row).
    // `first`: the first plain index, when the caller has evaluated it already.
    std::vector<ops::AxisSelect> selection(const Expr& e, const Scope& s, const BVal& a,
                                           std::optional<int64_t> first = std::nullopt) {
        if (is_mask_index(e)) throw Unbatchable{e.loc, "a mask or index array on a value that differs per row"};
        if (a.tuple || a.lambda) throw Unbatchable{e.loc, "an index of a tuple that differs per row"};
        const Shape shape = shape_of(a.v);
        std::vector<ops::AxisSelect> sel;
        for (int k = 0; k < a.batch; ++k) sel.push_back(ops::AxisSelect{false, 0, 1, shape[static_cast<size_t>(k)]});
        auto int_at = [&](const ExprPtr& p) -> std::optional<int64_t> {
            if (!p) return std::nullopt;
            return same_int(p, s, "an index");
        };
        for (size_t k = 0; k < e.indices.size(); ++k) {
            const IndexArg& arg = e.indices[k];
            const Loc loc = arg.loc.valid() ? arg.loc : e.loc;
            const int64_t extent = shape[static_cast<size_t>(a.batch) + k];
            if (!arg.is_slice)
                sel.push_back(ops::select_index(k == 0 && first ? *first : *int_at(arg.index), extent, static_cast<int>(k), loc));
            else sel.push_back(ops::select_slice(int_at(arg.lo), int_at(arg.hi), int_at(arg.step), extent, loc));
        }
        return sel;
    }

    // The part of a per-row array that `sel` selects (the backend keeps it an index map).
    BVal part_of(const BVal& a, const std::vector<ops::AxisSelect>& sel, const Loc& loc) {
        if (ctx_.backend)
            if (std::optional<Value> r = ctx_.backend->slice(a.v, sel, loc)) return BVal{*r, a.batch};
        const Value host = force(a.v);
        if (host.is_array()) return BVal{ops::index_array(*host.array(), ops::full_selection(shape_of(a.v), sel)), a.batch};
        throw Unbatchable{loc, "an index of an array of tuples that differs per row"};
    }

    // xs[i] with i differing per row (or per element of a `map` over a row):
    // a gather from the flattened rows at row * k + i.
    BVal gathered(const BVal& a, const BVal& idx, const Loc& loc) {
        if (a.tuple || a.lambda || a.v.is_tuple() || own_rank(a) != 1 || idx.tuple || idx.v.is_tuple() || own_rank(idx) != 0 ||
            a.batch > 1)
            throw Unbatchable{loc, "an index that differs per row, into a matrix or tuples"};
        const Shape sa = shape_of(a.v), si = shape_of(idx.v);
        if (a.batch == 1 && sa[0] == 0) throw Unbatchable{loc, "an index that differs per row, with no rows"};
        const int64_t k = sa.back();
        const Type int_type = t_prim(Prim::Int);
        // Negative indices count from the end, as a plain index's do.
        Value at = named("where", {named("<", {idx.v, int_value(0)}), named("+", {idx.v, int_value(k)}), idx.v});
        if (a.batch == 1 && sa[0] > 1) {
            Shape rows_at(si.size(), 1);
            rows_at[0] = sa[0];
            const Value row = reshaped(named("iota", {int_value(sa[0])}, t_func(int_type, t_array(1, int_type))), rows_at);
            // An index outside the row must not reach another row: -1 makes gather raise.
            const Value inside = named("&&", {named(">=", {at, int_value(0)}), named("<", {at, int_value(k)})});
            at = named("where", {inside, named("+", {named("*", {row, int_value(k)}), at}), int_value(-1)});
        }
        const Value flat_at = named("flatten", {at}, t_func(t_array(static_cast<int>(shape_of(at).size()), int_type), t_array(1, int_type)));
        const Prim elem = ops::prim_of_value(a.v);
        const Value flat_a = sa.size() == 1 ? a.v
                                            : named("flatten", {a.v}, t_func(t_array(static_cast<int>(sa.size()), t_prim(elem)),
                                                                             t_array(1, t_prim(elem))));
        gathers_ = true;
        const Value picked = named("gather", {flat_at, flat_a},
                                   t_func({t_array(1, int_type), t_array(1, t_prim(elem))}, t_array(1, t_prim(elem))));
        const Shape out = shape_of(at);
        return BVal{out.size() == 1 ? picked : reshaped(picked, out), std::max(idx.batch, a.batch)};
    }

    // a[i, j:k]: a gather when the one plain index differs per row, else a
    // part of each row (or of an array the same for every row, indexed by
    // something computed from the row that is the same for all: w[length r - 1]).
    BVal walk_index(const Expr& e, const Scope& s) {
        std::optional<int64_t> first;
        if (!e.indices.empty() && !e.indices[0].is_slice && !is_mask_index(e)) {
            const BVal idx = walk(e.indices[0].index, s);
            if (batched(idx)) {
                if (e.indices.size() > 1) throw Unbatchable{e.loc, "an index that differs per row, into a matrix"};
                return gathered(walk(e.kids[0], s), idx, e.loc);
            }
            first = force(idx.v).scalar().as_long();
        }
        const BVal a = walk(e.kids[0], s);
        return part_of(a, selection(e, s, a, first), e.loc);
    }

    // a with [...] = v on a per-row array (or a per-row v): the backend's
    // update with the mapped axes selected whole; a per-row v lines up with
    // the selected part (a per-row scalar fills its row's part).
    BVal walk_with(const Expr& e, const Scope& s) {
        BVal a = walk(e.kids[0], s);
        const BVal v = walk(e.kids[1], s);
        if (v.tuple || v.lambda || a.tuple || a.lambda || a.v.is_tuple() || v.v.is_tuple())
            throw Unbatchable{e.loc, "`with` on tuples that differ per row"};
        if (!ctx_.backend) throw Unbatchable{e.loc, "`with` on a value that differs per row"};
        if (a.batch < v.batch) {  // the same array for every row, a part that is not: a copy per row
            if (a.batch > 0 || v.batch > 1) throw Unbatchable{e.loc, "`with` inside a `map` over a row"};
            a = BVal{spread_rows(a.v, 0), 1};
        }
        const std::vector<ops::AxisSelect> sel = selection(e, s, a);
        const Shape part = ops::selected_shape(ops::full_selection(shape_of(a.v), sel));
        Value value = v.v;
        if (v.batch > 0) {
            const Shape sv = shape_of(v.v);
            Shape want(sv.begin(), sv.begin() + v.batch);
            want.insert(want.end(), part.size() - sv.size(), 1);
            want.insert(want.end(), sv.begin() + v.batch, sv.end());
            if (want != sv) value = reshaped(v.v, want);
        }
        if (std::optional<Value> r = ctx_.backend->update(settle(a.v), sel, value, e.loc)) return BVal{*r, a.batch};
        throw Unbatchable{e.loc, "`with` on a value that differs per row"};
    }

    // reverse, take n, drop n of a per-row array: along its own outermost axis.
    BVal along_rows(const std::string& name, const std::vector<BVal>& args, const Loc& loc) {
        const BVal& a = args.back();
        if (a.tuple || a.lambda || a.v.is_tuple() || own_rank(a) < 1) throw Unbatchable{loc, "`" + name + "` of a tuple that differs per row"};
        const Shape shape = shape_of(a.v);
        std::vector<ops::AxisSelect> sel;
        for (int k = 0; k < a.batch; ++k) sel.push_back(ops::AxisSelect{false, 0, 1, shape[static_cast<size_t>(k)]});
        const int64_t n = shape[static_cast<size_t>(a.batch)];
        if (name == "reverse") {
            sel.push_back(ops::select_slice(std::nullopt, std::nullopt, -1, n, loc));
        } else {
            const int64_t k = std::clamp<int64_t>(force(args[0].v).scalar().as_long(), 0, n);
            sel.push_back(name == "take" ? ops::select_slice(0, k, 1, n, loc) : ops::select_slice(k, n, 1, n, loc));
        }
        return part_of(a, sel, loc);
    }

    // [a, b, ...] with some elements per row: a new axis after the mapped
    // ones, element t where its index is t (nested `where`s over an index
    // that broadcasts: an index map, no copies).
    BVal walk_array_literal(const Expr& e, const Scope& s) {
        std::vector<BVal> elems;
        for (const ExprPtr& k : e.kids) elems.push_back(walk(k, s));
        int batch = 0;
        for (const BVal& x : elems) {
            if (x.tuple || x.lambda || x.v.is_tuple())
                throw Unbatchable{e.loc, "an array literal of tuples or functions that differ per row"};
            batch = std::max(batch, x.batch);
        }
        const int own = own_rank(elems[0]);
        if (batch + 1 + own > 3)
            throw Unbatchable{e.loc, "an array literal that would need " + std::to_string(batch + 1 + own) +
                                         " axes with the mapped ones (arrays have at most 3)"};
        const auto count = static_cast<int64_t>(elems.size());
        std::vector<Value> parts;
        for (const BVal& x : elems) {
            if (x.batch == 0) {  // broadcasting lines it up at the trailing axes
                parts.push_back(x.v);
                continue;
            }
            const Shape sx = shape_of(x.v);
            Shape want(sx.begin(), sx.begin() + x.batch);
            want.insert(want.end(), static_cast<size_t>(batch - x.batch + 1), 1);
            want.insert(want.end(), sx.begin() + x.batch, sx.end());
            parts.push_back(reshaped(x.v, want));
        }
        Shape at(static_cast<size_t>(batch), 1);
        at.push_back(count);
        at.insert(at.end(), static_cast<size_t>(own), 1);
        const Value position = reshaped(named("iota", {int_value(count)}, t_func(t_prim(Prim::Int), t_array(1, t_prim(Prim::Int)))), at);
        Value acc = parts.back();
        for (int64_t k = count - 2; k >= 0; --k)
            acc = named("where", {named("==", {position, int_value(k)}), parts[static_cast<size_t>(k)], acc});
        // A single element: spread over its new axis of 1 by itself.
        if (count == 1) acc = named("where", {named("==", {position, int_value(0)}), acc, acc});
        return BVal{acc, batch};
    }

    BVal walk_loop(const Expr& e, const Scope& s) {
        const int64_t n = same_int(e.kids[1], s, "a loop count");
        BVal x = walk(e.kids[0], s);
        for (int64_t i = 0; i < n; ++i) {
            Scope inner = s;
            bind(inner.locals, *e.pattern, x);
            inner.locals = std::make_shared<const Local>(Local{e.counter, same(int_value(i)), inner.locals});
            x = settled(walk(e.kids[2], inner));
        }
        return x;
    }

    // A loop's state computed at the end of each step (as the evaluator's
    // loops do), so that steps do not fuse into ever deeper plans.
    static BVal settled(BVal b) {
        if (b.tuple)
            for (BVal& p : b.parts) p = settled(std::move(p));
        else if (!b.lambda)
            b.v = settle(b.v);
        return b;
    }

public:
    // A gather's bounds are checked when it is computed: such a result is
    // computed inside vmap, so that an index out of a row is decided row by row.
    bool gathers() const { return gathers_; }

private:
    EvalContext& ctx_;
    int64_t rows_;
    Loc loc_;
    bool gathers_ = false;
};

// ---------------------------------------------------------------- vmap
// The shapes of a result's arrays ("(3)", "((3), (2, 2))" for a tuple).
std::string shapes_of(const Value& v) {
    if (v.is_tuple()) {
        std::string out = "(";
        for (size_t k = 0; k < v.tuple().size(); ++k) out += (k ? ", " : "") + shapes_of(v.tuple()[k]);
        return out + ")";
    }
    return v.is_scalar() ? "a scalar" : shape_to_string(shape_of(v));
}

Value batched_rows(const BuiltinCall& c, const Value& f, const Value& xs) {
    Batcher batcher(c.ctx, array_like_shape(xs)[0], c.loc);
    Value rows = batcher.rows_of(batcher.apply(same(f), {BVal{xs, 1}}, c.loc));
    return batcher.gathers() ? settle(rows) : rows;
}

// The definition: f applied to each row, the results stacked.
Value by_rows(const BuiltinCall& c, const Value& f, const Value& xs) {
    const Value host = force(xs);
    const int64_t n = array_like_shape(host)[0];
    // No rows: the shape of f's result comes from batching f (as JAX traces
    // it), so that `vmap f` of a (0, k) matrix has the inner extents f gives.
    if (n == 0) {
        try {
            return batched_rows(c, f, host);
        } catch (const Unbatchable&) {
        } catch (const Error& e) {  // no row calls f, so nothing is raised
            if (e.kind != ErrorKind::Runtime) throw;
        }
    }
    std::vector<Value> results;
    results.reserve(static_cast<size_t>(n));
    std::string first;
    for (int64_t i = 0; i < n; ++i) {
        check_cancel(c.ctx, c.loc);
        const Value row = ops::row_of(host, i);
        results.push_back(force(apply_value(f, std::span<const Value>(&row, 1), c.ctx, c.loc)));
        const std::string shapes = shapes_of(results.back());
        if (i == 0) first = shapes;
        else if (shapes != first)
            fail(c, "the function returned " + first + " for row 0 but " + shapes + " for row " + std::to_string(i) +
                        ": vmap stacks one result per row, so they must have one shape (a result of varying length, "
                        "such as filter's, cannot be stacked: pad it, or count with `count`)");
    }
    return stack_values(results, c.result_type(), c.loc);
}

Value b_vmap(const BuiltinCall& c, Args a) {
    const Value& f = a[0];
    const Value& xs = a[1];
    const Shape s = array_like_shape(xs);
    if (!c.ctx.backend || c.ctx.tracer) return by_rows(c, f, xs);
    // A vector's elements mapped to scalars: `map`'s job (f compiled into the kernel).
    const Type result = c.result_type();
    if (s.size() == 1 && is_array(result) && array_rank(result) == 1)
        return apply_named(c, "map", {f, xs}, t_func({func_param(c.type), func_param(func_result(c.type))}, result));
    const uint64_t stream = c.ctx.random_stream;
    try {
        return batched_rows(c, f, xs);
    } catch (const Error& e) {
        // An error for all rows at once: the definition decides. Row by row
        // it is raised as the user's function raises it (a row's shapes, not
        // the batch's); or it came from a branch of `if` that no row takes,
        // which batching computes for every row, and the rows give the answer.
        if (e.kind != ErrorKind::Runtime) throw;
        c.ctx.random_stream = stream;
        Value rows = by_rows(c, f, xs);
        if (c.ctx.warnings)
            c.ctx.warnings->push_back({c.loc, "vmap ran its function row by row (" + std::to_string(s[0]) +
                                                  " calls): for all rows at once it raised: " + e.what(),
                                       {"with `if`, both branches are computed for every row; guard the one that fails "
                                        "(an index clamped with min / max) to keep vmap compiled"}});
        return rows;
    } catch (const Unbatchable& u) {
        c.ctx.random_stream = stream;  // the rows draw what they would have drawn
        if (c.ctx.warnings)
            c.ctx.warnings->push_back(
                {c.loc,
                 "vmap ran its function row by row (" + std::to_string(s[0]) + " calls): " + u.what +
                     " has no rule for all rows at once (at " + std::to_string(u.loc.line) + ":" +
                     std::to_string(u.loc.col) + ")",
                 {"write the function with whole-row operations (arithmetic, reductions, sort, slices, map), "
                  "or write the rows' computation with generate over (rows, cols)"}});
        return by_rows(c, f, xs);
    }
}

const BuiltinDef kVmap[] = {
    {"vmap", 2, b_vmap, false, true},
};

}  // namespace

std::span<const BuiltinDef> vmap_builtins() { return kVmap; }

}  // namespace shoal::evalimpl
