#include "codegen/dead_code.h"

#include <map>
#include <set>

#include "codegen/ir_visitor.h"

namespace shoal::ir {
namespace {

// Calls f(name) for every variable read in e except `self`.
template <class F> void for_each_read(const ExprPtr& e, const std::string& self, F&& f) {
    if (e->kind == ExprKind::Var && e->name != self) f(e->name);
    for (const auto& a : e->args) for_each_read(a, self, f);
}

// Reads of each variable outside its own definitions, and those definitions.
class Liveness : public IRVisitor {
public:
    std::map<std::string, int> reads;
    std::map<std::string, std::vector<ExprPtr>> defs;  // values of its Lets and assignments
    std::set<std::string> pinned;                      // never removed: loop variables, values with shuffles

    using IRVisitor::visit;
    void visit(const ExprPtr& e) override {
        for_each_read(e, "", [&](const std::string& v) { ++reads[v]; });
    }
    void visit(const StmtPtr& s) override {
        if (s->kind == StmtKind::Let || s->kind == StmtKind::Assign) {
            const ExprPtr& value = s->exprs[0];
            defs[s->name].push_back(value);
            if (contains_shuffle(value)) pinned.insert(s->name);
            for_each_read(value, s->name, [&](const std::string& v) { ++reads[v]; });
            return;
        }
        if (s->kind == StmtKind::For) pinned.insert(s->name);
        IRVisitor::visit(s);
    }
};

// Variables whose definitions can all go: unread once the unread ones are gone.
std::set<std::string> dead_variables(const Kernel& k) {
    Liveness l;
    l.visit_kernel(k);
    std::set<std::string> dead;
    std::vector<std::string> work;
    auto consider = [&](const std::string& v) {
        if (l.reads[v] == 0 && l.defs.count(v) && !l.pinned.count(v) && dead.insert(v).second) work.push_back(v);
    };
    for (const auto& [v, values] : l.defs) consider(v);
    while (!work.empty()) {
        const std::string v = work.back();
        work.pop_back();
        for (const auto& value : l.defs[v])
            for_each_read(value, v, [&](const std::string& w) {
                --l.reads[w];
                consider(w);
            });
    }
    return dead;
}

class DeadCodeRemover : public IRMutator {
public:
    explicit DeadCodeRemover(std::set<std::string> dead) : dead_(std::move(dead)) {}

    using IRMutator::mutate;

    ExprPtr mutate(const ExprPtr& e) override { return e; }  // expressions stay as they are

    StmtPtr mutate(const StmtPtr& s) override {
        switch (s->kind) {
            case StmtKind::Let:
            case StmtKind::Assign: return dead_.count(s->name) ? nullptr : s;
            case StmtKind::Atomic: {
                if (!dead_.count(s->result)) return s;
                auto copy = std::make_shared<Stmt>(*s);
                copy->result.clear();
                return copy;
            }
            case StmtKind::If:
            case StmtKind::For:
            case StmtKind::Seq: {
                StmtPtr m = IRMutator::mutate(s);
                const bool empty = m->body.empty() && m->else_body.empty();
                bool collective = false;
                for (const auto& e : m->exprs) collective = collective || contains_shuffle(e);
                return empty && !collective ? nullptr : m;
            }
            default: return IRMutator::mutate(s);
        }
    }

    // An empty phase's Seq is deleted above, and with it the phase (IRMutator).
    BlockStmtPtr mutate(const BlockStmtPtr& b) override {
        BlockStmtPtr m = IRMutator::mutate(b);
        return m && m->kind == BlockStmtKind::BlockFor && m->body.empty() ? nullptr : m;
    }

private:
    const std::set<std::string> dead_;
};

}  // namespace

Kernel eliminate_dead_code(const Kernel& k) {
    Kernel current = k;
    for (;;) {
        Kernel next = DeadCodeRemover(dead_variables(current)).mutate_kernel(current);
        if (next.body == current.body) return next;
        current = std::move(next);
    }
}

}  // namespace shoal::ir
