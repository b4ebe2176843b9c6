// The real CUDA Runtime behind CudaApi: cudart is linked statically
// (CUDA::cudart_static), so a machine without CUDA libraries still starts
// Shoal; without a driver the first call reports cudaErrorInsufficientDriver
// or cudaErrorNoDevice and the session stays on the CPU executor.
#include "runtime/cuda/cuda_api.h"

namespace shoal::cuda {

namespace {

class CudaRuntime final : public CudaApi {
public:
    std::string name() const override { return "CUDA runtime"; }
    cudaError_t getDeviceCount(int* count) override { return cudaGetDeviceCount(count); }
    cudaError_t driverGetVersion(int* version) override { return cudaDriverGetVersion(version); }
    cudaError_t runtimeGetVersion(int* version) override { return cudaRuntimeGetVersion(version); }
    cudaError_t getDeviceProperties(cudaDeviceProp* prop, int device) override {
        return cudaGetDeviceProperties(prop, device);
    }
    cudaError_t setDevice(int device) override { return cudaSetDevice(device); }
    cudaError_t memGetInfo(size_t* free, size_t* total) override { return cudaMemGetInfo(free, total); }
    cudaError_t streamCreateWithFlags(cudaStream_t* stream, unsigned flags) override {
        return cudaStreamCreateWithFlags(stream, flags);
    }
    cudaError_t streamDestroy(cudaStream_t stream) override { return cudaStreamDestroy(stream); }
    cudaError_t streamSynchronize(cudaStream_t stream) override { return cudaStreamSynchronize(stream); }
    cudaError_t deviceGetDefaultMemPool(cudaMemPool_t* pool, int device) override {
        return cudaDeviceGetDefaultMemPool(pool, device);
    }
    cudaError_t memPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) override {
        return cudaMemPoolSetAttribute(pool, attr, value);
    }
    cudaError_t memPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) override {
        return cudaMemPoolGetAttribute(pool, attr, value);
    }
    cudaError_t memPoolTrimTo(cudaMemPool_t pool, size_t keep) override { return cudaMemPoolTrimTo(pool, keep); }
    cudaError_t mallocFromPoolAsync(void** ptr, size_t bytes, cudaMemPool_t pool, cudaStream_t stream) override {
        return cudaMallocFromPoolAsync(ptr, bytes, pool, stream);
    }
    cudaError_t freeAsync(void* ptr, cudaStream_t stream) override { return cudaFreeAsync(ptr, stream); }
    cudaError_t memcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) override {
        return cudaMemcpyAsync(dst, src, bytes, kind, stream);
    }
    cudaError_t memsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream) override {
        return cudaMemsetAsync(ptr, value, bytes, stream);
    }
    cudaError_t libraryLoadData(cudaLibrary_t* library, const void* image) override {
        return cudaLibraryLoadData(library, image, nullptr, nullptr, 0, nullptr, nullptr, 0);
    }
    cudaError_t libraryGetKernel(cudaKernel_t* kernel, cudaLibrary_t library, const char* name) override {
        return cudaLibraryGetKernel(kernel, library, name);
    }
    cudaError_t libraryUnload(cudaLibrary_t library) override { return cudaLibraryUnload(library); }
    cudaError_t launchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                             cudaStream_t stream) override {
        // A cudaKernel_t is launched through the C API's function pointer
        // (CUDA 12 Runtime API, "Library Management").
        return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args, shared_bytes, stream);
    }
    cudaError_t eventCreate(cudaEvent_t* event) override { return cudaEventCreate(event); }
    cudaError_t eventRecord(cudaEvent_t event, cudaStream_t stream) override { return cudaEventRecord(event, stream); }
    cudaError_t eventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) override {
        return cudaEventElapsedTime(ms, start, end);
    }
    cudaError_t eventDestroy(cudaEvent_t event) override { return cudaEventDestroy(event); }
    cudaError_t getLastError() override { return cudaGetLastError(); }
    const char* getErrorName(cudaError_t error) override { return cudaGetErrorName(error); }
    const char* getErrorString(cudaError_t error) override { return cudaGetErrorString(error); }
};

}  // namespace

std::shared_ptr<CudaApi> real_cuda_runtime() { return std::make_shared<CudaRuntime>(); }

bool is_sticky(cudaError_t error) {
    switch (error) {
        case cudaErrorIllegalAddress:
        case cudaErrorLaunchFailure:
        case cudaErrorHardwareStackError:
        case cudaErrorIllegalInstruction:
        case cudaErrorMisalignedAddress:
        case cudaErrorInvalidAddressSpace:
        case cudaErrorInvalidPc:
        case cudaErrorAssert:
        case cudaErrorLaunchTimeout:
        case cudaErrorECCUncorrectable:
        case cudaErrorContextIsDestroyed:
        case cudaErrorUnknown: return true;
        default: return false;
    }
}

}  // namespace shoal::cuda
