// The CPU executor's fast paths (runtime/cpu/compile.cpp) against plain C++:
// affine lane values (grid-stride loops, slices, `if (gid < n)`), loads read
// in place, stores written by their value's node, and the fallbacks taken
// when the scalars cannot tell (values that wrap around, negative strides,
// buffers that share memory). Check mode on, as in all executor tests. Also
// cancelling a launch.
#include <doctest/doctest.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "codegen/ir.h"
#include "lang/diagnostics.h"
#include "runtime/cpu/executor.h"
#include "native_check.h"

namespace {

namespace ir = shoal::ir;
namespace cpu = shoal::cpu;
using ir::BinaryOp;
using ir::ExprPtr;
using ST = ir::ScalarType;

ExprPtr i64(int64_t v) { return ir::const_int(v, ST::I64); }
ExprPtr i32(int64_t v) { return ir::const_int(v, ST::I32); }
ExprPtr bin(BinaryOp op, ExprPtr a, ExprPtr b) { return ir::binary(op, std::move(a), std::move(b)); }
ExprPtr tid64() { return ir::cast(ST::I64, ir::thread_idx()); }
ExprPtr gid() { return bin(BinaryOp::Add, bin(BinaryOp::Mul, ir::block_idx(), ir::cast(ST::I64, ir::block_dim())), tid64()); }
ExprPtr v64(const char* name) { return ir::var(name, ST::I64); }

ir::Param buffer(const std::string& name, ST t, ir::Access a) { return ir::Param{name, ir::ParamKind::Buffer, t, a}; }
ir::Param scalar(const std::string& name) { return ir::Param{name, ir::ParamKind::Scalar, ST::I64, ir::Access::Read}; }

ir::Kernel kernel(int block_size, std::vector<ir::Param> params, std::vector<ir::BlockStmtPtr> body) {
    ir::Kernel k;
    k.name = "fast_paths";
    k.block_size = block_size;
    k.params = std::move(params);
    k.body = std::move(body);
    return k;
}

struct Launch {
    cpu::LaunchArgs args;
    cpu::Counters counters;
    explicit Launch(int64_t grid) { args.grid = grid; }
    template <class T> Launch& buffer(const std::string& name, std::vector<T>& v) {
        args.buffers[name] = cpu::BufferArg{v.data(), int64_t(v.size())};
        return *this;
    }
    Launch& scalar(const std::string& name, int64_t v) {
        cpu::ScalarArg a;
        a.type = ST::I64;
        a.i = v;
        args.scalars[name] = a;
        return *this;
    }
    void run(const ir::Kernel& k) {
        cpu::ExecOptions options;
        options.check = true;
        CHECK(native_check::run_both(k, args, options, counters).code < 0);  // also natively (native_check.h)
    }
};

}  // namespace

TEST_CASE("executor: a uniform operand is broadcast before a sibling's temporaries are reused") {
    // u + (a[i] + b[i]): u's broadcast must not share a temporary with the loads.
    const ExprPtr u = bin(BinaryOp::Mul, ir::block_idx(), i64(1000));
    const ExprPtr sum = bin(BinaryOp::Add, ir::load("a", v64("i"), ST::I64), ir::load("b", v64("i"), ST::I64));
    const auto k = kernel(4, {buffer("a", ST::I64, ir::Access::Read), buffer("b", ST::I64, ir::Access::Read),
                              buffer("out", ST::I64, ir::Access::Write)},
                          {ir::phase(ir::seq({ir::let("i", gid()), ir::store("out", v64("i"), bin(BinaryOp::Add, u, sum))}))});
    std::vector<int64_t> a{1, 2, 3, 4, 5, 6, 7, 8}, b{10, 20, 30, 40, 50, 60, 70, 80}, out(8);
    Launch(2).buffer("a", a).buffer("b", b).buffer("out", out).run(k);
    for (int i = 0; i < 8; ++i) CHECK(out[size_t(i)] == (i / 4) * 1000 + a[size_t(i)] + b[size_t(i)]);
}

