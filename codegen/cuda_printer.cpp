#include "codegen/cuda_printer.h"

#include <charconv>
#include <cmath>
#include <map>

#include "codegen/ir_visitor.h"
#include "lang/diagnostics.h"

namespace shoal::ir {
namespace {

// ---------------------------------------------------------------- the prelude

// Each group is emitted at most once, in enum order, and only when used, so
// the `:cuda` listing of a simple map stays short.
const std::map<int, const char*>& helper_texts() {
    static const std::map<int, const char*> texts = {
        {0,  // ErrorRecord
         R"(// The launch's error record: the failed check of the lowest global thread
// (blockIdx.x * blockDim.x + threadIdx.x), that thread's first in program
// order, whatever the scheduling (the CPU executor reports the same). Before
// the launch the runtime sets key = ~0ull (no error yet), code = -1 and
// lock = 0; code >= 0 afterwards means check `code` failed at index, extent.
struct ShoalError {
    unsigned long long key;  // the global thread whose failure is recorded
    int code;
    int lock;                // 1 while a thread updates the record
    long long index;
    long long extent;
};
// Only failing threads get here, and only those that would win take the
// lock. Spinning is safe: since sm_70 the threads of a warp are scheduled
// independently, so the lock's holder always makes progress.
__device__ __noinline__ void shoal_record_error(ShoalError* e, int code, long long index, long long extent) {
    const unsigned long long key = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (key >= *(volatile unsigned long long*)&e->key) return;
    while (atomicCAS(&e->lock, 0, 1) != 0) {
    }
    __threadfence();
    volatile ShoalError* r = e;
    if (key < r->key) {  // strictly lower: a thread's later failure never replaces its first
        r->key = key;
        r->code = code;
        r->index = index;
        r->extent = extent;
    }
    __threadfence();
    atomicExch(&e->lock, 0);
}
)"},
        {1,  // SpecialFloats
         R"(// Non-finite constants (C++ has no literals for them).
__device__ __forceinline__ float shoal_inf_f32() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ float shoal_nan_f32() { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double shoal_inf_f64() { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ double shoal_nan_f64() { return __longlong_as_double(0x7ff8000000000000LL); }
)"},
        {2,  // WrapArith
         R"(// Signed arithmetic wraps in Shoal. In C++ signed overflow is undefined and
// the optimiser assumes it never happens, so it is done on unsigned types.
__device__ __forceinline__ int shoal_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ int shoal_sub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
__device__ __forceinline__ int shoal_mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
__device__ __forceinline__ int shoal_neg(int a) { return (int)(0u - (unsigned)a); }
__device__ __forceinline__ int shoal_shl(int a, int b) { return (int)((unsigned)a << (b & 31)); }
__device__ __forceinline__ long long shoal_add(long long a, long long b) { return (long long)((unsigned long long)a + (unsigned long long)b); }
__device__ __forceinline__ long long shoal_sub(long long a, long long b) { return (long long)((unsigned long long)a - (unsigned long long)b); }
__device__ __forceinline__ long long shoal_mul(long long a, long long b) { return (long long)((unsigned long long)a * (unsigned long long)b); }
__device__ __forceinline__ long long shoal_neg(long long a) { return (long long)(0ULL - (unsigned long long)a); }
__device__ __forceinline__ long long shoal_shl(long long a, long long b) { return (long long)((unsigned long long)a << (b & 63)); }
)"},
        {3,  // DivMod
         R"(// Integer / and % with Shoal's rules: by zero gives 0; the most negative
// value / -1 wraps to itself and % -1 gives 0 (both undefined in C++).
__device__ __forceinline__ int shoal_div(int a, int b) { return b == 0 ? 0 : b == -1 ? (int)(0u - (unsigned)a) : a / b; }
__device__ __forceinline__ int shoal_mod(int a, int b) { return (b == 0 || b == -1) ? 0 : a % b; }
__device__ __forceinline__ long long shoal_div(long long a, long long b) { return b == 0 ? 0LL : b == -1 ? (long long)(0ULL - (unsigned long long)a) : a / b; }
__device__ __forceinline__ long long shoal_mod(long long a, long long b) { return (b == 0 || b == -1) ? 0LL : a % b; }
__device__ __forceinline__ unsigned shoal_div(unsigned a, unsigned b) { return b == 0u ? 0u : a / b; }
__device__ __forceinline__ unsigned shoal_mod(unsigned a, unsigned b) { return b == 0u ? 0u : a % b; }
__device__ __forceinline__ unsigned long long shoal_div(unsigned long long a, unsigned long long b) { return b == 0ULL ? 0ULL : a / b; }
__device__ __forceinline__ unsigned long long shoal_mod(unsigned long long a, unsigned long long b) { return b == 0ULL ? 0ULL : a % b; }
)"},
        {4,  // IntAbs
         R"(// abs of the most negative integer is itself (wraps), as in Shoal.
__device__ __forceinline__ int shoal_abs(int a) { return a < 0 ? (int)(0u - (unsigned)a) : a; }
__device__ __forceinline__ long long shoal_abs(long long a) { return a < 0 ? (long long)(0ULL - (unsigned long long)a) : a; }
)"},
        {5,  // FloatToInt
         R"(// Float -> integer with Shoal's rules: truncate toward zero, NaN -> 0, out of
// range saturates to the type's min/max (a plain C++ cast is undefined there;
// the CUDA documentation does not promise what __float2int_rz does).
template <typename I, typename F>
__device__ __forceinline__ I shoal_saturate(F x, F lo, F hi, I min_value, I max_value) {
    if (x != x) return (I)0;
    if (x <= lo) return min_value;
    if (x >= hi) return max_value;
    return (I)x;
}
__device__ __forceinline__ int shoal_to_i32(float x) { return shoal_saturate<int>(x, -2147483648.0f, 2147483648.0f, -2147483647 - 1, 2147483647); }
__device__ __forceinline__ int shoal_to_i32(double x) { return shoal_saturate<int>(x, -2147483648.0, 2147483648.0, -2147483647 - 1, 2147483647); }
__device__ __forceinline__ long long shoal_to_i64(float x) { return shoal_saturate<long long>(x, -9223372036854775808.0f, 9223372036854775808.0f, -9223372036854775807LL - 1, 9223372036854775807LL); }
__device__ __forceinline__ long long shoal_to_i64(double x) { return shoal_saturate<long long>(x, -9223372036854775808.0, 9223372036854775808.0, -9223372036854775807LL - 1, 9223372036854775807LL); }
__device__ __forceinline__ unsigned shoal_to_u32(float x) { return shoal_saturate<unsigned>(x, 0.0f, 4294967296.0f, 0u, 4294967295u); }
__device__ __forceinline__ unsigned shoal_to_u32(double x) { return shoal_saturate<unsigned>(x, 0.0, 4294967296.0, 0u, 4294967295u); }
__device__ __forceinline__ unsigned long long shoal_to_u64(float x) { return shoal_saturate<unsigned long long>(x, 0.0f, 18446744073709551616.0f, 0ULL, 18446744073709551615ULL); }
__device__ __forceinline__ unsigned long long shoal_to_u64(double x) { return shoal_saturate<unsigned long long>(x, 0.0, 18446744073709551616.0, 0ULL, 18446744073709551615ULL); }
)"},
        {6,  // AtomicAdd
         R"(// atomicAdd has no signed 64-bit overload; two's complement addition is the
// same bit operation on the unsigned type.
__device__ __forceinline__ long long shoal_atomic_add(long long* p, long long v) {
    return (long long)atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
)"},
        {7,  // AtomicMin
         R"(// Float atomic min (fmin: NaN loses) as a compare-and-swap loop on the bits.
__device__ __forceinline__ float shoal_atomic_min(float* p, float v) {
    int* bits = (int*)p;
    int old = *bits;
    for (;;) {
        int next = __float_as_int(fminf(__int_as_float(old), v));
        if (next == old) return __int_as_float(old);
        int seen = atomicCAS(bits, old, next);
        if (seen == old) return __int_as_float(old);
        old = seen;
    }
}
__device__ __forceinline__ double shoal_atomic_min(double* p, double v) {
    unsigned long long* bits = (unsigned long long*)p;
    unsigned long long old = *bits;
    for (;;) {
        unsigned long long next = (unsigned long long)__double_as_longlong(fmin(__longlong_as_double((long long)old), v));
        if (next == old) return __longlong_as_double((long long)old);
        unsigned long long seen = atomicCAS(bits, old, next);
        if (seen == old) return __longlong_as_double((long long)old);
        old = seen;
    }
}
)"},
        {8,  // AtomicMax
         R"(// Float atomic max (fmax: NaN loses) as a compare-and-swap loop on the bits.
__device__ __forceinline__ float shoal_atomic_max(float* p, float v) {
    int* bits = (int*)p;
    int old = *bits;
    for (;;) {
        int next = __float_as_int(fmaxf(__int_as_float(old), v));
        if (next == old) return __int_as_float(old);
        int seen = atomicCAS(bits, old, next);
        if (seen == old) return __int_as_float(old);
        old = seen;
    }
}
__device__ __forceinline__ double shoal_atomic_max(double* p, double v) {
    unsigned long long* bits = (unsigned long long*)p;
    unsigned long long old = *bits;
    for (;;) {
        unsigned long long next = (unsigned long long)__double_as_longlong(fmax(__longlong_as_double((long long)old), v));
        if (next == old) return __longlong_as_double((long long)old);
        unsigned long long seen = atomicCAS(bits, old, next);
        if (seen == old) return __longlong_as_double((long long)old);
        old = seen;
    }
}
)"},
        {9,  // AtomicBitwise
         R"(// Signed 64-bit bitwise atomics through the unsigned overloads (same bits).
__device__ __forceinline__ long long shoal_atomic_and(long long* p, long long v) { return (long long)atomicAnd((unsigned long long*)p, (unsigned long long)v); }
__device__ __forceinline__ long long shoal_atomic_or(long long* p, long long v) { return (long long)atomicOr((unsigned long long*)p, (unsigned long long)v); }
__device__ __forceinline__ long long shoal_atomic_xor(long long* p, long long v) { return (long long)atomicXor((unsigned long long*)p, (unsigned long long)v); }
)"},
        {10,  // AtomicExch
         R"(// atomicExch for the types CUDA lacks, through the unsigned 64-bit overload.
__device__ __forceinline__ long long shoal_atomic_exch(long long* p, long long v) {
    return (long long)atomicExch((unsigned long long*)p, (unsigned long long)v);
}
__device__ __forceinline__ double shoal_atomic_exch(double* p, double v) {
    return __longlong_as_double((long long)atomicExch((unsigned long long*)p, (unsigned long long)__double_as_longlong(v)));
}
)"},
        {11,  // AtomicCAS
         R"(// atomicCAS for the types CUDA lacks. Floats compare bit patterns.
__device__ __forceinline__ long long shoal_atomic_cas(long long* p, long long compare, long long v) {
    return (long long)atomicCAS((unsigned long long*)p, (unsigned long long)compare, (unsigned long long)v);
}
__device__ __forceinline__ float shoal_atomic_cas(float* p, float compare, float v) {
    return __int_as_float(atomicCAS((int*)p, __float_as_int(compare), __float_as_int(v)));
}
__device__ __forceinline__ double shoal_atomic_cas(double* p, double compare, double v) {
    return __longlong_as_double((long long)atomicCAS((unsigned long long*)p, (unsigned long long)__double_as_longlong(compare),
                                                     (unsigned long long)__double_as_longlong(v)));
}
)"},
    };
    return texts;
}

bool is_integer(ScalarType t) { return is_signed_int(t) || is_unsigned_int(t); }

// ---------------------------------------------------------------- constants

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

// ---------------------------------------------------------------- atomics

bool native_atomic(AtomicOp op, ScalarType t) {
    using S = ScalarType;
    switch (op) {
        case AtomicOp::Add: return t != S::I64;
        case AtomicOp::Min:
        case AtomicOp::Max: return is_integer(t);
        case AtomicOp::And:
        case AtomicOp::Or:
        case AtomicOp::Xor:
        case AtomicOp::CAS: return t == S::I32 || t == S::U32 || t == S::U64;
        case AtomicOp::Exch: return t == S::I32 || t == S::U32 || t == S::U64 || t == S::F32;
    }
    return false;
}

const char* atomic_suffix(AtomicOp op) {
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

const char* cuda_atomic(AtomicOp op) {
    switch (op) {
        case AtomicOp::Add: return "atomicAdd";
        case AtomicOp::Min: return "atomicMin";
        case AtomicOp::Max: return "atomicMax";
        case AtomicOp::And: return "atomicAnd";
        case AtomicOp::Or: return "atomicOr";
        case AtomicOp::Xor: return "atomicXor";
        case AtomicOp::Exch: return "atomicExch";
        case AtomicOp::CAS: return "atomicCAS";
    }
    return "?";
}

// ---------------------------------------------------------------- analysis

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

// ---------------------------------------------------------------- output

void CudaPrinter::line(const std::string& text) { out_ << std::string(4 * indent_, ' ') << text << '\n'; }

void CudaPrinter::open(const std::string& header) {
    line(header + " {");
    ++indent_;
}

void CudaPrinter::close() {
    --indent_;
    line("}");
}

std::string CudaPrinter::prelude() const {
    std::string s;
    for (Helper h : helpers_) s += helper_texts().at(static_cast<int>(h)) + std::string("\n");
    return s;
}

std::string cuda_full_prelude() {
    std::string s;
    for (const auto& [group, text] : helper_texts()) s += text + std::string("\n");
    return s;
}

CudaUnit CudaPrinter::print_unit(const std::vector<Kernel>& kernels) {
    out_.str("");
    helpers_.clear();
    // A broken kernel fails here with verify's message, not as a crash or
    // an NVRTC error; the names share one C namespace.
    std::set<std::string> names;
    for (const auto& k : kernels) {
        verify(k);
        SHOAL_INTERNAL_ASSERT(names.insert(k.name).second, "two kernels named " + k.name + " in one CUDA unit");
    }
    for (size_t i = 0; i < kernels.size(); ++i) {
        if (i) out_ << '\n';
        print_kernel(kernels[i]);
    }
    static const char* const helper_names[] = {
        "error record", "NaN/infinity constants", "wrapping arithmetic", "division and remainder by zero",
        "integer abs", "saturating float-to-int", "atomic add", "atomic min", "atomic max", "atomic bitwise",
        "atomic exchange", "atomic compare-and-swap"};
    CudaUnit unit;
    unit.prelude = prelude();
    for (Helper h : helpers_) unit.helpers.push_back(helper_names[static_cast<int>(h)]);
    unit.kernels = out_.str();
    return unit;
}

std::string CudaPrinter::print(const std::vector<Kernel>& kernels) {
    const CudaUnit unit = print_unit(kernels);
    std::string head = "// Generated by Shoal from the kernel IR: " + std::to_string(kernels.size()) +
                       (kernels.size() == 1 ? " kernel" : " kernels") +
                       ". Self-contained for NVRTC: it needs no headers.\n\n";
    return head + unit.prelude + unit.kernels;
}

CudaUnit print_cuda_unit(const std::vector<Kernel>& kernels) { return CudaPrinter().print_unit(kernels); }

// ---------------------------------------------------------------- kernels

void CudaPrinter::print_kernel(const Kernel& k) {
    kernel_ = &k;
    Usage usage;
    usage.visit_kernel(k);
    read_ = std::move(usage.read);
    assigned_ = std::move(usage.assigned);
    phase_count_ = count_phases(k.body);
    phase_number_ = 0;

    if (!k.comment.empty()) print_comment(k.comment);
    std::vector<std::string> params;
    for (const auto& p : k.params) params.push_back(print_param(p));
    if (!k.checks.empty()) {
        need(Helper::ErrorRecord);
        params.push_back("ShoalError* __restrict__ shoal_error");
    }
    std::string head = kernel_linkage_ + "__global__ void __launch_bounds__(" + std::to_string(k.block_size) + ") " +
                       k.name + "(";
    if (params.empty()) {
        line(head + ") {");
    } else {
        line(head);
        for (size_t i = 0; i < params.size(); ++i)
            line("    " + params[i] + (i + 1 < params.size() ? "," : ") {"));
    }
    ++indent_;
    for (const auto& s : k.shared) print_shared(s);
    print_blocks(k.body, true);
    close();
    kernel_ = nullptr;
}

std::string CudaPrinter::print_param(const Param& p) {
    std::string t = type_name(p.type);
    if (p.kind == ParamKind::Scalar) return t + " " + p.name;
    return (p.access == Access::Read ? "const " : "") + t + "* __restrict__ " + p.name;
}

void CudaPrinter::print_shared(const SharedArray& s) {
    std::string unused = read_.count(s.name) ? "" : "[[maybe_unused]] ";
    line(unused + "__shared__ " + type_name(s.type) + " " + s.name + "[" + std::to_string(s.size) + "];");
}

// Every phase ends with a barrier except the kernel's last block statement
// (ir.h); the last phase of a BlockFor body keeps its barrier because the
// next iteration follows it.
void CudaPrinter::print_blocks(const std::vector<BlockStmtPtr>& body, bool top_level) {
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
void CudaPrinter::print_phase(const StmtPtr& code) {
    if (code->kind == StmtKind::Seq) print_body(code->body);
    else print_stmt(code);
}

void CudaPrinter::print_block_for(const BlockStmt& b) {
    open("for (long long " + b.var + " = " + print_expr(b.range[0]) + "; " + b.var + " < " + print_expr(b.range[1]) +
         "; " + b.var + " += " + print_expr(b.range[2]) + ")");
    print_blocks(b.body, false);
    close();
}

void CudaPrinter::print_barrier() { line("__syncthreads();"); }

// ---------------------------------------------------------------- statements

void CudaPrinter::print_body(const std::vector<StmtPtr>& body) {
    for (const auto& s : body) print_stmt(s);
}

void CudaPrinter::print_stmt(const StmtPtr& s) {
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

void CudaPrinter::print_let(const Stmt& s) {
    std::string prefix = read_.count(s.name) ? "" : "[[maybe_unused]] ";
    if (!assigned_.count(s.name)) prefix += "const ";
    line(prefix + type_name(s.type) + " " + s.name + " = " + print_expr(s.exprs[0]) + ";");
}

void CudaPrinter::print_assign(const Stmt& s) { line(s.name + " = " + print_expr(s.exprs[0]) + ";"); }

void CudaPrinter::print_store(const Stmt& s) {
    line(s.name + "[" + print_expr(s.exprs[0]) + "] = " + print_expr(s.exprs[1]) + ";");
}

void CudaPrinter::print_if(const Stmt& s) {
    open("if (" + print_expr(s.exprs[0]) + ")");
    print_body(s.body);
    const Stmt* cur = &s;
    // else-if chains stay flat
    while (cur->else_body.size() == 1 && cur->else_body[0]->kind == StmtKind::If) {
        cur = cur->else_body[0].get();
        --indent_;
        line("} else if (" + print_expr(cur->exprs[0]) + ") {");
        ++indent_;
        print_body(cur->body);
    }
    if (!cur->else_body.empty()) {
        --indent_;
        line("} else {");
        ++indent_;
        print_body(cur->else_body);
    }
    close();
}

void CudaPrinter::print_for(const Stmt& s) {
    open("for (" + type_name(s.type) + " " + s.name + " = " + print_expr(s.exprs[0]) + "; " + s.name + " < " +
         print_expr(s.exprs[1]) + "; " + s.name + " += " + print_expr(s.exprs[2]) + ")");
    print_body(s.body);
    close();
}

void CudaPrinter::print_while(const Stmt& s) {
    open("while (" + print_expr(s.exprs[0]) + ")");
    print_body(s.body);
    close();
}

void CudaPrinter::print_atomic(const Stmt& s) {
    std::string addr = "&" + s.name + "[" + print_expr(s.exprs[0]) + "]";
    std::string fn;
    if (native_atomic(s.atomic_op, s.type)) {
        fn = cuda_atomic(s.atomic_op);
    } else {
        fn = std::string("shoal_atomic_") + atomic_suffix(s.atomic_op);
        switch (s.atomic_op) {
            case AtomicOp::Add: need(Helper::AtomicAdd); break;
            case AtomicOp::Min: need(Helper::AtomicMin); break;
            case AtomicOp::Max: need(Helper::AtomicMax); break;
            case AtomicOp::Exch: need(Helper::AtomicExch); break;
            case AtomicOp::CAS: need(Helper::AtomicCAS); break;
            default: need(Helper::AtomicBitwise); break;
        }
    }
    // IR operands are {index, value, compare}; CUDA's atomicCAS takes (address, compare, value).
    std::string args = s.atomic_op == AtomicOp::CAS ? addr + ", " + print_expr(s.exprs[2]) + ", " + print_expr(s.exprs[1])
                                                    : addr + ", " + print_expr(s.exprs[1]);
    line((s.result.empty() ? "" : s.result + " = ") + fn + "(" + args + ");");
}

void CudaPrinter::print_error(const Stmt& s) {
    const Check& c = kernel_->checks.at(s.error_code);
    std::string what = "check " + std::to_string(s.error_code) + ": " + c.message;
    if (c.loc.valid())
        what += " (" + c.loc.position() + ")";
    print_comment(what);
    line("shoal_record_error(shoal_error, " + std::to_string(s.error_code) + ", " + print_expr(s.exprs[0]) +
         ", " + print_expr(s.exprs[1]) + ");");
}

void CudaPrinter::print_seq(const Stmt& s) {
    line("{");
    ++indent_;
    print_body(s.body);
    close();
}

// One `//` line per line of text. A backslash ending a line would splice the
// next source line into the comment, so it gets a visible suffix.
void CudaPrinter::print_comment(const std::string& text) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) {
        while (!l.empty() && (l.back() == ' ' || l.back() == '\r' || l.back() == '\t')) l.pop_back();
        if (!l.empty() && l.back() == '\\') l += " (end of line)";
        line(l.empty() ? "//" : "// " + l);
    }
}

// ---------------------------------------------------------------- expressions

std::string CudaPrinter::print_expr(const ExprPtr& e) {
    switch (e->kind) {
        case ExprKind::Const: return print_const(*e);
        case ExprKind::Var:
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
std::string CudaPrinter::operand(const ExprPtr& e) {
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

std::string CudaPrinter::print_const(const Expr& e) {
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

std::string CudaPrinter::print_special(const Expr& e) {
    switch (e.kind) {
        case ExprKind::ThreadIdx: return "(int)threadIdx.x";
        case ExprKind::BlockIdx: return "(long long)blockIdx.x";
        case ExprKind::BlockDim: return "(int)blockDim.x";
        default: return "(long long)gridDim.x";
    }
}

std::string CudaPrinter::print_load(const Expr& e) { return e.name + "[" + print_expr(e.args[0]) + "]"; }

std::string CudaPrinter::print_unary(const Expr& e) {
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

std::string CudaPrinter::print_binary(const Expr& e) {
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
            if (is_float(t)) return fn(t == ScalarType::F32 ? "fmodf" : "fmod");
            if (plain_divisor(*b)) return infix("%");
            need(Helper::DivMod);
            return fn("shoal_mod");
        case BinaryOp::Min: return fn(t == ScalarType::F32 ? "fminf" : t == ScalarType::F64 ? "fmin" : "min");
        case BinaryOp::Max: return fn(t == ScalarType::F32 ? "fmaxf" : t == ScalarType::F64 ? "fmax" : "max");
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
std::string CudaPrinter::print_select(const Expr& e) {
    return "(" + print_expr(e.args[0]) + " ? " + print_expr(e.args[1]) + " : " + print_expr(e.args[2]) + ")";
}

std::string CudaPrinter::print_cast(const Expr& e) {
    const ExprPtr& a = e.args[0];
    ScalarType from = a->type, to = e.type;
    if (to == ScalarType::Bool) return "(" + operand(a) + " != 0)";
    if (is_float(from) && is_integer(to)) {
        need(Helper::FloatToInt);
        const char* fn = to == ScalarType::I32 ? "shoal_to_i32" : to == ScalarType::I64 ? "shoal_to_i64"
                         : to == ScalarType::U32 ? "shoal_to_u32" : "shoal_to_u64";
        return std::string(fn) + "(" + print_expr(a) + ")";
    }
    // `(long long)threadIdx.x` reads better than `(long long)(int)threadIdx.x`.
    if (is_integer(to)) {
        switch (a->kind) {
            case ExprKind::ThreadIdx: return "(" + type_name(to) + ")threadIdx.x";
            case ExprKind::BlockIdx: return "(" + type_name(to) + ")blockIdx.x";
            case ExprKind::BlockDim: return "(" + type_name(to) + ")blockDim.x";
            case ExprKind::GridDim: return "(" + type_name(to) + ")gridDim.x";
            default: break;
        }
    }
    return "(" + type_name(to) + ")" + operand(a);
}

std::string CudaPrinter::print_call(const Expr& e) {
    std::string args;
    for (size_t i = 0; i < e.args.size(); ++i) args += (i ? ", " : "") + print_expr(e.args[i]);
    ScalarType t = e.type;
    const std::string& f = e.name;
    if (f == "bits")
        return t == ScalarType::U32 ? "__float_as_uint(" + args + ")"
                                    : "(unsigned long long)__double_as_longlong(" + args + ")";
    if (is_float(t)) {
        std::string base = f == "abs" ? "fabs" : f == "min" ? "fmin" : f == "max" ? "fmax" : f;
        return base + (t == ScalarType::F32 ? "f" : "") + "(" + args + ")";
    }
    if (f == "abs") {
        if (is_unsigned_int(t)) return print_expr(e.args[0]);
        need(Helper::IntAbs);
        return "shoal_abs(" + args + ")";
    }
    if (f == "mulhi") {
        const char* fn = t == ScalarType::I32 ? "__mulhi" : t == ScalarType::U32 ? "__umulhi"
                         : t == ScalarType::I64 ? "__mul64hi" : "__umul64hi";
        return std::string(fn) + "(" + args + ")";
    }
    return f + "(" + args + ")";  // integer min / max
}

std::string CudaPrinter::print_shuffle(const Expr& e) {
    const char* fn = e.shuffle_op == ShuffleOp::Xor    ? "__shfl_xor_sync"
                     : e.shuffle_op == ShuffleOp::Up   ? "__shfl_up_sync"
                     : e.shuffle_op == ShuffleOp::Down ? "__shfl_down_sync"
                                                       : "__shfl_sync";
    std::string lane = print_expr(e.args[1]);
    // No bool overload: shuffle it as an int.
    if (e.type == ScalarType::Bool)
        return "(" + std::string(fn) + "(0xffffffffu, (int)" + operand(e.args[0]) + ", " + lane + ") != 0)";
    return std::string(fn) + "(0xffffffffu, " + print_expr(e.args[0]) + ", " + lane + ")";
}

std::string print_cuda(const std::vector<Kernel>& kernels) { return CudaPrinter().print(kernels); }

// ---------------------------------------------------------------- host expressions

namespace {

// The kernel printer's expressions, changed only where host C++ differs:
// CUDA's integer min / max are device builtins (std::min / std::max here),
// and no C cast or raw integer / and % is left for a reader to check (a
// constant divisor goes through shoal_div too).
class HostCppPrinter : public CudaPrinter {
public:
    std::string expression(const ExprPtr& e) { return print_expr(e); }

protected:
    std::string call2(const std::string& fn, const ExprPtr& a, const ExprPtr& b) {
        return fn + "(" + print_expr(a) + ", " + print_expr(b) + ")";
    }

    std::string print_binary(const Expr& e) override {
        if (is_integer(e.args[0]->type)) {
            switch (e.binary_op) {
                case BinaryOp::Div: return call2("shoal_div", e.args[0], e.args[1]);
                case BinaryOp::Mod: return call2("shoal_mod", e.args[0], e.args[1]);
                case BinaryOp::Min: return call2("std::min", e.args[0], e.args[1]);
                case BinaryOp::Max: return call2("std::max", e.args[0], e.args[1]);
                default: break;
            }
        }
        return CudaPrinter::print_binary(e);
    }

    std::string print_call(const Expr& e) override {
        const bool int_min_max = is_integer(e.type) && (e.name == "min" || e.name == "max");
        return int_min_max ? call2("std::" + e.name, e.args[0], e.args[1]) : CudaPrinter::print_call(e);
    }

    // Float -> integer and anything -> bool as in kernels (shoal_to_i32 ...,
    // `!= 0`); the rest is exact in C++20 (integers wrap, floats round once).
    std::string print_cast(const Expr& e) override {
        const ScalarType from = e.args[0]->type, to = e.type;
        if (to == ScalarType::Bool || (is_float(from) && is_integer(to))) return CudaPrinter::print_cast(e);
        return "static_cast<" + type_name(to) + ">(" + print_expr(e.args[0]) + ")";
    }
};

}  // namespace

std::string print_host_cpp(const ExprPtr& e) { return HostCppPrinter().expression(e); }

}  // namespace shoal::ir
