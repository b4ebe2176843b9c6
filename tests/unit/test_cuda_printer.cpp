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

using namespace shoal;
using namespace shoal::ir;
using S = ScalarType;

namespace {

const std::vector<S> kNumeric = {S::I32, S::I64, S::U32, S::U64, S::F32, S::F64};
const std::vector<S> kAll = {S::Bool, S::I32, S::I64, S::U32, S::U64, S::F32, S::F64};

ExprPtr i64(int64_t v) { return const_int(v, S::I64); }
ExprPtr i32(int64_t v) { return const_int(v, S::I32); }
ExprPtr bin(BinaryOp op, ExprPtr a, ExprPtr b) { return binary(op, std::move(a), std::move(b)); }
ExprPtr lit(double v, S t) { return is_float(t) ? const_float(v, t) : const_int(static_cast<int64_t>(v), t); }

// blockIdx * blockDim + threadIdx and the grid-stride step, as i64.
ExprPtr global_thread() {
    return bin(BinaryOp::Add, bin(BinaryOp::Mul, block_idx(), cast(S::I64, block_dim())), cast(S::I64, thread_idx()));
}
ExprPtr grid_stride() { return bin(BinaryOp::Mul, grid_dim(), cast(S::I64, block_dim())); }

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

// Interesting constants of each type: extremes, NaN/inf, -0.0, denormals.
std::vector<ExprPtr> special_constants(S t) {
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
Kernel elementwise_kernel(S t) {
    std::string ty = scalar_name(t);
    KernelBuilder kb("elementwise_" + ty);
    ExprPtr n = param(kb.scalar_param("n", S::I64), S::I64);
    ExprPtr c = param(kb.scalar_param("c", t), t);
    kb.buffer_param("a", t, Access::Read);
    kb.buffer_param("b", t, Access::Read);
    kb.buffer_param("out", t, Access::Write);
    kb.buffer_param("flags", S::Bool, Access::Write);
    kb.buffer_param("mask", S::Bool, Access::Read);
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
    kb.emit(store("out", i, cast(t, p)));  // bool -> t
    auto body = kb.close();
    kb.emit(comment("elementwise: every operator on " + ty));
    kb.emit(for_loop("i", global_thread(), n, grid_stride(), body));
    return kb.finish();
}

// A block tree reduction in shared memory: per-thread accumulation, then a
// BlockFor of phases halving the active threads, then one store per block.
Kernel reduction_kernel() {
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
Kernel shuffle_kernel() {
    KernelBuilder kb("warp_reduce", 256);
    ExprPtr n = param(kb.scalar_param("n", S::I64), S::I64);
    kb.buffer_param("x", S::F32, Access::Read);
    kb.buffer_param("total", S::F32, Access::ReadWrite);
    kb.buffer_param("stats", S::F64, Access::Write);
    kb.buffer_param("ids", S::I64, Access::Write);
    kb.shared_array("warp_sums", S::F32, 8);
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
Kernel atomics_kernel(S t) {
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
Kernel gather_kernel() {
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
Kernel control_kernel() {
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

Kernel empty_kernel() {
    KernelBuilder kb("nothing", 32);
    kb.emit(comment("no parameters, no work"));
    return kb.finish();
}

std::vector<Kernel> sample_kernels() {
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
