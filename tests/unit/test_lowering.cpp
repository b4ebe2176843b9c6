// Lowerings of array primitives to launch plans, run on the CPU executor in
// checking mode and compared with straightforward C++ references; plus the
// structural facts the design promises (kernel counts, memory traffic, no
// source-selecting conditionals in push arrays).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "codegen/ir_visitor.h"
#include "lowering_harness.h"

using namespace shoal;
using namespace shoal::ir;
using namespace shoal::lowering_test;

namespace {

// Sizes around the block (256) and tile (256 * 8) boundaries, and large ones.
const std::vector<int64_t> kSizes = {0, 1, 2, 31, 255, 256, 257, 2047, 2048, 2049, 4097, 100003, 1000000};

std::vector<char> random_flags(int64_t n, uint32_t seed, double p) {
    std::mt19937 rng(seed);
    std::vector<char> v(static_cast<size_t>(n));
    for (auto& x : v) x = std::bernoulli_distribution(p)(rng);
    return v;
}

// "The first non-zero": associative, NOT commutative, neutral 0.
Combine first_nonzero(ScalarType t) {
    return combine_of(t, const_int(0, t), [t](KernelBuilder&, ExprPtr a, ExprPtr b) {
        return select(binary(BinaryOp::Ne, a, const_int(0, t)), a, b);
    });
}

int64_t count_kernels(const LaunchPlan& p) { return static_cast<int64_t>(p.kernels.size()); }

}  // namespace

// ---------------------------------------------------------------- host expressions
TEST_CASE("launch plan: host expressions evaluate and print") {
    auto n = param("n", ScalarType::I64);
    auto grid = min_expr(ceil_div(n, i64(1024)), i64(1024));
    auto lookup = [](const std::string&) { return HostValue{ScalarType::I64, 5000, 0}; };
    CHECK(eval_host_int(grid, lookup) == 5);
    CHECK(host_expr_string(grid) == "min((n + 1023) / 1024, 1024)");
    CHECK(eval_host_int(binary(BinaryOp::Div, n, i64(0)), lookup) == 0);
}

// ---------------------------------------------------------------- map
TEST_CASE("map: a tuple-valued map is one kernel with two outputs") {
    for (int64_t n : kSizes) {
        CAPTURE(n);
        auto x = random_vector<float>(n, 1, -10, 10);
        auto y = random_vector<float>(n, 2, -10, 10);
        PlanBuilder pb("sum_diff");
        PullArray px = vec("x", ScalarType::F32), py = vec("y", ScalarType::F32);
        // One `at` for both components: x[i] and y[i] are loaded once (let-bound).
        PullTuple t;
        t.shape = px.shape;
        t.elems = {ScalarType::F32, ScalarType::F32};
        t.at = [px, py](KernelBuilder& kb, const std::vector<ExprPtr>& i) {
            ExprPtr a = kb.bind("xv", px.at(kb, i)), b = kb.bind("yv", py.at(kb, i));
            return std::vector<ExprPtr>{binary(BinaryOp::Add, a, b), binary(BinaryOp::Sub, a, b)};
        };
        lower_map(pb, "sum_diff", t, {"s", "d"});
        LaunchPlan plan = pb.finish();
        CHECK(count_kernels(plan) == 1);
        auto r = run(plan, Args().buffer("x", x).buffer("y", y).scalar("n", n));
        std::vector<float> s(x.size()), d(x.size());
        for (size_t i = 0; i < x.size(); ++i) s[i] = x[i] + y[i], d[i] = x[i] - y[i];
        check_close(output<float>(r, "s"), s);
        check_close(output<float>(r, "d"), d);
        if (n > 0) {
            CHECK(r.total.global_bytes_loaded == 8 * n);   // x and y once each
            CHECK(r.total.global_bytes_stored == 8 * n);
        }
    }
}

TEST_CASE("map: rank 2 indices") {
    const int64_t rows = 37, cols = 301;
    PlanBuilder pb("coords");
    PullArray g;
    g.shape = {param("rows", ScalarType::I64), param("cols", ScalarType::I64)};
    g.elem = ScalarType::I64;
    g.at = [](KernelBuilder&, const std::vector<ExprPtr>& i) {
        return binary(BinaryOp::Add, binary(BinaryOp::Mul, i[0], i64(1000)), i[1]);
    };
    lower_map(pb, "coords", tuple_of(g), {"out"});
    auto r = run(pb.finish(), Args().scalar("rows", rows).scalar("cols", cols));
    std::vector<int64_t> want;
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) want.push_back(i * 1000 + j);
    check_close(output<int64_t>(r, "out"), want);
}

// ---------------------------------------------------------------- reduce
template <class T> void test_reduce_vector(AssocOp op, T lo, T hi, double rel) {
    for (int64_t n : kSizes) {
        CAPTURE(n);
        auto x = random_vector<T>(n, 7 + static_cast<uint32_t>(n), lo, hi);
        PlanBuilder pb("r");
        lower_reduce(pb, "r", vec("x", type_of<T>()), known_combine(op, type_of<T>()), "out");
        LaunchPlan plan = pb.finish();
        CHECK(count_kernels(plan) == 2);
        auto r = run(plan, Args().buffer("x", x).scalar("n", n));
        T want;
        switch (op) {
            case AssocOp::Add: want = std::accumulate(x.begin(), x.end(), T(0)); break;
            case AssocOp::Min:
                want = std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
                for (T v : x) want = std::min(want, v);
                break;
            default:
                want = std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
                for (T v : x) want = std::max(want, v);
                break;
        }
        check_close(output<T>(r, "out"), std::vector<T>{want}, rel);
    }
}

