// The optimisation passes (codegen/pipeline.h): each pass on hand-built
// kernels (folding with the IR's exact semantics, common subexpressions,
// dead code and the safety rules that keep them apart from memory effects,
// loops and guards), their effect on lowered plans measured with the
// executor's counters, and the SHOAL_DUMP_IR listing. Kernels that run are
// also compiled with NVRTC (lowering_harness.h).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <sstream>

#include "codegen/cse.h"
#include "codegen/dead_code.h"
#include "codegen/ir_visitor.h"
#include "codegen/pipeline.h"
#include "codegen/simplify.h"
#include "lowering_harness.h"

using namespace shoal;
using namespace shoal::ir;
using namespace shoal::lowering_test;

namespace {

const ScalarType I32 = ScalarType::I32, I64 = ScalarType::I64, U32 = ScalarType::U32, F32 = ScalarType::F32,
                 Bool = ScalarType::Bool;

ExprPtr i32(int64_t v) { return const_int(v, I32); }
ExprPtr f32(double v) { return const_float(v, F32); }
ExprPtr add(ExprPtr a, ExprPtr b) { return binary(BinaryOp::Add, a, b); }
ExprPtr mul(ExprPtr a, ExprPtr b) { return binary(BinaryOp::Mul, a, b); }
ExprPtr tid64() { return cast(I64, thread_idx()); }

// The top-level statements of a one-phase kernel.
const std::vector<StmtPtr>& statements(const Kernel& k) {
    REQUIRE(k.body.size() == 1);
    return k.body[0]->phase->body;
}

// What simplify makes of e (Params in e become kernel parameters).
ExprPtr simplified(const ExprPtr& e) {
    KernelBuilder kb("fold");
    kb.buffer_param("out", e->type, Access::Write);
    use_params(kb, e);
    kb.emit(store("out", i64(0), e));
    const Kernel k = simplify(kb.finish());
    const auto& ss = statements(k);
    REQUIRE(ss.size() == 1);
    return ss[0]->exprs[1];
}

// The folded constant of a constant expression.
const Expr& folded(const ExprPtr& e) {
    static ExprPtr keep;
    keep = simplified(e);
    INFO(to_string(e) << " -> " << to_string(keep));
    REQUIRE(keep->kind == ExprKind::Const);
    return *keep;
}

// Loads of `mem` in code: the measure CSE changes.
int count_loads(const Kernel& k, const std::string& mem) {
    struct Count : IRVisitor {
        std::string mem;
        int n = 0;
        using IRVisitor::visit;
        void visit(const ExprPtr& e) override {
            n += e->kind == ExprKind::Load && e->name == mem;
            IRVisitor::visit(e);
        }
    } c;
    c.mem = mem;
    c.visit_kernel(k);
    return c.n;
}

bool mentions(const Kernel& k, const std::string& text) { return to_string(k).find(text) != std::string::npos; }

// NVRTC (sm_80, sm_90, zero warnings) for a hand-built kernel.
void check_compiles(const Kernel& k) {
    LaunchPlan p;
    p.kernels = {k};
    compile_with_nvrtc(p);
}

// A one-kernel plan of `k` on one block, writing `out` (n elements).
LaunchPlan one_launch(const Kernel& k, ScalarType out_type, int64_t n) {
    PlanBuilder pb(k.name);
    pb.output_buffer("out", out_type, i64(n));
    pb.launch(pb.add_kernel(k), i64(1));
    return pb.finish();
}

}  // namespace

