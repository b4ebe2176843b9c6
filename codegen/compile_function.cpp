// Compiling closures to kernel IR: a walk over the typed AST of a lambda body
// that emits thread code through a KernelBuilder (see compile_function.h).
#include "codegen/compile_function.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "codegen/array_graph.h"
#include "codegen/display_names.h"
#include "codegen/engine.h"
#include "codegen/lower_common.h"
#include "lang/diagnostics.h"

namespace shoal::compiled {

using IExpr = ir::ExprPtr;
using ir::Access;
using ir::BinaryOp;
using ir::KernelBuilder;
using ir::ScalarType;
using ir::StmtPtr;
using ir::UnaryOp;
using ir::assign;
using ir::binary;
using ir::cast;
using ir::const_bool;
using ir::const_float;
using ir::const_int;
using ir::if_then;
using ir::is_float;
using ir::let;
using ir::load;
using ir::param;
using ir::scalar_of;
using ir::select;
using ir::unary;

// ---------------------------------------------------------------- the fuse context
IExpr FuseContext::lift(KernelBuilder& kb, const Scalar& s, const void* key, const std::string& shown_as,
                        SymbolPtr symbol) {
    int64_t bits = 0;
    std::memcpy(&bits, &s.l, sizeof bits);
    const auto k = std::make_tuple(key, s.type, bits);
    std::string name;
    if (auto it = key ? lifted_.find(k) : lifted_.end(); it != lifted_.end()) {
        name = it->second;
    } else {
        name = "c" + std::to_string(counter_++);
        scalars_[name] = s;
        if (symbol) symbols_[name] = std::move(symbol);
        if (key) lifted_[k] = name;
        if (!shown_as.empty()) shown_names_[name] = shown_as;
    }
    return param(kb.scalar_param(name, scalar_of(s.type)), scalar_of(s.type));
}

IExpr FuseContext::extent(int64_t n) {
    const std::string name = "n" + std::to_string(counter_++);
    scalars_[name] = Scalar::of_long(n);
    return param(name, ScalarType::I64);
}

const FuseContext::Input& FuseContext::input(const ir::ArrayData& a, Prim elem, const Shape& shape,
                                             const void* identity) {
    auto it = inputs_.find(identity);
    if (it != inputs_.end()) return it->second;
    Input in{"in" + std::to_string(counter_++), {}, scalar_of(elem)};
    for (int64_t n : shape) in.extents.push_back(extent(n));
    // The plan keeps these canonical names (one structure, one cached plan);
    // `:cuda` shows the binding's: x, len_x (len_x0, len_x1 for a matrix).
    if (ctx_.parameter_names)
        if (auto named = ctx_.parameter_names->find(identity); named != ctx_.parameter_names->end()) {
            shown_names_[in.buffer] = named->second;
            for (size_t k = 0; k < in.extents.size(); ++k)
                shown_names_[in.extents[k]->name] = ir::extent_name(named->second, in.extents.size(), k);
        }
    buffers_[in.buffer] = a;
    return inputs_.emplace(identity, std::move(in)).first->second;
}

void FuseContext::size_inputs(ir::PlanBuilder& pb) const {
    for (const auto& [identity, in] : inputs_)
        if (pb.plan().find_buffer(in.buffer)) pb.input_buffer(in.buffer, in.elem, ir::product(in.extents));
}

bool FuseContext::notes_decisions() {
    if (!notes_decisions_) {
        const auto* engine = dynamic_cast<const FusionEngine*>(ctx_.backend);
        notes_decisions_ = !engine || engine->shows_decisions();
    }
    return *notes_decisions_;
}

void FuseContext::note_fused(const std::string& what) {
    if (!notes_decisions()) return;
    if (!what.empty() && std::find(fused_.begin(), fused_.end(), what) == fused_.end()) fused_.push_back(what);
}

void FuseContext::note_materialised(const std::string& buffer, const std::string& what, const std::string& why) {
    if (!notes_decisions()) return;
    // A binding is named as `:cuda` names it; a binding is kept whole.
    std::string text;
    if (auto shown = shown_names_.find(buffer); shown != shown_names_.end())
        text = shown->second + ": a top-level let binds it";
    else if (!what.empty())
        text = (what.rfind("the ", 0) == 0 ? what : "the result of " + what) + ": " + (why.empty() ? std::string(kNeededWhole) : why);
    else
        text = "an array in memory: a literal, or computed by an earlier statement or the reference evaluator";
    if (std::find(materialised_.begin(), materialised_.end(), text) == materialised_.end()) materialised_.push_back(text);
}

bool FuseContext::hoisting() const {
    const auto* engine = dynamic_cast<const FusionEngine*>(ctx_.backend);
    return !engine || engine->optimisations.hoist;
}

std::optional<int64_t> FuseContext::integer_value(const std::string& name) const {
    auto it = scalars_.find(name);
    if (it == scalars_.end() || !is_integral(it->second.type)) return std::nullopt;
    return it->second.as_long();
}

ir::LoweringFacts FuseContext::facts(const ir::PlanBuilder& pb) const {
    if (ctx_.tracer) return {};
    ir::LoweringFacts f;
    f.value = [this](const std::string& name) {
        const std::optional<int64_t> v = integer_value(name);
        fact_queries_.emplace_back(name, v);
        return v;
    };
    f.buffer_count = [this, &pb](const std::string& name) -> IExpr {
        for (const auto& [identity, in] : inputs_)
            if (in.buffer == name) return ir::product(in.extents);
        const ir::PlanBuffer* b = pb.plan().find_buffer(name);
        return b ? b->count : nullptr;
    };
    return f;
}

IExpr zero_of(ScalarType t) {
    if (t == ScalarType::Bool) return const_bool(false);
    return is_float(t) ? const_float(0, t) : const_int(0, t);
}

// ---------------------------------------------------------------- builtins
namespace {

[[noreturn]] void decline(std::string why) { throw Decline{std::move(why)}; }

const std::map<std::string, BinaryOp>& binary_ops() {
    static const std::map<std::string, BinaryOp> ops = {
        {"+", BinaryOp::Add}, {"-", BinaryOp::Sub}, {"*", BinaryOp::Mul},  {"/", BinaryOp::Div},
        {"%", BinaryOp::Mod}, {"==", BinaryOp::Eq}, {"!=", BinaryOp::Ne},  {"<", BinaryOp::Lt},
        {"<=", BinaryOp::Le}, {">", BinaryOp::Gt},  {">=", BinaryOp::Ge},  {"&", BinaryOp::And},
        {"|", BinaryOp::Or},  {"^", BinaryOp::Xor}, {"<<", BinaryOp::Shl}, {">>", BinaryOp::Shr},
        {"min", BinaryOp::Min}, {"max", BinaryOp::Max}, {"&&", BinaryOp::And}, {"||", BinaryOp::Or},
    };
    return ops;
}

bool is_math_function(const std::string& n) {
    static const char* const names[] = {"sqrt", "exp",  "log",  "sin",  "cos",  "tan", "asin",
                                        "acos", "atan", "sinh", "cosh", "tanh", "erf"};
    for (const char* m : names)
        if (n == m) return true;
    return false;
}

std::optional<Prim> conversion_target(const std::string& n) {
    if (n == "int") return Prim::Int;
    if (n == "long") return Prim::Long;
    if (n == "float") return Prim::Float;
    if (n == "double") return Prim::Double;
    return std::nullopt;
}

IExpr emit_unary(const std::string& name, const IExpr& x) {
    const ScalarType t = x->type;
    if (name == "negate") return unary(UnaryOp::Neg, x);
    if (name == "!") return unary(UnaryOp::Not, x);
    if (name == "~") return unary(UnaryOp::BitNot, x);
    // abs minInt is minInt: the wrapping negation, as in array_ops.
    if (name == "abs") return is_float(t) ? ir::call("abs", {x}, t) : select(binary(BinaryOp::Lt, x, zero_of(t)), unary(UnaryOp::Neg, x), x);
    if (name == "floor" || name == "ceil" || name == "round") return is_float(t) ? ir::call(name, {x}, t) : x;
    if (is_math_function(name) && is_float(t)) return ir::call(name, {x}, t);
    if (auto to = conversion_target(name)) return scalar_of(*to) == t ? x : cast(scalar_of(*to), x);
    decline("the function " + name);
}

}  // namespace

namespace {

// x ** y on integers as lang/array_ops.h's Pow: exact repeated squaring in
// unsigned arithmetic (wrapping); a negative exponent gives 0, except for
// base 1 (1) and base -1 (+-1 by parity).
IExpr integer_power(KernelBuilder& kb, const IExpr& x, const IExpr& y) {
    const ScalarType t = x->type;
    const ScalarType u = t == ScalarType::I64 ? ScalarType::U64 : ScalarType::U32;
    auto mutable_var = [&](const std::string& prefix, IExpr v) {
        const std::string n = kb.fresh(prefix);
        kb.emit(let(n, std::move(v)));
        return ir::var(n, u);
    };
    const IExpr result = mutable_var("power", const_int(1, u));
    const IExpr base = mutable_var("base", cast(u, x));
    const IExpr e = mutable_var("exponent", cast(u, y));
    kb.open();
    kb.emit(if_then(binary(BinaryOp::Ne, binary(BinaryOp::And, e, const_int(1, u)), const_int(0, u)),
                    {assign(result->name, binary(BinaryOp::Mul, result, base))}));
    kb.emit(assign(base->name, binary(BinaryOp::Mul, base, base)));
    kb.emit(assign(e->name, binary(BinaryOp::Shr, e, const_int(1, u))));
    kb.emit(ir::while_loop(binary(BinaryOp::Ne, e, const_int(0, u)), kb.close()));
    const IExpr one = const_int(1, t), minus_one = const_int(-1, t);
    const IExpr odd = binary(BinaryOp::Ne, binary(BinaryOp::And, y, one), const_int(0, t));
    const IExpr negative = select(binary(BinaryOp::Eq, x, one), one,
                                  select(binary(BinaryOp::Eq, x, minus_one), select(odd, minus_one, one), const_int(0, t)));
    return kb.bind("raised", select(binary(BinaryOp::Lt, y, const_int(0, t)), negative, cast(t, result)));
}

}  // namespace

IExpr emit_builtin(KernelBuilder& kb, const std::string& name, const std::vector<IExpr>& args) {
    if (args.size() == 1) return emit_unary(name, args[0]);
    if (name == "where" && args.size() == 3) {
        if (args[0]->type != ScalarType::Bool || args[1]->type != args[2]->type) decline("where of these types");
        return select(args[0], args[1], args[2]);
    }
    if (args.size() != 2) decline("the function " + name);
    const ScalarType t = args[0]->type;
    if (name == "**" || name == "pow" || name == "atan2") {
        if (!is_float(t)) {
            if (name == "atan2" || t == ScalarType::Bool) decline("integer " + name);
            return integer_power(kb, args[0], args[1]);
        }
        // x ** c for a constant c of scalar::float_pow's cheap cases: the
        // same multiplications it makes, with no call (0.5 keeps the call:
        // its edge cases are a few selects there).
        if (name != "atan2" && args[1]->kind == ir::ExprKind::Const) {
            const double c = args[1]->f;
            const IExpr x = args[0];
            if (c == 1) return x;
            if (c == 2) return binary(BinaryOp::Mul, x, x);
            if (c == 3) return binary(BinaryOp::Mul, binary(BinaryOp::Mul, x, x), x);
            if (c == -1) return binary(BinaryOp::Div, const_float(1, t), x);
        }
        return ir::call(name == "atan2" ? "atan2" : "pow", args, t);
    }
    auto it = binary_ops().find(name);
    if (it == binary_ops().end()) decline("the function " + name);
    return binary(it->second, args[0], args[1]);
}

ScalarType builtin_result(const std::string& name, const std::vector<ScalarType>& operands) {
    KernelBuilder scratch("probe", 32);  // emits nothing anyone runs
    std::vector<IExpr> xs;
    for (ScalarType t : operands) xs.push_back(ir::param("x", t));
    return emit_builtin(scratch, name, xs)->type;
}

// ---------------------------------------------------------------- closures
namespace {

using evalimpl::as_callable;
using evalimpl::Callable;

// A compile-time value: a scalar IR expression, a tuple, or a host value
// (a function, or an array indexed by the body).
struct CVal {
    IExpr scalar;
    std::vector<CVal> tuple;
    Value host;
    bool is_tuple = false;
    // A nested array computed in the thread (it depends on the element), as
    // a pull array: consumed by sequential loops, never materialised.
    std::shared_ptr<const ir::PullArray> pull;
    // With `pull`: a filtered nested array (`filter p xs` in the thread):
    // element k of `pull` belongs to it where keep(k) holds. Only folds over
    // it (length, count, sum, reduce, ...) and `map` take one: its elements'
    // positions are never computed.
    std::shared_ptr<const std::function<IExpr(KernelBuilder&, IExpr)>> keep;
    // A lambda written inside the function (`count (\x -> x == b) xs`): its
    // node and the scope it closes over, applied by inlining.
    std::shared_ptr<const struct LocalLambda> lambda;
};

CVal pull_val(ir::PullArray p) {
    CVal v;
    v.pull = std::make_shared<const ir::PullArray>(std::move(p));
    return v;
}

bool is_array_val(const CVal& v) { return v.pull || v.host.is_array() || v.host.is_delayed(); }

// Whether any Var in e names one of `names` (shadowing ignored: conservative).
bool mentions(const Expr& e, const std::function<bool(const std::string&)>& names) {
    if (e.kind == ExprKind::Var && names(e.text)) return true;
    for (const shoal::ExprPtr& k : e.kids)
        if (k && mentions(*k, names)) return true;
    for (const IndexArg& a : e.indices)
        for (const shoal::ExprPtr& k : {a.index, a.lo, a.hi, a.step})
            if (k && mentions(*k, names)) return true;
    return false;
}

// Whether e or a subexpression has an array type: array work worth hoisting.
bool does_array_work(const Expr& e) {
    if (e.type && mentions_array(e.type)) return true;
    for (const shoal::ExprPtr& k : e.kids)
        if (k && does_array_work(*k)) return true;
    for (const IndexArg& a : e.indices)
        for (const shoal::ExprPtr& k : {a.index, a.lo, a.hi, a.step})
            if (k && does_array_work(*k)) return true;
    return false;
}

CVal scalar_val(IExpr e) {
    CVal v;
    v.scalar = std::move(e);
    return v;
}
CVal host_val(Value h) {
    CVal v;
    v.host = std::move(h);
    return v;
}

void leaves_of(const CVal& v, std::vector<IExpr>& out) {
    if (v.is_tuple) {
        for (const CVal& k : v.tuple) leaves_of(k, out);
        return;
    }
    if (!v.scalar) decline("a function or array as a result");
    out.push_back(v.scalar);
}

// A value of `like`'s structure (scalars and tuples of them) from consecutive leaves.
CVal like_leaves(const CVal& like, const std::vector<IExpr>& leaves, size_t& at) {
    if (!like.is_tuple) return scalar_val(leaves.at(at++));
    CVal v;
    v.is_tuple = true;
    for (const CVal& k : like.tuple) v.tuple.push_back(like_leaves(k, leaves, at));
    return v;
}

// Rebuilds a value of Shoal type t from consecutive leaves.
CVal from_leaves(const Type& type, const std::vector<IExpr>& leaves, size_t& at) {
    const Type t = prune(type);
    if (!is_tuple(t)) return scalar_val(leaves.at(at++));
    CVal v;
    v.is_tuple = true;
    for (const Type& k : t->args) v.tuple.push_back(from_leaves(k, leaves, at));
    return v;
}

void leaf_types(const Type& type, std::vector<ScalarType>& out) {
    const Type t = prune(type);
    if (is_tuple(t)) {
        for (const Type& k : t->args) leaf_types(k, out);
        return;
    }
    if (!is_prim(t)) decline("a non-scalar result type");
    out.push_back(scalar_of(prim_of(t)));
}

struct Scope {
    const evalimpl::Callable* closure;
    std::vector<std::pair<std::string, CVal>> locals;
};

struct LocalLambda {
    const Expr* node;
    Scope scope;
};

class Compiler {
public:
    Compiler(FuseContext& fc, KernelBuilder& kb) : fc_(fc), kb_(kb) {}