TEST_CASE("reduce: sum, min, max of vectors (exact for integers, tolerance for floats)") {
    test_reduce_vector<int32_t>(AssocOp::Add, -1000000, 1000000, 0);  // wraps like the left fold
    test_reduce_vector<int64_t>(AssocOp::Max, -1000000000000, 1000000000000, 0);
    test_reduce_vector<int32_t>(AssocOp::Min, -5, 1000, 0);
    test_reduce_vector<float>(AssocOp::Max, -1, 1, 0);
    test_reduce_vector<double>(AssocOp::Add, -1, 1, 1e-9);
    test_reduce_vector<float>(AssocOp::Add, 0, 1, 1e-4);
}

TEST_CASE("reduce: rank 2 gives one value per row, empty rows give the neutral element") {
    for (auto entry :
         std::vector<std::pair<int64_t, int64_t>>{{0, 5}, {3, 0}, {1, 1}, {7, 255}, {5, 2049}, {300, 33}, {40, 1024}, {9, 1025}}) {
        auto rows = entry.first;  // not a structured binding: clang 14 cannot capture those
        auto cols = entry.second;
        CAPTURE(rows);
        CAPTURE(cols);
        auto x = random_vector<int32_t>(rows * cols, 3, -100, 100);
        for (bool ordered : {false, true}) {
            PlanBuilder pb("rows");
            Combine op = ordered ? first_nonzero(ScalarType::I32) : known_combine(AssocOp::Add, ScalarType::I32);
            lower_reduce(pb, "rows", buffer_array("x", ScalarType::I32, {"rows", "cols"}), op, "out");
            LaunchPlan plan = pb.finish();
            // A thread per short row, a warp per row of up to 1024, a block per
            // longer one (the GPU's forms): the row length chooses.
            CHECK(count_kernels(plan) == 3);
            auto r = run(plan, Args().buffer("x", x).scalar("rows", rows).scalar("cols", cols));
            const int form = cols <= 32 ? 0 : cols <= 1024 ? 1 : 2;
            for (int k = 0; k < 3; ++k) CHECK(r.kernel_counters[size_t(k)].launches == (form == k && rows > 0 ? 1 : 0));
            std::vector<int32_t> want(static_cast<size_t>(rows), 0);
            for (int64_t i = 0; i < rows; ++i)
                for (int64_t j = 0; j < cols; ++j) {
                    int32_t v = x[static_cast<size_t>(i * cols + j)];
                    auto& w = want[static_cast<size_t>(i)];
                    w = ordered ? (w != 0 ? w : v) : w + v;
                }
            check_close(output<int32_t>(r, "out"), want);
        }
    }
}

TEST_CASE("reduce: a non-commutative operator is folded in order") {
    for (int64_t n : kSizes) {
        CAPTURE(n);
        auto x = random_vector<int32_t>(n, 11, -3, 3);
        for (auto& v : x) v = v > 1 ? v : 0;  // mostly zeros: the first non-zero is far in
        PlanBuilder pb("first");
        lower_reduce(pb, "first", vec("x", ScalarType::I32), first_nonzero(ScalarType::I32), "out");
        auto r = run(pb.finish(), Args().buffer("x", x).scalar("n", n));
        int32_t want = 0;
        for (int32_t v : x)
            if (want == 0) want = v;
        check_close(output<int32_t>(r, "out"), {want});
    }
}

TEST_CASE("reduce: tuples (argmax as (value, index) pairs) in one pass") {
    for (int64_t n : {int64_t{1}, int64_t{300}, int64_t{5000}, int64_t{100000}}) {
        CAPTURE(n);
        auto x = random_vector<int32_t>(n, 5, -1000, 1000);
        Combine argmax;
        argmax.types = {ScalarType::I32, ScalarType::I64};
        argmax.neutral = {const_int(INT32_MIN, ScalarType::I32), i64(-1)};
        argmax.commutative = true;  // ties go to the smaller index, whatever the order
        argmax.fn = [](KernelBuilder&, const std::vector<ExprPtr>& a, const std::vector<ExprPtr>& b) {
            ExprPtr take_b = binary(BinaryOp::Or, binary(BinaryOp::Gt, b[0], a[0]),
                                    binary(BinaryOp::And, binary(BinaryOp::Eq, b[0], a[0]),
                                           binary(BinaryOp::And, binary(BinaryOp::Ge, b[1], i64(0)),
                                                  binary(BinaryOp::Or, binary(BinaryOp::Lt, b[1], a[1]),
                                                         binary(BinaryOp::Lt, a[1], i64(0))))));
            return std::vector<ExprPtr>{select(take_b, b[0], a[0]), select(take_b, b[1], a[1])};
        };
        PullTuple src;
        src.shape = {param("n", ScalarType::I64)};
        src.elems = argmax.types;
        PullArray px = vec("x", ScalarType::I32);
        src.at = [px](KernelBuilder& kb, const std::vector<ExprPtr>& i) {
            return std::vector<ExprPtr>{px.at(kb, i), i[0]};
        };
        PlanBuilder pb("argmax");
        lower_reduce(pb, "argmax", src, argmax, {"v", "k"});
        auto r = run(pb.finish(), Args().buffer("x", x).scalar("n", n));
        auto it = std::max_element(x.begin(), x.end());
        check_close(output<int32_t>(r, "v"), {*it});
        check_close(output<int64_t>(r, "k"), {static_cast<int64_t>(it - x.begin())});
    }
}