// ---------------------------------------------------------------- simplify
TEST_CASE("simplify folds integers as the IR defines them: wrapping, division by zero, masked shifts") {
    CHECK(folded(add(i32(INT32_MAX), i32(1))).i == INT32_MIN);
    CHECK(folded(mul(i64(INT64_MAX), i64(2))).i == -2);
    CHECK(folded(binary(BinaryOp::Sub, const_int(0, U32), const_int(1, U32))).i == 4294967295LL);
    CHECK(folded(unary(UnaryOp::Neg, i32(INT32_MIN))).i == INT32_MIN);
    // x / 0 and x % 0 are 0; minInt / -1 wraps, minInt % -1 is 0
    CHECK(folded(binary(BinaryOp::Div, i32(7), i32(0))).i == 0);
    CHECK(folded(binary(BinaryOp::Mod, i32(7), i32(0))).i == 0);
    CHECK(folded(binary(BinaryOp::Div, i32(INT32_MIN), i32(-1))).i == INT32_MIN);
    CHECK(folded(binary(BinaryOp::Mod, i32(INT32_MIN), i32(-1))).i == 0);
    CHECK(folded(binary(BinaryOp::Div, i32(-7), i32(2))).i == -3);  // truncates toward zero
    CHECK(folded(binary(BinaryOp::Mod, i32(-7), i32(2))).i == -1);
    // shift amounts modulo the width; >> is arithmetic on signed types
    CHECK(folded(binary(BinaryOp::Shl, i32(1), i32(33))).i == 2);
    CHECK(folded(binary(BinaryOp::Shl, i32(1), i32(-1))).i == INT32_MIN);
    CHECK(folded(binary(BinaryOp::Shr, i32(-8), i32(1))).i == -4);
    CHECK(folded(binary(BinaryOp::Shr, const_int(0x80000000LL, U32), const_int(31, U32))).i == 1);
    CHECK(folded(binary(BinaryOp::Shl, i64(1), i64(64))).i == 1);
    // comparisons by the operand type's order
    CHECK(folded(binary(BinaryOp::Lt, const_int(4294967295LL, U32), const_int(1, U32))).i == 0);
    CHECK(folded(binary(BinaryOp::Lt, i32(-1), i32(1))).i == 1);
    CHECK(folded(call("min", {i32(3), i32(-2)}, I32)).i == -2);
    CHECK(folded(call("abs", {i32(INT32_MIN)}, I32)).i == INT32_MIN);
}

TEST_CASE("simplify folds floats in the operand type and casts with Shoal's conversions") {
    const float a = 0.1f, b = 0.2f;
    CHECK(static_cast<float>(folded(add(f32(a), f32(b))).f) == a + b);  // f32 arithmetic, not f64
    CHECK(std::isinf(folded(mul(f32(3e38), f32(10))).f));
    CHECK(std::isnan(folded(binary(BinaryOp::Div, f32(0), f32(0))).f));
    CHECK(folded(binary(BinaryOp::Mod, f32(7.5), f32(2))).f == 1.5);
    CHECK(folded(binary(BinaryOp::Lt, f32(NAN), f32(1))).i == 0);
    CHECK(folded(binary(BinaryOp::Ne, f32(NAN), f32(NAN))).i == 1);
    CHECK(folded(call("max", {f32(NAN), f32(2)}, F32)).f == 2);  // fmax: NaN loses
    // float -> int truncates, NaN -> 0, saturates
    CHECK(folded(cast(I32, f32(-3.9))).i == -3);
    CHECK(folded(cast(I32, f32(NAN))).i == 0);
    CHECK(folded(cast(I32, f32(1e10))).i == INT32_MAX);
    CHECK(folded(cast(U32, f32(-5))).i == 0);
    CHECK(folded(cast(U32, i32(-1))).i == 4294967295LL);
    CHECK(folded(cast(Bool, f32(NAN))).i == 1);
    // i64 -> f32 rounds once (through f64 it would round twice: to 2^60)
    const int64_t big = (int64_t{1} << 60) + (int64_t{1} << 36) + 1;
    CHECK(static_cast<float>(folded(cast(F32, i64(big))).f) == static_cast<float>(big));
    CHECK(static_cast<float>(folded(cast(F32, i64(big))).f) != static_cast<float>(static_cast<double>(big)));
    // the math library is the device's: not folded
    CHECK(simplified(call("sqrt", {f32(2)}, F32))->kind == ExprKind::Call);
    CHECK(simplified(call("exp", {f32(1)}, F32))->kind == ExprKind::Call);
}

