#include "lang/lru_map.h"
#include "runtime/cuda/simulated_device.h"

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "codegen/thread_levels.h"
#include "lang/diagnostics.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/executor.h"
#include "runtime/cuda/printed/printed_kernels.h"
#include "runtime/poll_pause.h"

namespace shoal::cuda {

namespace {

// Device addresses live in a reserved, inaccessible range of the process's
// address space: nothing else is ever mapped there, and host code that
// dereferences one faults. Allocations are bumped and never reused, so a
// freed address stays recognisable.
constexpr size_t kAddressRange = size_t{1} << 40;  // 1 TiB, reserved only
constexpr size_t kAlignment = 256;                 // as cudaMalloc's
// With printed kernels, which reach memory at its device addresses during a
// launch: each allocation on pages of its own with an unmapped page after
// it, so a kernel reading or writing past its end faults.
constexpr size_t kPage = 4096;

[[noreturn]] void violation(const std::string& what) {
    internal_error(__FILE__, __LINE__, "simulated device: " + what);
}

int64_t parse_bytes(const std::string& text) {
    size_t used = 0;
    const double n = std::stod(text, &used);
    const std::string unit = text.substr(used);
    double scale = 1;
    if (unit == "KiB") scale = 1024.0;
    else if (unit == "MiB") scale = 1024.0 * 1024;
    else if (unit == "GiB") scale = 1024.0 * 1024 * 1024;
    else if (!unit.empty()) throw std::invalid_argument(unit);
    return static_cast<int64_t>(n * scale);
}

// The runtime's own words (a unit test compares them with cudart's).
struct ErrorText {
    cudaError_t error;
    const char* name;
    const char* text;
};
constexpr ErrorText kErrorTexts[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorInvalidKernelImage, "cudaErrorInvalidKernelImage", "device kernel image is invalid"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
};

const ErrorText& error_text(cudaError_t error) {
    static const ErrorText unknown{cudaErrorUnknown, "cudaErrorUnknown", "unknown error"};
    for (const ErrorText& t : kErrorTexts)
        if (t.error == error) return t;
    return unknown;
}

struct Allocation {
    size_t bytes = 0;
    std::byte* host = nullptr;  // the memory behind it (null once freed)
};

struct Stream {
    // Runs at the next synchronisation, in order. An item returns false
    // while it waits for something outside the device (a simulated NCCL
    // transfer: host work, enqueue_host_work) and is asked again later.
    std::deque<std::function<bool()>> queue;
    void push(std::function<void()> op) {
        queue.push_back([op = std::move(op)] {
            op();
            return true;
        });
    }
};

struct Event {
    std::chrono::steady_clock::time_point at;
    bool recorded = false;
};

struct Library {
    ir::Kernel kernel;
    std::shared_ptr<const PrintedUnit> printed;  // SHOAL_SIMULATED_KERNELS=printed: the image's text, compiled
    bool polls_cancel = false;                   // its last parameter is the cancel flag
};

class Simulator final : public SimulatedDevice {
public:
    explicit Simulator(const SimulatedFaults& faults)
        : faults_(faults), kernels_(simulated_kernels_from_env()), printed_options_(printed_launch_options_from_env()) {
        void* range = mmap(nullptr, kAddressRange, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (range == MAP_FAILED) violation("cannot reserve an address range for device memory");
        base_ = static_cast<std::byte*>(range);
        next_ = 0;
    }
    ~Simulator() override {
        for (auto& [at, a] : allocations_) std::free(a.host);
        munmap(base_, kAddressRange);
    }

    std::string name() const override { return "simulated device"; }
    SimulatedDeviceStats stats() const override {
        std::lock_guard lock(mutex_);
        return stats_;
    }

    cudaError_t getDeviceCount(int* count) override {
        *count = 1;
        return cudaSuccess;
    }
    cudaError_t driverGetVersion(int* version) override {
        *version = 13000;
        return cudaSuccess;
    }
    cudaError_t runtimeGetVersion(int* version) override {
        *version = CUDART_VERSION;
        return cudaSuccess;
    }
    cudaError_t getDeviceProperties(cudaDeviceProp* prop, int device) override {
        if (device != 0) return cudaErrorInvalidDevice;
        std::memset(prop, 0, sizeof *prop);
        std::strncpy(prop->name, "Shoal simulated device", sizeof prop->name - 1);
        prop->major = 9;
        prop->minor = 0;
        prop->multiProcessorCount = 132;
        prop->totalGlobalMem = static_cast<size_t>(faults_.memory_bytes);
        prop->sharedMemPerBlock = 48 * 1024;
        prop->sharedMemPerMultiprocessor = 228 * 1024;
        prop->regsPerBlock = 65536;
        prop->regsPerMultiprocessor = 65536;
        prop->maxThreadsPerBlock = 1024;
        prop->maxThreadsPerMultiProcessor = 2048;
        prop->maxBlocksPerMultiProcessor = 32;
        prop->warpSize = 32;
        prop->maxGridSize[0] = 0x7fffffff;
        prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
        prop->l2CacheSize = 50 * 1024 * 1024;
        prop->memoryBusWidth = 5120;
        return cudaSuccess;
    }
    cudaError_t setDevice(int device) override { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
    cudaError_t memGetInfo(size_t* free, size_t* total) override {
        std::lock_guard lock(mutex_);
        *total = static_cast<size_t>(faults_.memory_bytes);
        *free = static_cast<size_t>(faults_.memory_bytes - stats_.bytes_in_use - stats_.bytes_cached);
        return sticky_;
    }

    cudaError_t streamCreateWithFlags(cudaStream_t* stream, unsigned) override {
        std::lock_guard lock(mutex_);
        auto s = std::make_unique<Stream>();
        *stream = reinterpret_cast<cudaStream_t>(s.get());
        streams_.emplace(*stream, std::move(s));
        return sticky_;
    }
    cudaError_t streamDestroy(cudaStream_t stream) override {
        std::lock_guard lock(mutex_);
        run_queue(find_stream(stream));
        streams_.erase(stream);
        return sticky_;
    }
    cudaError_t streamSynchronize(cudaStream_t stream) override {
        std::lock_guard lock(mutex_);
        ++stats_.synchronisations;
        run_queue(find_stream(stream));
        return sticky_;
    }
    cudaError_t streamQuery(cudaStream_t stream) override {
        std::lock_guard lock(mutex_);
        if (!run_queue(find_stream(stream), false)) return cudaErrorNotReady;
        return sticky_;
    }
    void enqueue_host_work(cudaStream_t stream, std::function<bool(const DeviceMemory&)> step) override {
        std::lock_guard lock(mutex_);
        find_stream(stream).queue.push_back([this, step = std::move(step)] {
            return step([this](const void* p, size_t bytes, const std::string& what) {
                return static_cast<void*>(device_range(p, bytes, what));
            });
        });
    }

    // Page-locked host memory: with unified addressing its device address is
    // its host address, which a launch may then be given.
    cudaError_t hostRegister(void* ptr, size_t bytes, unsigned /*flags*/) override {
        std::lock_guard lock(mutex_);
        if (!ptr || bytes == 0) return cudaErrorInvalidValue;
        if (is_device(ptr)) violation("hostRegister given a device address");
        auto* at = static_cast<std::byte*>(ptr);
        for (const auto& [from, to] : registered_)
            if (at < to && from < at + bytes) return cudaErrorHostMemoryAlreadyRegistered;
        registered_.emplace(at, at + bytes);
        return sticky_;
    }
    cudaError_t hostGetDevicePointer(void** device, void* host, unsigned /*flags*/) override {
        std::lock_guard lock(mutex_);
        if (!host_registered(host)) return cudaErrorInvalidValue;
        *device = host;
        return sticky_;
    }
    cudaError_t hostUnregister(void* ptr) override {
        std::lock_guard lock(mutex_);
        return registered_.erase(static_cast<std::byte*>(ptr)) ? cudaSuccess : cudaErrorHostMemoryNotRegistered;
    }

    cudaError_t deviceGetDefaultMemPool(cudaMemPool_t* pool, int device) override {
        if (device != 0) return cudaErrorInvalidDevice;
        *pool = reinterpret_cast<cudaMemPool_t>(&release_threshold_);
        return sticky_;
    }
    cudaError_t memPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) override {
        check_pool(pool);
        if (attr != cudaMemPoolAttrReleaseThreshold) return cudaErrorInvalidValue;
        std::lock_guard lock(mutex_);
        release_threshold_ = *static_cast<uint64_t*>(value);
        return sticky_;
    }
    cudaError_t memPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) override {
        check_pool(pool);
        std::lock_guard lock(mutex_);
        uint64_t& out = *static_cast<uint64_t*>(value);
        switch (attr) {
            case cudaMemPoolAttrReleaseThreshold: out = release_threshold_; break;
            case cudaMemPoolAttrReservedMemCurrent: out = static_cast<uint64_t>(stats_.bytes_in_use + stats_.bytes_cached); break;
            case cudaMemPoolAttrUsedMemCurrent: out = static_cast<uint64_t>(stats_.bytes_in_use); break;
            default: return cudaErrorInvalidValue;
        }
        return sticky_;
    }
    cudaError_t memPoolTrimTo(cudaMemPool_t pool, size_t keep) override {
        check_pool(pool);
        std::lock_guard lock(mutex_);
        stats_.bytes_cached = std::min<int64_t>(stats_.bytes_cached, static_cast<int64_t>(keep));
        return sticky_;
    }
    cudaError_t mallocFromPoolAsync(void** ptr, size_t bytes, cudaMemPool_t pool, cudaStream_t stream) override {
        check_pool(pool);
        std::lock_guard lock(mutex_);
        find_stream(stream);
        if (sticky_ != cudaSuccess) return sticky_;
        const int64_t n = static_cast<int64_t>(std::max<size_t>(bytes, 1));
        ++allocation_attempts_;
        // The pool reuses what it caches; beyond that the device must have room.
        const int64_t reused = std::min(stats_.bytes_cached, n);
        if (allocation_attempts_ == faults_.oom_at_allocation ||
            stats_.bytes_in_use + stats_.bytes_cached + (n - reused) > faults_.memory_bytes)
            return cudaErrorMemoryAllocation;
        const size_t rounded = (static_cast<size_t>(n) + kAlignment - 1) / kAlignment * kAlignment;
        // The address range a printed kernel may touch, and a guard page.
        const size_t span = kernels_ == SimulatedKernels::Printed ? whole_pages(rounded) + kPage : rounded;
        if (next_ + span > kAddressRange) violation("the reserved address range is used up");
        Allocation a;
        a.bytes = bytes;
        a.host = static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded));
        if (!a.host) return cudaErrorMemoryAllocation;
        std::memset(a.host, 0xa5, rounded);  // not zeroed, as on a GPU
        allocations_.emplace(next_, a);
        *ptr = base_ + next_;
        next_ += span;
        stats_.bytes_cached -= reused;
        stats_.bytes_in_use += n;
        ++stats_.allocations;
        ++stats_.live_allocations;
        return cudaSuccess;
    }
    cudaError_t freeAsync(void* ptr, cudaStream_t stream) override {
        std::lock_guard lock(mutex_);
        Stream& s = find_stream(stream);
        const size_t at = offset_of(ptr, "freeAsync");
        auto it = allocations_.find(at);
        if (it == allocations_.end() || !it->second.host) violation("freeAsync of an address that is not a live allocation");
        s.push([this, at] {
            Allocation& a = allocations_.at(at);
            std::free(a.host);
            a.host = nullptr;
            const int64_t n = static_cast<int64_t>(std::max<size_t>(a.bytes, 1));
            stats_.bytes_in_use -= n;
            --stats_.live_allocations;
            // Kept by the pool up to its release threshold.
            stats_.bytes_cached = std::min<int64_t>(stats_.bytes_cached + n, static_cast<int64_t>(release_threshold_));
        });
        return sticky_;
    }
    cudaError_t memcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) override {
        std::lock_guard lock(mutex_);
        Stream& s = find_stream(stream);
        if (sticky_ != cudaSuccess) return sticky_;
        const bool dst_device = is_device(dst), src_device = is_device(src);
        if (kind == cudaMemcpyHostToDevice && (!dst_device || src_device))
            violation("memcpyAsync host to device with a " + std::string(dst_device ? "device source" : "host destination"));
        if (kind == cudaMemcpyDeviceToHost && (dst_device || !src_device))
            violation("memcpyAsync device to host with a " + std::string(dst_device ? "device destination" : "host source"));
        if (kind == cudaMemcpyDeviceToDevice && (!dst_device || !src_device))
            violation("memcpyAsync device to device with a host address");
        if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice)
            violation("memcpyAsync kinds other than host<->device and device to device are not used by Shoal");
        if (dst_device) device_range(dst, bytes, "memcpyAsync destination");
        if (src_device) device_range(src, bytes, "memcpyAsync source");
        ++(kind == cudaMemcpyHostToDevice   ? stats_.copies_to_device
           : kind == cudaMemcpyDeviceToHost ? stats_.copies_to_host
                                            : stats_.copies_device_to_device);
        s.push([this, dst, src, bytes, dst_device, src_device] {
            void* to = dst_device ? device_range(dst, bytes, "memcpyAsync destination") : dst;
            const void* from = src_device ? device_range(src, bytes, "memcpyAsync source") : src;
            if (bytes) std::memcpy(to, from, bytes);
        });
        return cudaSuccess;
    }
    cudaError_t memsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream) override {
        std::lock_guard lock(mutex_);
        Stream& s = find_stream(stream);
        if (sticky_ != cudaSuccess) return sticky_;
        device_range(ptr, bytes, "memsetAsync");
        s.push([this, ptr, value, bytes] {
            if (bytes) std::memset(device_range(ptr, bytes, "memsetAsync"), value, bytes);
        });
        return cudaSuccess;
    }

    // cuBLAS's gemm as the CPU BLAS on the allocations' host memory, in
    // stream order; every operand must be device memory large enough for
    // its matrix (as cuBLAS would read and write it).
    std::string blas() override { return cpu::have_blas() ? "cuBLAS simulated by the CPU BLAS" : ""; }
    cudaError_t gemm(cudaStream_t stream, ir::ScalarType elem, const ir::GemmShape& g, const void* a, const void* b,
                     void* c) override {
        std::lock_guard lock(mutex_);
        Stream& s = find_stream(stream);
        if (sticky_ != cudaSuccess) return sticky_;
        if (!cpu::have_blas()) return cudaErrorNotSupported;
        const size_t size = ir::scalar_size(elem);
        const size_t a_bytes = size_t(g.n * g.k) * size, b_bytes = size_t(g.k * g.m) * size, c_bytes = size_t(g.n * g.m) * size;
        for (const void* p : {a, b, static_cast<const void*>(c)})
            if (!is_device(p)) violation("gemm given a host address");
        device_range(a, a_bytes, "gemm operand a");
        device_range(b, b_bytes, "gemm operand b");
        device_range(c, c_bytes, "gemm result c");
        s.push([this, elem, g, a, b, c, a_bytes, b_bytes, c_bytes] {
            cpu::gemm(elem, g, device_range(a, a_bytes, "gemm operand a"), device_range(b, b_bytes, "gemm operand b"),
                      device_range(c, c_bytes, "gemm result c"));
        });
        return cudaSuccess;
    }

    // cuSOLVER's getrf + getrs as the CPU's LAPACK on the allocations' host
    // memory, in stream order; every operand must be device memory.
    std::string solver() override {
        return cpu::have_lapack() && cpu::have_svd() ? "cuSOLVER simulated by the CPU's LAPACK" : "";
    }
    cudaError_t lu(cudaStream_t stream, ir::ScalarType elem, const ir::LuShape& shape, void* a, void* pivots, void* b,
                   void* info) override {
        std::lock_guard lock(mutex_);
        Stream& s = find_stream(stream);
        if (sticky_ != cudaSuccess) return sticky_;
        if (!cpu::have_lapack()) return cudaErrorNotSupported;
        const size_t size = ir::scalar_size(elem);
        const size_t a_bytes = size_t(shape.n * shape.n) * size, b_bytes = size_t(shape.n * shape.nrhs) * size,
                     pivot_bytes = size_t(shape.n) * sizeof(int32_t);
        for (const void* p : {a, pivots, info})
            if (!is_device(p)) violation("lu given a host address");
        device_range(a, a_bytes, "lu matrix a");
        device_range(pivots, pivot_bytes, "lu pivots");
        device_range(info, sizeof(int32_t), "lu info");
        if (b_bytes) device_range(b, b_bytes, "lu right-hand side b");
        s.push([this, elem, shape, a, pivots, b, info, a_bytes, b_bytes, pivot_bytes] {
            cpu::lu(elem, shape, device_range(a, a_bytes, "lu matrix a"),
                    reinterpret_cast<int32_t*>(device_range(pivots, pivot_bytes, "lu pivots")),
                    b_bytes ? device_range(b, b_bytes, "lu right-hand side b") : nullptr,
                    reinterpret_cast<int32_t*>(device_range(info, sizeof(int32_t), "lu info")));
        });
        return cudaSuccess;
    }

    // cuSOLVER's gesvdj as the CPU's LAPACK gesdd, likewise.
    cudaError_t svd(cudaStream_t stream, ir::ScalarType elem, const ir::SvdShape& shape, void* a, void* sv, void* u,
                    void* v, void* info) override {
        std::lock_guard lock(mutex_);
        Stream& s = find_stream(stream);
        if (sticky_ != cudaSuccess) return sticky_;
        if (!cpu::have_svd()) return cudaErrorNotSupported;
        const size_t size = ir::scalar_size(elem);
        const size_t a_bytes = size_t(shape.rows * shape.cols) * size, s_bytes = size_t(shape.p()) * size,
                     u_bytes = size_t(shape.rows * shape.p()) * size, v_bytes = size_t(shape.cols * shape.p()) * size;
        for (const void* p : {a, sv, u, v, info})
            if (!is_device(p)) violation("svd given a host address");
        device_range(info, sizeof(int32_t), "svd info");
        if (a_bytes) device_range(a, a_bytes, "svd matrix a");
        s.push([this, elem, shape, a, sv, u, v, info, a_bytes, s_bytes, u_bytes, v_bytes] {
            auto* status = reinterpret_cast<int32_t*>(device_range(info, sizeof(int32_t), "svd info"));
            if (shape.p() == 0) {
                *status = 0;
                return;
            }
            cpu::svd(elem, shape, device_range(a, a_bytes, "svd matrix a"), device_range(sv, s_bytes, "svd s"),
                     device_range(u, u_bytes, "svd u"), device_range(v, v_bytes, "svd v"), status);
        });
        return cudaSuccess;
    }

    void describe_image(const std::string& image, const ir::Kernel& kernel) override {
        std::lock_guard lock(mutex_);
        described_.emplace(image, kernel);
    }
    cudaError_t libraryLoadData(cudaLibrary_t* library, const void* image) override {
        std::lock_guard lock(mutex_);
        if (sticky_ != cudaSuccess) return sticky_;
        const std::string bytes = image_bytes(image);
        auto it = described_.find(bytes);
        if (it == described_.end()) return cudaErrorInvalidKernelImage;
        // The CUDA executor's kernels with cancel points take the cancel
        // flag last; `:emit`'s (the simulated CUDA runtime's images) never do.
        const bool emitted = bytes.rfind("SHOAL_EMIT\n", 0) == 0;
        auto lib = std::make_unique<Library>(Library{it->second, nullptr, !emitted && ir::has_cancel_points(it->second)});
        if (kernels_ == SimulatedKernels::Printed) {
            // The exact text the real NVRTC was given, as host C++ with the shim.
            // simulated_nvrtc.h's image: its magic line, then the source.
            constexpr std::string_view magic = "SHOALSIM\n";
            if (bytes.rfind(magic, 0) != 0) violation("printed kernels need the simulated NVRTC's images (they carry the text)");
            const std::string cuda = bytes.substr(magic.size());
            if (const auto* found = printed_.find(cuda)) {
                lib->printed = *found;
            } else {
                std::string error;
                std::shared_ptr<const PrintedUnit> unit = compile_printed_unit(cuda, {it->second.name}, &error);
                if (!unit) violation("the printed CUDA of " + it->second.name + " does not compile as host C++ with the shim:\n" + error);
                lib->printed = printed_.insert(cuda, std::move(unit));
            }
        }
        *library = reinterpret_cast<cudaLibrary_t>(lib.get());
        libraries_.emplace(*library, std::move(lib));
        ++stats_.libraries_loaded;
        return cudaSuccess;
    }
    cudaError_t libraryGetKernel(cudaKernel_t* kernel, cudaLibrary_t library, const char* name) override {
        std::lock_guard lock(mutex_);
        auto it = libraries_.find(library);
        if (it == libraries_.end()) violation("libraryGetKernel on a library that is not loaded");
        if (it->second->kernel.name != name) return cudaErrorSymbolNotFound;
        *kernel = reinterpret_cast<cudaKernel_t>(it->second.get());
        return sticky_;
    }
    cudaError_t libraryUnload(cudaLibrary_t library) override {
        std::lock_guard lock(mutex_);
        if (!libraries_.erase(library)) violation("libraryUnload of a library that is not loaded");
        return cudaSuccess;
    }
    cudaError_t launchKernel(cudaKernel_t handle, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                             cudaStream_t stream) override {
        std::lock_guard lock(mutex_);
        Stream& s = find_stream(stream);
        if (sticky_ != cudaSuccess) return sticky_;
        const Library* lib = nullptr;
        for (const auto& [h, l] : libraries_)
            if (reinterpret_cast<cudaKernel_t>(l.get()) == handle) lib = l.get();
        if (!lib) violation("launchKernel of a kernel handle no loaded library gave");
        const ir::Kernel& k = lib->kernel;
        if (block.x != static_cast<unsigned>(k.block_size) || block.y != 1 || block.z != 1)
            violation("launch of " + k.name + " with a block of " + std::to_string(block.x) + " threads; its __launch_bounds__ are " +
                      std::to_string(k.block_size));
        if (grid.x == 0 || grid.y != 1 || grid.z != 1) return cudaErrorInvalidConfiguration;
        if (shared_bytes != 0) violation("launch of " + k.name + " with dynamic shared memory (its kernels use static shared arrays)");
        // Decoded now, as the runtime copies the arguments at the launch.
        auto launch = std::make_shared<Decoded>();
        launch->kernel = &k;
        launch->grid = grid.x;
        size_t i = 0;
        for (const ir::Param& p : k.params) {
            if (p.kind == ir::ParamKind::Buffer) {
                void* ptr = *static_cast<void**>(args[i++]);
                device_range(ptr, 0, "argument " + p.name + " of " + k.name);
                launch->buffers.emplace_back(p.name, ptr, p.type);
                continue;
            }
            cpu::ScalarArg a;
            a.type = p.type;
            a.i = 0;
            const void* v = args[i++];
            switch (p.type) {
                case ir::ScalarType::Bool: a.i = *static_cast<const bool*>(v); break;
                case ir::ScalarType::I32: a.i = *static_cast<const int32_t*>(v); break;
                case ir::ScalarType::U32: a.i = *static_cast<const uint32_t*>(v); break;
                case ir::ScalarType::I64:
                case ir::ScalarType::U64: a.i = *static_cast<const int64_t*>(v); break;
                case ir::ScalarType::F32: a.f = *static_cast<const float*>(v); break;
                case ir::ScalarType::F64: a.f = *static_cast<const double*>(v); break;
            }
            launch->scalars[p.name] = a;
        }
        if (!k.checks.empty()) {
            launch->error_record = *static_cast<void**>(args[i++]);
            device_range(launch->error_record, sizeof(ErrorRecord), "the error record of " + k.name);
        }
        if (lib->polls_cancel) {  // the cancel flag: page-locked host memory (cuda_printer.cpp)
            launch->cancel = *static_cast<void**>(args[i++]);
            if (!host_registered(launch->cancel))
                violation("the cancel flag given to " + k.name + " is not page-locked host memory");
        }
        const int64_t number = ++launch_count_;
        if (lib->printed) {
            // The argument array's bytes, copied as the runtime copies them at the launch.
            auto bytes = std::make_shared<std::vector<std::vector<std::byte>>>();
            for (size_t j = 0; j < i; ++j) {
                const bool pointer = j >= k.params.size() || k.params[j].kind == ir::ParamKind::Buffer;
                const size_t size = pointer ? sizeof(void*) : ir::scalar_size(k.params[j].type);
                const auto* from = static_cast<const std::byte*>(args[j]);
                bytes->emplace_back(from, from + size);
            }
            s.push([this, launch, number, bytes, unit = lib->printed, block = block.x] {
                run_printed(*launch, number, *unit, block, *bytes);
            });
            return cudaSuccess;
        }
        s.push([this, launch, number] { run_launch(*launch, number); });
        return cudaSuccess;
    }

    cudaError_t eventCreate(cudaEvent_t* event) override {
        std::lock_guard lock(mutex_);
        auto e = std::make_unique<Event>();
        *event = reinterpret_cast<cudaEvent_t>(e.get());
        events_.emplace(*event, std::move(e));
        return sticky_;
    }
    cudaError_t eventRecord(cudaEvent_t event, cudaStream_t stream) override {
        std::lock_guard lock(mutex_);
        Event* e = find_event(event);
        find_stream(stream).push([e] {
            e->at = std::chrono::steady_clock::now();
            e->recorded = true;
        });
        return sticky_;
    }
    cudaError_t eventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) override {
        std::lock_guard lock(mutex_);
        const Event *a = find_event(start), *b = find_event(end);
        if (!a->recorded || !b->recorded) return cudaErrorNotReady;
        *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
        return sticky_;
    }
    cudaError_t eventDestroy(cudaEvent_t event) override {
        std::lock_guard lock(mutex_);
        events_.erase(event);
        return cudaSuccess;
    }

    cudaError_t getLastError() override { return sticky_; }
    const char* getErrorName(cudaError_t error) override { return simulated_error_name(error); }
    const char* getErrorString(cudaError_t error) override { return simulated_error_string(error); }

