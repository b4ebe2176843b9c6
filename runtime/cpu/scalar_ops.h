// Scalar semantics of the kernel IR (codegen/ir.h, docs/semantics.md), one
// function per operation, templated on the C++ type of a lane value. The
// executor's vector nodes apply these in tight loops; the unit tests use them
// as the plain-C++ oracle. F32 math is done in float (sqrtf, expf, ...) so the
// results are those of CUDA's float functions up to their ulp differences.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "codegen/ir.h"

namespace shoal::cpu {

// Lane storage types: Bool is one byte holding 0 or 1 (as in memory).
template <class T> inline constexpr bool is_bool_v = std::is_same_v<T, uint8_t>;
template <class T> inline constexpr bool is_int_v = std::is_integral_v<T> && !is_bool_v<T>;
template <class T> inline constexpr bool is_fp_v = std::is_floating_point_v<T>;

template <class T> struct TypeTag { using type = T; };

// Calls f(TypeTag<T>{}) with T the lane type of t: the one switch per node.
template <class F>
decltype(auto) with_type(ir::ScalarType t, F&& f) {
    switch (t) {
        case ir::ScalarType::Bool: return f(TypeTag<uint8_t>{});
        case ir::ScalarType::I32: return f(TypeTag<int32_t>{});
        case ir::ScalarType::I64: return f(TypeTag<int64_t>{});
        case ir::ScalarType::U32: return f(TypeTag<uint32_t>{});
        case ir::ScalarType::U64: return f(TypeTag<uint64_t>{});
        case ir::ScalarType::F32: return f(TypeTag<float>{});
        case ir::ScalarType::F64: break;
    }
    return f(TypeTag<double>{});
}

namespace ops {

template <class T> using U = std::make_unsigned_t<T>;

// ---------------------------------------------------------------- arithmetic
// Integers wrap: the operation is done in the unsigned type, whose conversion
// back is modular in C++20.
template <class T> T add(T a, T b) {
    if constexpr (is_int_v<T>) return T(U<T>(a) + U<T>(b)); else return a + b;
}
template <class T> T sub(T a, T b) {
    if constexpr (is_int_v<T>) return T(U<T>(a) - U<T>(b)); else return a - b;
}
template <class T> T mul(T a, T b) {
    if constexpr (is_int_v<T>) return T(U<T>(a) * U<T>(b)); else return a * b;
}
template <class T> T neg(T a) {
    if constexpr (is_int_v<T>) return T(U<T>(0) - U<T>(a)); else return -a;
}
// Integer x / 0 is 0; minInt / -1 wraps to minInt.
template <class T> T div(T a, T b) {
    if constexpr (is_int_v<T>) {
        if (b == 0) return 0;
        if constexpr (std::is_signed_v<T>) {
            if (b == -1) return neg(a);
        }
        return T(a / b);
    } else {
        return a / b;
    }
}
// Integer x % 0 is 0 and minInt % -1 is 0; floats use fmod.
template <class T> T mod(T a, T b) {
    if constexpr (is_int_v<T>) {
        if (b == 0) return 0;
        if constexpr (std::is_signed_v<T>) {
            if (b == -1) return 0;
        }
        return T(a % b);
    } else {
        return std::fmod(a, b);
    }
}
// Floats: fmin/fmax (a NaN operand yields the other one).
template <class T> T min(T a, T b) {
    if constexpr (is_fp_v<T>) return std::fmin(a, b); else return b < a ? b : a;
}
template <class T> T max(T a, T b) {
    if constexpr (is_fp_v<T>) return std::fmax(a, b); else return a < b ? b : a;
}
// Shift amounts are taken modulo the bit width; >> is arithmetic on signed types.
template <class T> T shl(T a, T n) {
    return T(U<T>(a) << (U<T>(n) & (sizeof(T) * 8 - 1)));
}
template <class T> T shr(T a, T n) {
    return T(a >> (U<T>(n) & (sizeof(T) * 8 - 1)));
}
template <class T> T abs(T a) {
    if constexpr (is_fp_v<T>) return std::fabs(a);
    else if constexpr (std::is_signed_v<T>) return a < 0 ? neg(a) : a;  // abs minInt is minInt
    else return a;
}
// Integers: exact repeated squaring (wrapping); a negative exponent gives 0
// except for base 1 (1) and base -1 (+-1 by parity). Floats: pow.
template <class T> T pow(T x, T y) {
    if constexpr (is_fp_v<T>) {
        return std::pow(x, y);
    } else {
        if constexpr (std::is_signed_v<T>) {
            if (y < 0) return x == 1 ? T(1) : x == -1 ? T((y & 1) ? -1 : 1) : T(0);
        }
        U<T> result = 1, base = U<T>(x);
        for (U<T> e = U<T>(y); e != 0; e >>= 1) {
            if (e & 1) result *= base;
            base *= base;
        }
        return T(result);
    }
}
// The high half of the full product (__mulhi, __umulhi, __mul64hi, __umul64hi).
template <class T> T mulhi(T a, T b) {
    if constexpr (sizeof(T) == 4) {
        using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
        return T((W(a) * W(b)) >> 32);
    } else {
        using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
        return T((W(a) * W(b)) >> 64);
    }
}

// ---------------------------------------------------------------- conversions
// Floating -> integer: truncate toward zero, NaN -> 0, out of range saturates
// (CUDA's cvt.rzi.sat behaviour, and the reference evaluator's).
template <class I, class F> I saturate(F x) {
    constexpr F hi = F(uint64_t(1) << (std::numeric_limits<I>::digits - 1)) * F(2);  // 2^digits, exact
    if (x != x) return 0;
    if (x >= hi) return std::numeric_limits<I>::max();
    if constexpr (std::is_signed_v<I>) {
        if (x <= -hi) return std::numeric_limits<I>::min();
    } else {
        if (x <= 0) return 0;
    }
    return static_cast<I>(x);  // in range: C++ truncates toward zero
}

template <class To, class From> To convert(From x) {
    if constexpr (std::is_same_v<To, From>) return x;
    else if constexpr (is_bool_v<To>) return x != From(0) ? 1 : 0;  // NaN -> true, as in C
    else if constexpr (is_fp_v<From> && is_int_v<To>) return saturate<To>(x);
    else return static_cast<To>(x);  // int->int wraps (C++20), int->float rounds once
}

}  // namespace ops
}  // namespace shoal::cpu