    // Applies a function value: a host function, or a lambda written inside
    // the function being compiled (inlined in the scope it closes over).
    CVal apply(const CVal& f, std::vector<CVal> args) {
        if (f.lambda) {
            const Expr& lam = *f.lambda->node;
            if (args.size() != lam.params.size()) decline("a partial or over-application of a lambda");
            Scope scope = f.lambda->scope;
            for (size_t k = 0; k < args.size(); ++k) bind(scope, *lam.params[k], args[k]);
            return expr(*lam.kids[0], scope);
        }
        if (!f.host.is_function()) decline("applying a non-function");
        return call(f.host, std::move(args));
    }

    CVal call(const Value& fn, std::vector<CVal> args) {
        const Callable& c = as_callable(fn);
        const evalimpl::CallableView view = c.view();
        if (view.builtin) {
            std::vector<CVal> all;
            for (const Value& v : view.args) all.push_back(host_value(v, nullptr));
            all.insert(all.end(), args.begin(), args.end());
            if (all.size() != static_cast<size_t>(view.builtin->arity)) decline("a partial application");
            return builtin(view.builtin->name, all);
        }
        const auto& params = view.lambda->params;
        if (args.size() != params.size() - view.bound) decline("a partial or over-application of a closure");
        Scope scope{&c, {}};
        for (size_t k = 0; k < args.size(); ++k) bind(scope, *params[view.bound + k], args[k]);
        return expr(*view.lambda->kids[0], scope);
    }

private:

    void bind(Scope& s, const Pattern& p, const CVal& v) {
        switch (p.kind) {
            case PatternKind::Var: s.locals.emplace_back(p.name, v); return;
            case PatternKind::Wildcard: return;
            case PatternKind::Tuple:
                if (!v.is_tuple || v.tuple.size() != p.elems.size()) decline("a tuple pattern");
                for (size_t k = 0; k < p.elems.size(); ++k) bind(s, *p.elems[k], v.tuple[k]);
                return;
        }
    }

    // A value from the host (captured or global): scalars are lifted.
    CVal host_value(const Value& v, const void* key, const std::string& name = "") {
        if (v.is_scalar()) return scalar_val(fc_.lift(kb_, v.scalar(), key, name, v.symbol()));
        if (v.is_tuple()) {
            CVal t;
            t.is_tuple = true;
            for (const Value& x : v.tuple()) t.tuple.push_back(host_value(x, key));
            return t;
        }
        // A computed node is read where the executor keeps it (device
        // memory on a GPU): forcing it would download it for every plan.
        if (const auto* n = v.is_delayed() ? dynamic_cast<const Node*>(v.delayed().get()) : nullptr) {
            n->compute_because("a function captures it (it reads it by index, which needs the array in memory)");
            return host_val(v);
        }
        if (v.is_delayed()) return host_val(force(v));
        if (v.is_array() || v.is_function()) return host_val(v);
        decline("a captured value of this kind");
    }

    IExpr scalar(const Expr& e, Scope& s) {
        CVal v = expr(e, s);
        if (!v.scalar) decline("a non-scalar operand");
        return v.scalar;
    }

    CVal variable(const Expr& e, Scope& s) {
        for (auto it = s.locals.rbegin(); it != s.locals.rend(); ++it)
            if (it->first == e.text) return it->second;
        if (std::optional<Value> v = s.closure->resolve(e, fc_.eval_context())) return host_value(*v, &e, e.text);
        const evalimpl::BuiltinDef* def = evalimpl::find_builtin(e.text);
        if (!def) decline("the name " + e.text);
        return host_val(evalimpl::apply_builtin(*def, e.type, {}, fc_.eval_context(), e.loc));
    }

    // iterate k f x with a scalar (or tuple) state: a sequential loop in the thread.
    CVal iterate(const std::vector<CVal>& args) {
        if (!args[0].scalar) decline("iterate with a non-scalar count");
        std::vector<IExpr> init;
        leaves_of(args[2], init);
        const std::vector<IExpr> state = ir::lowering::declare_vars(kb_, "state", init);
        const IExpr n = kb_.bind("trips", cast(ScalarType::I64, args[0].scalar));
        ir::lowering::thread_loop(kb_, "step", const_int(0), n, const_int(1), [&](IExpr) {
            size_t at = 0;
            std::vector<IExpr> next;
            leaves_of(apply(args[1], {like_leaves(args[2], state, at)}), next);
            ir::lowering::assign_all(kb_, state, next);  // as one step: (a, b) = (b, a) swaps
        });
        size_t at = 0;
        return like_leaves(args[2], state, at);
    }

    CVal builtin(const std::string& name, const std::vector<CVal>& args) {
        if (name == "iterate" && args.size() == 3 && !is_array_val(args[2])) return iterate(args);
        if (std::any_of(args.begin(), args.end(), [](const CVal& a) { return is_array_val(a) || a.lambda; }) ||
            name == "iota" || name == "fill" || name == "generate")
            return array_builtin(name, args);
        std::vector<IExpr> xs;
        for (const CVal& a : args) {
            if (!a.scalar) decline("a non-scalar argument of " + name);
            xs.push_back(a.scalar);
        }
        return scalar_val(emit_builtin(kb_, name, xs));
    }

    CVal literal(const Expr& e, bool negative) {
        const Prim p = prim_of(e.type);
        Scalar s;
        if (e.kind == ExprKind::IntLit) {
            const int64_t v = negative ? -e.int_value : e.int_value;
            if (p == Prim::Int && (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()))
                decline("an out-of-range literal");  // the reference reports it
            s = convert_scalar(Scalar::of_long(v), p);
        } else {
            const float f = float_literal_value32(e);
            if (p == Prim::Float && std::isinf(f)) decline("an out-of-range literal");  // the reference reports it
            s = p == Prim::Float ? Scalar::of_float(negative ? -f : f)
                                 : Scalar::of_double(negative ? -e.float_value : e.float_value);
        }
        return scalar_val(fc_.lift(kb_, s, &e));
    }

    // A float literal exponent (possibly negated) of float_pow's cheap cases, as a constant.
    std::optional<CVal> literal_exponent(const Expr& e) {
        const bool negated = e.kind == ExprKind::Unary && e.text == "negate";
        const Expr& lit = negated ? *e.kids[0] : e;
        if (lit.kind != ExprKind::FloatLit) return std::nullopt;
        const Prim p = prim_of(lit.type);
        if (p != Prim::Float && p != Prim::Double) return std::nullopt;
        const double v = negated ? -lit.float_value : lit.float_value;
        if (v != 1 && v != 2 && v != 3 && v != -1) return std::nullopt;
        return scalar_val(const_float(v, p == Prim::Float ? ScalarType::F32 : ScalarType::F64));
    }

    CVal app(const Expr& e, Scope& s) {
        std::vector<const Expr*> apps;
        const Expr* head = &e;
        for (; head->kind == ExprKind::App; head = head->kids[0].get()) apps.insert(apps.begin(), head);
        CVal f = expr(*head, s);
        std::vector<CVal> args;
        for (const Expr* a : apps) args.push_back(expr(*a->kids[1], s));
        loc_ = e.loc;  // the call site, for errors raised by array builtins
        // What the call depends on, for the sequential-nesting warning.
        depends_on_.clear();
        for (const auto& [local, v] : s.locals)
            if (std::find(depends_on_.begin(), depends_on_.end(), local) == depends_on_.end() &&
                mentions(e, [&local = local](const std::string& n) { return n == local; }))
                depends_on_.push_back(local);
        return apply(f, std::move(args));
    }

    // && and || short-circuit: the right operand may index out of bounds
    // when the left one decides, so it runs under an If.
    CVal short_circuit(const Expr& e, Scope& s) {
        const bool is_and = e.text == "&&";
        const std::string r = kb_.fresh("sc");
        kb_.emit(let(r, scalar(*e.kids[0], s)));
        kb_.open();
        kb_.emit(assign(r, scalar(*e.kids[1], s)));
        std::vector<StmtPtr> body = kb_.close();
        IExpr cond = ir::var(r, ScalarType::Bool);
        kb_.emit(if_then(is_and ? cond : unary(UnaryOp::Not, cond), std::move(body)));
        return scalar_val(ir::var(r, ScalarType::Bool));
    }

    // if c then a else b: an If statement assigning result variables (never
    // a Select: the untaken branch must not raise errors).
    CVal if_expr(const Expr& e, Scope& s) {
        IExpr cond = scalar(*e.kids[0], s);
        std::vector<ScalarType> types;
        leaf_types(e.type, types);
        std::vector<IExpr> vars;
        for (ScalarType t : types) {
            const std::string v = kb_.fresh("r");
            kb_.emit(let(v, zero_of(t)));
            vars.push_back(ir::var(v, t));
        }
        auto branch = [&](const Expr& b) {
            kb_.open();
            std::vector<IExpr> leaves;
            leaves_of(expr(b, s), leaves);
            for (size_t k = 0; k < vars.size(); ++k) kb_.emit(assign(vars[k]->name, leaves[k]));
            return kb_.close();
        };
        std::vector<StmtPtr> then_body = branch(*e.kids[1]);
        std::vector<StmtPtr> else_body = branch(*e.kids[2]);
        kb_.emit(if_then(cond, std::move(then_body), std::move(else_body)));
        size_t at = 0;
        return from_leaves(e.type, vars, at);
    }

    // let p = v in body: every scalar is bound once (sharing, Barracuda's slet).
    CVal let_expr(const Expr& e, Scope& s) {
        CVal v = share(expr(*e.kids[0], s));
        const size_t mark = s.locals.size();
        bind(s, *e.pattern, v);
        CVal r = expr(*e.kids[1], s);
        s.locals.resize(mark);
        return r;
    }

    CVal share(CVal v) {
        if (v.is_tuple) {
            for (CVal& k : v.tuple) k = share(std::move(k));
        } else if (v.scalar && v.scalar->kind != ir::ExprKind::Var && v.scalar->kind != ir::ExprKind::Param &&
                   v.scalar->kind != ir::ExprKind::Const) {
            v.scalar = kb_.bind("v", v.scalar);
        }
        return v;
    }

