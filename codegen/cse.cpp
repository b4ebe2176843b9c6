#include "codegen/cse.h"

#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "codegen/ir_visitor.h"

namespace shoal::ir {
namespace {

// ---------------------------------------------------------------- structural order

template <class T> int three_way(const T& a, const T& b) { return a < b ? -1 : b < a ? 1 : 0; }

// A total order on expressions by structure; float constants compare by
// their bits, so -0.0 and 0.0 are different values.
int compare(const ExprPtr& a, const ExprPtr& b) {
    if (a == b) return 0;
    uint64_t fa = 0, fb = 0;
    std::memcpy(&fa, &a->f, sizeof fa);
    std::memcpy(&fb, &b->f, sizeof fb);
    if (int c = three_way(std::tie(a->kind, a->type, a->i, fa, a->space, a->unary_op, a->binary_op, a->shuffle_op),
                          std::tie(b->kind, b->type, b->i, fb, b->space, b->unary_op, b->binary_op, b->shuffle_op)))
        return c;
    if (int c = a->name.compare(b->name)) return c;
    if (int c = three_way(a->args.size(), b->args.size())) return c;
    for (size_t k = 0; k < a->args.size(); ++k)
        if (int c = compare(a->args[k], b->args[k])) return c;
    return 0;
}

struct StructuralLess {
    bool operator()(const ExprPtr& a, const ExprPtr& b) const { return compare(a, b) < 0; }
};

// ---------------------------------------------------------------- what code reads and changes

struct Footprint {
    std::set<std::string> vars;  // variables read, or assigned
    std::set<std::string> mems;  // memories loaded, or written

    bool meets(const Footprint& o) const {
        auto overlap = [](const std::set<std::string>& a, const std::set<std::string>& b) {
            for (const auto& x : a)
                if (b.count(x)) return true;
            return false;
        };
        return overlap(vars, o.vars) || overlap(mems, o.mems);
    }
};

// What an expression reads.
class Reads : public IRVisitor {
public:
    Footprint f;
    using IRVisitor::visit;
    void visit(const ExprPtr& e) override {
        if (e->kind == ExprKind::Var) f.vars.insert(e->name);
        if (e->kind == ExprKind::Load) f.mems.insert(e->name);
        IRVisitor::visit(e);
    }
};

Footprint reads_of(const ExprPtr& e) {
    Reads r;
    r.visit(e);
    return std::move(r.f);
}

// What a statement (or block statement) may change when it runs.
class Writes : public IRVisitor {
public:
    Footprint f;
    using IRVisitor::visit;
    void visit(const StmtPtr& s) override {
        switch (s->kind) {
            case StmtKind::Assign:
            case StmtKind::For: f.vars.insert(s->name); break;
            case StmtKind::Store: f.mems.insert(s->name); break;
            case StmtKind::Atomic:
                f.mems.insert(s->name);
                if (!s->result.empty()) f.vars.insert(s->result);
                break;
            default: break;
        }
        IRVisitor::visit(s);
    }
    void visit(const BlockStmtPtr& b) override {
        if (b->kind == BlockStmtKind::BlockFor) f.vars.insert(b->var);
        IRVisitor::visit(b);
    }
};

template <class Node> Footprint writes_of(const Node& n) {
    Writes w;
    w.visit(n);
    return std::move(w.f);
}

// Compound, shuffle-free expressions: the values a Let may stand for.
bool is_value(const ExprPtr& e) {
    switch (e->kind) {
        case ExprKind::Load:
        case ExprKind::Unary:
        case ExprKind::Binary:
        case ExprKind::Select:
        case ExprKind::Cast:
        case ExprKind::Call: return !contains_shuffle(e);
        default: return false;
    }
}

// Names of the Lets this pass introduces until they are named for good; the
// verifier rejects the prefix, so no kernel name collides with them.
const char kTempPrefix[] = "shoal_cse_";

bool is_temp(const std::string& name) { return name.rfind(kTempPrefix, 0) == 0; }

bool is_leaf(const ExprPtr& e) { return e->args.empty(); }

// Values worth a variable of their own. A cast of a leaf costs nothing and
// stays visible as such (`(i64)threadIdx` is one of the verifier's
// warp-uniformity patterns); only a Let of one may be merged with another.
bool worth_sharing(const ExprPtr& e) { return is_value(e) && !(e->kind == ExprKind::Cast && is_leaf(e->args[0])); }

// One arithmetic operation on leaves (`threadIdx - 1`): reused when a Let
// already holds it, but not given a new variable, which would cost a line of
// the kernel's text to save the device compiler a trivial recomputation.
bool is_cheap(const ExprPtr& e) {
    if (e->kind == ExprKind::Load || e->kind == ExprKind::Call) return false;
    // Operands are value-numbered: a temporary stands for a compound value.
    auto leaf = [](const ExprPtr& a) { return is_leaf(a) && !(a->kind == ExprKind::Var && is_temp(a->name)); };
    for (const auto& a : e->args)
        if (!leaf(a) && !(a->kind == ExprKind::Cast && leaf(a->args[0]))) return false;
    return true;
}

// ---------------------------------------------------------------- value numbering

class ValueNumbering : public IRMutator {
public:
    explicit ValueNumbering(const Kernel& k) : mutable_vars_(assigned_variables(k)) {
        for (const auto& p : k.params)
            if (p.kind == ParamKind::Buffer && p.access != Access::Read) mutable_mems_.insert(p.name);
        for (const auto& a : k.shared) mutable_mems_.insert(a.name);
        scopes_.emplace_back();  // the kernel body
    }