TEST_CASE("executor: grid-stride loops over slices (affine indices of any stride)") {
    // out[j] = x[start + j * step] for a grid-stride j, as a fused slice reads.
    const int64_t n = 1000;
    const ExprPtr index = bin(BinaryOp::Add, ir::param("start", ST::I64), bin(BinaryOp::Mul, v64("j"), ir::param("step", ST::I64)));
    const ExprPtr stride = bin(BinaryOp::Mul, ir::grid_dim(), ir::cast(ST::I64, ir::block_dim()));
    const auto k = kernel(64, {buffer("x", ST::F32, ir::Access::Read), buffer("out", ST::F32, ir::Access::Write),
                               scalar("n"), scalar("start"), scalar("step")},
                          {ir::phase(ir::for_loop("j", gid(), ir::param("n", ST::I64), stride,
                                                  {ir::store("out", v64("j"), ir::load("x", index, ST::F32))}))});
    std::vector<float> x(3 * n + 2);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.5f;
    for (int64_t step : {1, 3}) {
        for (int64_t start : {0, 1}) {
            CAPTURE(step);
            CAPTURE(start);
            std::vector<float> out(n, -1);
            Launch l(5);
            l.buffer("x", x).buffer("out", out).scalar("n", n).scalar("start", start).scalar("step", step).run(k);
            for (int64_t j = 0; j < n; ++j) CHECK(out[size_t(j)] == x[size_t(start + j * step)]);
            CHECK(l.counters.global_bytes_loaded == 4 * n);
            CHECK(l.counters.global_bytes_stored == 4 * n);
        }
    }
}

TEST_CASE("executor: an affine loop entered by some lanes only") {
    // Even threads loop over their column; odd ones skip it.
    const int bs = 32;
    const int64_t n = 200;
    const ExprPtr even = bin(BinaryOp::Eq, bin(BinaryOp::And, ir::thread_idx(), i32(1)), i32(0));
    const auto body = ir::for_loop("k", tid64(), ir::param("n", ST::I64), i64(bs),
                                   {ir::store("out", v64("k"), bin(BinaryOp::Mul, v64("k"), i64(2)))});
    const auto k = kernel(bs, {buffer("out", ST::I64, ir::Access::Write), scalar("n")},
                          {ir::phase(ir::if_then(even, {body}))});
    std::vector<int64_t> out(n, -1);
    Launch(1).buffer("out", out).scalar("n", n).run(k);
    for (int64_t i = 0; i < n; ++i) CHECK(out[size_t(i)] == (i % 2 == 0 ? 2 * i : -1));
}

TEST_CASE("executor: affine loops whose lane values wrap around or fall with the lane") {
    const int bs = 256;
    SUBCASE("i32 values past INT_MAX wrap to negative and loop") {
        // k = INT_MAX - 100 + t (truncated from i64): lanes above 100 wrap to
        // INT_MIN.., below 0 they run until k + 2^31 reaches 0 (two trips);
        // the others never run.
        const ExprPtr lo = ir::cast(ST::I32, bin(BinaryOp::Add, i64(INT_MAX - 100), tid64()));
        const ExprPtr slot = tid64();
        const auto body = ir::for_loop("k", lo, i32(0), i32(1 << 30),
                                       {ir::store("out", slot, bin(BinaryOp::Add, ir::load("out", slot, ST::I32), i32(1)))});
        const auto k = kernel(bs, {buffer("out", ST::I32, ir::Access::ReadWrite)}, {ir::phase(body)});
        std::vector<int32_t> out(bs, 0);
        Launch(1).buffer("out", out).run(k);
        for (int t = 0; t < bs; ++t) CHECK(out[size_t(t)] == (t > 100 ? 2 : 0));
    }
    SUBCASE("an if on i32 values past INT_MAX") {
        const ExprPtr wrapped = ir::cast(ST::I32, bin(BinaryOp::Add, i64(INT_MAX - 20), tid64()));
        const auto body = ir::if_then(bin(BinaryOp::Lt, wrapped, i32(0)), {ir::store("out", tid64(), i32(1))},
                                      {ir::store("out", tid64(), i32(2))});
        const auto k = kernel(bs, {buffer("out", ST::I32, ir::Access::Write)}, {ir::phase(body)});
        std::vector<int32_t> out(bs, 0);
        Launch(1).buffer("out", out).run(k);
        for (int t = 0; t < bs; ++t) CHECK(out[size_t(t)] == (t > 20 ? 1 : 2));
    }
    SUBCASE("values falling with the lane") {
        // k = 1000 - t up to 1000 by 100: ceil(t / 100) trips.
        const ExprPtr slot = tid64();
        const auto body = ir::for_loop("k", bin(BinaryOp::Sub, i64(1000), tid64()), i64(1000), i64(100),
                                       {ir::store("out", slot, bin(BinaryOp::Add, ir::load("out", slot, ST::I64), i64(1)))});
        const auto k = kernel(bs, {buffer("out", ST::I64, ir::Access::ReadWrite)}, {ir::phase(body)});
        std::vector<int64_t> out(bs, 0);
        Launch(1).buffer("out", out).run(k);
        for (int t = 0; t < bs; ++t) CHECK(out[size_t(t)] == (t + 99) / 100);
    }
}

