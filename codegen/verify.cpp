// ir::verify: the invariants of the kernel IR (codegen/ir.h), checked after
// every lowering so that a broken kernel fails loudly here, naming the kernel,
// the place and the invariant, instead of miscompiling in the CUDA printer or
// misbehaving in the CPU executor.
//
// Besides what ir.h lists, verify enforces what the printer and the executor
// rely on:
// - names are C identifiers, not C++/CUDA keywords or builtins, not starting
//   with `shoal_` (reserved for the printer's helpers); a declaration never
//   shadows a visible name, and one name has one type in the whole kernel
//   (reuse in sibling scopes is fine), so a flat name -> type map is sound;
// - loop variables (For, BlockFor) and parameters are never assigned;
// - global indices are I64, shared indices I32, Error operands I64;
// - Write buffers are never loaded (declare ReadWrite), Read buffers never
//   stored to or updated atomically; atomics on bool memory do not exist and
//   And/Or/Xor atomics need integers;
// - a kernel with shuffles has a block size that is a multiple of 32; static
//   shared memory fits in 48 KiB; 1 <= block_size <= 1024.
//
// Uniformity: a Shuffle needs all 32 lanes of its warp, so it may appear only
// under control whose condition/range is the same for a whole warp. Levels
// form a lattice Block < Warp < Thread. Variables get the join of every value
// assigned to them and of the control they are assigned under, computed by a
// flow-insensitive fixed point (sound, and simple). Loads and shuffles are
// Thread level (other threads or blocks may write the location); ThreadIdx is
// Thread, but `threadIdx / 32k`, `threadIdx >> (5+)` and comparisons of
// threadIdx against a multiple of 32 are Warp level, which admits the usual
// `if (warp == 0) { warp reduction }`.
#include <cctype>
#include <map>
#include <set>
#include <unordered_set>

#include "codegen/ir.h"
#include "codegen/ir_visitor.h"
#include "lang/diagnostics.h"

