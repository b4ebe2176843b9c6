// Shoal's scalar semantics are defined once, in lang/scalar_semantics.h; the
// CUDA prelude (codegen/cuda_printer.cpp) is device C++ of its own. Here the
// prelude, exactly as the printer emits it, is compiled as host C++ (the
// build prints it into cuda_prelude_host.inc with tests/tools/
// print_host_prelude.cpp) with host stand-ins for the CUDA intrinsics it
// calls, and every helper is compared bit for bit with the shared
// definitions over edge values of every type. The same header holds the
// sample host expressions of host_expr_samples.h as host_expr_cpp prints
// them: compiled, they compute what eval_host does. Last, the error record:
// failures arriving in any order leave the lowest thread's first one, which
// is what the CPU executor reports.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "codegen/launch_plan.h"
#include "codegen/scalar_eval.h"
#include "host_expr_samples.h"
#include "lang/scalar_semantics.h"

// ---------------------------------------------------------------- the prelude on the host
// CUDA's qualifiers, builtin variables and intrinsics as host C++: the
// atomics are real atomics, the thread and block indices are per host thread.
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))

namespace device {

struct Dim3 {
    unsigned x = 0;
};
thread_local Dim3 threadIdx, blockIdx, blockDim;

inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }

template <class T> T atomicCAS(T* p, T compare, T value) {
    std::atomic_ref<T>(*p).compare_exchange_strong(compare, value);
    return compare;  // the old value, whether it matched or not
}
template <class T> T atomicExch(T* p, T value) { return std::atomic_ref<T>(*p).exchange(value); }
template <class T> T atomicAdd(T* p, T value) { return std::atomic_ref<T>(*p).fetch_add(value); }
template <class T> T atomicAnd(T* p, T value) { return std::atomic_ref<T>(*p).fetch_and(value); }
template <class T> T atomicOr(T* p, T value) { return std::atomic_ref<T>(*p).fetch_or(value); }
template <class T> T atomicXor(T* p, T value) { return std::atomic_ref<T>(*p).fetch_xor(value); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

#include "cuda_prelude_host.inc"

}  // namespace device

#undef __device__
#undef __forceinline__
#undef __noinline__

using namespace shoal;
using ir::ScalarType;

namespace {

// The prelude's spelling of a type: on LP64 int64_t is `long`, the
// prelude's 64-bit types are `long long`.
template <class T>
using Cuda = std::conditional_t<std::is_same_v<T, int64_t>, long long,
                                std::conditional_t<std::is_same_v<T, uint64_t>, unsigned long long, T>>;

template <class F> auto bits(F x) { return std::bit_cast<std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>>(x); }

// Bit-identical, except that any NaN equals any NaN: payloads are not part
// of the semantics (the device's canonical NaN is not x86's).
template <class T> bool same(T x, T y) {
    if constexpr (std::is_floating_point_v<T>) return (std::isnan(x) && std::isnan(y)) || bits(x) == bits(y);
    else return x == y;
}

// The same for a result of fmin / fmax, where a zero may have either sign:
// C leaves min(-0.0, 0.0) open (docs/semantics.md), and compilers swap the
// operands of fmin / fmax as they please.
template <class T> bool same_min_max(T x, T y) { return same(x, y) || (x == 0 && y == 0); }

// Edge values of every type: zero and its sign, +-1, the shift widths, the
// extremes and their neighbours, the float images of the integer limits
// (2^31, 2^32, 2^63, 2^64) and their neighbours, infinities, NaNs, denormals.
template <class T> std::vector<T> edge_values() {
    using L = std::numeric_limits<T>;
    if constexpr (scalar::is_bool_v<T>) {
        return {T(0), T(1)};
    } else if constexpr (std::is_floating_point_v<T>) {
        std::vector<T> v = {T(0), T(-0.0), T(1), T(-1), T(0.5), T(-0.5), T(1.5), T(-1.5), T(2.5), T(-2.5),
                            T(0.1), T(7), T(-7), T(1e10), T(-1e10), T(1e30), T(-1e30), L::max(), L::lowest(),
                            L::min(), L::denorm_min(), -L::denorm_min(), L::infinity(), -L::infinity(),
                            L::quiet_NaN(), -L::quiet_NaN()};
        for (int e : {31, 32, 63, 64}) {
            for (T x : {std::ldexp(T(1), e), -std::ldexp(T(1), e)}) {
                v.push_back(x);
                v.push_back(std::nextafter(x, T(0)));
                v.push_back(std::nextafter(x, 2 * x));
            }
        }
        if constexpr (sizeof(T) == 8)
            for (T x : {2147483647.5, -2147483648.5, -2147483648.9, -2147483649.0, 4294967295.5, 9007199254740993.0})
                v.push_back(x);
        return v;
    } else {
        std::vector<T> v = {T(0), T(1), T(2), T(3), T(7), T(31), T(32), T(33), T(63), T(64), T(65), T(1000),
                            L::max(), T(L::max() - 1), T(L::max() / 2), T(L::max() / 2 + 1), L::min(), T(L::min() + 1)};
        if constexpr (std::is_signed_v<T>)
            for (T x : {-1, -2, -3, -7, -31, -32, -33, -63, -64, -65, -1000}) v.push_back(x);
        if constexpr (sizeof(T) == 8)
            for (T x : {T(1) << 31, T(1) << 32, T(3037000500), T(INT32_MAX), T(INT32_MIN)}) v.push_back(x);
        return v;
    }
}

}  // namespace