TEST_CASE("simplify applies only identities exact for every value") {
    const ExprPtr x = param("x", I32), y = param("y", F32), c = param("c", Bool);
    CHECK(simplified(add(x, i32(0))) == x);
    CHECK(simplified(add(i32(0), x)) == x);
    CHECK(simplified(mul(i32(1), x)) == x);
    CHECK(simplified(binary(BinaryOp::Div, x, i32(1))) == x);
    CHECK(simplified(binary(BinaryOp::Shl, x, i32(32))) == x);
    CHECK(folded(mul(x, i32(0))).i == 0);
    CHECK(folded(binary(BinaryOp::And, x, i32(0))).i == 0);
    CHECK(simplified(binary(BinaryOp::And, const_int(0xffffffffLL, U32), param("u", U32)))->kind == ExprKind::Param);
    CHECK(simplified(unary(UnaryOp::Neg, unary(UnaryOp::Neg, x))) == x);
    // floats: x + 0.0 is not x (-0.0 + 0.0 is +0.0), x * 0.0 is not 0 (NaN, -0.0)
    CHECK(simplified(add(y, f32(0)))->kind == ExprKind::Binary);
    CHECK(simplified(mul(y, f32(0)))->kind == ExprKind::Binary);
    CHECK(simplified(add(y, f32(-0.0))) == y);
    CHECK(simplified(binary(BinaryOp::Sub, y, f32(0))) == y);
    CHECK(simplified(mul(y, f32(1))) == y);
    // bool, select, casts
    CHECK(simplified(binary(BinaryOp::And, c, const_bool(true))) == c);
    CHECK(folded(binary(BinaryOp::Or, c, const_bool(true))).i == 1);
    CHECK(simplified(select(const_bool(false), x, i32(4)))->i == 4);
    auto same_type = std::make_shared<Expr>(*cast(I64, x));
    same_type->type = I32;  // a cast to the operand's own type
    CHECK(simplified(same_type) == x);
    // an absorbing constant never drops a shuffle (a collective)
    CHECK(simplified(mul(shuffle(ShuffleOp::Xor, x, i32(1)), i32(0)))->kind == ExprKind::Binary);
}

TEST_CASE("simplify propagates constant lets, decides constant ifs and knows an if's condition in its branches") {
    KernelBuilder kb("prop", 32);
    kb.buffer_param("out", I32, Access::Write);
    kb.buffer_param("x", I32, Access::Read);
    kb.scalar_param("n", I64);
    ExprPtr a = kb.bind("a", i32(5));
    ExprPtr b = kb.bind("b", a);  // a variable of a variable
    ExprPtr p = kb.bind("p", add(b, i32(0)));
    kb.open();
    kb.emit(store("out", tid64(), mul(p, load("x", tid64(), I32))));
    auto then_body = kb.close();
    kb.open();
    kb.emit(store("out", tid64(), i32(0)));
    auto else_body = kb.close();
    kb.emit(if_then(binary(BinaryOp::Gt, b, i32(3)), then_body, else_body));
    // if (ok) ... else if (!ok) error: the inner test is known
    ExprPtr ok = kb.bind("ok", binary(BinaryOp::Lt, tid64(), param("n", I64)));
    int check = kb.add_check("index out of bounds", Loc{});
    kb.open();
    kb.emit(store("out", tid64(), i32(1)));
    auto in_range = kb.close();
    kb.open();
    kb.emit(if_then(unary(UnaryOp::Not, ok), {error(check, tid64(), param("n", I64))}));
    auto out_of_range = kb.close();
    kb.emit(if_then(ok, in_range, out_of_range));
    const Kernel k = simplify(kb.finish());
    INFO(to_string(k));
    const auto& ss = statements(k);
    REQUIRE(ss.size() == 3);
    CHECK(to_string(ss[0]->exprs[1]) == "5 * x[i64(threadIdx)]");  // no let a, b, p; no if (5 > 3)
    REQUIRE(ss[2]->kind == StmtKind::If);
    REQUIRE(ss[2]->else_body.size() == 1);
    CHECK(ss[2]->else_body[0]->kind == StmtKind::Error);
    check_compiles(k);
}

// ---------------------------------------------------------------- cse
TEST_CASE("cse: x * x over a fused load loads x once (executor counters)") {
    const int64_t n = 10000;
    auto x = random_vector<float>(n, 7, -2, 2);
    PullArray squared = zip_with(vec("x", F32), vec("x", F32), mul);  // two loads of x[i]
    PlanBuilder pb("sq");
    lower_map(pb, "sq", tuple_of(squared), {"out"});
    const LaunchPlan plan = optimized(pb);
    INFO(to_string(plan.kernels[0]));
    CHECK(count_loads(plan.kernels[0], "x") == 1);
    auto r = run(plan, Args().buffer("x", x).scalar("n", n));
    CHECK(r.total.global_bytes_loaded == 4 * n);  // 8n before the passes
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] * x[i];
    check_close(output<float>(r, "out"), want);
}

