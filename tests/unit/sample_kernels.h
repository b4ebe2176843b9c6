// The printer tests' sample kernels (tests/unit/test_cuda_printer.cpp): one
// per construct the CUDA printer knows, also run as printed CUDA against the
// CPU executor (tests/unit/test_printed_cuda.cpp).
#pragma once

#include <cmath>
#include <limits>
#include <memory>

#include "codegen/kernel_builder.h"

namespace shoal::ir::samples {

using S = ScalarType;

inline const std::vector<S> kNumeric = {S::I32, S::I64, S::U32, S::U64, S::F32, S::F64};
inline const std::vector<S> kAll = {S::Bool, S::I32, S::I64, S::U32, S::U64, S::F32, S::F64};

inline ExprPtr i64(int64_t v) { return const_int(v, S::I64); }
inline ExprPtr i32(int64_t v) { return const_int(v, S::I32); }
inline ExprPtr bin(BinaryOp op, ExprPtr a, ExprPtr b) { return binary(op, std::move(a), std::move(b)); }
inline ExprPtr lit(double v, S t) { return is_float(t) ? const_float(v, t) : const_int(static_cast<int64_t>(v), t); }

// blockIdx * blockDim + threadIdx and the grid-stride step, as i64.
inline ExprPtr global_thread() {
    return bin(BinaryOp::Add, bin(BinaryOp::Mul, block_idx(), cast(S::I64, block_dim())), cast(S::I64, thread_idx()));
}
inline ExprPtr grid_stride() { return bin(BinaryOp::Mul, grid_dim(), cast(S::I64, block_dim())); }

// Interesting constants of each type: extremes, NaN/inf, -0.0, denormals.
inline std::vector<ExprPtr> special_constants(S t) {
    switch (t) {
        case S::I32: return {i32(INT32_MIN), i32(INT32_MAX), i32(-1), i32(0)};
        case S::I64: return {i64(INT64_MIN), i64(INT64_MAX), i64(-7)};
        case S::U32: return {const_int(UINT32_MAX, S::U32), const_int(0, S::U32)};
        case S::U64: return {const_int(-1, S::U64), const_int(1, S::U64)};
        case S::F32:
        case S::F64: {
            double inf = std::numeric_limits<double>::infinity();
            double tiny = t == S::F32 ? std::numeric_limits<float>::denorm_min() : std::numeric_limits<double>::denorm_min();
            double big = t == S::F32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
            return {const_float(0.1, t), const_float(-0.0, t), const_float(inf, t), const_float(-inf, t),
                    const_float(std::nan(""), t), const_float(tiny, t), const_float(big, t), const_float(3, t)};
        }
        default: return {const_bool(true)};
    }
}

// One kernel per element type: every operator, function, cast and constant
// that applies to the type, results stored to typed output buffers.
inline Kernel elementwise_kernel(S t) {
    std::string ty = scalar_name(t);
    KernelBuilder kb("elementwise_" + ty);
    ExprPtr n = param(kb.scalar_param("n", S::I64), S::I64);
    ExprPtr c = param(kb.scalar_param("c", t), t);
    kb.buffer_param("a", t, Access::Read);
    kb.buffer_param("b", t, Access::Read);
    kb.buffer_param("out", t, Access::Write);
    kb.buffer_param("flags", S::Bool, Access::Write);
    kb.buffer_param("mask", S::Bool, Access::Read);
    kb.buffer_param("from_bool", t, Access::Write);
    for (S u : kAll)
        if (u != t) kb.buffer_param(std::string("to_") + scalar_name(u), u, Access::Write);

    ExprPtr i = var("i", S::I64);
    kb.open();
    ExprPtr x = kb.bind("x", load("a", i, t));
    ExprPtr y = kb.bind("y", load("b", i, t));
    std::vector<ExprPtr> values, flags;
    for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Mod, BinaryOp::Min,
                        BinaryOp::Max})
        values.push_back(bin(op, x, y));
    values.push_back(unary(UnaryOp::Neg, x));
    values.push_back(bin(BinaryOp::Add, x, c));
    values.push_back(select(bin(BinaryOp::Lt, x, y), x, y));
    values.push_back(select(load("mask", i, S::Bool), x, y));
    values.push_back(call("abs", {x}, t));
    values.push_back(call("min", {x, c}, t));
    values.push_back(call("max", {x, c}, t));
    // an operand that prints with a leading minus must not fuse into `--`
    values.push_back(bin(BinaryOp::Sub, x, unary(UnaryOp::Neg, y)));
    values.push_back(bin(BinaryOp::Sub, x, special_constants(t).front()));
    if (!is_float(t)) {
        for (BinaryOp op : {BinaryOp::And, BinaryOp::Or, BinaryOp::Xor, BinaryOp::Shl, BinaryOp::Shr})
            values.push_back(bin(op, x, y));
        values.push_back(unary(UnaryOp::BitNot, x));
        values.push_back(call("mulhi", {x, y}, t));
    } else {
        for (const char* f : {"sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
                              "floor", "ceil", "round", "erf"})
            values.push_back(call(f, {x}, t));
        for (const char* f : {"atan2", "pow", "fmod"}) values.push_back(call(f, {x, y}, t));
    }
    for (const auto& k : special_constants(t)) values.push_back(k);
    for (BinaryOp op : {BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge})
        flags.push_back(bin(op, x, y));
    ExprPtr p = kb.bind("p", bin(BinaryOp::Lt, x, y));
    ExprPtr q = kb.bind("q", bin(BinaryOp::Eq, x, c));
    for (BinaryOp op : {BinaryOp::And, BinaryOp::Or, BinaryOp::Xor, BinaryOp::Eq}) flags.push_back(bin(op, p, q));
    flags.push_back(unary(UnaryOp::Not, p));

    ExprPtr nv = i64(static_cast<int64_t>(values.size()));
    for (size_t j = 0; j < values.size(); ++j)
        kb.emit(store("out", bin(BinaryOp::Add, bin(BinaryOp::Mul, i, nv), i64(static_cast<int64_t>(j))), values[j]));
    ExprPtr nf = i64(static_cast<int64_t>(flags.size()));
    for (size_t j = 0; j < flags.size(); ++j)
        kb.emit(store("flags", bin(BinaryOp::Add, bin(BinaryOp::Mul, i, nf), i64(static_cast<int64_t>(j))), flags[j]));
    for (S u : kAll)
        if (u != t) kb.emit(store(std::string("to_") + scalar_name(u), i, cast(u, x)));
    kb.emit(store("from_bool", i, cast(t, p)));  // bool -> t (its own buffer: out[i] is another thread's value)
    auto body = kb.close();
    kb.emit(comment("elementwise: every operator on " + ty));
    kb.emit(for_loop("i", global_thread(), n, grid_stride(), body));
    return kb.finish();
}