// ---------------------------------------------------------------- the shared definitions
// docs/semantics.md, checked at compile time on the integer cases.
static_assert(scalar::div(INT32_MIN, -1) == INT32_MIN && scalar::mod(INT32_MIN, -1) == 0);
static_assert(scalar::div(INT64_MIN, int64_t(-1)) == INT64_MIN && scalar::mod(INT64_MIN, int64_t(-1)) == 0);
static_assert(scalar::div(7, 0) == 0 && scalar::mod(7, 0) == 0 && scalar::div(7u, 0u) == 0u);
static_assert(scalar::div(-7, 2) == -3 && scalar::mod(-7, 2) == -1 && scalar::mod(7, -2) == 1);
static_assert(scalar::add(INT32_MAX, 1) == INT32_MIN && scalar::mul(65536, 65536) == 0);
static_assert(scalar::neg(INT32_MIN) == INT32_MIN && scalar::abs(INT32_MIN) == INT32_MIN);
static_assert(scalar::shl(1, 32) == 1 && scalar::shl(1, -1) == INT32_MIN && scalar::shl(int64_t(1), int64_t(64)) == 1);
static_assert(scalar::shr(-8, 1) == -4 && scalar::shr(-1, 100) == -1 && scalar::shr(0x80000000u, 31u) == 1u);
static_assert(scalar::pow(2, 10) == 1024 && scalar::pow(2, 31) == INT32_MIN && scalar::pow(2, 32) == 0);
static_assert(scalar::pow(0, 0) == 1 && scalar::pow(0, -1) == 0 && scalar::pow(2, -1) == 0);
static_assert(scalar::pow(1, -5) == 1 && scalar::pow(-1, -3) == -1 && scalar::pow(-1, -4) == 1);
static_assert(scalar::pow(int64_t(3), int64_t(40)) == -6289078614652622815);
static_assert(scalar::pow(int64_t(-1), INT64_MAX) == -1 && scalar::pow(int64_t(1), INT64_MIN) == 1);
static_assert(scalar::pow(2, INT32_MAX) == 0 && scalar::pow(-1, INT32_MAX) == -1 && scalar::pow(-1, INT32_MIN) == 1);
static_assert(scalar::pow(0, INT32_MIN) == 0 && scalar::pow(2u, 33u) == 0u && scalar::pow(0u, 0u) == 1u);
static_assert(scalar::mulhi(INT32_MIN, INT32_MIN) == 0x40000000 && scalar::mulhi(uint64_t(1) << 63, uint64_t(4)) == 2);
static_assert(scalar::convert<int32_t>(int64_t(1) << 32) == 0 && scalar::convert<uint32_t>(-1) == 0xffffffffu);
static_assert(scalar::convert<int32_t>(true) == 1 && scalar::convert<bool>(-3) && !scalar::convert<bool>(0));