    // a[i, j]: a captured or nested array indexed to a scalar, with the
    // reference evaluator's bounds check and message (negative indices count
    // from the end). With slices or fewer indices than axes (a[lo:hi],
    // a[i, :], b[:, j], m[i]) the result is a nested array.
    CVal index(const Expr& e, Scope& s) {
        if (is_mask_index(e) && prim_of(e.indices[0].index->type) == Prim::Int) {  // xs[idx]: a gather
            const ir::PullArray indices = vector_arg(expr(*e.indices[0].index, s));
            const ir::PullArray source = as_pull(expr(*e.kids[0], s));
            check_every_element(source);
            return pull_val(ir::gather_array(indices, source, loc_));
        }
        if (is_mask_index(e)) return masked(expr(*e.indices[0].index, s), expr(*e.kids[0], s));
        return index_of(expr(*e.kids[0], s), e, s);
    }

    // xs[mask] (compress mask xs) in the thread: xs with the mask's flags as
    // the elements kept, as a nested `filter` keeps them (only folds and
    // maps take it).
    CVal masked(const CVal& m, const CVal& a) {
        if (a.keep || m.keep) decline("a mask of a filtered array");
        ir::PullArray x = vector_arg(a);
        const ir::PullArray flags = vector_arg(m);
        const IExpr n = kb_.bind("n", ir::use_params(kb_, x.shape[0]));
        const IExpr f = kb_.bind("n", ir::use_params(kb_, flags.shape[0]));
        const int code = kb_.add_check("boolean index did not match indexed array along axis 0; size of axis is "
                                       "{extent} but size of corresponding boolean axis is {index}",
                                       loc_);
        kb_.emit(if_then(binary(BinaryOp::Ne, n, f), {ir::error(code, f, n)}));
        x.shape[0] = kb_.bind("n", binary(BinaryOp::Min, n, f));  // past a mismatch (an error) no read past an end
        CVal out = pull_val(x);
        out.keep = std::make_shared<const std::function<IExpr(KernelBuilder&, IExpr)>>(
            [flags](KernelBuilder& kb, IExpr k) { return flags.at(kb, {std::move(k)}); });
        return out;
    }

    // A reader of only some of a nested array's elements (an index, a slice,
    // take, drop, a gather's source): when reading an element can raise an
    // error (its code holds a check: a gather's bounds, an index), every
    // element is read here first, in a loop in the thread, so that one the
    // reader skips still raises the reference evaluator's error
    // (docs/semantics.md). An array in memory, or one whose elements cannot
    // fail, costs nothing.
    void check_every_element(const ir::PullArray& arr) {
        if (!ir::element_code_checks(arr, &kb_)) return;
        std::vector<IExpr> shape;
        IExpr total = const_int(1);
        for (const IExpr& n : arr.shape) {
            shape.push_back(kb_.bind("n", ir::use_params(kb_, n)));
            total = kb_.bind("n", binary(BinaryOp::Mul, total, shape.back()));
        }
        ir::lowering::thread_loop(kb_, "every", const_int(0), total, const_int(1), [&](IExpr j) {
            kb_.bind("unread", arr.at(kb_, ir::lowering::unflatten(kb_, j, shape)));
        });
    }

    // An array of tuples is a tuple of arrays (`zip xs ys`): each is indexed.
    CVal index_of(const CVal& a, const Expr& e, Scope& s) {
        if (a.is_tuple) {
            CVal t;
            t.is_tuple = true;
            for (const CVal& k : a.tuple) t.tuple.push_back(index_of(k, e, s));
            return t;
        }
        if (!is_array_val(a)) decline("indexing something other than an array");
        const ir::PullArray arr = as_pull(a);
        if (e.indices.size() > static_cast<size_t>(arr.rank())) decline("more indices than axes");
        check_every_element(arr);
        const bool whole = e.indices.size() == static_cast<size_t>(arr.rank()) &&
                           std::none_of(e.indices.begin(), e.indices.end(), [](const IndexArg& i) { return i.is_slice; });
        std::vector<size_t> axes;
        std::vector<IExpr> written, idx, ok, extents;  // written: as given (for the message); idx: from the start
        for (size_t k = 0; k < e.indices.size(); ++k) {
            if (e.indices[k].is_slice) continue;
            IExpr n = kb_.bind("n", ir::use_params(kb_, arr.shape[k]));
            IExpr i = kb_.bind("i", cast(ScalarType::I64, scalar(*e.indices[k].index, s)));
            axes.push_back(k);
            extents.push_back(n);
            written.push_back(i);
            idx.push_back(kb_.bind("j", select(binary(BinaryOp::Lt, i, const_int(0)), binary(BinaryOp::Add, i, n), i)));
            ok.push_back(kb_.bind("ok", binary(BinaryOp::And, binary(BinaryOp::Ge, i, unary(UnaryOp::Neg, n)),
                                               binary(BinaryOp::Lt, i, n))));
        }
        if (whole) {
            const std::string r = kb_.fresh("x");
            kb_.emit(let(r, zero_of(arr.elem)));
            kb_.open();
            kb_.emit(assign(r, arr.at(kb_, idx)));
            std::vector<StmtPtr> then_body = kb_.close();
            kb_.emit(if_then(all_of(ok), std::move(then_body), first_failure(e, axes, written, ok, extents)));
            return scalar_val(ir::var(r, arr.elem));
        }
        // A failed index is reported here, where the reference raises it; the
        // nested array is then empty, so nothing reads outside the array.
        IExpr fine = const_bool(true);
        if (!ok.empty()) {
            fine = kb_.bind("ok", all_of(ok));
            kb_.emit(if_then(unary(UnaryOp::Not, fine), first_failure(e, axes, written, ok, extents)));
        }
        std::vector<IExpr> at(arr.rank()), starts(arr.rank());
        ir::PullArray out{{}, arr.elem, nullptr};
        for (size_t k = 0, m = 0; k < static_cast<size_t>(arr.rank()); ++k) {
            if (m < axes.size() && axes[m] == k) {
                at[k] = kb_.bind("j", select(fine, idx[m++], const_int(0)));
                continue;
            }
            IExpr lo = const_int(0), count = kb_.bind("n", ir::use_params(kb_, arr.shape[k]));
            if (k < e.indices.size()) slice_bounds(count, e.indices[k], s, lo, count);
            starts[k] = lo;
            out.shape.push_back(kb_.bind("count", select(fine, count, const_int(0))));
        }
        out.at = [arr, at, starts](KernelBuilder& kb, const std::vector<IExpr>& i) {
            std::vector<IExpr> full = at;
            for (size_t k = 0, m = 0; k < full.size(); ++k)
                if (!full[k]) full[k] = binary(BinaryOp::Add, starts[k], i[m++]);
            return arr.at(kb, full);
        };
        return pull_val(out);
    }

    // lo:hi (step 1) along an axis of extent n: Python's clamping, as
    // ops::select_slice; sets the first element and the count.
    void slice_bounds(const IExpr& n, const IndexArg& sel, Scope& s, IExpr& first, IExpr& count) {
        if (sel.step) decline("a slice with a step inside a function");
        auto bound = [&](const shoal::ExprPtr& x, IExpr fallback) {
            if (!x) return fallback;
            IExpr v = kb_.bind("b", cast(ScalarType::I64, scalar(*x, s)));
            v = select(binary(BinaryOp::Lt, v, const_int(0)), binary(BinaryOp::Max, binary(BinaryOp::Add, v, n), const_int(0)), v);
            return kb_.bind("b", binary(BinaryOp::Min, v, n));
        };
        first = bound(sel.lo, const_int(0));
        const IExpr hi = bound(sel.hi, n);
        count = kb_.bind("count", binary(BinaryOp::Max, binary(BinaryOp::Sub, hi, first), const_int(0)));
    }

    // The state of a loop in the thread: mutable variables for its scalars.
    std::vector<IExpr> loop_state(const Expr& e, Scope& s, std::vector<ScalarType>& types) {
        leaf_types(e.type, types);  // arrays as loop state decline
        std::vector<IExpr> init;
        leaves_of(expr(*e.kids[0], s), init);
        return ir::lowering::declare_vars(kb_, "state", init);
    }

    // Evaluates the loop body with the pattern bound to the state and assigns
    // the new state (computed completely before any variable changes).
    void loop_step(const Expr& e, Scope& s, const std::vector<IExpr>& state, const shoal::ExprPtr& body,
                   const std::function<void(Scope&)>& bind_more) {
        const size_t mark = s.locals.size();
        size_t at = 0;
        bind(s, *e.pattern, from_leaves(e.type, state, at));
        bind_more(s);
        std::vector<IExpr> next;
        leaves_of(expr(*body, s), next);
        s.locals.resize(mark);
        ir::lowering::assign_all(kb_, state, next);  // as one step: (a, b) = (b, a) swaps
    }

