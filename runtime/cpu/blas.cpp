#include "runtime/cpu/blas.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <vector>

#include "lang/diagnostics.h"
#include "runtime/cpu/dl_symbol.h"
#include "runtime/cpu/thread_pool.h"

#ifdef SHOAL_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace shoal::cpu {

#ifdef SHOAL_HAVE_OPENBLAS

namespace {

// OpenBLAS, loaded at the first product (as cuBLAS and NVRTC are): a machine
// without it runs products as generated kernels. Loading it late also lets
// Shoal name the CPU's kernels before OpenBLAS looks: Debian's 0.3.21 does
// not know this machine's Xeon model and falls back to its SSE3 "Prescott"
// kernels (34 GFLOP/s at 512^2 on two cores, 230 with its AVX-512 ones), so
// OPENBLAS_CORETYPE is set from the CPU's features unless the user set it.
struct OpenBlas {
    decltype(&cblas_sgemm) sgemm = nullptr;
    decltype(&cblas_dgemm) dgemm = nullptr;
    decltype(&cblas_sgemv) sgemv = nullptr;
    decltype(&cblas_dgemv) dgemv = nullptr;
    decltype(&openblas_set_num_threads) set_num_threads = nullptr;
    decltype(&openblas_get_config) config = nullptr;
    decltype(&openblas_get_corename) corename = nullptr;
    // LAPACK in OpenBLAS (Fortran calling convention): absent in a BLAS
    // without it, which leaves solve / inv / det to the reference evaluator.
    using Getrf = void (*)(const int* m, const int* n, void* a, const int* lda, int* ipiv, int* info);
    using Getrs = void (*)(const char* trans, const int* n, const int* nrhs, const void* a, const int* lda,
                           const int* ipiv, void* b, const int* ldb, int* info, size_t trans_len);
    Getrf sgetrf = nullptr, dgetrf = nullptr;
    Getrs sgetrs = nullptr, dgetrs = nullptr;
    using Gesdd = void (*)(const char* jobz, const int* m, const int* n, void* a, const int* lda, void* s, void* u,
                           const int* ldu, void* vt, const int* ldvt, void* work, const int* lwork, int* iwork, int* info,
                           size_t jobz_len);
    Gesdd sgesdd = nullptr, dgesdd = nullptr;
    std::string why_not;  // when it did not load
};

const char* core_type_for_this_cpu() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
    return nullptr;  // OpenBLAS' own detection
}