TEST_CASE("scalar semantics: conversions and floating point as docs/semantics.md says") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    CHECK(scalar::convert<int32_t>(nan) == 0);
    CHECK(scalar::convert<int32_t>(3e9f) == INT32_MAX);
    CHECK(scalar::convert<int32_t>(-3e9f) == INT32_MIN);
    CHECK(scalar::convert<int32_t>(-0.9f) == 0);
    CHECK(scalar::convert<int32_t>(2147483647.9) == INT32_MAX);
    CHECK(scalar::convert<int32_t>(-2147483648.9) == INT32_MIN);
    CHECK(scalar::convert<int32_t>(2147483648.0f) == INT32_MAX);  // 2^31 exactly
    CHECK(scalar::convert<int64_t>(inf) == INT64_MAX);
    CHECK(scalar::convert<int64_t>(9223372036854775808.0) == INT64_MAX);  // 2^63 exactly
    CHECK(scalar::convert<int64_t>(-9223372036854775808.0) == INT64_MIN);
    CHECK(scalar::convert<uint32_t>(-1.0) == 0u);
    CHECK(scalar::convert<uint64_t>(1e20) == UINT64_MAX);
    CHECK(scalar::convert<uint64_t>(std::nextafter(18446744073709551616.0, 0.0)) == 18446744073709549568ull);
    CHECK(scalar::convert<uint8_t>(nan) == 1);  // bool: NaN != 0, as in C
    CHECK(scalar::convert<float>(uint8_t(1)) == 1.0f);
    // integer -> float rounds once: 2^60 + 2^36 + 1 is just above a float midpoint
    const int64_t above_half = (int64_t(1) << 60) + (int64_t(1) << 36) + 1;
    CHECK(scalar::convert<float>(above_half) == std::ldexp(1.0f, 60) + std::ldexp(1.0f, 37));
    CHECK(std::isnan(scalar::div(0.0f, 0.0f)));
    CHECK(scalar::div(1.0, 0.0) == std::numeric_limits<double>::infinity());
    CHECK(scalar::mod(-7.5, 2.0) == -1.5);
    CHECK(scalar::min(nan, 1.0f) == 1.0f);
    CHECK(scalar::max(1.0f, nan) == 1.0f);
    CHECK(std::isnan(scalar::min(nan, nan)));
    CHECK(scalar::abs(-0.0) == 0.0);
    CHECK(!std::signbit(scalar::abs(-0.0)));
    CHECK(scalar::pow(2.0f, 0.5f) == std::sqrt(2.0f));
}

// ---------------------------------------------------------------- prelude = shared definitions
namespace {

template <class T> void check_integer_helpers() {
    using C = Cuda<T>;
    const std::vector<T> values = edge_values<T>();
    for (T x : values) {
        CAPTURE(x);
        if constexpr (std::is_signed_v<T>) {
            CHECK(device::shoal_neg(C(x)) == C(scalar::neg(x)));
            CHECK(device::shoal_abs(C(x)) == C(scalar::abs(x)));
        }
        for (T y : values) {
            CAPTURE(y);
            if constexpr (std::is_signed_v<T>) {
                CHECK(device::shoal_add(C(x), C(y)) == C(scalar::add(x, y)));
                CHECK(device::shoal_sub(C(x), C(y)) == C(scalar::sub(x, y)));
                CHECK(device::shoal_mul(C(x), C(y)) == C(scalar::mul(x, y)));
                CHECK(device::shoal_shl(C(x), C(y)) == C(scalar::shl(x, y)));
            }
            CHECK(device::shoal_div(C(x), C(y)) == C(scalar::div(x, y)));
            CHECK(device::shoal_mod(C(x), C(y)) == C(scalar::mod(x, y)));
        }
    }
}

template <class F> void check_float_helpers() {
    const std::vector<F> values = edge_values<F>();
    for (F x : values) {
        CAPTURE(x);
        CHECK(device::shoal_to_i32(x) == scalar::convert<int32_t>(x));
        CHECK(device::shoal_to_i64(x) == scalar::convert<int64_t>(x));
        CHECK(device::shoal_to_u32(x) == scalar::convert<uint32_t>(x));
        CHECK(device::shoal_to_u64(x) == scalar::convert<uint64_t>(x));
        for (F y : values) {
            CAPTURE(y);
            // The atomics return the old value and leave min / max in memory.
            F cell = x;
            CHECK(same(device::shoal_atomic_min(&cell, y), x));
            CHECK(same_min_max(cell, scalar::min(x, y)));
            cell = x;
            CHECK(same(device::shoal_atomic_max(&cell, y), x));
            CHECK(same_min_max(cell, scalar::max(x, y)));
            // CAS compares bit patterns: a NaN compare value can match, -0.0 does not match 0.0.
            cell = x;
            CHECK(same(device::shoal_atomic_cas(&cell, y, F(42)), x));
            CHECK(bits(cell) == (bits(x) == bits(y) ? bits(F(42)) : bits(x)));
        }
        if constexpr (sizeof(F) == 8) {  // float has CUDA's own atomicExch
            F cell = x;
            CHECK(bits(device::shoal_atomic_exch(&cell, F(3))) == bits(x));
            CHECK(cell == F(3));
        }
    }
}

}  // namespace

