#include "codegen/ir_visitor.h"

namespace shoal::ir {

void IRVisitor::visit(const ExprPtr& e) {
    for (const auto& a : e->args) visit(a);
}

void IRVisitor::visit(const StmtPtr& s) {
    for (const auto& e : s->exprs) visit(e);
    for (const auto& b : s->body) visit(b);
    for (const auto& b : s->else_body) visit(b);
}

void IRVisitor::visit(const BlockStmtPtr& b) {
    if (b->phase) visit(b->phase);
    for (const auto& e : b->range) visit(e);
    for (const auto& x : b->body) visit(x);
}

void IRVisitor::visit_kernel(const Kernel& k) {
    for (const auto& b : k.body) visit(b);
}

std::vector<ExprPtr> IRMutator::mutate_all(const std::vector<ExprPtr>& es, bool& changed) {
    std::vector<ExprPtr> out;
    out.reserve(es.size());
    for (const auto& e : es) {
        out.push_back(mutate(e));
        changed = changed || out.back() != e;
    }
    return out;
}

std::vector<StmtPtr> IRMutator::mutate_all(const std::vector<StmtPtr>& ss, bool& changed) {
    std::vector<StmtPtr> out;
    out.reserve(ss.size());
    for (const auto& s : ss) {
        StmtPtr m = mutate(s);
        changed = changed || m != s;
        if (m) out.push_back(std::move(m));
    }
    return out;
}

std::vector<BlockStmtPtr> IRMutator::mutate_all(const std::vector<BlockStmtPtr>& bs, bool& changed) {
    std::vector<BlockStmtPtr> out;
    out.reserve(bs.size());
    for (const auto& b : bs) {
        BlockStmtPtr m = mutate(b);
        changed = changed || m != b;
        if (m) out.push_back(std::move(m));
    }
    return out;
}

std::vector<StmtPtr> IRMutator::mutate_body(const std::vector<StmtPtr>& body, bool& changed) {
    return mutate_all(body, changed);
}

ExprPtr IRMutator::mutate(const ExprPtr& e) {
    bool changed = false;
    auto args = mutate_all(e->args, changed);
    if (!changed) return e;
    auto copy = std::make_shared<Expr>(*e);
    copy->args = std::move(args);
    return copy;
}

StmtPtr IRMutator::mutate(const StmtPtr& s) {
    bool changed = false;
    auto exprs = mutate_all(s->exprs, changed);
    auto body = mutate_body(s->body, changed);
    auto else_body = mutate_body(s->else_body, changed);
    if (!changed) return s;
    auto copy = std::make_shared<Stmt>(*s);
    copy->exprs = std::move(exprs);
    copy->body = std::move(body);
    copy->else_body = std::move(else_body);
    return copy;
}

BlockStmtPtr IRMutator::mutate(const BlockStmtPtr& b) {
    StmtPtr phase = b->phase ? mutate(b->phase) : nullptr;
    if (b->phase && !phase) return nullptr;  // the phase's code was deleted: so is the phase
    bool changed = phase != b->phase;
    auto range = mutate_all(b->range, changed);
    auto body = mutate_all(b->body, changed);
    if (!changed) return b;
    auto copy = std::make_shared<BlockStmt>(*b);
    copy->phase = std::move(phase);
    copy->range = std::move(range);
    copy->body = std::move(body);
    return copy;
}

Kernel IRMutator::mutate_kernel(const Kernel& k) {
    Kernel out = k;
    bool changed = false;
    out.body = mutate_all(k.body, changed);
    return out;
}

// ---------------------------------------------------------------- queries passes share
bool contains_shuffle(const ExprPtr& e) {
    if (e->kind == ExprKind::Shuffle) return true;
    for (const auto& a : e->args)
        if (contains_shuffle(a)) return true;
    return false;
}

namespace {

class NameCollector : public IRVisitor {
public:
    bool assigned_only = false;
    std::set<std::string> names;

    using IRVisitor::visit;
    void visit(const ExprPtr& e) override {
        if (!assigned_only && (e->kind == ExprKind::Var || e->kind == ExprKind::Param)) names.insert(e->name);
        IRVisitor::visit(e);
    }
    void visit(const StmtPtr& s) override {
        if (s->kind == StmtKind::Assign) names.insert(s->name);
        if (s->kind == StmtKind::Atomic && !s->result.empty()) names.insert(s->result);
        if (!assigned_only && (s->kind == StmtKind::Let || s->kind == StmtKind::For)) names.insert(s->name);
        IRVisitor::visit(s);
    }
    void visit(const BlockStmtPtr& b) override {
        if (!assigned_only && b->kind == BlockStmtKind::BlockFor) names.insert(b->var);
        IRVisitor::visit(b);
    }
};

}  // namespace

std::set<std::string> assigned_variables(const Kernel& k) {
    NameCollector c;
    c.assigned_only = true;
    c.visit_kernel(k);
    return std::move(c.names);
}

std::set<std::string> names_in(const Kernel& k) {
    NameCollector c;
    c.visit_kernel(k);
    for (const auto& p : k.params) c.names.insert(p.name);
    for (const auto& a : k.shared) c.names.insert(a.name);
    return std::move(c.names);
}

}  // namespace shoal::ir