// A block tree reduction in shared memory: per-thread accumulation, then a
// BlockFor of phases halving the active threads, then one store per block.
inline Kernel reduction_kernel() {
    KernelBuilder kb("sum_f32", 256);
    ExprPtr n = param(kb.scalar_param("n", S::I64), S::I64);
    kb.buffer_param("x", S::F32, Access::Read);
    kb.buffer_param("partial", S::F32, Access::Write);
    kb.shared_array("sdata", S::F32, 256);
    ExprPtr tid = kb.bind("tid", thread_idx());
    kb.emit(let("acc", const_float(0)));
    ExprPtr acc = var("acc", S::F32);
    kb.emit(for_loop("i", global_thread(), n, grid_stride(),
                     {assign("acc", bin(BinaryOp::Add, acc, load("x", var("i", S::I64), S::F32)))}));
    kb.emit(store("sdata", tid, acc, MemSpace::Shared));
    kb.block_loop("k", i64(0), i64(8), i64(1), [&] {
        ExprPtr s = kb.bind("s", cast(S::I32, bin(BinaryOp::Shr, i64(128), var("k", S::I64))));
        ExprPtr sum = bin(BinaryOp::Add, load("sdata", tid, S::F32, MemSpace::Shared),
                          load("sdata", bin(BinaryOp::Add, tid, s), S::F32, MemSpace::Shared));
        kb.emit(if_then(bin(BinaryOp::Lt, tid, s), {store("sdata", tid, sum, MemSpace::Shared)}));
    });
    kb.emit(if_then(bin(BinaryOp::Eq, tid, i32(0)),
                    {store("partial", block_idx(), load("sdata", i32(0), S::F32, MemSpace::Shared))}));
    Kernel k = kb.finish();
    k.comment = "rmse: sum (map (\\d -> d * d) (x - y)) at rmse.shoal:3:12";
    return k;
}