    // loop p = init for i < n do body: a sequential For in the thread.
    CVal loop_for(const Expr& e, Scope& s) {
        std::vector<ScalarType> types;
        const std::vector<IExpr> state = loop_state(e, s, types);
        const IExpr n = kb_.bind("trips", cast(ScalarType::I64, scalar(*e.kids[1], s)));
        const ScalarType counter = scalar_of(prim_of(e.kids[1]->type));
        ir::lowering::thread_loop(kb_, "step", const_int(0), n, const_int(1), [&](IExpr i) {
            loop_step(e, s, state, e.kids[2], [&](Scope& inner) {
                inner.locals.emplace_back(e.counter, scalar_val(kb_.bind("i", cast(counter, i))));
            });
        });
        size_t at = 0;
        return from_leaves(e.type, state, at);
    }

    // loop p = init while c do body: the condition is computed before the
    // loop and again after each step (it may need statements of its own).
    CVal loop_while(const Expr& e, Scope& s) {
        std::vector<ScalarType> types;
        const std::vector<IExpr> state = loop_state(e, s, types);
        auto condition = [&] {
            const size_t mark = s.locals.size();
            size_t at = 0;
            bind(s, *e.pattern, from_leaves(e.type, state, at));
            IExpr c = scalar(*e.kids[1], s);
            s.locals.resize(mark);
            return c;
        };
        const std::string go = kb_.fresh("go");
        kb_.emit(let(go, condition()));
        kb_.open();
        loop_step(e, s, state, e.kids[2], [](Scope&) {});
        kb_.emit(assign(go, condition()));
        kb_.emit(ir::while_loop(ir::var(go, ScalarType::Bool), kb_.close()));
        size_t at = 0;
        return from_leaves(e.type, state, at);
    }

    // [e0, e1, ...] of scalars computed in the thread: element k selects
    // among the already computed values.
    CVal array_literal(const Expr& e, Scope& s) {
        if (e.kids.empty()) decline("an empty array literal inside a function");
        std::vector<IExpr> xs;
        for (const shoal::ExprPtr& k : e.kids) xs.push_back(kb_.bind("lit", single(expr(*k, s))));
        ir::PullArray out{{const_int(static_cast<int64_t>(xs.size()))}, xs[0]->type, nullptr};
        out.at = [xs](KernelBuilder&, const std::vector<IExpr>& i) {
            IExpr v = xs.back();
            for (size_t k = xs.size() - 1; k-- > 0;)
                v = select(binary(BinaryOp::Eq, i[0], const_int(static_cast<int64_t>(k))), xs[k], v);
            return v;
        };
        return pull_val(out);
    }

    // An array operand as a pull array: a captured array reads its buffer.
    ir::PullArray as_pull(const CVal& v) {
        if (v.keep) decline("a filtered array where its elements' positions matter (only folds and map take one)");
        if (v.pull) return *v.pull;
        if (v.host.is_delayed()) return pull_of(v.host, fc_);
        const ArrayPtr& a = v.host.array();
        const FuseContext::Input& in = fc_.input(ir::ArrayData{a, nullptr}, a->elem, a->shape, a.get());
        std::vector<std::string> extents;
        for (const auto& e : in.extents) extents.push_back(e->name);
        return ir::buffer_array(in.buffer, scalar_of(a->elem), extents);
    }

