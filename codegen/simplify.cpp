#include "codegen/simplify.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "codegen/ir_visitor.h"
// Folding with exactly the shared scalar semantics (lang/scalar_semantics.h),
// which the executor and the reference evaluator run too: folding with
// anything else could make a folded kernel disagree with the unfolded one.
#include "codegen/scalar_eval.h"

namespace shoal::ir {
namespace {

using scalar::is_bool_v;
using scalar::is_int_v;

// ---------------------------------------------------------------- constants

bool is_const(const ExprPtr& e) { return e->kind == ExprKind::Const; }

ExprPtr fold_unary(UnaryOp op, const Expr& a) {
    return with_type(a.type, [&](auto tag) -> ExprPtr {
        using T = typename decltype(tag)::type;
        if (std::optional<T> r = apply_unary(op, const_value<T>(a))) return const_of(a.type, *r);
        return nullptr;
    });
}

ExprPtr fold_binary(BinaryOp op, const Expr& a, const Expr& b) {
    return with_type(a.type, [&](auto tag) -> ExprPtr {
        using T = typename decltype(tag)::type;
        const T x = const_value<T>(a), y = const_value<T>(b);
        if (std::optional<bool> c = apply_comparison(op, x, y)) return const_bool(*c);
        if (std::optional<T> r = apply_arithmetic(op, x, y)) return const_of(a.type, *r);
        return nullptr;
    });
}

ExprPtr fold_cast(ScalarType to, const Expr& a) {
    return with_type(a.type, [&](auto from_tag) {
        using From = typename decltype(from_tag)::type;
        return with_type(to, [&](auto to_tag) {
            using To = typename decltype(to_tag)::type;
            return const_of(to, scalar::convert<To, From>(const_value<From>(a)));
        });
    });
}

// Only the calls whose results are exact: the math library's functions may
// differ from the device's in the last place.
ExprPtr fold_call(const Expr& e) {
    const bool unary_fn = e.name == "abs";
    const bool binary_fn = e.name == "min" || e.name == "max" || e.name == "mulhi";
    if (!unary_fn && !binary_fn) return nullptr;
    for (const auto& a : e.args)
        if (!is_const(a) || a->type != e.type) return nullptr;
    return with_type(e.type, [&](auto tag) -> ExprPtr {
        using T = typename decltype(tag)::type;
        if constexpr (is_bool_v<T>) {
            return nullptr;
        } else {
            const T x = const_value<T>(*e.args[0]);
            if (unary_fn) return const_of(e.type, scalar::abs(x));
            const T y = const_value<T>(*e.args[1]);
            if (e.name == "min") return const_of(e.type, scalar::min(x, y));
            if (e.name == "max") return const_of(e.type, scalar::max(x, y));
            if constexpr (is_int_v<T>) return const_of(e.type, scalar::mulhi(x, y));
            return nullptr;
        }
    });
}

// ---------------------------------------------------------------- identities

bool is_int(const ExprPtr& e, int64_t v) {
    return is_const(e) && !is_float(e->type) && e->type != ScalarType::Bool && e->i == v;
}

bool is_bool(const ExprPtr& e, bool v) { return is_const(e) && e->type == ScalarType::Bool && (e->i != 0) == v; }

// Every bit set in the constant's width (-1, or 0xffffffff for u32).
bool is_all_ones(const ExprPtr& e) {
    if (!is_const(e) || is_float(e->type) || e->type == ScalarType::Bool) return false;
    return e->type == ScalarType::U32 ? e->i == 0xffffffffLL : e->i == -1;
}

// A float constant equal to v with v's sign (so -0.0 and +0.0 differ).
bool is_float_value(const ExprPtr& e, double v) {
    if (!is_const(e) || !is_float(e->type)) return false;
    const double x = e->type == ScalarType::F32 ? static_cast<double>(static_cast<float>(e->f)) : e->f;
    return x == v && std::signbit(x) == std::signbit(v);
}

// A shift amount that is a multiple of the width: the shift does nothing.
bool is_null_shift(const ExprPtr& amount) {
    if (!is_const(amount) || is_float(amount->type) || amount->type == ScalarType::Bool) return false;
    const uint64_t bits = scalar_size(amount->type) * 8;
    return (static_cast<uint64_t>(amount->i) & (bits - 1)) == 0;
}

// The same variable or parameter twice (after CSE, equal values are one variable).
bool same_leaf(const ExprPtr& a, const ExprPtr& b) {
    return a->kind == b->kind && (a->kind == ExprKind::Var || a->kind == ExprKind::Param) && a->name == b->name;
}

// x op x: only what holds for every x (floats: NaN != NaN, so just min and max).
ExprPtr same_operand_identity(BinaryOp op, const ExprPtr& x) {
    const ScalarType t = x->type;
    if (op == BinaryOp::Min || op == BinaryOp::Max) return x;
    if (is_float(t)) return nullptr;
    switch (op) {
        case BinaryOp::And:
        case BinaryOp::Or: return x;
        case BinaryOp::Sub:
        case BinaryOp::Xor:
        case BinaryOp::Mod: return t == ScalarType::Bool ? const_bool(false) : const_int(0, t);  // x % x: 0 also for 0 and -1
        case BinaryOp::Eq:
        case BinaryOp::Le:
        case BinaryOp::Ge: return const_bool(true);
        case BinaryOp::Ne:
        case BinaryOp::Lt:
        case BinaryOp::Gt: return const_bool(false);
        default: return nullptr;
    }
}

// x op c (or c op x for commutative op) where the identity gives x or an
// absorbing constant; null when none applies.
ExprPtr binary_identity(BinaryOp op, const ExprPtr& a, const ExprPtr& b) {
    const ScalarType t = a->type;
    if (same_leaf(a, b)) return same_operand_identity(op, a);
    const bool integer = !is_float(t) && t != ScalarType::Bool;
    const bool commutes = op == BinaryOp::Add || op == BinaryOp::Mul || op == BinaryOp::And ||
                          op == BinaryOp::Or || op == BinaryOp::Xor;
    // Checks x op c, then c op x when op commutes.
    for (int side = 0; side < (commutes ? 2 : 1); ++side) {
        const ExprPtr& x = side == 0 ? a : b;
        const ExprPtr& c = side == 0 ? b : a;
        if (!is_const(c)) continue;
        // An absorbing constant drops x: fine for any Expr except a shuffle (a collective).
        const bool droppable = !contains_shuffle(x);
        switch (op) {
            case BinaryOp::Add:
                if (integer ? is_int(c, 0) : is_float_value(c, -0.0)) return x;
                break;
            case BinaryOp::Sub:
                if (integer ? is_int(c, 0) : is_float_value(c, 0.0)) return x;
                break;
            case BinaryOp::Mul:
                if (integer ? is_int(c, 1) : is_float_value(c, 1.0)) return x;
                if (integer && is_int(c, 0) && droppable) return c;
                break;
            case BinaryOp::Div:
                if (integer ? is_int(c, 1) : is_float_value(c, 1.0)) return x;
                break;
            case BinaryOp::And:
                if (is_all_ones(c) || is_bool(c, true)) return x;
                if ((is_int(c, 0) || is_bool(c, false)) && droppable) return c;
                break;
            case BinaryOp::Or:
                if (is_int(c, 0) || is_bool(c, false)) return x;
                if (is_bool(c, true) && droppable) return c;
                break;
            case BinaryOp::Xor:
                if (is_int(c, 0) || is_bool(c, false)) return x;
                break;
            case BinaryOp::Shl:
            case BinaryOp::Shr:
                if (is_null_shift(c)) return x;
                break;
            default: break;
        }
    }
    return nullptr;
}

ExprPtr simplify_expr(const ExprPtr& e) {
    const auto& args = e->args;
    switch (e->kind) {
        case ExprKind::Unary: {
            const ExprPtr& a = args[0];
            if (is_const(a)) {
                if (ExprPtr folded = fold_unary(e->unary_op, *a)) return folded;
            }
            // -(-x), !!x and ~~x are x (integer negation wraps both ways).
            if (a->kind == ExprKind::Unary && a->unary_op == e->unary_op) return a->args[0];
            return e;
        }
        case ExprKind::Binary: {
            if (is_const(args[0]) && is_const(args[1])) {
                if (ExprPtr folded = fold_binary(e->binary_op, *args[0], *args[1])) return folded;
            }
            if (ExprPtr same = binary_identity(e->binary_op, args[0], args[1])) return same;
            return e;
        }
        case ExprKind::Select: {
            if (!is_const(args[0])) return e;
            const ExprPtr& dropped = args[0]->i ? args[2] : args[1];
            return contains_shuffle(dropped) ? e : args[0]->i ? args[1] : args[2];
        }
        case ExprKind::Cast:
            if (args[0]->type == e->type) return args[0];
            if (is_const(args[0])) return fold_cast(e->type, *args[0]);
            return e;
        case ExprKind::Call: {
            ExprPtr folded = fold_call(*e);
            return folded ? folded : e;
        }
        default: return e;
    }
}

// ---------------------------------------------------------------- the pass

bool declares_variables(const std::vector<StmtPtr>& body) {
    for (const auto& s : body)
        if (s->kind == StmtKind::Let) return true;
    return false;
}

class Simplifier : public IRMutator {
public:
    explicit Simplifier(const Kernel& k) : assigned_(assigned_variables(k)) {}