// Warp shuffles: a shuffle-down reduction per warp, then the first warp
// (warp-uniform control) reduces the warp sums, scans with shfl_up and
// broadcasts with shfl_idx; shuffles of f64, i64 and bool too.
inline Kernel shuffle_kernel() {
    KernelBuilder kb("warp_reduce", 256);
    ExprPtr n = param(kb.scalar_param("n", S::I64), S::I64);
    kb.buffer_param("x", S::F32, Access::Read);
    kb.buffer_param("total", S::F32, Access::ReadWrite);
    kb.buffer_param("stats", S::F64, Access::Write);
    kb.buffer_param("ids", S::I64, Access::Write);
    kb.shared_array("warp_sums", S::F32, 32);  // lanes 8..31 read it too: the IR's select evaluates both sides
    ExprPtr tid = kb.bind("tid", thread_idx());
    ExprPtr lane = kb.bind("lane", bin(BinaryOp::And, tid, i32(31)));
    ExprPtr warp = kb.bind("warp", bin(BinaryOp::Div, tid, i32(32)));
    kb.emit(let("acc", const_float(0)));
    ExprPtr acc = var("acc", S::F32);
    kb.emit(for_loop("i", global_thread(), n, grid_stride(),
                     {assign("acc", bin(BinaryOp::Add, acc, load("x", var("i", S::I64), S::F32)))}));
    for (int d : {16, 8, 4, 2, 1}) kb.emit(assign("acc", bin(BinaryOp::Add, acc, shuffle(ShuffleOp::Down, acc, i32(d)))));
    kb.emit(if_then(bin(BinaryOp::Eq, lane, i32(0)), {store("warp_sums", warp, acc, MemSpace::Shared)}));
    kb.end_phase();

    kb.open();
    ExprPtr v = kb.bind("v", select(bin(BinaryOp::Lt, lane, i32(8)), load("warp_sums", lane, S::F32, MemSpace::Shared),
                                    const_float(0)));
    for (int d : {16, 8, 4, 2, 1}) kb.emit(assign("v", bin(BinaryOp::Add, v, shuffle(ShuffleOp::Xor, v, i32(d)))));
    kb.emit(let("scan", v));
    ExprPtr scan = var("scan", S::F32);
    for (int d : {1, 2, 4, 8, 16}) {
        std::string t = "up" + std::to_string(d);
        kb.emit(let(t, shuffle(ShuffleOp::Up, scan, i32(d))));
        kb.emit(if_then(bin(BinaryOp::Ge, lane, i32(d)), {assign("scan", bin(BinaryOp::Add, scan, var(t, S::F32)))}));
    }
    ExprPtr last = kb.bind("last", shuffle(ShuffleOp::Idx, scan, i32(31)));
    ExprPtr wide = kb.bind("wide", shuffle(ShuffleOp::Xor, cast(S::F64, v), i32(1)));
    ExprPtr id = kb.bind("id", shuffle(ShuffleOp::Down, cast(S::I64, lane), i32(1)));
    ExprPtr positive = kb.bind("positive", shuffle(ShuffleOp::Xor, bin(BinaryOp::Gt, v, const_float(0)), i32(1)));
    kb.emit(if_then(bin(BinaryOp::Eq, lane, i32(0)),
                    {atomic(AtomicOp::Add, "total", i64(0), last, S::F32),
                     store("stats", block_idx(), select(positive, wide, const_float(0, S::F64))),
                     store("ids", block_idx(), id)}));
    auto body = kb.close();
    kb.emit(if_then(bin(BinaryOp::Eq, warp, i32(0)), body));
    return kb.finish();
}

// Every atomic op on element type t, on global and shared memory, with and
// without a result variable; three phases around the shared array.
inline Kernel atomics_kernel(S t) {
    std::string ty = scalar_name(t);
    KernelBuilder kb("atomics_" + ty, 128);
    kb.buffer_param("vals", t, Access::Read);
    kb.buffer_param("acc", t, Access::ReadWrite);
    kb.buffer_param("olds", t, Access::Write);
    kb.shared_array("s", t, 128);
    ExprPtr tid = kb.bind("tid", thread_idx());
    kb.emit(store("s", tid, lit(0, t), MemSpace::Shared));
    kb.end_phase();

    ExprPtr gi = kb.bind("gi", global_thread());
    ExprPtr v = kb.bind("v", load("vals", gi, t));
    kb.emit(let("old", lit(0, t)));
    std::vector<AtomicOp> ops = {AtomicOp::Add, AtomicOp::Min, AtomicOp::Max, AtomicOp::Exch, AtomicOp::CAS};
    if (!is_float(t)) ops.insert(ops.end(), {AtomicOp::And, AtomicOp::Or, AtomicOp::Xor});
    int64_t slot = 0;
    for (AtomicOp op : ops) {
        ExprPtr compare = op == AtomicOp::CAS ? lit(1, t) : nullptr;
        kb.emit(atomic(op, "acc", i64(slot), v, t, "old", compare));
        kb.emit(store("olds", bin(BinaryOp::Add, bin(BinaryOp::Mul, gi, i64(16)), i64(slot)), var("old", t)));
        kb.emit(atomic(op, "acc", i64(slot + 8), v, t, "", compare));
        kb.emit(atomic(op, "s", bin(BinaryOp::And, tid, i32(7)), v, t, slot % 2 ? "old" : "", compare, MemSpace::Shared));
        ++slot;
    }
    kb.end_phase();
    kb.emit(atomic(AtomicOp::Add, "acc", cast(S::I64, tid), load("s", tid, t, MemSpace::Shared), t));
    return kb.finish();
}

