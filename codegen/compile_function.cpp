// Compiling closures to kernel IR: a walk over the typed AST of a lambda body
// that emits thread code through a KernelBuilder (see compile_function.h).
#include "codegen/compile_function.h"

#include <cstdlib>
#include <cstring>
#include <limits>

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
IExpr FuseContext::lift(KernelBuilder& kb, const Scalar& s, const void* key) {
    int64_t bits = 0;
    std::memcpy(&bits, &s.l, sizeof bits);
    const auto k = std::make_tuple(key, s.type, bits);
    std::string name;
    if (auto it = key ? lifted_.find(k) : lifted_.end(); it != lifted_.end()) {
        name = it->second;
    } else {
        name = "c" + std::to_string(counter_++);
        scalars_[name] = s;
        if (key) lifted_[k] = name;
    }
    return param(kb.scalar_param(name, scalar_of(s.type)), scalar_of(s.type));
}

IExpr FuseContext::extent(int64_t n) {
    const std::string name = "n" + std::to_string(counter_++);
    scalars_[name] = Scalar::of_long(n);
    return param(name, ScalarType::I64);
}

const FuseContext::Input& FuseContext::input(const ArrayPtr& a) {
    auto it = inputs_.find(a.get());
    if (it != inputs_.end()) return it->second;
    Input in{"in" + std::to_string(counter_++), {}};
    for (int64_t n : a->shape) in.extents.push_back(extent(n));
    buffers_[in.buffer] = a;
    return inputs_.emplace(a.get(), std::move(in)).first->second;
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

IExpr emit_builtin(const std::string& name, const std::vector<IExpr>& args) {
    if (args.size() == 1) return emit_unary(name, args[0]);
    if (args.size() != 2) decline("the function " + name);
    const ScalarType t = args[0]->type;
    if (name == "**" || name == "pow" || name == "atan2") {
        // Integer ** is exact repeated squaring in the reference: not compiled yet.
        if (!is_float(t)) decline("integer " + name);
        return ir::call(name == "atan2" ? "atan2" : "pow", args, t);
    }
    auto it = binary_ops().find(name);
    if (it == binary_ops().end()) decline("the function " + name);
    return binary(it->second, args[0], args[1]);
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
};

CVal scalar_val(IExpr e) { return CVal{std::move(e), {}, {}, false}; }

void leaves_of(const CVal& v, std::vector<IExpr>& out) {
    if (v.is_tuple) {
        for (const CVal& k : v.tuple) leaves_of(k, out);
        return;
    }
    if (!v.scalar) decline("a function or array as a result");
    out.push_back(v.scalar);
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

class Compiler {
public:
    Compiler(FuseContext& fc, KernelBuilder& kb) : fc_(fc), kb_(kb) {}

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
    struct Scope {
        const Callable* closure;
        std::vector<std::pair<std::string, CVal>> locals;
    };

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
    CVal host_value(const Value& v, const void* key) {
        if (v.is_scalar()) return scalar_val(fc_.lift(kb_, v.scalar(), key));
        if (v.is_tuple()) {
            CVal t;
            t.is_tuple = true;
            for (const Value& x : v.tuple()) t.tuple.push_back(host_value(x, key));
            return t;
        }
        if (v.is_delayed()) return CVal{nullptr, {}, force(v), false};
        if (v.is_array() || v.is_function()) return CVal{nullptr, {}, v, false};
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
        if (std::optional<Value> v = s.closure->resolve(e, fc_.eval_context())) return host_value(*v, &e);
        const evalimpl::BuiltinDef* def = evalimpl::find_builtin(e.text);
        if (!def) decline("the name " + e.text);
        return CVal{nullptr, {}, evalimpl::apply_builtin(*def, e.type, {}, fc_.eval_context(), e.loc), false};
    }

    CVal builtin(const std::string& name, const std::vector<CVal>& args) {
        std::vector<IExpr> xs;
        for (const CVal& a : args) {
            if (!a.scalar) decline("a non-scalar argument of " + name);
            xs.push_back(a.scalar);
        }
        return scalar_val(emit_builtin(name, xs));
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
            float f = e.text.empty() ? static_cast<float>(e.float_value) : std::strtof(e.text.c_str(), nullptr);
            s = p == Prim::Float ? Scalar::of_float(negative ? -f : f)
                                 : Scalar::of_double(negative ? -e.float_value : e.float_value);
        }
        return scalar_val(fc_.lift(kb_, s, &e));
    }

    CVal app(const Expr& e, Scope& s) {
        std::vector<const Expr*> apps;
        const Expr* head = &e;
        for (; head->kind == ExprKind::App; head = head->kids[0].get()) apps.insert(apps.begin(), head);
        CVal f = expr(*head, s);
        std::vector<CVal> args;
        for (const Expr* a : apps) args.push_back(expr(*a->kids[1], s));
        if (!f.host.is_function()) decline("applying a non-function");
        return call(f.host, std::move(args));
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

    // a[i, j]: a captured host array indexed to a scalar, with the reference
    // evaluator's bounds check and message (negative indices count from the end).
    CVal index(const Expr& e, Scope& s) {
        CVal a = expr(*e.kids[0], s);
        if (!a.host.is_array()) decline("indexing something other than a captured array");
        const ArrayPtr& arr = a.host.array();
        if (e.indices.size() != static_cast<size_t>(arr->rank())) decline("a partial index");
        const FuseContext::Input& in = fc_.input(arr);
        const ScalarType elem = scalar_of(arr->elem);
        kb_.buffer_param(in.buffer, elem, Access::Read);
        std::vector<IExpr> idx, ok;
        for (size_t k = 0; k < e.indices.size(); ++k) {
            if (e.indices[k].is_slice) decline("a slice inside a function");
            IExpr n = use_extent(in.extents[k]);
            IExpr i = kb_.bind("i", cast(ScalarType::I64, scalar(*e.indices[k].index, s)));
            idx.push_back(i);
            ok.push_back(kb_.bind("ok", binary(BinaryOp::And, binary(BinaryOp::Ge, i, unary(UnaryOp::Neg, n)),
                                               binary(BinaryOp::Lt, i, n))));
        }
        const std::string r = kb_.fresh("x");
        kb_.emit(let(r, zero_of(elem)));
        kb_.open();
        IExpr flat = const_int(0);
        for (size_t k = 0; k < idx.size(); ++k) {
            IExpr n = use_extent(in.extents[k]);
            IExpr j = select(binary(BinaryOp::Lt, idx[k], const_int(0)), binary(BinaryOp::Add, idx[k], n), idx[k]);
            flat = binary(BinaryOp::Add, binary(BinaryOp::Mul, flat, n), j);
        }
        kb_.emit(assign(r, load(in.buffer, flat, elem)));
        std::vector<StmtPtr> then_body = kb_.close();
        kb_.emit(if_then(all_of(ok), std::move(then_body), first_failure(e, idx, ok, in)));
        return scalar_val(ir::var(r, elem));
    }

    IExpr use_extent(const IExpr& n) { return param(kb_.scalar_param(n->name, ScalarType::I64), ScalarType::I64); }

    static IExpr all_of(const std::vector<IExpr>& xs) {
        IExpr r = xs[0];
        for (size_t k = 1; k < xs.size(); ++k) r = binary(BinaryOp::And, r, xs[k]);
        return r;
    }

    // The error of the first axis out of range (the reference checks axes in order).
    std::vector<StmtPtr> first_failure(const Expr& e, const std::vector<IExpr>& idx, const std::vector<IExpr>& ok,
                                       const FuseContext::Input& in) {
        std::vector<StmtPtr> chain;
        for (size_t k = idx.size(); k-- > 0;) {
            const Loc loc = e.indices[k].loc.valid() ? e.indices[k].loc : e.loc;
            const int code = kb_.add_check("index {index} is out of bounds for axis " + std::to_string(k) +
                                               " with extent {extent}",
                                           loc);
            std::vector<StmtPtr> fail{ir::error(code, idx[k], use_extent(in.extents[k]))};
            chain = {if_then(unary(UnaryOp::Not, ok[k]), std::move(fail), std::move(chain))};
        }
        return chain;
    }

    CVal expr(const Expr& e, Scope& s) {
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
            case ExprKind::Tuple: {
                CVal t;
                t.is_tuple = true;
                for (const shoal::ExprPtr& k : e.kids) t.tuple.push_back(expr(*k, s));
                return t;
            }
            case ExprKind::Binary:
                if (e.text == "&&" || e.text == "||") return short_circuit(e, s);
                return builtin(e.text, {expr(*e.kids[0], s), expr(*e.kids[1], s)});
            case ExprKind::Unary: {
                const Expr& x = *e.kids[0];
                if (e.text == "negate" && (x.kind == ExprKind::IntLit || x.kind == ExprKind::FloatLit))
                    return literal(x, true);
                return builtin(e.text, {expr(x, s)});
            }
            default: decline("this kind of expression inside a function");
        }
    }

    FuseContext& fc_;
    KernelBuilder& kb_;
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
