// The CUDA Runtime, simulated: libshoal_simulated_cudart.so. A program
// compiled with nvcc links it instead of cudart (CMake: CUDA_RUNTIME_LIBRARY
// None) and runs on Shoal's simulated device (simulated_device.h): device
// memory in an inaccessible address range, work queued per stream and run
// at synchronisations, every kernel run as its IR on the CPU executor in
// checking mode. This is how the C++ wrappers `:emit` writes run on
// machines without a GPU (docs/emit.md; the test emit_example_simulated).
//
// Which IR: nvcc's registration code names each kernel of the program (its
// mangled name, which spells the parameter types). The IR comes from the
// Shoal script named by SHOAL_EMIT_SCRIPT, run here: its `:emit` lines
// trace their functions as at the prompt, and instead of writing, the files
// they would write are compared with the ones on disk -- the program must
// have been built from what the script emits now. A kernel is run only if
// that script emitted one of its name and parameter types.
//
// Implemented: what emitted wrappers and their callers use (devices and
// versions, streams, stream-ordered and plain allocation, copies, memset,
// launches, errors); any other runtime function fails at link time. Misuse
// a real GPU punishes with a crash or garbage (a host pointer in a kernel,
// a freed address, a copy past an allocation, a block size the kernel was
// not compiled for) is reported on stderr and aborts the program.
#include <cuda_runtime_api.h>
#include <cxxabi.h>

#include <cstddef>
#include <cstdio>
#include <deque>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/compiled_backend.h"
#include "codegen/engine.h"
#include "lang/diagnostics.h"
#include "lang/session.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/cuda/simulated_device.h"

namespace shoal::cuda {
namespace {

[[noreturn]] void fail(const std::string& why) {
    std::fprintf(stderr, "shoal simulated CUDA runtime: %s\n", why.c_str());
    std::fflush(stderr);
    std::abort();
}

// Runs a runtime function; a violation the simulated device found (an
// Error) ends the program as a crash would, with the reason.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const Error& e) {
        fail(format_error(e));
    } catch (const std::exception& e) {
        fail(e.what());
    }
}

// A script's statements run silently; the first error is kept.
class ScriptOutput final : public SessionOutput {
public:
    void value(const Value&, const Type&, const std::string&) override {}
    void text(const std::string&) override {}
    void warning(const std::string&) override {}
    void error(const Error& e) override {
        if (first_error.empty()) first_error = format_error(e);
    }
    std::string first_error;
};

std::string read_file(const std::string& path, bool& found) {
    std::ifstream in(path, std::ios::binary);
    found = static_cast<bool>(in);
    return found ? std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()) : "";
}

// The parameter list nvcc's mangled name spells for a kernel printed from
// `k` (cuda_printer.cpp's print_param), as the demangler writes it.
std::string demangled_signature(const std::string& qualified, const ir::Kernel& k, const std::string& unit) {
    std::string s = qualified + "(";
    bool first = true;
    auto add = [&](const std::string& t) {
        s += (first ? "" : ", ") + t;
        first = false;
    };
    for (const ir::Param& p : k.params) {
        std::string t = ir::cuda_scalar_name(p.type);
        if (t == "unsigned") t = "unsigned int";
        if (p.kind == ir::ParamKind::Buffer) t += p.access == ir::Access::Read ? " const*" : "*";
        add(t);
    }
    if (!k.checks.empty()) add(unit + "::kernels::ShoalError*");
    return s + ")";
}

std::string demangle(const char* mangled) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
    return status == 0 ? std::string(text.get()) : std::string(mangled);
}