    // Array builtins inside a function (nested data parallelism): producers
    // give nested pull arrays, consumers sequential loops in the thread.
    CVal array_builtin(const std::string& name, const std::vector<CVal>& args) {
        if (name == "length" && args[0].keep) {  // how many elements the filter keeps
            return fold(name, filtered_arg(args[0]), const_int(0, ScalarType::I32),
                        [](IExpr acc, IExpr) { return binary(BinaryOp::Add, acc, const_int(1, ScalarType::I32)); },
                        args[0].keep);
        }
        if (name == "length") return scalar_val(cast(ScalarType::I32, ir::use_params(kb_, as_pull(args[0]).shape[0])));
        if (name == "sum" || name == "product" || name == "maximum" || name == "minimum" || name == "all" || name == "any") {
            static const std::map<std::string, ir::AssocOp> ops = {
                {"sum", ir::AssocOp::Add}, {"product", ir::AssocOp::Mul}, {"maximum", ir::AssocOp::Max},
                {"minimum", ir::AssocOp::Min}, {"all", ir::AssocOp::And}, {"any", ir::AssocOp::Or}};
            const ir::PullArray a = filtered_arg(args[0]);
            const ir::AssocOp op = ops.at(name);
            return fold(name, a, ir::neutral_of(op, a.elem), [op](IExpr acc, IExpr x) { return ir::apply_op(op, acc, x); },
                        args[0].keep);
        }
        if (name == "mean" || name == "var" || name == "std") return statistic(name, args[0]);
        if (name == "dot" || name == "norm") {  // the reference's sum (x * y), sqrt (sum (x * x)), in order
            const CVal product = nested_elementwise("*", {args[0], name == "dot" ? args[1] : args[0]});
            const ir::PullArray a = as_pull(product);
            const IExpr sum = single(fold(name, a, ir::neutral_of(ir::AssocOp::Add, a.elem),
                                          [](IExpr acc, IExpr x) { return binary(BinaryOp::Add, acc, x); }));
            if (name == "dot") return scalar_val(sum);
            if (!is_float(a.elem)) decline("norm of integers");
            return scalar_val(ir::call("sqrt", {sum}, a.elem));
        }
        if (name == "argmin" || name == "argmax") return arg_extreme(name, vector_arg(args[0]));
        if (name == "reduce" && args[1].scalar) {
            const CVal& f = args[0];
            return fold(name, filtered_arg(args[2]), args[1].scalar, [&](IExpr acc, IExpr x) {
                return single(apply(f, {scalar_val(acc), scalar_val(x)}));
            }, args[2].keep);
        }
        if (name == "count") {
            const CVal& p = args[0];
            return fold(name, filtered_arg(args[1]), const_int(0, ScalarType::I32), [&](IExpr acc, IExpr x) {
                IExpr keep = single(apply(p, {scalar_val(x)}));
                return binary(BinaryOp::Add, acc, select(keep, const_int(1, ScalarType::I32), const_int(0, ScalarType::I32)));
            }, args[1].keep);
        }
        if (name == "filter") {  // the elements where p holds (and any earlier filter's)
            const CVal p = args[0];
            const ir::PullArray a = filtered_arg(args[1]);
            auto earlier = args[1].keep;
            CVal out = pull_val(a);
            out.keep = std::make_shared<const std::function<IExpr(KernelBuilder&, IExpr)>>(
                [this, p, a, earlier](KernelBuilder& kb, IExpr k) {
                    IExpr mine = single(apply(p, {scalar_val(kb.bind("e", a.at(kb, {k})))}));
                    return earlier ? binary(BinaryOp::And, (*earlier)(kb, k), mine) : mine;
                });
            return out;
        }
        if (name == "compress") return masked(args[0], args[1]);
        if (name == "map" && args.size() == 2 && args[1].keep) {  // map f (filter p xs): the same elements kept
            CVal whole = args[1];
            whole.keep = nullptr;
            CVal out = nested_map(name, {args[0], whole});
            out.keep = args[1].keep;
            return out;
        }
        if (name == "take" || name == "drop") {
            if (!args[0].scalar) decline("a non-scalar count");
            const ir::PullArray a = as_pull(args[1]);
            check_every_element(a);
            return pull_val(name == "take" ? ir::take_array(a, args[0].scalar) : ir::drop_array(a, args[0].scalar));
        }
        if (name == "reverse") return pull_val(ir::reverse_array(as_pull(args[0])));
        if (name == "sort") {
            // Element j is the element whose stable rank is j (ascending, NaNs
            // last, equals in their order): a quadratic search per access,
            // for the short arrays a thread sorts (`(sort window)[k]`).
            const ir::PullArray a = vector_arg(args[0]);
            warn_sequential(name);
            const IExpr n = kb_.bind("n", ir::use_params(kb_, a.shape[0]));
            ir::PullArray out{a.shape, a.elem, nullptr};
            out.at = [a, n](KernelBuilder& kb, const std::vector<IExpr>& j) {
                const ScalarType t = a.elem;
                auto less = [t](IExpr x, IExpr y) {  // lang/array_ops.cpp less_nan_last
                    if (!is_float(t)) {
                        if (t == ScalarType::Bool) x = cast(ScalarType::I32, x), y = cast(ScalarType::I32, y);
                        return binary(BinaryOp::Lt, x, y);
                    }
                    const IExpr x_nan = binary(BinaryOp::Ne, x, x), y_nan = binary(BinaryOp::Ne, y, y);
                    return binary(BinaryOp::And, unary(UnaryOp::Not, x_nan),
                                  binary(BinaryOp::Or, y_nan, binary(BinaryOp::Lt, x, y)));
                };
                const std::string found = kb.fresh("sorted");
                kb.emit(let(found, zero_of(t)));
                ir::lowering::thread_loop(kb, "k", const_int(0), n, const_int(1), [&](IExpr k) {
                    const IExpr xk = kb.bind("xk", a.at(kb, {k}));
                    const std::string rank = kb.fresh("rank");
                    kb.emit(let(rank, const_int(0)));
                    ir::lowering::thread_loop(kb, "m", const_int(0), n, const_int(1), [&](IExpr m) {
                        const IExpr xm = kb.bind("xm", a.at(kb, {m}));
                        const IExpr equal = binary(BinaryOp::And, unary(UnaryOp::Not, less(xm, xk)),
                                                   unary(UnaryOp::Not, less(xk, xm)));
                        const IExpr before = binary(BinaryOp::Or, less(xm, xk),
                                                    binary(BinaryOp::And, equal, binary(BinaryOp::Lt, m, k)));
                        kb.emit(assign(rank, binary(BinaryOp::Add, ir::var(rank, ScalarType::I64),
                                                    select(before, const_int(1), const_int(0)))));
                    });
                    ir::lowering::emit_if(kb, binary(BinaryOp::Eq, ir::var(rank, ScalarType::I64), j[0]),
                                          [&] { kb.emit(assign(found, xk)); });
                });
                return ir::var(found, t);
            };
            return pull_val(out);
        }
        if ((name == "scan" || name == "scanExclusive") && args[1].scalar) {
            // Element j folds the first j + 1 (j) elements in order: fine for
            // the short nested arrays a thread walks (each access folds again).
            const CVal f = args[0];
            const IExpr z = args[1].scalar;
            const ir::PullArray a = vector_arg(args[2]);
            const bool inclusive = name == "scan";
            warn_sequential(name);
            ir::PullArray out{a.shape, z->type, nullptr};
            out.at = [this, f, z, a, inclusive](KernelBuilder& kb, const std::vector<IExpr>& j) {
                const std::string acc = kb.fresh("prefix");
                kb.emit(let(acc, z));
                const IExpr end = inclusive ? binary(BinaryOp::Add, j[0], const_int(1)) : j[0];
                ir::lowering::thread_loop(kb, "k", const_int(0), end, const_int(1), [&](IExpr k) {
                    const IExpr x = kb.bind("x", a.at(kb, {k}));
                    kb.emit(assign(acc, single(apply(f, {scalar_val(ir::var(acc, z->type)), scalar_val(x)}))));
                });
                return ir::var(acc, z->type);
            };
            return pull_val(out);
        }
        if (name == "scatter") {  // dest with dest[idx[k]] = vals[k]: element j is the last vals[k] aimed at j
            const ir::PullArray dest = vector_arg(args[0]), idx = vector_arg(args[1]), vals = vector_arg(args[2]);
            warn_sequential(name);
            const IExpr ni = kb_.bind("n", ir::use_params(kb_, idx.shape[0]));
            const IExpr nv = kb_.bind("n", ir::use_params(kb_, vals.shape[0]));
            const int code = kb_.add_check(name + ": {index} indices but {extent} values", loc_);
            kb_.emit(if_then(binary(BinaryOp::Ne, ni, nv), {ir::error(code, ni, nv)}));
            const IExpr m = kb_.bind("m", binary(BinaryOp::Min, ni, nv));
            ir::PullArray out{dest.shape, dest.elem, nullptr};
            out.at = [dest, idx, vals, m](KernelBuilder& kb, const std::vector<IExpr>& j) {
                const std::string v = kb.fresh("scattered");
                kb.emit(let(v, dest.at(kb, j)));
                ir::lowering::thread_loop(kb, "k", const_int(0), m, const_int(1), [&](IExpr k) {
                    const IExpr target = kb.bind("target", cast(ScalarType::I64, idx.at(kb, {k})));
                    ir::lowering::emit_if(kb, binary(BinaryOp::Eq, target, j[0]),
                                          [&] { kb.emit(assign(v, vals.at(kb, {k}))); });
                });
                return ir::var(v, dest.elem);
            };
            return pull_val(out);
        }
        if (name == "++") {  // a ++ b of vectors: element i from a below its length, else from b
            const ir::PullArray a = vector_arg(args[0]), b = vector_arg(args[1]);
            const IExpr na = kb_.bind("n", ir::use_params(kb_, a.shape[0]));
            ir::PullArray out{{kb_.bind("n", binary(BinaryOp::Add, na, ir::use_params(kb_, b.shape[0])))}, a.elem, nullptr};
            out.at = [a, b, na](KernelBuilder& kb, const std::vector<IExpr>& i) {
                // Only the side that holds the element is read (a check on the other would fail).
                const std::string v = kb.fresh("joined");
                kb.emit(let(v, zero_of(a.elem)));
                ir::lowering::emit_if(
                    kb, binary(BinaryOp::Lt, i[0], na), [&] { kb.emit(assign(v, a.at(kb, {i[0]}))); },
                    [&] { kb.emit(assign(v, b.at(kb, {binary(BinaryOp::Sub, i[0], na)}))); });
                return ir::var(v, a.elem);
            };
            return pull_val(out);
        }
        if (name == "gather") {
            const ir::PullArray source = as_pull(args[1]);
            check_every_element(source);
            return pull_val(ir::gather_array(vector_arg(args[0]), source, loc_));
        }
        if (name == "map" || name == "zipWith" || name == "zipWith3") return nested_map(name, args);
        if ((name == "iota" || name == "fill" || name == "generate") && args[0].scalar) {
            ir::PullArray out{{kb_.bind("n", cast(ScalarType::I64, args[0].scalar))}, ScalarType::I32, nullptr};
            if (name == "iota") {
                out.at = [](KernelBuilder&, const std::vector<IExpr>& i) { return cast(ScalarType::I32, i[0]); };
            } else if (name == "fill") {
                if (!args[1].scalar) decline("fill with a non-scalar");
                out.elem = args[1].scalar->type;
                out.at = [v = args[1].scalar](KernelBuilder&, const std::vector<IExpr>&) { return v; };
            } else {
                const CVal f = args[1];
                out.elem = element_type(f, 1);
                out.at = [this, f](KernelBuilder&, const std::vector<IExpr>& i) {
                    return single(apply(f, {scalar_val(cast(ScalarType::I32, i[0]))}));
                };
            }
            out.shape[0] = limit_extent(name, out.shape[0], out.elem);
            return pull_val(out);
        }
        if (find_builtin_arity(name) == static_cast<int>(args.size()) && is_elementwise(name)) return nested_elementwise(name, args);
        decline("the array function " + name + " inside a function");
    }

    // A nested array is never materialised, but the reference evaluator
    // allocates it: a negative extent is its error, and the same size limit
    // applies (the message names the limit in elements, since the kernel
    // cannot format the bytes).
    // Returns the extent to loop over: none when a check failed (the
    // error is reported when the kernel ends).
    IExpr limit_extent(const std::string& name, const IExpr& extent, ScalarType elem) {
        const int negative_code = kb_.add_check(name + ": negative extent {index} in shape ({index})", loc_);
        const IExpr negative = kb_.bind("negative", binary(BinaryOp::Lt, extent, const_int(0)));
        kb_.emit(if_then(negative, {ir::error(negative_code, extent, const_int(0))}));
        const IExpr n = kb_.bind("n", select(negative, const_int(0), extent));
        const int64_t most = std::min<int64_t>(std::numeric_limits<int32_t>::max(),
                                               nested_array_bytes_limit() / static_cast<int64_t>(ir::scalar_size(elem)));
        const int code = kb_.add_check(name + ": array of shape ({index}) is too large: more than the limit of {extent} "
                                              "elements for an array inside a function (:set memlimit changes it)",
                                       loc_);
        const IExpr too_large = kb_.bind("too_large", binary(BinaryOp::Gt, n, const_int(most)));
        kb_.emit(if_then(too_large, {ir::error(code, n, const_int(most))}));
        return kb_.bind("n", select(too_large, const_int(0), n));
    }

    static bool is_elementwise(const std::string& name) {
        return binary_ops().count(name) || name == "**" || name == "pow" || name == "atan2" || name == "negate" ||
               name == "!" || name == "~" || name == "abs" || name == "floor" || name == "ceil" || name == "round" ||
               is_math_function(name) || conversion_target(name).has_value() || name == "where";
    }
    static int find_builtin_arity(const std::string& name) {
        const evalimpl::BuiltinDef* d = evalimpl::find_builtin(name);
        return d ? d->arity : -1;
    }