TEST_CASE("prelude: integer helpers agree with lang/scalar_semantics.h") {
    check_integer_helpers<int32_t>();
    check_integer_helpers<int64_t>();
    check_integer_helpers<uint32_t>();
    check_integer_helpers<uint64_t>();
}

TEST_CASE("prelude: float -> integer conversions and float atomics agree with lang/scalar_semantics.h") {
    check_float_helpers<float>();
    check_float_helpers<double>();
}

// x ** y on floats: the printers' shoal_pow is lang/scalar_semantics.h's
// float_pow, and the shorthand exponents give the exactly rounded power
// (pow's special cases kept).
template <class F> void check_float_powers() {
    const std::vector<F> values = edge_values<F>();
    for (F y : {F(2), F(3), F(-1), F(0.5), F(1), F(0), F(-0.0), F(2.5), F(-2), F(4), F(-0.5)})
        for (F x : values) {
            CAPTURE(x);
            CAPTURE(y);
            CHECK(same(device::shoal_pow(x, y), scalar::pow(x, y)));
        }
    for (F x : values) {
        CAPTURE(x);
        CHECK(same(scalar::pow(x, F(2)), x * x));
        CHECK(same(scalar::pow(x, F(-1)), F(1) / x));
        CHECK(same(scalar::pow(x, F(0)), F(1)));
        if constexpr (sizeof(F) == 4) {
            // A float's square is exact in double, and the double square root
            // rounded to float is the correctly rounded one: one rounding each
            // (glibc's powf(x, 0.5) is not always: 2^64's neighbour).
            CHECK(same(scalar::pow(x, F(2)), static_cast<F>(static_cast<double>(x) * x)));
            if (x != 0 && x != -std::numeric_limits<F>::infinity())
                CHECK(same(scalar::pow(x, F(0.5)), static_cast<F>(std::sqrt(static_cast<double>(x)))));
        }
    }
    CHECK(!std::signbit(scalar::pow(F(-0.0), F(0.5))));
    CHECK(scalar::pow(-std::numeric_limits<F>::infinity(), F(0.5)) == std::numeric_limits<F>::infinity());
}

TEST_CASE("prelude: float powers agree with lang/scalar_semantics.h; the shorthand exponents are exact") {
    check_float_powers<float>();
    check_float_powers<double>();
}

