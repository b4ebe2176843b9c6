// The CUDA printer: kernel IR -> one self-contained CUDA C++ translation unit
// for NVRTC (runtime/cuda/nvrtc.h), readable enough for `:cuda`.
//
// The output depends on nothing but NVRTC's builtins (no #include): the few
// helpers that give Shoal's exact semantics (integer division by zero, wrapping
// signed arithmetic, saturating float->int casts, atomics CUDA lacks, the error
// record) are emitted at the top, and only those some kernel uses.
//
// Launch contract (what the runtime must do):
// - every kernel is `extern "C"` (no name mangling), named Kernel::name, with
//   __launch_bounds__(Kernel::block_size); launch it with exactly that many
//   threads per block and no dynamic shared memory;
// - parameters in Kernel::params order: a Scalar by value with its C type, a
//   Buffer as a device pointer (`const T* __restrict__` when Access::Read,
//   `T* __restrict__` otherwise; bool elements are 1 byte);
// - when !Kernel::checks.empty(), one more, last parameter
//   `ShoalError* shoal_error`: a device struct {unsigned long long key; int
//   code; int lock; long long index; long long extent;} (32 bytes, no
//   padding) that the runtime initialises with key = ~0ull, code = -1 and
//   lock = 0 before the launch. A failed Error statement records its check
//   number, index and extent when its thread (blockIdx.x * blockDim.x +
//   threadIdx.x, stored in key) is lower than the recorded one, so code >= 0
//   afterwards means Kernel::checks[code] failed, and the record holds the
//   lowest failing thread's first failure, as the CPU executor reports it
//   (runtime/cpu/executor.h KernelError) whatever the scheduling.
// Atomic CAS on f32/f64 compares bit patterns (a NaN compare value can match).
#pragma once
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/ir.h"

namespace shoal::ir {

// All kernels in one translation unit (verify each kernel first).
std::string print_cuda(const std::vector<Kernel>& kernels);

// The same unit in parts, for `:cuda` to fold the helpers: the prelude (the
// helper functions the kernels use), their groups' names ("wrapping
// arithmetic", ...) and the kernels.
struct CudaUnit {
    std::string prelude;
    std::vector<std::string> helpers;
    std::string kernels;
};
CudaUnit print_cuda_unit(const std::vector<Kernel>& kernels);

// Every helper of the prelude, as print_cuda emits them when some kernel
// needs them: what host C++ from print_host_cpp calls, and what the unit
// tests compile as host code to check it against lang/scalar_semantics.h.
std::string cuda_full_prelude();

// A host expression (launch_plan.h host_expr_cpp) as host C++: printed as in
// kernels, with the prelude's helpers, but integer / and % always through
// shoal_div / shoal_mod, integer min / max as std::min / std::max, and casts
// through the prelude's conversions or static_cast (never a C cast).
std::string print_host_cpp(const ExprPtr& e);

// Halide CodeGen_C style: one virtual method per node, so a subclass (say for
// another device dialect) overrides only what differs. Statement printers
// write lines; expression printers return the text of the expression.
class CudaPrinter {
public:
    virtual ~CudaPrinter() = default;
    std::string print(const std::vector<Kernel>& kernels);
    CudaUnit print_unit(const std::vector<Kernel>& kernels);

protected:
    // Helper groups emitted once in the prelude when some kernel needs them.
    enum class Helper {
        ErrorRecord, SpecialFloats, WrapArith, DivMod, IntAbs, FloatToInt,
        AtomicAdd, AtomicMin, AtomicMax, AtomicBitwise, AtomicExch, AtomicCAS,
    };

    // ---------------------------------------------------------- kernels
    virtual void print_kernel(const Kernel& k);
    virtual std::string print_param(const Param& p);
    virtual void print_shared(const SharedArray& s);
    virtual void print_blocks(const std::vector<BlockStmtPtr>& body, bool top_level);
    virtual void print_phase(const StmtPtr& code);
    virtual void print_block_for(const BlockStmt& b);
    virtual void print_barrier();

    // ---------------------------------------------------------- statements
    void print_stmt(const StmtPtr& s);
    void print_body(const std::vector<StmtPtr>& body);  // the lines inside braces
    virtual void print_let(const Stmt& s);
    virtual void print_assign(const Stmt& s);
    virtual void print_store(const Stmt& s);
    virtual void print_if(const Stmt& s);
    virtual void print_for(const Stmt& s);
    virtual void print_while(const Stmt& s);
    virtual void print_atomic(const Stmt& s);
    virtual void print_error(const Stmt& s);
    virtual void print_seq(const Stmt& s);
    virtual void print_comment(const std::string& text);

    // ---------------------------------------------------------- expressions
    std::string print_expr(const ExprPtr& e);
    std::string operand(const ExprPtr& e);  // parenthesised unless atomic
    virtual std::string print_const(const Expr& e);
    virtual std::string print_special(const Expr& e);  // ThreadIdx, BlockIdx, BlockDim, GridDim
    virtual std::string print_load(const Expr& e);
    virtual std::string print_unary(const Expr& e);
    virtual std::string print_binary(const Expr& e);
    virtual std::string print_select(const Expr& e);
    virtual std::string print_cast(const Expr& e);
    virtual std::string print_call(const Expr& e);
    virtual std::string print_shuffle(const Expr& e);

    // ---------------------------------------------------------- output
    void line(const std::string& text);
    void open(const std::string& header);  // `header {` and indent
    void close();                          // dedent and `}`
    void need(Helper h) { helpers_.insert(h); }
    std::string prelude() const;
    static std::string type_name(ScalarType t) { return cuda_scalar_name(t); }

    // Written before every kernel: C linkage for NVRTC (the runtime looks
    // kernels up by name); `:emit` prints kernels into a namespace instead.
    std::string kernel_linkage_ = "extern \"C\" ";
    std::ostringstream out_;
    int indent_ = 0;
    std::set<Helper> helpers_;
    const Kernel* kernel_ = nullptr;
    std::set<std::string> read_;      // variables and shared arrays some expression reads
    std::set<std::string> assigned_;  // variables some Assign or Atomic writes after their Let
    int phase_count_ = 0;             // phases in the kernel being printed
    int phase_number_ = 0;
};

}  // namespace shoal::ir