    using IRMutator::mutate;

    ExprPtr mutate(const ExprPtr& e) override {
        if (e->kind == ExprKind::Var) {
            auto it = known_.find(e->name);
            return it == known_.end() ? e : it->second;
        }
        return simplify_expr(IRMutator::mutate(e));
    }

    StmtPtr mutate(const StmtPtr& s) override {
        switch (s->kind) {
            case StmtKind::Let: return mutate_let(s);
            case StmtKind::If: return mutate_if(s);
            case StmtKind::For: {
                // The bounds are outside the loop variable's scope; a sibling
                // scope's variable of the same name must not leak into the body.
                known_.erase(s->name);
                StmtPtr m = IRMutator::mutate(s);
                const ExprPtr &lo = m->exprs[0], &hi = m->exprs[1];
                const bool no_trip = is_const(lo) && is_const(hi) && fold_binary(BinaryOp::Ge, *lo, *hi)->i;
                return no_trip ? nullptr : m;
            }
            case StmtKind::While: {
                StmtPtr m = IRMutator::mutate(s);
                return is_bool(m->exprs[0], false) ? nullptr : m;
            }
            default: return IRMutator::mutate(s);
        }
    }

    BlockStmtPtr mutate(const BlockStmtPtr& b) override {
        if (b->kind == BlockStmtKind::BlockFor) known_.erase(b->var);
        return IRMutator::mutate(b);
    }

protected:
    // Splices the taken branch of a constant `if` into the list when that
    // moves no declaration into the enclosing scope.
    std::vector<StmtPtr> mutate_body(const std::vector<StmtPtr>& body, bool& changed) override {
        std::vector<StmtPtr> out;
        for (const auto& s : body) {
            StmtPtr m = mutate(s);
            changed = changed || m != s;
            if (!m) continue;
            if (s->kind == StmtKind::If && m->kind == StmtKind::Seq && !declares_variables(m->body))
                out.insert(out.end(), m->body.begin(), m->body.end());
            else
                out.push_back(std::move(m));
        }
        return out;
    }

private:
    // A constant, a parameter or an immutable variable: free to copy to every use.
    bool propagates(const ExprPtr& v) const {
        return v->kind == ExprKind::Const || v->kind == ExprKind::Param ||
               (v->kind == ExprKind::Var && !assigned_.count(v->name));
    }

