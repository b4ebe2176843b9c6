// The CPU executor of the kernel IR: runs a kernel with the GPU's semantics.
// A block's threads run as vectors of lanes (SIMT with an active mask for
// divergence), phases run in order with a barrier between them, blocks are
// spread over a thread pool, atomics are real atomics across blocks, warp
// shuffles are lane permutations within groups of 32 lanes. Every IR node is
// dispatched once per block (per phase / loop iteration), never per lane.
//
// It is both Shoal's backend without a GPU and the proof that the generated
// kernels are right: the same IR the CUDA printer prints runs here.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/ir.h"
#include "codegen/plan_executor.h"
#include "lang/diagnostics.h"

namespace shoal::cpu {

// A scalar argument value (bit pattern interpreted by the parameter's type).
struct ScalarArg {
    ir::ScalarType type;
    union {
        int64_t i;   // Bool, I32, I64, U32, U64 (zero/sign-extended)
        double f;    // F32, F64
    };
};

// `a` converted to a parameter of type t, as a launch binds it: floats to
// integers saturate (NaN -> 0), to bool is != 0.
ScalarArg convert_scalar(ir::ScalarType t, const ScalarArg& a);

// Memory of a Buffer parameter: host memory the caller owns, aligned for
// its element type (atomics need natural alignment).
struct BufferArg {
    void* data = nullptr;
    // Always checked, in and out of check mode: an out-of-bounds access is a
    // compiler bug and throws Error(Internal) instead of corrupting memory
    // (one compare per lane, or per block on the coalesced path).
    int64_t elements = 0;
};

struct LaunchArgs {
    int64_t grid = 1;                              // number of blocks
    std::map<std::string, ScalarArg> scalars;      // by parameter name
    std::map<std::string, BufferArg> buffers;      // by parameter name
};

// Per-kernel counters: the memory-traffic model while we have no GPU
// (codegen/plan_executor.h). run_kernel adds to them (one Counters can sum
// several launches). Global addresses are taken relative to the buffer's
// start, as if every buffer were 256-byte aligned like a device allocation,
// so the figures do not depend on host alignment.
using Counters = ir::KernelCounters;

struct ExecOptions {
    // Checking mode (`:set check on`, always on in tests): shared-memory
    // races between two barriers (two threads, one writing, same address,
    // same phase; atomics race only with plain accesses), shuffles under
    // divergent control (a warp with some but not all threads active), block
    // loop bounds that differ between threads (barrier divergence).
    // Out-of-bounds accesses are checked in both modes. A violation throws
    // Error(Internal) naming the kernel, the phase, the memory or variable,
    // the thread and the index.
    bool check = false;
    int threads = 0;  // worker threads for blocks; 0 = all cores
    // Set by another thread to stop the launch (Ctrl-C, the session's cancel
    // flag): looked at before every block and every loop trip, the launch
    // then throws Error(Interrupted, "interrupted").
    const std::atomic<bool>* cancel = nullptr;
};

// The first failed Error statement of a launch (code < 0: none). "First" is
// the lowest global thread (block * blockDim + thread), and that thread's
// first in program order, so the result does not depend on scheduling or the
// number of workers; the CUDA prelude's error record keeps the same one.
struct KernelError {
    int code = -1;
    int64_t index = 0;
    int64_t extent = 0;
};

// Runs one launch: compiles k for these arguments (names resolved, no string
// lookups while running), then runs the grid's blocks on a process-wide
// thread pool, the calling thread included. Throws Error(Internal) for a
// kernel it cannot run (missing arguments, unknown names, block size outside
// 1..1024) and for check violations. Thread safe: different launches may run
// concurrently.
KernelError run_kernel(const ir::Kernel& k, const LaunchArgs& args, const ExecOptions& options, Counters& counters);
// `:cache`: kernels the interpreter holds compiled to node programs, and its cap.
std::pair<size_t, size_t> interpreter_programs();

}  // namespace shoal::cpu
