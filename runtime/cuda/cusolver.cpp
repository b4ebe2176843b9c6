#include "runtime/cuda/cusolver.h"

#include <cusolverDn.h>
#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "runtime/cpu/dl_symbol.h"

namespace shoal::cuda {

namespace {

// A cuSOLVER call that failed: cudaErrorUnknown, with `error` saying which and how.
cudaError_t failed(std::string& error, const char* call, cusolverStatus_t st) {
    error = std::string(call) + " failed (cusolverStatus " + std::to_string(static_cast<int>(st)) + ")";
    return cudaErrorUnknown;
}

}  // namespace

struct Cusolver::Library {
    std::once_flag once;
    std::string name, why;
    cusolverDnHandle_t handle = nullptr;
    decltype(&cusolverDnCreate) create = nullptr;
    decltype(&cusolverDnSetStream) set_stream = nullptr;
    decltype(&cusolverDnSgetrf_bufferSize) sgetrf_size = nullptr;
    decltype(&cusolverDnDgetrf_bufferSize) dgetrf_size = nullptr;
    decltype(&cusolverDnSgetrf) sgetrf = nullptr;
    decltype(&cusolverDnDgetrf) dgetrf = nullptr;
    decltype(&cusolverDnSgetrs) sgetrs = nullptr;
    decltype(&cusolverDnDgetrs) dgetrs = nullptr;
    decltype(&cusolverDnCreateGesvdjInfo) create_gesvdj = nullptr;
    decltype(&cusolverDnSgesvdj_bufferSize) sgesvdj_size = nullptr;
    decltype(&cusolverDnDgesvdj_bufferSize) dgesvdj_size = nullptr;
    decltype(&cusolverDnSgesvdj) sgesvdj = nullptr;
    decltype(&cusolverDnDgesvdj) dgesvdj = nullptr;
    gesvdjInfo_t gesvdj_params = nullptr;

    // The handle's calls go to `stream` (the executor's, in order with its kernels).
    cudaError_t on_stream(cudaStream_t stream, std::string& error) const {
        const cusolverStatus_t st = set_stream(handle, stream);
        return st == CUSOLVER_STATUS_SUCCESS ? cudaSuccess : failed(error, "cusolverDnSetStream", st);
    }

    void open() {
        for (const char* candidate : {"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so"}) {
            void* h = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);  // never closed
            if (!h) continue;
            auto bind = [h](auto& slot, const char* symbol) { return bind_symbol(h, slot, symbol); };
            if (!bind(create, "cusolverDnCreate") || !bind(set_stream, "cusolverDnSetStream") ||
                !bind(sgetrf_size, "cusolverDnSgetrf_bufferSize") || !bind(dgetrf_size, "cusolverDnDgetrf_bufferSize") ||
                !bind(sgetrf, "cusolverDnSgetrf") || !bind(dgetrf, "cusolverDnDgetrf") || !bind(sgetrs, "cusolverDnSgetrs") ||
                !bind(dgetrs, "cusolverDnDgetrs") || !bind(create_gesvdj, "cusolverDnCreateGesvdjInfo") ||
                !bind(sgesvdj_size, "cusolverDnSgesvdj_bufferSize") || !bind(dgesvdj_size, "cusolverDnDgesvdj_bufferSize") ||
                !bind(sgesvdj, "cusolverDnSgesvdj") || !bind(dgesvdj, "cusolverDnDgesvdj")) {
                why = std::string(candidate) + " lacks the getrf / getrs / gesvdj functions";
                return;
            }
            if (create(&handle) != CUSOLVER_STATUS_SUCCESS || create_gesvdj(&gesvdj_params) != CUSOLVER_STATUS_SUCCESS) {
                why = std::string("cusolverDnCreate failed (") + candidate + ")";
                return;
            }
            name = std::string("cuSOLVER (") + candidate + ")";
            return;
        }
        why = "libcusolver.so not found";
    }
};

Cusolver::Cusolver() : lib_(std::make_unique<Library>()) {}
Cusolver::~Cusolver() = default;

std::string Cusolver::load(std::string& why) {
    std::call_once(lib_->once, [this] { lib_->open(); });
    why = lib_->why;
    return lib_->name;
}

