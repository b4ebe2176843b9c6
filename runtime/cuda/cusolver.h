// cuSOLVER's dense LU (getrf + getrs) and SVD (gesvdj) behind library_calls.h "lu" and "svd", loaded
// at its first use as cuBLAS is: a machine without libcusolver still runs
// Shoal, with solve / inv / det on the reference evaluator (and a warning).
#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "codegen/library_calls.h"

namespace shoal::cuda {

class Cusolver {
public:
    Cusolver();
    ~Cusolver();
    // "cuSOLVER 12 (libcusolver.so.12)", or "" with `why` saying what is missing.
    std::string load(std::string& why);
    // library_calls.h "lu" on device memory, in stream order: getrf into
    // `info`, then (nrhs > 0) getrs with its own status, so `info` keeps
    // getrf's pivot report (b is then meaningless for a singular a, and the
    // plan raises the error). A cuSOLVER failure is cudaErrorUnknown with
    // `error` saying which call failed and how.
    cudaError_t lu(cudaStream_t stream, ir::ScalarType elem, const ir::LuShape& shape, void* a, void* pivots, void* b,
                   void* info, std::string& error);
    // library_calls.h "svd" by gesvdj (Jacobi, thin, any shape; its
    // singular values sorted descending), in stream order.
    cudaError_t svd(cudaStream_t stream, ir::ScalarType elem, const ir::SvdShape& shape, void* a, void* s, void* u,
                    void* v, void* info, std::string& error);

private:
    struct Library;
    std::unique_ptr<Library> lib_;
};

}  // namespace shoal::cuda