// A bounds-checked gather: the Error statement and the error record parameter.
inline Kernel gather_kernel() {
    auto src = std::make_shared<Source>("gather.shoal", "let r = gather idx a\n");
    KernelBuilder kb("gather_checked");
    ExprPtr n = param(kb.scalar_param("n", S::I64), S::I64);
    ExprPtr m = param(kb.scalar_param("m", S::I64), S::I64);
    kb.buffer_param("idx", S::I32, Access::Read);
    kb.buffer_param("a", S::F64, Access::Read);
    kb.buffer_param("out", S::F64, Access::Write);
    int check = kb.add_check("index out of bounds", Loc{src, 1, 9, 14});
    ExprPtr i = var("i", S::I64);
    ExprPtr j = var("j", S::I64);
    ExprPtr bad = bin(BinaryOp::Or, bin(BinaryOp::Lt, j, i64(0)), bin(BinaryOp::Ge, j, m));
    kb.emit(for_loop("i", global_thread(), n, grid_stride(),
                     {let("j", cast(S::I64, load("idx", i, S::I32))),
                      if_then(bad, {error(check, j, m)}, {store("out", i, load("a", j, S::F64))})}));
    return kb.finish();
}

// While, else-if chains, nested scopes, comments (multi-line, trailing
// backslash), an unused variable and shared array, a BlockFor as the last
// block statement, a shift by a negative amount.
inline Kernel control_kernel() {
    KernelBuilder kb("collatz_steps", 64);
    ExprPtr n = param(kb.scalar_param("n", S::I64), S::I64);
    kb.buffer_param("steps", S::I32, Access::Write);
    kb.buffer_param("kind", S::U32, Access::Write);
    kb.shared_array("unused_tile", S::F32, 64);
    ExprPtr gi = kb.bind("gi", global_thread());
    kb.emit(let("unused", bin(BinaryOp::Shl, i32(1), i32(-1))));
    kb.emit(comment("line one\nline two ends with a lambda \\"));
    kb.emit(let("v", gi));
    kb.emit(let("count", i32(0)));
    ExprPtr v = var("v", S::I64);
    ExprPtr one = i64(1);
    kb.emit(if_then(
        bin(BinaryOp::Lt, gi, n),
        {while_loop(bin(BinaryOp::Gt, v, one),
                    {if_then(bin(BinaryOp::Eq, bin(BinaryOp::Mod, v, i64(2)), i64(0)),
                             {assign("v", bin(BinaryOp::Div, v, i64(2)))},
                             {assign("v", bin(BinaryOp::Add, bin(BinaryOp::Mul, v, i64(3)), one))}),
                     assign("count", bin(BinaryOp::Add, var("count", S::I32), i32(1)))}),
         store("steps", gi, var("count", S::I32)),
         seq({let("c", var("count", S::I32)),
              if_then(bin(BinaryOp::Lt, var("c", S::I32), i32(10)), {store("kind", gi, const_int(0, S::U32))},
                      {if_then(bin(BinaryOp::Lt, var("c", S::I32), i32(100)), {store("kind", gi, const_int(1, S::U32))},
                               {store("kind", gi, const_int(2, S::U32))})})})}));
    kb.block_loop("sweep", i64(0), param("n", S::I64), i64(1024), [&] {
        kb.emit(comment("a uniform loop of phases"));
        kb.emit(if_then(bin(BinaryOp::Lt, gi, var("sweep", S::I64)), {store("steps", gi, i32(0))}));
    });
    Kernel k = kb.finish();
    k.comment = "collatz: a test of control flow\nsecond line of the comment";
    return k;
}

inline Kernel empty_kernel() {
    KernelBuilder kb("nothing", 32);
    kb.emit(comment("no parameters, no work"));
    return kb.finish();
}

inline std::vector<Kernel> sample_kernels() {
    std::vector<Kernel> ks;
    for (S t : kNumeric) ks.push_back(elementwise_kernel(t));
    ks.push_back(reduction_kernel());
    ks.push_back(shuffle_kernel());
    for (S t : kNumeric) ks.push_back(atomics_kernel(t));
    ks.push_back(gather_kernel());
    ks.push_back(control_kernel());
    ks.push_back(empty_kernel());
    return ks;
}

}  // namespace shoal::ir::samples