TEST_CASE("cse: a tuple fused twice into one consumer is computed once") {
    const int64_t n = 3000;
    auto x = random_vector<float>(n, 8, 0, 4);
    PullTuple t;
    t.shape = {param("n", I64)};
    t.elems = {F32, F32};
    t.at = [](KernelBuilder& kb, const std::vector<ExprPtr>& i) {
        kb.buffer_param("x", F32, Access::Read);
        ExprPtr s = kb.bind("s", call("sqrt", {load("x", i[0], F32)}, F32));
        return std::vector<ExprPtr>{add(s, f32(1)), mul(s, f32(2))};
    };
    auto component = [t](size_t c) {
        return PullArray{t.shape, F32, [t, c](KernelBuilder& kb, const std::vector<ExprPtr>& i) { return t.at(kb, i)[c]; }};
    };
    PlanBuilder pb("both");
    lower_map(pb, "both", tuple_of(zip_with(component(0), component(1), add)), {"out"});
    const LaunchPlan plan = optimized(pb);
    INFO(to_string(plan.kernels[0]));
    CHECK(count_loads(plan.kernels[0], "x") == 1);
    CHECK(!mentions(plan.kernels[0], "let s1"));  // the second copy of s is gone
    auto r = run(plan, Args().buffer("x", x).scalar("n", n));
    CHECK(r.total.global_bytes_loaded == 4 * n);
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = (std::sqrt(x[i]) + 1) + std::sqrt(x[i]) * 2;
    check_close(output<float>(r, "out"), want, 1e-6);
}

TEST_CASE("cse: a store between two loads of a written buffer keeps both loads") {
    // out[t] = t; p = out[t] + 1; [out[t] = 7;] q = out[t] + 1; out[t] = p + q
    auto build = [](bool store_between) {
        KernelBuilder kb(store_between ? "reload" : "reuse", 32);
        kb.buffer_param("out", I32, Access::ReadWrite);
        kb.emit(store("out", tid64(), thread_idx()));
        ExprPtr p = kb.bind("p", add(load("out", tid64(), I32), i32(1)));
        if (store_between) kb.emit(store("out", tid64(), i32(7)));
        ExprPtr q = kb.bind("q", add(load("out", tid64(), I32), i32(1)));
        kb.emit(store("out", tid64(), add(p, q)));
        return kb.finish();
    };
    const Kernel reload = eliminate_common_subexpressions(build(true));
    const Kernel reuse = eliminate_common_subexpressions(build(false));
    CHECK(count_loads(reload, "out") == 2);
    CHECK(count_loads(reuse, "out") == 1);
    CHECK(to_string(statements(reuse).back()->exprs[1]) == "p + p");
    for (const Kernel& k : {build(true), build(false)}) {
        auto r = run(one_launch(k, I32, 32), Args());
        std::vector<int32_t> want(32);
        for (int t = 0; t < 32; ++t) want[t] = t + 1 + (k.name == "reload" ? 8 : t + 1);
        check_close(output<int32_t>(r, "out"), want);
    }
}

TEST_CASE("cse: loads under an if stay there; values from one branch are not seen after it") {
    // if (t < n) { a = x[t] * x[t] }  b = x[t] * x[t]
    KernelBuilder kb("guard", 64);
    kb.buffer_param("out", F32, Access::Write);
    kb.buffer_param("x", F32, Access::Read);
    const ExprPtr n = param("n", I64);
    kb.scalar_param("n", I64);
    const ExprPtr sq = mul(load("x", tid64(), F32), load("x", tid64(), F32));
    kb.open();
    kb.emit(store("out", tid64(), sq));
    auto guarded = kb.close();
    kb.emit(if_then(binary(BinaryOp::Lt, tid64(), n), guarded));
    kb.emit(store("out", i64(0), sq));
    const Kernel k = eliminate_common_subexpressions(kb.finish());
    INFO(to_string(k));
    const auto& ss = statements(k);
    REQUIRE(ss.size() == 3);
    REQUIRE(ss[0]->kind == StmtKind::If);
    CHECK(count_loads(k, "x") == 2);  // once in the if (shared by the product), once after it
    REQUIRE(ss[0]->body.size() == 2);
    CHECK(ss[0]->body[0]->kind == StmtKind::Let);  // the guarded load is bound inside the if
    CHECK(ss[1]->kind == StmtKind::Let);
    CHECK(to_string(ss[2]->exprs[1]) == to_string(var(ss[1]->name, F32)) + " * " + ss[1]->name);
    check_compiles(k);
}

