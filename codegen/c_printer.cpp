#include "codegen/c_printer.h"

#include <charconv>
#include <cmath>
#include <map>

#include "codegen/ir_visitor.h"
#include "codegen/thread_levels.h"
#include "lang/diagnostics.h"

namespace shoal::ir {

bool is_integer_type(ScalarType t) { return is_signed_int(t) || is_unsigned_int(t); }

namespace {

bool is_integer(ScalarType t) { return is_integer_type(t); }

// ---------------------------------------------------------------- shared helpers
// Pure C++ with Shoal's exact semantics (lang/scalar_semantics.h), the same in
// every dialect; SHOAL_FN stands for the dialect's function qualifier.
const std::map<int, const char*>& shared_helper_texts() {
    static const std::map<int, const char*> texts = {
        {2,  // WrapArith
         R"(// Signed arithmetic wraps in Shoal. In C++ signed overflow is undefined and
// the optimiser assumes it never happens, so it is done on unsigned types.
SHOAL_FN int shoal_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
SHOAL_FN int shoal_sub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
SHOAL_FN int shoal_mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
SHOAL_FN int shoal_neg(int a) { return (int)(0u - (unsigned)a); }
SHOAL_FN int shoal_shl(int a, int b) { return (int)((unsigned)a << (b & 31)); }
SHOAL_FN long long shoal_add(long long a, long long b) { return (long long)((unsigned long long)a + (unsigned long long)b); }
SHOAL_FN long long shoal_sub(long long a, long long b) { return (long long)((unsigned long long)a - (unsigned long long)b); }
SHOAL_FN long long shoal_mul(long long a, long long b) { return (long long)((unsigned long long)a * (unsigned long long)b); }
SHOAL_FN long long shoal_neg(long long a) { return (long long)(0ULL - (unsigned long long)a); }
SHOAL_FN long long shoal_shl(long long a, long long b) { return (long long)((unsigned long long)a << (b & 63)); }
)"},
        {3,  // DivMod
         R"(// Integer / and % with Shoal's rules: by zero gives 0; the most negative
// value / -1 wraps to itself and % -1 gives 0 (both undefined in C++).
SHOAL_FN int shoal_div(int a, int b) { return b == 0 ? 0 : b == -1 ? (int)(0u - (unsigned)a) : a / b; }
SHOAL_FN int shoal_mod(int a, int b) { return (b == 0 || b == -1) ? 0 : a % b; }
SHOAL_FN long long shoal_div(long long a, long long b) { return b == 0 ? 0LL : b == -1 ? (long long)(0ULL - (unsigned long long)a) : a / b; }
SHOAL_FN long long shoal_mod(long long a, long long b) { return (b == 0 || b == -1) ? 0LL : a % b; }
SHOAL_FN unsigned shoal_div(unsigned a, unsigned b) { return b == 0u ? 0u : a / b; }
SHOAL_FN unsigned shoal_mod(unsigned a, unsigned b) { return b == 0u ? 0u : a % b; }
SHOAL_FN unsigned long long shoal_div(unsigned long long a, unsigned long long b) { return b == 0ULL ? 0ULL : a / b; }
SHOAL_FN unsigned long long shoal_mod(unsigned long long a, unsigned long long b) { return b == 0ULL ? 0ULL : a % b; }
)"},
        {4,  // IntAbs
         R"(// abs of the most negative integer is itself (wraps), as in Shoal.
SHOAL_FN int shoal_abs(int a) { return a < 0 ? (int)(0u - (unsigned)a) : a; }
SHOAL_FN long long shoal_abs(long long a) { return a < 0 ? (long long)(0ULL - (unsigned long long)a) : a; }
)"},
        {5,  // FloatToInt
         R"(// Float -> integer with Shoal's rules: truncate toward zero, NaN -> 0, out of
// range saturates to the type's min/max (a plain C++ cast is undefined there;
// the CUDA documentation does not promise what __float2int_rz does).
template <typename I, typename F>
SHOAL_FN I shoal_saturate(F x, F lo, F hi, I min_value, I max_value) {
    if (x != x) return (I)0;
    if (x <= lo) return min_value;
    if (x >= hi) return max_value;
    return (I)x;
}
SHOAL_FN int shoal_to_i32(float x) { return shoal_saturate<int>(x, -2147483648.0f, 2147483648.0f, -2147483647 - 1, 2147483647); }
SHOAL_FN int shoal_to_i32(double x) { return shoal_saturate<int>(x, -2147483648.0, 2147483648.0, -2147483647 - 1, 2147483647); }
SHOAL_FN long long shoal_to_i64(float x) { return shoal_saturate<long long>(x, -9223372036854775808.0f, 9223372036854775808.0f, -9223372036854775807LL - 1, 9223372036854775807LL); }
SHOAL_FN long long shoal_to_i64(double x) { return shoal_saturate<long long>(x, -9223372036854775808.0, 9223372036854775808.0, -9223372036854775807LL - 1, 9223372036854775807LL); }
SHOAL_FN unsigned shoal_to_u32(float x) { return shoal_saturate<unsigned>(x, 0.0f, 4294967296.0f, 0u, 4294967295u); }
SHOAL_FN unsigned shoal_to_u32(double x) { return shoal_saturate<unsigned>(x, 0.0, 4294967296.0, 0u, 4294967295u); }
SHOAL_FN unsigned long long shoal_to_u64(float x) { return shoal_saturate<unsigned long long>(x, 0.0f, 18446744073709551616.0f, 0ULL, 18446744073709551615ULL); }
SHOAL_FN unsigned long long shoal_to_u64(double x) { return shoal_saturate<unsigned long long>(x, 0.0, 18446744073709551616.0, 0ULL, 18446744073709551615ULL); }
)"},
        {17,  // FloatPow
         R"(// x ** y on floats (lang/scalar_semantics.h, float_pow): the shorthand
// exponents are arithmetic, any other is pow. y = 0.5 keeps pow's special
// cases: +0 for -0, +inf for -inf (below the lowest finite value).
SHOAL_FN float shoal_pow(float x, float y) {
    if (y == 2.0f) return x * x;
    if (y == 1.0f) return x;
    if (y == -1.0f) return 1.0f / x;
    if (y == 3.0f) return x * x * x;
    if (y == 0.5f) return x == 0.0f ? 0.0f : x < -3.40282347e38f ? -x : SHOAL_LIBM_sqrtf(x);
    return SHOAL_LIBM_powf(x, y);
}
SHOAL_FN double shoal_pow(double x, double y) {
    if (y == 2.0) return x * x;
    if (y == 1.0) return x;
    if (y == -1.0) return 1.0 / x;
    if (y == 3.0) return x * x * x;
    if (y == 0.5) return x == 0.0 ? 0.0 : x < -1.7976931348623157e308 ? -x : SHOAL_LIBM_sqrt(x);
    return SHOAL_LIBM_pow(x, y);
}
)"},
    };
    return texts;
}


// Shortest decimal that reads back as the same value: exact round trip and
// readable ("0.1f", not "0x1.99999ap-4f").
template <typename F>
std::string shortest(F v) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    std::string s(buf, end);
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
}

}  // namespace

