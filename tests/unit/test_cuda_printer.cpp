// The CUDA printer (codegen/cuda_printer.h) and NVRTC (runtime/cuda/nvrtc.h):
// sample kernels covering every IR node, op and type are printed, checked for
// the shape of the code, and -- with the CUDA toolkit -- compiled by NVRTC for
// sm_80 and sm_90 with zero warnings. A failed compilation prints the numbered
// source and the log.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "codegen/cuda_printer.h"
#include "codegen/kernel_builder.h"
#include "lang/diagnostics.h"
#include "runtime/cuda/nvrtc.h"
#include "sample_kernels.h"

using namespace shoal;
using namespace shoal::ir;
using namespace shoal::ir::samples;

namespace {

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

}  // namespace

// ---------------------------------------------------------------- verifier

TEST_CASE("ir: the sample kernels verify and print as IR text") {
    for (const auto& k : sample_kernels()) {
        CAPTURE(k.name);
        CHECK_NOTHROW(verify(k));
        std::string text = to_string(k);
        CHECK(text.rfind("kernel " + k.name, 0) == 0);
    }
}

// ---------------------------------------------------------------- printed shape

TEST_CASE("cuda: kernel signature, restrict/const, shared arrays, barriers") {
    std::string src = print_cuda({reduction_kernel()});
    CHECK(src.find("#include") == std::string::npos);
    CHECK(src.find("// rmse: sum (map (\\d -> d * d) (x - y)) at rmse.shoal:3:12\n"
                   "extern \"C\" __global__ void __launch_bounds__(256) sum_f32(\n") != std::string::npos);
    CHECK(src.find("    long long n,\n") != std::string::npos);
    CHECK(src.find("const float* __restrict__ x,") != std::string::npos);
    CHECK(src.find("float* __restrict__ partial) {") != std::string::npos);
    CHECK(src.find("const float* __restrict__ partial") == std::string::npos);
    CHECK(src.find("__shared__ float sdata[256];") != std::string::npos);
    CHECK(src.find("for (long long k = 0LL; k < 8LL; k += 1LL) {") != std::string::npos);
    // phase 0, then the loop's phase (its barrier precedes every next
    // iteration), then the last phase without one
    CHECK(count(src, "__syncthreads();") == 2);
    CHECK(src.find("const int tid = (int)threadIdx.x;") != std::string::npos);
    CHECK(src.find("float acc = 0.0f;") != std::string::npos);  // reassigned: not const
    CHECK(src.find("shoal_error") == std::string::npos);
    CHECK(src.find("shoal_div") == std::string::npos);  // helpers only when used
}

TEST_CASE("cuda: a flat kernel has one barrier fewer than phases") {
    Kernel k = atomics_kernel(S::I32);
    REQUIRE(k.body.size() == 3);
    CHECK(count(print_cuda({k}), "__syncthreads();") == 2);
    CHECK(count(print_cuda({empty_kernel()}), "__syncthreads();") == 0);
}

TEST_CASE("cuda: Shoal semantics in the printed operators") {
    std::string i32 = print_cuda({elementwise_kernel(S::I32)});
    CHECK(i32.find("shoal_div(x, y)") != std::string::npos);
    CHECK(i32.find("shoal_mod(x, y)") != std::string::npos);
    CHECK(i32.find("shoal_add(x, y)") != std::string::npos);
    CHECK(i32.find("shoal_shl(x, y)") != std::string::npos);
    CHECK(i32.find("x >> (y & 31)") != std::string::npos);
    CHECK(i32.find("shoal_neg(x)") != std::string::npos);
    CHECK(i32.find("shoal_abs(x)") != std::string::npos);
    CHECK(i32.find("__mulhi(x, y)") != std::string::npos);
    CHECK(i32.find("(-2147483647 - 1)") != std::string::npos);
    CHECK(i32.find("min(x, y)") != std::string::npos);
    CHECK(i32.find("shoal_to_i32") == std::string::npos);  // no float -> int cast here

    std::string u64 = print_cuda({elementwise_kernel(S::U64)});
    CHECK(u64.find("x << (y & 63ULL)") != std::string::npos);
    CHECK(u64.find("18446744073709551615ULL") != std::string::npos);
    CHECK(u64.find("__umul64hi(x, y)") != std::string::npos);
    CHECK(u64.find("x + y") != std::string::npos);  // unsigned arithmetic wraps in C++ too

    std::string f32 = print_cuda({elementwise_kernel(S::F32)});
    CHECK(f32.find("fminf(x, y)") != std::string::npos);
    CHECK(f32.find("fmodf(x, y)") != std::string::npos);
    CHECK(f32.find("roundf(x)") != std::string::npos);
    CHECK(f32.find("fabsf(x)") != std::string::npos);
    CHECK(f32.find("0.1f") != std::string::npos);
    CHECK(f32.find("-0.0f") != std::string::npos);
    CHECK(f32.find("1e-45f") != std::string::npos);
    CHECK(f32.find("3.4028235e+38f") != std::string::npos);
    CHECK(f32.find("-shoal_inf_f32()") != std::string::npos);
    CHECK(f32.find("shoal_nan_f32()") != std::string::npos);
    CHECK(f32.find("shoal_to_i32(x)") != std::string::npos);
    CHECK(f32.find("shoal_to_u64(x)") != std::string::npos);
    CHECK(f32.find("x - (-y)") != std::string::npos);
    CHECK(f32.find("(x != 0)") != std::string::npos);  // float -> bool

    std::string f64 = print_cuda({elementwise_kernel(S::F64)});
    CHECK(f64.find("fmin(x, y)") != std::string::npos);
    CHECK(f64.find("sqrt(x)") != std::string::npos);
    CHECK(f64.find("0.1;") != std::string::npos);
    CHECK(f64.find("5e-324") != std::string::npos);
}