TEST_CASE("executor: if on an affine comparison, in either order, and its else branch") {
    const int bs = 64;
    const int64_t n = 300;
    const std::vector<std::pair<BinaryOp, bool (*)(int64_t, int64_t)>> ops = {
        {BinaryOp::Lt, [](int64_t a, int64_t b) { return a < b; }}, {BinaryOp::Le, [](int64_t a, int64_t b) { return a <= b; }},
        {BinaryOp::Gt, [](int64_t a, int64_t b) { return a > b; }}, {BinaryOp::Ge, [](int64_t a, int64_t b) { return a >= b; }},
        {BinaryOp::Eq, [](int64_t a, int64_t b) { return a == b; }}, {BinaryOp::Ne, [](int64_t a, int64_t b) { return a != b; }},
    };
    for (const auto& entry : ops) {
        const auto& op = entry.first;  // not a structured binding: clang 14 cannot capture those
        const auto& holds = entry.second;
        for (bool affine_left : {true, false}) {
            for (int64_t m : {int64_t(-5), int64_t(0), int64_t(77), int64_t(128), int64_t(1000)}) {
                CAPTURE(int(op));
                CAPTURE(affine_left);
                CAPTURE(m);
                const ExprPtr c = affine_left ? bin(op, v64("i"), ir::param("m", ST::I64)) : bin(op, ir::param("m", ST::I64), v64("i"));
                const auto code = ir::seq({ir::let("i", gid()),
                                           ir::if_then(bin(BinaryOp::Lt, v64("i"), ir::param("n", ST::I64)),
                                                       {ir::if_then(c, {ir::store("out", v64("i"), i64(1))},
                                                                    {ir::store("out", v64("i"), i64(2))})})});
                const auto k = kernel(bs, {buffer("out", ST::I64, ir::Access::Write), scalar("n"), scalar("m")}, {ir::phase(code)});
                std::vector<int64_t> out(n, 0);
                Launch(5).buffer("out", out).scalar("n", n).scalar("m", m).run(k);
                for (int64_t i = 0; i < n; ++i) {
                    const bool want = affine_left ? holds(i, m) : holds(m, i);
                    CHECK(out[size_t(i)] == (want ? 1 : 2));
                }
            }
        }
    }
}

TEST_CASE("executor: loads and stores on buffers that share memory read all lanes first") {
    // out[i + 1] = a[i] + 1 in one warp, a and out the same memory: on a GPU
    // every lane loads before any stores.
    const int bs = 32;
    const ExprPtr i = tid64();
    const auto k = kernel(bs, {buffer("a", ST::I32, ir::Access::Read), buffer("out", ST::I32, ir::Access::Write)},
                          {ir::phase(ir::store("out", bin(BinaryOp::Add, i, i64(1)),
                                               bin(BinaryOp::Add, ir::load("a", i, ST::I32), i32(1))))});
    std::vector<int32_t> mem(bs + 1);
    for (int t = 0; t <= bs; ++t) mem[size_t(t)] = t * 10;
    Launch l(1);
    l.args.buffers["a"] = cpu::BufferArg{mem.data(), bs};
    l.args.buffers["out"] = cpu::BufferArg{mem.data(), bs + 1};
    l.run(k);
    CHECK(mem[0] == 0);
    for (int t = 0; t < bs; ++t) CHECK(mem[size_t(t + 1)] == t * 10 + 1);
}