std::string int_literal(int64_t v, ScalarType t) {
    switch (t) {
        case ScalarType::Bool: return v ? "true" : "false";
        case ScalarType::I32:
            // -2147483648 is unary minus applied to a literal too big for int.
            return v == INT32_MIN ? "(-2147483647 - 1)" : std::to_string(v);
        case ScalarType::I64:
            return v == INT64_MIN ? "(-9223372036854775807LL - 1)" : std::to_string(v) + "LL";
        case ScalarType::U32: return std::to_string(static_cast<uint32_t>(v)) + "u";
        case ScalarType::U64: return std::to_string(static_cast<uint64_t>(v)) + "ULL";
        default: return std::to_string(v);
    }
}

// A constant divisor other than 0 and -1 divides exactly as C++ does, so
// `tid / 32` needs no helper.
bool plain_divisor(const Expr& b) { return b.kind == ExprKind::Const && b.i != 0 && b.i != -1; }

namespace {

// Which names are read and which are reassigned: unread declarations get
// [[maybe_unused]] (NVRTC warns about them otherwise), never-reassigned Lets
// are printed const.
class Usage : public IRVisitor {
public:
    std::set<std::string> read, assigned;

    using IRVisitor::visit;
    void visit(const ExprPtr& e) override {
        if (e->kind == ExprKind::Var || e->kind == ExprKind::Load) read.insert(e->name);
        IRVisitor::visit(e);
    }
    void visit(const StmtPtr& s) override {
        if (s->kind == StmtKind::Assign) assigned.insert(s->name);
        if (s->kind == StmtKind::Atomic && !s->result.empty()) assigned.insert(s->result);
        IRVisitor::visit(s);
    }
};

int count_phases(const std::vector<BlockStmtPtr>& body) {
    int n = 0;
    for (const auto& b : body) n += b->kind == BlockStmtKind::Phase ? 1 : count_phases(b->body);
    return n;
}

}  // namespace