TEST_CASE("prelude: special float constants and 64-bit integer atomics") {
    CHECK(bits(device::shoal_inf_f32()) == bits(std::numeric_limits<float>::infinity()));
    CHECK(bits(device::shoal_inf_f64()) == bits(std::numeric_limits<double>::infinity()));
    CHECK(std::isnan(device::shoal_nan_f32()));
    CHECK(std::isnan(device::shoal_nan_f64()));
    const std::vector<int64_t> values = edge_values<int64_t>();
    for (int64_t x : values) {
        for (int64_t y : values) {
            CAPTURE(x);
            CAPTURE(y);
            long long cell = x;
            CHECK(device::shoal_atomic_add(&cell, y) == x);
            CHECK(cell == scalar::add(x, y));
            cell = x;
            CHECK(device::shoal_atomic_and(&cell, y) == x);
            CHECK(cell == (x & y));
            cell = x;
            CHECK(device::shoal_atomic_or(&cell, y) == x);
            CHECK(cell == (x | y));
            cell = x;
            CHECK(device::shoal_atomic_xor(&cell, y) == x);
            CHECK(cell == (x ^ y));
            cell = x;
            CHECK(device::shoal_atomic_cas(&cell, y, 5LL) == x);
            CHECK(cell == (x == y ? 5 : x));
        }
        long long cell = x;
        CHECK(device::shoal_atomic_exch(&cell, 9LL) == x);
        CHECK(cell == 9);
    }
}

// ---------------------------------------------------------------- the error record
namespace {

struct Failure {
    unsigned thread;  // global: block * blockDim + thread
    int code;
    long long index, extent;
};

// What the runtime sets before a launch (cuda_printer.h).
device::ShoalError fresh_record() { return device::ShoalError{~0ull, -1, 0, 0, 0}; }

void fail_on(device::ShoalError& e, const Failure& f, unsigned block_dim) {
    device::blockDim.x = block_dim;
    device::blockIdx.x = f.thread / block_dim;
    device::threadIdx.x = f.thread % block_dim;
    device::shoal_record_error(&e, f.code, f.index, f.extent);
}

}  // namespace

static_assert(sizeof(device::ShoalError) == 32 && offsetof(device::ShoalError, code) == 8 &&
                  offsetof(device::ShoalError, lock) == 12 && offsetof(device::ShoalError, index) == 16 &&
                  offsetof(device::ShoalError, extent) == 24,
              "the layout cuda_printer.h documents for the runtime");

TEST_CASE("prelude: the error record keeps the lowest thread's first failure, in any order") {
    const unsigned block = 128;
    // Threads of several blocks failing different checks, some twice: thread
    // 129 (block 1) is the lowest, and its first failure is check 1.
    const std::vector<std::vector<Failure>> by_thread = {
        {{700, 2, 70, 7}},
        {{129, 1, 12, 9}, {129, 0, 13, 9}},
        {{130, 0, -1, 5}},
        {{5000, 3, 500, 50}, {5000, 1, 501, 50}, {5000, 2, 502, 50}},
        {{block * 40 + 3, 1, 9, 9}},
    };
    std::mt19937 rng(2024);
    for (int round = 0; round < 500; ++round) {
        // A random interleaving of the threads that keeps each one's program order.
        std::vector<size_t> next(by_thread.size(), 0);
        device::ShoalError e = fresh_record();
        for (;;) {
            std::vector<size_t> ready;
            for (size_t t = 0; t < by_thread.size(); ++t)
                if (next[t] < by_thread[t].size()) ready.push_back(t);
            if (ready.empty()) break;
            const size_t t = ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng)];
            fail_on(e, by_thread[t][next[t]++], block);
        }
        CHECK(e.key == 129);
        CHECK(e.code == 1);
        CHECK(e.index == 12);
        CHECK(e.extent == 9);
        CHECK(e.lock == 0);
    }

    // Real threads racing for the lock: thread t runs as (block 7 - t, thread t).
    for (int round = 0; round < 20; ++round) {
        device::ShoalError e = fresh_record();
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < 8; ++t)
            threads.emplace_back([&e, t] {
                for (int k = 0; k < 200; ++k) fail_on(e, Failure{(7 - t) * 64 + t, k % 3, t * 1000 + k, 64}, 64);
            });
        for (auto& th : threads) th.join();
        CHECK(e.key == 7);  // block 0, thread 7
        CHECK(e.code == 0);
        CHECK(e.index == 7000);
        CHECK(e.lock == 0);
    }
}

