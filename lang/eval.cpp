// The reference evaluator: a direct tree walk over type-checked expressions.
// Locals live in a persistent linked environment (lexical scoping, shadowing
// by prepending); globals come from EvalContext::globals; any other name is a
// builtin (builtins_eval.cpp).
#include "eval.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>

#include "array_ops.h"
#include "builtins_eval.h"

namespace shoal {

namespace {

using namespace evalimpl;

// ---------------------------------------------------------------- environment
struct Frame;
using Env = std::shared_ptr<const Frame>;
struct Frame {
    std::string name;
    Value value;
    Env next;
};

const Value* lookup(const Env& env, const std::string& name) {
    for (const Frame* f = env.get(); f; f = f->next.get())
        if (f->name.size() == name.size() && f->name[0] == name[0] && f->name == name) return &f->value;
    return nullptr;
}

// Visits the (name, value) pairs a pattern binds, left to right.
template <class F>
void destructure(const Pattern& p, const Value& v, F&& visit) {
    switch (p.kind) {
        case PatternKind::Var: visit(p.name, v); return;
        case PatternKind::Wildcard: return;
        case PatternKind::Tuple:
            SHOAL_INTERNAL_ASSERT(v.is_tuple() && v.tuple().size() == p.elems.size(),
                                  "tuple pattern does not match its value");
            for (size_t k = 0; k < p.elems.size(); ++k) destructure(*p.elems[k], v.tuple()[k], visit);
            return;
    }
}

Env extend(const Env& env, const Pattern& p, const Value& v) {
    Env out = env;
    destructure(p, v, [&](const std::string& name, const Value& x) {
        out = std::make_shared<Frame>(Frame{name, x, out});
    });
    return out;
}

// A loop's next step binds its frames again: when the step's `frames`
// frames (a counter's and a single variable's state) are held by nothing
// but `inner` (no closure captured them), they take the new values in
// place, so a loop of scalar code allocates no frames. Else false, and the
// caller makes new ones.
bool rebind(const Env& inner, size_t frames, const Pattern& state, std::initializer_list<const Value*> values) {
    if (!inner || state.kind != PatternKind::Var || inner.use_count() != 1) return false;
    const Frame* f = inner.get();
    for (size_t k = 1; k < frames; ++k) {  // each later frame held only by the one before it
        if (!f->next || f->next.use_count() != 1) return false;
        f = f->next.get();
    }
    Frame* g = const_cast<Frame*>(inner.get());  // frames are made non-const (make_shared<Frame>)
    for (const Value* v : values) {
        g->value = *v;
        g = const_cast<Frame*>(g->next.get());
    }
    return true;
}

Value eval(const ExprPtr& e, const Env& env, EvalContext& ctx);

// A scalar the evaluator decides on: the tracer of `:emit` may refuse it.
Value decided(const ExprPtr& e, const Env& env, EvalContext& ctx, std::string_view what) {
    Value v = eval(e, env, ctx);
    if (ctx.tracer) ctx.tracer->decide(v, what, e->loc);
    return v;
}

// ---------------------------------------------------------------- closures
// A lambda with its environment; `bound` parameters have been applied.
class Closure final : public Callable {
public:
    Closure(ExprPtr lambda, Env env, size_t bound) : lambda_(std::move(lambda)), env_(std::move(env)), bound_(bound) {}

    Value apply(std::span<const Value> args, EvalContext& ctx, const Loc& loc) const override {
        const auto& params = lambda_->params;
        Env env = env_;
        size_t k = bound_, used = 0;
        for (; used < args.size() && k < params.size(); ++used, ++k) env = extend(env, *params[k], args[used]);
        if (k < params.size()) return Value(std::make_shared<const Closure>(lambda_, env, k));
        Value r = eval(lambda_->kids[0], env, ctx);
        return used < args.size() ? apply_value(r, args.subspan(used), ctx, loc) : r;
    }