    StmtPtr mutate_let(const StmtPtr& s) {
        ExprPtr value = mutate(s->exprs[0]);
        // A name is declared at most once while visible, so the latest Let of a
        // name in program order is the one its later uses see.
        known_.erase(s->name);
        if (!assigned_.count(s->name) && propagates(value)) {
            known_[s->name] = value;
            return nullptr;
        }
        if (value == s->exprs[0]) return s;
        return let(s->name, value);
    }

    StmtPtr mutate_if(const StmtPtr& s) {
        ExprPtr cond = mutate(s->exprs[0]);
        bool changed = cond != s->exprs[0];
        if (is_const(cond)) {
            auto taken = mutate_body(cond->i ? s->body : s->else_body, changed);
            return taken.empty() ? nullptr : seq(std::move(taken));
        }
        auto then_body = mutate_branch(cond, true, s->body, changed);
        auto else_body = mutate_branch(cond, false, s->else_body, changed);
        if (!changed) return s;
        return if_then(cond, std::move(then_body), std::move(else_body));
    }

    // A branch of `if (cond)`: when cond is an immutable bool variable (or its
    // negation), its value is known there (`if (ok) ... else if (!ok) error`).
    std::vector<StmtPtr> mutate_branch(const ExprPtr& cond, bool taken, const std::vector<StmtPtr>& body,
                                       bool& changed) {
        const bool negated = cond->kind == ExprKind::Unary && cond->unary_op == UnaryOp::Not;
        const ExprPtr& v = negated ? cond->args[0] : cond;
        if (v->kind != ExprKind::Var || assigned_.count(v->name)) return mutate_body(body, changed);
        known_[v->name] = const_bool(taken != negated);
        auto out = mutate_body(body, changed);
        known_.erase(v->name);
        return out;
    }

    const std::set<std::string> assigned_;
    std::map<std::string, ExprPtr> known_;  // immutable variable -> the value replacing it
};

}  // namespace

Kernel simplify(const Kernel& k) { return Simplifier(k).mutate_kernel(k); }

}  // namespace shoal::ir
