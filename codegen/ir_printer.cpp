// ir::to_string: the kernel IR as indented text, for `:ir`, SHOAL_DUMP_IR and
// internal-error messages. Python-like blocks (a header line ending in `:`
// and an indented body); `-- barrier --` wherever the kernel synchronises the
// block, i.e. after every phase except the kernel's last block statement
// (the rule of ir.h, the same places the CUDA printer puts __syncthreads()).
#include <charconv>
#include <cmath>
#include <sstream>

#include "codegen/ir.h"

namespace shoal::ir {
namespace {

// Shortest text that reads back as the same value ("0.1", "1e+10", "5.0").
template <typename F>
std::string shortest(F v) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    std::string s(buf, end);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
}

std::string float_const(double v, ScalarType t) {
    bool f32 = t == ScalarType::F32;
    if (std::isnan(v) || std::isinf(v)) {
        std::string s = std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf");
        return f32 ? "f32(" + s + ")" : s;
    }
    return f32 ? shortest(static_cast<float>(v)) + "f" : shortest(v);
}

std::string int_const(const Expr& e) {
    switch (e.type) {
        case ScalarType::Bool: return e.i ? "true" : "false";
        case ScalarType::I64: return std::to_string(e.i) + "L";
        case ScalarType::U32: return std::to_string(static_cast<uint32_t>(e.i)) + "u";
        case ScalarType::U64: return std::to_string(static_cast<uint64_t>(e.i)) + "uL";
        default: return std::to_string(e.i);
    }
}

}  // namespace

const char* binary_op_symbol(BinaryOp op) {
    switch (op) {
        case BinaryOp::Add: return "+";
        case BinaryOp::Sub: return "-";
        case BinaryOp::Mul: return "*";
        case BinaryOp::Div: return "/";
        case BinaryOp::Mod: return "%";
        case BinaryOp::Min: return "min";
        case BinaryOp::Max: return "max";
        case BinaryOp::And: return "&";
        case BinaryOp::Or: return "|";
        case BinaryOp::Xor: return "^";
        case BinaryOp::Shl: return "<<";
        case BinaryOp::Shr: return ">>";
        case BinaryOp::Eq: return "==";
        case BinaryOp::Ne: return "!=";
        case BinaryOp::Lt: return "<";
        case BinaryOp::Le: return "<=";
        case BinaryOp::Gt: return ">";
        case BinaryOp::Ge: return ">=";
    }
    return "?";
}

namespace {

const char* shuffle_name(ShuffleOp op) {
    switch (op) {
        case ShuffleOp::Xor: return "shfl_xor";
        case ShuffleOp::Up: return "shfl_up";
        case ShuffleOp::Down: return "shfl_down";
        case ShuffleOp::Idx: return "shfl_idx";
    }
    return "?";
}

const char* atomic_name(AtomicOp op) {
    switch (op) {
        case AtomicOp::Add: return "atomic_add";
        case AtomicOp::Min: return "atomic_min";
        case AtomicOp::Max: return "atomic_max";
        case AtomicOp::And: return "atomic_and";
        case AtomicOp::Or: return "atomic_or";
        case AtomicOp::Xor: return "atomic_xor";
        case AtomicOp::Exch: return "atomic_exch";
        case AtomicOp::CAS: return "atomic_cas";
    }
    return "?";
}

const char* access_name(Access a) {
    switch (a) {
        case Access::Read: return "read";
        case Access::Write: return "write";
        case Access::ReadWrite: return "readwrite";
    }
    return "?";
}

std::string expr_text(const ExprPtr& e);

// An operand of an operator: parenthesised unless it is atomic.
std::string operand(const ExprPtr& e) {
    std::string s = expr_text(e);
    bool compound = e && (e->kind == ExprKind::Unary ||
                          (e->kind == ExprKind::Binary && e->binary_op != BinaryOp::Min &&
                           e->binary_op != BinaryOp::Max) ||
                          (e->kind == ExprKind::Const && !s.empty() && s[0] == '-'));
    return compound ? "(" + s + ")" : s;
}

std::string args_text(const std::vector<ExprPtr>& args) {
    std::string s;
    for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + expr_text(args[i]);
    return s;
}

std::string arg(const Expr& e, size_t i) { return i < e.args.size() ? expr_text(e.args[i]) : "<missing>"; }

std::string expr_text(const ExprPtr& e) {
    if (!e) return "<null>";
    switch (e->kind) {
        case ExprKind::Const: return is_float(e->type) ? float_const(e->f, e->type) : int_const(*e);
        case ExprKind::Var:
        case ExprKind::Param: return e->name;
        case ExprKind::ThreadIdx: return "threadIdx";
        case ExprKind::BlockIdx: return "blockIdx";
        case ExprKind::BlockDim: return "blockDim";
        case ExprKind::GridDim: return "gridDim";
        case ExprKind::Load: return e->name + "[" + arg(*e, 0) + "]";
        case ExprKind::Unary: {
            const char* op = e->unary_op == UnaryOp::Neg ? "-" : e->unary_op == UnaryOp::Not ? "!" : "~";
            return op + (e->args.empty() ? "<missing>" : operand(e->args[0]));
        }
        case ExprKind::Binary: {
            if (e->args.size() != 2) return std::string(binary_op_symbol(e->binary_op)) + "(" + args_text(e->args) + ")";
            if (e->binary_op == BinaryOp::Min || e->binary_op == BinaryOp::Max)
                return std::string(binary_op_symbol(e->binary_op)) + "(" + args_text(e->args) + ")";
            return operand(e->args[0]) + " " + binary_op_symbol(e->binary_op) + " " + operand(e->args[1]);
        }
        case ExprKind::Select: return "select(" + args_text(e->args) + ")";
        case ExprKind::Cast: return std::string(scalar_name(e->type)) + "(" + args_text(e->args) + ")";
        case ExprKind::Call: return e->name + "(" + args_text(e->args) + ")";
        case ExprKind::Shuffle: return std::string(shuffle_name(e->shuffle_op)) + "(" + args_text(e->args) + ")";
    }
    return "<?>";
}

class TextPrinter {
public:
    explicit TextPrinter(bool positions = true) : positions_(positions) {}
    std::string kernel(const Kernel& k) {
        line("kernel " + k.name + " (block " + std::to_string(k.block_size) + ")");
        ++indent_;
        comment_lines(k.comment);
        for (const auto& p : k.params) {
            if (p.kind == ParamKind::Scalar) line("param " + p.name + ": " + scalar_name(p.type));
            else line("param " + p.name + ": " + scalar_name(p.type) + "[] " + access_name(p.access));
        }
        for (const auto& s : k.shared)
            line("shared " + s.name + ": " + scalar_name(s.type) + "[" + std::to_string(s.size) + "]");
        for (size_t i = 0; i < k.checks.size(); ++i)
            line("check " + std::to_string(i) + ": " + (positions_ ? check_text(k.checks[i]) : k.checks[i].message));
        --indent_;
        line("body:");
        ++indent_;
        blocks(k.body, true);
        return out_.str();
    }

private:
    static std::string check_text(const Check& c) {
        std::string s = c.message;
        if (c.loc.valid())
            s += " at " + c.loc.position();
        return s;
    }

