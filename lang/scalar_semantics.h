// Shoal's scalar semantics (docs/semantics.md), defined once: every
// arithmetic operation and conversion of one C++ value type. The reference
// evaluator (lang/array_ops.h, lang/value.cpp), constant folding
// (codegen/simplify.cpp), host expressions (codegen/launch_plan.cpp) and the
// CPU executor (runtime/cpu/scalar_ops.h) all call these. The CUDA prelude
// (codegen/cuda_printer.cpp) is device C++ of its own; the unit test
// tests/unit/test_scalar_semantics.cpp compiles it as host code and checks it
// against these bit for bit.
//
// T is int32_t, int64_t, uint32_t, uint64_t, float, double, or a bool: `bool`
// in the reference evaluator, `uint8_t` holding 0 or 1 in the executor's
// lanes (one byte, as in memory). F32 math is done in float, as on the device.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace shoal::scalar {

template <class T> inline constexpr bool is_bool_v = std::is_same_v<T, bool> || std::is_same_v<T, uint8_t>;
template <class T> inline constexpr bool is_int_v = std::is_integral_v<T> && !is_bool_v<T>;
template <class T> inline constexpr bool is_fp_v = std::is_floating_point_v<T>;

template <class T> using Unsigned = std::make_unsigned_t<T>;

// ---------------------------------------------------------------- arithmetic
// Integers wrap (two's complement): the operation is done in the unsigned
// type, whose conversion back is modular in C++20.
template <class T> constexpr T add(T a, T b) {
    if constexpr (is_int_v<T>) return T(Unsigned<T>(a) + Unsigned<T>(b)); else return a + b;
}
template <class T> constexpr T sub(T a, T b) {
    if constexpr (is_int_v<T>) return T(Unsigned<T>(a) - Unsigned<T>(b)); else return a - b;
}
template <class T> constexpr T mul(T a, T b) {
    if constexpr (is_int_v<T>) return T(Unsigned<T>(a) * Unsigned<T>(b)); else return a * b;
}
template <class T> constexpr T neg(T a) {
    if constexpr (is_int_v<T>) return T(Unsigned<T>(0) - Unsigned<T>(a)); else return -a;
}
// Integer / truncates toward zero; x / 0 is 0; minInt / -1 wraps to minInt.
template <class T> constexpr T div(T a, T b) {
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
template <class T> constexpr T mod(T a, T b) {
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
// Floats: C's fmin/fmax (a NaN operand yields the other one), and of two
// equal operands (-0.0 and 0.0) the first, as glibc's fmin/fmax return them.
// Written out so that the native code's helpers (cpu_printer.cpp) are this
// very formula and inline and vectorise.
template <class T> constexpr T min(T a, T b) {
    if constexpr (is_fp_v<T>) return a != a ? b : b < a ? b : a; else return b < a ? b : a;
}
template <class T> constexpr T max(T a, T b) {
    if constexpr (is_fp_v<T>) return a != a ? b : a < b ? b : a; else return a < b ? b : a;
}
// Shift amounts are taken modulo the bit width (n & 31, n & 63), as CUDA and
// x86 do; << wraps, >> is arithmetic on signed types.
template <class T> constexpr T shl(T a, T n) {
    return T(Unsigned<T>(a) << (Unsigned<T>(n) & (sizeof(T) * 8 - 1)));
}
template <class T> constexpr T shr(T a, T n) {
    return T(a >> (Unsigned<T>(n) & (sizeof(T) * 8 - 1)));
}
template <class T> constexpr T abs(T a) {
    if constexpr (is_fp_v<T>) return std::fabs(a);
    else if constexpr (std::is_signed_v<T>) return a < 0 ? neg(a) : a;  // abs minInt is minInt
    else return a;
}
// Float exp and log are Shoal's own (lang/math_kernels.inc: branch-free, so
// that native loops calling them vectorise, within 1 ulp); the CPU printer
// prints the same text into native code. Double uses the C library's.
#define SHOAL_MATH_FN inline
#include "lang/math_kernels.inc"
#undef SHOAL_MATH_FN
template <class T> T exp(T x) {
    if constexpr (std::is_same_v<T, float>) return shoal_expf(x); else return std::exp(x);
}
template <class T> T log(T x) {
    if constexpr (std::is_same_v<T, float>) return shoal_logf(x); else return std::log(x);
}

// x ** y. Integers: exact repeated squaring (wrapping); a negative exponent
// gives 0 except for base 1 (1) and base -1 (+-1 by parity). Floats: the
// exponents people write as shorthands are arithmetic, not a pow call (10-20x
// faster per element): y = 2 is x * x and y = -1 is 1 / x (both the exactly
// rounded power, as a correctly rounded pow gives it), y = 0.5 is sqrt x with
// pow's special cases (+0 for -0, +inf for -inf; correctly rounded, where
// glibc's powf is not always), y = 1 is x, y = 3 is
// (x * x) * x (two roundings: within 1 ulp of the exact cube); any other
// exponent is the C library's pow. The printers' shoal_pow (codegen/
// c_printer.cpp) is this function.
template <class T> T float_pow(T x, T y) {
    if (y == T(2)) return x * x;
    if (y == T(1)) return x;
    if (y == T(-1)) return T(1) / x;
    if (y == T(3)) return x * x * x;
    if (y == T(0.5)) return x == T(0) ? T(0) : x == -std::numeric_limits<T>::infinity() ? -x : std::sqrt(x);
    return std::pow(x, y);
}
template <class T> constexpr T pow(T x, T y) {
    if constexpr (is_fp_v<T>) {
        return float_pow(x, y);
    } else {
        if constexpr (std::is_signed_v<T>) {
            if (y < 0) return x == 1 ? T(1) : x == -1 ? T((y & 1) ? -1 : 1) : T(0);
        }
        Unsigned<T> result = 1, base = Unsigned<T>(x);
        for (Unsigned<T> e = Unsigned<T>(y); e != 0; e >>= 1) {
            if (e & 1) result *= base;
            base *= base;
        }
        return T(result);
    }
}
// The high half of the full integer product (CUDA's __mulhi, __umulhi,
// __mul64hi, __umul64hi).
template <class T> constexpr T mulhi(T a, T b) {
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
// to the integer type's min/max (CUDA's cvt.rzi.sat; a C++ cast is undefined there).
template <class I, class F> constexpr I saturate(F x) {
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

// Any value type to any other: to bool is `!= 0` (NaN -> true, as in C);
// bool is 0 or 1; integer -> integer wraps (C++20); integer -> floating and
// double -> float round once, to nearest.
template <class To, class From> constexpr To convert(From x) {
    if constexpr (std::is_same_v<To, From>) return x;
    else if constexpr (is_bool_v<To>) return x != From(0) ? 1 : 0;
    else if constexpr (is_fp_v<From> && is_int_v<To>) return saturate<To>(x);
    else return static_cast<To>(x);
}

}  // namespace shoal::scalar
