// The kernel IR's operators on C++ values: the one mapping from ScalarType
// and the IR's operator enums onto the shared scalar semantics
// (lang/scalar_semantics.h). Constant folding (simplify.cpp) and host
// expressions (launch_plan.cpp eval_host) evaluate with it; the CPU executor
// (runtime/cpu) builds its vector nodes from the same functions.
#pragma once
#include <optional>

#include "codegen/ir.h"
#include "lang/scalar_semantics.h"

namespace shoal::ir {

template <class T> struct TypeTag { using type = T; };

// Calls f(TypeTag<T>{}) with T the C++ value type of t (Bool: uint8_t, one
// byte holding 0 or 1, as in memory): the one switch on the type per operation.
template <class F>
decltype(auto) with_type(ScalarType t, F&& f) {
    switch (t) {
        case ScalarType::Bool: return f(TypeTag<uint8_t>{});
        case ScalarType::I32: return f(TypeTag<int32_t>{});
        case ScalarType::I64: return f(TypeTag<int64_t>{});
        case ScalarType::U32: return f(TypeTag<uint32_t>{});
        case ScalarType::U64: return f(TypeTag<uint64_t>{});
        case ScalarType::F32: return f(TypeTag<float>{});
        case ScalarType::F64: break;
    }
    return f(TypeTag<double>{});
}

// A constant's value as T (F32 constants round to float), and a constant of
// type t holding v (U64: the bit pattern in Expr::i).
template <class T> T const_value(const Expr& c) {
    if constexpr (scalar::is_fp_v<T>) return static_cast<T>(c.f);
    else if constexpr (scalar::is_bool_v<T>) return c.i != 0;
    else return static_cast<T>(c.i);
}
template <class T> ExprPtr const_of(ScalarType t, T v) {
    if constexpr (scalar::is_fp_v<T>) return const_float(static_cast<double>(v), t);
    else if constexpr (scalar::is_bool_v<T>) return const_bool(v != 0);
    else return const_int(static_cast<int64_t>(v), t);
}

// op a, for the operators defined on T (the verifier rejects the others: nullopt).
template <class T> std::optional<T> apply_unary(UnaryOp op, T a) {
    switch (op) {
        case UnaryOp::Neg:
            if constexpr (!scalar::is_bool_v<T>) return scalar::neg(a);
            break;
        case UnaryOp::Not:
            if constexpr (scalar::is_bool_v<T>) return T(!a);
            break;
        case UnaryOp::BitNot:
            if constexpr (scalar::is_int_v<T>) return T(~a);
            break;
    }
    return std::nullopt;
}

// a op b for the arithmetic, bitwise and min/max operators defined on T
// (bool And/Or/Xor on 0/1 are the logical ones); nullopt otherwise.
template <class T> std::optional<T> apply_arithmetic(BinaryOp op, T a, T b) {
    if constexpr (!scalar::is_bool_v<T>) {
        switch (op) {
            case BinaryOp::Add: return scalar::add(a, b);
            case BinaryOp::Sub: return scalar::sub(a, b);
            case BinaryOp::Mul: return scalar::mul(a, b);
            case BinaryOp::Div: return scalar::div(a, b);
            case BinaryOp::Mod: return scalar::mod(a, b);
            case BinaryOp::Min: return scalar::min(a, b);
            case BinaryOp::Max: return scalar::max(a, b);
            default: break;
        }
    }
    if constexpr (!scalar::is_fp_v<T>) {
        switch (op) {
            case BinaryOp::And: return T(a & b);
            case BinaryOp::Or: return T(a | b);
            case BinaryOp::Xor: return T(a ^ b);
            default: break;
        }
    }
    if constexpr (scalar::is_int_v<T>) {
        if (op == BinaryOp::Shl) return scalar::shl(a, b);
        if (op == BinaryOp::Shr) return scalar::shr(a, b);
    }
    return std::nullopt;
}

// a op b for the comparisons (NaN compares false, so != is true); nullopt
// for the other operators.
template <class T> std::optional<bool> apply_comparison(BinaryOp op, T a, T b) {
    switch (op) {
        case BinaryOp::Eq: return a == b;
        case BinaryOp::Ne: return a != b;
        case BinaryOp::Lt: return a < b;
        case BinaryOp::Le: return a <= b;
        case BinaryOp::Gt: return a > b;
        case BinaryOp::Ge: return a >= b;
        default: return std::nullopt;
    }
}

}  // namespace shoal::ir