TEST_CASE("cse: inside a loop, reuses values the loop cannot change and only those") {
    // s = 0; a = s * 3; b = x[0] * 3.0
    // for k in [0, 4): s = s + 1; out[k] = s * 3; out[k + 4] = x[0] * 3.0
    KernelBuilder kb("loop", 1);
    kb.buffer_param("out", F32, Access::Write);
    kb.buffer_param("x", F32, Access::Read);
    ExprPtr s = kb.bind("s", i32(0));
    ExprPtr a = kb.bind("a", mul(s, i32(3)));
    ExprPtr b = kb.bind("b", mul(load("x", i64(0), F32), f32(3)));
    kb.emit(store("out", i64(8), add(cast(F32, a), b)));
    kb.open();
    const ExprPtr k = var("k", I64);
    kb.emit(assign("s", add(s, i32(1))));
    kb.emit(store("out", k, cast(F32, mul(s, i32(3)))));
    kb.emit(store("out", add(k, i64(4)), mul(load("x", i64(0), F32), f32(3))));
    kb.emit(for_loop("k", i64(0), i64(4), i64(1), kb.close()));
    const Kernel opt = eliminate_common_subexpressions(kb.finish());
    INFO(to_string(opt));
    const StmtPtr& loop = statements(opt).back();
    REQUIRE(loop->kind == StmtKind::For);
    CHECK(to_string(loop->body[1]->exprs[1]) == "f32(s * 3)");  // s changes in the loop: recomputed
    CHECK(to_string(loop->body[2]->exprs[1]) == "b");           // x is read-only, nothing changes: reused
    std::vector<float> x = {2.0f};
    auto r = run(one_launch(opt, F32, 9), Args().buffer("x", x));
    check_close(output<float>(r, "out"), {3, 6, 9, 12, 6, 6, 6, 6, 6});
}

TEST_CASE("cse: a load of memory the kernel writes is never reused across a loop boundary (spin-wait)") {
    // seen = flag[0]; done = false; while (!done) { done = flag[0] != 0 }
    KernelBuilder kb("spin", 32);
    kb.buffer_param("flag", I32, Access::ReadWrite);
    kb.buffer_param("out", I32, Access::Write);
    ExprPtr seen = kb.bind("seen", load("flag", i64(0), I32));
    ExprPtr done = kb.bind("done", const_bool(false));
    kb.open();
    kb.emit(assign("done", binary(BinaryOp::Ne, load("flag", i64(0), I32), i32(0))));
    kb.emit(while_loop(unary(UnaryOp::Not, done), kb.close()));
    kb.emit(store("out", tid64(), seen));
    const Kernel k = eliminate_common_subexpressions(kb.finish());
    INFO(to_string(k));
    CHECK(count_loads(k, "flag") == 2);  // another block may set the flag while this one waits
}

