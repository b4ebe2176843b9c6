// The CPU executor on fused kernels, timed side by side with numpy by
// bench/run.sh (which prints the ratios). Prints one line per case:
//   <case> <n> <ns per element>
// `shoal_bench_executor CASE [N]` runs one case (and size) only, for profiling.
// The kernels are built from the same lowerings the compiler uses: SAXPY
// (one map), a sum, and RMSE's fused sum (map (d*d) (x - y)) (one reduction).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "codegen/lower_primitives.h"
#include "codegen/pipeline.h"
#include "runtime/cpu/run_plan.h"

using namespace shoal;
using namespace shoal::ir;

namespace {

PullArray zip_with(const PullArray& x, const PullArray& y, BinaryOp op) {
    PullArray r = x;
    r.at = [x, y, op](KernelBuilder& kb, const std::vector<ExprPtr>& i) { return binary(op, x.at(kb, i), y.at(kb, i)); };
    return r;
}

double best_seconds(int reps, const std::function<void()>& f) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

void report(const char* name, int64_t n, double seconds) {
    std::printf("%s %lld %.3f\n", name, static_cast<long long>(n), seconds * 1e9 / static_cast<double>(n));
}

// The plan as the engine runs it: after the pass pipeline.
LaunchPlan optimized(const PlanBuilder& pb) {
    LaunchPlan plan = pb.finish();
    optimize(plan);
    return plan;
}

}  // namespace

int main(int argc, char** argv) {
    const char* only_case = argc > 1 ? argv[1] : nullptr;
    const int64_t only_n = argc > 2 ? std::atoll(argv[2]) : 0;
    auto wanted = [&](const char* name) { return !only_case || std::strcmp(only_case, name) == 0; };
    for (int64_t n : {int64_t(1) << 20, int64_t(1) << 24}) {
        if (only_n && n != only_n) continue;
        std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            x[static_cast<size_t>(i)] = static_cast<float>(i % 1000) * 0.001f;
            y[static_cast<size_t>(i)] = static_cast<float>(i % 777) * 0.002f;
        }
        cpu::PlanArgs args;
        args.buffers["x"] = cpu::BufferArg{x.data(), n};
        args.buffers["y"] = cpu::BufferArg{y.data(), n};
        args.scalars["n"] = HostValue{ScalarType::I64, n, 0};
        args.scalars["a"] = HostValue{ScalarType::F32, 0, 2.0};
        cpu::ExecOptions opt;
        const int reps = n > (1 << 20) ? 3 : 10;

        PullArray px = buffer_array("x", ScalarType::F32, {"n"});
        PullArray py = buffer_array("y", ScalarType::F32, {"n"});

        if (wanted("saxpy")) {  // a * x + y
            PullArray ax = px;
            ax.at = [px](KernelBuilder& kb, const std::vector<ExprPtr>& i) {
                kb.scalar_param("a", ScalarType::F32);
                return binary(BinaryOp::Mul, param("a", ScalarType::F32), px.at(kb, i));
            };
            PullArray s = zip_with(ax, py, BinaryOp::Add);
            PlanBuilder pb("saxpy");
            lower_map(pb, "saxpy", tuple_of(s), {"out"});
            LaunchPlan plan = optimized(pb);
            report("saxpy", n, best_seconds(reps, [&] { cpu::run_plan(plan, args, opt); }));
        }
        if (wanted("sum")) {
            PlanBuilder pb("sum");
            lower_reduce(pb, "sum", px, known_combine(AssocOp::Add, ScalarType::F32), "out");
            LaunchPlan plan = optimized(pb);
            report("sum", n, best_seconds(reps, [&] { cpu::run_plan(plan, args, opt); }));
        }
        if (wanted("rmse")) {  // rmse's reduction: sum (map (\d -> d * d) (x - y))
            PullArray d = zip_with(px, py, BinaryOp::Sub);
            PullArray sq = d;
            sq.at = [d](KernelBuilder& kb, const std::vector<ExprPtr>& i) {
                ExprPtr v = kb.bind("d", d.at(kb, i));
                return binary(BinaryOp::Mul, v, v);
            };
            PlanBuilder pb("rmse");
            lower_reduce(pb, "rmse", sq, known_combine(AssocOp::Add, ScalarType::F32), "out");
            LaunchPlan plan = optimized(pb);
            report("rmse", n, best_seconds(reps, [&] { cpu::run_plan(plan, args, opt); }));
        }
    }
}