// The emitted kernels of SHOAL_EMIT_SCRIPT, by demangled signature.
std::map<std::string, ir::Kernel> kernels_of_script() {
    const char* script = std::getenv("SHOAL_EMIT_SCRIPT");
    if (!script || !*script)
        fail("a kernel was launched, but SHOAL_EMIT_SCRIPT is not set: set it to the Shoal script whose :emit "
             "wrote this program's kernels");
    set_compiled_backend_factory([] {
        return compiled::make_compiled_backend(cpu::make_cpu_executor("the simulated CUDA runtime traces on the CPU"));
    });
    Session session;
    session.set_emit_writer([&](const std::string& dir, const std::vector<EmittedFile>& files, const Loc& loc) {
        for (const EmittedFile& f : files) {
            const std::string path = (dir.empty() ? "" : dir + "/") + f.name;
            bool found = false;
            if (read_file(path, found) != f.text)
                user_error(ErrorKind::Io, loc,
                           found ? path + " is not what this :emit writes now"
                                 : path + " is missing (the simulated CUDA runtime runs in the program's build directory)",
                           {"emit again and rebuild the program"});
        }
        return std::string("checked");
    });
    ScriptOutput out;
    if (!session.execute_file(script, out)) fail(std::string("SHOAL_EMIT_SCRIPT=") + script + ": " + out.first_error);
    auto* engine = dynamic_cast<compiled::FusionEngine*>(session.compiled_backend());
    if (!engine) fail("the compiled backend is not Shoal's fusion engine");
    std::map<std::string, ir::Kernel> kernels;
    for (const auto& [unit, list] : engine->emitted_kernels())
        for (const ir::Kernel& k : list) kernels.emplace(demangled_signature(unit + "::kernels::" + k.name, k, unit), k);
    if (kernels.empty()) fail(std::string("SHOAL_EMIT_SCRIPT=") + script + " emits no kernels");
    return kernels;
}

struct CallConfiguration {
    dim3 grid, block;
    size_t shared_bytes = 0;
    cudaStream_t stream = nullptr;
};

class Runtime {
public:
    Runtime() : device_(simulated_device(simulated_faults_from_env())) {
        guarded([&] { return device_->streamCreateWithFlags(&default_stream_, 0); });
        blocking_.insert(default_stream_);
    }

    SimulatedDevice& device() { return *device_; }

    // The simulated stream behind a handle the program passes: 0 and the
    // legacy / per-thread default streams are one stream of the simulation.
    cudaStream_t stream(cudaStream_t s) const {
        return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread ? default_stream_ : s;
    }
    cudaError_t create_stream(cudaStream_t* s, unsigned flags) {
        std::lock_guard lock(mutex_);
        const cudaError_t e = device_->streamCreateWithFlags(s, flags);
        if (e == cudaSuccess && !(flags & cudaStreamNonBlocking)) blocking_.insert(*s);
        return e;
    }
    cudaError_t destroy_stream(cudaStream_t s) {
        std::lock_guard lock(mutex_);
        blocking_.erase(s);
        const cudaError_t e = device_->streamDestroy(s);  // runs what was queued
        staged_.erase(s);
        return e;
    }
    // What the legacy default stream waits for: itself and every blocking stream.
    cudaError_t synchronize_blocking() {
        std::set<cudaStream_t> streams;
        {
            std::lock_guard lock(mutex_);
            streams = blocking_;
        }
        cudaError_t e = cudaSuccess;
        for (cudaStream_t s : streams)
            if (const cudaError_t r = synchronize(s); r != cudaSuccess) e = r;
        return e;
    }
    // A copy from host memory on `s`: every host buffer here is pageable
    // (the simulated runtime models no pinned memory), and from pageable memory the CUDA
    // Runtime has staged the bytes when cudaMemcpyAsync returns, so the
    // caller may free them at once. The simulated device reads host memory
    // when the copy runs (the pinned-memory rule it holds the executor to):
    // the bytes are staged here and kept until the stream is synchronised.
    const void* stage(cudaStream_t s, const void* host, size_t bytes) {
        std::lock_guard lock(mutex_);
        const auto* from = static_cast<const std::byte*>(host);
        auto& kept = staged_[s];
        kept.emplace_back(from, from + bytes);
        return kept.back().data();
    }
    // Runs what `s` queued; the bytes staged for it are kept until then
    // (not those another thread stages meanwhile).
    cudaError_t synchronize(cudaStream_t s) {
        std::deque<std::vector<std::byte>> copied;
        {
            std::lock_guard lock(mutex_);
            copied.swap(staged_[s]);
        }
        return device_->streamSynchronize(s);
    }
    cudaMemPool_t pool() {
        cudaMemPool_t p = nullptr;
        device_->deviceGetDefaultMemPool(&p, 0);
        return p;
    }