TEST_CASE("fusion: RMSE-like sum (map (d*d) (x - y)) is one reduce plan loading ~8n bytes") {
    const int64_t n = 1 << 20;
    auto x = random_vector<float>(n, 1, 0, 1);
    auto y = random_vector<float>(n, 2, 0, 1);
    PullArray d = zip_with(vec("x", ScalarType::F32), vec("y", ScalarType::F32),
                           [](ExprPtr a, ExprPtr b) { return binary(BinaryOp::Sub, a, b); });
    PullArray sq = map_array(d, ScalarType::F32, [](KernelBuilder& kb, ExprPtr v) {
        ExprPtr s = kb.bind("d", v);  // shared: computed once
        return binary(BinaryOp::Mul, s, s);
    });
    PlanBuilder pb("rmse");
    lower_reduce(pb, "rmse", sq, known_combine(AssocOp::Add, ScalarType::F32), "out");
    LaunchPlan plan = pb.finish();
    CHECK(count_kernels(plan) == 2);
    auto r = run(plan, Args().buffer("x", x).buffer("y", y).scalar("n", n));
    double want = 0;
    for (int64_t i = 0; i < n; ++i) want += double(x[i] - y[i]) * double(x[i] - y[i]);
    CHECK(output<float>(r, "out")[0] == doctest::Approx(want).epsilon(1e-4));
    // 8n for x and y, plus 4 bytes per block partial.
    CHECK(r.total.global_bytes_loaded >= 8 * n);
    CHECK(r.total.global_bytes_loaded <= 8 * n + 4 * 1024);
    // The `:cuda` launch-plan view names the grid formulas.
    const std::string view = to_string(plan);
    CHECK(view.find(". long long rmse_blocks = min((n + 4095) / 4096, 1024)") != std::string::npos);
    // One block's partial is the result: pass 2 runs only for several (or none).
    CHECK(view.find("launch rmse<<<(rmse_blocks == 1) ? 0 : 1, 256>>>") != std::string::npos);
}

// ---------------------------------------------------------------- scan
template <class T> std::vector<T> ref_scan(const std::vector<T>& x, int64_t cols, bool exclusive,
                                           const std::vector<char>* flags, const std::function<T(T, T)>& f, T z) {
    std::vector<T> out(x.size());
    T acc = z;
    for (size_t i = 0; i < x.size(); ++i) {
        if (cols > 0 && i % static_cast<size_t>(cols) == 0) acc = z;
        if (flags && (*flags)[i]) acc = z;
        if (exclusive) {
            out[i] = acc;
            acc = f(acc, x[i]);
        } else {
            acc = f(acc, x[i]);
            out[i] = acc;
        }
    }
    return out;
}

TEST_CASE("scan: inclusive and exclusive sums of vectors (three kernels, exact for integers)") {
    for (int64_t n : kSizes) {
        CAPTURE(n);
        auto x = random_vector<int32_t>(n, 21, -1000, 1000);
        for (ScanKind kind : {ScanKind::Inclusive, ScanKind::Exclusive}) {
            PlanBuilder pb("scan");
            lower_scan(pb, "scan", vec("x", ScalarType::I32), known_combine(AssocOp::Add, ScalarType::I32), kind, "out");
            LaunchPlan plan = pb.finish();
            CHECK(count_kernels(plan) == 3);
            auto r = run(plan, Args().buffer("x", x).scalar("n", n));
            check_close(output<int32_t>(r, "out"),
                        ref_scan<int32_t>(x, 0, kind == ScanKind::Exclusive, nullptr, std::plus<int32_t>(), 0));
        }
    }
}

TEST_CASE("scan: float sums within tolerance; a non-commutative operator in order") {
    for (int64_t n : {int64_t{1000}, int64_t{70001}}) {
        auto x = random_vector<double>(n, 4, 0, 1);
        PlanBuilder pb("fscan");
        lower_scan(pb, "fscan", vec("x", ScalarType::F64), known_combine(AssocOp::Add, ScalarType::F64),
                   ScanKind::Inclusive, "out");
        auto r = run(pb.finish(), Args().buffer("x", x).scalar("n", n));
        check_close(output<double>(r, "out"), ref_scan<double>(x, 0, false, nullptr, std::plus<double>(), 0), 1e-10);

        auto y = random_vector<int32_t>(n, 9, -2, 2);
        for (auto& v : y) v = v == 2 ? v : 0;
        PlanBuilder pb2("first");
        lower_scan(pb2, "first", vec("y", ScalarType::I32), first_nonzero(ScalarType::I32), ScanKind::Exclusive, "out");
        auto r2 = run(pb2.finish(), Args().buffer("y", y).scalar("n", n));
        auto f = [](int32_t a, int32_t b) { return a != 0 ? a : b; };
        check_close(output<int32_t>(r2, "out"), ref_scan<int32_t>(y, 0, true, nullptr, f, 0));
    }
}

TEST_CASE("scan: rank 2 scans each row (inclusive and exclusive)") {
    for (auto entry : std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, 0}, {1, 1}, {3, 2049}, {513, 7}, {40, 300}}) {
        auto rows = entry.first;  // not a structured binding: clang 14 cannot capture those
        auto cols = entry.second;
        CAPTURE(rows);
        CAPTURE(cols);
        auto x = random_vector<int64_t>(rows * cols, 8, -50, 50);
        for (ScanKind kind : {ScanKind::Inclusive, ScanKind::Exclusive}) {
            PlanBuilder pb("rscan");
            lower_scan(pb, "rscan", buffer_array("x", ScalarType::I64, {"rows", "cols"}),
                       known_combine(AssocOp::Max, ScalarType::I64), kind, "out");
            auto r = run(pb.finish(), Args().buffer("x", x).scalar("rows", rows).scalar("cols", cols));
            auto mx = [](int64_t a, int64_t b) { return std::max(a, b); };
            check_close(output<int64_t>(r, "out"),
                        ref_scan<int64_t>(x, cols, kind == ScanKind::Exclusive, nullptr, mx, INT64_MIN));
        }
    }
}