    // The scalar result type of fn applied to `arity` scalar arguments, from its type.
    static ScalarType element_type(const CVal& fn, int arity) {
        Type t;
        int applied = 0;
        if (fn.lambda) {
            t = fn.lambda->node->type;
        } else if (fn.host.is_function()) {
            const evalimpl::CallableView v = as_callable(fn.host).view();
            t = v.builtin ? v.type : v.lambda->type;
            applied = static_cast<int>(v.builtin ? v.args.size() : v.bound);
        }
        if (!t) decline("an untyped function");
        for (int k = 0; k < arity + applied; ++k) t = func_result(t);
        if (!is_prim(t)) decline("a function returning a non-scalar");
        return scalar_of(prim_of(t));
    }

    // A vector argument that may be filtered (`keep` of its CVal says which elements count).
    ir::PullArray filtered_arg(const CVal& v) {
        if (!v.keep) return vector_arg(v);
        if (v.pull->rank() != 1) decline("a nested array of rank " + std::to_string(v.pull->rank()));
        return *v.pull;
    }

    ir::PullArray vector_arg(const CVal& v) {
        if (!is_array_val(v)) decline("a non-array argument");
        ir::PullArray a = as_pull(v);
        if (a.rank() != 1) decline("a nested array of rank " + std::to_string(a.rank()));
        return a;
    }

    static IExpr single(const CVal& v) {
        if (!v.scalar) decline("a non-scalar element");
        return v.scalar;
    }

    // acc = init; for k in [0, n): acc = step(acc, a[k]) -- sequential, in the
    // reference evaluator's order.
    // `keep`: a filtered vector's predicate; the step runs only where it holds.
    CVal fold(const std::string& name, const ir::PullArray& a, IExpr init,
              const std::function<IExpr(IExpr, IExpr)>& step,
              const std::shared_ptr<const std::function<IExpr(KernelBuilder&, IExpr)>>& keep = nullptr) {
        warn_sequential(name);
        const std::string acc = kb_.fresh("acc");
        kb_.emit(let(acc, init));
        const IExpr n = kb_.bind("n", ir::use_params(kb_, a.shape[0]));
        ir::lowering::thread_loop(kb_, "k", const_int(0), n, const_int(1), [&](IExpr k) {
            const IExpr kept = keep ? kb_.bind("kept", (*keep)(kb_, k)) : nullptr;
            if (kept) kb_.open();
            const IExpr x = kb_.bind("x", a.at(kb_, {k}));
            kb_.emit(assign(acc, step(ir::var(acc, init->type), x)));
            if (kept) kb_.emit(if_then(kept, kb_.close()));
        });
        return scalar_val(ir::var(acc, init->type));
    }

    // mean / var / std of a nested vector (filtered too), as the reference
    // composes them: the sum in order over the count, then (var, std) the
    // squared deviations from that mean in order over the count again.
    CVal statistic(const std::string& name, const CVal& xs) {
        const ir::PullArray a = filtered_arg(xs);
        if (!is_float(a.elem)) decline(name + " of integers");
        const IExpr zero = const_float(0, a.elem);
        const IExpr n = xs.keep ? single(fold(name, a, zero, [&](IExpr acc, IExpr) {
                                      return binary(BinaryOp::Add, acc, const_float(1, a.elem));
                                  }, xs.keep))
                                : kb_.bind("n", cast(a.elem, ir::use_params(kb_, a.shape[0])));
        const IExpr sum = single(fold(name, a, zero, [](IExpr acc, IExpr x) { return binary(BinaryOp::Add, acc, x); },
                                      xs.keep));
        const IExpr mean = kb_.bind("mean", binary(BinaryOp::Div, sum, n));
        if (name == "mean") return scalar_val(mean);
        const IExpr squares = single(fold(name, a, zero, [&](IExpr acc, IExpr x) {
            const IExpr d = binary(BinaryOp::Sub, x, mean);
            return binary(BinaryOp::Add, acc, binary(BinaryOp::Mul, d, d));
        }, xs.keep));
        const IExpr var = kb_.bind("var", binary(BinaryOp::Div, squares, n));
        return scalar_val(name == "var" ? var : ir::call("sqrt", {var}, a.elem));
    }

    // argmin / argmax of a nested vector, as the reference evaluator walks it:
    // the first best element (a NaN never is, unless all are), an error if empty.
    CVal arg_extreme(const std::string& name, const ir::PullArray& a) {
        warn_sequential(name);
        const bool largest = name == "argmax";
        const IExpr n = kb_.bind("n", ir::use_params(kb_, a.shape[0]));
        const int empty = kb_.add_check(name + " of an empty array", loc_);
        kb_.emit(if_then(binary(BinaryOp::Eq, n, const_int(0)), {ir::error(empty, const_int(0), const_int(0))}));
        const ScalarType t = a.elem;
        const std::string best = kb_.fresh("best"), at = kb_.fresh("best_index");
        kb_.emit(let(best, t == ScalarType::Bool ? ir::const_bool(false)
                           : ir::is_float(t)   ? ir::const_float(0, t)
                                               : const_int(0, t)));
        kb_.emit(let(at, const_int(0)));
        const IExpr best_v = ir::var(best, t), best_i = ir::var(at, ScalarType::I64);
        auto nan = [&](const IExpr& x) { return ir::is_float(t) ? binary(BinaryOp::Ne, x, x) : ir::const_bool(false); };
        ir::lowering::emit_if(kb_, binary(BinaryOp::Gt, n, const_int(0)), [&] {
            kb_.emit(assign(best, a.at(kb_, {const_int(0)})));
            ir::lowering::thread_loop(kb_, "k", const_int(1), n, const_int(1), [&](IExpr k) {
                const IExpr x = kb_.bind("x", a.at(kb_, {k}));
                const IExpr order = largest ? binary(BinaryOp::Lt, best_v, x) : binary(BinaryOp::Lt, x, best_v);
                const IExpr better = kb_.bind(
                    "better", binary(BinaryOp::And, ir::unary(ir::UnaryOp::Not, nan(x)),
                                     binary(BinaryOp::Or, nan(best_v), order)));
                kb_.emit(assign(best, select(better, x, best_v)));
                kb_.emit(assign(at, select(better, k, best_i)));
            });
        });
        return scalar_val(cast(ScalarType::I32, best_i));
    }

    // Why a nested reduction is not hoisted: it depends on the element (or a
    // loop variable), or hoisting is switched off.
    void warn_sequential(const std::string& name) {
        fc_.warnings.push_back(
            {loc_, name + " over a nested array runs sequentially inside each thread",
             {fc_.hoisting() ? "the nested array depends on " + depends_text() +
                                   ", so it cannot be computed once before the kernel; fine for short inner arrays, "
                                   "slow for long ones (flatten the computation, e.g. with segscan)"
                             : "hoisting is switched off (:set hoist off), so every thread computes the nested "
                               "array again; `:set hoist on` computes it once before the kernel when it does not "
                               "depend on the element"}});
    }

    CVal nested_map(const std::string& name, const std::vector<CVal>& args) {
        const CVal f = args[0];
        std::vector<ir::PullArray> srcs;
        for (size_t k = 1; k < args.size(); ++k) srcs.push_back(vector_arg(args[k]));
        ir::PullArray out{{broadcast_extent(name, srcs)}, element_type(f, static_cast<int>(srcs.size())), nullptr};
        out.at = [this, f, srcs](KernelBuilder& kb, const std::vector<IExpr>& i) {
            std::vector<CVal> xs;
            for (const ir::PullArray& p : srcs) xs.push_back(scalar_val(kb.bind("e", p.at(kb, {stretched(kb, p, i[0], srcs.size())}))));
            return single(apply(f, xs));
        };
        return pull_val(out);
    }

    CVal nested_elementwise(const std::string& name, const std::vector<CVal>& args) {
        std::vector<ir::PullArray> srcs;
        for (const CVal& a : args)
            if (is_array_val(a)) srcs.push_back(vector_arg(a));
        std::vector<ScalarType> types;
        for (const CVal& a : args) types.push_back(is_array_val(a) ? as_pull(a).elem : single(a)->type);
        ir::PullArray out{{broadcast_extent(name, srcs)}, builtin_result(name, types), nullptr};
        const bool stretches = srcs.size() > 1;
        out.at = [this, name, args, stretches](KernelBuilder& kb, const std::vector<IExpr>& i) {
            std::vector<IExpr> xs;
            for (const CVal& a : args) {
                if (!is_array_val(a)) {
                    xs.push_back(a.scalar);
                    continue;
                }
                const ir::PullArray& p = as_pull(a);
                xs.push_back(kb.bind("e", p.at(kb, {stretched(kb, p, i[0], stretches ? 2 : 1)})));
            }
            return emit_builtin(kb, name, xs);
        };
        return pull_val(out);
    }

