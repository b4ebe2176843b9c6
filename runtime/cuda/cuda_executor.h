// The CUDA executor: walks a plan's host program (codegen/launch_plan.h) on
// a CUDA device through CudaApi (the real runtime or the simulated device):
// allocates from the device's stream-ordered pool, computes host scalars,
// launches each kernel (printed by codegen/cuda_printer.h, compiled to an
// image by a KernelCompiler, loaded once per session) on the session's stream,
// copies the error records and read-back scalars to the host, frees.
//
// Launches are asynchronous: the host waits only for a ReadBack step, for
// the error records at the end of a plan whose kernels check something, and
// when an array's elements are needed on the host (ir::DeviceArray::read).
// Results stay in device memory (ir::ArrayData::device); a host array a
// kernel reads is uploaded once and keeps its copy (Array::device_copy).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "codegen/plan_executor.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/kernel_compiler.h"

namespace shoal::cuda {

// What `:device` prints and the banner summarises.
struct DeviceInfo {
    std::string name;
    int major = 0, minor = 0;  // compute capability
    int sms = 0;
    int64_t memory_bytes = 0;
    int driver_version = 0, runtime_version = 0;  // 13000 = 13.0
    std::string runtime;                          // CudaApi::name()
    std::string arch() const { return "sm_" + std::to_string(major) + std::to_string(minor); }
};

// The device `api` offers, or why there is none usable ("no CUDA driver",
// "no CUDA device", "the driver supports CUDA 12.2; Shoal's runtime needs
// 13.0"): `why_not` is empty when the device can be used.
struct Probe {
    DeviceInfo info;
    std::string why_not;
};
Probe probe_device(CudaApi& api, int device = 0);

// Throws Error(Runtime) with probe_device's reason when the device is not usable.
// `compiler` turns each kernel into an image for the device's architecture
// (NVRTC through the kernel caches; the simulated NVRTC in tests).
std::shared_ptr<ir::PlanExecutor> make_cuda_executor(std::shared_ptr<CudaApi> api,
                                                     std::shared_ptr<KernelCompiler> compiler, int device = 0);

}  // namespace shoal::cuda