const char* CLikePrinter::helper_name(Helper h) {
    static const char* const names[] = {
        "error record", "NaN/infinity constants", "wrapping arithmetic", "division and remainder by zero",
        "integer abs", "saturating float-to-int", "atomic add", "atomic min", "atomic max", "atomic bitwise",
        "atomic exchange", "atomic compare-and-swap", "integer min/max", "high half of a product",
        "thread ranges", "checked indices", "float exp and log", "float powers", "float min/max"};
    return names[static_cast<int>(h)];
}

std::string CLikePrinter::helper_text(Helper h) const {
    auto it = shared_helper_texts().find(static_cast<int>(h));
    SHOAL_INTERNAL_ASSERT(it != shared_helper_texts().end(),
                          std::string("the printer has no text for the helper group ") + helper_name(h));
    return replace_all(replace_all(it->second, "SHOAL_FN", function_qualifier()), "SHOAL_LIBM_", libm_prefix());
}

// ---------------------------------------------------------------- output

void CLikePrinter::line(const std::string& text) { out_ << std::string(4 * indent_, ' ') << text << '\n'; }

void CLikePrinter::open(const std::string& header) {
    line(header + " {");
    ++indent_;
}

void CLikePrinter::close() {
    --indent_;
    line("}");
}

void CLikePrinter::reopen(const std::string& header) {
    --indent_;
    line("} " + header + " {");
    ++indent_;
}

std::string CLikePrinter::prelude() const {
    std::string s;
    for (Helper h : helpers_) s += helper_text(h) + "\n";
    return s;
}

CudaUnit CLikePrinter::print_unit(const std::vector<Kernel>& kernels) {
    out_.str("");
    helpers_.clear();
    // A broken kernel fails here with verify's message, not as a crash or
    // a compiler error; the names share one C namespace.
    std::set<std::string> names;
    for (const auto& k : kernels) {
        verify(k);
        SHOAL_INTERNAL_ASSERT(names.insert(k.name).second, "two kernels named " + k.name + " in one unit");
    }
    for (size_t i = 0; i < kernels.size(); ++i) {
        if (i) out_ << '\n';
        print_kernel(kernels[i]);
    }
    CudaUnit unit;
    unit.prelude = prelude();
    for (Helper h : helpers_) unit.helpers.push_back(helper_name(h));
    unit.kernels = out_.str();
    return unit;
}

// ---------------------------------------------------------------- kernels

void CLikePrinter::begin_kernel(const Kernel& k) {
    kernel_ = &k;
    Usage usage;
    usage.visit_kernel(k);
    read_ = std::move(usage.read);
    assigned_ = std::move(usage.assigned);
    phase_count_ = count_phases(k.body);
    phase_number_ = 0;
}

// Every phase ends with a barrier except the kernel's last block statement
// (ir.h); the last phase of a BlockFor body keeps its barrier because the
// next iteration follows it.
void CLikePrinter::print_blocks(const std::vector<BlockStmtPtr>& body, bool top_level) {
    for (size_t i = 0; i < body.size(); ++i) {
        const BlockStmt& b = *body[i];
        if (b.kind == BlockStmtKind::BlockFor) {
            print_block_for(b);
            continue;
        }
        if (phase_count_ > 1) line("// phase " + std::to_string(phase_number_++));
        print_phase(b.phase);
        if (!(top_level && i + 1 == body.size())) print_barrier();
    }
}