namespace shoal::ir {
namespace {

constexpr int64_t kMaxBlockSize = 1024;
constexpr int64_t kMaxStaticShared = 48 * 1024;  // bytes of __shared__ per block without opt-in
constexpr int kWarpSize = 32;

enum class Level : uint8_t { Block, Warp, Thread };

Level join(Level a, Level b) { return a > b ? a : b; }

const char* level_name(Level l) {
    switch (l) {
        case Level::Block: return "block-uniform";
        case Level::Warp: return "warp-uniform";
        case Level::Thread: return "thread-dependent";
    }
    return "?";
}

bool is_integer(ScalarType t) { return is_signed_int(t) || is_unsigned_int(t); }
bool is_numeric(ScalarType t) { return t != ScalarType::Bool; }

bool is_comparison(BinaryOp op) {
    return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le ||
           op == BinaryOp::Gt || op == BinaryOp::Ge;
}

// Names the printer emits itself or that C++/CUDA reserve. A variable called
// `max` would hide the max() the printer calls; one called `float` would not
// compile.
const std::unordered_set<std::string>& reserved_names() {
    static const std::unordered_set<std::string> names = {
        // C++ keywords and alternative tokens
        "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case",
        "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval",
        "constexpr", "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype",
        "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern",
        "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace",
        "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected",
        "public", "register", "reinterpret_cast", "requires", "return", "short", "signed", "sizeof",
        "static", "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
        "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual",
        "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
        // CUDA builtins and the functions the printer calls
        "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "ShoalError", "sqrt", "sqrtf", "exp",
        "expf", "log", "logf", "sin", "sinf", "cos", "cosf", "tan", "tanf", "asin", "asinf", "acos", "acosf",
        "atan", "atanf", "atan2", "atan2f", "sinh", "sinhf", "cosh", "coshf", "tanh", "tanhf", "fabs",
        "fabsf", "floor", "floorf", "ceil", "ceilf", "round", "roundf", "fmin", "fminf", "fmax", "fmaxf",
        "pow", "powf", "erf", "erff", "fmod", "fmodf", "abs", "min", "max", "atomicAdd", "atomicMin",
        "atomicMax", "atomicAnd", "atomicOr", "atomicXor", "atomicExch", "atomicCAS",
    };
    return names;
}

bool is_identifier(const std::string& s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (char c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
}

// Why `name` cannot name a kernel, parameter, shared array or variable ("" if it can).
std::string bad_name_reason(const std::string& name) {
    if (!is_identifier(name)) return "is not a C identifier";
    if (reserved_names().count(name)) return "is a C++/CUDA keyword or a function the printer uses";
    if (name.rfind("shoal_", 0) == 0) return "starts with shoal_ (reserved for the printer's helpers)";
    if (name.rfind("__", 0) == 0 || (name.size() > 1 && name[0] == '_' && std::isupper(static_cast<unsigned char>(name[1]))))
        return "is reserved by C++ (leading __ or _ and an upper-case letter)";
    return "";
}

struct CallSig {
    int arity;
    enum Kind { Float, Numeric, Integer, Bits } kind;  // Bits: float argument, unsigned result of its width
};

const std::map<std::string, CallSig>& call_signatures() {
    static const std::map<std::string, CallSig> sigs = {
        {"sqrt", {1, CallSig::Float}},  {"exp", {1, CallSig::Float}},   {"log", {1, CallSig::Float}},
        {"sin", {1, CallSig::Float}},   {"cos", {1, CallSig::Float}},   {"tan", {1, CallSig::Float}},
        {"asin", {1, CallSig::Float}},  {"acos", {1, CallSig::Float}},  {"atan", {1, CallSig::Float}},
        {"atan2", {2, CallSig::Float}}, {"sinh", {1, CallSig::Float}},  {"cosh", {1, CallSig::Float}},
        {"tanh", {1, CallSig::Float}},  {"floor", {1, CallSig::Float}}, {"ceil", {1, CallSig::Float}},
        {"round", {1, CallSig::Float}}, {"pow", {2, CallSig::Float}},   {"erf", {1, CallSig::Float}},
        {"fmod", {2, CallSig::Float}},  {"abs", {1, CallSig::Numeric}}, {"min", {2, CallSig::Numeric}},
        {"max", {2, CallSig::Numeric}}, {"mulhi", {2, CallSig::Integer}}, {"bits", {1, CallSig::Bits}},
    };
    return sigs;
}

size_t expected_args(ExprKind k) {
    switch (k) {
        case ExprKind::Load:
        case ExprKind::Unary:
        case ExprKind::Cast: return 1;
        case ExprKind::Binary:
        case ExprKind::Shuffle: return 2;
        case ExprKind::Select: return 3;
        default: return 0;
    }
}

bool const_fits(const Expr& e) {
    switch (e.type) {
        case ScalarType::Bool: return e.i == 0 || e.i == 1;
        case ScalarType::I32: return e.i >= INT32_MIN && e.i <= INT32_MAX;
        case ScalarType::U32: return e.i >= 0 && e.i <= static_cast<int64_t>(UINT32_MAX);
        default: return true;  // I64, U64 (bit pattern), floats
    }
}

// `threadIdx.x`, possibly widened: the shape warp-uniformity patterns look for.
bool is_thread_idx(const ExprPtr& e) {
    if (e->kind == ExprKind::ThreadIdx) return true;
    return e->kind == ExprKind::Cast && is_integer(e->type) && e->args[0]->kind == ExprKind::ThreadIdx;
}

// Variables that are just a name for threadIdx (`let tid = threadIdx`, never
// reassigned): lowering code binds threadIdx once and computes `tid / 32`.
class ThreadIdxAliases : public IRVisitor {
public:
    explicit ThreadIdxAliases(const Kernel& k) { visit_kernel(k); }
    bool contains(const std::string& name) const {
        auto it = defs_.find(name);
        return it != defs_.end() && it->second == 1 && aliases_.count(name);
    }

    using IRVisitor::visit;
    void visit(const StmtPtr& s) override {
        if (!s) return;
        if (s->kind == StmtKind::Let || s->kind == StmtKind::Assign || s->kind == StmtKind::For) ++defs_[s->name];
        if (s->kind == StmtKind::Atomic && !s->result.empty()) ++defs_[s->result];
        if (s->kind == StmtKind::Let && s->exprs.size() == 1 && s->exprs[0] && is_thread_idx(s->exprs[0]))
            aliases_.insert(s->name);
        IRVisitor::visit(s);
    }
    void visit(const ExprPtr& e) override {
        if (e) IRVisitor::visit(e);
    }
    void visit(const BlockStmtPtr& b) override {
        if (!b) return;
        ++defs_[b->var];
        IRVisitor::visit(b);
    }

private:
    std::map<std::string, int> defs_;
    std::set<std::string> aliases_;
};

bool is_const_int(const ExprPtr& e, int64_t& v) {
    if (e->kind != ExprKind::Const || !is_integer(e->type)) return false;
    v = e->i;
    return true;
}

// `threadIdx / 32k`, `threadIdx >> s` (s >= 5), `threadIdx < 32k` and friends:
// the same value for all lanes of a warp when the block size is a multiple of 32.
bool is_warp_pattern(const Expr& e, const ThreadIdxAliases& aliases) {
    if (e.kind != ExprKind::Binary) return false;
    const ExprPtr& a = e.args[0];
    bool tid = is_thread_idx(a) || (a->kind == ExprKind::Var && aliases.contains(a->name)) ||
               (a->kind == ExprKind::Cast && a->args[0]->kind == ExprKind::Var && aliases.contains(a->args[0]->name));
    if (!tid) return false;
    int64_t c = 0;
    if (!is_const_int(e.args[1], c)) return false;
    switch (e.binary_op) {
        case BinaryOp::Div: return c > 0 && c % kWarpSize == 0;
        case BinaryOp::Shr: return c >= 5;
        case BinaryOp::Lt:
        case BinaryOp::Ge: return c % kWarpSize == 0;
        case BinaryOp::Le:
        case BinaryOp::Gt: return (c + 1) % kWarpSize == 0;
        default: return false;
    }
}

// ---------------------------------------------------------------- uniformity

// The flow-insensitive fixed point over variables described at the top.
class Uniformity {
public:
    explicit Uniformity(const Kernel& k) : aliases_(k) {
        for (bool changed = true; changed;) {
            changed_ = false;
            for (const auto& b : k.body) block(b);
            changed = changed_;
        }
    }

    Level of(const ExprPtr& e) const {
        if (!e) return Level::Thread;
        switch (e->kind) {
            case ExprKind::Const:
            case ExprKind::Param:
            case ExprKind::BlockIdx:
            case ExprKind::BlockDim:
            case ExprKind::GridDim: return Level::Block;
            case ExprKind::ThreadIdx:
            case ExprKind::Load:
            case ExprKind::Shuffle: return Level::Thread;
            case ExprKind::Var: {
                auto it = vars_.find(e->name);
                return it == vars_.end() ? Level::Block : it->second;
            }
            default: break;
        }
        if (is_warp_pattern(*e, aliases_)) return Level::Warp;
        Level l = Level::Block;
        for (const auto& a : e->args) l = join(l, of(a));
        return l;
    }

private:
    void raise(const std::string& name, Level l) {
        Level& cur = vars_.try_emplace(name, Level::Block).first->second;
        if (l > cur) {
            cur = l;
            changed_ = true;
        }
    }

    void block(const BlockStmtPtr& b) {
        if (!b) return;
        if (b->phase) stmt(b->phase, Level::Block);
        for (const auto& x : b->body) block(x);
    }

    void stmts(const std::vector<StmtPtr>& ss, Level control) {
        for (const auto& s : ss) stmt(s, control);
    }

    void stmt(const StmtPtr& s, Level control) {
        if (!s) return;
        switch (s->kind) {
            case StmtKind::Let:
            case StmtKind::Assign:
                if (!s->exprs.empty()) raise(s->name, join(control, of(s->exprs[0])));
                break;
            case StmtKind::If: {
                Level c = join(control, s->exprs.empty() ? Level::Thread : of(s->exprs[0]));
                stmts(s->body, c);
                stmts(s->else_body, c);
                break;
            }
            case StmtKind::For: {
                Level c = control;
                for (const auto& e : s->exprs) c = join(c, of(e));
                raise(s->name, c);
                stmts(s->body, c);
                break;
            }
            case StmtKind::While:
                stmts(s->body, join(control, s->exprs.empty() ? Level::Thread : of(s->exprs[0])));
                break;
            case StmtKind::Atomic:
                if (!s->result.empty()) raise(s->result, Level::Thread);
                break;
            case StmtKind::Seq: stmts(s->body, control); break;
            default: break;
        }
    }

    ThreadIdxAliases aliases_;
    std::map<std::string, Level> vars_;
    bool changed_ = false;
};

// ---------------------------------------------------------------- the verifier

enum class VarKind : uint8_t { Local, LoopVar, BlockVar };

struct VarInfo {
    ScalarType type;
    VarKind kind;
};

class Verifier {
public:
    explicit Verifier(const Kernel& k) : k_(k), uniformity_(k) {}

    void run() {
        check_header();
        scopes_.emplace_back();  // the function body
        check_blocks(k_.body);
        if (has_shuffle_ && k_.block_size % kWarpSize != 0)
            fail("a kernel with warp shuffles needs a block size that is a multiple of 32, not " +
                 std::to_string(k_.block_size));
    }

private:
    // ------------------------------------------------------------ reporting
    [[noreturn]] void fail(const std::string& what) const {
        std::string where;
        for (const auto& f : where_) where += (where.empty() ? "" : " > ") + f;
        internal_error(__FILE__, __LINE__,
                       "invalid kernel IR in kernel '" + k_.name + "'" + (where.empty() ? "" : " at " + where) +
                           ": " + what);
    }

    void require(bool ok, const std::string& what) const {
        if (!ok) fail(what);
    }

    struct Frame {
        Verifier& v;
        Frame(Verifier& v, std::string f) : v(v) { v.where_.push_back(std::move(f)); }
        ~Frame() { v.where_.pop_back(); }
    };

    struct Scope {
        Verifier& v;
        explicit Scope(Verifier& v) : v(v) { v.scopes_.emplace_back(); }
        ~Scope() { v.scopes_.pop_back(); }
    };

    static std::string show(const ExprPtr& e) { return "`" + to_string(e) + "`"; }

    // ------------------------------------------------------------ declarations
    void check_name(const std::string& name, const char* what) const {
        std::string why = bad_name_reason(name);
        require(why.empty(), std::string(what) + " name '" + name + "' " + why);
    }

    void check_header() {
        check_name(k_.name, "kernel");
        require(k_.block_size >= 1 && k_.block_size <= kMaxBlockSize,
                "block size " + std::to_string(k_.block_size) + " is outside 1..1024");
        for (const auto& p : k_.params) {
            check_name(p.name, "parameter");
            require(globals_.insert(p.name).second, "parameter '" + p.name + "' is declared twice");
        }
        int64_t shared_bytes = 0;
        for (const auto& s : k_.shared) {
            check_name(s.name, "shared array");
            require(globals_.insert(s.name).second,
                    "shared array '" + s.name + "' reuses the name of a parameter or shared array");
            require(s.size > 0, "shared array '" + s.name + "' has size " + std::to_string(s.size));
            shared_bytes += s.size * static_cast<int64_t>(scalar_size(s.type));
        }
        require(shared_bytes <= kMaxStaticShared,
                "shared arrays take " + std::to_string(shared_bytes) + " bytes, over the 48 KiB static limit");
    }

    const Param* find_param(const std::string& name) const {
        for (const auto& p : k_.params)
            if (p.name == name) return &p;
        return nullptr;
    }

    const SharedArray* find_shared(const std::string& name) const {
        for (const auto& s : k_.shared)
            if (s.name == name) return &s;
        return nullptr;
    }

    const VarInfo* find_var(const std::string& name) const {
        for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
            auto f = it->find(name);
            if (f != it->end()) return &f->second;
        }
        return nullptr;
    }

    void declare(const std::string& name, ScalarType t, VarKind kind) {
        check_name(name, "variable");
        require(!globals_.count(name), "variable '" + name + "' reuses the name of a parameter or shared array");
        require(!find_var(name), "variable '" + name + "' is declared again while the first is visible");
        auto [it, fresh] = var_types_.try_emplace(name, t);
        require(fresh || it->second == t, "variable '" + name + "' is declared as " + scalar_name(t) +
                                              " here and as " + scalar_name(it->second) + " elsewhere");
        scopes_.back().emplace(name, VarInfo{t, kind});
    }

    // ------------------------------------------------------------ block level
    void check_blocks(const std::vector<BlockStmtPtr>& body) {
        int n = 0;
        for (const auto& b : body) {
            require(b != nullptr, "null block statement");
            if (b->kind == BlockStmtKind::Phase) {
                Frame f(*this, "phase " + std::to_string(n++));
                require(b->phase != nullptr, "phase without code");
                check_phase_code(b->phase);
            } else {
                check_block_for(*b);
            }
        }
    }

    // Top-level Lets of a phase live in the enclosing (function or BlockFor) scope.
    void check_phase_code(const StmtPtr& code) {
        if (code->kind == StmtKind::Seq) {
            for (const auto& s : code->body) check_stmt(s, Level::Block);
        } else {
            check_stmt(code, Level::Block);
        }
    }

    void check_block_for(const BlockStmt& b) {
        Frame f(*this, "block for " + b.var);
        require(b.range.size() == 3, "BlockFor needs {lo, hi, step}");
        for (const auto& e : b.range) {
            require(e != nullptr, "null BlockFor bound");
            check_expr(e, Level::Block);
            require(e->type == ScalarType::I64, "BlockFor bound " + show(e) + " has type " +
                                                    scalar_name(e->type) + ", not i64");
            check_block_uniform(e);
        }
        check_positive_step(b.range[2]);
        Scope scope(*this);
        declare(b.var, ScalarType::I64, VarKind::BlockVar);
        check_blocks(b.body);
    }

    // BlockFor bounds are evaluated once per block: only parameters, block
    // coordinates, constants and enclosing BlockFor variables may appear.
    void check_block_uniform(const ExprPtr& e) const {
        switch (e->kind) {
            case ExprKind::ThreadIdx:
                fail("BlockFor bound uses threadIdx; bounds must be uniform across the block");
            case ExprKind::Load:
                fail("BlockFor bound loads '" + e->name + "'; bounds must be uniform across the block");
            case ExprKind::Shuffle: fail("BlockFor bound uses a shuffle; bounds must be uniform across the block");
            case ExprKind::Var: {
                const VarInfo* v = find_var(e->name);
                require(v && v->kind == VarKind::BlockVar,
                        "BlockFor bound uses thread-local variable '" + e->name +
                            "'; bounds must be uniform across the block");
                break;
            }
            default: break;
        }
        for (const auto& a : e->args) check_block_uniform(a);
    }

    void check_positive_step(const ExprPtr& step) const {
        if (step->kind == ExprKind::Const && is_integer(step->type))
            require(step->i > 0, "loop step " + show(step) + " is not positive");
    }

    // ------------------------------------------------------------ statements
    void check_body(const std::vector<StmtPtr>& body, Level control) {
        Scope scope(*this);
        for (const auto& s : body) check_stmt(s, control);
    }

    void require_exprs(const Stmt& s, size_t n, const char* what) const {
        require(s.exprs.size() == n, std::string(what) + " needs " + std::to_string(n) + " expressions, has " +
                                         std::to_string(s.exprs.size()));
        for (const auto& e : s.exprs) require(e != nullptr, std::string(what) + " has a null expression");
    }

    void check_stmt(const StmtPtr& s, Level control) {
        require(s != nullptr, "null statement");
        switch (s->kind) {
            case StmtKind::Let: return check_let(*s, control);
            case StmtKind::Assign: return check_assign(*s, control);
            case StmtKind::Store: return check_store(*s, control);
            case StmtKind::If: return check_if(*s, control);
            case StmtKind::For: return check_for(*s, control);
            case StmtKind::While: return check_while(*s, control);
            case StmtKind::Atomic: return check_atomic(*s, control);
            case StmtKind::Error: return check_error(*s, control);
            case StmtKind::Seq: {
                Frame f(*this, "{...}");
                return check_body(s->body, control);
            }
            case StmtKind::Comment: return;
        }
    }

    void check_let(const Stmt& s, Level control) {
        require_exprs(s, 1, "let");
        check_expr(s.exprs[0], control);
        require(s.exprs[0]->type == s.type, "let " + s.name + ": declared " + scalar_name(s.type) +
                                                " but the value " + show(s.exprs[0]) + " is " +
                                                scalar_name(s.exprs[0]->type));
        declare(s.name, s.type, VarKind::Local);
    }

    void check_assign(const Stmt& s, Level control) {
        require_exprs(s, 1, "assignment");
        check_expr(s.exprs[0], control);
        const VarInfo* v = find_var(s.name);
        require(!find_param(s.name), "assignment to parameter '" + s.name + "'");
        require(v != nullptr, "assignment to undeclared variable '" + s.name + "'");
        require(v->kind == VarKind::Local, "assignment to loop variable '" + s.name + "'");
        require(s.exprs[0]->type == v->type, "assignment of " + show(s.exprs[0]) + " (" +
                                                 scalar_name(s.exprs[0]->type) + ") to '" + s.name + "' (" +
                                                 scalar_name(v->type) + ")");
    }

    // The element type of memory `name` in `space`, checking that it exists
    // and, for global memory, that the access is allowed.
    ScalarType memory(const std::string& name, MemSpace space, const ExprPtr& index, bool reads, bool writes,
                      const char* what) const {
        ScalarType t;
        if (space == MemSpace::Shared) {
            const SharedArray* s = find_shared(name);
            require(s != nullptr, std::string(what) + " of '" + name + "', which is not a shared array");
            t = s->type;
            require(index->type == ScalarType::I32, std::string(what) + " of shared '" + name + "' with index " +
                                                        show(index) + " of type " + scalar_name(index->type) +
                                                        " (shared indices are i32)");
        } else {
            const Param* p = find_param(name);
            require(p && p->kind == ParamKind::Buffer,
                    std::string(what) + " of '" + name + "', which is not a buffer parameter");
            t = p->type;
            require(!writes || p->access != Access::Read,
                    std::string(what) + " writes '" + name + "', a Read buffer (declare it Write or ReadWrite)");
            require(!reads || p->access != Access::Write,
                    std::string(what) + " reads '" + name + "', a Write buffer (declare it ReadWrite)");
            require(index->type == ScalarType::I64, std::string(what) + " of '" + name + "' with index " +
                                                        show(index) + " of type " + scalar_name(index->type) +
                                                        " (global indices are i64)");
        }
        return t;
    }

    void check_store(const Stmt& s, Level control) {
        require_exprs(s, 2, "store");
        check_expr(s.exprs[0], control);
        check_expr(s.exprs[1], control);
        ScalarType t = memory(s.name, s.space, s.exprs[0], false, true, "store");
        require(s.exprs[1]->type == t, "store of " + show(s.exprs[1]) + " (" + scalar_name(s.exprs[1]->type) +
                                           ") into '" + s.name + "' of " + scalar_name(t));
    }

    void check_condition(const ExprPtr& c, Level control, const char* what) {
        check_expr(c, control);
        require(c->type == ScalarType::Bool,
                std::string(what) + " condition " + show(c) + " is " + scalar_name(c->type) + ", not bool");
    }

    void check_if(const Stmt& s, Level control) {
        require_exprs(s, 1, "if");
        check_condition(s.exprs[0], control, "if");
        Level inner = join(control, uniformity_.of(s.exprs[0]));
        {
            Frame f(*this, "if " + to_string(s.exprs[0]));
            check_body(s.body, inner);
        }
        Frame f(*this, "else of if " + to_string(s.exprs[0]));
        check_body(s.else_body, inner);
    }

    void check_for(const Stmt& s, Level control) {
        require_exprs(s, 3, "for");
        require(is_integer(s.type), "for " + s.name + ": loop variable of type " + scalar_name(s.type));
        Level inner = control;
        for (const auto& e : s.exprs) {
            check_expr(e, control);
            require(e->type == s.type, "for " + s.name + ": bound " + show(e) + " is " + scalar_name(e->type) +
                                           ", the variable " + scalar_name(s.type));
            inner = join(inner, uniformity_.of(e));
        }
        check_positive_step(s.exprs[2]);
        Frame f(*this, "for " + s.name);
        Scope scope(*this);
        declare(s.name, s.type, VarKind::LoopVar);
        check_body(s.body, inner);
    }

    void check_while(const Stmt& s, Level control) {
        require_exprs(s, 1, "while");
        check_condition(s.exprs[0], control, "while");
        Frame f(*this, "while " + to_string(s.exprs[0]));
        check_body(s.body, join(control, uniformity_.of(s.exprs[0])));
    }

    void check_atomic(const Stmt& s, Level control) {
        bool cas = s.atomic_op == AtomicOp::CAS;
        require_exprs(s, cas ? 3 : 2, cas ? "atomic CAS" : "atomic");
        for (const auto& e : s.exprs) check_expr(e, control);
        ScalarType t = memory(s.name, s.space, s.exprs[0], true, true, "atomic");
        require(s.type == t, std::string("atomic on '") + s.name + "' of " + scalar_name(t) + " declared as " +
                                 scalar_name(s.type));
        require(t != ScalarType::Bool, "atomic on bool memory '" + s.name + "' (not supported; use an i32 array)");
        bool bitwise = s.atomic_op == AtomicOp::And || s.atomic_op == AtomicOp::Or || s.atomic_op == AtomicOp::Xor;
        require(!bitwise || is_integer(t), "bitwise atomic on '" + s.name + "' of " + scalar_name(t));
        for (size_t i = 1; i < s.exprs.size(); ++i)
            require(s.exprs[i]->type == t, "atomic operand " + show(s.exprs[i]) + " is " +
                                               scalar_name(s.exprs[i]->type) + ", the memory " + scalar_name(t));
        if (s.result.empty()) return;
        const VarInfo* v = find_var(s.result);
        require(v != nullptr, "atomic result variable '" + s.result + "' is not declared");
        require(v->kind == VarKind::Local, "atomic result goes to loop variable '" + s.result + "'");
        require(v->type == t, "atomic result variable '" + s.result + "' is " + scalar_name(v->type) +
                                  ", the memory " + scalar_name(t));
    }

    void check_error(const Stmt& s, Level control) {
        require_exprs(s, 2, "error");
        require(s.error_code >= 0 && s.error_code < static_cast<int>(k_.checks.size()),
                "error code " + std::to_string(s.error_code) + " does not index the kernel's " +
                    std::to_string(k_.checks.size()) + " checks");
        for (const auto& e : s.exprs) {
            check_expr(e, control);
            require(e->type == ScalarType::I64, "error operand " + show(e) + " is " + scalar_name(e->type) +
                                                    ", not i64");
        }
    }

    // ------------------------------------------------------------ expressions
    void check_expr(const ExprPtr& e, Level control) {
        require(e != nullptr, "null expression");
        require(e->args.size() == expected_args(e->kind) || e->kind == ExprKind::Call,
                "malformed expression node: wrong number of operands");
        for (const auto& a : e->args) {
            require(a != nullptr, "null operand");
            check_expr(a, control);
        }
        switch (e->kind) {
            case ExprKind::Const:
                require(const_fits(*e), "constant " + std::to_string(e->i) + " does not fit " + scalar_name(e->type));
                break;
            case ExprKind::Var: check_var(*e); break;
            case ExprKind::Param: check_param(*e); break;
            case ExprKind::ThreadIdx: require_type(*e, ScalarType::I32, "threadIdx"); break;
            case ExprKind::BlockIdx: require_type(*e, ScalarType::I64, "blockIdx"); break;
            case ExprKind::BlockDim: require_type(*e, ScalarType::I32, "blockDim"); break;
            case ExprKind::GridDim: require_type(*e, ScalarType::I64, "gridDim"); break;
            case ExprKind::Load: check_load(*e); break;
            case ExprKind::Unary: check_unary(e); break;
            case ExprKind::Binary: check_binary(e); break;
            case ExprKind::Select: check_select(e); break;
            case ExprKind::Cast: break;  // every conversion is defined
            case ExprKind::Call: check_call(e); break;
            case ExprKind::Shuffle: check_shuffle(e, control); break;
        }
    }

    void require_type(const Expr& e, ScalarType t, const char* what) const {
        require(e.type == t, std::string(what) + " has type " + scalar_name(e.type) + ", not " + scalar_name(t));
    }

    void check_var(const Expr& e) const {
        require(!find_param(e.name), "'" + e.name + "' is a parameter; read it with Param");
        const VarInfo* v = find_var(e.name);
        require(v != nullptr, "use of undeclared variable '" + e.name + "'");
        require(v->type == e.type, "variable '" + e.name + "' used as " + scalar_name(e.type) + " but declared " +
                                       scalar_name(v->type));
    }

    void check_param(const Expr& e) const {
        const Param* p = find_param(e.name);
        require(p != nullptr, "'" + e.name + "' is not a parameter");
        require(p->kind == ParamKind::Scalar, "buffer '" + e.name + "' read as a scalar (use Load)");
        require(p->type == e.type, "parameter '" + e.name + "' used as " + scalar_name(e.type) + " but declared " +
                                       scalar_name(p->type));
    }

    void check_load(const Expr& e) const {
        ScalarType t = memory(e.name, e.space, e.args[0], true, false, "load");
        require(e.type == t, "load of '" + e.name + "' typed " + scalar_name(e.type) + ", the memory holds " +
                                 scalar_name(t));
    }

    void check_unary(const ExprPtr& e) const {
        ScalarType t = e->args[0]->type;
        require(e->type == t, "unary " + show(e) + " has type " + scalar_name(e->type) + ", its operand " +
                                  scalar_name(t));
        switch (e->unary_op) {
            case UnaryOp::Neg: require(is_numeric(t), "negation of bool in " + show(e)); break;
            case UnaryOp::Not: require(t == ScalarType::Bool, "! on non-bool in " + show(e)); break;
            case UnaryOp::BitNot: require(is_integer(t), "~ on non-integer in " + show(e)); break;
        }
    }

    void check_binary(const ExprPtr& e) const {
        ScalarType a = e->args[0]->type, b = e->args[1]->type;
        require(a == b, "operand types differ in " + show(e) + ": " + scalar_name(a) + " vs " + scalar_name(b));
        BinaryOp op = e->binary_op;
        ScalarType result = is_comparison(op) ? ScalarType::Bool : a;
        require(e->type == result, show(e) + " has type " + scalar_name(e->type) + ", expected " +
                                       scalar_name(result));
        switch (op) {
            case BinaryOp::And:
            case BinaryOp::Or:
            case BinaryOp::Xor:
                require(is_integer(a) || a == ScalarType::Bool, "bitwise operator on " + std::string(scalar_name(a)) +
                                                                    " in " + show(e));
                break;
            case BinaryOp::Shl:
            case BinaryOp::Shr:
                require(is_integer(a), "shift of " + std::string(scalar_name(a)) + " in " + show(e));
                break;
            default:
                if (!is_comparison(op)) require(is_numeric(a), "arithmetic on bool in " + show(e));
                break;
        }
    }

    void check_select(const ExprPtr& e) const {
        require(e->args[0]->type == ScalarType::Bool, "select condition is not bool in " + show(e));
        require(e->args[1]->type == e->args[2]->type, "select branches differ in type in " + show(e));
        require(e->type == e->args[1]->type, "select " + show(e) + " has the wrong result type");
    }

    void check_call(const ExprPtr& e) const {
        auto it = call_signatures().find(e->name);
        require(it != call_signatures().end(), "unknown function '" + e->name + "'");
        const CallSig& sig = it->second;
        require(static_cast<int>(e->args.size()) == sig.arity,
                e->name + " takes " + std::to_string(sig.arity) + " arguments, given " + std::to_string(e->args.size()));
        for (const auto& a : e->args) require(a != nullptr, "null argument of " + e->name);
        if (sig.kind == CallSig::Bits) {
            const ScalarType from = e->args[0]->type;
            require(is_float(from) && e->type == (from == ScalarType::F32 ? ScalarType::U32 : ScalarType::U64),
                    "bits of " + std::string(scalar_name(from)) + " as " + scalar_name(e->type) +
                        ": needs f32 -> u32 or f64 -> u64");
            return;
        }
        for (const auto& a : e->args)
            require(a->type == e->type, "argument " + show(a) + " of " + e->name + " is " + scalar_name(a->type) +
                                            ", the result " + scalar_name(e->type));
        bool ok = sig.kind == CallSig::Float     ? is_float(e->type)
                  : sig.kind == CallSig::Integer ? is_integer(e->type)
                                                 : is_numeric(e->type);
        require(ok, e->name + " is not defined on " + scalar_name(e->type));
    }

    void check_shuffle(const ExprPtr& e, Level control) {
        has_shuffle_ = true;
        require(e->type == e->args[0]->type, "shuffle result type differs from its value in " + show(e));
        require(e->args[1]->type == ScalarType::I32, "shuffle lane/delta " + show(e->args[1]) + " is not i32");
        require(control <= Level::Warp, "shuffle " + show(e) + " under " + level_name(control) +
                                            " control (all 32 lanes of a warp must take part)");
    }

    const Kernel& k_;
    Uniformity uniformity_;
    std::set<std::string> globals_;                   // parameters and shared arrays
    std::vector<std::map<std::string, VarInfo>> scopes_;
    std::map<std::string, ScalarType> var_types_;     // one type per name in the kernel
    std::vector<std::string> where_;
    bool has_shuffle_ = false;
};

}  // namespace

bool is_valid_name(const std::string& name) { return bad_name_reason(name).empty(); }

void verify(const Kernel& k) { Verifier(k).run(); }

}  // namespace shoal::ir
