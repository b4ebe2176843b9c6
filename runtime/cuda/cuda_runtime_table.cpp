// The real CUDA Runtime behind CudaApi: cudart is linked statically
// (CUDA::cudart_static), so a machine without CUDA libraries still starts
// Shoal; without a driver the first call reports cudaErrorInsufficientDriver
// or cudaErrorNoDevice and the session stays on the CPU executor.
#include "runtime/cuda/cuda_api.h"

#include "runtime/cpu/dl_symbol.h"
#include "runtime/cuda/cusolver.h"

#include <cublas_api.h>
#include <dlfcn.h>

#include <algorithm>

#include <mutex>

namespace shoal::cuda {

namespace {

// cuBLAS, loaded at its first use (as NVRTC is): a machine without it still
// runs Shoal, with products as generated kernels. One handle, on the
// session's stream.
class Cublas {
public:
    // "cuBLAS 13.0 (libcublas.so.13)", or "" with `why` saying what is missing.
    std::string load(std::string& why) {
        std::call_once(once_, [this] { open(); });
        why = why_;
        return name_;
    }

    cudaError_t gemm(cudaStream_t stream, ir::ScalarType elem, const ir::GemmShape& g, const void* a, const void* b,
                     void* c, std::string& error) {
        if (set_stream_(handle_, stream) != CUBLAS_STATUS_SUCCESS) return fail("cublasSetStream", error);
        // cuBLAS is column-major: c^T (m x n) = op(b)^T op(a)^T, each row-major
        // matrix read as its transpose.
        const cublasOperation_t ob = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, oa = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        const int n = int(g.n), m = int(g.m), k = int(g.k);
        if (n == 0 || m == 0) return cudaSuccess;  // nothing to write (cuBLAS rejects the leading dimensions)
        // k == 0: c = 0 (beta = 0); a leading dimension must be at least 1 even then.
        const int ldb = std::max(1, g.trans_b ? k : m), lda = std::max(1, g.trans_a ? n : k);
        cublasStatus_t st;
        if (elem == ir::ScalarType::F32) {
            const float one = 1, zero = 0;
            st = sgemm_(handle_, ob, oa, m, n, k, &one, static_cast<const float*>(b), ldb, static_cast<const float*>(a),
                        lda, &zero, static_cast<float*>(c), m);
        } else {
            const double one = 1, zero = 0;
            st = dgemm_(handle_, ob, oa, m, n, k, &one, static_cast<const double*>(b), ldb,
                        static_cast<const double*>(a), lda, &zero, static_cast<double*>(c), m);
        }
        return st == CUBLAS_STATUS_SUCCESS ? cudaSuccess : fail(elem == ir::ScalarType::F32 ? "cublasSgemm" : "cublasDgemm", error, st);
    }

private:
    cudaError_t fail(const char* call, std::string& error, cublasStatus_t st = CUBLAS_STATUS_INTERNAL_ERROR) {
        error = std::string(call) + " failed with status " + std::to_string(int(st));
        return cudaErrorUnknown;
    }

    void open() {
        std::vector<std::string> names = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
#ifdef SHOAL_CUDA_LIBRARY_DIR
        for (size_t i = 0, n = names.size(); i < n; ++i) names.push_back(std::string(SHOAL_CUDA_LIBRARY_DIR) + "/" + names[i]);
#endif
        for (const std::string& name : names) {
            void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed
            if (!lib) continue;
            auto bind = [lib](auto& slot, const char* symbol) { return bind_symbol(lib, slot, symbol); };
            if (!bind(create_, "cublasCreate_v2") || !bind(set_stream_, "cublasSetStream_v2") ||
                !bind(sgemm_, "cublasSgemm_v2") || !bind(dgemm_, "cublasDgemm_v2")) {
                why_ = name + " lacks the gemm functions";
                continue;
            }
            if (create_(&handle_) != CUBLAS_STATUS_SUCCESS) {
                why_ = "cublasCreate failed (" + name + ")";
                return;
            }
            name_ = "cuBLAS (" + name + ")";
            return;
        }
        if (why_.empty()) why_ = "libcublas.so not found";
    }

    std::once_flag once_;
    std::string name_, why_;
    cublasHandle_t handle_ = nullptr;
    decltype(&cublasCreate_v2) create_ = nullptr;
    decltype(&cublasSetStream_v2) set_stream_ = nullptr;
    decltype(&cublasSgemm_v2) sgemm_ = nullptr;
    decltype(&cublasDgemm_v2) dgemm_ = nullptr;
};

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
    cudaError_t streamQuery(cudaStream_t stream) override { return cudaStreamQuery(stream); }
    cudaError_t hostRegister(void* ptr, size_t bytes, unsigned flags) override { return cudaHostRegister(ptr, bytes, flags); }
    cudaError_t hostGetDevicePointer(void** device, void* host, unsigned flags) override {
        return cudaHostGetDevicePointer(device, host, flags);
    }
    cudaError_t hostUnregister(void* ptr) override { return cudaHostUnregister(ptr); }
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
    std::string blas() override {
        std::string why;
        return cublas_.load(why);
    }
    cudaError_t gemm(cudaStream_t stream, ir::ScalarType elem, const ir::GemmShape& shape, const void* a, const void* b,
                     void* c) override {
        if (blas().empty()) return cudaErrorNotSupported;
        return cublas_.gemm(stream, elem, shape, a, b, c, blas_error_);
    }
    std::string blas_error() const override { return blas_error_; }
    std::string solver() override {
        std::string why;
        return cusolver_.load(why);
    }
    cudaError_t lu(cudaStream_t stream, ir::ScalarType elem, const ir::LuShape& shape, void* a, void* pivots, void* b,
                   void* info) override {
        if (solver().empty()) return cudaErrorNotSupported;
        return cusolver_.lu(stream, elem, shape, a, pivots, b, info, blas_error_);
    }
    cudaError_t svd(cudaStream_t stream, ir::ScalarType elem, const ir::SvdShape& shape, void* a, void* sv, void* u,
                    void* v, void* info) override {
        if (solver().empty()) return cudaErrorNotSupported;
        return cusolver_.svd(stream, elem, shape, a, sv, u, v, info, blas_error_);
    }
    cudaError_t getLastError() override { return cudaGetLastError(); }
    const char* getErrorName(cudaError_t error) override { return cudaGetErrorName(error); }
    const char* getErrorString(cudaError_t error) override { return cudaGetErrorString(error); }

private:
    Cublas cublas_;
    Cusolver cusolver_;
    std::string blas_error_;
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
