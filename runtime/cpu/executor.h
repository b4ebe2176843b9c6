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
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/ir.h"
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

// Memory of a Buffer parameter: host memory the caller owns.
struct BufferArg {
    void* data = nullptr;
    int64_t elements = 0;  // for bounds checking in check mode
};

struct LaunchArgs {
    int64_t grid = 1;                              // number of blocks
    std::map<std::string, ScalarArg> scalars;      // by parameter name
    std::map<std::string, BufferArg> buffers;      // by parameter name
};

// Per-kernel counters: the memory-traffic model while we have no GPU.
struct Counters {
    int64_t launches = 0;
    int64_t global_bytes_loaded = 0;
    int64_t global_bytes_stored = 0;
    int64_t global_sectors = 0;      // distinct 32-byte sectors touched per warp access, summed
    int64_t shared_bank_conflicts = 0;  // extra serialised shared-memory wavefronts per warp access
    int64_t atomics = 0;
    int64_t barriers = 0;            // per block
};

struct ExecOptions {
    // Checking mode (`:set check on`, always on in tests): out-of-bounds
    // global/shared accesses, shared-memory races between two barriers
    // (two lanes, one writing, same address, same phase), barrier/shuffle
    // divergence. A violation throws Error(Internal) naming the kernel,
    // the phase and the access.
    bool check = false;
    int threads = 0;  // worker threads for blocks; 0 = all cores
};

// The first failed Error statement of a launch (code < 0: none).
struct KernelError {
    int code = -1;
    int64_t index = 0;
    int64_t extent = 0;
};

// Runs one launch. Thread safe: different launches may run concurrently.
KernelError run_kernel(const ir::Kernel& k, const LaunchArgs& args, const ExecOptions& options, Counters& counters);

}  // namespace shoal::cpu