TEST_CASE("segscan: restarts at flags (flag-value operator transformation)") {
    for (int64_t n : kSizes) {
        CAPTURE(n);
        auto x = random_vector<int32_t>(n, 31, -100, 100);
        auto flags = random_flags(n, 32, n > 100000 ? 0.00001 : 0.01);
        PlanBuilder pb("seg");
        lower_segscan(pb, "seg", vec("flags", ScalarType::Bool), vec("x", ScalarType::I32),
                      known_combine(AssocOp::Add, ScalarType::I32), "out");
        auto r = run(pb.finish(), Args().buffer("x", x).flags("flags", flags).scalar("n", n));
        check_close(output<int32_t>(r, "out"), ref_scan<int32_t>(x, 0, false, &flags, std::plus<int32_t>(), 0));
    }
}

TEST_CASE("scan: the CPU form (one thread per 65536-element chunk, in order) gives the left fold's results") {
    LoweringOptions cpu;
    cpu.cpu_cores = 2;
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{65535}, int64_t{65536}, int64_t{65537}, int64_t{200001}}) {
        CAPTURE(n);
        auto x = random_vector<int32_t>(n, 51, -1000, 1000);
        for (ScanKind kind : {ScanKind::Inclusive, ScanKind::Exclusive}) {
            PlanBuilder pb("cscan");
            lower_scan(pb, "cscan", vec("x", ScalarType::I32), known_combine(AssocOp::Add, ScalarType::I32), kind, "out", cpu);
            LaunchPlan plan = pb.finish();
            CHECK(plan.kernels[0].block_size == 1);  // the CPU form, not tiles
            auto r = run(plan, Args().buffer("x", x).scalar("n", n));
            check_close(output<int32_t>(r, "out"),
                        ref_scan<int32_t>(x, 0, kind == ScanKind::Exclusive, nullptr, std::plus<int32_t>(), 0));
        }
        // Flags restart it across chunk boundaries too; a non-commutative operator stays in order.
        auto flags = random_flags(n, 52, 0.0001);
        PlanBuilder pb("cseg");
        lower_segscan(pb, "cseg", vec("flags", ScalarType::Bool), vec("x", ScalarType::I32),
                      known_combine(AssocOp::Add, ScalarType::I32), "out", cpu);
        auto r = run(pb.finish(), Args().buffer("x", x).flags("flags", flags).scalar("n", n));
        check_close(output<int32_t>(r, "out"), ref_scan<int32_t>(x, 0, false, &flags, std::plus<int32_t>(), 0));
        auto y = random_vector<int32_t>(n, 53, -2, 2);
        for (auto& v : y) v = v == 2 ? v : 0;
        PlanBuilder pb2("cfirst");
        lower_scan(pb2, "cfirst", vec("y", ScalarType::I32), first_nonzero(ScalarType::I32), ScanKind::Exclusive, "out", cpu);
        auto r2 = run(pb2.finish(), Args().buffer("y", y).scalar("n", n));
        auto f = [](int32_t a, int32_t b) { return a != 0 ? a : b; };
        check_close(output<int32_t>(r2, "out"), ref_scan<int32_t>(y, 0, true, nullptr, f, 0));
    }
    // Rows: each row restarts, whatever the chunks.
    auto x = random_vector<int64_t>(700 * 300, 54, -50, 50);
    PlanBuilder pb("crows");
    lower_scan(pb, "crows", buffer_array("x", ScalarType::I64, {"rows", "cols"}), known_combine(AssocOp::Max, ScalarType::I64),
               ScanKind::Exclusive, "out", cpu);
    auto r = run(pb.finish(), Args().buffer("x", x).scalar("rows", int64_t{700}).scalar("cols", int64_t{300}));
    auto mx = [](int64_t a, int64_t b) { return std::max(a, b); };
    check_close(output<int64_t>(r, "out"), ref_scan<int64_t>(x, 300, true, nullptr, mx, INT64_MIN));
}

// ---------------------------------------------------------------- permute, scatter, gather
TEST_CASE("permute: histograms with native atomics and compare-and-swap loops") {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{257}, int64_t{5000}, int64_t{200000}}) {
        CAPTURE(n);
        const int64_t m = 97;
        auto target = random_vector<int32_t>(n, 41, -5, 101);  // some out of range: dropped
        {
            auto dest = random_vector<int32_t>(m, 42, 0, 10);
            auto vals = random_vector<int32_t>(n, 43, -100, 100);
            PlanBuilder pb("hist");
            lower_permute(pb, "hist", vec("dest", ScalarType::I32, "m"), vec("target", ScalarType::I32),
                          vec("vals", ScalarType::I32), known_combine(AssocOp::Add, ScalarType::I32), "out");
            auto r = run(pb.finish(),
                         Args().buffer("dest", dest).buffer("target", target).buffer("vals", vals).scalar("n", n).scalar("m", m));
            auto want = dest;
            for (int64_t i = 0; i < n; ++i)
                if (target[i] >= 0 && target[i] < m) want[target[i]] += vals[i];
            check_close(output<int32_t>(r, "out"), want);
        }
        {  // Mul has no CUDA atomic: CAS loop (exact on wrapping integers)
            auto dest = random_vector<int64_t>(m, 44, 1, 3);
            auto vals = random_vector<int64_t>(n, 45, -3, 3);
            PlanBuilder pb("prod");
            lower_permute(pb, "prod", vec("dest", ScalarType::I64, "m"), vec("target", ScalarType::I32),
                          vec("vals", ScalarType::I64), known_combine(AssocOp::Mul, ScalarType::I64), "out");
            auto r = run(pb.finish(),
                         Args().buffer("dest", dest).buffer("target", target).buffer("vals", vals).scalar("n", n).scalar("m", m));
            auto want = dest;
            for (int64_t i = 0; i < n; ++i)
                if (target[i] >= 0 && target[i] < m)
                    want[target[i]] = static_cast<int64_t>(static_cast<uint64_t>(want[target[i]]) * static_cast<uint64_t>(vals[i]));
            check_close(output<int64_t>(r, "out"), want);
        }
        {  // float max: CAS loop
            auto dest = random_vector<float>(m, 46, -1, 0);
            auto vals = random_vector<float>(n, 47, -1, 1);
            PlanBuilder pb("pmax");
            lower_permute(pb, "pmax", vec("dest", ScalarType::F32, "m"), vec("target", ScalarType::I32),
                          vec("vals", ScalarType::F32), known_combine(AssocOp::Max, ScalarType::F32), "out");
            auto r = run(pb.finish(),
                         Args().buffer("dest", dest).buffer("target", target).buffer("vals", vals).scalar("n", n).scalar("m", m));
            auto want = dest;
            for (int64_t i = 0; i < n; ++i)
                if (target[i] >= 0 && target[i] < m) want[target[i]] = std::max(want[target[i]], vals[i]);
            check_close(output<float>(r, "out"), want);
        }
    }
}