    void line(const std::string& text) { out_ << std::string(2 * indent_, ' ') << text << '\n'; }

    void comment_lines(const std::string& text) {
        if (text.empty()) return;
        std::istringstream in(text);
        for (std::string l; std::getline(in, l);) line("// " + l);
    }

    // The kernel's last block statement is not followed by a barrier; every
    // other phase is, including the last phase of a BlockFor body.
    void blocks(const std::vector<BlockStmtPtr>& body, bool top_level) {
        if (body.empty()) line("pass");
        for (size_t i = 0; i < body.size(); ++i) {
            const BlockStmtPtr& b = body[i];
            if (!b) {
                line("<null block statement>");
                continue;
            }
            if (b->kind == BlockStmtKind::BlockFor) {
                block_for(*b);
                continue;
            }
            phase(b->phase);
            if (!(top_level && i + 1 == body.size())) line("-- barrier --");
        }
    }

    void block_for(const BlockStmt& b) {
        line("block for " + b.var + ": i64 in " + range(b.range) + ":");
        ++indent_;
        blocks(b.body, false);
        --indent_;
    }

    static std::string range(const std::vector<ExprPtr>& r) {
        if (r.size() != 3) return "<malformed range>";
        return "[" + expr_text(r[0]) + ", " + expr_text(r[1]) + ") step " + expr_text(r[2]);
    }

    void phase(const StmtPtr& code) {
        if (code && code->kind == StmtKind::Seq) body(code->body, false);
        else stmt(code);
    }

    void body(const std::vector<StmtPtr>& ss, bool indent) {
        if (indent) ++indent_;
        if (ss.empty()) line("pass");
        for (const auto& s : ss) stmt(s);
        if (indent) --indent_;
    }

    static std::string e(const Stmt& s, size_t i) {
        return i < s.exprs.size() ? expr_text(s.exprs[i]) : "<missing>";
    }

    void stmt(const StmtPtr& s) {
        if (!s) return line("<null statement>");
        switch (s->kind) {
            case StmtKind::Let: return line("let " + s->name + ": " + scalar_name(s->type) + " = " + e(*s, 0));
            case StmtKind::Assign: return line(s->name + " = " + e(*s, 0));
            case StmtKind::Store: return line(s->name + "[" + e(*s, 0) + "] = " + e(*s, 1));
            case StmtKind::If: return if_stmt(*s);
            case StmtKind::For:
                line("for " + s->name + ": " + scalar_name(s->type) + " in " + range(s->exprs) + ":");
                return body(s->body, true);
            case StmtKind::While:
                line("while " + e(*s, 0) + ":");
                return body(s->body, true);
            case StmtKind::Atomic: return line(atomic_text(*s));
            case StmtKind::Error:
                return line("error " + std::to_string(s->error_code) + " (index " + e(*s, 0) + ", extent " + e(*s, 1) +
                            ")");
            case StmtKind::Seq:
                line("scope:");
                return body(s->body, true);
            case StmtKind::Comment: return comment_lines(s->name);
        }
    }

    void if_stmt(const Stmt& s) {
        line("if " + e(s, 0) + ":");
        body(s.body, true);
        if (s.else_body.empty()) return;
        line("else:");
        body(s.else_body, true);
    }

    static std::string atomic_text(const Stmt& s) {
        std::string where = s.name + "[" + e(s, 0) + "]";
        std::string call = s.atomic_op == AtomicOp::CAS
                               ? "atomic_cas(" + where + ", " + e(s, 2) + " -> " + e(s, 1) + ")"
                               : std::string(atomic_name(s.atomic_op)) + "(" + where + ", " + e(s, 1) + ")";
        return (s.result.empty() ? "" : s.result + " = ") + call;
    }

    bool positions_ = true;
    std::ostringstream out_;
    int indent_ = 0;
};

}  // namespace

std::string to_string(const Kernel& k) { return TextPrinter().kernel(k); }
std::string to_string_without_positions(const Kernel& k) { return TextPrinter(false).kernel(k); }

std::string to_string(const ExprPtr& e) { return expr_text(e); }

}  // namespace shoal::ir
