// The type schemes of the builtins (typecheck.h builtin_schemes): each
// written directly with Gen variables and the constraints the checker
// solves (typecheck.h Constraint), one entry per builtin.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "typecheck.h"

namespace shoal {

namespace {

// ---------------------------------------------------------------- builtins
// Builds a builtin's scheme directly with Gen variables.
struct SchemeBuilder {
    std::shared_ptr<Scheme> s = std::make_shared<Scheme>();

    Type var(unsigned classes = 0, bool scalar = false) {
        auto t = t_var(static_cast<int>(s->vars.size()), classes);
        t->scalar_only = scalar;
        s->vars.push_back(t);
        return t_gen(static_cast<int>(s->vars.size()) - 1);
    }
    Type rank() {
        auto t = t_var(static_cast<int>(s->vars.size()));
        t->is_rank = true;
        s->vars.push_back(t);
        return t_gen(static_cast<int>(s->vars.size()) - 1);
    }
    void constrain(Constraint::Kind k, std::vector<Type> types) {
        Constraint c;
        c.kind = k;
        c.types = std::move(types);
        s->constraints.push_back(std::move(c));
    }
    SchemePtr done(Type t) {
        s->type = std::move(t);
        return s;
    }
};

Type tint() { return t_prim(Prim::Int); }
Type tbool() { return t_prim(Prim::Bool); }

// Elementwise function of `arity` operands: operand elements in `arg_classes`
// (all the same type when same_elems), result element `result_elem` (null: the operand element).
SchemePtr lifted(int arity, unsigned arg_classes, Type fixed_arg_elem, Type result_elem) {
    SchemeBuilder b;
    Type e = fixed_arg_elem ? fixed_arg_elem : b.var(arg_classes, true);
    Type re = result_elem ? result_elem : e;
    Type r = b.var();
    std::vector<Type> params;
    std::vector<Type> cs{r, re};
    for (int i = 0; i < arity; ++i) {
        Type a = b.var();
        params.push_back(a);
        cs.push_back(a);
        cs.push_back(e);
    }
    b.constrain(Constraint::Kind::Lift, cs);
    return b.done(t_func(params, r));
}

std::map<std::string, SchemePtr> make_builtin_schemes() {
    std::map<std::string, SchemePtr> m;
    for (const char* op : {"+", "-", "*", "/", "%", "**"}) m[op] = lifted(2, ClassNum, nullptr, nullptr);
    for (const char* op : {"==", "!="}) m[op] = lifted(2, ClassEq, nullptr, tbool());
    for (const char* op : {"<", "<=", ">", ">="}) m[op] = lifted(2, ClassOrd | ClassNum, nullptr, tbool());
    for (const char* op : {"&&", "||"}) m[op] = lifted(2, 0, tbool(), nullptr);
    {
        // where c x y: a bool condition, x and y of one element type; the three broadcast.
        SchemeBuilder b;
        Type e = b.var(0, true), r = b.var(), c = b.var(), x = b.var(), y = b.var();
        b.constrain(Constraint::Kind::Lift, {r, e, c, tbool(), x, e, y, e});
        m["where"] = b.done(t_func({c, x, y}, r));
    }
    for (const char* op : {"&", "|", "^", "<<", ">>"}) m[op] = lifted(2, ClassIntegral | ClassNum, nullptr, nullptr);
    m["negate"] = lifted(1, ClassNum, nullptr, nullptr);
    m["!"] = lifted(1, 0, tbool(), nullptr);
    m["~"] = lifted(1, ClassIntegral | ClassNum, nullptr, nullptr);
    for (const char* f : {"sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
                          "floor", "ceil", "round", "erf"})
        m[f] = lifted(1, ClassFloating | ClassNum, nullptr, nullptr);
    m["abs"] = lifted(1, ClassNum, nullptr, nullptr);
    for (const char* f : {"atan2", "pow"}) m[f] = lifted(2, ClassFloating | ClassNum, nullptr, nullptr);
    for (const char* f : {"min", "max"}) m[f] = lifted(2, ClassOrd | ClassNum, nullptr, nullptr);
    m["int"] = lifted(1, ClassNumOrBool, nullptr, t_prim(Prim::Int));
    m["long"] = lifted(1, ClassNumOrBool, nullptr, t_prim(Prim::Long));
    m["float"] = lifted(1, ClassNumOrBool, nullptr, t_prim(Prim::Float));
    m["double"] = lifted(1, ClassNumOrBool, nullptr, t_prim(Prim::Double));

    using K = Constraint::Kind;
    auto arr = [](Type r, Type e) { return t_array(std::move(r), std::move(e)); };
    {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var();
        m["++"] = b.done(t_func({arr(r, e), arr(r, e)}, arr(r, e)));
    }
    m["iota"] = SchemeBuilder().done(t_func(tint(), t_array(1, tint())));
    m["eye"] = SchemeBuilder().done(t_func(tint(), t_array(2, t_prim(Prim::Float))));
    {
        SchemeBuilder b;
        Type e = b.var(ClassFloating | ClassNum, true);
        m["linspace"] = b.done(t_func({e, e, tint()}, t_array(1, e)));
    }
    {
        SchemeBuilder b;
        Type e = b.var(ClassFloating | ClassNum, true);
        m["arange"] = b.done(t_func({e, e, e}, t_array(1, e)));
    }
    {
        SchemeBuilder b;
        Type e = b.var(ClassOrd | ClassNum);
        m["argsort"] = b.done(t_func(t_array(1, e), t_array(1, tint())));
    }
    {
        SchemeBuilder b;
        Type s = b.var(), r = b.rank(), e = b.var();
        b.constrain(K::ShapeArg, {s, r});
        m["fill"] = b.done(t_func({s, e}, arr(r, e)));
    }
    {
        SchemeBuilder b;
        Type s = b.var(), r = b.rank(), e = b.var(), f = b.var();
        b.constrain(K::ShapeArg, {s, r});
        b.constrain(K::Generator, {r, f, e});
        m["generate"] = b.done(t_func({s, f}, arr(r, e)));
    }
    {
        SchemeBuilder b;
        Type s = b.var(), r = b.rank();
        b.constrain(K::ShapeArg, {s, r});
        m["random"] = b.done(t_func(s, arr(r, t_prim(Prim::Float))));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var();
        m["length"] = b.done(t_func(arr(r, e), tint()));
    }
    for (const char* f : {"rows", "cols"}) {
        SchemeBuilder b;
        Type e = b.var();
        m[f] = b.done(t_func(t_array(2, e), tint()));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var(), s = b.var();
        b.constrain(K::ShapeArg, {s, r});
        m["shape"] = b.done(t_func(arr(r, e), s));
    }
    {
        SchemeBuilder b;
        Type s = b.var(), r1 = b.rank(), r2 = b.rank(), e = b.var();
        b.constrain(K::ShapeArg, {s, r2});
        m["reshape"] = b.done(t_func({s, arr(r1, e)}, arr(r2, e)));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var();
        m["flatten"] = b.done(t_func(arr(r, e), t_array(1, e)));
    }
    {
        SchemeBuilder b;
        Type e = b.var();
        m["transpose"] = b.done(t_func(t_array(2, e), t_array(2, e)));
    }
    for (const char* f : {"col", "row"}) {
        SchemeBuilder b;
        Type e = b.var();
        m[f] = b.done(t_func(t_array(1, e), t_array(2, e)));
    }
    for (const char* f : {"matmul", "@"}) {
        SchemeBuilder b;
        Type e = b.var(ClassFloating | ClassNum, true), r1 = b.rank(), r2 = b.rank(), res = b.var();
        b.constrain(K::Matmul, {arr(r1, e), arr(r2, e), res});
        m[f] = b.done(t_func({arr(r1, e), arr(r2, e)}, res));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), a = b.var(), c = b.var();
        m["map"] = b.done(t_func({t_func(a, c), arr(r, a)}, arr(r, c)));
    }
    {
        // vmap f xs: f applied to each row of xs (each element of a vector).
        SchemeBuilder b;
        Type xs = b.var(), p = b.var(), q = b.var(), res = b.var();
        b.constrain(K::VmapParam, {xs, p});
        b.constrain(K::VmapResult, {q, res});
        m["vmap"] = b.done(t_func({t_func(p, q), xs}, res));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), r1 = b.rank(), r2 = b.rank(), a = b.var(), x = b.var(), c = b.var();
        b.constrain(K::BroadcastRank, {r, r1, r2});
        m["zipWith"] = b.done(t_func({t_func({a, x}, c), arr(r1, a), arr(r2, x)}, arr(r, c)));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), r1 = b.rank(), r2 = b.rank(), r3 = b.rank(), a = b.var(), x = b.var(), y = b.var(),
             c = b.var();
        b.constrain(K::BroadcastRank, {r, r1, r2, r3});
        m["zipWith3"] = b.done(t_func({t_func({a, x, y}, c), arr(r1, a), arr(r2, x), arr(r3, y)}, arr(r, c)));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), a = b.var(), x = b.var();
        m["zip"] = b.done(t_func({arr(r, a), arr(r, x)}, arr(r, t_tuple({a, x}))));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), a = b.var(), x = b.var(), y = b.var();
        m["zip3"] = b.done(t_func({arr(r, a), arr(r, x), arr(r, y)}, arr(r, t_tuple({a, x, y}))));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), a = b.var(), x = b.var();
        m["unzip"] = b.done(t_func(arr(r, t_tuple({a, x})), t_tuple({arr(r, a), arr(r, x)})));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var(), res = b.var();
        b.constrain(K::ReduceInner, {arr(r, e), res});
        m["reduce"] = b.done(t_func({t_func({e, e}, e), e, arr(r, e)}, res));
    }
    auto reduction = [&](unsigned classes, Type fixed_elem, Type result_elem) {
        SchemeBuilder b;
        Type r = b.rank();
        Type e = fixed_elem ? fixed_elem : b.var(classes, true);
        Type res = b.var();
        b.constrain(K::ReduceInner, {arr(r, result_elem ? result_elem : e), res});
        return std::make_pair(b, t_func(arr(r, e), res));
    };
    for (const char* f : {"sum", "product"}) {
        auto [b, t] = reduction(ClassNum, nullptr, nullptr);
        m[f] = b.done(t);
    }
    for (const char* f : {"maximum", "minimum"}) {
        auto [b, t] = reduction(ClassOrd | ClassNum, nullptr, nullptr);
        m[f] = b.done(t);
    }
    for (const char* f : {"mean", "var", "std", "norm", "median"}) {
        auto [b, t] = reduction(ClassFloating | ClassNum, nullptr, nullptr);
        m[f] = b.done(t);
    }
    {
        // quantile q xs: q of the element type, reduced like median.
        SchemeBuilder b;
        Type r = b.rank(), e = b.var(ClassFloating | ClassNum, true), res = b.var();
        b.constrain(K::ReduceInner, {arr(r, e), res});
        m["quantile"] = b.done(t_func({e, arr(r, e)}, res));
    }
    {
        // topk k xs: the values and their indices, per row of a matrix.
        SchemeBuilder b;
        Type r = b.rank(), e = b.var(ClassOrd | ClassNum, true);
        m["topk"] = b.done(t_func({tint(), arr(r, e)}, t_tuple({arr(r, e), arr(r, tint())})));
    }
    {
        SchemeBuilder b;
        Type e = b.var(ClassOrd | ClassNum, true);
        m["unique"] = b.done(t_func(t_array(1, e), t_array(1, e)));
    }
    {
        // solve a b: b a vector or a matrix (one column per system), x shaped like b.
        SchemeBuilder b;
        Type e = b.var(ClassFloating | ClassNum, true), r = b.rank();
        m["solve"] = b.done(t_func({t_array(2, e), arr(r, e)}, arr(r, e)));
    }
    {
        // lstsq a b: a is m x n, b a vector of m or m x k; x has n rows.
        SchemeBuilder b;
        Type e = b.var(ClassFloating | ClassNum, true), r = b.rank();
        m["lstsq"] = b.done(t_func({t_array(2, e), arr(r, e)}, arr(r, e)));
    }
    {
        SchemeBuilder b;
        Type e = b.var(ClassFloating | ClassNum, true);
        m["inv"] = b.done(t_func(t_array(2, e), t_array(2, e)));
    }
    {
        SchemeBuilder b;
        Type e = b.var(ClassFloating | ClassNum, true);
        m["det"] = b.done(t_func(t_array(2, e), e));
    }
    {
        SchemeBuilder b;
        m["show"] = b.done(t_func(b.var(), t_string()));
    }
    m["bincount"] = SchemeBuilder().done(t_func(t_array(1, tint()), t_array(1, tint())));
    m["tally"] = SchemeBuilder().done(t_func({tint(), t_array(1, tint())}, t_array(1, tint())));
    {
        SchemeBuilder b;
        Type e = b.var(ClassFloating | ClassNum, true);
        m["histogram"] = b.done(t_func({tint(), e, e, t_array(1, e)}, t_array(1, tint())));
    }
    for (const char* f : {"cumsum", "cumprod"}) {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var(ClassNum, true);
        m[f] = b.done(t_func(arr(r, e), arr(r, e)));
    }
    {
        // dot x y = sum (x * y): the product broadcasts, the sum is innermost.
        SchemeBuilder b;
        Type e = b.var(ClassNum, true), x = b.var(), y = b.var(), r = b.rank(), res = b.var();
        Type p = arr(r, e);  // the product is an array (ReduceInner reads its rank)
        b.constrain(Constraint::Kind::Lift, {p, e, x, e, y, e});
        b.constrain(K::ReduceInner, {p, res});
        m["dot"] = b.done(t_func({x, y}, res));
    }
    {
        SchemeBuilder b;
        Type e = b.var(ClassNum, true);
        m["outer"] = b.done(t_func({t_array(1, e), t_array(1, e)}, t_array(2, e)));
    }
    for (const char* f : {"all", "any"}) {
        auto [b, t] = reduction(0, tbool(), nullptr);
        m[f] = b.done(t);
    }
    for (const char* f : {"argmax", "argmin"}) {
        auto [b, t] = reduction(ClassOrd | ClassNum, nullptr, tint());
        m[f] = b.done(t);
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var(), res = b.var();
        b.constrain(K::ReduceInner, {arr(r, tint()), res});
        m["count"] = b.done(t_func({t_func(e, tbool()), arr(r, e)}, res));
    }
    for (const char* f : {"scan", "scanExclusive"}) {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var();
        m[f] = b.done(t_func({t_func({e, e}, e), e, arr(r, e)}, arr(r, e)));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var();
        m["segscan"] = b.done(t_func({t_func({e, e}, e), e, arr(r, tbool()), arr(r, e)}, arr(r, e)));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var();
        m["gather"] = b.done(t_func({t_array(1, tint()), arr(r, e)}, arr(r, e)));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var();
        m["scatter"] = b.done(t_func({arr(r, e), t_array(1, tint()), arr(r, e)}, arr(r, e)));
    }
    {
        // permute f dest g vals: element i of a vector, row i of a matrix, goes to g i.
        SchemeBuilder b;
        Type r = b.rank(), e = b.var();
        m["permute"] = b.done(t_func({t_func({e, e}, e), arr(r, e), t_func(tint(), tint()), arr(r, e)}, arr(r, e)));
    }
    for (const char* f : {"reverse"}) {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var();
        m[f] = b.done(t_func(arr(r, e), arr(r, e)));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var();
        m["interleave"] = b.done(t_func({arr(r, e), arr(r, e)}, arr(r, e)));
    }
    for (const char* f : {"take", "drop"}) {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var();
        m[f] = b.done(t_func({tint(), arr(r, e)}, arr(r, e)));
    }
    {
        SchemeBuilder b;
        Type e = b.var();
        m["filter"] = b.done(t_func({t_func(e, tbool()), t_array(1, e)}, t_array(1, e)));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var();
        m["compress"] = b.done(t_func({t_array(1, tbool()), t_array(r, e)}, t_array(r, e)));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var(ClassOrd | ClassNum, true);
        m["sort"] = b.done(t_func(arr(r, e), arr(r, e)));
    }
    {
        SchemeBuilder b;
        Type k = b.var(ClassOrd | ClassNum, true), v = b.var();
        m["sortByKey"] = b.done(t_func({t_array(1, k), t_array(1, v)}, t_tuple({t_array(1, k), t_array(1, v)})));
    }
    {
        SchemeBuilder b;
        Type a = b.var();
        m["iterate"] = b.done(t_func({tint(), t_func(a, a), a}, a));
    }
    {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var(ClassNoDefault, true);
        m["load"] = b.done(t_func(t_string(), arr(r, e)));
    }
    for (const char* f : {"save", "saveCsv"}) {
        SchemeBuilder b;
        Type r = b.rank(), e = b.var(0, true);
        m[f] = b.done(t_func({t_string(), arr(r, e)}, t_unit()));
    }
    m["loadCsv"] = SchemeBuilder().done(t_func(t_string(), t_array(2, t_prim(Prim::Double))));
    m["loadCsv1"] = SchemeBuilder().done(t_func(t_string(), t_array(1, t_prim(Prim::Double))));
    return m;
}

}  // namespace

const std::map<std::string, SchemePtr>& builtin_schemes() {
    static const std::map<std::string, SchemePtr> schemes = make_builtin_schemes();
    return schemes;
}

}  // namespace shoal
