#include "ast.h"

#include <algorithm>

namespace shoal {

ExprPtr make_expr(ExprKind kind, Loc loc) {
    auto e = std::make_shared<Expr>();
    e->kind = kind;
    e->loc = std::move(loc);
    return e;
}

float float_literal_value32(const Expr& e) {
    return e.text.empty() ? static_cast<float>(e.float_value) : e.float_value32;
}

PatternPtr make_pattern(PatternKind kind, Loc loc) {
    auto p = std::make_shared<Pattern>();
    p->kind = kind;
    p->loc = std::move(loc);
    return p;
}

PatternPtr clone_pattern(const PatternPtr& p) {
    if (!p) return nullptr;
    auto copy = std::make_shared<Pattern>(*p);
    for (auto& elem : copy->elems) elem = clone_pattern(elem);
    return copy;
}

ExprPtr clone_expr(const ExprPtr& e) {
    if (!e) return nullptr;
    // The member-wise copy shares children; replace each by its own deep copy.
    auto copy = std::make_shared<Expr>(*e);
    copy->instance_key.clear();  // a clone is specialised at other types
    for (auto& param : copy->params) param = clone_pattern(param);
    copy->pattern = clone_pattern(copy->pattern);
    for (auto& kid : copy->kids) kid = clone_expr(kid);
    for (auto& arg : copy->indices) {
        arg.index = clone_expr(arg.index);
        arg.lo = clone_expr(arg.lo);
        arg.hi = clone_expr(arg.hi);
        arg.step = clone_expr(arg.step);
    }
    return copy;
}

// Scopes follow eval.cpp.
void for_each_free_variable(Expr& e, std::vector<std::string>& locals, const std::function<void(Expr&)>& visit) {
    auto push_pattern = [&](const auto& self, const PatternPtr& p) -> void {
        if (!p) return;
        if (p->kind == PatternKind::Var) locals.push_back(p->name);
        for (const auto& k : p->elems) self(self, k);
    };
    auto walk = [&](const ExprPtr& k) {
        if (k) for_each_free_variable(*k, locals, visit);
    };
    const size_t outer = locals.size();
    switch (e.kind) {
        case ExprKind::Var:
            if (std::find(locals.begin(), locals.end(), e.text) == locals.end()) visit(e);
            return;
        case ExprKind::Lambda:
            for (const auto& p : e.params) push_pattern(push_pattern, p);
            walk(e.kids[0]);
            break;
        case ExprKind::Let:
            walk(e.kids[0]);
            push_pattern(push_pattern, e.pattern);
            walk(e.kids[1]);
            break;
        case ExprKind::LoopFor:
            walk(e.kids[0]);
            walk(e.kids[1]);
            push_pattern(push_pattern, e.pattern);
            locals.push_back(e.counter);
            walk(e.kids[2]);
            break;
        case ExprKind::LoopWhile:
            walk(e.kids[0]);
            push_pattern(push_pattern, e.pattern);
            walk(e.kids[1]);
            walk(e.kids[2]);
            break;
        default:
            for (const auto& k : e.kids) walk(k);
            for (const auto& ix : e.indices) {
                walk(ix.index);
                walk(ix.lo);
                walk(ix.hi);
                walk(ix.step);
            }
            break;
    }
    locals.resize(outer);
}


}  // namespace shoal
