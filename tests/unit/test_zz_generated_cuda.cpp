// Every kernel the compiled backend builds anywhere in this test run
// (differential tests, random programs, seed programs, examples) is printed
// as CUDA and compiled with NVRTC for sm_80 and sm_90, with zero warnings.
//
// The file name sorts last: doctest runs test cases ordered by file, so this
// case sees every plan the other tests made. Run alone it still covers the
// examples, which it runs itself. Distinct kernels are compiled in batches
// (one translation unit per batch, kernels renamed apart) on every core.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <atomic>
#include <mutex>
#include <thread>
#include <set>
#include <sstream>

#include "codegen/cuda_printer.h"
#include "codegen/launch_plan.h"
#include "lang/session.h"
#include "codegen/compiled_backend.h"
#include "runtime/executors.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/cpu/program.h"
#include "codegen/thread_levels.h"

using namespace shoal;

namespace {

// Distinct kernels, by their CUDA source under a neutral name: plans share
// many kernels (a reduction's second pass, the map forcing a binding).
struct GeneratedKernels {
    std::mutex lock;
    std::set<std::string> seen;
    std::vector<ir::Kernel> kernels;
};

GeneratedKernels& generated() {
    static GeneratedKernels g;
    return g;
}

void collect(const ir::LaunchPlan& plan) {
    GeneratedKernels& g = generated();
    for (ir::Kernel k : plan.kernels) {
        k.name = "kernel";
        std::string source = ir::print_cuda({k});
        std::lock_guard<std::mutex> hold(g.lock);
        if (g.seen.insert(std::move(source)).second) g.kernels.push_back(std::move(k));
    }
}

// Registered before any test runs.
const bool registered = [] {
    compiled::set_plan_observer(collect);
    return true;
}();

struct Quiet : SessionOutput {
    void value(const Value&, const Type&, const std::string&) override {}
    void text(const std::string&) override {}
    void error(const Error&) override {}
    void warning(const std::string&) override {}
};

#ifdef SHOAL_HAVE_NVRTC
// NVRTC's verdict on one translation unit; empty when clean.
std::string nvrtc_problem(const std::string& source) {
    for (const char* arch : {"sm_80", "sm_90"}) {
        // The fastest optimisation level: what NVRTC accepts and warns about
        // does not depend on it, and it compiles 3x faster.
        static const std::vector<std::string> options = {"--Ofast-compile=max"};
        cuda::NvrtcResult r = cuda::compile_cuda(source, arch, options);
        if (!r.ok || r.log.find("warning") != std::string::npos)
            return std::string("NVRTC ") + arch + (r.ok ? " warned" : " failed") + ":\n" + r.log;
    }
    return {};
}
#endif

// Every distinct kernel generated so far, after the examples (run once here,
// so that a test case run alone still sees them).
std::vector<ir::Kernel> all_generated_kernels() {
    static const bool examples_ran = [] {
        REQUIRE(registered);
        runtime::install_compiled_backend();
        for (const auto& e : std::filesystem::directory_iterator(std::string(SHOAL_SOURCE_DIR) + "/examples")) {
            if (e.path().extension() != ".shoal") continue;
            std::ifstream in(e.path());
            std::stringstream text;
            text << in.rdbuf();
            Session s;
            Quiet out;
            s.execute(":set backend compiled", "<t>", out);
            s.execute(text.str(), e.path().filename().string(), out);
        }
        return true;
    }();
    REQUIRE(examples_ran);
    std::lock_guard<std::mutex> hold(generated().lock);
    return generated().kernels;
}

}  // namespace

TEST_CASE("nvrtc: every kernel the compiled backend generated in this run compiles for sm_80 and sm_90") {
    std::vector<ir::Kernel> kernels = all_generated_kernels();
    REQUIRE(kernels.size() >= 15);
    MESSAGE(kernels.size() << " distinct kernels generated");
    // SHOAL_DUMP_GENERATED_CUDA=file: every distinct kernel's CUDA, sorted, to
    // compare the printer's output before and after a change to it.
    if (const char* dump = std::getenv("SHOAL_DUMP_GENERATED_CUDA")) {
        std::lock_guard<std::mutex> hold(generated().lock);
        std::ofstream out(dump);
        for (const std::string& source : generated().seen) out << source << "\n// ----\n";
    }
#ifdef SHOAL_HAVE_NVRTC
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t k = 0; k < kernels.size(); ++k) kernels[k].name = "k" + std::to_string(k);
    // Batches compiled on every core; a failing batch is retried kernel by
    // kernel so the report shows the culprit's source.
    constexpr size_t kBatch = 48;
    std::vector<std::string> failures;
    std::mutex failures_lock;
    std::atomic<size_t> next{0};
    auto worker = [&] {
        for (size_t first; (first = next.fetch_add(kBatch)) < kernels.size();) {
            const std::vector<ir::Kernel> batch(kernels.begin() + static_cast<std::ptrdiff_t>(first),
                                                kernels.begin() + static_cast<std::ptrdiff_t>(std::min(kernels.size(), first + kBatch)));
            if (nvrtc_problem(ir::print_cuda(batch)).empty()) continue;
            for (const ir::Kernel& k : batch) {
                const std::string source = ir::print_cuda({k});
                const std::string problem = nvrtc_problem(source);
                std::lock_guard<std::mutex> hold(failures_lock);
                if (!problem.empty()) failures.push_back(problem + "\nsource:\n" + cuda::number_lines(source));
            }
        }
    };
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) workers.emplace_back(worker);
    for (auto& w : workers) w.join();
    for (const auto& f : failures) FAIL_CHECK(f);
    MESSAGE("NVRTC took " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
#endif
}