// ---------------------------------------------------------------- host expressions
namespace {

template <class T> ir::HostValue host_value(ScalarType t, T x) {
    if constexpr (std::is_floating_point_v<T>) return ir::HostValue{t, 0, static_cast<double>(x)};
    else return ir::HostValue{t, static_cast<int64_t>(x), 0};
}
template <class T> T value_as(const ir::HostValue& v) {
    if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v.f);
    else return static_cast<T>(v.i);
}

}  // namespace

TEST_CASE("host_expr_cpp: compiled with the prelude, every sample computes what eval_host does") {
    const auto samples = host_expr_samples::samples();
    REQUIRE(samples.size() == std::size(device::host_samples));
    for (size_t k = 0; k < samples.size(); ++k) {
        const auto& s = samples[k];
        const std::string cpp = ir::host_expr_cpp(s.expr);
        CAPTURE(cpp);
        const bool min_max = (s.expr->kind == ir::ExprKind::Binary &&
                              (s.expr->binary_op == ir::BinaryOp::Min || s.expr->binary_op == ir::BinaryOp::Max)) ||
                             s.expr->kind == ir::ExprKind::Call;
        std::string mismatches;
        ir::with_type(s.operand, [&](auto tag) {
            using T = typename decltype(tag)::type;
            const std::vector<T> values = edge_values<T>();
            for (T x : values) {
                for (T y : values) {
                    auto lookup = [&](const std::string& name) { return host_value(s.operand, name == "a" ? x : y); };
                    const ir::HostValue want = ir::eval_host(s.expr, lookup);
                    unsigned char result[8] = {};
                    device::host_samples[k](&x, &y, result);
                    ir::with_type(s.expr->type, [&](auto result_tag) {
                        using R = typename decltype(result_tag)::type;
                        R got;
                        std::memcpy(&got, result, sizeof got);
                        const R w = value_as<R>(want);
                        if (!(min_max ? same_min_max(got, w) : same(got, w)) && mismatches.size() < 400)
                            mismatches += "a = " + std::to_string(x) + ", b = " + std::to_string(y) + ": compiled " +
                                          std::to_string(got) + ", eval_host " + std::to_string(w) + "\n";
                    });
                }
            }
        });
        CHECK_MESSAGE(mismatches.empty(), mismatches);
    }
}

TEST_CASE("host_expr_cpp: the prelude's helpers, no raw / or % or C casts, exact constants") {
    using ir::BinaryOp;
    const ir::ExprPtr n = ir::param("n", ScalarType::I64), k = ir::param("k", ScalarType::I32);
    const ir::ExprPtr grid = ir::min_expr(ir::ceil_div(n, ir::i64(1024)), ir::i64(1024));
    CHECK(ir::host_expr_string(grid) == "min((n + 1023) / 1024, 1024)");  // the `:cuda` view is unchanged
    CHECK(ir::host_expr_cpp(grid) == "std::min(shoal_div(shoal_sub(shoal_add(n, 1024LL), 1LL), 1024LL), 1024LL)");
    CHECK(ir::host_expr_cpp(ir::binary(BinaryOp::Mod, k, ir::const_int(8, ScalarType::I32))) == "shoal_mod(k, 8)");
    CHECK(ir::host_expr_cpp(ir::cast(ScalarType::I32, n)) == "static_cast<int>(n)");
    CHECK(ir::host_expr_cpp(ir::cast(ScalarType::F32, n)) == "static_cast<float>(n)");
    CHECK(ir::host_expr_cpp(ir::cast(ScalarType::I64, ir::param("x", ScalarType::F64))) == "shoal_to_i64(x)");
    CHECK(ir::host_expr_cpp(ir::cast(ScalarType::Bool, n)) == "(n != 0)");
    CHECK(ir::host_expr_cpp(ir::unary(ir::UnaryOp::Neg, k)) == "shoal_neg(k)");
    CHECK(ir::host_expr_cpp(ir::select(ir::binary(BinaryOp::Lt, k, ir::const_int(0, ScalarType::I32)),
                                       ir::const_int(INT32_MIN, ScalarType::I32), k)) ==
          "(k < 0 ? (-2147483647 - 1) : k)");
    CHECK(ir::host_expr_cpp(ir::const_float(0.1, ScalarType::F64)) == "0.1");
    CHECK(ir::host_expr_cpp(ir::const_float(0.1, ScalarType::F32)) == "0.1f");
    CHECK(ir::host_expr_cpp(ir::const_float(-std::numeric_limits<double>::infinity(), ScalarType::F64)) ==
          "-shoal_inf_f64()");
    // Doubles read back exactly (6 significant digits would not).
    for (double v : {1.0 / 3.0, 0.1, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 16777217.0, -0.0}) {
        const std::string text = ir::host_expr_cpp(ir::const_float(v, ScalarType::F64));
        CAPTURE(text);
        CHECK(bits(std::strtod(text.c_str(), nullptr)) == bits(v));
    }
    CHECK_THROWS(ir::host_expr_cpp(ir::cast(ScalarType::I64, ir::thread_idx())));
}