    // Where a vector combined with others (`operands` in all) is read for
    // element i: an operand of extent 1 stretches, read at 0.
    static IExpr stretched(KernelBuilder& kb, const ir::PullArray& p, const IExpr& i, size_t operands) {
        if (operands < 2) return i;
        return ir::select(binary(BinaryOp::Eq, ir::use_params(kb, p.shape[0]), ir::i64(1)), ir::i64(0), i);
    }

    // The extent of vectors combined by an elementwise operator, by NumPy's
    // rule (ops::broadcast_shapes): equal extents, or one of them 1. Known
    // only when the kernel runs, so the test is in the kernel; a mismatch
    // is the reference's error.
    IExpr broadcast_extent(const std::string& name, const std::vector<ir::PullArray>& xs) {
        IExpr n = kb_.bind("n", ir::use_params(kb_, xs[0].shape[0]));
        for (size_t k = 1; k < xs.size(); ++k) {
            const IExpr m = kb_.bind("n", ir::use_params(kb_, xs[k].shape[0]));
            const int code = kb_.add_check(
                "operands of `" + name + "` could not be broadcast together with shapes ({index}) ({extent})", loc_);
            const IExpr one = ir::i64(1);
            kb_.emit(if_then(binary(BinaryOp::And, binary(BinaryOp::Ne, n, m),
                                    binary(BinaryOp::And, binary(BinaryOp::Ne, n, one), binary(BinaryOp::Ne, m, one))),
                             {ir::error(code, n, m)}));
            // Past a mismatch (an error) the shorter extent: no thread reads past an end.
            n = kb_.bind("n", ir::select(binary(BinaryOp::Eq, n, one), m,
                                         ir::select(binary(BinaryOp::Eq, m, one), n, binary(BinaryOp::Min, n, m))));
        }
        return n;
    }

    static IExpr all_of(const std::vector<IExpr>& xs) {
        IExpr r = xs[0];
        for (size_t k = 1; k < xs.size(); ++k) r = binary(BinaryOp::And, r, xs[k]);
        return r;
    }

    // The error of the first axis out of range (the reference checks axes in order).
    std::vector<StmtPtr> first_failure(const Expr& e, const std::vector<size_t>& axes, const std::vector<IExpr>& idx,
                                       const std::vector<IExpr>& ok,
                                       const std::vector<IExpr>& extents) {
        std::vector<StmtPtr> chain;
        for (size_t k = idx.size(); k-- > 0;) {
            const IndexArg& written = e.indices[axes[k]];
            const Loc loc = written.loc.valid() ? written.loc : e.loc;
            const int code = kb_.add_check("index {index} is out of bounds for axis " + std::to_string(axes[k]) +
                                               " with extent {extent}",
                                           loc);
            std::vector<StmtPtr> fail{ir::error(code, idx[k], extents[k])};
            chain = {if_then(unary(UnaryOp::Not, ok[k]), std::move(fail), std::move(chain))};
        }
        return chain;
    }

    // A subexpression doing array work that does not depend on the
    // function's parameters or locals (nor draws random numbers, whose stream
    // advances per call) is loop invariant: hoisted out of the kernel.
    static bool hoistable(const Expr& e, const Scope& s) {
        switch (e.kind) {
            case ExprKind::App:
            case ExprKind::Index:
            case ExprKind::Binary:
            case ExprKind::Unary:
            case ExprKind::Let:
            case ExprKind::If:
            case ExprKind::ArrayLit:
            case ExprKind::LoopFor:
            case ExprKind::LoopWhile:
            case ExprKind::With: break;
            default: return false;
        }
        if (!e.type || is_func(e.type) || !does_array_work(e)) return false;
        return !mentions(e, [&](const std::string& n) {
            if (n == "random") return true;
            for (const auto& [local, v] : s.locals)
                if (local == n) return true;
            return false;
        });
    }

    // Computes a hoisted expression on the host (once per plan). An error is
    // raised where, and only if, the kernel reaches the expression: the
    // reference evaluator might never evaluate it (an untaken branch).
    CVal hoist(const Expr& e, Scope& s) {
        const Value* known = fc_.hoisted(&e, s.closure);
        if (known) return host_value(*known, &e);
        Value v;
        try {
            v = force(s.closure->evaluate_inside(e, fc_.eval_context()));
        } catch (const Error& err) {
            if (err.kind == ErrorKind::Interrupted || err.kind == ErrorKind::Internal) throw;
            std::vector<ScalarType> types;
            leaf_types(e.type, types);  // an array-valued failure declines here
            const int code = kb_.add_check(err.message, err.loc);
            kb_.emit(ir::error(code, const_int(0), const_int(0)));
            std::vector<IExpr> zeros;
            for (ScalarType t : types) zeros.push_back(zero_of(t));
            size_t at = 0;
            return from_leaves(e.type, zeros, at);
        }
        fc_.remember_hoisted(&e, s.closure, v);
        if (holds_array(v) && e.loc.valid() && fc_.notes_decisions())
            fc_.note_materialised("", "the nested array at " + e.loc.position(),
                                  "hoisted: it does not depend on the element, so it is computed once, before the kernel");
        return host_value(v, &e);
    }

    CVal expr(const Expr& e, Scope& s) {
        if (fc_.hoisting() && hoistable(e, s)) return hoist(e, s);
        switch (e.kind) {
            case ExprKind::IntLit:
            case ExprKind::FloatLit: return literal(e, false);
            case ExprKind::BoolLit: return scalar_val(const_bool(e.bool_value));
            case ExprKind::Var: return variable(e, s);
            case ExprKind::App: return app(e, s);
            case ExprKind::Let: return let_expr(e, s);
            case ExprKind::If: return if_expr(e, s);
            case ExprKind::Index: return index(e, s);
            case ExprKind::Annot: return expr(*e.kids[0], s);
            case ExprKind::ArrayLit: return array_literal(e, s);
            case ExprKind::LoopFor: return loop_for(e, s);
            case ExprKind::LoopWhile: return loop_while(e, s);
            case ExprKind::Lambda: {
                CVal v;
                v.lambda = std::make_shared<const LocalLambda>(LocalLambda{&e, s});
                return v;
            }
            case ExprKind::Tuple: {
                CVal t;
                t.is_tuple = true;
                for (const shoal::ExprPtr& k : e.kids) t.tuple.push_back(expr(*k, s));
                return t;
            }
            case ExprKind::Binary: {
                if (e.text == "&&" || e.text == "||") return short_circuit(e, s);
                CVal a = expr(*e.kids[0], s);
                // A literal exponent of a float power stays in the kernel (not
                // lifted): `x ** 2.0` is then x * x, not a call per element.
                CVal b = e.text == "**" ? literal_exponent(*e.kids[1]).value_or(CVal{}) : CVal{};
                if (!b.scalar) b = expr(*e.kids[1], s);
                loc_ = e.loc;
                return builtin(e.text, {a, b});
            }
            case ExprKind::Unary: {
                const Expr& x = *e.kids[0];
                if (e.text == "negate" && (x.kind == ExprKind::IntLit || x.kind == ExprKind::FloatLit))
                    return literal(x, true);
                CVal a = expr(x, s);
                loc_ = e.loc;
                return builtin(e.text, {a});
            }
            default: decline("this kind of expression inside a function");
        }
    }

    // "`i` and `j`", or "the element" when the call names none of the
    // function's variables (a loop variable, say).
    std::string depends_text() const {
        if (depends_on_.empty()) return "the element";
        std::string t;
        for (size_t k = 0; k < depends_on_.size(); ++k)
            t += (k == 0 ? "" : k + 1 == depends_on_.size() ? " and " : ", ") + ("`" + depends_on_[k] + "`");
        return t;
    }

    FuseContext& fc_;
    KernelBuilder& kb_;
    Loc loc_;  // the builtin call being compiled
    std::vector<std::string> depends_on_;  // the function's variables that call mentions
};

}  // namespace

std::vector<IExpr> compile_call(FuseContext& fc, KernelBuilder& kb, const Value& fn, const std::vector<IExpr>& args) {
    std::vector<CVal> xs;
    for (const IExpr& a : args) xs.push_back(scalar_val(a));
    std::vector<IExpr> leaves;
    leaves_of(Compiler(fc, kb).call(fn, std::move(xs)), leaves);
    return leaves;
}

std::vector<IExpr> compile_call(FuseContext& fc, KernelBuilder& kb, const Value& fn, const std::vector<IExpr>& leaves,
                                const std::vector<Type>& types) {
    std::vector<CVal> xs;
    size_t at = 0;
    for (const Type& t : types) xs.push_back(from_leaves(t, leaves, at));
    SHOAL_INTERNAL_ASSERT(at == leaves.size(), "compile_call: leaves do not match the argument types");
    std::vector<IExpr> out;
    leaves_of(Compiler(fc, kb).call(fn, std::move(xs)), out);
    return out;
}

}  // namespace shoal::compiled