// A GPU's integer permute into a known number of targets that fits shared
// memory (a histogram): each block's atomics on its own copy of the
// targets, then one global atomic per touched target (lower_permute.cpp).
TEST_CASE("permute: a known, modest number of integer targets is folded in shared memory per block on a GPU") {
    for (int64_t m : {int64_t{1}, int64_t{97}, int64_t{256}, int64_t{8192}, int64_t{8193}})
        for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{5000}, int64_t{300000}}) {
            CAPTURE(m);
            CAPTURE(n);
            auto target = random_vector<int32_t>(n, 51, -5, static_cast<int32_t>(m + 4));  // some out of range: dropped
            LoweringFacts facts;  // m known while lowering, as the engine's plans know it
            facts.value = [m](const std::string& s) { return s == "m" ? std::optional<int64_t>(m) : std::nullopt; };
            LoweringOptions opt;
            opt.facts = &facts;
            {
                auto dest = random_vector<int32_t>(m, 52, 0, 10);
                auto vals = random_vector<int32_t>(n, 53, -100, 100);
                PlanBuilder pb("hist");
                lower_permute(pb, "hist", vec("dest", ScalarType::I32, "m"), vec("target", ScalarType::I32),
                              vec("vals", ScalarType::I32), known_combine(AssocOp::Add, ScalarType::I32), "out", opt);
                const LaunchPlan plan = pb.finish();
                const bool shared = plan.kernels.back().name == "hist_shared";
                CHECK(shared == (m <= 8192));
                auto r = run(plan, Args().buffer("dest", dest).buffer("target", target).buffer("vals", vals).scalar("n", n).scalar("m", m));
                auto want = dest;
                for (int64_t i = 0; i < n; ++i)
                    if (target[i] >= 0 && target[i] < m) want[target[i]] += vals[i];
                check_close(output<int32_t>(r, "out"), want);
            }
            if (m <= 4096) {  // max on int64: 8 bytes a target
                auto dest = random_vector<int64_t>(m, 54, -1000, 1000);
                auto vals = random_vector<int64_t>(n, 55, -5000, 5000);
                PlanBuilder pb("hmax");
                lower_permute(pb, "hmax", vec("dest", ScalarType::I64, "m"), vec("target", ScalarType::I32),
                              vec("vals", ScalarType::I64), known_combine(AssocOp::Max, ScalarType::I64), "out", opt);
                auto r = run(pb.finish(),
                             Args().buffer("dest", dest).buffer("target", target).buffer("vals", vals).scalar("n", n).scalar("m", m));
                auto want = dest;
                for (int64_t i = 0; i < n; ++i)
                    if (target[i] >= 0 && target[i] < m) want[target[i]] = std::max(want[target[i]], vals[i]);
                check_close(output<int64_t>(r, "out"), want);
            }
        }
}