// The top-level Seq of a phase is printed without braces: its Lets stay
// visible in the later phases (ir.h).
void CLikePrinter::print_phase(const StmtPtr& code) {
    if (code->kind == StmtKind::Seq) print_body(code->body);
    else print_stmt(code);
}

void CLikePrinter::print_block_for(const BlockStmt& b) {
    open("for (long long " + b.var + " = " + print_expr(b.range[0]) + "; " + b.var + " < " + print_expr(b.range[1]) +
         "; " + b.var + " += " + print_expr(b.range[2]) + ")");
    print_blocks(b.body, false);
    close();
}

// ---------------------------------------------------------------- statements

void CLikePrinter::print_body(const std::vector<StmtPtr>& body) {
    for (const auto& s : body) print_stmt(s);
}

void CLikePrinter::print_stmt(const StmtPtr& s) {
    switch (s->kind) {
        case StmtKind::Let: return print_let(*s);
        case StmtKind::Assign: return print_assign(*s);
        case StmtKind::Store: return print_store(*s);
        case StmtKind::If: return print_if(*s);
        case StmtKind::For: return print_for(*s);
        case StmtKind::While: return print_while(*s);
        case StmtKind::Atomic: return print_atomic(*s);
        case StmtKind::Error: return print_error(*s);
        case StmtKind::Seq: return print_seq(*s);
        case StmtKind::Comment: return print_comment(s->name);
    }
}

void CLikePrinter::print_let(const Stmt& s) {
    std::string prefix = read_.count(s.name) ? "" : "[[maybe_unused]] ";
    if (!assigned_.count(s.name)) prefix += "const ";
    line(prefix + type_name(s.type) + " " + s.name + " = " + print_expr(s.exprs[0]) + ";");
}

void CLikePrinter::print_assign(const Stmt& s) { line(variable(s.name) + " = " + print_expr(s.exprs[0]) + ";"); }

void CLikePrinter::print_store(const Stmt& s) {
    line(s.name + "[" + index(s.name, s.space, s.exprs[0]) + "] = " + print_expr(s.exprs[1]) + ";");
}

std::string CLikePrinter::index(const std::string&, MemSpace, const ExprPtr& i) { return print_expr(i); }

void CLikePrinter::print_if(const Stmt& s) {
    open("if (" + print_expr(s.exprs[0]) + ")");
    print_body(s.body);
    const Stmt* cur = &s;
    // else-if chains stay flat
    while (cur->else_body.size() == 1 && cur->else_body[0]->kind == StmtKind::If) {
        cur = cur->else_body[0].get();
        reopen("else if (" + print_expr(cur->exprs[0]) + ")");
        print_body(cur->body);
    }
    if (!cur->else_body.empty()) {
        reopen("else");
        print_body(cur->else_body);
    }
    close();
}

std::string CLikePrinter::for_header(const Stmt& s) {
    return "for (" + type_name(s.type) + " " + s.name + " = " + print_expr(s.exprs[0]) + "; " + s.name + " < " +
           print_expr(s.exprs[1]) + "; " + s.name + " += " + print_expr(s.exprs[2]) + ")";
}

void CLikePrinter::print_for(const Stmt& s) {
    open(for_header(s));
    if (cancel_levels_ && is_cancel_point(s, *cancel_levels_)) print_cancel_poll();
    print_body(s.body);
    close();
}

void CLikePrinter::print_while(const Stmt& s) {
    open("while (" + print_expr(s.exprs[0]) + ")");
    if (cancel_levels_) print_cancel_poll();
    print_body(s.body);
    close();
}

void CLikePrinter::print_check_comment(const Stmt& s) {
    const Check& c = kernel_->checks.at(s.error_code);
    std::string what = "check " + std::to_string(s.error_code) + ": " + c.message;
    if (c.loc.valid() && check_positions_)
        what += " (" + c.loc.position() + ")";
    print_comment(what);
}

