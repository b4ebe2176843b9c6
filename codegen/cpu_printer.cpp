#include "codegen/cpu_printer.h"

#include <map>
#include <memory>

#include "codegen/ir_visitor.h"
#include "codegen/thread_levels.h"
#include "lang/diagnostics.h"

namespace shoal::ir {
namespace {

// ---------------------------------------------------------------- the prelude
// The CPU's own helper groups (the shared ones are in c_printer.cpp). Plain
// C++ with GCC/Clang builtins: the unit includes no header, which keeps a
// compile near 100 ms (<cmath> or <atomic> alone add most of a second).
const std::map<int, const char*>& cpu_helper_texts() {
    static const std::map<int, const char*> texts = {
        {0,  // ErrorRecord
         R"(// The error record of one chunk of blocks (one OS thread): the failed check
// of the lowest global thread (block * blockDim + thread), that thread's first
// in program order. The executor keeps the lowest over all chunks.
struct ShoalError {
    unsigned long long key;
    int code;
    int lock;
    long long index;
    long long extent;
};
__attribute__((noinline, cold)) static void shoal_record_error(ShoalError* e, unsigned long long key, int code,
                                                              long long index, long long extent) {
    if (key < e->key) {  // strictly lower: a thread's later failure never replaces its first
        e->key = key;
        e->code = code;
        e->index = index;
        e->extent = extent;
    }
}
)"},
        {1,  // SpecialFloats
         R"(// Non-finite constants (C++ has no literals for them).
static inline float shoal_inf_f32() { return __builtin_bit_cast(float, 0x7f800000u); }
static inline float shoal_nan_f32() { return __builtin_bit_cast(float, 0x7fc00000u); }
static inline double shoal_inf_f64() { return __builtin_bit_cast(double, 0x7ff0000000000000ULL); }
static inline double shoal_nan_f64() { return __builtin_bit_cast(double, 0x7ff8000000000000ULL); }
)"},
        {6,  // AtomicAdd (with every other global atomic that needs a loop)
         R"(// A global atomic as a compare-and-swap loop on the bits (floats, min/max):
// `next` gives the new value from the old one.
template <typename T, typename F>
static inline T shoal_atomic_update(T* p, F next) {
    T old;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    T value = next(old);
    while (!__atomic_compare_exchange(p, &old, &value, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) value = next(old);
    return old;
}
)"},
        {10,  // AtomicExch
         R"(// atomicExch for every type (floats through their bits).
template <typename T>
static inline T shoal_atomic_exch(T* p, T v) {
    T old;
    __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);
    return old;
}
)"},
        {11,  // AtomicCAS
         R"(// atomicCAS for every type; floats compare bit patterns, as on a GPU.
template <typename T>
static inline T shoal_atomic_cas(T* p, T compare, T v) {
    __atomic_compare_exchange(p, &compare, &v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return compare;  // the old value: unchanged on success, the current one on failure
}
// The same on a block's own memory (no other OS thread sees it).
template <typename T>
static inline T shoal_plain_cas(T* p, T compare, T v) {
    const T old = *p;
    if (__builtin_memcmp(&old, &compare, sizeof(T)) == 0) *p = v;
    return old;
}
)"},
        {12,  // IntMinMax
         R"(// Integer min / max (CUDA's device builtins; the same values).
template <typename T> static inline T shoal_min(T a, T b) { return b < a ? b : a; }
template <typename T> static inline T shoal_max(T a, T b) { return a < b ? b : a; }
)"},
        {13,  // MulHi
         R"(// The high half of the full product (CUDA's __mulhi family).
static inline int shoal_mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned shoal_mulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline long long shoal_mulhi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static inline unsigned long long shoal_mulhi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
)"},
        {15,  // CheckedIndex
         R"(// Checked code (SHOAL_NATIVE_CHECKED): an index outside its buffer stops the
// process with a message (on file descriptor 2, unbuffered) instead of
// corrupting memory.
extern "C" int dprintf(int fd, const char* format, ...);
__attribute__((noinline, cold)) static void shoal_out_of_bounds(long long i, long long extent, const char* kernel,
                                                               const char* buffer) {
    dprintf(2, "shoal: native kernel %s: index %lld of buffer %s is outside its %lld elements\n", kernel, i,
                     buffer, extent);
    __builtin_trap();
}
static inline long long shoal_checked_index(long long i, long long extent, const char* kernel, const char* buffer) {
    if (__builtin_expect(i < 0 || i >= extent, 0)) shoal_out_of_bounds(i, extent, kernel, buffer);
    return i;
}
)"},
        {14,  // ThreadRange
         R"(// A range of threads [0, block) clipped from a uniform bound.
static inline int shoal_clamp(long long v, int block) { return v < 0 ? 0 : v > block ? block : (int)v; }
)"},
    };
    return texts;
}

// A phase in CPU loops: runs of statements every thread executes (a thread
// loop each), grid-stride loops turned inside out, and guards that are a
// range of threads.
struct Segment {
    enum Kind { AllThreads, Interchanged, Bounded } kind = AllThreads;
    std::vector<StmtPtr> stmts;  // AllThreads: its statements; Interchanged: the For; Bounded: the If
    // Interchanged: thread t's loop starts at base + t; Bounded: threads [lo, hi).
    // Uniform, with lets inlined (ThreadLevels::inline_lets).
    ExprPtr base, hi, step, lo;
    // Names the segment mentions, and the variables its top level declares.
    std::set<std::string> mentioned;
    std::map<std::string, ScalarType> declared;
};

class NameCollector : public IRVisitor {
public:
    std::set<std::string>* into = nullptr;
    using IRVisitor::visit;
    void visit(const ExprPtr& e) override {
        if (e->kind == ExprKind::Var) into->insert(e->name);
        IRVisitor::visit(e);
    }
    void visit(const StmtPtr& s) override {
        if (s->kind == StmtKind::Assign) into->insert(s->name);
        if (s->kind == StmtKind::Atomic && !s->result.empty()) into->insert(s->result);
        IRVisitor::visit(s);
    }
};

bool is_zero(const ExprPtr& e) { return e->kind == ExprKind::Const && e->i == 0; }

// b - base, without the subtraction when base is 0.
ExprPtr minus(const ExprPtr& b, const ExprPtr& base) { return is_zero(base) ? b : binary(BinaryOp::Sub, b, base); }

std::vector<Segment> segments_of(const StmtPtr& code, const ThreadLevels& levels) {
    std::vector<Segment> out;
    const std::vector<StmtPtr> top = code->kind == StmtKind::Seq ? code->body : std::vector{code};
    for (const StmtPtr& s : top) {
        Segment seg;
        if (s->kind == StmtKind::For) {
            // for (v = base + threadIdx; v < hi; v += step): every thread's
            // iterations are base + k * step + threadIdx.
            const auto lo = levels.affine(s->exprs[0]);
            if (lo && lo->stride == 1 && levels.uniform(s->exprs[1]) && levels.uniform(s->exprs[2])) {
                seg.kind = Segment::Interchanged;
                seg.base = levels.inline_lets(lo->base);
                seg.hi = levels.inline_lets(s->exprs[1]);
                seg.step = levels.inline_lets(s->exprs[2]);
            }
        } else if (s->kind == StmtKind::If && s->else_body.empty() && s->exprs[0]->kind == ExprKind::Binary) {
            // if (base + threadIdx < b) / if (base + threadIdx == b): a range of threads.
            const Expr& c = *s->exprs[0];
            const auto a = levels.affine(c.args[0]);
            const bool bounded = (c.binary_op == BinaryOp::Lt || c.binary_op == BinaryOp::Eq) && a && a->stride == 1 &&
                                 levels.uniform(c.args[1]) && is_signed_int(c.args[0]->type);
            if (bounded) {
                seg.kind = Segment::Bounded;
                const ExprPtr first = levels.inline_lets(minus(c.args[1], a->base));
                if (c.binary_op == BinaryOp::Lt) {
                    seg.lo = const_int(0);
                    seg.hi = first;
                } else {
                    seg.lo = first;
                    seg.hi = binary(BinaryOp::Add, first, const_int(1, first->type));
                }
            }
        }
        if (seg.kind == Segment::AllThreads) {
            if (out.empty() || out.back().kind != Segment::AllThreads) out.emplace_back();
            out.back().stmts.push_back(s);
        } else {
            seg.stmts = {s};
            out.push_back(std::move(seg));
        }
    }
    for (Segment& seg : out) {
        NameCollector c;
        c.into = &seg.mentioned;
        for (const auto& s : seg.stmts) {
            c.visit(s);
            if (seg.kind == Segment::AllThreads && s->kind == StmtKind::Let) seg.declared[s->name] = s->type;
        }
    }
    return out;
}

bool has_shuffle(const Kernel& k) {
    struct Finder : IRVisitor {
        bool found = false;
        using IRVisitor::visit;
        void visit(const ExprPtr& e) override {
            found = found || e->kind == ExprKind::Shuffle;
            IRVisitor::visit(e);
        }
    } f;
    f.visit_kernel(k);
    return f.found;
}

class CpuPrinter final : public CLikePrinter {
public:
    explicit CpuPrinter(bool checked) : checked_(checked) {}

    std::string print(const std::vector<Kernel>& kernels) {
        const CudaUnit unit = print_unit(kernels);
        return "// Generated by Shoal from the kernel IR for the CPU: " + std::to_string(kernels.size()) +
               (kernels.size() == 1 ? " kernel" : " kernels") +
               ", each block's threads as loops. Self-contained: it needs no headers.\n\n" + unit.prelude +
               unit.kernels;
    }

protected:
    std::string helper_text(Helper h) const override {
        auto it = cpu_helper_texts().find(static_cast<int>(h));
        return it != cpu_helper_texts().end() ? it->second : CLikePrinter::helper_text(h);
    }
    std::string function_qualifier() const override { return "static inline"; }

    // ---------------------------------------------------------- kernels
    void print_kernel(const Kernel& k) override {
        SHOAL_INTERNAL_ASSERT(cpu_unsupported_reason(k).empty(),
                              "the CPU printer cannot print kernel " + k.name + ": " + cpu_unsupported_reason(k));
        begin_kernel(k);
        need(Helper::ErrorRecord);
        find_per_thread(k);

        if (!k.comment.empty()) print_comment(k.comment);
        std::vector<std::string> params = {"long long shoal_first_block", "long long shoal_end_block",
                                           "[[maybe_unused]] long long shoal_grid"};
        for (const auto& p : k.params) params.push_back(print_param(p));
        if (checked_) {
            need(Helper::CheckedIndex);
            for (const auto& p : k.params)
                if (p.kind == ParamKind::Buffer) params.push_back("[[maybe_unused]] long long shoal_extent_" + p.name);
        }
        params.push_back("[[maybe_unused]] ShoalError* __restrict__ shoal_error");
        params.push_back("const unsigned char* shoal_cancel");
        // The body takes the buffers as __restrict__ parameters: compilers
        // ignore restrict on local pointers, and without it every store may
        // alias every load (Black-Scholes 1.5x slower).
        line("static int shoal_blocks_" + k.name + "(");
        for (size_t i = 0; i < params.size(); ++i) line("    " + params[i] + (i + 1 < params.size() ? "," : ") {"));
        ++indent_;
        open("for (long long shoal_block = shoal_first_block; shoal_block < shoal_end_block; ++shoal_block)");
        print_cancel_check();
        for (const auto& s : k.shared) {
            std::string unused = read_.count(s.name) ? "" : "[[maybe_unused]] ";
            line(unused + type_name(s.type) + " " + s.name + "[" + std::to_string(s.size) + "];  // shared memory");
        }
        for (const auto& [name, type] : per_thread_)
            line(type_name(type) + " " + name + "[" + std::to_string(k.block_size) + "];  // per thread, used by another loop of the block");
        print_blocks(k.body, true);
        close();
        line("return 0;");
        close();
        print_entry(k);
        kernel_ = nullptr;
    }

    // The C entry point: unpacks the argument array (entry contract, cpu_printer.h).
    void print_entry(const Kernel& k) {
        line("");
        line("extern \"C\" int " + cpu_entry_symbol(k.name) +
             "(void* const* shoal_args, [[maybe_unused]] const long long* shoal_extents, long long shoal_first_block,");
        line("        long long shoal_end_block, long long shoal_grid,");
        line("        ShoalError* shoal_error, const unsigned char* shoal_cancel) {");
        ++indent_;
        std::string call = "return shoal_blocks_" + k.name + "(shoal_first_block, shoal_end_block, shoal_grid";
        for (size_t i = 0; i < k.params.size(); ++i) {
            const Param& p = k.params[i];
            const std::string arg = "shoal_args[" + std::to_string(i) + "]";
            const std::string t = type_name(p.type);
            call += ", " + (p.kind == ParamKind::Scalar ? "*(const " + t + "*)" + arg : "(" + t + "*)" + arg);
        }
        if (checked_)
            for (size_t i = 0; i < k.params.size(); ++i)
                if (k.params[i].kind == ParamKind::Buffer) call += ", shoal_extents[" + std::to_string(i) + "]";
        line(call + ", shoal_error, shoal_cancel);");
        close();
    }

    std::string print_param(const Param& p) {
        std::string t = type_name(p.type);
        if (p.kind == ParamKind::Scalar) return "[[maybe_unused]] " + t + " " + p.name;
        return "[[maybe_unused]] " + std::string(p.access == Access::Read ? "const " : "") + t + "* __restrict__ " + p.name;
    }

    // The segments of every phase, in print order.
    void segment_phases(const std::vector<BlockStmtPtr>& body) {
        for (const auto& b : body) {
            if (b->kind == BlockStmtKind::BlockFor) segment_phases(b->body);
            else segments_[b->phase.get()] = segments_of(b->phase, *levels_);
        }
    }

    // Variables declared at the top level of one segment and used in
    // another live in per-thread arrays.
    void find_per_thread(const Kernel& k) {
        levels_ = std::make_unique<ThreadLevels>(k);
        segments_.clear();
        segment_phases(k.body);
        std::vector<const Segment*> all;
        for (const auto& [phase, segs] : segments_)
            for (const Segment& seg : segs) all.push_back(&seg);
        per_thread_.clear();
        for (const Segment* a : all)
            for (const auto& [name, type] : a->declared)
                for (const Segment* b : all)
                    if (b != a && b->mentioned.count(name)) per_thread_[name] = type;
    }

    std::string block_size() const { return std::to_string(kernel_->block_size); }

    // A phase is loops over the block's threads; its end is the barrier.
    void print_phase(const StmtPtr& code) override {
        for (const Segment& seg : segments_.at(code.get())) {
            switch (seg.kind) {
                case Segment::AllThreads:
                    open("for (int shoal_tid = 0; shoal_tid < " + block_size() + "; ++shoal_tid)");
                    print_body(seg.stmts);
                    close();
                    break;
                case Segment::Interchanged: print_interchanged(seg); break;
                case Segment::Bounded: print_bounded(seg); break;
            }
        }
    }
    void print_barrier() override {}

    // A grid- or block-stride loop with the threads innermost: each step
    // covers a contiguous run of indices (vectorisable), in every thread's
    // own order of iterations.
    void print_interchanged(const Segment& seg) {
        const Stmt& loop = *seg.stmts[0];
        need(Helper::ThreadRange);
        const std::string base = "shoal_base_" + loop.name;
        const std::string hi = "(long long)" + operand(seg.hi);
        print_comment("threads innermost: " + loop.name + " = " + base + " + shoal_tid");
        open("for (long long " + base + " = (long long)" + operand(seg.base) + "; " + base + " < " + hi + "; " + base +
             " += (long long)" + operand(seg.step) + ")");
        line("const int shoal_threads = shoal_clamp(" + hi + " - " + base + ", " + block_size() + ");");
        open("for (int shoal_tid = 0; shoal_tid < shoal_threads; ++shoal_tid)");
        line("const " + type_name(loop.type) + " " + loop.name + " = (" + type_name(loop.type) + ")(" + base +
             " + shoal_tid);");
        print_body(loop.body);
        close();
        close();
    }

    // A guard that selects a range of threads: the range is the loop.
    void print_bounded(const Segment& seg) {
        const Stmt& guard = *seg.stmts[0];
        need(Helper::ThreadRange);
        print_comment("threads where " + to_string(guard.exprs[0]));
        line("{");
        ++indent_;
        line("const int shoal_first = shoal_clamp((long long)" + operand(seg.lo) + ", " + block_size() + ");");
        line("const int shoal_end = shoal_clamp((long long)" + operand(seg.hi) + ", " + block_size() + ");");
        open("for (int shoal_tid = shoal_first; shoal_tid < shoal_end; ++shoal_tid)");
        print_body(guard.body);
        close();
        close();
    }

    // ---------------------------------------------------------- statements
    std::string variable(const std::string& name) override {
        return per_thread_.count(name) ? name + "[shoal_tid]" : name;
    }

    void print_let(const Stmt& s) override {
        if (per_thread_.count(s.name)) line(variable(s.name) + " = " + print_expr(s.exprs[0]) + ";");
        else CLikePrinter::print_let(s);
    }

    // Ctrl-C stops a long kernel: the cancel flag is read before every
    // block, in every while loop and in every for loop whose trip count
    // depends on data (a bound read from memory); loops over a block's
    // share of an array end soon enough.
    void print_cancel_check() { line("if (__atomic_load_n(shoal_cancel, __ATOMIC_RELAXED)) return 1;"); }

    void print_while(const Stmt& s) override {
        open("while (" + print_expr(s.exprs[0]) + ")");
        print_cancel_check();
        print_body(s.body);
        close();
    }

    void print_for(const Stmt& s) override {
        const bool data_dependent = levels_->level(s.exprs[1]) == ThreadLevel::Varying ||
                                    levels_->level(s.exprs[2]) == ThreadLevel::Varying;
        if (!data_dependent) return CLikePrinter::print_for(s);
        open(for_header(s));
        print_cancel_check();
        print_body(s.body);
        close();
    }

    void print_error(const Stmt& s) override {
        print_check_comment(s);
        line("shoal_record_error(shoal_error, (unsigned long long)(shoal_block * " +
             std::to_string(kernel_->block_size) + " + shoal_tid), " + std::to_string(s.error_code) + ", " +
             print_expr(s.exprs[0]) + ", " + print_expr(s.exprs[1]) + ");");
    }

    // The value an atomic stores, from the old value `old` and the operand `v`.
    std::string combine(AtomicOp op, ScalarType t, const std::string& old, const std::string& v) {
        switch (op) {
            case AtomicOp::Add:
                if (!is_signed_int(t)) return old + " + " + v;
                need(Helper::WrapArith);
                return "shoal_add(" + old + ", " + v + ")";
            case AtomicOp::Min:
            case AtomicOp::Max: {
                const std::string fn = op == AtomicOp::Min ? "min" : "max";
                if (is_float(t)) return float_function("f" + fn, t) + "(" + old + ", " + v + ")";
                need(Helper::IntMinMax);
                return "shoal_" + fn + "(" + old + ", " + v + ")";
            }
            case AtomicOp::And: return old + " & " + v;
            case AtomicOp::Or: return old + " | " + v;
            case AtomicOp::Xor: return old + " ^ " + v;
            default: return v;  // Exch
        }
    }

    void print_atomic(const Stmt& s) override {
        const std::string t = type_name(s.type);
        const std::string addr = "&" + s.name + "[" + index(s.name, s.space, s.exprs[0]) + "]";
        const std::string v = print_expr(s.exprs[1]);
        const std::string result = s.result.empty() ? "" : variable(s.result) + " = ";
        const bool integer = is_integer_type(s.type);
        if (s.atomic_op == AtomicOp::CAS) {
            need(Helper::AtomicCAS);
            const char* fn = s.space == MemSpace::Shared ? "shoal_plain_cas" : "shoal_atomic_cas";
            line(result + fn + "(" + addr + ", " + print_expr(s.exprs[2]) + ", " + v + ");");
            return;
        }
        if (s.space == MemSpace::Shared) {  // one OS thread runs the whole block
            line("{");
            ++indent_;
            line(t + "* const shoal_p = " + addr + ";");
            line("const " + t + " shoal_v = " + v + ";");
            line("const " + t + " shoal_old = *shoal_p;");
            line("*shoal_p = " + combine(s.atomic_op, s.type, "shoal_old", "shoal_v") + ";");
            if (!s.result.empty()) line(result + "shoal_old;");
            close();
            return;
        }
        const char* fetch = nullptr;
        if (integer) {
            switch (s.atomic_op) {
                case AtomicOp::Add: fetch = "__atomic_fetch_add"; break;
                case AtomicOp::And: fetch = "__atomic_fetch_and"; break;
                case AtomicOp::Or: fetch = "__atomic_fetch_or"; break;
                case AtomicOp::Xor: fetch = "__atomic_fetch_xor"; break;
                case AtomicOp::Exch: fetch = "__atomic_exchange_n"; break;
                default: break;
            }
        }
        if (fetch) {  // two's complement: the builtins wrap
            line(result + fetch + "(" + addr + ", " + v + ", __ATOMIC_RELAXED);");
        } else if (s.atomic_op == AtomicOp::Exch) {
            need(Helper::AtomicExch);
            line(result + "shoal_atomic_exch(" + addr + ", " + v + ");");
        } else {
            need(Helper::AtomicAdd);
            line("{");
            ++indent_;
            line("const " + t + " shoal_v = " + v + ";");
            line(result + "shoal_atomic_update(" + addr + ", [shoal_v](" + t + " shoal_old) { return " +
                 combine(s.atomic_op, s.type, "shoal_old", "shoal_v") + "; });");
            close();
        }
    }

    // ---------------------------------------------------------- expressions
    std::string index(const std::string& memory, MemSpace space, const ExprPtr& i) override {
        if (!checked_ || space != MemSpace::Global) return print_expr(i);
        return "shoal_checked_index(" + print_expr(i) + ", shoal_extent_" + memory + ", \"" + kernel_->name + "\", \"" +
               memory + "\")";
    }

    std::string print_special(const Expr& e) override {
        switch (e.kind) {
            case ExprKind::ThreadIdx: return "shoal_tid";
            case ExprKind::BlockIdx: return "shoal_block";
            case ExprKind::BlockDim: return std::to_string(kernel_->block_size);
            default: return "shoal_grid";
        }
    }

    std::string float_function(const std::string& base, ScalarType t) override {
        return "__builtin_" + CLikePrinter::float_function(base, t);
    }

    std::string int_min_max(const std::string& fn, const Expr& e) override {
        need(Helper::IntMinMax);
        return CLikePrinter::int_min_max("shoal_" + fn, e);
    }

    std::string print_call(const Expr& e) override {
        std::string args;
        for (size_t i = 0; i < e.args.size(); ++i) args += (i ? ", " : "") + print_expr(e.args[i]);
        const ScalarType t = e.type;
        const std::string& f = e.name;
        if (f == "bits") return "__builtin_bit_cast(" + type_name(t) + ", " + args + ")";
        if (is_float(t))
            return float_function(f == "abs" ? "fabs" : f == "min" ? "fmin" : f == "max" ? "fmax" : f, t) + "(" + args + ")";
        if (f == "abs") {
            if (is_unsigned_int(t)) return print_expr(e.args[0]);
            need(Helper::IntAbs);
            return "shoal_abs(" + args + ")";
        }
        if (f == "mulhi") {
            need(Helper::MulHi);
            return "shoal_mulhi(" + args + ")";
        }
        return int_min_max(f, e);  // integer min / max
    }

    std::string print_shuffle(const Expr&) override {
        SHOAL_INTERNAL_ASSERT(false, "the CPU printer met a shuffle (cpu_unsupported_reason)");
        return "";
    }

private:
    const bool checked_;
    std::map<std::string, ScalarType> per_thread_;
    std::unique_ptr<ThreadLevels> levels_;
    std::map<const Stmt*, std::vector<Segment>> segments_;  // by phase
};

}  // namespace

std::string cpu_unsupported_reason(const Kernel& k) {
    if (has_shuffle(k)) return "it uses warp shuffles";
    return "";
}

std::string print_cpu(const std::vector<Kernel>& kernels, bool checked) { return CpuPrinter(checked).print(kernels); }

std::string cpu_entry_symbol(const std::string& kernel) { return "shoal_native_" + kernel; }

}  // namespace shoal::ir
