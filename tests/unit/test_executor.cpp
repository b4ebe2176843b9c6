// Unit tests of the CPU executor (runtime/cpu): kernels built with the IR
// builders run with check mode on, results compared with plain C++ loops.
// Covers the scalar semantics of every type (wrapping, division by zero,
// shifts, saturating casts, fmin/fmax), SIMT divergence, phases and barriers,
// BlockFor, warp shuffles, atomics across blocks, Error statements, the
// traffic counters and every check-mode violation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "codegen/ir.h"
#include "codegen/kernel_builder.h"
#include "codegen/lower_common.h"
#include "lang/diagnostics.h"
#include "runtime/cpu/executor.h"
#include "native_check.h"

namespace {

namespace ir = shoal::ir;
namespace cpu = shoal::cpu;
using ir::BinaryOp;
using ir::ExprPtr;
using ir::MemSpace;
using ir::ScalarType;
using ir::StmtPtr;
using ST = ScalarType;

template <class T> constexpr ST type_of() {
    if constexpr (std::is_same_v<T, bool>) return ST::Bool;
    else if constexpr (std::is_same_v<T, int32_t>) return ST::I32;
    else if constexpr (std::is_same_v<T, int64_t>) return ST::I64;
    else if constexpr (std::is_same_v<T, uint32_t>) return ST::U32;
    else if constexpr (std::is_same_v<T, uint64_t>) return ST::U64;
    else if constexpr (std::is_same_v<T, float>) return ST::F32;
    else return ST::F64;
}

ExprPtr i64(int64_t v) { return ir::const_int(v, ST::I64); }
ExprPtr i32(int64_t v) { return ir::const_int(v, ST::I32); }
ExprPtr tid() { return ir::thread_idx(); }
ExprPtr tid64() { return ir::cast(ST::I64, ir::thread_idx()); }
ExprPtr bin(BinaryOp op, ExprPtr a, ExprPtr b) { return ir::binary(op, std::move(a), std::move(b)); }
// blockIdx.x * blockDim.x + threadIdx.x, in I64.
ExprPtr global_id() {
    return bin(BinaryOp::Add, bin(BinaryOp::Mul, ir::block_idx(), ir::cast(ST::I64, ir::block_dim())), tid64());
}

ir::Kernel make_kernel(const std::string& name, int block_size, std::vector<ir::Param> params,
                       std::vector<ir::BlockStmtPtr> body, std::vector<ir::SharedArray> shared = {}) {
    ir::Kernel k;
    k.name = name;
    k.block_size = block_size;
    k.params = std::move(params);
    k.body = std::move(body);
    k.shared = std::move(shared);
    k.checks.push_back(ir::Check{"index out of bounds", shoal::Loc{}});
    return k;
}

ir::Param buf(const std::string& name, ST t, ir::Access a = ir::Access::Read) {
    return ir::Param{name, ir::ParamKind::Buffer, t, a};
}
ir::Param scalar(const std::string& name, ST t) { return ir::Param{name, ir::ParamKind::Scalar, t, ir::Access::Read}; }

// A launch: buffers point at caller vectors; check mode on as in all tests.
struct Launch {
    cpu::LaunchArgs args;
    cpu::ExecOptions options;
    cpu::Counters counters;