    void register_function(const void* host_function, const char* device_name) {
        std::lock_guard lock(mutex_);
        registered_[host_function] = device_name;
    }
    // The kernel for nvcc's host-side function, loaded on first use.
    cudaError_t kernel(cudaKernel_t* handle, const void* host_function) {
        std::lock_guard lock(mutex_);
        if (auto it = loaded_.find(host_function); it != loaded_.end()) {
            *handle = it->second;
            return cudaSuccess;
        }
        auto reg = registered_.find(host_function);
        if (reg == registered_.end()) return cudaErrorInvalidDeviceFunction;
        if (!emitted_) emitted_ = kernels_of_script();
        const std::string signature = demangle(reg->second.c_str());
        auto found = emitted_->find(signature);
        if (found == emitted_->end()) {
            std::string known;
            for (const auto& [s, k] : *emitted_) known += "\n  " + s;
            std::fprintf(stderr,
                         "shoal simulated CUDA runtime: no kernel %s among those SHOAL_EMIT_SCRIPT emits:%s\n",
                         signature.c_str(), known.c_str());
            return cudaErrorInvalidDeviceFunction;
        }
        // An image the simulated device is told the IR of, as for NVRTC's;
        // its SHOAL_EMIT prefix tells the device that `:emit` printed the
        // kernel (no cancel-flag parameter, simulated_device.cpp).
        const std::string image = "SHOAL_EMIT\n" + signature;
        device_->describe_image(image, found->second);
        cudaLibrary_t library = nullptr;
        if (const cudaError_t e = device_->libraryLoadData(&library, image.c_str()); e != cudaSuccess) return e;
        if (const cudaError_t e = device_->libraryGetKernel(handle, library, found->second.name.c_str());
            e != cudaSuccess)
            return e;
        loaded_[host_function] = *handle;
        return cudaSuccess;
    }

private:
    std::shared_ptr<SimulatedDevice> device_;
    cudaStream_t default_stream_ = nullptr;
    std::mutex mutex_;
    std::set<cudaStream_t> blocking_;
    std::map<const void*, std::string> registered_;  // nvcc's host function -> mangled kernel name
    std::map<const void*, cudaKernel_t> loaded_;
    std::optional<std::map<std::string, ir::Kernel>> emitted_;
    std::map<cudaStream_t, std::deque<std::vector<std::byte>>> staged_;  // host bytes of copies not yet run  // loaded at the first launch
};

Runtime& runtime() {
    static Runtime r;  // first used by nvcc's registration, before main
    return r;
}

// cudaGetLastError's error: the last failure of a call on this thread.
thread_local cudaError_t last_error = cudaSuccess;
thread_local std::vector<CallConfiguration> configurations;  // <<<...>>> pushed, not yet popped

cudaError_t noted(cudaError_t e) {
    if (e != cudaSuccess) last_error = e;
    return e;
}

// Runs a call against the device: violations abort, failures are noted.
template <class F>
cudaError_t call(F&& f) {
    return noted(guarded(std::forward<F>(f)));
}

}  // namespace
}  // namespace shoal::cuda

using shoal::cuda::call;
using shoal::cuda::runtime;

// nvcc's registration and launch entry points (crt/host_runtime.h and
// crt/device_functions.h declare them for the code nvcc generates).
extern "C" {

void** __cudaRegisterFatBinary(void*) {
    static void* handle = nullptr;
    runtime();
    return &handle;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
char __cudaInitModule(void**) { return 1; }

void __cudaRegisterFunction(void**, const char* host_function, char*, const char* device_name, int, uint3*, uint3*,
                            dim3*, dim3*, int*) {
    runtime().register_function(host_function, device_name);
}

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared_bytes, struct CUstream_st* stream) {
    shoal::cuda::configurations.push_back({grid, block, shared_bytes, stream});
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared_bytes, void* stream) {
    auto& pushed = shoal::cuda::configurations;
    if (pushed.empty()) return cudaErrorInvalidConfiguration;
    const shoal::cuda::CallConfiguration c = pushed.back();
    pushed.pop_back();
    *grid = c.grid;
    *block = c.block;
    *shared_bytes = c.shared_bytes;
    *static_cast<cudaStream_t*>(stream) = c.stream;
    return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_function) {
    return call([&] { return runtime().kernel(kernel, host_function); });
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                               cudaStream_t stream) {
    if (!kernel) return shoal::cuda::noted(cudaErrorInvalidDeviceFunction);
    return call([&] {
        return runtime().device().launchKernel(kernel, grid, block, args, shared_bytes, runtime().stream(stream));
    });
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                                    cudaStream_t stream) {
    return __cudaLaunchKernel(kernel, grid, block, args, shared_bytes, stream);
}

}  // extern "C"