// Float permutes combine in an order fixed by n (lower_permute.cpp): the bins
// path for few targets, the sort path (each target in source order) for
// many; without lowering facts the plan holds both behind run-time guards.
TEST_CASE("permute on floats: deterministic on any number of threads, no atomics, exact identities") {
    auto atomics_in = [](const LaunchPlan& plan) {
        int count = 0;
        std::function<void(const StmtPtr&)> walk = [&](const StmtPtr& s) {
            if (s->kind == StmtKind::Atomic) ++count;
            for (const auto& b : s->body) walk(b);
            for (const auto& b : s->else_body) walk(b);
        };
        std::function<void(const BlockStmtPtr&)> walk_block = [&](const BlockStmtPtr& b) {
            if (b->phase) walk(b->phase);
            for (const auto& c : b->body) walk_block(c);
        };
        for (const auto& k : plan.kernels)
            for (const auto& b : k.body) walk_block(b);
        return count;
    };
    // The CPU form sorts by target with 11-bit digits: up to 2^11 targets one
    // pass, more all three (passes are skipped in pairs from the top).
    LoweringOptions cpu_form;
    cpu_form.cpu_cores = 2;
    for (const LoweringOptions& form : {LoweringOptions{}, cpu_form})
    for (int64_t m : {int64_t{1}, int64_t{10}, int64_t{300}, int64_t{1008}, int64_t{1009}, int64_t{3000}}) {
        for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{777}, int64_t{200000}}) {
            CAPTURE(form.cpu_cores);
            CAPTURE(m);
            CAPTURE(n);
            auto target = random_vector<int32_t>(n, 61, -2, static_cast<int32_t>(m + 1));  // some dropped
            auto dest = random_vector<float>(m, 62, -1, 1);
            auto vals = random_vector<float>(n, 63, 0, 1);
            PlanBuilder pb("wh");
            lower_permute(pb, "wh", vec("dest", ScalarType::F32, "m"), vec("target", ScalarType::I32),
                          vec("vals", ScalarType::F32), known_combine(AssocOp::Add, ScalarType::F32), "out", form);
            LaunchPlan plan = optimized(pb);
            CHECK(atomics_in(plan) == 0);
            Args args;
            args.buffer("dest", dest).buffer("target", target).buffer("vals", vals).scalar("n", n).scalar("m", m);
            compile_with_nvrtc(plan);
            std::vector<std::vector<float>> runs;
            for (int threads : {1, 2, 3}) {
                cpu::ExecOptions opt;
                opt.check = threads == 1;
                opt.threads = threads;
                runs.push_back(output<float>(cpu::run_plan(plan, args.a, opt), "out"));
            }
            // Bit for bit the same on 1, 2 and 3 worker threads.
            for (size_t r = 1; r < runs.size(); ++r)
                CHECK(std::memcmp(runs[r].data(), runs[0].data(), runs[0].size() * sizeof(float)) == 0);
            std::vector<double> exact(dest.begin(), dest.end());
            std::vector<float> sequential = dest;
            for (int64_t i = 0; i < n; ++i)
                if (target[i] >= 0 && target[i] < m) {
                    exact[target[i]] += vals[i];
                    sequential[target[i]] += vals[i];
                }
            std::vector<float> want(exact.begin(), exact.end());
            check_close(runs[0], want, 1e-5);
            // Many targets: sorted by target and folded in source order, as the reference.
            if (m > 1008) check_close(runs[0], sequential);
        }
    }
    // Bins start from the exact identity: -0.0 stays -0.0 under +, NaN under min.
    for (auto [op, start, value] : {std::tuple{AssocOp::Add, -0.0, -0.0}, std::tuple{AssocOp::Min, std::nan(""), 1.0},
                                    std::tuple{AssocOp::Max, 2.0, std::nan("")}}) {
        std::vector<double> dest = {start, start};
        std::vector<int32_t> target = {0};
        std::vector<double> vals = {value};
        PlanBuilder pb("edge");
        lower_permute(pb, "edge", vec("dest", ScalarType::F64, "m"), vec("target", ScalarType::I32),
                      vec("vals", ScalarType::F64), known_combine(op, ScalarType::F64), "out");
        auto r = run(pb.finish(), Args().buffer("dest", dest).buffer("target", target).buffer("vals", vals).scalar("n", 1).scalar("m", 2));
        const auto out = output<double>(r, "out");
        if (op == AssocOp::Add) {
            CHECK((out[0] == 0 && std::signbit(out[0]) && out[1] == 0 && std::signbit(out[1])));
        } else if (op == AssocOp::Min) {
            CHECK(out[0] == 1.0);  // fmin(NaN, 1) = 1
            CHECK(std::isnan(out[1]));  // no element: dest stays NaN
        } else {
            CHECK(out[0] == 2.0);  // NaN loses
            CHECK(out[1] == 2.0);
        }
    }
}

TEST_CASE("scatter: the last write wins, out-of-range indices are ignored, rows of a matrix") {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{300}, int64_t{100000}}) {
        CAPTURE(n);
        const int64_t m = 53;
        auto idx = random_vector<int32_t>(n, 51, -3, 60);  // many duplicates
        auto dest = random_vector<double>(m, 52, -1, 1);
        auto vals = random_vector<double>(n, 53, -1, 1);
        PlanBuilder pb("sc");
        lower_scatter(pb, "sc", vec("dest", ScalarType::F64, "m"), vec("idx", ScalarType::I32),
                      vec("vals", ScalarType::F64), "out");
        auto r = run(pb.finish(), Args().buffer("dest", dest).buffer("idx", idx).buffer("vals", vals).scalar("n", n).scalar("m", m));
        auto want = dest;
        for (int64_t k = 0; k < n; ++k)
            if (idx[k] >= 0 && idx[k] < m) want[idx[k]] = vals[k];
        check_close(output<double>(r, "out"), want);

        const int64_t cols = 5;
        auto mdest = random_vector<int32_t>(m * cols, 54, -9, 9);
        auto mvals = random_vector<int32_t>(n * cols, 55, -9, 9);
        PlanBuilder pb2("scm");
        lower_scatter(pb2, "scm", buffer_array("dest", ScalarType::I32, {"m", "cols"}), vec("idx", ScalarType::I32),
                      buffer_array("vals", ScalarType::I32, {"n", "cols"}), "out");
        auto r2 = run(pb2.finish(), Args().buffer("dest", mdest).buffer("idx", idx).buffer("vals", mvals)
                                        .scalar("n", n).scalar("m", m).scalar("cols", cols));
        auto mwant = mdest;
        for (int64_t k = 0; k < n; ++k)
            if (idx[k] >= 0 && idx[k] < m)
                for (int64_t c = 0; c < cols; ++c) mwant[idx[k] * cols + c] = mvals[k * cols + c];
        check_close(output<int32_t>(r2, "out"), mwant);
    }
}

