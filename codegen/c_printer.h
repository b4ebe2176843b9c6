// The C-like printer family: kernel IR -> C++ text. One base prints what
// every dialect shares (statements, expressions, Shoal's scalar-semantics
// helpers, the usage analysis that marks constants and unused names); a
// dialect overrides only what differs (Halide's CodeGen_C -> CodeGen_PTX_Dev):
//   CudaPrinter (cuda_printer.h)  CUDA C++ for NVRTC, `:cuda`, `:emit`
//   CpuPrinter  (cpu_printer.h)   C++ for the system compiler, the CPU
//                                 executor's native tier (blocks as loops)
// The output of every dialect includes no header: the few helpers that give
// Shoal's exact semantics are printed at the top, only those some kernel uses.
#pragma once
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/ir.h"

namespace shoal::ir {

class ThreadLevels;

// A printed unit in parts (for `:cuda` to fold the helpers): the prelude (the
// helper functions the kernels use), their groups' names ("wrapping
// arithmetic", ...) and the kernels.
struct CudaUnit {
    std::string prelude;
    std::vector<std::string> helpers;
    std::string kernels;
};

class CLikePrinter {
public:
    virtual ~CLikePrinter() = default;
    // All kernels in one unit (each is verified first; names must differ).
    CudaUnit print_unit(const std::vector<Kernel>& kernels);

protected:
    // Helper groups emitted once in the prelude when some kernel needs them,
    // in this order. The first group of each line is shared by every dialect
    // (pure C++, printed with the dialect's function qualifier); the rest
    // each dialect writes in its own terms, or never needs.
    enum class Helper {
        ErrorRecord, SpecialFloats, WrapArith, DivMod, IntAbs, FloatToInt,
        AtomicAdd, AtomicMin, AtomicMax, AtomicBitwise, AtomicExch, AtomicCAS,
        // the CPU dialect only
        IntMinMax, MulHi, ThreadRange, CheckedIndex, FloatExpLog,
        // shared again
        FloatPow,
        // the CPU dialect only
        FloatMinMax,
    };
    static const char* helper_name(Helper h);  // "wrapping arithmetic", ...
    // A helper group's text; the base knows the shared ones.
    virtual std::string helper_text(Helper h) const;
    // What precedes every helper function: `__device__ __forceinline__`, `static inline`.
    virtual std::string function_qualifier() const = 0;
    // What precedes a C math function's name: "" (CUDA's powf), "__builtin_"
    // (the CPU's: the unit includes no header).
    virtual std::string libm_prefix() const { return ""; }

    // ---------------------------------------------------------- kernels (the dialect's)
    virtual void print_kernel(const Kernel& k) = 0;
    // The analysis print_kernel starts with: which names are read or
    // reassigned, how many phases.
    void begin_kernel(const Kernel& k);
    virtual void print_blocks(const std::vector<BlockStmtPtr>& body, bool top_level);
    virtual void print_phase(const StmtPtr& code);
    virtual void print_block_for(const BlockStmt& b);
    virtual void print_barrier() = 0;

    // ---------------------------------------------------------- statements
    void print_stmt(const StmtPtr& s);
    void print_body(const std::vector<StmtPtr>& body);  // the lines inside braces
    virtual void print_let(const Stmt& s);
    virtual void print_assign(const Stmt& s);
    virtual void print_store(const Stmt& s);
    virtual void print_if(const Stmt& s);
    virtual void print_for(const Stmt& s);
    std::string for_header(const Stmt& s);  // `for (T v = lo; v < hi; v += step)`
    virtual void print_while(const Stmt& s);
    // Ctrl-C stops a long kernel: with cancel_levels_ set (the kernel's
    // thread levels), every while loop and every other cancel point's loop
    // (thread_levels.h is_cancel_point) starts its body with the dialect's
    // print_cancel_poll().
    virtual void print_cancel_poll() {}
    virtual void print_atomic(const Stmt& s) = 0;
    virtual void print_error(const Stmt& s) = 0;
    virtual void print_seq(const Stmt& s);
    virtual void print_comment(const std::string& text);
    // The comment above an Error statement's record call.
    void print_check_comment(const Stmt& s);

    // ---------------------------------------------------------- expressions
    std::string print_expr(const ExprPtr& e);
    std::string operand(const ExprPtr& e);  // parenthesised unless atomic
    // The index of a load, store or atomic on `memory` as printed (a dialect
    // may check it).
    virtual std::string index(const std::string& memory, MemSpace space, const ExprPtr& i);
    // A variable where it is read or assigned (a name, or a per-thread slot).
    virtual std::string variable(const std::string& name) { return name; }
    virtual std::string print_const(const Expr& e);
    virtual std::string print_special(const Expr& e) = 0;  // ThreadIdx, BlockIdx, BlockDim, GridDim
    virtual std::string print_load(const Expr& e);
    virtual std::string print_unary(const Expr& e);
    virtual std::string print_binary(const Expr& e);
    virtual std::string print_select(const Expr& e);
    virtual std::string print_cast(const Expr& e);
    virtual std::string print_call(const Expr& e) = 0;
    virtual std::string print_shuffle(const Expr& e) = 0;
    // Integer min / max of two operands (Binary and Call).
    virtual std::string int_min_max(const std::string& fn, const Expr& e);
    // A float function of the dialect's library for type t: "fminf", "fmin".
    virtual std::string float_function(const std::string& base, ScalarType t);
    static std::string atomic_suffix(AtomicOp op);  // "add", "cas", ...

    // ---------------------------------------------------------- output
    void line(const std::string& text);
    void open(const std::string& header);  // `header {` and indent
    void close();                          // dedent and `}`
    void reopen(const std::string& header);  // `} header {` between two blocks: `else`, `else if (...)`
    void need(Helper h) { helpers_.insert(h); }
    std::string prelude() const;
    static std::string type_name(ScalarType t) { return cuda_scalar_name(t); }

    std::ostringstream out_;
    int indent_ = 0;
    // Check comments name the source position (file:line:col) of the check.
    bool check_positions_ = true;
    std::set<Helper> helpers_;
    const Kernel* kernel_ = nullptr;
    const ThreadLevels* cancel_levels_ = nullptr;  // set while a kernel that polls the cancel flag prints
    std::set<std::string> read_;      // variables and shared arrays some expression reads
    std::set<std::string> assigned_;  // variables some Assign or Atomic writes after their Let
    int phase_count_ = 0;             // phases in the kernel being printed
    int phase_number_ = 0;
};

// Integer literal of type t as C++ writes it ("5LL", "(-2147483647 - 1)").
std::string int_literal(int64_t v, ScalarType t);
// Whether a constant divisor divides exactly as C++ does (not 0, not -1).
bool plain_divisor(const Expr& b);
bool is_integer_type(ScalarType t);

// s with every occurrence of `from` replaced by `to`.
std::string replace_all(std::string s, const std::string& from, const std::string& to);

}  // namespace shoal::ir
