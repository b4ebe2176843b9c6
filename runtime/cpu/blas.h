// The CPU's BLAS (OpenBLAS, Debian's libopenblas-dev) behind the library
// calls of launch plans (codegen/library_calls.h). One set of threads on
// the machine at a time: OpenBLAS runs single-threaded inside each call and
// a product is split into row (or column) panels run on Shoal's own worker
// pool (thread_pool.h), so its threads never compete with the pool's.
// libopenblas is loaded at the first product (blas.cpp says why).
#pragma once
#include <cstdint>
#include <string>

#include "codegen/library_calls.h"

namespace shoal::cpu {

// Whether Shoal was built with a BLAS (else products run as generated kernels).
bool have_blas();
// "OpenBLAS 0.3.21 (Haswell), single-threaded calls on 2 workers", or why there is none.
std::string blas_description();

// c = op(a) op(b) (library_calls.h "gemm") for elements of `elem` (F32 or
// F64) on `workers` threads (0: every core). Extents beyond the BLAS'
// 32-bit integers are an Error(Runtime) saying so.
void gemm(ir::ScalarType elem, const ir::GemmShape& s, const void* a, const void* b, void* c, int workers = 0);

// Whether the BLAS has LAPACK's getrf / getrs (OpenBLAS does).
bool have_lapack();
// library_calls.h "lu": a (column-major, in place), pivots, then b solved
// when nrhs > 0 and a is not singular; *info as LAPACK's getrf. LAPACK runs
// on every core (Shoal's workers wait for the call).
void lu(ir::ScalarType elem, const ir::LuShape& s, void* a, int32_t* pivots, void* b, int32_t* info);

// Whether the BLAS has LAPACK's gesdd (OpenBLAS does).
bool have_svd();
// library_calls.h "svd": a (column-major, destroyed) into s, u and v
// (column-major); *info as LAPACK's gesdd. On every core, as lu.
void svd(ir::ScalarType elem, const ir::SvdShape& s, void* a, void* sv, void* u, void* v, int32_t* info);

}  // namespace shoal::cpu