TEST_CASE("gather, reverse, take, drop: fused index maps; gather bounds errors") {
    const int64_t n = 1000, k = 3000;
    auto a = random_vector<float>(n, 61, -1, 1);
    auto idx = random_vector<int32_t>(k, 62, 0, static_cast<int32_t>(n - 1));
    Loc loc;
    PullArray g = gather_array(vec("idx", ScalarType::I32, "k"), vec("a", ScalarType::F32), loc);
    PlanBuilder pb("g");
    lower_map(pb, "g", tuple_of({g, take_array(reverse_array(g), i64(10)), drop_array(g, i64(-4))}), {"o1", "o2", "o3"});
    LaunchPlan plan = pb.finish();
    // take 10 has 10 elements, but lower_map needs equal shapes: check o1 and the shapes only.
    auto r = run(plan, Args().buffer("a", a).buffer("idx", idx).scalar("n", n).scalar("k", k));
    std::vector<float> want;
    for (int32_t j : idx) want.push_back(a[static_cast<size_t>(j)]);
    check_close(output<float>(r, "o1"), want);

    PlanBuilder pr("rev");
    lower_map(pr, "rev", tuple_of(take_array(reverse_array(vec("a", ScalarType::F32)), i64(10))), {"o"});
    auto rr = run(pr.finish(), Args().buffer("a", a).scalar("n", n));
    check_close(output<float>(rr, "o"), std::vector<float>(a.rbegin(), a.rbegin() + 10));

    PlanBuilder pd("drop");
    lower_map(pd, "drop", tuple_of(drop_array(vec("a", ScalarType::F32), i64(990))), {"o"});
    auto rd = run(pd.finish(), Args().buffer("a", a).scalar("n", n));
    check_close(output<float>(rd, "o"), std::vector<float>(a.end() - 10, a.end()));

    idx[1234] = static_cast<int32_t>(n);  // out of bounds
    PlanBuilder pe("ge");
    lower_map(pe, "ge", tuple_of(g), {"o"});
    try {
        run(pe.finish(), Args().buffer("a", a).buffer("idx", idx).scalar("n", n).scalar("k", k));
        FAIL("expected an index error");
    } catch (const Error& e) {
        CHECK(e.kind == ErrorKind::Runtime);
        CHECK(e.message == "gather: index 1000 is out of bounds for axis 0 with extent 1000");
    }
}

// ---------------------------------------------------------------- push arrays
namespace {

// Counts Select expressions and If statements: a push array has neither
// (its loops' bounds are the only tests).
struct SelectCounter : IRVisitor {
    int selects = 0, ifs = 0;
    void visit(const ExprPtr& e) override {
        selects += e->kind == ExprKind::Select;
        IRVisitor::visit(e);
    }
    void visit(const StmtPtr& s) override {
        ifs += s->kind == StmtKind::If;
        IRVisitor::visit(s);
    }
    using IRVisitor::visit;
};

}  // namespace

TEST_CASE("++ and interleave are push arrays without a source-selecting conditional") {
    for (auto entry : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, 3}, {5, 0}, {1, 1}, {300, 1000}, {100000, 7}}) {
        auto na = entry.first;  // not a structured binding: clang 14 cannot capture those
        auto nb = entry.second;
        CAPTURE(na);
        CAPTURE(nb);
        auto a = random_vector<int32_t>(na, 71, -9, 9);
        auto b = random_vector<int32_t>(nb, 72, -9, 9);
        PlanBuilder pb("cat");
        lower_concat(pb, "cat", vec("a", ScalarType::I32, "na"), vec("b", ScalarType::I32, "nb"), "out");
        LaunchPlan plan = pb.finish();
        REQUIRE(plan.kernels.size() == 1);
        SelectCounter sc;
        sc.visit_kernel(plan.kernels[0]);
        CHECK(sc.selects == 0);
        CHECK(sc.ifs == 0);
        auto r = run(plan, Args().buffer("a", a).buffer("b", b).scalar("na", na).scalar("nb", nb));
        auto want = a;
        want.insert(want.end(), b.begin(), b.end());
        check_close(output<int32_t>(r, "out"), want);

        // interleave of two rows x cols matrices (rows alternate)
        const int64_t cols = 3;
        auto ma = random_vector<int32_t>(na * cols, 73, -9, 9);
        auto mb = random_vector<int32_t>(na * cols, 74, -9, 9);
        PlanBuilder pi("ilv");
        lower_interleave(pi, "ilv", buffer_array("a", ScalarType::I32, {"na", "cols"}),
                         buffer_array("b", ScalarType::I32, {"na", "cols"}), "out");
        LaunchPlan iplan = pi.finish();
        SelectCounter si;
        si.visit_kernel(iplan.kernels[0]);
        CHECK(si.selects == 0);
        CHECK(si.ifs == 0);
        auto ri = run(iplan, Args().buffer("a", ma).buffer("b", mb).scalar("na", na).scalar("cols", cols));
        std::vector<int32_t> iwant;
        for (int64_t i = 0; i < na; ++i) {
            iwant.insert(iwant.end(), ma.begin() + i * cols, ma.begin() + (i + 1) * cols);
            iwant.insert(iwant.end(), mb.begin() + i * cols, mb.begin() + (i + 1) * cols);
        }
        check_close(output<int32_t>(ri, "out"), iwant);
    }
}

// ---------------------------------------------------------------- transpose
TEST_CASE("transpose through shared tiles: correct at ragged edges, coalesced") {
    for (auto entry : std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {1, 1}, {33, 31}, {100, 257}, {1024, 1024}}) {
        auto rows = entry.first;  // not a structured binding: clang 14 cannot capture those
        auto cols = entry.second;
        CAPTURE(rows);
        CAPTURE(cols);
        auto a = random_vector<float>(rows * cols, 81, -1, 1);
        PlanBuilder pb("tr");
        lower_transpose(pb, "tr", buffer_array("a", ScalarType::F32, {"rows", "cols"}), "out");
        LaunchPlan plan = pb.finish();
        auto r = run(plan, Args().buffer("a", a).scalar("rows", rows).scalar("cols", cols));
        std::vector<float> want(a.size());
        for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j) want[j * rows + i] = a[i * cols + j];
        check_close(output<float>(r, "out"), want);
        if (rows == 1024) {
            // Every warp access touches 4 sectors (32 lanes x 4 bytes): n/8 for the
            // loads plus n/8 for the stores. A naive transpose stores 32 per warp.
            const int64_t n = rows * cols;
            CHECK(r.total.global_sectors == n / 4);
            CHECK(r.total.shared_bank_conflicts == 0);
        }
    }
}

