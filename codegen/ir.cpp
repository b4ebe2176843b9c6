#include "codegen/ir.h"

#include "lang/diagnostics.h"

namespace shoal::ir {

const char* scalar_name(ScalarType t) {
    switch (t) {
        case ScalarType::Bool: return "bool";
        case ScalarType::I32: return "i32";
        case ScalarType::I64: return "i64";
        case ScalarType::U32: return "u32";
        case ScalarType::U64: return "u64";
        case ScalarType::F32: return "f32";
        case ScalarType::F64: return "f64";
    }
    return "?";
}

const char* cuda_scalar_name(ScalarType t) {
    switch (t) {
        case ScalarType::Bool: return "bool";
        case ScalarType::I32: return "int";
        case ScalarType::I64: return "long long";
        case ScalarType::U32: return "unsigned";
        case ScalarType::U64: return "unsigned long long";
        case ScalarType::F32: return "float";
        case ScalarType::F64: return "double";
    }
    return "?";
}

size_t scalar_size(ScalarType t) {
    switch (t) {
        case ScalarType::Bool: return 1;
        case ScalarType::I32:
        case ScalarType::U32:
        case ScalarType::F32: return 4;
        default: return 8;
    }
}

bool is_float(ScalarType t) { return t == ScalarType::F32 || t == ScalarType::F64; }
bool is_signed_int(ScalarType t) { return t == ScalarType::I32 || t == ScalarType::I64; }
bool is_unsigned_int(ScalarType t) { return t == ScalarType::U32 || t == ScalarType::U64; }

ScalarType scalar_of(Prim p) {
    switch (p) {
        case Prim::Bool: return ScalarType::Bool;
        case Prim::Int: return ScalarType::I32;
        case Prim::Long: return ScalarType::I64;
        case Prim::Float: return ScalarType::F32;
        case Prim::Double: return ScalarType::F64;
    }
    return ScalarType::I32;
}

namespace {

std::shared_ptr<Expr> make(ExprKind k, ScalarType t) {
    auto e = std::make_shared<Expr>();
    e->kind = k;
    e->type = t;
    return e;
}

std::shared_ptr<Stmt> make_stmt(StmtKind k) {
    auto s = std::make_shared<Stmt>();
    s->kind = k;
    return s;
}

bool is_comparison(BinaryOp op) {
    return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le ||
           op == BinaryOp::Gt || op == BinaryOp::Ge;
}

}  // namespace

ExprPtr const_int(int64_t v, ScalarType t) {
    auto e = make(ExprKind::Const, t);
    if (is_float(t)) e->f = static_cast<double>(v);
    else e->i = v;
    return e;
}

ExprPtr const_float(double v, ScalarType t) {
    auto e = make(ExprKind::Const, t);
    e->f = v;
    return e;
}

ExprPtr const_bool(bool v) {
    auto e = make(ExprKind::Const, ScalarType::Bool);
    e->i = v ? 1 : 0;
    return e;
}

ExprPtr var(const std::string& name, ScalarType t) {
    auto e = make(ExprKind::Var, t);
    e->name = name;
    return e;
}

ExprPtr param(const std::string& name, ScalarType t) {
    auto e = make(ExprKind::Param, t);
    e->name = name;
    return e;
}

ExprPtr thread_idx() { return make(ExprKind::ThreadIdx, ScalarType::I32); }
ExprPtr block_idx() { return make(ExprKind::BlockIdx, ScalarType::I64); }
ExprPtr block_dim() { return make(ExprKind::BlockDim, ScalarType::I32); }
ExprPtr grid_dim() { return make(ExprKind::GridDim, ScalarType::I64); }

ExprPtr load(const std::string& mem, ExprPtr index, ScalarType t, MemSpace space) {
    auto e = make(ExprKind::Load, t);
    e->name = mem;
    e->space = space;
    e->args = {std::move(index)};
    return e;
}

ExprPtr unary(UnaryOp op, ExprPtr a) {
    auto e = make(ExprKind::Unary, a->type);
    e->unary_op = op;
    e->args = {std::move(a)};
    return e;
}

ExprPtr binary(BinaryOp op, ExprPtr a, ExprPtr b) {
    auto e = make(ExprKind::Binary, is_comparison(op) ? ScalarType::Bool : a->type);
    e->binary_op = op;
    e->args = {std::move(a), std::move(b)};
    return e;
}

ExprPtr select(ExprPtr c, ExprPtr a, ExprPtr b) {
    auto e = make(ExprKind::Select, a->type);
    e->args = {std::move(c), std::move(a), std::move(b)};
    return e;
}

ExprPtr cast(ScalarType t, ExprPtr a) {
    if (a->type == t) return a;
    auto e = make(ExprKind::Cast, t);
    e->args = {std::move(a)};
    return e;
}

ExprPtr call(const std::string& fn, std::vector<ExprPtr> args, ScalarType result) {
    auto e = make(ExprKind::Call, result);
    e->name = fn;
    e->args = std::move(args);
    return e;
}

ExprPtr shuffle(ShuffleOp op, ExprPtr value, ExprPtr lane_or_delta) {
    auto e = make(ExprKind::Shuffle, value->type);
    e->shuffle_op = op;
    e->args = {std::move(value), std::move(lane_or_delta)};
    return e;
}

StmtPtr let(const std::string& name, ExprPtr value) {
    auto s = make_stmt(StmtKind::Let);
    s->name = name;
    s->type = value->type;
    s->exprs = {std::move(value)};
    return s;
}

StmtPtr assign(const std::string& name, ExprPtr value) {
    auto s = make_stmt(StmtKind::Assign);
    s->name = name;
    s->type = value->type;
    s->exprs = {std::move(value)};
    return s;
}

StmtPtr store(const std::string& mem, ExprPtr index, ExprPtr value, MemSpace space) {
    auto s = make_stmt(StmtKind::Store);
    s->name = mem;
    s->space = space;
    s->type = value->type;
    s->exprs = {std::move(index), std::move(value)};
    return s;
}

StmtPtr if_then(ExprPtr cond, std::vector<StmtPtr> then_body, std::vector<StmtPtr> else_body) {
    auto s = make_stmt(StmtKind::If);
    s->exprs = {std::move(cond)};
    s->body = std::move(then_body);
    s->else_body = std::move(else_body);
    return s;
}

StmtPtr for_loop(const std::string& v, ExprPtr lo, ExprPtr hi, ExprPtr step, std::vector<StmtPtr> body) {
    auto s = make_stmt(StmtKind::For);
    s->name = v;
    s->type = lo->type;
    s->exprs = {std::move(lo), std::move(hi), std::move(step)};
    s->body = std::move(body);
    return s;
}

StmtPtr while_loop(ExprPtr cond, std::vector<StmtPtr> body) {
    auto s = make_stmt(StmtKind::While);
    s->exprs = {std::move(cond)};
    s->body = std::move(body);
    return s;
}

StmtPtr atomic(AtomicOp op, const std::string& mem, ExprPtr index, ExprPtr value, ScalarType t,
               const std::string& result, ExprPtr compare, MemSpace space) {
    auto s = make_stmt(StmtKind::Atomic);
    s->atomic_op = op;
    s->name = mem;
    s->type = t;
    s->space = space;
    s->result = result;
    s->exprs = {std::move(index), std::move(value)};
    if (compare) s->exprs.push_back(std::move(compare));
    return s;
}

StmtPtr error(int code, ExprPtr index, ExprPtr extent) {
    auto s = make_stmt(StmtKind::Error);
    s->error_code = code;
    s->exprs = {std::move(index), std::move(extent)};
    return s;
}

StmtPtr seq(std::vector<StmtPtr> body) {
    auto s = make_stmt(StmtKind::Seq);
    s->body = std::move(body);
    return s;
}

StmtPtr comment(const std::string& text) {
    auto s = make_stmt(StmtKind::Comment);
    s->name = text;
    return s;
}

BlockStmtPtr phase(StmtPtr code) {
    auto b = std::make_shared<BlockStmt>();
    b->kind = BlockStmtKind::Phase;
    b->phase = std::move(code);
    return b;
}

BlockStmtPtr block_for(const std::string& v, ExprPtr lo, ExprPtr hi, ExprPtr step, std::vector<BlockStmtPtr> body) {
    auto b = std::make_shared<BlockStmt>();
    b->kind = BlockStmtKind::BlockFor;
    b->var = v;
    b->range = {std::move(lo), std::move(hi), std::move(step)};
    b->body = std::move(body);
    return b;
}

}  // namespace shoal::ir