namespace {

// Whether p holds for e or a subexpression, or for the value of a let
// variable it reads (each variable's value walked once).
template <class P>
bool any_part(const ir::ExprPtr& e, const ir::ThreadLevels& levels, const P& p, std::set<std::string>& walked) {
    if (p(*e)) return true;
    if (e->kind == ir::ExprKind::Var && walked.insert(e->name).second)
        if (const ir::ExprPtr value = levels.let_value(e->name)) return any_part(value, levels, p, walked);
    for (const auto& a : e->args)
        if (any_part(a, levels, p, walked)) return true;
    return false;
}

}  // namespace

// The native printer's thread levels (codegen/thread_levels.h: what it hoists
// out of thread loops, which loops it interchanges) and the interpreter's
// levels (runtime/cpu/compile.cpp, proven by every test on the interpreter)
// on every expression of every kernel this run generated. They agree on what
// is the same in every thread; where one finds an affine form the other does
// not, the reason is one of those listed (any other difference fails).
TEST_CASE("levels: the native printer's thread levels agree with the interpreter's on every generated kernel") {
    const std::vector<ir::Kernel> kernels = all_generated_kernels();
    REQUIRE(kernels.size() >= 15);
    std::map<std::string, size_t> tally;
    size_t expressions = 0;
    for (const ir::Kernel& k : kernels) {
        const ir::ThreadLevels threads(k);
        for (const auto& [raw, interpreted] : cpu::interpreter_levels(k)) {
            ++expressions;
            const ir::ExprPtr e(ir::ExprPtr(), raw);  // not owned: the kernel holds it
            const ir::ThreadLevel native = threads.level(e);
            const bool native_uniform = native <= ir::ThreadLevel::Uniform;
            const bool interpreted_uniform = interpreted == cpu::Level::Constant || interpreted == cpu::Level::Uniform;
            const bool native_affine = native == ir::ThreadLevel::Affine;
            auto has = [&](auto p) {  // in e or what its variables stand for
                std::set<std::string> walked;
                return any_part(e, threads, p, walked);
            };
            const bool untracked = has([&](const ir::Expr& x) { return x.kind == ir::ExprKind::Var && !threads.tracked(x.name); });
            const bool widens = has([](const ir::Expr& x) {
                return x.kind == ir::ExprKind::Cast && ir::scalar_size(x.type) > ir::scalar_size(x.args[0]->type);
            });
            const bool narrows = has([](const ir::Expr& x) {
                return x.kind == ir::ExprKind::Cast && ir::scalar_size(x.type) < ir::scalar_size(x.args[0]->type);
            });
            const bool scales = has([](const ir::Expr& x) {
                return x.kind == ir::ExprKind::Binary && x.binary_op == ir::BinaryOp::Mul &&
                       x.args[0]->kind != ir::ExprKind::Const && x.args[1]->kind != ir::ExprKind::Const;
            });
            std::string why;
            if (native_uniform == interpreted_uniform && (native_affine == (interpreted == cpu::Level::Affine) || native_uniform)) {
                why = "the same level";
            } else if (native_affine && interpreted == cpu::Level::Invariant) {
                why = "affine in threadIdx alone (the interpreter's Invariant)";
            } else if (native == ir::ThreadLevel::Varying && interpreted == cpu::Level::Invariant) {
                why = "of threadIdx alone, not affine (the interpreter's Invariant)";
            } else if (!native_uniform && untracked) {
                why = "reads a variable declared twice or assigned (native: varying; the interpreter tracks scopes)";
            } else if (native_affine && interpreted == cpu::Level::Varying && widens) {
                why = "a widening conversion (native: affine, threadIdx is far from any limit)";
            } else if (native == ir::ThreadLevel::Varying && interpreted == cpu::Level::Affine && (narrows || scales)) {
                why = "a narrowing conversion or a product of uniforms (the interpreter: affine, wrapping ring)";
            } else {
                FAIL_CHECK("levels differ: native " << int(native) << ", interpreter " << int(interpreted) << " for "
                                                    << ir::to_string(e) << " in kernel " << k.name);
                continue;
            }
            ++tally[why];
        }
    }
    MESSAGE(expressions << " expressions of " << kernels.size() << " kernels");
    for (const auto& [why, n] : tally) MESSAGE(n << ": " << why);
    CHECK(tally["the same level"] * 2 > expressions);
}