void CLikePrinter::print_seq(const Stmt& s) {
    line("{");
    ++indent_;
    print_body(s.body);
    close();
}

// One `//` line per line of text. A backslash ending a line would splice the
// next source line into the comment, so it gets a visible suffix.
void CLikePrinter::print_comment(const std::string& text) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) {
        while (!l.empty() && (l.back() == ' ' || l.back() == '\r' || l.back() == '\t')) l.pop_back();
        if (!l.empty() && l.back() == '\\') l += " (end of line)";
        line(l.empty() ? "//" : "// " + l);
    }
}

// ---------------------------------------------------------------- expressions

std::string CLikePrinter::print_expr(const ExprPtr& e) {
    switch (e->kind) {
        case ExprKind::Const: return print_const(*e);
        case ExprKind::Var: return variable(e->name);
        case ExprKind::Param: return e->name;
        case ExprKind::ThreadIdx:
        case ExprKind::BlockIdx:
        case ExprKind::BlockDim:
        case ExprKind::GridDim: return print_special(*e);
        case ExprKind::Load: return print_load(*e);
        case ExprKind::Unary: return print_unary(*e);
        case ExprKind::Binary: return print_binary(*e);
        case ExprKind::Select: return print_select(*e);
        case ExprKind::Cast: return print_cast(*e);
        case ExprKind::Call: return print_call(*e);
        case ExprKind::Shuffle: return print_shuffle(*e);
    }
    return "";
}

// Expressions print without outer parentheses; as an operand, text that is
// not one unit gets them: an infix expression (a space outside brackets) or a
// prefix operator (also so that `-` and `-x` never fuse into `--x`).
std::string CLikePrinter::operand(const ExprPtr& e) {
    std::string s = print_expr(e);
    bool wrap = !s.empty() && (s[0] == '-' || s[0] == '!' || s[0] == '~');
    int depth = 0;
    for (char c : s) {
        if (c == '(' || c == '[') ++depth;
        else if (c == ')' || c == ']') --depth;
        else if (c == ' ' && depth == 0) wrap = true;
    }
    return wrap ? "(" + s + ")" : s;
}

std::string CLikePrinter::print_const(const Expr& e) {
    if (!is_float(e.type)) return int_literal(e.i, e.type);
    bool f32 = e.type == ScalarType::F32;
    const char* suffix = f32 ? "f32()" : "f64()";
    if (std::isnan(e.f) || std::isinf(e.f)) {
        need(Helper::SpecialFloats);
        std::string s = std::string(std::isnan(e.f) ? "shoal_nan_" : "shoal_inf_") + suffix;
        return std::isinf(e.f) && e.f < 0 ? "-" + s : s;
    }
    return f32 ? shortest(static_cast<float>(e.f)) + "f" : shortest(e.f);
}

std::string CLikePrinter::print_load(const Expr& e) { return e.name + "[" + index(e.name, e.space, e.args[0]) + "]"; }

std::string CLikePrinter::print_unary(const Expr& e) {
    const ExprPtr& a = e.args[0];
    switch (e.unary_op) {
        case UnaryOp::Neg:
            if (is_signed_int(e.type)) {
                need(Helper::WrapArith);
                return "shoal_neg(" + print_expr(a) + ")";
            }
            return "-" + operand(a);
        case UnaryOp::Not: return "!" + operand(a);
        case UnaryOp::BitNot: return "~" + operand(a);
    }
    return "";
}