// The CUDA Runtime API (cuda_runtime_api.h declares these).

cudaError_t cudaLaunchKernel(const void* function, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                             cudaStream_t stream) {
    cudaKernel_t kernel = nullptr;
    if (const cudaError_t e = __cudaGetKernel(&kernel, function); e != cudaSuccess) return e;
    return __cudaLaunchKernel(kernel, grid, block, args, shared_bytes, stream);
}

cudaError_t cudaGetDeviceCount(int* count) {
    return call([&] { return runtime().device().getDeviceCount(count); });
}
cudaError_t cudaGetDevice(int* device) {
    *device = 0;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
    return call([&] { return runtime().device().setDevice(device); });
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
    return call([&] { return runtime().device().getDeviceProperties(prop, device); });
}
cudaError_t cudaDriverGetVersion(int* version) {
    return call([&] { return runtime().device().driverGetVersion(version); });
}
cudaError_t cudaRuntimeGetVersion(int* version) {
    return call([&] { return runtime().device().runtimeGetVersion(version); });
}
cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
    return call([&] { return runtime().device().memGetInfo(free, total); });
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
    return call([&] { return runtime().create_stream(stream, flags); });
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    return call([&] { return runtime().destroy_stream(stream); });
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    return call([&] { return runtime().synchronize(runtime().stream(stream)); });
}
cudaError_t cudaDeviceSynchronize() {
    return call([&] { return runtime().synchronize_blocking(); });
}

cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t stream) {
    return call([&] { return runtime().device().mallocFromPoolAsync(ptr, bytes, runtime().pool(), runtime().stream(stream)); });
}
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
    return call([&] { return runtime().device().freeAsync(ptr, runtime().stream(stream)); });
}
cudaError_t cudaMalloc(void** ptr, size_t bytes) { return cudaMallocAsync(ptr, bytes, nullptr); }
cudaError_t cudaFree(void* ptr) {
    if (!ptr) return cudaSuccess;  // as cudaFree(nullptr)
    if (const cudaError_t e = cudaFreeAsync(ptr, nullptr); e != cudaSuccess) return e;
    return cudaDeviceSynchronize();
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
    return call([&] {
        const cudaStream_t s = runtime().stream(stream);
        const void* from = kind == cudaMemcpyHostToDevice ? runtime().stage(s, src, bytes) : src;
        return runtime().device().memcpyAsync(dst, from, bytes, kind, s);
    });
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
    if (const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, nullptr); e != cudaSuccess) return e;
    return cudaDeviceSynchronize();
}
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream) {
    return call([&] { return runtime().device().memsetAsync(ptr, value, bytes, runtime().stream(stream)); });
}
cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
    if (const cudaError_t e = cudaMemsetAsync(ptr, value, bytes, nullptr); e != cudaSuccess) return e;
    return cudaDeviceSynchronize();
}

// A sticky error (the device lost) is returned by every later call, as on a GPU.
cudaError_t cudaGetLastError() {
    const cudaError_t sticky = runtime().device().getLastError();
    const cudaError_t e = sticky != cudaSuccess ? sticky : shoal::cuda::last_error;
    shoal::cuda::last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError() {
    const cudaError_t sticky = runtime().device().getLastError();
    return sticky != cudaSuccess ? sticky : shoal::cuda::last_error;
}
const char* cudaGetErrorName(cudaError_t error) { return shoal::cuda::simulated_error_name(error); }
const char* cudaGetErrorString(cudaError_t error) { return shoal::cuda::simulated_error_string(error); }
