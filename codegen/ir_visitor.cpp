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
        out.push_back(mutate(s));
        changed = changed || out.back() != s;
    }
    return out;
}

std::vector<BlockStmtPtr> IRMutator::mutate_all(const std::vector<BlockStmtPtr>& bs, bool& changed) {
    std::vector<BlockStmtPtr> out;
    out.reserve(bs.size());
    for (const auto& b : bs) {
        out.push_back(mutate(b));
        changed = changed || out.back() != b;
    }
    return out;
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
    auto body = mutate_all(s->body, changed);
    auto else_body = mutate_all(s->else_body, changed);
    if (!changed) return s;
    auto copy = std::make_shared<Stmt>(*s);
    copy->exprs = std::move(exprs);
    copy->body = std::move(body);
    copy->else_body = std::move(else_body);
    return copy;
}

BlockStmtPtr IRMutator::mutate(const BlockStmtPtr& b) {
    bool changed = false;
    StmtPtr phase = b->phase ? mutate(b->phase) : nullptr;
    changed = phase != b->phase;
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

}  // namespace shoal::ir
