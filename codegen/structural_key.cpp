#include "codegen/structural_key.h"

#include <cstring>

namespace shoal::ir {
namespace {

void put_byte(std::string& out, int v) { out.push_back(static_cast<char>(v)); }

void put_int(std::string& out, int64_t v) {
    char bytes[sizeof v];
    std::memcpy(bytes, &v, sizeof v);
    out.append(bytes, sizeof v);
}

void put_name(std::string& out, const std::string& s) {
    put_int(out, static_cast<int64_t>(s.size()));
    out += s;
}

void put_stmt(std::string& out, const StmtPtr& s);

void put_stmts(std::string& out, const std::vector<StmtPtr>& ss) {
    put_int(out, static_cast<int64_t>(ss.size()));
    for (const StmtPtr& s : ss) put_stmt(out, s);
}

void put_exprs(std::string& out, const std::vector<ExprPtr>& es) {
    put_int(out, static_cast<int64_t>(es.size()));
    for (const ExprPtr& e : es) append_key(out, e);
}

void put_stmt(std::string& out, const StmtPtr& s) {
    if (!s) return put_byte(out, 0xff);
    put_byte(out, static_cast<int>(s->kind));
    put_byte(out, static_cast<int>(s->type));
    put_byte(out, static_cast<int>(s->space));
    put_byte(out, static_cast<int>(s->atomic_op));
    put_int(out, s->error_code);
    put_name(out, s->name);
    put_name(out, s->result);
    put_exprs(out, s->exprs);
    put_stmts(out, s->body);
    put_stmts(out, s->else_body);
}

void put_block(std::string& out, const BlockStmtPtr& b) {
    if (!b) return put_byte(out, 0xff);
    put_byte(out, static_cast<int>(b->kind));
    put_stmt(out, b->phase);
    put_name(out, b->var);
    put_exprs(out, b->range);
    put_int(out, static_cast<int64_t>(b->body.size()));
    for (const BlockStmtPtr& c : b->body) put_block(out, c);
}

}  // namespace

void append_count(std::string& out, size_t n) { put_int(out, static_cast<int64_t>(n)); }

void append_key(std::string& out, const ExprPtr& e) {
    if (!e) return put_byte(out, 0xff);
    put_byte(out, static_cast<int>(e->kind));
    put_byte(out, static_cast<int>(e->type));
    switch (e->kind) {
        case ExprKind::Const: {
            int64_t bits = e->i;
            if (is_float(e->type)) std::memcpy(&bits, &e->f, sizeof bits);
            put_int(out, bits);
            break;
        }
        case ExprKind::Var:
        case ExprKind::Param:
        case ExprKind::Call: put_name(out, e->name); break;
        case ExprKind::Load:
            put_name(out, e->name);
            put_byte(out, static_cast<int>(e->space));
            break;
        case ExprKind::Unary: put_byte(out, static_cast<int>(e->unary_op)); break;
        case ExprKind::Binary: put_byte(out, static_cast<int>(e->binary_op)); break;
        case ExprKind::Shuffle: put_byte(out, static_cast<int>(e->shuffle_op)); break;
        default: break;
    }
    put_exprs(out, e->args);
}

void append_key(std::string& out, const Kernel& k) {
    put_name(out, k.name);
    put_int(out, k.block_size);
    put_int(out, static_cast<int64_t>(k.params.size()));
    for (const Param& p : k.params) {
        put_name(out, p.name);
        put_byte(out, static_cast<int>(p.kind));
        put_byte(out, static_cast<int>(p.type));
        put_byte(out, static_cast<int>(p.access));
    }
    put_int(out, static_cast<int64_t>(k.shared.size()));
    for (const SharedArray& s : k.shared) {
        put_name(out, s.name);
        put_byte(out, static_cast<int>(s.type));
        put_int(out, s.size);
    }
    put_int(out, static_cast<int64_t>(k.body.size()));
    for (const BlockStmtPtr& b : k.body) put_block(out, b);
    put_int(out, static_cast<int64_t>(k.checks.size()));
    for (const Check& c : k.checks) put_name(out, c.message);
}

}  // namespace shoal::ir
