// Host expressions over two plan scalars `a` and `b` of one type: every
// operator, call and cast of every type, constants the printer spells
// specially, and the launch-grid formulas the lowerings build. The build
// prints each one with host_expr_cpp into C++ (tests/tools/print_host_prelude.cpp)
// that test_scalar_semantics.cpp compiles with the CUDA prelude and compares
// with eval_host over edge values: both lists come from this one function.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "codegen/launch_plan.h"

namespace shoal::host_expr_samples {

struct Sample {
    ir::ScalarType operand;  // the type of a and b
    ir::ExprPtr expr;
};

inline std::vector<Sample> samples() {
    using namespace ir;
    using S = ScalarType;
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<Sample> out;
    for (S t : {S::Bool, S::I32, S::I64, S::U32, S::U64, S::F32, S::F64}) {
        const ExprPtr a = param("a", t), b = param("b", t);
        auto add = [&](ExprPtr e) { out.push_back(Sample{t, std::move(e)}); };
        const bool integer = t != S::Bool && !is_float(t);
        for (BinaryOp op : {BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge})
            add(binary(op, a, b));
        add(select(binary(BinaryOp::Lt, a, b), b, a));
        for (S to : {S::Bool, S::I32, S::I64, S::U32, S::U64, S::F32, S::F64})
            if (to != t) add(cast(to, a));
        if (t == S::Bool) {
            for (BinaryOp op : {BinaryOp::And, BinaryOp::Or, BinaryOp::Xor}) add(binary(op, a, b));
            add(unary(UnaryOp::Not, a));
            continue;
        }
        for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Mod, BinaryOp::Min,
                            BinaryOp::Max})
            add(binary(op, a, b));
        add(unary(UnaryOp::Neg, a));
        add(call("min", {a, b}, t));
        add(call("max", {a, b}, t));
        if (integer) {
            for (BinaryOp op : {BinaryOp::And, BinaryOp::Or, BinaryOp::Xor, BinaryOp::Shl, BinaryOp::Shr})
                add(binary(op, a, b));
            add(unary(UnaryOp::BitNot, a));
            // Constant divisors: the kernels print x / 3 raw, host C++ never does.
            for (int64_t d : {0, -1, 3, -3}) {
                add(binary(BinaryOp::Div, a, const_int(d, t)));
                add(binary(BinaryOp::Mod, a, const_int(d, t)));
            }
            add(binary(BinaryOp::Shl, a, const_int(-1, t)));  // the amount is masked
            add(binary(BinaryOp::Add, a, const_int(t == S::I32 ? INT32_MIN : INT64_MIN, t)));
        } else {
            for (double c : {0.1, -0.0, inf, -inf, std::nan(""), 1e-300, 3.0e38, 16777217.0})
                add(binary(BinaryOp::Add, a, const_float(c, t)));
            add(binary(BinaryOp::Max, a, const_float(std::nan(""), t)));
        }
    }
    // Launch grids as the lowerings build them.
    const ExprPtr n = param("a", S::I64), m = param("b", S::I64);
    out.push_back(Sample{S::I64, min_expr(ceil_div(n, i64(1024)), i64(1024))});
    out.push_back(Sample{S::I64, max_expr(ceil_div(n, m), i64(1))});
    out.push_back(Sample{S::I64, product({n, m, i64(3)})});
    out.push_back(Sample{S::I64, cast(S::I32, ceil_div(n, i64(256)))});
    out.push_back(Sample{S::I64, cast(S::I64, binary(BinaryOp::Mul, cast(S::F64, n), const_float(1.5, S::F64)))});
    return out;
}

}  // namespace shoal::host_expr_samples
