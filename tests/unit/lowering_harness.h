// Shared by the lowering tests (test_lowering.cpp, test_lower_sort.cpp): bind
// data to a launch plan, run it on the CPU executor in checking mode after
// compiling every kernel with NVRTC (sm_80 and sm_90, zero warnings), read
// outputs back, build pull arrays over buffers.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "codegen/cuda_printer.h"
#include "codegen/lower_primitives.h"
#include "codegen/pipeline.h"
#include "runtime/cpu/run_plan.h"
#include "runtime/cuda/nvrtc.h"

namespace shoal::lowering_test {

using namespace shoal::ir;
using shoal::cpu::HostBuffer;
using shoal::cpu::PlanArgs;
using shoal::cpu::PlanResult;

template <class T> ScalarType type_of();
template <> inline ScalarType type_of<int32_t>() { return ScalarType::I32; }
template <> inline ScalarType type_of<int64_t>() { return ScalarType::I64; }
template <> inline ScalarType type_of<float>() { return ScalarType::F32; }
template <> inline ScalarType type_of<double>() { return ScalarType::F64; }

template <class T> std::vector<T> random_vector(int64_t n, uint32_t seed, T lo, T hi) {
    std::mt19937 rng(seed);
    std::vector<T> v(static_cast<size_t>(n));
    for (auto& x : v) {
        if constexpr (std::is_floating_point_v<T>) x = std::uniform_real_distribution<T>(lo, hi)(rng);
        else x = std::uniform_int_distribution<T>(lo, hi)(rng);
    }
    return v;
}

// Binds caller data to a plan by name.
struct Args {
    PlanArgs a;
    template <class T> Args& buffer(const std::string& name, std::vector<T>& data) {
        a.buffers[name] = cpu::BufferArg{data.data(), static_cast<int64_t>(data.size())};
        return *this;
    }
    Args& flags(const std::string& name, std::vector<char>& data) {
        a.buffers[name] = cpu::BufferArg{data.data(), static_cast<int64_t>(data.size())};
        return *this;
    }
    Args& scalar(const std::string& name, int64_t v) {
        a.scalars[name] = HostValue{ScalarType::I64, v, 0};
        return *this;
    }
};

// Every kernel a test runs is also compiled with NVRTC for sm_80 and sm_90
// (zero warnings), once per distinct source.
inline void compile_with_nvrtc(const LaunchPlan& plan) {
#ifdef SHOAL_HAVE_NVRTC
    static std::set<std::string> compiled;
    const std::string source = print_cuda(plan.kernels);
    if (!compiled.insert(source).second) return;
    for (const char* arch : {"sm_80", "sm_90"}) {
        cuda::NvrtcResult r = cuda::compile_cuda(source, arch);
        INFO("NVRTC ", arch, ":\n", r.log, "\n", cuda::number_lines(source));
        CHECK(r.ok);
        CHECK(r.log.find("warning") == std::string::npos);
    }
#else
    (void)plan;
#endif
}

// The plan a builder holds, after the pass pipeline (as the plan cache keeps it).
inline LaunchPlan optimized(const PlanBuilder& pb, const PassOptions& options = {}) {
    LaunchPlan plan = pb.finish();
    optimize(plan, options);
    return plan;
}

// Runs a plan exactly as given, in check mode (and compiles it with NVRTC).
inline PlanResult run_as_is(const LaunchPlan& plan, const Args& args) {
    compile_with_nvrtc(plan);
    cpu::ExecOptions opt;
    opt.check = true;
    return cpu::run_plan(plan, args.a, opt);
}

// Optimises a plan as lowered (as the plan cache does), then runs it.
inline PlanResult run(const LaunchPlan& lowered, const Args& args) {
    LaunchPlan plan = lowered;
    optimize(plan);
    return run_as_is(plan, args);
}

template <class T> std::vector<T> output(const PlanResult& r, const std::string& name) {
    const HostBuffer& b = r.outputs.at(name);
    return std::vector<T>(b.data<T>(), b.data<T>() + b.count);
}

template <class T> void check_close(const std::vector<T>& got, const std::vector<T>& want, double rel = 0) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        if (got[i] == want[i]) continue;  // also infinities
        if constexpr (std::is_floating_point_v<T>) {
            double tol = rel * std::max(1.0, std::fabs(static_cast<double>(want[i])));
            if (!(std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i])) <= tol)) {
                INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
                REQUIRE(false);
            }
        } else if (got[i] != want[i]) {
            INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
            REQUIRE(false);
        }
    }
}

inline PullArray vec(const std::string& buffer, ScalarType t, const std::string& n = "n") {
    return buffer_array(buffer, t, {n});
}

// zipWith-style producer: f(x[i], y[i]) fused as a pull array.
inline PullArray zip_with(const PullArray& x, const PullArray& y, std::function<ExprPtr(ExprPtr, ExprPtr)> f) {
    PullArray r;
    r.shape = x.shape;
    r.elem = x.elem;
    r.at = [x, y, f](KernelBuilder& kb, const std::vector<ExprPtr>& i) { return f(x.at(kb, i), y.at(kb, i)); };
    return r;
}

inline PullArray map_array(const PullArray& x, ScalarType t, std::function<ExprPtr(KernelBuilder&, ExprPtr)> f) {
    PullArray r;
    r.shape = x.shape;
    r.elem = t;
    r.at = [x, f](KernelBuilder& kb, const std::vector<ExprPtr>& i) { return f(kb, x.at(kb, i)); };
    return r;
}

}  // namespace shoal::lowering_test