// ---------------------------------------------------------------- filter
TEST_CASE("filter: flags, scan, scatter; the count read back sizes the outputs") {
    for (int64_t n : kSizes) {
        CAPTURE(n);
        auto x = random_vector<int32_t>(n, 91, -100, 100);
        auto y = random_vector<double>(n, 92, -1, 1);
        PullArray px = vec("x", ScalarType::I32);
        PullArray keep = map_array(px, ScalarType::Bool, [](KernelBuilder&, ExprPtr v) {
            return binary(BinaryOp::Gt, v, const_int(10, ScalarType::I32));
        });
        PlanBuilder pb("flt");
        lower_filter(pb, "flt", keep, {px, vec("y", ScalarType::F64)}, {"ox", "oy"}, "kept");
        auto r = run(pb.finish(), Args().buffer("x", x).buffer("y", y).scalar("n", n));
        std::vector<int32_t> wx;
        std::vector<double> wy;
        for (int64_t i = 0; i < n; ++i)
            if (x[i] > 10) wx.push_back(x[i]), wy.push_back(y[i]);
        CHECK(r.scalars.at("kept").i == static_cast<int64_t>(wx.size()));
        check_close(output<int32_t>(r, "ox"), wx);
        check_close(output<double>(r, "oy"), wy);
    }
}

// ---------------------------------------------------------------- the host program
// The order of a plan's steps, as kinds and names ("alloc flags", "launch k", ...).
std::vector<std::string> step_names(const LaunchPlan& plan) {
    std::vector<std::string> out;
    for (const PlanStep& s : plan.steps) {
        switch (s.kind) {
            case StepKind::Compute: out.push_back("compute " + s.scalar); break;
            case StepKind::Alloc: out.push_back("alloc " + s.buffer); break;
            case StepKind::Launch: out.push_back("launch " + plan.kernels[s.kernel].name); break;
            case StepKind::Check: out.push_back("check " + plan.kernels[s.kernel].name); break;
            case StepKind::ReadBack: out.push_back("read back " + s.scalar); break;
            case StepKind::Free: out.push_back("free " + s.buffer); break;
            case StepKind::Call: out.push_back("call " + s.call.function); break;
        }
    }
    return out;
}

TEST_CASE("host program: filter allocates before first use, sizes its outputs by the count read back, frees temporaries") {
    PullArray px = vec("x", ScalarType::I32);
    PullArray keep = map_array(px, ScalarType::Bool, [](KernelBuilder&, ExprPtr v) {
        return binary(BinaryOp::Gt, v, const_int(10, ScalarType::I32));
    });
    PlanBuilder pb("flt");
    lower_filter(pb, "flt", keep, {px}, {"ox"}, "kept");
    const LaunchPlan plan = pb.finish();
    CHECK(plan.entry.scalars == std::vector<std::string>{"n"});
    CHECK(plan.entry.inputs == std::vector<std::string>{"x"});
    CHECK(plan.entry.outputs == std::vector<std::string>{"ox"});
    const std::vector<std::string> steps = step_names(plan);
    INFO(to_string(plan));
    auto at = [&](const std::string& step) {
        auto it = std::find(steps.begin(), steps.end(), step);
        REQUIRE(it != steps.end());
        return it - steps.begin();
    };
    // The output is sized by the count, so it is allocated after the read-back.
    CHECK(at("read back kept") < at("alloc ox"));
    // Every temporary is freed once, after the last step that used it.
    int frees = 0;
    for (const PlanBuffer& b : plan.buffers)
        if (b.role == BufferRole::Temp) {
            const auto freed = at("free " + b.name);
            CHECK(at("alloc " + b.name) < freed);
            ++frees;
        }
    CHECK(frees >= 1);
    CHECK(std::count(steps.begin(), steps.end(), "free ox") == 0);  // the result is the caller's
}

TEST_CASE("host program: a launch of a kernel with checks is followed by its check; the verifier refuses broken programs") {
    PullArray idx = vec("idx", ScalarType::I32);
    PlanBuilder pb("g");
    lower_map(pb, "gather", tuple_of(gather_array(idx, vec("src", ScalarType::F32, "m"), Loc{})), {"out"});
    LaunchPlan plan = pb.finish();
    const std::vector<std::string> steps = step_names(plan);
    INFO(to_string(plan));
    REQUIRE(!plan.kernels[0].checks.empty());  // the index is checked against m
    const auto launch = std::find(steps.begin(), steps.end(), "launch gather");
    REQUIRE(launch + 1 < steps.end());
    CHECK(launch[1] == "check gather");
    CHECK(to_string(plan).find("check the error record of gather") != std::string::npos);

    LaunchPlan unchecked = plan;  // the check removed
    unchecked.steps.erase(std::find_if(unchecked.steps.begin(), unchecked.steps.end(),
                                       [](const PlanStep& s) { return s.kind == StepKind::Check; }));
    CHECK_THROWS_WITH_AS(verify_host_program(unchecked), doctest::Contains("is not followed by its check"), Error);
    LaunchPlan unallocated = plan;  // the output used before it exists
    unallocated.steps.erase(std::find_if(unallocated.steps.begin(), unallocated.steps.end(),
                                         [](const PlanStep& s) { return s.kind == StepKind::Alloc; }));
    CHECK_THROWS_WITH_AS(verify_host_program(unallocated), doctest::Contains("used before it is allocated"), Error);
}
