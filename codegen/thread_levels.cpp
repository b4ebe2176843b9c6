#include "codegen/thread_levels.h"

#include <algorithm>

#include "codegen/ir_visitor.h"

namespace shoal::ir {

namespace {

struct LetCollector : IRVisitor {
    std::map<std::string, int> count;
    std::map<std::string, ExprPtr> value;
    std::set<std::string> block_vars;
    using IRVisitor::visit;
    void visit(const StmtPtr& s) override {
        if (s->kind == StmtKind::Let) {
            ++count[s->name];
            value[s->name] = s->exprs[0];
        }
        if (s->kind == StmtKind::For) ++count[s->name];  // a loop variable varies
        IRVisitor::visit(s);
    }
    void visit(const BlockStmtPtr& b) override {
        if (b->kind == BlockStmtKind::BlockFor) block_vars.insert(b->var);
        IRVisitor::visit(b);
    }
};

bool integer(ScalarType t) { return is_signed_int(t) || is_unsigned_int(t); }

ExprPtr zero(ScalarType t) { return const_int(0, t); }

}  // namespace

ThreadLevels::ThreadLevels(const Kernel& k) {
    LetCollector c;
    c.visit_kernel(k);
    const std::set<std::string> assigned = assigned_variables(k);
    for (const auto& [name, n] : c.count)
        if (n == 1 && !assigned.count(name) && c.value.count(name)) lets_[name] = c.value[name];
    block_vars_ = std::move(c.block_vars);
}

ThreadLevel ThreadLevels::level(const ExprPtr& e) const {
    if (auto known = levels_.find(e.get()); known != levels_.end()) return known->second.second;
    const ThreadLevel l = compute_level(e);
    levels_[e.get()] = {e, l};
    return l;
}

std::optional<AffineForm> ThreadLevels::affine(const ExprPtr& e) const {
    if (auto known = affine_forms_.find(e.get()); known != affine_forms_.end()) return known->second.second;
    std::optional<AffineForm> a = compute_affine(e);
    affine_forms_[e.get()] = {e, a};
    return a;
}

ExprPtr ThreadLevels::let_value(const std::string& var) const {
    auto it = lets_.find(var);
    return it == lets_.end() || block_vars_.count(var) ? nullptr : it->second;
}

ThreadLevel ThreadLevels::compute_level(const ExprPtr& e) const {
    switch (e->kind) {
        case ExprKind::Const: return ThreadLevel::Constant;
        case ExprKind::Param:
        case ExprKind::BlockIdx:
        case ExprKind::BlockDim:
        case ExprKind::GridDim: return ThreadLevel::Uniform;
        case ExprKind::ThreadIdx: return ThreadLevel::Affine;
        case ExprKind::Var: {
            if (block_vars_.count(e->name)) return ThreadLevel::Uniform;
            auto it = lets_.find(e->name);
            return it == lets_.end() ? ThreadLevel::Varying : level(it->second);
        }
        case ExprKind::Load:
        case ExprKind::Shuffle: return ThreadLevel::Varying;
        default: break;
    }
    ThreadLevel l = ThreadLevel::Constant;
    for (const auto& a : e->args) l = std::max(l, level(a));
    if (l <= ThreadLevel::Uniform) return l;
    return affine(e) ? ThreadLevel::Affine : ThreadLevel::Varying;
}

std::optional<AffineForm> ThreadLevels::compute_affine(const ExprPtr& e) const {
    switch (e->kind) {
        case ExprKind::ThreadIdx: return AffineForm{zero(e->type), 1};
        case ExprKind::Var: {
            auto it = lets_.find(e->name);
            if (it != lets_.end() && !block_vars_.count(e->name)) return affine(it->second);
            break;
        }
        case ExprKind::Load:
        case ExprKind::Shuffle: return std::nullopt;
        default: break;
    }
    bool uniform_args = true;
    for (const auto& a : e->args) uniform_args = uniform_args && level(a) <= ThreadLevel::Uniform;
    if (uniform_args && e->kind != ExprKind::Var) return AffineForm{e, 0};
    if (e->kind == ExprKind::Var) return block_vars_.count(e->name) ? std::optional(AffineForm{e, 0}) : std::nullopt;
    if (!integer(e->type)) return std::nullopt;
    if (e->kind == ExprKind::Cast && integer(e->args[0]->type)) {
        // Widening (or same-width) conversions keep the form; threadIdx and
        // the block's offsets are far from any type's limits.
        if (scalar_size(e->type) < scalar_size(e->args[0]->type)) return std::nullopt;
        auto a = affine(e->args[0]);
        if (!a) return std::nullopt;
        const ExprPtr base = a->base->kind == ExprKind::Const ? const_int(a->base->i, e->type) : cast(e->type, a->base);
        return AffineForm{base, a->stride};
    }
    if (e->kind != ExprKind::Binary) return std::nullopt;
    auto a = affine(e->args[0]), b = affine(e->args[1]);
    if (!a || !b) return std::nullopt;
    switch (e->binary_op) {
        case BinaryOp::Add: return AffineForm{binary(BinaryOp::Add, a->base, b->base), a->stride + b->stride};
        case BinaryOp::Sub: return AffineForm{binary(BinaryOp::Sub, a->base, b->base), a->stride - b->stride};
        case BinaryOp::Mul: {
            // A constant factor only: the stride must be known.
            const ExprPtr& other = a->stride == 0 ? e->args[0] : e->args[1];
            const AffineForm& varying = a->stride == 0 ? *b : *a;
            if (other->kind != ExprKind::Const || (a->stride != 0 && b->stride != 0)) return std::nullopt;
            return AffineForm{binary(BinaryOp::Mul, varying.base, other), varying.stride * other->i};
        }
        default: return std::nullopt;
    }
}

ExprPtr ThreadLevels::inline_lets(const ExprPtr& e) const {
    if (e->kind == ExprKind::Var) {
        auto it = lets_.find(e->name);
        return it == lets_.end() || block_vars_.count(e->name) ? e : inline_lets(it->second);
    }
    if (e->args.empty()) return e;
    auto copy = std::make_shared<Expr>(*e);
    bool changed = false;
    for (auto& a : copy->args) {
        ExprPtr n = inline_lets(a);
        changed = changed || n != a;
        a = n;
    }
    return changed ? copy : e;
}

bool is_cancel_point(const Stmt& s, const ThreadLevels& levels) {
    if (s.kind == StmtKind::While) return true;
    return s.kind == StmtKind::For &&
           (levels.level(s.exprs[1]) == ThreadLevel::Varying || levels.level(s.exprs[2]) == ThreadLevel::Varying);
}

namespace {
struct CancelPoints : IRVisitor {
    explicit CancelPoints(const ThreadLevels& l) : levels(l) {}
    const ThreadLevels& levels;
    bool found = false;
    using IRVisitor::visit;
    void visit(const StmtPtr& s) override {
        if (found || !s) return;
        if (is_cancel_point(*s, levels)) found = true;
        else IRVisitor::visit(s);
    }
};
}  // namespace

bool has_cancel_points(const Kernel& k, const ThreadLevels& levels) {
    CancelPoints c(levels);
    c.visit_kernel(k);
    return c.found;
}

bool has_cancel_points(const Kernel& k) { return has_cancel_points(k, ThreadLevels(k)); }

}  // namespace shoal::ir