TEST_CASE("cse keeps shuffles under warp-uniform control: the bound condition stays warp-uniform") {
    // if (threadIdx / 32 == 0) out[t] = shfl_xor(x[t] * x[t], 1)   (twice)
    KernelBuilder kb("warp", 64);
    kb.buffer_param("out", F32, Access::Write);
    kb.buffer_param("x", F32, Access::Read);
    for (int k = 0; k < 2; ++k) {
        const ExprPtr first_warp = binary(BinaryOp::Eq, binary(BinaryOp::Div, thread_idx(), i32(32)), i32(0));
        const ExprPtr sq = mul(load("x", tid64(), F32), load("x", tid64(), F32));
        kb.open();
        kb.emit(store("out", tid64(), add(shuffle(ShuffleOp::Xor, sq, i32(1)), f32(k))));
        kb.emit(if_then(first_warp, kb.close()));
    }
    const Kernel k = optimize_kernel(kb.finish());  // verify runs last: the uniformity rule still holds
    INFO(to_string(k));
    CHECK(statements(k)[0]->kind == StmtKind::Let);  // the condition, computed once
    std::vector<float> x(64);
    for (int i = 0; i < 64; ++i) x[i] = static_cast<float>(i);
    auto r = run(one_launch(k, F32, 64), Args().buffer("x", x));
    const std::vector<float> out = output<float>(r, "out");
    for (int t = 0; t < 32; ++t) CHECK(out[t] == static_cast<float>((t ^ 1) * (t ^ 1) + 1));
}

// ---------------------------------------------------------------- dead code
TEST_CASE("dead code: a fused tuple's unused component disappears") {
    const int64_t n = 5000;
    auto x = random_vector<float>(n, 9, 0, 1);
    auto y = random_vector<float>(n, 10, 0, 1);
    PullTuple t;
    t.shape = {param("n", I64)};
    t.elems = {F32, F32};
    t.at = [](KernelBuilder& kb, const std::vector<ExprPtr>& i) {
        kb.buffer_param("x", F32, Access::Read);
        kb.buffer_param("y", F32, Access::Read);
        ExprPtr r = kb.bind("r", call("sqrt", {load("y", i[0], F32)}, F32));  // component 1 only
        ExprPtr e = kb.bind("e", call("exp", {r}, F32));
        ExprPtr m = kb.bind("m", f32(0));  // an if assigning it, also only for component 1
        kb.open();
        kb.emit(assign("m", e));
        kb.emit(if_then(binary(BinaryOp::Gt, e, f32(2)), kb.close()));
        return std::vector<ExprPtr>{add(load("x", i[0], F32), f32(1)), mul(m, r)};
    };
    PullArray first{t.shape, F32, [t](KernelBuilder& kb, const std::vector<ExprPtr>& i) { return t.at(kb, i)[0]; }};
    PlanBuilder pb("first");
    lower_map(pb, "first", tuple_of(first), {"out"});
    const LaunchPlan plan = optimized(pb);
    INFO(to_string(plan.kernels[0]));
    CHECK(count_loads(plan.kernels[0], "y") == 0);
    CHECK(!mentions(plan.kernels[0], "sqrt"));
    CHECK(!mentions(plan.kernels[0], "exp"));
    CHECK(!mentions(plan.kernels[0], "if "));
    auto r = run(plan, Args().buffer("x", x).buffer("y", y).scalar("n", n));
    CHECK(r.total.global_bytes_loaded == 4 * n);  // x only
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] + 1;
    check_close(output<float>(r, "out"), want);
}

TEST_CASE("dead code keeps effects: stores, atomics (unread result dropped), checks, while loops, comments") {
    KernelBuilder kb("effects", 32);
    kb.buffer_param("out", I32, Access::ReadWrite);
    kb.scalar_param("n", I64);
    int check = kb.add_check("index out of bounds", Loc{});
    kb.emit(comment("the source expression"));
    ExprPtr acc = kb.bind("acc", i32(0));
    kb.emit(assign("acc", add(acc, thread_idx())));  // read only by itself: dead
    ExprPtr old = kb.bind("old", i32(0));
    kb.emit(atomic(AtomicOp::Add, "out", i64(0), i32(1), I32, old->name));  // old never read
    ExprPtr spin = kb.bind("spin", const_bool(false));
    kb.open();
    kb.emit(assign("spin", const_bool(false)));
    kb.emit(while_loop(spin, kb.close()));
    kb.open();
    kb.emit(error(check, tid64(), param("n", I64)));
    kb.emit(if_then(binary(BinaryOp::Ge, tid64(), param("n", I64)), kb.close()));
    kb.open();
    kb.emit(if_then(binary(BinaryOp::Lt, tid64(), i64(3)), {}));  // an empty if in a loop: both go
    kb.emit(for_loop("k", i64(0), i64(4), i64(1), kb.close()));
    const Kernel k = eliminate_dead_code(kb.finish());
    INFO(to_string(k));
    CHECK(!mentions(k, "acc"));
    CHECK(!mentions(k, "old"));
    CHECK(mentions(k, "atomic_add(out[0L], 1)"));
    CHECK(mentions(k, "// the source expression"));
    CHECK(mentions(k, "while spin"));
    CHECK(mentions(k, "error 0"));
    CHECK(!mentions(k, "for k"));
    check_compiles(k);
}

