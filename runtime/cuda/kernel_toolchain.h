// The GPU compiler behind `:compile` and `:cache` (codegen/plan_executor.h's
// KernelToolchain): a KernelCompiler (NVRTC, the memory and disk caches)
// that works without a GPU, plus the occupancy a kernel's registers and
// shared memory allow on the architecture it was compiled for.
#pragma once
#include <memory>
#include <string>

#include "codegen/plan_executor.h"
#include "runtime/cuda/kernel_compiler.h"

namespace shoal::cuda {

std::shared_ptr<ir::KernelToolchain> make_kernel_toolchain(std::shared_ptr<KernelCompiler> compiler);

// Resident blocks per SM for a kernel on compute capability `sm` (90 for
// sm_90), and what limits them ("threads", "blocks", "registers", "shared
// memory"). registers < 0: unknown (not counted).
struct Occupancy {
    int blocks_per_sm = 0;
    int percent = 0;  // resident threads / the SM's maximum
    std::string limited_by;
};
Occupancy occupancy(int sm, int block_size, int registers, int shared_bytes);

}  // namespace shoal::cuda