private:
    struct Decoded {
        const ir::Kernel* kernel = nullptr;
        int64_t grid = 1;
        std::vector<std::tuple<std::string, void*, ir::ScalarType>> buffers;
        std::map<std::string, cpu::ScalarArg> scalars;
        void* error_record = nullptr;
        void* cancel = nullptr;  // the host's cancel flag, when the kernel polls it
    };
    bool host_registered(const void* p) const {
        const auto* at = static_cast<const std::byte*>(p);
        auto it = registered_.upper_bound(const_cast<std::byte*>(at));
        return it != registered_.begin() && at < (--it)->second;
    }

    void check_pool(cudaMemPool_t pool) const {
        if (pool != reinterpret_cast<cudaMemPool_t>(const_cast<uint64_t*>(&release_threshold_)))
            violation("an unknown memory pool");
    }
    Stream& find_stream(cudaStream_t stream) {
        auto it = streams_.find(stream);
        if (it == streams_.end()) violation("work on a stream that was not created (or the legacy default stream)");
        return *it->second;
    }
    Event* find_event(cudaEvent_t event) {
        auto it = events_.find(event);
        if (it == events_.end()) violation("an unknown event");
        return it->second.get();
    }
    bool is_device(const void* p) const {
        const auto* b = static_cast<const std::byte*>(p);
        return b >= base_ && b < base_ + kAddressRange;
    }
    size_t offset_of(const void* p, const std::string& what) const {
        if (!is_device(p)) violation(what + " was given host address " + address(p) + ", not device memory");
        return static_cast<size_t>(static_cast<const std::byte*>(p) - base_);
    }
    static std::string address(const void* p) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%p", p);
        return buf;
    }
    // The host memory behind [p, p + bytes) of one live allocation.
    // Where `p` points: the host memory behind it and the bytes from there
    // to the end of its live allocation.
    struct Resolved {
        std::byte* host;
        size_t into, allocation_bytes;
    };
    Resolved resolve(const void* p, const std::string& what) const {
        const size_t at = offset_of(p, what);
        auto it = allocations_.upper_bound(at);
        if (it == allocations_.begin()) violation(what + " is not in any allocation");
        --it;
        const Allocation& a = it->second;
        if (!a.host) violation(what + " is in freed memory (" + address(p) + ")");
        return {a.host + (at - it->first), at - it->first, a.bytes};
    }
    std::byte* device_range(const void* p, size_t bytes, const std::string& what) const {
        const Resolved r = resolve(p, what);
        if (r.into + bytes > std::max<size_t>(r.allocation_bytes, 1))
            violation(what + " runs past its allocation (" + std::to_string(r.into) + " + " + std::to_string(bytes) +
                      " bytes of " + std::to_string(r.allocation_bytes) + ")");
        return r.host;
    }
    // The bytes of an image the runtime would parse: text images (PTX, the
    // simulated NVRTC's) end at their NUL, an ELF cubin at its last table.
    static std::string image_bytes(const void* image) {
        const auto* p = static_cast<const unsigned char*>(image);
        if (std::memcmp(p, "\x7f" "ELF", 4) != 0) return std::string(reinterpret_cast<const char*>(p));
        uint64_t shoff, phoff;
        uint16_t phentsize, phnum, shentsize, shnum;
        std::memcpy(&phoff, p + 0x20, 8);
        std::memcpy(&shoff, p + 0x28, 8);
        std::memcpy(&phentsize, p + 0x36, 2);
        std::memcpy(&phnum, p + 0x38, 2);
        std::memcpy(&shentsize, p + 0x3a, 2);
        std::memcpy(&shnum, p + 0x3c, 2);
        const uint64_t end = std::max(shoff + uint64_t{shentsize} * shnum, phoff + uint64_t{phentsize} * phnum);
        return std::string(reinterpret_cast<const char*>(p), end);
    }

    // Runs the stream's work; with `wait` false, stops at an item still
    // waiting for the host and says so (false).
    bool run_queue(Stream& s, bool wait = true) {
        for (int spins = 0; !s.queue.empty(); ++spins) {
            bool done = true;
            try {
                if (sticky_ == cudaSuccess) done = s.queue.front()();  // after a sticky error nothing runs
            } catch (...) {  // a violation: the item is gone, as it would be on a GPU
                s.queue.pop_front();
                throw;
            }
            if (!done) {
                if (!wait) return false;
                runtime::pause_after(spins);
                continue;
            }
            s.queue.pop_front();
            spins = 0;
        }
        return true;
    }

    void run_launch(const Decoded& d, int64_t number) {
        ++stats_.launches;
        if (number == faults_.sticky_at_launch) {
            sticky_ = cudaErrorIllegalAddress;
            return;
        }
        cpu::LaunchArgs la;
        la.grid = d.grid;
        la.scalars = d.scalars;
        for (const auto& [name, ptr, type] : d.buffers) {
            const Resolved r = resolve(ptr, "argument " + name + " of " + d.kernel->name);
            const size_t room = r.allocation_bytes - r.into;
            la.buffers[name] = cpu::BufferArg{r.host, static_cast<int64_t>(room / ir::scalar_size(type))};
        }
        cpu::ExecOptions options;
        options.check = true;  // races, divergent barriers and shuffles fail the test
        // The flag is a std::atomic<bool> the session sets (one byte, as the kernel reads it).
        options.cancel = static_cast<const std::atomic<bool>*>(d.cancel);
        cpu::Counters counters;
        cpu::KernelError err;
        try {
            err = cpu::run_kernel(*d.kernel, la, options, counters);
        } catch (const Error& e) {
            if (e.kind != ErrorKind::Interrupted) throw;
            return;  // stopped at a cancel point, as a GPU kernel returns: the host raises it
        }
        if (err.code < 0 || !d.error_record) return;
        auto* r = reinterpret_cast<ErrorRecord*>(device_range(d.error_record, sizeof(ErrorRecord), "error record"));
        // The lowest failing thread's record (run_kernel found it); one
        // record per launch, reset by the host before each.
        if (r->code < 0) {
            r->key = 0;
            r->code = err.code;
            r->index = err.index;
            r->extent = err.extent;
        }
    }

    // A launch of the printed kernel, on memory reachable at its device
    // addresses while it runs: the allocations its arguments point into are
    // copied to their device pages, which are mapped for the launch, and
    // back afterwards. A broken GPU rule fails the test.
    void run_printed(const Decoded& d, int64_t number, const PrintedUnit& unit, unsigned block,
                     std::vector<std::vector<std::byte>>& bytes) {
        ++stats_.launches;
        if (number == faults_.sticky_at_launch) {
            sticky_ = cudaErrorIllegalAddress;
            return;
        }
        std::set<size_t> touched;
        for (const auto& [name, ptr, type] : d.buffers) touched.insert(allocation_at(ptr));
        if (d.error_record) touched.insert(allocation_at(d.error_record));
        for (size_t at : touched) {
            const Allocation& a = allocations_.at(at);
            std::byte* device = base_ + at;
            if (mprotect(device, device_span(a), PROT_READ | PROT_WRITE) != 0) violation("cannot map device memory for a launch");
            std::memcpy(device, a.host, a.bytes);
        }
        std::vector<void*> args;
        for (auto& b : bytes) args.push_back(b.data());
        const std::string failed = unit.launch(d.kernel->name, static_cast<unsigned>(d.grid), block, args.data(), printed_options_);
        for (size_t at : touched) {
            const Allocation& a = allocations_.at(at);
            std::byte* device = base_ + at;
            std::memcpy(a.host, device, a.bytes);
            mprotect(device, device_span(a), PROT_NONE);
            madvise(device, device_span(a), MADV_DONTNEED);
        }
        if (!failed.empty()) violation("the printed CUDA failed: " + failed);
    }
    // The offset of the live allocation holding p.
    size_t allocation_at(const void* p) const {
        return static_cast<size_t>(static_cast<const std::byte*>(p) - base_) - resolve(p, "a launch argument").into;
    }
    static size_t whole_pages(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }
    static size_t device_span(const Allocation& a) { return whole_pages(std::max<size_t>(a.bytes, 1)); }

    mutable std::mutex mutex_;
    SimulatedFaults faults_;
    SimulatedKernels kernels_;
    PrintedLaunchOptions printed_options_;
    // By the unit's text; a loaded library keeps its unit open after eviction.
    LruMap<std::string, std::shared_ptr<const PrintedUnit>> printed_{1024};
    std::map<std::byte*, std::byte*> registered_;                         // page-locked host ranges [from, to)
    std::byte* base_ = nullptr;
    size_t next_ = 0;
    std::map<size_t, Allocation> allocations_;
    std::map<cudaStream_t, std::unique_ptr<Stream>> streams_;
    std::map<cudaEvent_t, std::unique_ptr<Event>> events_;
    std::map<std::string, ir::Kernel> described_;
    std::map<cudaLibrary_t, std::unique_ptr<Library>> libraries_;
    uint64_t release_threshold_ = 0;
    int64_t allocation_attempts_ = 0;
    int64_t launch_count_ = 0;
    cudaError_t sticky_ = cudaSuccess;
    SimulatedDeviceStats stats_;
};

}  // namespace