TEST_CASE("eval_host: integer -> float conversions round once, as in kernels") {
    // 2^60 + 2^36 + 1 rounds up to the next float; through double it would
    // round to 2^60 + 2^36, a float tie, and then to even (down).
    const int64_t v = (int64_t(1) << 60) + (int64_t(1) << 36) + 1;
    auto none = [](const std::string&) { return ir::HostValue{}; };
    const ir::HostValue r = ir::eval_host(ir::cast(ScalarType::F32, ir::const_int(v, ScalarType::I64)), none);
    CHECK(r.f == std::ldexp(1.0, 60) + std::ldexp(1.0, 37));
    CHECK(ir::eval_host_int(ir::const_float(std::nan(""), ScalarType::F64), none) == 0);
    CHECK(ir::eval_host_int(ir::const_float(1e300, ScalarType::F64), none) == INT64_MAX);
}

namespace {

// |got - want| in units of the last place of the float nearest `want`.
double ulps_from(float got, double want) {
    const auto nearest = static_cast<float>(want);
    if (std::isnan(want) || std::isinf(nearest) || std::isinf(got)) return got == nearest || (got != got && want != want) ? 0 : 1e9;
    const float a = std::fabs(nearest);
    const float ulp = std::nextafter(a, std::numeric_limits<float>::infinity()) - a;
    return std::fabs(static_cast<double>(got) - want) / ulp;
}

}  // namespace

// lang/math_kernels.inc: the bound docs/semantics.md states, on a stride of
// every float (the whole range was measured once: exp 0.98 ulp, log 0.83).
TEST_CASE("float exp and log: Shoal's own, within 1 ulp, C's special values") {
    double worst_exp = 0, worst_log = 0;
    for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 997) {
        const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
        const double want_log = std::log(static_cast<double>(x));
        worst_log = std::max(worst_log, ulps_from(scalar::log(x), want_log));
        const double want_exp = std::exp(static_cast<double>(x));
        if (want_exp >= std::numeric_limits<float>::min() || x != x)  // normal results
            worst_exp = std::max(worst_exp, ulps_from(scalar::exp(x), want_exp));
    }
    CHECK(worst_exp <= 1.0);
    CHECK(worst_log <= 1.0);
    const float inf = std::numeric_limits<float>::infinity();
    CHECK(std::isnan(scalar::exp(std::numeric_limits<float>::quiet_NaN())));
    CHECK(scalar::exp(inf) == inf);
    CHECK(scalar::exp(-inf) == 0.0f);
    CHECK(scalar::exp(89.0f) == inf);
    CHECK(scalar::exp(0.0f) == 1.0f);
    CHECK(scalar::exp(-200.0f) == 0.0f);
    CHECK(scalar::exp(-87.0f) > 0.0f);
    CHECK(scalar::log(0.0f) == -inf);
    CHECK(scalar::log(-0.0f) == -inf);
    CHECK(std::isnan(scalar::log(-1.0f)));
    CHECK(scalar::log(inf) == inf);
    CHECK(scalar::log(1.0f) == 0.0f);
    CHECK(std::isnan(scalar::log(std::numeric_limits<float>::quiet_NaN())));
    CHECK(scalar::log(std::numeric_limits<float>::denorm_min()) == static_cast<float>(std::log(0x1p-149)));
}
