// Which executor runs a session's launch plans. The front ends call
// install_compiled_backend() once and name no executor: this file picks the
// best one the machine has (the CPU executor today; the CUDA executor, with
// its reasons for declining, when it lands) and the banners describe it.
#pragma once
#include <memory>

#include "codegen/plan_executor.h"
#ifdef SHOAL_HAVE_CUDA
#include "runtime/cuda/simulated_device.h"
#include "runtime/cuda/simulated_nvrtc.h"
#endif

namespace shoal::runtime {

// The executor new sessions use: the GPU when there is a usable one (or
// SHOAL_DEVICE=simulated: the simulated device), else the CPU executor with
// the reason (SHOAL_DEVICE=cpu forces it).
std::shared_ptr<ir::PlanExecutor> default_executor();

// The executor `:set executor NAME` asks for ("cpu", "cuda"); throws
// Error(Runtime) with the reason when there is no usable GPU.
std::shared_ptr<ir::PlanExecutor> make_executor(const std::string& name);

// The GPU compiler for `:compile` and `:cache` (NVRTC with the kernel
// caches), or null when NVRTC is not available.
std::shared_ptr<ir::KernelToolchain> kernel_toolchain();

#ifdef SHOAL_HAVE_CUDA
// The CUDA executor on a new simulated device with these faults, compiling
// with the simulated NVRTC (tests).
std::shared_ptr<ir::PlanExecutor> simulated_gpu_executor(const cuda::SimulatedFaults& faults,
                                                        const cuda::SimulatedNvrtcOptions& nvrtc = {});
#endif

// Makes every Session's compiled backend the fusion engine on default_executor().
void install_compiled_backend();

}  // namespace shoal::runtime