    CallableView view() const override { return CallableView{lambda_, bound_, nullptr, nullptr, {}}; }
    std::optional<Value> resolve(const Expr& var, EvalContext& ctx) const override;
    Value evaluate_inside(const Expr& sub, EvalContext& ctx) const override {
        // Shares ownership of the whole lambda, which contains `sub`.
        return eval(ExprPtr(lambda_, const_cast<Expr*>(&sub)), env_, ctx);
    }
    Value evaluate_with(const Expr& sub, std::span<const std::pair<std::string, Value>> locals,
                        EvalContext& ctx) const override {
        Env env = env_;
        for (const auto& [name, value] : locals) env = std::make_shared<Frame>(Frame{name, value, env});
        return eval(ExprPtr(lambda_, const_cast<Expr*>(&sub)), env, ctx);
    }

private:
    ExprPtr lambda_;
    Env env_;
    size_t bound_;
};

// ---------------------------------------------------------------- literals
[[noreturn]] void runtime_error(const Loc& loc, std::string message) {
    user_error(ErrorKind::Runtime, loc, std::move(message));
}

// An integer literal (negated when written after unary minus) as a scalar
// of its inferred type; the range is checked against that type.
Scalar int_literal(const Expr& e, bool negative) {
    const Prim p = prim_of(e.type);
    const int64_t v = negative ? -e.int_value : e.int_value;
    if (p == Prim::Int && (v < INT32_MIN || v > INT32_MAX))
        runtime_error(e.loc, "integer literal " + std::to_string(v) + " does not fit in int");
    switch (p) {
        case Prim::Int: return Scalar::of_int(static_cast<int32_t>(v));
        case Prim::Long: return Scalar::of_long(v);
        case Prim::Float: return Scalar::of_float(static_cast<float>(v));
        case Prim::Double: return Scalar::of_double(static_cast<double>(v));
        case Prim::Bool: break;
    }
    internal_error(__FILE__, __LINE__, "integer literal of type bool");
}

// A decimal literal of its inferred type; a float that overflows is an error
// (in a generalised function the type checker could not see the type).
Scalar float_literal(const Expr& e, bool negative) {
    const double d = e.float_value;
    if (prim_of(e.type) == Prim::Float) {
        const float f = float_literal_value32(e);
        if (std::isinf(f)) runtime_error(e.loc, "decimal literal " + e.text + " does not fit in float");
        return Scalar::of_float(negative ? -f : f);
    }
    return Scalar::of_double(negative ? -d : d);
}

// ---------------------------------------------------------------- array literals
// Stacks the elements of an array literal (scalars, or arrays of one shape)
// into an array one rank higher; tuples are stacked componentwise.
Value stack(const std::vector<Value>& elems, const Type& type, const Loc& loc) {
    const Type t = prune(type);
    if (t->kind == TypeKind::Tuple) {
        std::vector<Value> out;
        for (size_t k = 0; k < t->args.size(); ++k) {
            std::vector<Value> part;
            part.reserve(elems.size());
            for (const Value& v : elems) part.push_back(v.tuple()[k]);
            out.push_back(stack(part, t->args[k], loc));
        }
        return Value(std::move(out));
    }
    const Prim elem = prim_of(t);
    if (elems.empty()) return Value(std::make_shared<Array>(elem, Shape(static_cast<size_t>(array_rank(t)), 0)));
    if (elems[0].is_scalar()) {
        auto out = std::make_shared<Array>(elem, Shape{static_cast<int64_t>(elems.size())});
        for (size_t i = 0; i < elems.size(); ++i) out->set(static_cast<int64_t>(i), elems[i].scalar());
        return Value(std::move(out));
    }
    const Shape row = elems[0].array()->shape;
    Shape shape{static_cast<int64_t>(elems.size())};
    shape.insert(shape.end(), row.begin(), row.end());
    auto out = std::make_shared<Array>(elem, shape);
    for (size_t i = 0; i < elems.size(); ++i) {
        const Array& a = *elems[i].array();
        if (a.shape != row) runtime_error(loc, "array literal rows have different lengths");
        if (!a.bytes.empty()) std::memcpy(out->bytes.data() + i * a.bytes.size(), a.bytes.data(), a.bytes.size());
    }
    return Value(std::move(out));
}

Value eval_array_literal(const Expr& e, const Env& env, EvalContext& ctx) {
    std::vector<Value> elems;
    elems.reserve(e.kids.size());
    for (const ExprPtr& k : e.kids) elems.push_back(force(decided(k, env, ctx, "an element of an array literal")));
    return stack(elems, e.type, e.loc);
}

// ---------------------------------------------------------------- indexing
Loc index_loc(const IndexArg& arg, const Expr& e) { return arg.loc.valid() ? arg.loc : e.loc; }

// The selection of an Index / With node for an array of the given shape.
std::vector<ops::AxisSelect> selection(const Expr& e, const Shape& shape, const Env& env, EvalContext& ctx) {
    SHOAL_INTERNAL_ASSERT(e.indices.size() <= shape.size(), "more indices than the array's rank");
    std::vector<ops::AxisSelect> sel;
    for (size_t k = 0; k < e.indices.size(); ++k) {
        const IndexArg& arg = e.indices[k];
        const Loc loc = index_loc(arg, e);
        if (!arg.is_slice) {
            const int64_t i = decided(arg.index, env, ctx, "an index").scalar().as_long();
            sel.push_back(ops::select_index(i, shape[k], static_cast<int>(k), loc));
        } else {
            // lo, hi, step: kept as values for the tracer of `:emit`.
            std::optional<Value> parts[3];
            const ExprPtr* exprs[3] = {&arg.lo, &arg.hi, &arg.step};
            for (int p = 0; p < 3; ++p)
                if (*exprs[p]) parts[p] = eval(*exprs[p], env, ctx);
            auto as_int = [&](int p) {
                return parts[p] ? std::optional<int64_t>(parts[p]->scalar().as_long()) : std::nullopt;
            };
            sel.push_back(ops::select_slice(as_int(0), as_int(1), as_int(2), shape[k], loc));
            if (ctx.tracer) {
                auto part = [&](int p) { return parts[p] ? &*parts[p] : nullptr; };
                ctx.tracer->slice(part(0), part(1), part(2), shape[k], sel.back().start, sel.back().step,
                                  sel.back().count, loc);
            }
        }
    }
    return sel;
}

// Indexes every component of an array-like alike.
Value index_value(const Value& a, const std::vector<ops::AxisSelect>& sel) {
    if (a.is_array()) return ops::index_array(*a.array(), sel);
    std::vector<Value> out;
    for (const Value& c : a.tuple()) out.push_back(index_value(c, sel));
    return Value(std::move(out));
}

Value update_value(const Value& a, const std::vector<ops::AxisSelect>& sel, const Value& v, const Loc& loc) {
    if (a.is_array()) return Value(ops::update_array(*a.array(), sel, v, loc));
    std::vector<Value> out;
    for (size_t k = 0; k < a.tuple().size(); ++k) out.push_back(update_value(a.tuple()[k], sel, v.tuple()[k], loc));
    return Value(std::move(out));
}

// A selection with at least one slice (a[1:], g[1:-1, :-2], a[i, :]) the
// backend may keep delayed; a plain element or row read is left to the host.
std::optional<Value> backend_slice(const Expr& e, const Value& a, const Env& env, EvalContext& ctx) {
    if (!ctx.backend) return std::nullopt;
    if (!a.is_delayed() && !a.is_array()) return std::nullopt;
    const Shape& shape = a.is_array() ? a.array()->shape : a.delayed()->shape();
    if (e.indices.empty() || e.indices.size() > shape.size()) return std::nullopt;
    if (std::none_of(e.indices.begin(), e.indices.end(), [](const IndexArg& i) { return i.is_slice; }) &&
        !(a.is_delayed() && a.delayed()->distributed()))
        return std::nullopt;
    const auto sel = selection(e, shape, env, ctx);
    return ctx.backend->slice(a, sel, e.loc);
}

Value eval_operator(const std::string& op, std::span<const Value> args, const Expr& e, EvalContext& ctx);

Value eval_index(const Expr& e, const Env& env, EvalContext& ctx) {
    Value a = eval(e.kids[0], env, ctx);
    if (is_mask_index(e)) {  // NumPy's boolean index (compress mask xs) or integer array index (gather)
        const Value args[2] = {eval(e.indices[0].index, env, ctx), a};
        const bool indices = prim_of(e.indices[0].index->type) == Prim::Int;
        return eval_operator(indices ? "gather" : "compress", args, e, ctx);
    }
    if (auto sliced = backend_slice(e, a, env, ctx)) return *sliced;
    a = force(a);
    return index_value(a, selection(e, array_like_shape(a), env, ctx));
}

// xs with [mask] = v: where mask v xs, the mask a column for a matrix's
// rows (one fused kernel on a backend).
Value eval_mask_update(const Expr& e, const Value& a, const Env& env, EvalContext& ctx) {
    Value mask = eval(e.indices[0].index, env, ctx);
    const Shape rows = array_like_shape(a), flags = array_like_shape(mask);
    ops::require_mask_length(flags[0], rows[0], e.loc);
    if (rows.size() > 1) {
        const Value one[1] = {mask};
        mask = eval_operator("col", one, e, ctx);
    }
    const Value args[3] = {mask, eval(e.kids[1], env, ctx), a};
    return eval_operator("where", args, e, ctx);
}

Value eval_with(const Expr& e, const Env& env, EvalContext& ctx) {
    Value a = eval(e.kids[0], env, ctx);
    if (is_mask_index(e)) return eval_mask_update(e, a, env, ctx);
    // A backend computes the update as a kernel (fused with what reads it and
    // with the new part), without bringing anything to the host (not while
    // :emit traces). The array updated is computed first, before the new part
    // is built: an update is typically a loop's step, whose new part reads
    // the array at several offsets, and fusing the steps into each other
    // would recompute every element many times over.
    if (ctx.backend && !ctx.tracer && (a.is_delayed() || a.is_array())) {
        a = settle(a);
        const auto sel = selection(e, a.is_array() ? a.array()->shape : a.delayed()->shape(), env, ctx);
        const Value v = eval(e.kids[1], env, ctx);
        if (auto updated = ctx.backend->update(a, sel, v, e.loc)) return *updated;
        return update_value(force(a), sel, force(v), e.loc);
    }
    a = force(a);
    const auto sel = selection(e, array_like_shape(a), env, ctx);
    return update_value(a, sel, force(eval(e.kids[1], env, ctx)), e.loc);
}

// ---------------------------------------------------------------- loops
// Whether `name` occurs in `e` as a variable (shadowed or not: a loop body
// that mentions its counter anywhere is not replayed).
bool mentions(const Expr& e, const std::string& name) {
    if (e.kind == ExprKind::Var && e.text == name) return true;
    for (const ExprPtr& k : e.kids)
        if (k && mentions(*k, name)) return true;
    for (const IndexArg& a : e.indices)
        for (const ExprPtr& k : {a.index, a.lo, a.hi, a.step})
            if (k && mentions(*k, name)) return true;
    return false;
}

Value eval_loop_for(const Expr& e, const Env& env, EvalContext& ctx) {
    Value x = eval(e.kids[0], env, ctx);
    const int64_t n = decided(e.kids[1], env, ctx, "the count of a `loop`").scalar().as_long();
    const Prim counter = prim_of(e.kids[1]->type);
    Env inner;  // the step's frames: the counter's, then the state's
    return run_loop(n, std::move(x), ctx, !mentions(*e.kids[2], e.counter), e.loc, [&](int64_t i, const Value& state) {
        const Value index(convert_scalar(Scalar::of_long(i), counter));
        if (!rebind(inner, 2, *e.pattern, {&index, &state})) {
            inner = extend(env, *e.pattern, state);
            inner = std::make_shared<Frame>(Frame{e.counter, index, inner});
        }
        return eval(e.kids[2], inner, ctx);
    });
}

Value eval_loop_while(const Expr& e, const Env& env, EvalContext& ctx) {
    Value x = eval(e.kids[0], env, ctx);
    Env inner;
    for (;;) {
        check_cancel(ctx, e.loc);
        if (!rebind(inner, 1, *e.pattern, {&x})) inner = extend(env, *e.pattern, x);
        if (!decided(e.kids[1], inner, ctx, "the condition of a `while` loop").scalar().b) return x;
        const int64_t before = plans_run(ctx);
        x = carried(eval(e.kids[2], inner, ctx), ctx, before);
    }
}

// ---------------------------------------------------------------- variables
void specialise(Expr& e, const std::vector<Type>& instance);

void substitute(Type& t, const std::vector<Type>& instance) {
    if (t) t = substitute_gen(t, instance);
}

void specialise(Pattern& p, const std::vector<Type>& instance) {
    substitute(p.type, instance);
    substitute(p.annotation, instance);
    for (const PatternPtr& k : p.elems) specialise(*k, instance);
}

// Replaces Gen(i) by instance[i] in every type of a cloned definition.
void specialise(Expr& e, const std::vector<Type>& instance) {
    substitute(e.type, instance);
    substitute(e.annotation, instance);
    for (Type& t : e.instance) substitute(t, instance);
    for (const PatternPtr& p : e.params) specialise(*p, instance);
    if (e.pattern) specialise(*e.pattern, instance);
    for (const ExprPtr& k : e.kids)
        if (k) specialise(*k, instance);
    for (IndexArg& arg : e.indices)
        for (const ExprPtr* part : {&arg.index, &arg.lo, &arg.hi, &arg.step})
            if (*part) specialise(**part, instance);
}

// A generalised global used at `var.instance`: specialised once per instance.
Value global_value(Binding& b, const Expr& var, EvalContext& ctx) {
    if (var.instance.empty() || !b.generic) return b.value;
    std::string& key = var.instance_key;
    if (key.empty())
        for (const Type& t : var.instance) key += (key.empty() ? "" : ";") + type_to_string(t);
    if (auto it = b.specialisations.find(key); it != b.specialisations.end()) return it->second;
    ExprPtr copy = clone_expr(b.generic);
    specialise(*copy, var.instance);
    Value v = eval(copy, nullptr, ctx);
    b.specialisations.emplace(key, v);
    return v;
}

Binding* find_global(const std::string& name, EvalContext& ctx) {
    if (!ctx.globals) return nullptr;
    auto it = ctx.globals->find(name);
    return it == ctx.globals->end() ? nullptr : it->second.get();
}

// The builtin a Var names when no local or global binding shadows it.
const BuiltinDef* builtin_of(const Expr& e, const Env& env, EvalContext& ctx) {
    if (e.kind != ExprKind::Var || lookup(env, e.text) || find_global(e.text, ctx)) return nullptr;
    if (!e.operator_builtin) e.operator_builtin = find_builtin(e.text);  // found once per node
    return static_cast<const BuiltinDef*>(e.operator_builtin);
}

Value eval_var(const Expr& e, const Env& env, EvalContext& ctx) {
    if (const Value* v = lookup(env, e.text)) return *v;
    if (Binding* b = find_global(e.text, ctx)) return global_value(*b, e, ctx);
    const BuiltinDef* def = find_builtin(e.text);
    SHOAL_INTERNAL_ASSERT(def != nullptr, "unbound variable " + e.text);
    return apply_builtin(*def, e.type, {}, ctx, e.loc);
}

std::optional<Value> Closure::resolve(const Expr& var, EvalContext& ctx) const {
    if (const Value* v = lookup(env_, var.text)) return *v;
    if (Binding* b = find_global(var.text, ctx)) return global_value(*b, var, ctx);
    return std::nullopt;
}

// Whether a function of type `t` applied to `n` arguments gives a scalar.
bool scalar_result(Type t, size_t n) {
    for (size_t k = 0; k < n; ++k) {
        if (!t || !is_func(t)) return false;
        t = func_result(t);
    }
    return t && is_prim(t);
}

// ---------------------------------------------------------------- application
// f a b c is App(App(App(f, a), b), c): the spine is evaluated function
// first, then the arguments left to right, and applied all at once (a
// builtin head is called directly, without building partial applications).
Value eval_app(const Expr& e, const Env& env, EvalContext& ctx) {
    // The spine, innermost application first (on the stack for the usual
    // few arguments: a scalar loop calls builtins every step).
    size_t n = 0;
    for (const Expr* a = &e; a->kind == ExprKind::App; a = a->kids[0].get()) ++n;
    constexpr size_t kInline = 4;
    std::array<const Expr*, kInline> inline_apps;
    std::vector<const Expr*> more_apps(n > kInline ? n : 0);
    const std::span<const Expr*> apps(n > kInline ? more_apps.data() : inline_apps.data(), n);
    const ExprPtr* head = nullptr;
    size_t k = n;
    for (const Expr* a = &e; a->kind == ExprKind::App; a = a->kids[0].get()) {
        apps[--k] = a;
        head = &a->kids[0];
    }
    const BuiltinDef* def = builtin_of(**head, env, ctx);
    const Value f = def ? Value() : eval(*head, env, ctx);
    std::array<Value, kInline> inline_args;
    std::vector<Value> more_args(n > kInline ? n : 0);
    const std::span<Value> args(n > kInline ? more_args.data() : inline_args.data(), n);
    for (size_t i = 0; i < n; ++i) args[i] = eval(apps[i]->kids[1], env, ctx);
    if (!def) return apply_value(f, args, ctx, e.loc);
    // Errors point at the application that supplies the builtin's last argument.
    const size_t last = std::min(apps.size(), static_cast<size_t>(def->arity)) - 1;
    // A math function or conversion of scalars (`float i`) is applied at
    // once; a builtin that makes an array of scalars (`iota n`) goes to the backend.
    if (!ctx.tracer && apps.size() == static_cast<size_t>(def->arity) && !def->effect && !def->composite &&
        std::all_of(args.begin(), args.end(), [](const Value& v) { return v.is_scalar(); }) &&
        scalar_result((*head)->type, args.size()))
        return apply_scalar_builtin(*def, (*head)->type, args, ctx, apps[last]->loc);
    return apply_builtin(*def, (*head)->type, args, ctx, apps[last]->loc);
}

Value eval_operator(const std::string& op, std::span<const Value> args, const Expr& e, EvalContext& ctx) {
    const BuiltinDef* def = find_builtin(op);
    SHOAL_INTERNAL_ASSERT(def != nullptr, "unknown operator " + op);
    return apply_builtin(*def, nullptr, args, ctx, e.loc);
}

// An operator node's own operator: found once, then kept in the node. On
// scalars it is applied at once (apply_scalar_builtin): the backend has
// nothing to compile, and a loop of scalar code runs at interpreter speed.
Value eval_operator_node(const Expr& e, std::span<const Value> args, EvalContext& ctx) {
    if (!e.operator_builtin) e.operator_builtin = find_builtin(e.text);
    const auto* def = static_cast<const BuiltinDef*>(e.operator_builtin);
    SHOAL_INTERNAL_ASSERT(def != nullptr, "unknown operator " + e.text);
    if (!ctx.tracer && std::all_of(args.begin(), args.end(), [](const Value& v) { return v.is_scalar(); }))
        return apply_scalar_builtin(*def, nullptr, args, ctx, e.loc);
    return apply_builtin(*def, nullptr, args, ctx, e.loc);
}

Value eval_binary(const Expr& e, const Env& env, EvalContext& ctx) {
    Value a = eval(e.kids[0], env, ctx);
    // && and || short-circuit when their result is a single bool.
    const std::string& op = e.text;
    const bool is_and = op.size() == 2 && op[0] == '&' && op[1] == '&', is_or = op.size() == 2 && op[0] == '|' && op[1] == '|';
    if ((is_and || is_or) && is_prim(e.type)) {
        if (ctx.tracer) ctx.tracer->decide(a, "the left operand of `" + e.text + "`", e.kids[0]->loc);
        if (a.scalar().b == is_or) return a;
    }
    const Value args[2] = {std::move(a), eval(e.kids[1], env, ctx)};
    return eval_operator_node(e, args, ctx);
}

Value eval_unary(const Expr& e, const Env& env, EvalContext& ctx) {
    const Expr& operand = *e.kids[0];
    if (e.text == "negate" && operand.kind == ExprKind::IntLit) return Value(int_literal(operand, true));
    if (e.text == "negate" && operand.kind == ExprKind::FloatLit) return Value(float_literal(operand, true));
    const Value arg = eval(e.kids[0], env, ctx);
    return eval_operator_node(e, std::span<const Value>(&arg, 1), ctx);
}

// ---------------------------------------------------------------- the walk
Value eval(const ExprPtr& ep, const Env& env, EvalContext& ctx) {
    const Expr& e = *ep;
    switch (e.kind) {
        case ExprKind::IntLit: return Value(int_literal(e, false));
        case ExprKind::FloatLit: return Value(float_literal(e, false));
        case ExprKind::BoolLit: return Value(Scalar::of_bool(e.bool_value));
        case ExprKind::StringLit: return Value::string(e.text);
        case ExprKind::Var: return eval_var(e, env, ctx);
        case ExprKind::Lambda: return Value(std::make_shared<const Closure>(ep, env, 0));
        case ExprKind::App: return eval_app(e, env, ctx);
        case ExprKind::Let: return eval(e.kids[1], extend(env, *e.pattern, eval(e.kids[0], env, ctx)), ctx);
        case ExprKind::If:
            return eval(e.kids[decided(e.kids[0], env, ctx, "the condition of `if`").scalar().b ? 1 : 2], env, ctx);
        case ExprKind::Tuple: {
            std::vector<Value> elems;
            for (const ExprPtr& k : e.kids) elems.push_back(eval(k, env, ctx));
            return Value(std::move(elems));
        }
        case ExprKind::ArrayLit: return eval_array_literal(e, env, ctx);
        case ExprKind::Binary: return eval_binary(e, env, ctx);
        case ExprKind::Unary: return eval_unary(e, env, ctx);
        case ExprKind::Index: return eval_index(e, env, ctx);
        case ExprKind::With: return eval_with(e, env, ctx);
        case ExprKind::LoopFor: return eval_loop_for(e, env, ctx);
        case ExprKind::LoopWhile: return eval_loop_while(e, env, ctx);
        case ExprKind::Annot: return eval(e.kids[0], env, ctx);
    }
    internal_error(__FILE__, __LINE__, "unknown expression kind");
}

}  // namespace

bool is_mask_index(const Expr& e) {
    return e.indices.size() == 1 && !e.indices[0].is_slice && e.indices[0].index &&
           e.indices[0].index->type && is_array(e.indices[0].index->type);
}

Value evaluate(const ExprPtr& e, EvalContext& ctx) { return eval(e, nullptr, ctx); }

namespace evalimpl {
Value stack_values(const std::vector<Value>& elems, const Type& type, const Loc& loc) { return stack(elems, type, loc); }
}  // namespace evalimpl

Value force(const Value& v) {
    if (v.is_delayed()) return Value(v.delayed()->force());
    if (!v.is_tuple()) return v;
    std::vector<Value> elems;
    elems.reserve(v.tuple().size());
    for (const Value& x : v.tuple()) elems.push_back(force(x));
    return Value(std::move(elems));
}

Value settle(const Value& v) {
    if (v.is_delayed()) {
        v.delayed()->compute();
        if (ArrayPtr host = v.delayed()->host()) return Value(std::move(host));
        return v;
    }
    if (!v.is_tuple()) return v;
    std::vector<Value> elems;
    elems.reserve(v.tuple().size());
    for (const Value& x : v.tuple()) elems.push_back(settle(x));
    return Value(std::move(elems));
}

// A loop's state computed at the end of a step that ran plans (as JAX's
// fori_loop materialises its carry): a consumer in the step (a product, a
// sum) read the state fused, so without this every step would be a new,
// deeper plan to compile (a 500-step gradient descent compiled 138 plans)
// and would recompute earlier steps' work. A step that only builds delayed
// arrays (Spencer's `acc + w[k] * x[k:k + m]`) still fuses into one kernel.
Value carried(Value x, const EvalContext& ctx, int64_t plans_before) {
    if (!ctx.backend || ctx.tracer || ctx.backend->plans_run() == plans_before) return x;
    return settle(x);
}

int64_t plans_run(const EvalContext& ctx) { return ctx.backend ? ctx.backend->plans_run() : 0; }

// Recording starts after this many steps (the first compiles the plans and
// may differ: its state is the initial value), in a loop that ran at least
// a plan every other step so far: one whose steps build one fused
// computation (forced now and then by the fusion bound) is left to fuse.
constexpr int64_t kStepsBeforeRecording = 2;
// Recording costs two steps of checks: only a longer loop is worth it.
constexpr int64_t kStepsForReplay = 8;

Value run_loop(int64_t n, Value x, EvalContext& ctx, bool counter_free, const Loc& loc,
               const std::function<Value(int64_t i, const Value& x)>& step) {
    std::unique_ptr<LoopReplay> replay;
    if (ctx.backend && !ctx.tracer && n >= kStepsForReplay) replay = ctx.backend->replay_loop(ctx);
    if (replay && !counter_free) {
        replay->refuse("the step reads the loop's counter");
        replay.reset();
    }
    const int64_t plans_before_loop = plans_run(ctx);
    int64_t plans = plans_before_loop;  // plans run before this step (asked once a step)
    int64_t recorded = 0;
    for (int64_t i = 0; i < n; ++i) {
        check_cancel(ctx, loc);
        if (replay && replay->ready()) {
            x = replay->step(x);
            plans = plans_run(ctx);
            continue;
        }
        const bool recording =
            replay && (recorded > 0 || (i >= kStepsBeforeRecording && 2 * (plans - plans_before_loop) >= i));
        const uint64_t effects = ctx.effects, stream = ctx.random_stream;
        const int64_t before = plans;
        if (recording) x = replay->begin(x);
        x = step(i, x);
        plans = plans_run(ctx);
        if (plans != before && !ctx.tracer) x = settle(x);  // as carried(): the step ran plans
        if (!recording) continue;
        const char* effect = ctx.effects != effects        ? "the step reads or writes a file"
                             : ctx.random_stream != stream ? "the step draws random numbers"
                                                           : nullptr;
        if (replay->end(x, effect)) ++recorded;
        else replay.reset();
        plans = plans_run(ctx);
    }
    return x;
}

std::vector<std::pair<std::string, Value>> bind_pattern(const PatternPtr& pattern, const Value& value) {
    std::vector<std::pair<std::string, Value>> out;
    destructure(*pattern, value, [&](const std::string& name, const Value& v) { out.emplace_back(name, v); });
    return out;
}

}  // namespace shoal
