#include "runtime/executors.h"

#include <cstdlib>

#include "codegen/compiled_backend.h"
#include "lang/diagnostics.h"
#include "runtime/cpu/cpu_executor.h"
#ifdef SHOAL_HAVE_CUDA
#include "runtime/cuda/cuda_executor.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/cuda/simulated_device.h"
#endif

namespace shoal::runtime {

namespace {

#ifdef SHOAL_HAVE_CUDA
// The simulated device's "NVRTC": an image that names its source, which the
// simulated device runs as the kernel IR it was told about.
std::vector<std::string> simulated_compile(const std::vector<cuda::KernelSource>& kernels, const std::string&) {
    std::vector<std::string> images;
    for (const auto& k : kernels) images.push_back("SHOALSIM\n" + k.source);
    return images;
}

std::vector<std::string> nvrtc_compile(const std::vector<cuda::KernelSource>& kernels, const std::string& arch) {
    std::vector<std::string> images;
    for (const auto& k : kernels) {
        cuda::NvrtcResult r = cuda::compile_cuda(k.source, arch);
        if (!r.ok)
            internal_error(__FILE__, __LINE__,
                           "NVRTC failed on kernel " + k.name + " (" + k.origin + "):\n" + r.log + "\n" +
                               cuda::number_lines(k.source));
        images.push_back(std::move(r.ptx));
    }
    return images;
}

// The CUDA executor on the machine's first device, or why not.
std::shared_ptr<ir::PlanExecutor> cuda_executor(std::string& why_not) {
    auto api = cuda::real_cuda_runtime();
    const cuda::Probe p = cuda::probe_device(*api);
    if (!p.why_not.empty()) {
        why_not = p.why_not;
        return nullptr;
    }
    return cuda::make_cuda_executor(std::move(api), nvrtc_compile);
}
#endif

// SHOAL_DEVICE: "cpu", or "simulated" (the test suite's simulated GPU);
// otherwise the machine's GPU when it has a usable one.
std::string device_wanted() {
    const char* env = std::getenv("SHOAL_DEVICE");
    return env ? env : "";
}

// The GPU executor, or null and why not.
std::shared_ptr<ir::PlanExecutor> gpu_executor(std::string& why_not) {
#ifdef SHOAL_HAVE_CUDA
    if (device_wanted() == "simulated") return simulated_gpu_executor(cuda::simulated_faults_from_env());
    return cuda_executor(why_not);
#else
    why_not = "Shoal was built without the CUDA toolkit";
    return nullptr;
#endif
}

}  // namespace

#ifdef SHOAL_HAVE_CUDA
std::shared_ptr<ir::PlanExecutor> simulated_gpu_executor(const cuda::SimulatedFaults& faults) {
    return cuda::make_cuda_executor(cuda::simulated_device(faults), simulated_compile);
}
#endif

std::shared_ptr<ir::PlanExecutor> default_executor() {
    if (device_wanted() == "cpu") return cpu::make_cpu_executor("SHOAL_DEVICE=cpu");
    std::string why_not;
    if (auto gpu = gpu_executor(why_not)) return gpu;
    return cpu::make_cpu_executor(why_not);
}

std::shared_ptr<ir::PlanExecutor> make_executor(const std::string& name) {
    if (name == "cpu") return cpu::make_cpu_executor("the session was switched to the CPU (:set executor cuda returns)");
    if (name != "cuda") user_error(ErrorKind::Usage, Loc{}, "unknown executor '" + name + "' (cpu or cuda)");
    std::string why_not;
    if (auto gpu = gpu_executor(why_not)) return gpu;
    user_error(ErrorKind::Runtime, Loc{}, "the CUDA executor is not available: " + why_not);
}

void install_compiled_backend() {
    set_compiled_backend_factory([] { return compiled::make_compiled_backend(default_executor(), make_executor); });
}

}  // namespace shoal::runtime