TEST_CASE("cuda: shuffles, atomics and the error record") {
    std::string sh = print_cuda({shuffle_kernel()});
    CHECK(sh.find("__shfl_down_sync(0xffffffffu, acc, 16)") != std::string::npos);
    CHECK(sh.find("__shfl_xor_sync(0xffffffffu, v, 16)") != std::string::npos);
    CHECK(sh.find("__shfl_up_sync(0xffffffffu, scan, 1)") != std::string::npos);
    CHECK(sh.find("__shfl_sync(0xffffffffu, scan, 31)") != std::string::npos);
    CHECK(sh.find("(__shfl_xor_sync(0xffffffffu, (int)(v > 0.0f), 1) != 0)") != std::string::npos);
    CHECK(sh.find("atomicAdd(&total[0LL], last);") != std::string::npos);

    std::string af = print_cuda({atomics_kernel(S::F32)});
    CHECK(af.find("old = shoal_atomic_min(&acc[1LL], v);") != std::string::npos);
    CHECK(af.find("old = shoal_atomic_cas(&acc[4LL], 1.0f, v);") != std::string::npos);
    CHECK(af.find("atomicExch(&acc[11LL], v);") != std::string::npos);
    std::string ai = print_cuda({atomics_kernel(S::I64)});
    CHECK(ai.find("old = shoal_atomic_add(&acc[0LL], v);") != std::string::npos);
    CHECK(ai.find("atomicMin(&acc[1LL], v);") != std::string::npos);
    CHECK(ai.find("shoal_atomic_add(&s[tid & 7], v);") != std::string::npos);

    std::string g = print_cuda({gather_kernel()});
    CHECK(g.find("struct ShoalError {") != std::string::npos);
    CHECK(g.find("double* __restrict__ out,\n    ShoalError* __restrict__ shoal_error) {") != std::string::npos);
    CHECK(g.find("// check 0: index out of bounds (gather.shoal:1:9)") != std::string::npos);
    CHECK(g.find("shoal_record_error(shoal_error, 0, j, m);") != std::string::npos);
    CHECK(g.find("void shoal_record_error(ShoalError* e, int code, long long index, long long extent)") !=
          std::string::npos);
}

TEST_CASE("cuda: comments, else-if chains, unused declarations") {
    std::string c = print_cuda({control_kernel()});
    CHECK(c.find("// collatz: a test of control flow\n// second line of the comment\nextern") != std::string::npos);
    CHECK(c.find("// line one\n") != std::string::npos);
    CHECK(c.find("ends with a lambda \\ (end of line)\n") != std::string::npos);
    CHECK(c.find("} else if (c < 100) {") != std::string::npos);
    CHECK(c.find("[[maybe_unused]] const int unused = shoal_shl(1, -1);") != std::string::npos);
    CHECK(c.find("[[maybe_unused]] __shared__ float unused_tile[64];") != std::string::npos);
    CHECK(c.find("while (v > 1LL) {") != std::string::npos);
    CHECK(count(c, "__syncthreads();") == 2);  // after phase 0 and inside the BlockFor
}

TEST_CASE("cuda: several kernels share one prelude") {
    std::string all = print_cuda(sample_kernels());
    CHECK(count(all, "struct ShoalError {") == 1);
    CHECK(count(all, "int shoal_div(int a, int b)") == 1);
    CHECK(count(all, "extern \"C\" __global__") == sample_kernels().size());
}

TEST_CASE("cuda: printing verifies the kernels") {
    Kernel broken = reduction_kernel();
    broken.params[1].access = Access::Write;  // x is loaded
    CHECK_THROWS_WITH_AS(print_cuda({broken}), doctest::Contains("reads 'x', a Write buffer"), Error);
    CHECK_THROWS_WITH_AS(print_cuda({reduction_kernel(), reduction_kernel()}),
                         doctest::Contains("two kernels named sum_f32"), Error);
}

// ---------------------------------------------------------------- NVRTC

#ifdef SHOAL_HAVE_NVRTC

namespace {

void check_compiles(const std::string& what, const std::string& source, const std::string& arch) {
    cuda::NvrtcResult r = cuda::compile_cuda(source, arch);
    bool clean = r.ok && r.log.find("warning") == std::string::npos;
    if (!clean)
        FAIL_CHECK("NVRTC " << arch << " on " << what << (r.ok ? " warned" : " failed") << ":\n"
                            << r.log << "\nsource:\n" << cuda::number_lines(source));
    CHECK(r.ptx.find(".entry") != std::string::npos);
}

}  // namespace

TEST_CASE("nvrtc: every sample kernel compiles for sm_80 and sm_90 without warnings") {
    for (const auto& k : sample_kernels()) {
        std::string src = print_cuda({k});
        check_compiles(k.name, src, "sm_90");
        check_compiles(k.name, src, "sm_80");
    }
    check_compiles("all kernels in one unit", print_cuda(sample_kernels()), "sm_90");
}

TEST_CASE("nvrtc: a compile error is reported with the log") {
    cuda::NvrtcResult r = cuda::compile_cuda("extern \"C\" __global__ void k() { undefined_thing(); }", "sm_90");
    CHECK_FALSE(r.ok);
    CHECK(r.log.find("undefined_thing") != std::string::npos);
    CHECK(cuda::number_lines("a\nb\n") == "   1 | a\n   2 | b\n");
}

#endif