    explicit Launch(int64_t grid, int threads = 0) {
        args.grid = grid;
        options.check = true;
        options.threads = threads;
    }
    template <class T> Launch& buffer(const std::string& name, std::vector<T>& v) {
        args.buffers[name] = cpu::BufferArg{v.data(), int64_t(v.size())};
        return *this;
    }
    Launch& scalar_i(const std::string& name, int64_t v, ST t = ST::I64) {
        cpu::ScalarArg a;
        a.type = t;
        a.i = v;
        args.scalars[name] = a;
        return *this;
    }
    Launch& scalar_f(const std::string& name, double v, ST t = ST::F32) {
        cpu::ScalarArg a;
        a.type = t;
        a.f = v;
        args.scalars[name] = a;
        return *this;
    }
    // Also natively, compared bit for bit (native_check.h).
    cpu::KernelError run(const ir::Kernel& k) { return native_check::run_both(k, args, options, counters, scheduling_dependent); }
    std::set<std::string> scheduling_dependent;  // buffers compared sorted
};

// Bool vectors cannot be std::vector<bool> (no data()): bytes stand for them.
template <class T> using Elem = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

// out[i] = f(a[i], b[i]) for one thread per element (several blocks, a
// partial last block guarded by `if (i < n)`).
template <class R, class T>
std::vector<Elem<R>> run_zip(const std::function<ExprPtr(ExprPtr, ExprPtr)>& f, const std::vector<Elem<T>>& a,
                             const std::vector<Elem<T>>& b, int block_size = 64) {
    const auto n = int64_t(a.size());
    auto ld = [](const char* m) { return ir::load(m, ir::var("i", ST::I64), type_of<T>()); };
    auto code = ir::seq({ir::let("i", global_id()),
                         ir::if_then(bin(BinaryOp::Lt, ir::var("i", ST::I64), ir::param("n", ST::I64)),
                                     {ir::store("out", ir::var("i", ST::I64), f(ld("a"), ld("b")))})});
    auto k = make_kernel("zip", block_size,
                         {buf("a", type_of<T>()), buf("b", type_of<T>()), buf("out", type_of<R>(), ir::Access::Write),
                          scalar("n", ST::I64)},
                         {ir::phase(code)});
    std::vector<Elem<T>> av = a, bv = b;
    std::vector<Elem<R>> out(a.size());
    Launch l((n + block_size - 1) / block_size);
    l.buffer("a", av).buffer("b", bv).buffer("out", out).scalar_i("n", n);
    l.run(k);
    return out;
}

template <class R, class T>
std::vector<Elem<R>> run_map(const std::function<ExprPtr(ExprPtr)>& f, const std::vector<Elem<T>>& a) {
    return run_zip<R, T>([&](ExprPtr x, ExprPtr) { return f(x); }, a, a);
}

template <class T>
std::vector<Elem<T>> run_binary(BinaryOp op, const std::vector<Elem<T>>& a, const std::vector<Elem<T>>& b) {
    return run_zip<T, T>([op](ExprPtr x, ExprPtr y) { return bin(op, x, y); }, a, b);
}

template <class To, class From> std::vector<Elem<To>> run_cast(const std::vector<Elem<From>>& a) {
    return run_map<To, From>([](ExprPtr x) { return ir::cast(type_of<To>(), x); }, a);
}

bool same_float(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

// ---------------------------------------------------------------- scalar semantics
TEST_CASE("executor: integer arithmetic wraps, division by zero gives 0") {
    constexpr int32_t mn = std::numeric_limits<int32_t>::min(), mx = std::numeric_limits<int32_t>::max();
    std::vector<int32_t> a{7, -7, 7, mn, mn, mx, 5, -5, 0, 123456789};
    std::vector<int32_t> b{2, 2, 0, -1, 1, 1, -3, 0, 0, 987654321};
    auto add = run_binary<int32_t>(BinaryOp::Add, a, b);
    auto mul = run_binary<int32_t>(BinaryOp::Mul, a, b);
    auto div = run_binary<int32_t>(BinaryOp::Div, a, b);
    auto mod = run_binary<int32_t>(BinaryOp::Mod, a, b);
    for (size_t k = 0; k < a.size(); ++k) {
        CHECK(add[k] == int32_t(uint32_t(a[k]) + uint32_t(b[k])));
        CHECK(mul[k] == int32_t(uint32_t(a[k]) * uint32_t(b[k])));
    }
    CHECK(div == std::vector<int32_t>{3, -3, 0, mn, mn, mx, -1, 0, 0, 0});
    CHECK(mod == std::vector<int32_t>{1, -1, 0, 0, 0, 0, 2, 0, 0, 123456789});

    constexpr int64_t lmn = std::numeric_limits<int64_t>::min();
    CHECK(run_binary<int64_t>(BinaryOp::Div, {lmn, 9, 9}, {-1, 0, -2}) == std::vector<int64_t>{lmn, 0, -4});
    CHECK(run_binary<int64_t>(BinaryOp::Sub, {lmn}, {1}) == std::vector<int64_t>{std::numeric_limits<int64_t>::max()});
    CHECK(run_binary<uint32_t>(BinaryOp::Div, {7, 0xffffffffu}, {0, 2}) == std::vector<uint32_t>{0, 0x7fffffffu});
    CHECK(run_binary<uint32_t>(BinaryOp::Sub, {1}, {2}) == std::vector<uint32_t>{0xffffffffu});
    CHECK(run_binary<uint64_t>(BinaryOp::Mod, {10, 10}, {0, 4}) == std::vector<uint64_t>{0, 2});
}

TEST_CASE("executor: randomized integer operators match wide C++ arithmetic") {
    std::mt19937_64 rng(7);
    std::vector<int32_t> a(1000), b(1000);
    for (size_t k = 0; k < a.size(); ++k) {
        a[k] = int32_t(rng());
        b[k] = k % 10 == 0 ? 0 : int32_t(rng() >> (rng() % 40));
    }
    auto sub = run_binary<int32_t>(BinaryOp::Sub, a, b);
    auto div = run_binary<int32_t>(BinaryOp::Div, a, b);
    auto mod = run_binary<int32_t>(BinaryOp::Mod, a, b);
    auto mx = run_binary<int32_t>(BinaryOp::Max, a, b);
    auto lt = run_zip<bool, int32_t>([](ExprPtr x, ExprPtr y) { return bin(BinaryOp::Lt, x, y); }, a, b);
    for (size_t k = 0; k < a.size(); ++k) {
        const int64_t x = a[k], y = b[k];
        CHECK(sub[k] == int32_t(uint32_t(int64_t(x - y))));
        CHECK(div[k] == (y == 0 ? 0 : int32_t(uint32_t(x / y))));
        CHECK(mod[k] == (y == 0 ? 0 : int32_t(x % y)));
        CHECK(mx[k] == std::max(a[k], b[k]));
        CHECK(lt[k] == (x < y));
    }
}

TEST_CASE("executor: 64-bit comparisons at the extremes") {
    // The executor compares 64-bit integers arithmetically (see arith_nodes.cpp): probe the overflow cases.
    const int64_t mn = std::numeric_limits<int64_t>::min(), mx = std::numeric_limits<int64_t>::max();
    std::vector<int64_t> a{mn, mx, mn, mx, -1, 0, 5, 5, mn, -7};
    std::vector<int64_t> b{mx, mn, mn, mx, 0, -1, 5, 6, 1, mx};
    std::vector<uint64_t> ua, ub;
    for (size_t k = 0; k < a.size(); ++k) {
        ua.push_back(uint64_t(a[k]));
        ub.push_back(uint64_t(b[k]));
    }
    for (BinaryOp op : {BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge}) {
        auto cmp = [op](ExprPtr x, ExprPtr y) { return bin(op, x, y); };
        auto s = run_zip<bool, int64_t>(cmp, a, b);
        auto u = run_zip<bool, uint64_t>(cmp, ua, ub);
        auto want = [op](auto x, auto y) -> uint8_t {
            switch (op) {
                case BinaryOp::Eq: return x == y;
                case BinaryOp::Ne: return x != y;
                case BinaryOp::Lt: return x < y;
                case BinaryOp::Le: return x <= y;
                case BinaryOp::Gt: return x > y;
                default: return x >= y;
            }
        };
        for (size_t k = 0; k < a.size(); ++k) {
            CHECK(s[k] == want(a[k], b[k]));
            CHECK(u[k] == want(ua[k], ub[k]));
        }
    }
}

TEST_CASE("executor: shifts take the amount modulo the bit width") {
    CHECK(run_binary<int32_t>(BinaryOp::Shl, {1, 1, 3, -1}, {33, 31, 0, 4}) ==
          std::vector<int32_t>{2, std::numeric_limits<int32_t>::min(), 3, -16});
    CHECK(run_binary<int32_t>(BinaryOp::Shr, {-8, -8, 256}, {1, 33, -1}) == std::vector<int32_t>{-4, -4, 0});
    CHECK(run_binary<uint32_t>(BinaryOp::Shr, {0x80000000u}, {31}) == std::vector<uint32_t>{1});
    CHECK(run_binary<int64_t>(BinaryOp::Shl, {1}, {65}) == std::vector<int64_t>{2});
    CHECK(run_binary<uint64_t>(BinaryOp::Shr, {~0ull}, {127}) == std::vector<uint64_t>{1});
}

TEST_CASE("executor: bitwise, logical and comparison operators") {
    CHECK(run_binary<uint32_t>(BinaryOp::Xor, {0xf0f0u}, {0xffffu}) == std::vector<uint32_t>{0x0f0fu});
    CHECK(run_binary<int64_t>(BinaryOp::And, {-1}, {0x1234}) == std::vector<int64_t>{0x1234});
    CHECK(run_binary<bool>(BinaryOp::And, {1, 1, 0}, {1, 0, 0}) == std::vector<uint8_t>{1, 0, 0});
    CHECK(run_binary<bool>(BinaryOp::Or, {1, 0, 0}, {0, 0, 1}) == std::vector<uint8_t>{1, 0, 1});
    CHECK(run_map<bool, bool>([](ExprPtr x) { return ir::unary(ir::UnaryOp::Not, x); }, {0, 1}) ==
          std::vector<uint8_t>{1, 0});
    CHECK(run_map<int32_t, int32_t>([](ExprPtr x) { return ir::unary(ir::UnaryOp::BitNot, x); }, {0, -1}) ==
          std::vector<int32_t>{-1, 0});
    CHECK(run_map<int32_t, int32_t>([](ExprPtr x) { return ir::unary(ir::UnaryOp::Neg, x); },
                                    {5, std::numeric_limits<int32_t>::min()}) ==
          std::vector<int32_t>{-5, std::numeric_limits<int32_t>::min()});
    const float nan = std::nanf("");
    auto ne = run_zip<bool, float>([](ExprPtr x, ExprPtr y) { return bin(BinaryOp::Ne, x, y); }, {nan, 1.f}, {nan, 1.f});
    auto eq = run_zip<bool, float>([](ExprPtr x, ExprPtr y) { return bin(BinaryOp::Eq, x, y); }, {nan, 1.f}, {nan, 1.f});
    CHECK(ne == std::vector<uint8_t>{1, 0});
    CHECK(eq == std::vector<uint8_t>{0, 1});
}

TEST_CASE("executor: float min/max are fmin/fmax and float % is fmod") {
    const float nan = std::nanf("");
    auto mn = run_binary<float>(BinaryOp::Min, {nan, 1.f, -0.5f}, {2.f, nan, 3.f});
    CHECK(mn == std::vector<float>{2.f, 1.f, -0.5f});
    auto mx = run_binary<double>(BinaryOp::Max, {std::nan(""), 1.0}, {2.0, 5.0});
    CHECK(mx == std::vector<double>{2.0, 5.0});
    auto md = run_binary<float>(BinaryOp::Mod, {5.5f, -5.5f, 1.f}, {2.f, 2.f, 0.f});
    CHECK(md[0] == 1.5f);
    CHECK(md[1] == -1.5f);
    CHECK(std::isnan(md[2]));
    auto dv = run_binary<double>(BinaryOp::Div, {1.0, 0.0}, {0.0, 0.0});
    CHECK(std::isinf(dv[0]));
    CHECK(std::isnan(dv[1]));
}

TEST_CASE("executor: casts truncate, saturate and send NaN to 0") {
    const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
    std::vector<float> f{2.9f, -2.9f, nan, 1e10f, -1e10f, inf, -inf, 2147483520.f};
    CHECK(run_cast<int32_t, float>(f) == std::vector<int32_t>{2, -2, 0, std::numeric_limits<int32_t>::max(),
                                                             std::numeric_limits<int32_t>::min(),
                                                             std::numeric_limits<int32_t>::max(),
                                                             std::numeric_limits<int32_t>::min(), 2147483520});
    CHECK(run_cast<uint32_t, float>({-3.5f, 5e9f, 7.9f, nan}) == std::vector<uint32_t>{0, 0xffffffffu, 7, 0});
    CHECK(run_cast<int64_t, double>({1e300, -1e300, std::nan(""), -7.5}) ==
          std::vector<int64_t>{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 0, -7});
    CHECK(run_cast<int32_t, int64_t>({0x1'0000'0005LL, -1}) == std::vector<int32_t>{5, -1});
    CHECK(run_cast<uint64_t, int32_t>({-1}) == std::vector<uint64_t>{~0ull});
    CHECK(run_cast<bool, float>({0.f, -0.f, 0.5f, nan}) == std::vector<uint8_t>{0, 0, 1, 1});
    CHECK(run_cast<float, bool>({1, 0}) == std::vector<float>{1.f, 0.f});
    CHECK(run_cast<int32_t, bool>({1, 0}) == std::vector<int32_t>{1, 0});
    // long -> float rounds once (2^53 + 1 would round twice via double).
    const int64_t big = (int64_t(1) << 53) + 1;
    CHECK(run_cast<float, int64_t>({big}) == std::vector<float>{static_cast<float>(big)});
    CHECK(run_cast<float, double>({0.1}) == std::vector<float>{0.1f});
}

TEST_CASE("executor: math calls in float and double") {
    auto call1 = [](const char* fn) {
        return [fn](ExprPtr x) { return ir::call(fn, {x}, x->type); };
    };
    std::vector<float> x{0.25f, 1.5f, 2.5f, -2.5f};
    auto sq = run_map<float, float>(call1("sqrt"), x);
    auto ex = run_map<float, float>(call1("exp"), x);
    auto rd = run_map<float, float>(call1("round"), x);
    auto er = run_map<float, float>(call1("erf"), x);
    for (size_t k = 0; k < x.size(); ++k) {
        CHECK(same_float(sq[k], std::sqrt(x[k])));  // float overloads: sqrtf, expf, ...
        CHECK(ex[k] == std::exp(x[k]));
        CHECK(rd[k] == std::round(x[k]));
        CHECK(er[k] == std::erf(x[k]));
    }
    CHECK(rd == std::vector<float>{0.f, 2.f, 3.f, -3.f});  // halves away from zero
    auto lg = run_map<double, double>(call1("log"), {1.0, std::exp(2.0)});
    CHECK(lg[1] == std::log(std::exp(2.0)));
    CHECK(run_map<int32_t, int32_t>(call1("abs"), {-3, std::numeric_limits<int32_t>::min()}) ==
          std::vector<int32_t>{3, std::numeric_limits<int32_t>::min()});
    auto call2 = [](const char* fn) {
        return [fn](ExprPtr a, ExprPtr b) { return ir::call(fn, {a, b}, a->type); };
    };
    CHECK(run_zip<int32_t, int32_t>(call2("pow"), {3, 2, 2, -1, 1}, {4, 31, -1, -3, -5}) ==
          std::vector<int32_t>{81, std::numeric_limits<int32_t>::min(), 0, -1, 1});
    CHECK(run_zip<uint32_t, uint32_t>(call2("mulhi"), {0x80000000u}, {4u}) == std::vector<uint32_t>{2u});
    CHECK(run_zip<int64_t, int64_t>(call2("mulhi"), {-1}, {1}) == std::vector<int64_t>{-1});
    auto at = run_zip<float, float>(call2("atan2"), {1.f}, {-1.f});
    CHECK(at[0] == std::atan2(1.f, -1.f));
    auto mn = run_zip<double, double>(call2("min"), {std::nan("")}, {4.0});
    CHECK(same_float(mn[0], 4.0));
}

TEST_CASE("executor: constants keep their bits (NaN, -0.0)") {
    auto out = run_map<float, float>(
        [](ExprPtr x) {
            auto nan = ir::const_float(std::nan(""), ST::F32);
            auto neg0 = ir::const_float(-0.0, ST::F32);
            auto pos0 = ir::const_float(0.0, ST::F32);
            // x + (-0.0) keeps x; 1 / (-0.0) is -inf; min(NaN, x) is x.
            return bin(BinaryOp::Add, bin(BinaryOp::Min, nan, x),
                       bin(BinaryOp::Add, bin(BinaryOp::Div, ir::const_float(1.0, ST::F32), neg0), pos0));
        },
        {1.f});
    CHECK(out[0] == -std::numeric_limits<float>::infinity());
}

TEST_CASE("executor: select evaluates per lane") {
    auto out = run_zip<int32_t, int32_t>(
        [](ExprPtr a, ExprPtr b) { return ir::select(bin(BinaryOp::Gt, a, b), a, b); }, {1, 5, -3}, {2, 4, -3});
    CHECK(out == std::vector<int32_t>{2, 5, -3});
}

// ---------------------------------------------------------------- divergence
TEST_CASE("executor: if/else and loops diverge per lane") {
    const int64_t n = 1000;
    auto i = ir::var("i", ST::I64);
    auto acc = ir::var("acc", ST::I64);
    auto j = ir::var("j", ST::I64);
    auto c = ir::var("c", ST::I64);
    auto steps = ir::var("steps", ST::I64);
    // acc = i % 3 == 0 ? 2i : (i % 3 == 1 ? -i : 7), plus sum_{j < i % 17} j,
    // steps = Collatz steps of i + 1 (a while loop with per-lane trip counts).
    std::vector<StmtPtr> body{
        ir::let("acc", i64(0)),
        ir::if_then(bin(BinaryOp::Eq, bin(BinaryOp::Mod, i, i64(3)), i64(0)),
                    {ir::assign("acc", bin(BinaryOp::Mul, i, i64(2)))},
                    {ir::if_then(bin(BinaryOp::Eq, bin(BinaryOp::Mod, i, i64(3)), i64(1)),
                                 {ir::assign("acc", ir::unary(ir::UnaryOp::Neg, i))}, {ir::assign("acc", i64(7))})}),
        ir::for_loop("j", i64(0), bin(BinaryOp::Mod, i, i64(17)), i64(1), {ir::assign("acc", bin(BinaryOp::Add, acc, j))}),
        ir::let("c", bin(BinaryOp::Add, i, i64(1))),
        ir::let("steps", i64(0)),
        ir::while_loop(bin(BinaryOp::Ne, c, i64(1)),
                       {ir::if_then(bin(BinaryOp::Eq, bin(BinaryOp::And, c, i64(1)), i64(0)),
                                    {ir::assign("c", bin(BinaryOp::Div, c, i64(2)))},
                                    {ir::assign("c", bin(BinaryOp::Add, bin(BinaryOp::Mul, c, i64(3)), i64(1)))}),
                        ir::assign("steps", bin(BinaryOp::Add, steps, i64(1)))}),
        ir::store("out", i, acc),
        ir::store("steps_out", i, steps),
    };
    auto code = ir::seq({ir::let("i", global_id()),
                         ir::if_then(bin(BinaryOp::Lt, i, ir::param("n", ST::I64)), body)});
    auto k = make_kernel("diverge", 128,
                         {buf("out", ST::I64, ir::Access::Write), buf("steps_out", ST::I64, ir::Access::Write),
                          scalar("n", ST::I64)},
                         {ir::phase(code)});
    std::vector<int64_t> out(n), steps_out(n);
    Launch l((n + 127) / 128);
    l.buffer("out", out).buffer("steps_out", steps_out).scalar_i("n", n);
    l.run(k);
    for (int64_t x = 0; x < n; ++x) {
        int64_t want = x % 3 == 0 ? 2 * x : x % 3 == 1 ? -x : 7;
        for (int64_t y = 0; y < x % 17; ++y) want += y;
        int64_t s = 0;
        for (int64_t v = x + 1; v != 1; v = v % 2 == 0 ? v / 2 : 3 * v + 1) ++s;
        CHECK(out[size_t(x)] == want);
        CHECK(steps_out[size_t(x)] == s);
    }
}

TEST_CASE("executor: grid-stride loops with per-lane trip counts") {
    // for (i = gid; i < n; i += gridDim * blockDim) out[i] = x[i] * x[i] + blockIdx
    auto i = ir::var("i", ST::I64);
    auto step = bin(BinaryOp::Mul, ir::grid_dim(), ir::cast(ST::I64, ir::block_dim()));
    auto code = ir::for_loop(
        "i", global_id(), ir::param("n", ST::I64), step,
        {ir::store("out", i,
                   bin(BinaryOp::Add, bin(BinaryOp::Mul, ir::load("x", i, ST::F64), ir::load("x", i, ST::F64)),
                       ir::cast(ST::F64, ir::block_idx())))});
    auto k = make_kernel("grid_stride", 96, {buf("x", ST::F64), buf("out", ST::F64, ir::Access::Write), scalar("n", ST::I64)},
                         {ir::phase(code)});
    const int64_t n = 10007, grid = 7;
    std::vector<double> x(n), out(n, -1);
    for (int64_t q = 0; q < n; ++q) x[size_t(q)] = double(q) * 0.5;
    Launch l(grid, 3);
    l.buffer("x", x).buffer("out", out).scalar_i("n", n);
    l.run(k);
    for (int64_t q = 0; q < n; ++q) CHECK(out[size_t(q)] == x[size_t(q)] * x[size_t(q)] + double((q % (grid * 96)) / 96));
    CHECK(l.counters.global_bytes_loaded == 2 * 8 * n);
}

// ---------------------------------------------------------------- phases, shared memory, BlockFor
namespace {

// Per-block sums: each thread loads one element into shared memory, then a
// tree in shared memory (a BlockFor over log2(block) halving phases), then
// thread 0 writes the block's sum.
ir::Kernel block_sum_kernel(int bs, int log2bs) {
    auto t = tid();
    auto stride = ir::var("stride", ST::I32);
    auto phase0 = ir::seq({ir::let("i", global_id()),
                           ir::let("v", ir::const_int(0, ST::I32)),
                           ir::if_then(bin(BinaryOp::Lt, ir::var("i", ST::I64), ir::param("n", ST::I64)),
                                       {ir::assign("v", ir::load("x", ir::var("i", ST::I64), ST::I32))}),
                           ir::store("sh", t, ir::var("v", ST::I32), MemSpace::Shared)});
    auto tree = ir::seq(
        {ir::let("stride", ir::cast(ST::I32, bin(BinaryOp::Shr, i64(bs / 2), ir::var("k", ST::I64)))),
         ir::if_then(bin(BinaryOp::Lt, t, stride),
                     {ir::store("sh", t,
                                bin(BinaryOp::Add, ir::load("sh", t, ST::I32, MemSpace::Shared),
                                    ir::load("sh", bin(BinaryOp::Add, t, stride), ST::I32, MemSpace::Shared)),
                                MemSpace::Shared)})});
    auto last = ir::if_then(bin(BinaryOp::Eq, t, i32(0)),
                            {ir::store("out", ir::block_idx(), ir::load("sh", i32(0), ST::I32, MemSpace::Shared))});
    return make_kernel("block_sum", bs,
                       {buf("x", ST::I32), buf("out", ST::I32, ir::Access::Write), scalar("n", ST::I64)},
                       {ir::phase(phase0), ir::block_for("k", i64(0), i64(log2bs), i64(1), {ir::phase(tree)}),
                        ir::phase(last)},
                       {ir::SharedArray{"sh", ST::I32, bs}});
}

}  // namespace

TEST_CASE("executor: block reduction through shared memory with barriers") {
    for (int threads : {1, 3}) {
        const int bs = 256;
        const int64_t n = 100000;
        std::vector<int32_t> x(n);
        for (int64_t k = 0; k < n; ++k) x[size_t(k)] = int32_t(k % 1000) - 300;
        const int64_t grid = (n + bs - 1) / bs;
        std::vector<int32_t> out(size_t(grid), -1);
        Launch l(grid, threads);
        l.buffer("x", x).buffer("out", out).scalar_i("n", n);
        auto err = l.run(block_sum_kernel(bs, 8));
        CHECK(err.code < 0);
        for (int64_t b = 0; b < grid; ++b) {
            int32_t want = 0;
            for (int64_t k = b * bs; k < std::min(n, (b + 1) * bs); ++k) want += x[size_t(k)];
            CHECK(out[size_t(b)] == want);
        }
        CHECK(l.counters.launches == 1);
        CHECK(l.counters.barriers == grid * 9);  // phase 0 and 8 tree phases; the last phase has none
        CHECK(l.counters.global_bytes_loaded == n * 4);
        CHECK(l.counters.global_bytes_stored == grid * 4);
    }
}

TEST_CASE("executor: top-level lets of a phase persist across phases") {
    auto code0 = ir::seq({ir::let("t2", bin(BinaryOp::Mul, tid(), i32(2))),
                          ir::store("sh", tid(), ir::var("t2", ST::I32), MemSpace::Shared)});
    // Reads the neighbour's shared value (written before the barrier) and its own t2.
    auto nb = bin(BinaryOp::Mod, bin(BinaryOp::Add, tid(), i32(1)), i32(64));
    auto code1 = ir::store("out", tid64(),
                           bin(BinaryOp::Add, ir::var("t2", ST::I32), ir::load("sh", nb, ST::I32, MemSpace::Shared)));
    auto k = make_kernel("persist", 64, {buf("out", ST::I32, ir::Access::Write)}, {ir::phase(code0), ir::phase(code1)},
                         {ir::SharedArray{"sh", ST::I32, 64}});
    std::vector<int32_t> out(64);
    Launch l(1);
    l.buffer("out", out);
    l.run(k);
    for (int t = 0; t < 64; ++t) CHECK(out[size_t(t)] == 2 * t + 2 * ((t + 1) % 64));
}

TEST_CASE("executor: BlockFor runs a uniform loop of phases") {
    // Each block accumulates x[k * 64 + t] over k in shared memory, one phase per k.
    auto acc = ir::load("sh", tid(), ST::F64, MemSpace::Shared);
    auto body = ir::phase(ir::store(
        "sh", tid(),
        bin(BinaryOp::Add, acc,
            ir::load("x", bin(BinaryOp::Add, bin(BinaryOp::Mul, ir::var("k", ST::I64), i64(64)), tid64()), ST::F64)),
        MemSpace::Shared));
    auto init = ir::phase(ir::store("sh", tid(), ir::const_float(0, ST::F64), MemSpace::Shared));
    auto fin = ir::phase(ir::store("out", tid64(), acc));
    auto k = make_kernel("blockfor", 64, {buf("x", ST::F64), buf("out", ST::F64, ir::Access::Write), scalar("m", ST::I64)},
                         {init, ir::block_for("k", i64(0), ir::param("m", ST::I64), i64(1), {body}), fin},
                         {ir::SharedArray{"sh", ST::F64, 64}});
    const int m = 10;
    std::vector<double> x(64 * m), out(64);
    std::iota(x.begin(), x.end(), 0.0);
    Launch l(1);
    l.buffer("x", x).buffer("out", out).scalar_i("m", m);
    l.run(k);
    for (int t = 0; t < 64; ++t) {
        double want = 0;
        for (int q = 0; q < m; ++q) want += x[size_t(q * 64 + t)];
        CHECK(out[size_t(t)] == want);
    }
    CHECK(l.counters.barriers == m + 1);
}

// ---------------------------------------------------------------- warp shuffles
TEST_CASE("executor: warp shuffles (down reduction, xor butterfly, up scan, broadcast)") {
    const int bs = 128;
    auto v = ir::var("v", ST::F32);
    auto lane = bin(BinaryOp::And, tid(), i32(31));
    auto delta = ir::cast(ST::I32, bin(BinaryOp::Shl, i64(1), ir::var("s", ST::I64)));
    auto reduce = [&](ir::ShuffleOp op, const std::string& var) {
        auto w = ir::var(var, ST::F32);
        auto d = op == ir::ShuffleOp::Down ? ir::cast(ST::I32, bin(BinaryOp::Shr, i64(16), ir::var("s", ST::I64))) : delta;
        return ir::for_loop("s", i64(0), i64(5), i64(1), {ir::assign(var, bin(BinaryOp::Add, w, ir::shuffle(op, w, d)))});
    };
    auto code = ir::seq({
        ir::let("v", ir::load("x", tid64(), ST::F32)),
        ir::let("down", v), reduce(ir::ShuffleOp::Down, "down"),
        ir::let("bfly", v), reduce(ir::ShuffleOp::Xor, "bfly"),
        ir::let("scan", v),
        ir::for_loop("s", i64(0), i64(5), i64(1),
                     {ir::let("up", ir::shuffle(ir::ShuffleOp::Up, ir::var("scan", ST::F32), delta)),
                      ir::if_then(bin(BinaryOp::Ge, lane, delta),
                                  {ir::assign("scan", bin(BinaryOp::Add, ir::var("scan", ST::F32), ir::var("up", ST::F32)))})}),
        ir::let("first", ir::shuffle(ir::ShuffleOp::Idx, v, i32(0))),
        ir::store("down_out", tid64(), ir::var("down", ST::F32)),
        ir::store("bfly_out", tid64(), ir::var("bfly", ST::F32)),
        ir::store("scan_out", tid64(), ir::var("scan", ST::F32)),
        ir::store("first_out", tid64(), ir::var("first", ST::F32)),
    });
    auto k = make_kernel("shuffles", bs,
                         {buf("x", ST::F32), buf("down_out", ST::F32, ir::Access::Write),
                          buf("bfly_out", ST::F32, ir::Access::Write), buf("scan_out", ST::F32, ir::Access::Write),
                          buf("first_out", ST::F32, ir::Access::Write)},
                         {ir::phase(code)});
    std::vector<float> x(bs), down(bs), bfly(bs), scan(bs), first(bs);
    for (int t = 0; t < bs; ++t) x[size_t(t)] = float(t % 7 + t / 32);
    Launch l(1);
    l.buffer("x", x).buffer("down_out", down).buffer("bfly_out", bfly).buffer("scan_out", scan).buffer("first_out", first);
    l.run(k);
    for (int w = 0; w < bs / 32; ++w) {
        float total = 0, prefix = 0;
        for (int t = 0; t < 32; ++t) total += x[size_t(w * 32 + t)];
        CHECK(down[size_t(w * 32)] == total);  // lane 0 holds the warp's sum
        for (int t = 0; t < 32; ++t) {
            const size_t g = size_t(w * 32 + t);
            prefix += x[g];
            CHECK(bfly[g] == total);  // every lane holds it after a butterfly
            CHECK(scan[g] == prefix);
            CHECK(first[g] == x[size_t(w * 32)]);
        }
        // Down past the warp's edge keeps the own value: lane 31 adds itself 5 times.
        CHECK(down[size_t(w * 32 + 31)] == 32 * x[size_t(w * 32 + 31)]);
    }
}

// ---------------------------------------------------------------- atomics
TEST_CASE("executor: atomics across blocks (histogram, float min, slot claiming)") {
    const int64_t n = 200000;
    std::vector<int32_t> x(n);
    std::vector<float> xf(n);
    std::mt19937 rng(3);
    for (int64_t k = 0; k < n; ++k) {
        x[size_t(k)] = int32_t(rng() % 1000);
        xf[size_t(k)] = float(rng() % 100000) / 7.f - 5000.f;
    }
    auto i = ir::var("i", ST::I64);
    auto code = ir::seq({
        ir::let("i", global_id()),
        ir::if_then(bin(BinaryOp::Lt, i, ir::param("n", ST::I64)),
                    {ir::atomic(ir::AtomicOp::Add, "hist",
                                ir::cast(ST::I64, bin(BinaryOp::Mod, ir::load("x", i, ST::I32), i32(16))), i32(1), ST::I32),
                     ir::atomic(ir::AtomicOp::Min, "fmin", i64(0), ir::load("xf", i, ST::F32), ST::F32),
                     ir::atomic(ir::AtomicOp::Add, "fsum", i64(0), ir::const_float(0.5, ST::F64), ST::F64),
                     ir::let("slot", i64(0)),
                     ir::atomic(ir::AtomicOp::Add, "counter", i64(0), i64(1), ST::I64, "slot"),
                     ir::store("order", ir::var("slot", ST::I64), i)}),
    });
    auto k = make_kernel("atomics", 256,
                         {buf("x", ST::I32), buf("xf", ST::F32), buf("hist", ST::I32, ir::Access::ReadWrite),
                          buf("fmin", ST::F32, ir::Access::ReadWrite), buf("fsum", ST::F64, ir::Access::ReadWrite),
                          buf("counter", ST::I64, ir::Access::ReadWrite), buf("order", ST::I64, ir::Access::Write),
                          scalar("n", ST::I64)},
                         {ir::phase(code)});
    std::vector<int32_t> hist(16, 0);
    std::vector<float> fmin{std::numeric_limits<float>::infinity()};
    std::vector<double> fsum{0};
    std::vector<int64_t> counter{0}, order(n, -1);
    Launch l((n + 255) / 256, 4);
    l.buffer("x", x).buffer("xf", xf).buffer("hist", hist).buffer("fmin", fmin).buffer("fsum", fsum);
    l.buffer("counter", counter).buffer("order", order).scalar_i("n", n);
    l.scheduling_dependent = {"order"};
    l.run(k);
    std::vector<int32_t> want(16, 0);
    for (int32_t v : x) ++want[size_t(v % 16)];
    CHECK(hist == want);
    CHECK(fmin[0] == *std::min_element(xf.begin(), xf.end()));
    CHECK(fsum[0] == 0.5 * double(n));
    CHECK(counter[0] == n);
    std::sort(order.begin(), order.end());
    for (int64_t k2 = 0; k2 < n; ++k2) CHECK_MESSAGE(order[size_t(k2)] == k2, "slot claimed twice or never");
    CHECK(l.counters.atomics == 4 * n);
}

TEST_CASE("executor: CAS, exchange and shared-memory atomics") {
    // Shared histogram per block, then one global atomic per bin.
    auto t = tid();
    auto p0 = ir::if_then(bin(BinaryOp::Lt, t, i32(8)), {ir::store("sh", t, i32(0), MemSpace::Shared)});
    auto p1 = ir::atomic(ir::AtomicOp::Add, "sh", bin(BinaryOp::And, t, i32(7)), i32(1), ST::I32, "", nullptr,
                         MemSpace::Shared);
    auto p2 = ir::if_then(bin(BinaryOp::Lt, t, i32(8)),
                          {ir::atomic(ir::AtomicOp::Add, "out", ir::cast(ST::I64, t),
                                      ir::load("sh", t, ST::I32, MemSpace::Shared), ST::I32)});
    auto p3 = ir::seq({ir::let("old", i32(0)),
                       ir::atomic(ir::AtomicOp::CAS, "flag", i64(0), i32(1), ST::I32, "old", i32(0)),
                       ir::if_then(bin(BinaryOp::Eq, ir::var("old", ST::I32), i32(0)),
                                   {ir::atomic(ir::AtomicOp::Add, "winners", i64(0), i32(1), ST::I32)}),
                       ir::atomic(ir::AtomicOp::Exch, "last", i64(0), i32(7), ST::I32)});
    auto k = make_kernel("shared_atomics", 64,
                         {buf("out", ST::I32, ir::Access::ReadWrite), buf("flag", ST::I32, ir::Access::ReadWrite),
                          buf("winners", ST::I32, ir::Access::ReadWrite), buf("last", ST::I32, ir::Access::ReadWrite)},
                         {ir::phase(p0), ir::phase(p1), ir::phase(ir::seq({p2, p3}))},
                         {ir::SharedArray{"sh", ST::I32, 8}});
    std::vector<int32_t> out(8, 0), flag{0}, winners{0}, last{0};
    Launch l(50, 2);
    l.buffer("out", out).buffer("flag", flag).buffer("winners", winners).buffer("last", last);
    l.run(k);
    CHECK(out == std::vector<int32_t>(8, 50 * 8));
    CHECK(flag[0] == 1);
    CHECK(winners[0] == 1);  // exactly one thread of all blocks won the CAS
    CHECK(last[0] == 7);
}

// ---------------------------------------------------------------- errors
TEST_CASE("executor: Error statements record the first failing check") {
    // gather: out[i] = a[idx[i]] with idx checked against the extent.
    auto i = ir::var("i", ST::I64);
    auto j = ir::var("j", ST::I64);
    auto ext = ir::param("m", ST::I64);
    auto bad = bin(BinaryOp::Or, bin(BinaryOp::Lt, j, i64(0)), bin(BinaryOp::Ge, j, ext));
    auto code = ir::seq({ir::let("i", global_id()),
                         ir::if_then(bin(BinaryOp::Lt, i, ir::param("n", ST::I64)),
                                     {ir::let("j", ir::load("idx", i, ST::I64)),
                                      ir::if_then(bad, {ir::error(0, j, ext)},
                                                  {ir::store("out", i, ir::load("a", j, ST::F32))})})});
    auto k = make_kernel("gather", 128,
                         {buf("idx", ST::I64), buf("a", ST::F32), buf("out", ST::F32, ir::Access::Write),
                          scalar("n", ST::I64), scalar("m", ST::I64)},
                         {ir::phase(code)});
    const int64_t n = 5000, m = 10;
    std::vector<int64_t> idx(n);
    for (int64_t q = 0; q < n; ++q) idx[size_t(q)] = q % m;
    idx[4000] = 99;
    idx[1234] = -3;  // the first failing element
    idx[4999] = 12;
    std::vector<float> a(m, 1.f), out(n, 0.f);
    for (int threads : {1, 2, 8}) {
        Launch l((n + 127) / 128, threads);
        l.buffer("idx", idx).buffer("a", a).buffer("out", out).scalar_i("n", n).scalar_i("m", m);
        auto err = l.run(k);
        CHECK(err.code == 0);
        CHECK(err.index == -3);
        CHECK(err.extent == m);
    }
    idx[1234] = idx[4000] = idx[4999] = 0;
    Launch l((n + 127) / 128);
    l.buffer("idx", idx).buffer("a", a).buffer("out", out).scalar_i("n", n).scalar_i("m", m);
    CHECK(l.run(k).code < 0);
    CHECK(std::all_of(out.begin(), out.end(), [](float v) { return v == 1.f; }));
}

TEST_CASE("executor: the lowest failing thread's first failure is reported") {
    // Thread i fails check codes[i] (when >= 0) and then, later in program
    // order, check 2: threads of several blocks fail different checks.
    auto i = ir::var("i", ST::I64);
    auto c = ir::var("c", ST::I32);
    auto failed = bin(BinaryOp::Ge, c, i32(0));
    auto code = ir::seq({ir::let("i", global_id()),
                         ir::if_then(bin(BinaryOp::Lt, i, ir::param("n", ST::I64)),
                                     {ir::let("c", ir::load("codes", i, ST::I32)),
                                      ir::if_then(bin(BinaryOp::Eq, c, i32(0)), {ir::error(0, i, i64(100))}),
                                      ir::if_then(bin(BinaryOp::Eq, c, i32(1)), {ir::error(1, i, i64(101))}),
                                      ir::if_then(failed, {ir::error(2, ir::unary(ir::UnaryOp::Neg, i), i64(102))})})});
    auto k = make_kernel("checks", 128, {buf("codes", ST::I32), scalar("n", ST::I64)}, {ir::phase(code)});
    k.checks.push_back(ir::Check{"second check", shoal::Loc{}});
    k.checks.push_back(ir::Check{"third check", shoal::Loc{}});
    const int64_t n = 5000;
    std::vector<int32_t> codes(n, -1);
    codes[4999] = 0;
    codes[2100] = 0;
    codes[700] = 1;  // block 5, the lowest: check 1, not its later check 2
    codes[701] = 0;
    codes[1100] = 1;
    for (int threads : {1, 2, 8}) {
        Launch l((n + 127) / 128, threads);
        l.buffer("codes", codes).scalar_i("n", n);
        auto err = l.run(k);
        CHECK(err.code == 1);
        CHECK(err.index == 700);
        CHECK(err.extent == 101);
    }
}

// ---------------------------------------------------------------- counters
namespace {

cpu::Counters load_pattern(int64_t stride, ST t) {
    const int bs = 1024;
    auto code = ir::store("out", tid64(), ir::load("x", bin(BinaryOp::Mul, tid64(), i64(stride)), t));
    auto k = make_kernel("pattern", bs, {buf("x", t), buf("out", t, ir::Access::Write)}, {ir::phase(code)});
    std::vector<double> x(size_t(bs * stride)), out(bs);  // big enough for either element size
    Launch l(1);
    l.buffer("x", x).buffer("out", out);
    l.run(k);
    return l.counters;
}

cpu::Counters shared_pattern(int32_t stride) {
    const int bs = 256;
    auto code = ir::store("sh", bin(BinaryOp::Mul, tid(), i32(stride)), ir::cast(ST::F32, tid()), MemSpace::Shared);
    auto k = make_kernel("banks", bs, {}, {ir::phase(code)}, {ir::SharedArray{"sh", ST::F32, bs * stride}});
    Launch l(1);
    l.run(k);
    return l.counters;
}

}  // namespace

TEST_CASE("executor: counters model coalescing and bank conflicts") {
    auto coalesced = load_pattern(1, ST::F32);
    CHECK(coalesced.global_bytes_loaded == 1024 * 4);
    CHECK(coalesced.global_bytes_stored == 1024 * 4);
    CHECK(coalesced.global_sectors == 2 * 32 * 4);  // load and store: 4 sectors per warp
    auto strided = load_pattern(8, ST::F32);
    CHECK(strided.global_bytes_loaded == 1024 * 4);
    CHECK(strided.global_sectors == 32 * 32 + 32 * 4);  // a sector per lane for the load
    auto doubles = load_pattern(1, ST::F64);
    CHECK(doubles.global_sectors == 2 * 32 * 8);
    auto pairs = load_pattern(2, ST::F32);  // every other float: still 8 sectors per warp
    CHECK(pairs.global_sectors == 32 * 8 + 32 * 4);

    CHECK(shared_pattern(1).shared_bank_conflicts == 0);
    CHECK(shared_pattern(2).shared_bank_conflicts == 8 * 1);   // 2-way: one extra wavefront per warp
    CHECK(shared_pattern(32).shared_bank_conflicts == 8 * 31);  // all lanes in bank 0
    CHECK(shared_pattern(33).shared_bank_conflicts == 0);      // padding removes the conflicts
}

TEST_CASE("executor: counters accumulate over launches and the result does not depend on threads") {
    cpu::Counters total;
    std::vector<int32_t> ref;
    for (int threads : {1, 2, 5}) {
        const int64_t n = 30000;
        std::vector<int32_t> x(n, 1), out(size_t((n + 255) / 256));
        Launch l((n + 255) / 256, threads);
        l.buffer("x", x).buffer("out", out).scalar_i("n", n);
        l.counters = total;
        l.run(block_sum_kernel(256, 8));
        total = l.counters;
        if (ref.empty()) ref = out;
        CHECK(out == ref);
    }
    CHECK(total.launches == 3);
    CHECK(total.global_bytes_loaded == 3 * 30000 * 4);
}

// ---------------------------------------------------------------- check mode
namespace {

std::string run_error(const ir::Kernel& k, Launch& l) {
    try {
        l.run(k);
    } catch (const shoal::Error& e) {
        CHECK(e.kind == shoal::ErrorKind::Internal);
        return e.message;
    }
    return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("executor: check mode reports out-of-bounds accesses") {
    auto code = ir::store("out", global_id(), ir::load("x", global_id(), ST::F32));
    auto k = make_kernel("oob", 32, {buf("x", ST::F32), buf("out", ST::F32, ir::Access::Write)}, {ir::phase(code)});
    std::vector<float> x(100), out(128);
    Launch l(4);
    l.buffer("x", x).buffer("out", out);
    const std::string msg = run_error(k, l);
    CHECK(contains(msg, "kernel 'oob'"));
    CHECK(contains(msg, "phase 0"));
    CHECK(contains(msg, "'x'"));
    CHECK(contains(msg, "index 100"));
    CHECK(contains(msg, "extent 100"));
    CHECK(contains(msg, "thread 4 of block 3"));

    // A scattered (non-coalesced) shared access out of bounds.
    auto sh = ir::store("sh", bin(BinaryOp::Mul, tid(), i32(3)), i32(1), MemSpace::Shared);
    auto ks = make_kernel("oob_shared", 32, {}, {ir::phase(sh)}, {ir::SharedArray{"sh", ST::I32, 64}});
    Launch ls(1);
    const std::string smsg = run_error(ks, ls);
    CHECK(contains(smsg, "'sh' at index 66"));
    CHECK(contains(smsg, "thread 22"));
}

TEST_CASE("executor: check mode reports shared-memory races within a phase") {
    auto t = tid();
    auto nb = bin(BinaryOp::Mod, bin(BinaryOp::Add, t, i32(1)), i32(64));
    auto write = ir::store("sh", t, t, MemSpace::Shared);
    auto read = ir::store("out", tid64(), ir::load("sh", nb, ST::I32, MemSpace::Shared));
    auto racy = make_kernel("racy", 64, {buf("out", ST::I32, ir::Access::Write)}, {ir::phase(ir::seq({write, read}))},
                            {ir::SharedArray{"sh", ST::I32, 64}});
    std::vector<int32_t> out(64);
    Launch l(1);
    l.buffer("out", out);
    const std::string msg = run_error(racy, l);
    CHECK(contains(msg, "shared-memory race on 'sh'"));
    CHECK(contains(msg, "kernel 'racy', phase 0"));

    // Two lanes writing one address in a phase is a race too.
    auto ww = make_kernel("write_write", 64, {}, {ir::phase(ir::store("sh", i32(0), t, MemSpace::Shared))},
                          {ir::SharedArray{"sh", ST::I32, 64}});
    Launch l2(1);
    CHECK(contains(run_error(ww, l2), "race"));

    // The same accesses separated by a barrier are fine.
    auto fine = make_kernel("fine", 64, {buf("out", ST::I32, ir::Access::Write)}, {ir::phase(write), ir::phase(read)},
                            {ir::SharedArray{"sh", ST::I32, 64}});
    Launch l3(1);
    l3.buffer("out", out);
    CHECK(run_error(fine, l3).empty());
    for (int q = 0; q < 64; ++q) CHECK(out[size_t(q)] == (q + 1) % 64);
}

TEST_CASE("executor: check mode reports divergent shuffles and non-uniform block loops") {
    auto v = ir::cast(ST::F32, tid());
    auto code = ir::seq({ir::let("v", v),
                         ir::if_then(bin(BinaryOp::Lt, tid(), i32(5)),
                                     {ir::assign("v", ir::shuffle(ir::ShuffleOp::Xor, ir::var("v", ST::F32), i32(1)))}),
                         ir::store("out", tid64(), ir::var("v", ST::F32))});
    auto k = make_kernel("divergent_shuffle", 64, {buf("out", ST::F32, ir::Access::Write)}, {ir::phase(code)});
    std::vector<float> out(64);
    Launch l(1);
    l.buffer("out", out);
    const std::string msg = run_error(k, l);
    CHECK(contains(msg, "shuffle under divergent control"));
    CHECK(contains(msg, "5 of 32"));

    // A warp-uniform condition (whole warps in or out) is fine.
    auto uniform = ir::seq({ir::let("v", v),
                            ir::if_then(bin(BinaryOp::Lt, tid(), i32(32)),
                                        {ir::assign("v", ir::shuffle(ir::ShuffleOp::Xor, ir::var("v", ST::F32), i32(1)))}),
                            ir::store("out", tid64(), ir::var("v", ST::F32))});
    auto ku = make_kernel("warp_uniform_shuffle", 64, {buf("out", ST::F32, ir::Access::Write)}, {ir::phase(uniform)});
    Launch lu(1);
    lu.buffer("out", out);
    CHECK(run_error(ku, lu).empty());
    CHECK(out[0] == 1.f);
    CHECK(out[33] == 33.f);

    // verify() rejects a thread-dependent BlockFor bound; the executor checks it too.
    auto kb = make_kernel("divergent_loop", 32, {},
                          {ir::block_for("k", i64(0), tid64(), i64(1), {ir::phase(ir::comment("nothing"))})});
    Launch lb(1);
    CHECK(contains(run_error(kb, lb), "barrier divergence"));
}

TEST_CASE("executor: kernels from KernelBuilder run and missing arguments are reported") {
    ir::KernelBuilder kb("saxpy", 256);
    kb.buffer_param("x", ST::F32, ir::Access::Read);
    kb.buffer_param("y", ST::F32, ir::Access::ReadWrite);
    kb.scalar_param("a", ST::F32);
    kb.scalar_param("n", ST::I64);
    auto i = kb.bind("i", global_id());
    kb.open();
    kb.emit(ir::store("y", i,
                      bin(BinaryOp::Add, bin(BinaryOp::Mul, ir::param("a", ST::F32), ir::load("x", i, ST::F32)),
                          ir::load("y", i, ST::F32))));
    auto then_body = kb.close();
    kb.emit(ir::if_then(bin(BinaryOp::Lt, i, ir::param("n", ST::I64)), then_body));
    const ir::Kernel k = kb.finish();
    const int64_t n = 1000;
    std::vector<float> x(n), y(n);
    for (int64_t q = 0; q < n; ++q) {
        x[size_t(q)] = float(q);
        y[size_t(q)] = 1.f;
    }
    Launch l((n + 255) / 256);
    l.buffer("x", x).buffer("y", y).scalar_f("a", 2.0).scalar_i("n", n);
    l.run(k);
    for (int64_t q = 0; q < n; ++q) CHECK(y[size_t(q)] == 2.f * float(q) + 1.f);

    Launch missing(1);
    missing.buffer("x", x).buffer("y", y).scalar_i("n", n);
    CHECK(contains(run_error(k, missing), "no scalar argument for parameter 'a'"));
}

TEST_CASE("executor: a variable assigned to itself keeps its value (`acc = acc` computes nothing)") {
    const std::vector<float> a{1.5f, -2.0f, 3.25f};
    std::vector<float> out(a.size());
    auto i = ir::var("i", ST::I64);
    auto acc = ir::var("acc", ST::F32);
    auto code = ir::seq({ir::let("i", global_id()),
                         ir::if_then(bin(BinaryOp::Lt, i, ir::param("n", ST::I64)),
                                     {ir::let("acc", ir::load("a", i, ST::F32)), ir::assign("acc", acc),
                                      ir::assign("acc", bin(BinaryOp::Add, acc, ir::const_float(1.0, ST::F32))),
                                      ir::assign("acc", acc), ir::store("out", i, acc)})});
    auto k = make_kernel("self_assign", 64,
                         {buf("a", ST::F32), buf("out", ST::F32, ir::Access::Write), scalar("n", ST::I64)},
                         {ir::phase(code)});
    std::vector<float> av = a;
    Launch l(1);
    l.buffer("a", av).buffer("out", out).scalar_i("n", int64_t(a.size()));
    l.run(k);
    CHECK(out == std::vector<float>{2.5f, -1.0f, 4.25f});
}

TEST_CASE("lowering: assign_all assigns as one step (a, b = b, a swaps)") {
    ir::KernelBuilder kb("swap", 64);
    kb.buffer_param("out", ST::F32, ir::Access::ReadWrite);
    kb.scalar_param("n", ST::I64);
    const ExprPtr i = kb.bind("i", global_id());
    ir::lowering::emit_if(kb, bin(BinaryOp::Lt, i, ir::param("n", ST::I64)), [&] {
        const std::vector<ExprPtr> ab =
            ir::lowering::declare_vars(kb, "v", {ir::load("out", i, ST::F32), ir::const_float(7.0, ST::F32)});
        ir::lowering::assign_all(kb, ab, {ab[1], ab[0]});
        kb.emit(ir::store("out", i, bin(BinaryOp::Sub, ab[0], ab[1])));
    });
    std::vector<float> out{1.0f, 2.0f, 10.0f};
    Launch l(1);
    l.buffer("out", out).scalar_i("n", int64_t(out.size()));
    l.run(kb.finish());
    CHECK(out == std::vector<float>{6.0f, 5.0f, -3.0f});
}