cudaError_t Cusolver::lu(cudaStream_t stream, ir::ScalarType elem, const ir::LuShape& shape, void* a, void* pivots,
                         void* b, void* info, std::string& error) {
    Library& l = *lib_;
    const int n = static_cast<int>(shape.n), nrhs = static_cast<int>(shape.nrhs), lda = n > 0 ? n : 1;
    if (n == 0) return cudaMemsetAsync(info, 0, sizeof(int), stream);
    if (const cudaError_t e = l.on_stream(stream, error); e != cudaSuccess) return e;
    const bool single = elem == ir::ScalarType::F32;
    int lwork = 0;
    cusolverStatus_t st = single ? l.sgetrf_size(l.handle, n, n, static_cast<float*>(a), lda, &lwork)
                                 : l.dgetrf_size(l.handle, n, n, static_cast<double*>(a), lda, &lwork);
    if (st != CUSOLVER_STATUS_SUCCESS) return failed(error, "cusolverDnXgetrf_bufferSize", st);
    // The workspace and getrs' own status, stream-ordered (freed after the calls).
    void* work = nullptr;
    const size_t work_bytes = static_cast<size_t>(lwork) * ir::scalar_size(elem) + sizeof(int);
    if (cudaError_t e = cudaMallocAsync(&work, work_bytes, stream); e != cudaSuccess) return e;
    int* solve_info = reinterpret_cast<int*>(static_cast<char*>(work) + static_cast<size_t>(lwork) * ir::scalar_size(elem));
    st = single ? l.sgetrf(l.handle, n, n, static_cast<float*>(a), lda, static_cast<float*>(work),
                           static_cast<int*>(pivots), static_cast<int*>(info))
                : l.dgetrf(l.handle, n, n, static_cast<double*>(a), lda, static_cast<double*>(work),
                           static_cast<int*>(pivots), static_cast<int*>(info));
    const cublasOperation_t op = shape.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (st == CUSOLVER_STATUS_SUCCESS && nrhs > 0)
        st = single ? l.sgetrs(l.handle, op, n, nrhs, static_cast<const float*>(a), lda,
                               static_cast<const int*>(pivots), static_cast<float*>(b), lda, solve_info)
                    : l.dgetrs(l.handle, op, n, nrhs, static_cast<const double*>(a), lda,
                               static_cast<const int*>(pivots), static_cast<double*>(b), lda, solve_info);
    const cudaError_t freed = cudaFreeAsync(work, stream);
    if (st != CUSOLVER_STATUS_SUCCESS) return failed(error, single ? "cusolverDnSgetrf/getrs" : "cusolverDnDgetrf/getrs", st);
    return freed;
}

cudaError_t Cusolver::svd(cudaStream_t stream, ir::ScalarType elem, const ir::SvdShape& shape, void* a, void* s, void* u,
                          void* v, void* info, std::string& error) {
    Library& l = *lib_;
    const int rows = static_cast<int>(shape.rows), cols = static_cast<int>(shape.cols);
    if (shape.p() == 0) return cudaMemsetAsync(info, 0, sizeof(int), stream);
    if (const cudaError_t e = l.on_stream(stream, error); e != cudaSuccess) return e;
    const bool single = elem == ir::ScalarType::F32;
    const cusolverEigMode_t vectors = CUSOLVER_EIG_MODE_VECTOR;
    int lwork = 0;
    cusolverStatus_t st =
        single ? l.sgesvdj_size(l.handle, vectors, 1, rows, cols, static_cast<const float*>(a), rows,
                                static_cast<const float*>(s), static_cast<const float*>(u), rows,
                                static_cast<const float*>(v), cols, &lwork, l.gesvdj_params)
               : l.dgesvdj_size(l.handle, vectors, 1, rows, cols, static_cast<const double*>(a), rows,
                                static_cast<const double*>(s), static_cast<const double*>(u), rows,
                                static_cast<const double*>(v), cols, &lwork, l.gesvdj_params);
    if (st != CUSOLVER_STATUS_SUCCESS) return failed(error, "cusolverDnXgesvdj_bufferSize", st);
    void* work = nullptr;
    if (cudaError_t e = cudaMallocAsync(&work, std::max<size_t>(1, static_cast<size_t>(lwork) * ir::scalar_size(elem)), stream);
        e != cudaSuccess)
        return e;
    st = single ? l.sgesvdj(l.handle, vectors, 1, rows, cols, static_cast<float*>(a), rows, static_cast<float*>(s),
                            static_cast<float*>(u), rows, static_cast<float*>(v), cols, static_cast<float*>(work), lwork,
                            static_cast<int*>(info), l.gesvdj_params)
                : l.dgesvdj(l.handle, vectors, 1, rows, cols, static_cast<double*>(a), rows, static_cast<double*>(s),
                            static_cast<double*>(u), rows, static_cast<double*>(v), cols, static_cast<double*>(work), lwork,
                            static_cast<int*>(info), l.gesvdj_params);
    const cudaError_t freed = cudaFreeAsync(work, stream);
    if (st != CUSOLVER_STATUS_SUCCESS) return failed(error, single ? "cusolverDnSgesvdj" : "cusolverDnDgesvdj", st);
    return freed;
}

}  // namespace shoal::cuda
