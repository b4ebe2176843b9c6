#include "runtime/executors.h"

#include <cstdlib>
#include <filesystem>

#include "codegen/compiled_backend.h"
#include "lang/diagnostics.h"
#include "runtime/cpu/cpu_executor.h"
#ifdef SHOAL_HAVE_CUDA
#include "runtime/cuda/cuda_executor.h"
#include "runtime/cuda/kernel_compiler.h"
#include "runtime/cuda/kernel_toolchain.h"
#include "runtime/cuda/simulated_nvrtc.h"
#include "runtime/cuda/simulated_device.h"
#endif

namespace shoal::runtime {

namespace {

#ifdef SHOAL_HAVE_CUDA
// The kernel disk cache (kernel_cache.h's directory), or none with the reason.
std::shared_ptr<cache::KernelDiskCache> disk_cache() {
    std::string why_not;
    std::filesystem::path dir = cache::KernelDiskCache::default_directory(&why_not);
    return std::make_shared<cache::KernelDiskCache>(dir, cache::KernelDiskCache::kDefaultMaxBytes, why_not);
}

// NVRTC with the kernel caches, one for the whole process (the executors
// and `:compile` share its memory cache), or null and why not.
std::shared_ptr<cuda::KernelCompiler> nvrtc_compiler(std::string& why_not) {
    static std::string why;
    static const std::shared_ptr<cuda::KernelCompiler> compiler = [] {
        std::shared_ptr<const cuda::NvrtcApi> nvrtc = cuda::shared_real_nvrtc(&why);
        return nvrtc ? std::make_shared<cuda::KernelCompiler>(nvrtc, disk_cache()) : nullptr;
    }();
    why_not = why;
    return compiler;
}

// The CUDA executor on the machine's first device, or why not.
std::shared_ptr<ir::PlanExecutor> cuda_executor(std::string& why_not) {
    auto api = cuda::real_cuda_runtime();
    const cuda::Probe p = cuda::probe_device(*api);
    if (!p.why_not.empty()) {
        why_not = p.why_not;
        return nullptr;
    }
    std::shared_ptr<cuda::KernelCompiler> compiler = nvrtc_compiler(why_not);
    if (!compiler) return nullptr;
    return cuda::make_cuda_executor(std::move(api), compiler);
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
std::shared_ptr<ir::PlanExecutor> simulated_gpu_executor(const cuda::SimulatedFaults& faults,
                                                        const cuda::SimulatedNvrtcOptions& nvrtc) {
    // No disk cache unless SHOAL_CACHE_DIR names one: tests leave ~/.cache alone.
    std::shared_ptr<cache::KernelDiskCache> disk;
    if (std::getenv("SHOAL_CACHE_DIR")) disk = disk_cache();
    return cuda::make_cuda_executor(cuda::simulated_device(faults),
                                    std::make_shared<cuda::KernelCompiler>(cuda::simulated_nvrtc(nvrtc), disk));
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

std::shared_ptr<ir::KernelToolchain> kernel_toolchain() {
#ifdef SHOAL_HAVE_CUDA
    std::string why_not;
    if (std::shared_ptr<cuda::KernelCompiler> compiler = nvrtc_compiler(why_not))
        return cuda::make_kernel_toolchain(compiler);
#endif
    return nullptr;
}

void install_compiled_backend() {
    set_compiled_backend_factory(
        [] { return compiled::make_compiled_backend(default_executor(), make_executor, kernel_toolchain()); });
}

}  // namespace shoal::runtime
