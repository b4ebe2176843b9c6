// Every CUDA Runtime call Shoal makes, as one small table: the real runtime
// (cuda_runtime_table.cpp: cudart linked statically, which finds the driver
// at run time) or the simulated device the tests run on
// (simulated_device.h). Each entry mirrors the runtime function of the same
// name and returns its cudaError_t; callers check every one (check()).
//
// Only CUDA's types come from the toolkit's headers: this file is compiled
// only when the toolkit was found at build time.
#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "codegen/ir.h"
#include "codegen/library_calls.h"

namespace shoal::cuda {

// A launch's error record as the printed kernels declare it (ShoalError in
// codegen/cuda_printer.cpp's prelude): the executor resets and reads it,
// the simulated device writes it.
struct ErrorRecord {
    unsigned long long key;
    int code;
    int lock;
    long long index;
    long long extent;
};

class CudaApi {
public:
    virtual ~CudaApi() = default;
    // "CUDA runtime" or "simulated device", for messages.
    virtual std::string name() const = 0;

    // Devices and versions.
    virtual cudaError_t getDeviceCount(int* count) = 0;
    virtual cudaError_t driverGetVersion(int* version) = 0;
    virtual cudaError_t runtimeGetVersion(int* version) = 0;
    virtual cudaError_t getDeviceProperties(cudaDeviceProp* prop, int device) = 0;
    virtual cudaError_t setDevice(int device) = 0;
    virtual cudaError_t memGetInfo(size_t* free, size_t* total) = 0;

    // The session's stream.
    virtual cudaError_t streamCreateWithFlags(cudaStream_t* stream, unsigned flags) = 0;
    virtual cudaError_t streamDestroy(cudaStream_t stream) = 0;
    virtual cudaError_t streamSynchronize(cudaStream_t stream) = 0;
    // cudaSuccess once the stream's work is done, cudaErrorNotReady before:
    // a wait that must watch Ctrl-C and a timeout polls it (an NCCL
    // transfer a rank never joins never ends).
    virtual cudaError_t streamQuery(cudaStream_t stream) = 0;

    // Stream-ordered memory from the device's default pool.
    virtual cudaError_t deviceGetDefaultMemPool(cudaMemPool_t* pool, int device) = 0;
    virtual cudaError_t memPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) = 0;
    virtual cudaError_t memPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) = 0;
    virtual cudaError_t memPoolTrimTo(cudaMemPool_t pool, size_t keep) = 0;
    virtual cudaError_t mallocFromPoolAsync(void** ptr, size_t bytes, cudaMemPool_t pool, cudaStream_t stream) = 0;
    virtual cudaError_t freeAsync(void* ptr, cudaStream_t stream) = 0;
    virtual cudaError_t memcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                                    cudaStream_t stream) = 0;
    virtual cudaError_t memsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream) = 0;

    // Page-locked host memory a kernel reads through the bus: the session's
    // cancel flag (docs/cuda-backend.md, "Stopping a long kernel").
    virtual cudaError_t hostRegister(void* ptr, size_t bytes, unsigned flags) = 0;
    virtual cudaError_t hostGetDevicePointer(void** device, void* host, unsigned flags) = 0;
    virtual cudaError_t hostUnregister(void* ptr) = 0;

    // Kernels: a library per compiled image, loaded once per session.
    virtual cudaError_t libraryLoadData(cudaLibrary_t* library, const void* image) = 0;
    virtual cudaError_t libraryGetKernel(cudaKernel_t* kernel, cudaLibrary_t library, const char* name) = 0;
    virtual cudaError_t libraryUnload(cudaLibrary_t library) = 0;
    virtual cudaError_t launchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                                     cudaStream_t stream) = 0;

    // Timing.
    virtual cudaError_t eventCreate(cudaEvent_t* event) = 0;
    virtual cudaError_t eventRecord(cudaEvent_t event, cudaStream_t stream) = 0;
    virtual cudaError_t eventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) = 0;
    virtual cudaError_t eventDestroy(cudaEvent_t event) = 0;

    // cuBLAS (library_calls.h "gemm", in row-major terms) on the stream.
    // The real runtime loads libcublas at the first call (Shoal starts
    // without it); blas() says what implements it, or "" when nothing does
    // (products then run as generated kernels). A cuBLAS failure is
    // cudaErrorUnknown with `blas_error` saying what cuBLAS said.
    virtual std::string blas() = 0;
    virtual cudaError_t gemm(cudaStream_t stream, ir::ScalarType elem, const ir::GemmShape& shape, const void* a,
                             const void* b, void* c) = 0;
    virtual std::string blas_error() const { return ""; }
    // cuSOLVER (library_calls.h "lu", column-major) on the stream, loaded
    // like cuBLAS; solver() is "" when nothing implements it (solve, inv and
    // det then run on the reference evaluator). Failures as gemm's, with
    // the message in blas_error.
    virtual std::string solver() { return ""; }
    virtual cudaError_t lu(cudaStream_t /*stream*/, ir::ScalarType /*elem*/, const ir::LuShape& /*shape*/, void* /*a*/,
                           void* /*pivots*/, void* /*b*/, void* /*info*/) {
        return cudaErrorNotSupported;
    }
    // library_calls.h "svd" (cuSOLVER's gesvdj), under the same solver().
    virtual cudaError_t svd(cudaStream_t /*stream*/, ir::ScalarType /*elem*/, const ir::SvdShape& /*shape*/, void* /*a*/,
                            void* /*s*/, void* /*u*/, void* /*v*/, void* /*info*/) {
        return cudaErrorNotSupported;
    }

    // Errors.
    virtual cudaError_t getLastError() = 0;
    virtual const char* getErrorName(cudaError_t error) = 0;
    virtual const char* getErrorString(cudaError_t error) = 0;

    // What real silicon reads from a compiled image, the simulated device is
    // told: the kernel IR the image was compiled from (it runs that on the
    // CPU executor). Called before libraryLoadData; the real runtime ignores it.
    virtual void describe_image(const std::string& /*image*/, const ir::Kernel& /*kernel*/) {}
};

// The real CUDA Runtime (null without a CUDA toolkit at build time).
std::shared_ptr<CudaApi> real_cuda_runtime();

// Whether an error leaves the device unusable until the process ends
// (illegal address, launch failure, ...): the session gives the device up.
bool is_sticky(cudaError_t error);

}  // namespace shoal::cuda