TEST_CASE("executor: a store whose value reads the buffer it writes") {
    // buf[i] = buf[i + 1] * 2 in one warp: every lane reads before any writes.
    const int bs = 32;
    const ExprPtr i = tid64();
    const auto k = kernel(bs, {buffer("buf", ST::F64, ir::Access::ReadWrite)},
                          {ir::phase(ir::store("buf", i, bin(BinaryOp::Mul, ir::load("buf", bin(BinaryOp::Add, i, i64(1)), ST::F64),
                                                             ir::const_float(2.0, ST::F64))))});
    std::vector<double> buf(bs + 1);
    for (int t = 0; t <= bs; ++t) buf[size_t(t)] = t;
    Launch(1).buffer("buf", buf).run(k);
    for (int t = 0; t < bs; ++t) CHECK(buf[size_t(t)] == 2.0 * (t + 1));
}

TEST_CASE("executor: lets of uniform and affine values, read in a later phase") {
    // Phase 1 binds base (uniform) and g (affine); phase 2 uses both.
    const int bs = 32;
    const auto k = kernel(
        bs, {buffer("flags", ST::Bool, ir::Access::Read), buffer("out", ST::I64, ir::Access::Write)},
        {ir::phase(ir::seq({ir::let("base", bin(BinaryOp::Mul, ir::block_idx(), i64(bs))),
                            ir::let("g", bin(BinaryOp::Add, v64("base"), tid64()))})),
         ir::phase(ir::if_then(ir::load("flags", v64("g"), ST::Bool),
                               {ir::store("out", v64("g"), bin(BinaryOp::Add, v64("g"), v64("base")))}))});
    std::vector<uint8_t> flags(3 * bs);
    for (size_t i = 0; i < flags.size(); ++i) flags[i] = uint8_t(i % 3 == 0 ? 2 : 0);  // bytes other than 1 are true
    std::vector<int64_t> out(3 * bs, -1);
    Launch(3).buffer("flags", flags).buffer("out", out).run(k);
    for (int64_t g = 0; g < 3 * bs; ++g) CHECK(out[size_t(g)] == (g % 3 == 0 ? g + g / bs * bs : -1));
}

TEST_CASE("executor: a launch stops when its cancel flag is set") {
    // Each thread loops about 2^31 times, counting its trips atomically; the
    // flag is set once the count moves.
    const auto body = ir::for_loop("k", i64(0), i64(int64_t(1) << 31), i64(1),
                                   {ir::atomic(ir::AtomicOp::Add, "trips", i64(0), i64(1), ST::I64)});
    const auto k = kernel(32, {buffer("trips", ST::I64, ir::Access::ReadWrite)}, {ir::phase(body)});
    std::vector<int64_t> trips(1, 0);
    std::atomic<bool> cancel{false};
    Launch l(4);
    l.buffer("trips", trips);
    cpu::ExecOptions options;
    options.cancel = &cancel;
    std::thread watcher([&] {
        std::atomic_ref<int64_t> count(trips[0]);
        while (count.load() == 0) std::this_thread::yield();
        cancel.store(true);
    });
    shoal::ErrorKind kind = shoal::ErrorKind::Internal;
    try {
        cpu::run_kernel(k, l.args, options, l.counters);
    } catch (const shoal::Error& e) {
        kind = e.kind;
    }
    watcher.join();
    CHECK(kind == shoal::ErrorKind::Interrupted);
    CHECK(trips[0] < (int64_t(1) << 31) * 32);
}