    using IRMutator::mutate;

    ExprPtr mutate(const ExprPtr& e) override {
        if (e->kind == ExprKind::Var) {
            auto it = renames_.find(e->name);
            return it == renames_.end() ? e : var(it->second, e->type);
        }
        ExprPtr m = IRMutator::mutate(e);
        if (renames_only_ || !worth_sharing(m)) return m;
        auto it = available_.find(m);
        if (it != available_.end()) return var(it->second.var, m->type);
        if (!pending_ || is_cheap(m)) return m;
        Footprint reads = reads_of(m);
        // A loop bound evaluated on every trip may be bound before the loop
        // only if the loop cannot change it.
        if (loop_ && (reads.meets(*loop_) || loads_mutable(reads))) return m;
        std::string name = kTempPrefix + std::to_string(temps_++);
        pending_->push_back(let(name, m));
        remember(m, name, std::move(reads));
        return var(name, m->type);
    }

    StmtPtr mutate(const StmtPtr& s) override {
        switch (s->kind) {
            case StmtKind::Let: return mutate_let(s);
            case StmtKind::Assign: {
                StmtPtr m = IRMutator::mutate(s);
                forget_var(s->name);
                return m;
            }
            case StmtKind::Store:
            case StmtKind::Atomic: {
                StmtPtr m = IRMutator::mutate(s);
                forget(writes_of(s));
                return m;
            }
            case StmtKind::If:
            case StmtKind::Seq: {
                StmtPtr m = IRMutator::mutate(s);  // the condition, then each body in its own scope
                forget(writes_of(s));
                return m;
            }
            case StmtKind::For:
            case StmtKind::While: return mutate_loop(s);
            default: return IRMutator::mutate(s);
        }
    }

    BlockStmtPtr mutate(const BlockStmtPtr& b) override {
        if (b->kind == BlockStmtKind::Phase) {
            // The phase's top-level Lets live in the enclosing scope (ir.h).
            bool changed = false;
            StmtPtr code = b->phase->kind == StmtKind::Seq ? b->phase : seq({b->phase});
            std::vector<StmtPtr> body = rewrite_list(code->body, changed);
            forget_mutable_loads();  // the barrier: other threads' stores become visible
            return changed ? phase(seq(std::move(body))) : b;
        }
        const Footprint writes = writes_of(b);
        forget(writes);
        forget_mutable_loads();
        renames_.erase(b->var);
        Scope scope(*this);
        bool changed = false;
        auto body = mutate_all(b->body, changed);
        forget(writes);
        if (!changed) return b;
        auto copy = std::make_shared<BlockStmt>(*b);
        copy->body = std::move(body);
        return copy;
    }

protected:
    // A body is a scope.
    std::vector<StmtPtr> mutate_body(const std::vector<StmtPtr>& body, bool& changed) override {
        Scope scope(*this);
        return rewrite_list(body, changed);
    }

private:
    // Each statement's new Lets go right before it.
    std::vector<StmtPtr> rewrite_list(const std::vector<StmtPtr>& body, bool& changed) {
        std::vector<StmtPtr> out;
        for (const auto& s : body) {
            std::vector<StmtPtr> pending;
            StmtPtr m;
            {
                Context here(*this, &pending, nullptr);
                m = mutate(s);
            }
            changed = changed || !pending.empty() || m != s;
            out.insert(out.end(), pending.begin(), pending.end());
            if (m) out.push_back(std::move(m));
        }
        return out;
    }

    struct Entry {
        std::string var;
        Footprint reads;
    };

    // Values remembered in a scope are forgotten when it ends (their variables go out of scope).
    struct Scope {
        ValueNumbering& vn;
        explicit Scope(ValueNumbering& vn) : vn(vn) { vn.scopes_.emplace_back(); }
        ~Scope() {
            for (const auto& key : vn.scopes_.back()) vn.available_.erase(key);
            vn.scopes_.pop_back();
        }
    };

    // Where new Lets go, and the loop whose re-evaluated bound is being rewritten.
    struct Context {
        ValueNumbering& vn;
        std::vector<StmtPtr>* saved_pending;
        const Footprint* saved_loop;
        Context(ValueNumbering& vn, std::vector<StmtPtr>* pending, const Footprint* loop)
            : vn(vn), saved_pending(vn.pending_), saved_loop(vn.loop_) {
            vn.pending_ = pending;
            vn.loop_ = loop;
        }
        ~Context() {
            vn.pending_ = saved_pending;
            vn.loop_ = saved_loop;
        }
    };

    bool loads_mutable(const Footprint& reads) const {
        for (const auto& m : reads.mems)
            if (mutable_mems_.count(m)) return true;
        return false;
    }

