#include "ast.h"

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

}  // namespace shoal
