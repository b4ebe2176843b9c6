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
//   (runtime/cpu/executor.h KernelError) whatever the scheduling;
// - when the kernel has cancel points (thread_levels.h has_cancel_points),
//   one more, last parameter `const volatile unsigned char* shoal_cancel`:
//   the address of a byte the kernel reads every 1024th trip of such a loop,
//   returning when it is not 0 (Ctrl-C; docs/cuda-backend.md).
// Atomic CAS on f32/f64 compares bit patterns (a NaN compare value can match).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "codegen/c_printer.h"
#include "codegen/thread_levels.h"

namespace shoal::ir {

// All kernels in one translation unit (verify each kernel first).
std::string print_cuda(const std::vector<Kernel>& kernels);
// The unit an executor compiles: the same code without the source
// positions of its checks (errors name them from the plan's check table),
// so one kernel typed on another line is the same source, one NVRTC
// compile and one kernel-cache entry.
std::string print_cuda_for_device(const std::vector<Kernel>& kernels);

// The same unit in parts, for `:cuda` to fold the helpers (c_printer.h CudaUnit).
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
// For the test that proves the printed CUDA's run can fail: the kernels
// printed with one planted bug ("barrier", "divide", "shuffle-direction",
// "divergent-shuffle", "tile-halo", "cast"; cuda_printer_planted.cpp).
// print_cuda_for_device plants SHOAL_PLANTED_PRINTER_BUG's, when it is set.
std::string print_cuda_with_planted_bug(const std::vector<Kernel>& kernels, const std::string& bug);

// The CUDA dialect of the C-like printer family (c_printer.h): kernels as
// `__global__` functions with the launch contract above, CUDA's built-in
// indices, `__syncthreads()`, shuffles and atomics, NVRTC's math library.
class CudaPrinter : public CLikePrinter {
public:
    std::string print(const std::vector<Kernel>& kernels);
    void omit_check_positions() { check_positions_ = false; }
    // Every helper group a CUDA unit may need (cuda_full_prelude).
    static std::string full_prelude();

protected:
    std::string helper_text(Helper h) const override;
    std::string function_qualifier() const override { return "__device__ __forceinline__"; }

    void print_kernel(const Kernel& k) override;
    virtual std::string print_param(const Param& p);
    virtual void print_shared(const SharedArray& s);
    void print_barrier() override;
    void print_atomic(const Stmt& s) override;
    void print_error(const Stmt& s) override;
    std::string print_special(const Expr& e) override;
    std::string print_cast(const Expr& e) override;
    std::string print_call(const Expr& e) override;
    std::string print_shuffle(const Expr& e) override;

    void print_cancel_poll() override;

    // Written before every kernel: C linkage for NVRTC (the runtime looks
    // kernels up by name); `:emit` prints kernels into a namespace instead.
    std::string kernel_linkage_ = "extern \"C\" ";
    // Whether kernels with cancel points take the cancel flag and poll it
    // (`:emit`'s kernels have no Ctrl-C to answer: they do not).
    bool polls_cancel_ = true;

private:
    std::unique_ptr<ThreadLevels> levels_;  // of the kernel being printed, when it polls
};

}  // namespace shoal::ir