const OpenBlas& openblas() {
    static const OpenBlas lib = [] {
        OpenBlas b;
        if (!std::getenv("OPENBLAS_CORETYPE"))
            if (const char* core = core_type_for_this_cpu()) setenv("OPENBLAS_CORETYPE", core, 0);
        void* handle = nullptr;
        for (const char* name : {"libopenblas.so.0", "libopenblas.so"})
            if ((handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;  // never closed
        if (!handle) {
            b.why_not = "libopenblas.so.0 not found (Debian: libopenblas0)";
            return b;
        }
        auto bind = [handle](auto& slot, const char* symbol) { return bind_symbol(handle, slot, symbol); };
        if (!bind(b.sgemm, "cblas_sgemm") || !bind(b.dgemm, "cblas_dgemm") || !bind(b.sgemv, "cblas_sgemv") ||
            !bind(b.dgemv, "cblas_dgemv") || !bind(b.set_num_threads, "openblas_set_num_threads") ||
            !bind(b.config, "openblas_get_config") || !bind(b.corename, "openblas_get_corename")) {
            b = OpenBlas{};
            b.why_not = "libopenblas.so.0 lacks the CBLAS functions";
            return b;
        }
        bind(b.sgetrf, "sgetrf_") && bind(b.dgetrf, "dgetrf_") && bind(b.sgetrs, "sgetrs_") && bind(b.dgetrs, "dgetrs_");
        bind(b.sgesdd, "sgesdd_") && bind(b.dgesdd, "dgesdd_");
        // OpenBLAS' own threads stay idle: each call runs on the thread making it.
        b.set_num_threads(1);
        return b;
    }();
    return lib;
}

int blas_int(int64_t v, const char* what) {
    if (v > INT_MAX)
        user_error(ErrorKind::Runtime, Loc{},
                   std::string("matmul: the ") + what + " extent " + std::to_string(v) +
                       " is beyond the BLAS' 32-bit integers; split the product");
    return static_cast<int>(v);
}

// One panel of the product: rows [r0, r1) and columns [c0, c1) of c.
template <class T>
void panel(const ir::GemmShape& s, const T* a, const T* b, T* c, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const int rows = int(r1 - r0), cols = int(c1 - c0), k = int(s.k), m = int(s.m);
    // op(a) row r starts at a + r * k (a is n x k), or at a + r with stride n (a is k x n).
    const T* ap = s.trans_a ? a + r0 : a + r0 * s.k;
    const int lda = s.trans_a ? int(s.n) : k;
    const int a_step = s.trans_a ? int(s.n) : 1;  // along a row of op(a)
    // op(b) column j starts at b + j with stride m (b is k x m), or at b + j * k (b is m x k).
    const T* bp = s.trans_b ? b + c0 * s.k : b + c0;
    const int ldb = s.trans_b ? k : m;
    const int b_step = s.trans_b ? 1 : m;  // down a column of op(b)
    T* cp = c + r0 * s.m + c0;
    const OpenBlas& lib = openblas();
    const auto ta = s.trans_a ? CblasTrans : CblasNoTrans, tb = s.trans_b ? CblasTrans : CblasNoTrans;
    // OpenBLAS 0.3.21's gemm does not forward a single row or column to gemv (3-10x slower there).
    if (cols == 1) {  // c[:, j] = op(a) b[:, j]
        if constexpr (std::is_same_v<T, float>)
            lib.sgemv(CblasRowMajor, ta, s.trans_a ? k : rows, s.trans_a ? rows : k, 1.0f, ap, lda, bp, b_step, 0.0f, cp, m);
        else
            lib.dgemv(CblasRowMajor, ta, s.trans_a ? k : rows, s.trans_a ? rows : k, 1.0, ap, lda, bp, b_step, 0.0, cp, m);
    } else if (rows == 1) {  // c[i, :] = op(b)^T a[i, :]
        const auto tt = s.trans_b ? CblasNoTrans : CblasTrans;
        if constexpr (std::is_same_v<T, float>)
            lib.sgemv(CblasRowMajor, tt, s.trans_b ? cols : k, s.trans_b ? k : cols, 1.0f, bp, ldb, ap, a_step, 0.0f, cp, 1);
        else
            lib.dgemv(CblasRowMajor, tt, s.trans_b ? cols : k, s.trans_b ? k : cols, 1.0, bp, ldb, ap, a_step, 0.0, cp, 1);
    } else if constexpr (std::is_same_v<T, float>) {
        lib.sgemm(CblasRowMajor, ta, tb, rows, cols, k, 1.0f, ap, lda, bp, ldb, 0.0f, cp, m);
    } else {
        lib.dgemm(CblasRowMajor, ta, tb, rows, cols, k, 1.0, ap, lda, bp, ldb, 0.0, cp, m);
    }
}

template <class T> void gemm_of(const ir::GemmShape& s, const T* a, const T* b, T* c, int workers) {
    if (s.n == 0 || s.m == 0) return;
    if (s.k == 0) {
        std::fill(c, c + s.n * s.m, T(0));
        return;
    }
    blas_int(s.n, "row");
    blas_int(s.m, "column");
    blas_int(s.k, "inner");
    // Panels along the longer side of c, a few per worker so that one slow
    // thread does not hold the others; below ~1 MFLOP one thread is faster.
    const bool by_rows = s.n >= s.m;
    const int64_t side = by_rows ? s.n : s.m;
    const int threads = s.flops() < (int64_t{1} << 20) ? 1 : worker_count(workers, side);
    const int64_t pieces = std::min<int64_t>(side, threads == 1 ? 1 : int64_t{threads} * 4);
    const int64_t per = (side + pieces - 1) / pieces;
    run_in_chunks(pieces, threads, 1, [&]() -> ChunkWork {
        return [&](int64_t begin, int64_t end, const std::atomic<bool>&) {
            for (int64_t p = begin; p < end; ++p) {
                const int64_t lo = p * per, hi = std::min(side, lo + per);
                if (lo >= hi) continue;
                if (by_rows) panel(s, a, b, c, lo, hi, 0, s.m);
                else panel(s, a, b, c, 0, s.n, lo, hi);
            }
        };
    });
}

// The matrix size from which LAPACK's calls take OpenBLAS' threads.
constexpr int64_t kThreadedLapack = 64;

template <class T>
void lu_of(const ir::LuShape& s, T* a, int32_t* pivots, T* b, int32_t* info) {
    const OpenBlas& lib = openblas();
    const int n = blas_int(s.n, "matrix"), nrhs = blas_int(s.nrhs, "right-hand side"), lda = std::max(1, n);
    *info = 0;
    if (n == 0) return;
    // LAPACK's blocked factorisation is worth OpenBLAS' threads; Shoal's
    // workers are idle while a plan's library call runs, so it takes them.
    // Not for a small matrix: waking them (they then spin in sched_yield,
    // taking a core from the host) cost more than a 3 x 3 factorisation.
    const bool threaded = int64_t{n} >= kThreadedLapack;
    if (threaded) lib.set_num_threads(worker_count(0, INT_MAX));
    int status = 0;
    (std::is_same_v<T, float> ? lib.sgetrf : lib.dgetrf)(&n, &n, a, &lda, pivots, &status);
    if (status == 0 && nrhs > 0) {
        int solved = 0;
        (std::is_same_v<T, float> ? lib.sgetrs : lib.dgetrs)(s.trans ? "T" : "N", &n, &nrhs, a, &lda, pivots, b, &lda, &solved, 1);
        SHOAL_INTERNAL_ASSERT(solved == 0, "getrs rejected its arguments (" + std::to_string(solved) + ")");
    }
    if (threaded) lib.set_num_threads(1);
    SHOAL_INTERNAL_ASSERT(status >= 0, "getrf rejected its arguments (" + std::to_string(status) + ")");
    *info = status;
}

// library_calls.h "svd" by LAPACK's divide-and-conquer gesdd (thin: jobz
// 'S'), its v' transposed into v afterwards.
template <class T>
void svd_of(const ir::SvdShape& s, T* a, T* sv, T* u, T* v, int32_t* info) {
    const OpenBlas& lib = openblas();
    const int rows = blas_int(s.rows, "matrix"), cols = blas_int(s.cols, "matrix"), p = std::min(rows, cols);
    *info = 0;
    if (p == 0) return;
    const auto gesdd = std::is_same_v<T, float> ? lib.sgesdd : lib.dgesdd;
    std::vector<T> vt(static_cast<size_t>(p) * static_cast<size_t>(cols));
    std::vector<int> iwork(static_cast<size_t>(8 * p));
    int lwork = -1, status = 0;
    T size = 0;
    gesdd("S", &rows, &cols, a, &rows, sv, u, &rows, vt.data(), &p, &size, &lwork, iwork.data(), &status, 1);
    SHOAL_INTERNAL_ASSERT(status == 0, "gesdd's workspace query failed (" + std::to_string(status) + ")");
    lwork = std::max(1, static_cast<int>(size));
    std::vector<T> work(static_cast<size_t>(lwork));
    const bool threaded = int64_t{p} >= kThreadedLapack;  // as lu_of
    if (threaded) lib.set_num_threads(worker_count(0, INT_MAX));
    gesdd("S", &rows, &cols, a, &rows, sv, u, &rows, vt.data(), &p, work.data(), &lwork, iwork.data(), &status, 1);
    if (threaded) lib.set_num_threads(1);
    SHOAL_INTERNAL_ASSERT(status >= 0, "gesdd rejected its arguments (" + std::to_string(status) + ")");
    *info = status;
    for (int i = 0; i < cols; ++i)
        for (int j = 0; j < p; ++j)
            v[static_cast<size_t>(i) + static_cast<size_t>(j) * static_cast<size_t>(cols)] =
                vt[static_cast<size_t>(j) + static_cast<size_t>(i) * static_cast<size_t>(p)];
}

}  // namespace

bool have_blas() { return openblas().why_not.empty(); }
bool have_svd() { return have_blas() && openblas().sgesdd && openblas().dgesdd; }

void svd(ir::ScalarType elem, const ir::SvdShape& s, void* a, void* sv, void* u, void* v, int32_t* info) {
    SHOAL_INTERNAL_ASSERT(have_svd(), "svd called without LAPACK");
    if (elem == ir::ScalarType::F32)
        svd_of(s, static_cast<float*>(a), static_cast<float*>(sv), static_cast<float*>(u), static_cast<float*>(v), info);
    else if (elem == ir::ScalarType::F64)
        svd_of(s, static_cast<double*>(a), static_cast<double*>(sv), static_cast<double*>(u), static_cast<double*>(v), info);
    else internal_error(__FILE__, __LINE__, "svd of " + std::string(ir::scalar_name(elem)));
}
bool have_lapack() { return have_blas() && openblas().sgetrf && openblas().dgetrf && openblas().sgetrs && openblas().dgetrs; }

void lu(ir::ScalarType elem, const ir::LuShape& s, void* a, int32_t* pivots, void* b, int32_t* info) {
    SHOAL_INTERNAL_ASSERT(have_lapack(), "lu called without LAPACK");
    if (elem == ir::ScalarType::F32) lu_of(s, static_cast<float*>(a), pivots, static_cast<float*>(b), info);
    else if (elem == ir::ScalarType::F64) lu_of(s, static_cast<double*>(a), pivots, static_cast<double*>(b), info);
    else internal_error(__FILE__, __LINE__, "lu of " + std::string(ir::scalar_name(elem)));
}

std::string blas_description() {
    const OpenBlas& lib = openblas();
    if (!lib.why_not.empty()) return "no BLAS (" + lib.why_not + "): products run as generated kernels";
    std::string config = lib.config();
    config = config.substr(0, config.find(' ', config.find(' ') + 1));  // "OpenBLAS 0.3.21"
    return config + " (" + lib.corename() + " kernels), single-threaded calls on Shoal's " +
           std::to_string(worker_count(0, INT_MAX)) + " workers";
}

void gemm(ir::ScalarType elem, const ir::GemmShape& s, const void* a, const void* b, void* c, int workers) {
    if (elem == ir::ScalarType::F32)
        gemm_of(s, static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(c), workers);
    else if (elem == ir::ScalarType::F64)
        gemm_of(s, static_cast<const double*>(a), static_cast<const double*>(b), static_cast<double*>(c), workers);
    else
        internal_error(__FILE__, __LINE__, "gemm of " + std::string(ir::scalar_name(elem)));
}

#else

bool have_blas() { return false; }
std::string blas_description() { return "no BLAS (Shoal was built without OpenBLAS: products run as generated kernels)"; }
void gemm(ir::ScalarType, const ir::GemmShape&, const void*, const void*, void*, int) {
    internal_error(__FILE__, __LINE__, "gemm called in a build without a BLAS");
}
bool have_lapack() { return false; }
void lu(ir::ScalarType, const ir::LuShape&, void*, int32_t*, void*, int32_t*) {
    internal_error(__FILE__, __LINE__, "lu called in a build without LAPACK");
}
bool have_svd() { return false; }
void svd(ir::ScalarType, const ir::SvdShape&, void*, void*, void*, void*, int32_t*) {
    internal_error(__FILE__, __LINE__, "svd called in a build without LAPACK");
}

#endif

}  // namespace shoal::cpu