    void remember(const ExprPtr& value, const std::string& name, Footprint reads) {
        auto [it, fresh] = available_.try_emplace(value, Entry{name, std::move(reads)});
        if (fresh) scopes_.back().push_back(value);
    }

    template <class Pred> void forget_if(Pred pred) {
        for (auto it = available_.begin(); it != available_.end();) it = pred(it->second) ? available_.erase(it) : ++it;
    }
    void forget(const Footprint& writes) {
        forget_if([&](const Entry& e) { return e.reads.meets(writes); });
    }
    void forget_var(const std::string& v) {
        forget_if([&](const Entry& e) { return e.reads.vars.count(v) > 0; });
    }
    void forget_mutable_loads() {
        forget_if([&](const Entry& e) { return loads_mutable(e.reads); });
    }

    StmtPtr mutate_let(const StmtPtr& s) {
        // Only the operands are bound: the Let itself names the value.
        const ExprPtr& original = s->exprs[0];
        ExprPtr value = original->kind == ExprKind::Var ? mutate(original) : IRMutator::mutate(original);
        if (is_value(value)) {
            auto it = available_.find(value);
            if (it != available_.end()) value = var(it->second.var, value->type);
        }
        renames_.erase(s->name);  // a new declaration of the name
        if (!mutable_vars_.count(s->name)) {
            // A second name for what an immutable variable holds: that variable
            // is visible wherever this one is, so uses switch to it.
            if (value->kind == ExprKind::Var && !mutable_vars_.count(value->name)) {
                renames_[s->name] = value->name;
                return nullptr;
            }
            if (is_value(value)) remember(value, s->name, reads_of(value));
        }
        return value == original ? s : let(s->name, value);
    }

    StmtPtr mutate_loop(const StmtPtr& s) {
        const Footprint writes = writes_of(s);
        forget(writes);
        forget_mutable_loads();  // a loop may be waiting for another thread's store
        auto copy = std::make_shared<Stmt>(*s);
        if (s->kind == StmtKind::For) {
            // lo runs once, hi and step on every trip: all are bound before the loop under the loop rule.
            Context bounds(*this, pending_, &writes);
            for (auto& e : copy->exprs) e = mutate(e);
            renames_.erase(s->name);
        } else {
            renames_only_ = true;
            copy->exprs[0] = mutate(s->exprs[0]);
            renames_only_ = false;
        }
        bool changed = false;
        copy->body = mutate_body(s->body, changed);
        forget(writes);
        return copy;
    }

    const std::set<std::string> mutable_vars_;
    std::set<std::string> mutable_mems_;
    std::map<ExprPtr, Entry, StructuralLess> available_;
    std::vector<std::vector<ExprPtr>> scopes_;   // keys of available_ added per scope
    std::map<std::string, std::string> renames_;  // immutable variable -> the variable holding its value
    std::vector<StmtPtr>* pending_ = nullptr;
    const Footprint* loop_ = nullptr;
    bool renames_only_ = false;
    int temps_ = 0;
};

// ---------------------------------------------------------------- the Lets that stay

class TempUses : public IRVisitor {
public:
    std::map<std::string, int> uses;
    using IRVisitor::visit;
    void visit(const ExprPtr& e) override {
        if (e->kind == ExprKind::Var && is_temp(e->name)) ++uses[e->name];
        IRVisitor::visit(e);
    }
};

// Puts a temporary used once back where it is used (that use saw the same
// value, or value numbering would not have reached for it), and gives the
// others their final names: cse, cse1, ...
class SettleTemps : public IRMutator {
public:
    explicit SettleTemps(const Kernel& k) : taken_(names_in(k)) {
        TempUses u;
        u.visit_kernel(k);
        uses_ = std::move(u.uses);
    }

    using IRMutator::mutate;

    ExprPtr mutate(const ExprPtr& e) override {
        if (e->kind != ExprKind::Var || !is_temp(e->name)) return IRMutator::mutate(e);
        auto inlined = inline_.find(e->name);
        if (inlined != inline_.end()) return inlined->second;
        return var(final_.at(e->name), e->type);
    }

    StmtPtr mutate(const StmtPtr& s) override {
        if (s->kind != StmtKind::Let || !is_temp(s->name)) return IRMutator::mutate(s);
        ExprPtr value = mutate(s->exprs[0]);
        if (uses_[s->name] <= 1) {
            inline_[s->name] = value;
            return nullptr;
        }
        return let(final_[s->name] = fresh(), value);
    }

private:
    std::string fresh() {
        for (;;) {
            std::string name = "cse" + (next_ ? std::to_string(next_) : std::string());
            ++next_;
            if (taken_.insert(name).second) return name;
        }
    }

    std::set<std::string> taken_;
    std::map<std::string, int> uses_;
    std::map<std::string, ExprPtr> inline_;
    std::map<std::string, std::string> final_;
    int next_ = 0;
};

}  // namespace

Kernel eliminate_common_subexpressions(const Kernel& k) {
    const Kernel numbered = ValueNumbering(k).mutate_kernel(k);
    return SettleTemps(numbered).mutate_kernel(numbered);
}

}  // namespace shoal::ir
