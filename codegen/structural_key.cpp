#include "codegen/structural_key.h"

#include <algorithm>
#include <cstring>

namespace shoal::ir {

KeyWriter::KeyWriter(std::string& out) : out_(out), len_(out.size()) { out_.resize(len_ + 1024); }
KeyWriter::~KeyWriter() { out_.resize(len_); }

void KeyWriter::grow(size_t n) { out_.resize(std::max(out_.size() * 2, len_ + n)); }

void KeyWriter::expr(const ExprPtr& e) {
    if (!e) return byte(0xff);
    byte(static_cast<int>(e->kind));
    byte(static_cast<int>(e->type));
    switch (e->kind) {
        case ExprKind::Const: {
            int64_t bits = e->i;
            if (is_float(e->type)) std::memcpy(&bits, &e->f, sizeof bits);
            int64(bits);
            break;
        }
        case ExprKind::Var:
        case ExprKind::Param:
        case ExprKind::Call: name(e->name); break;
        case ExprKind::Load:
            name(e->name);
            byte(static_cast<int>(e->space));
            break;
        case ExprKind::Unary: byte(static_cast<int>(e->unary_op)); break;
        case ExprKind::Binary: byte(static_cast<int>(e->binary_op)); break;
        case ExprKind::Shuffle: byte(static_cast<int>(e->shuffle_op)); break;
        default: break;
    }
    exprs(e->args);
}

void KeyWriter::stmt(const StmtPtr& s) {
    if (!s) return byte(0xff);
    byte(static_cast<int>(s->kind));
    byte(static_cast<int>(s->type));
    byte(static_cast<int>(s->space));
    byte(static_cast<int>(s->atomic_op));
    int64(s->error_code);
    name(s->name);
    name(s->result);
    exprs(s->exprs);
    stmts(s->body);
    stmts(s->else_body);
}

void KeyWriter::block(const BlockStmtPtr& b) {
    if (!b) return byte(0xff);
    byte(static_cast<int>(b->kind));
    stmt(b->phase);
    name(b->var);
    exprs(b->range);
    int64(static_cast<int64_t>(b->body.size()));
    for (const BlockStmtPtr& c : b->body) block(c);
}

void KeyWriter::kernel(const Kernel& k) {
    name(k.name);
    int64(k.block_size);
    int64(static_cast<int64_t>(k.params.size()));
    for (const Param& p : k.params) {
        name(p.name);
        byte(static_cast<int>(p.kind));
        byte(static_cast<int>(p.type));
        byte(static_cast<int>(p.access));
    }
    int64(static_cast<int64_t>(k.shared.size()));
    for (const SharedArray& s : k.shared) {
        name(s.name);
        byte(static_cast<int>(s.type));
        int64(s.size);
    }
    int64(static_cast<int64_t>(k.body.size()));
    for (const BlockStmtPtr& b : k.body) block(b);
    int64(static_cast<int64_t>(k.checks.size()));
    for (const Check& c : k.checks) name(c.message);
}

void append_key(std::string& out, const ExprPtr& e) { KeyWriter(out).expr(e); }

}  // namespace shoal::ir