std::string CLikePrinter::print_binary(const Expr& e) {
    const ExprPtr& a = e.args[0];
    const ExprPtr& b = e.args[1];
    ScalarType t = a->type;
    auto fn = [&](const std::string& name) { return name + "(" + print_expr(a) + ", " + print_expr(b) + ")"; };
    auto infix = [&](const char* op) { return operand(a) + " " + op + " " + operand(b); };
    bool wrap = is_signed_int(t);
    switch (e.binary_op) {
        case BinaryOp::Add:
            if (wrap) need(Helper::WrapArith);
            return wrap ? fn("shoal_add") : infix("+");
        case BinaryOp::Sub:
            if (wrap) need(Helper::WrapArith);
            return wrap ? fn("shoal_sub") : infix("-");
        case BinaryOp::Mul:
            if (wrap) need(Helper::WrapArith);
            return wrap ? fn("shoal_mul") : infix("*");
        case BinaryOp::Div:
            if (is_float(t) || plain_divisor(*b)) return infix("/");
            need(Helper::DivMod);
            return fn("shoal_div");
        case BinaryOp::Mod:
            if (is_float(t)) return fn(float_function("fmod", t));
            if (plain_divisor(*b)) return infix("%");
            need(Helper::DivMod);
            return fn("shoal_mod");
        case BinaryOp::Min: return is_float(t) ? fn(float_function("fmin", t)) : int_min_max("min", e);
        case BinaryOp::Max: return is_float(t) ? fn(float_function("fmax", t)) : int_min_max("max", e);
        // bool And/Or/Xor: Exprs have no side effects, so && and || mean the
        // same as the IR's non-short-circuit operators and keep the type bool.
        case BinaryOp::And: return infix(t == ScalarType::Bool ? "&&" : "&");
        case BinaryOp::Or: return infix(t == ScalarType::Bool ? "||" : "|");
        case BinaryOp::Xor: return infix(t == ScalarType::Bool ? "!=" : "^");
        case BinaryOp::Shl:
            if (wrap) {
                need(Helper::WrapArith);
                return fn("shoal_shl");
            }
            [[fallthrough]];
        case BinaryOp::Shr: {
            // Shift amounts are taken modulo the bit width (docs/semantics.md).
            int64_t bits = static_cast<int64_t>(scalar_size(t) * 8);
            const char* op = e.binary_op == BinaryOp::Shl ? " << " : " >> ";
            if (b->kind == ExprKind::Const && b->i >= 0 && b->i < bits) return operand(a) + op + print_expr(b);
            return operand(a) + op + "(" + operand(b) + " & " + int_literal(bits - 1, t) + ")";
        }
        case BinaryOp::Eq: return infix("==");
        case BinaryOp::Ne: return infix("!=");
        case BinaryOp::Lt: return infix("<");
        case BinaryOp::Le: return infix("<=");
        case BinaryOp::Gt: return infix(">");
        case BinaryOp::Ge: return infix(">=");
    }
    return "";
}

// Every operator binds tighter than ?:, so the parts need no parentheses.
std::string CLikePrinter::print_select(const Expr& e) {
    return "(" + print_expr(e.args[0]) + " ? " + print_expr(e.args[1]) + " : " + print_expr(e.args[2]) + ")";
}

std::string CLikePrinter::print_cast(const Expr& e) {
    const ExprPtr& a = e.args[0];
    ScalarType from = a->type, to = e.type;
    if (to == ScalarType::Bool) return "(" + operand(a) + " != 0)";
    if (is_float(from) && is_integer(to)) {
        need(Helper::FloatToInt);
        const char* fn = to == ScalarType::I32 ? "shoal_to_i32" : to == ScalarType::I64 ? "shoal_to_i64"
                         : to == ScalarType::U32 ? "shoal_to_u32" : "shoal_to_u64";
        return std::string(fn) + "(" + print_expr(a) + ")";
    }
    return "(" + type_name(to) + ")" + operand(a);
}

std::string CLikePrinter::float_function(const std::string& base, ScalarType t) {
    return base + (t == ScalarType::F32 ? "f" : "");
}

std::string CLikePrinter::int_min_max(const std::string& fn, const Expr& e) {
    return fn + "(" + print_expr(e.args[0]) + ", " + print_expr(e.args[1]) + ")";
}

std::string CLikePrinter::atomic_suffix(AtomicOp op) {
    switch (op) {
        case AtomicOp::Add: return "add";
        case AtomicOp::Min: return "min";
        case AtomicOp::Max: return "max";
        case AtomicOp::And: return "and";
        case AtomicOp::Or: return "or";
        case AtomicOp::Xor: return "xor";
        case AtomicOp::Exch: return "exch";
        case AtomicOp::CAS: return "cas";
    }
    return "?";
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    return s;
}

}  // namespace shoal::ir