TEST_CASE("dead code removes emptied phases with their barriers, and keeps the rest in order") {
    KernelBuilder kb("phases", 64);
    kb.buffer_param("out", F32, Access::Write);
    kb.shared_array("tile", F32, 64);
    const auto shared = MemSpace::Shared;
    kb.emit(store("tile", thread_idx(), f32(1), shared));
    kb.end_phase();
    kb.bind("unused", load("tile", thread_idx(), F32, shared));  // a whole phase of dead code
    kb.end_phase();
    kb.emit(store("out", tid64(), load("tile", binary(BinaryOp::Sub, i32(63), thread_idx()), F32, shared)));
    const Kernel k = eliminate_dead_code(kb.finish());
    INFO(to_string(k));
    CHECK(k.body.size() == 2);
    auto r = run(one_launch(k, F32, 64), Args());
    CHECK(r.total.barriers == 1);
    check_close(output<float>(r, "out"), std::vector<float>(64, 1.0f));
}

// ---------------------------------------------------------------- the pipeline
TEST_CASE("pipeline: every plan kernel is optimised; SHOAL_DUMP_IR lists the IR after each pass") {
    std::vector<std::string> names;
    for (const KernelPass& p : kernel_passes()) names.push_back(p.name);
    CHECK(names == std::vector<std::string>{"verify", "simplify", "cse", "simplify", "dead_code", "verify"});

    std::ostringstream captured;
    std::streambuf* saved = std::cerr.rdbuf(captured.rdbuf());
    setenv("SHOAL_DUMP_IR", "1", 1);
    PlanBuilder pb("dump");
    lower_map(pb, "dumped", tuple_of(zip_with(vec("x", F32), vec("x", F32), mul)), {"out"});
    const LaunchPlan plan = optimized(pb);
    unsetenv("SHOAL_DUMP_IR");
    std::cerr.rdbuf(saved);

    const std::string dump = captured.str();
    INFO(dump);
    size_t at = 0;
    for (const std::string& pass : names) {
        at = dump.find("// SHOAL_DUMP_IR dumped after " + pass + "\nkernel dumped", at);
        REQUIRE(at != std::string::npos);
        ++at;
    }
    // The last dump is the kernel the plan holds.
    CHECK(dump.substr(dump.rfind("kernel dumped")) == to_string(plan.kernels[0]));
    CHECK(count_loads(plan.kernels[0], "x") == 1);
}

TEST_CASE("pipeline: a pass switched off does not run; results stay the same") {
    auto build = [] {
        PlanBuilder pb("square");
        lower_map(pb, "sq", tuple_of(zip_with(vec("x", F32), vec("x", F32), mul)), {"out"});
        return pb;
    };
    const LaunchPlan all = optimized(build());
    const LaunchPlan no_cse = optimized(build(), PassOptions{}.disable("cse"));
    CHECK(count_loads(all.kernels[0], "x") == 1);
    CHECK(count_loads(no_cse.kernels[0], "x") == 2);  // x * x reads x twice without CSE
    CHECK(PassOptions{}.key() != PassOptions{}.disable("cse").key());
    CHECK_THROWS_AS(PassOptions{}.disable("verify"), Error);  // the passes' proof cannot be switched off
    CHECK_THROWS_AS(PassOptions{}.disable("fusion"), Error);  // not a pass of the pipeline

    const int64_t n = 1000;
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = 0.25f * static_cast<float>(i);
    const PlanResult with = run_as_is(all, Args().buffer("x", x).scalar("n", n));
    const PlanResult without = run_as_is(no_cse, Args().buffer("x", x).scalar("n", n));
    CHECK(with.total.global_bytes_loaded == 4 * n);
    CHECK(without.total.global_bytes_loaded == 8 * n);
    CHECK(output<float>(with, "out") == output<float>(without, "out"));
}
