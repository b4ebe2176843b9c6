#include "codegen/cuda_printer.h"

#include <map>

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
        // 2-5: the groups every dialect shares (c_printer.cpp)
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

bool is_integer(ScalarType t) { return is_integer_type(t); }

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

}  // namespace

std::string CudaPrinter::helper_text(Helper h) const {
    auto it = helper_texts().find(static_cast<int>(h));
    return it != helper_texts().end() ? it->second : CLikePrinter::helper_text(h);
}

std::string cuda_full_prelude() { return CudaPrinter::full_prelude(); }

std::string CudaPrinter::full_prelude() {
    const CudaPrinter printer;
    std::string s;
    for (Helper h = Helper::ErrorRecord; h <= Helper::AtomicCAS; h = static_cast<Helper>(static_cast<int>(h) + 1))
        s += printer.helper_text(h) + "\n";
    return s + printer.helper_text(Helper::FloatPow) + "\n";
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
    begin_kernel(k);

    if (!k.comment.empty()) print_comment(k.comment);
    std::vector<std::string> params;
    for (const auto& p : k.params) params.push_back(print_param(p));
    if (!k.checks.empty()) {
        need(Helper::ErrorRecord);
        params.push_back("ShoalError* __restrict__ shoal_error");
    }
    levels_.reset();
    if (polls_cancel_) {
        levels_ = std::make_unique<ThreadLevels>(k);
        if (has_cancel_points(k, *levels_)) params.push_back("const volatile unsigned char* __restrict__ shoal_cancel");
        else levels_.reset();
    }
    cancel_levels_ = levels_.get();
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
    if (levels_) line("unsigned shoal_polls = 0u;  // trips of long loops: the cancel flag is read every 1024th");
    print_blocks(k.body, true);
    close();
    kernel_ = nullptr;
    cancel_levels_ = nullptr;
    levels_.reset();
}

// Ctrl-C stops a long kernel: the host sets the flag (page-locked host memory
// the kernel reads through the bus), and a cancel point's loop reads it every
// 1024th trip; the kernel's results are then discarded with the statement.
void CudaPrinter::print_cancel_poll() {
    line("if ((++shoal_polls & 1023u) == 0u && *shoal_cancel) return;");
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

void CudaPrinter::print_barrier() { line("__syncthreads();"); }

// ---------------------------------------------------------------- statements

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
    line((s.result.empty() ? "" : variable(s.result) + " = ") + fn + "(" + args + ");");
}

void CudaPrinter::print_error(const Stmt& s) {
    print_check_comment(s);
    line("shoal_record_error(shoal_error, " + std::to_string(s.error_code) + ", " + print_expr(s.exprs[0]) +
         ", " + print_expr(s.exprs[1]) + ");");
}

// ---------------------------------------------------------------- expressions

std::string CudaPrinter::print_special(const Expr& e) {
    switch (e.kind) {
        case ExprKind::ThreadIdx: return "(int)threadIdx.x";
        case ExprKind::BlockIdx: return "(long long)blockIdx.x";
        case ExprKind::BlockDim: return "(int)blockDim.x";
        default: return "(long long)gridDim.x";
    }
}

// `(long long)threadIdx.x` reads better than `(long long)(int)threadIdx.x`.
std::string CudaPrinter::print_cast(const Expr& e) {
    const ExprPtr& a = e.args[0];
    if (is_integer(e.type)) {
        const std::string to = "(" + type_name(e.type) + ")";
        switch (a->kind) {
            case ExprKind::ThreadIdx: return to + "threadIdx.x";
            case ExprKind::BlockIdx: return to + "blockIdx.x";
            case ExprKind::BlockDim: return to + "blockDim.x";
            case ExprKind::GridDim: return to + "gridDim.x";
            default: break;
        }
    }
    return CLikePrinter::print_cast(e);
}

std::string CudaPrinter::print_call(const Expr& e) {
    std::string args;
    for (size_t i = 0; i < e.args.size(); ++i) args += (i ? ", " : "") + print_expr(e.args[i]);
    ScalarType t = e.type;
    const std::string& f = e.name;
    if (f == "bits")
        return t == ScalarType::U32 ? "__float_as_uint(" + args + ")"
                                    : "(unsigned long long)__double_as_longlong(" + args + ")";
    if (f == "pow" && is_float(t)) {
        need(Helper::FloatPow);
        return "shoal_pow(" + args + ")";
    }
    if (is_float(t)) return float_function(f == "abs" ? "fabs" : f == "min" ? "fmin" : f == "max" ? "fmax" : f, t) + "(" + args + ")";
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

// print_cuda_for_device: cuda_printer_planted.cpp (a test's planted bugs).

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