SimulatedFaults simulated_faults_from_env() {
    SimulatedFaults f;
    const char* env = std::getenv("SHOAL_SIMULATED_FAULTS");
    if (!env) return f;
    std::string text = env;
    size_t from = 0;
    while (from <= text.size()) {
        size_t comma = text.find(',', from);
        if (comma == std::string::npos) comma = text.size();
        const std::string item = text.substr(from, comma - from);
        from = comma + 1;
        if (item.empty()) continue;
        try {
            if (item.rfind("oom@", 0) == 0) f.oom_at_allocation = std::stoi(item.substr(4));
            else if (item.rfind("sticky@", 0) == 0) f.sticky_at_launch = std::stoi(item.substr(7));
            else if (item.rfind("memory=", 0) == 0) f.memory_bytes = parse_bytes(item.substr(7));
            else throw std::invalid_argument(item);
        } catch (const std::exception&) {
            internal_error(__FILE__, __LINE__,
                           "SHOAL_SIMULATED_FAULTS: cannot read '" + item + "' (expected oom@N, sticky@N or memory=64MiB)");
        }
    }
    return f;
}

std::shared_ptr<SimulatedDevice> simulated_device(const SimulatedFaults& faults) {
    return std::make_shared<Simulator>(faults);
}

const char* simulated_error_name(cudaError_t error) { return error_text(error).name; }
const char* simulated_error_string(cudaError_t error) { return error_text(error).text; }

}  // namespace shoal::cuda
