#include "runtime/cpu/cpu_executor.h"

#include "runtime/cpu/blas.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <thread>

#include "runtime/cpu/native_tier.h"
#include "runtime/cpu/run_plan.h"
#include "runtime/cpu/thread_pool.h"

namespace shoal::cpu {

namespace {

BufferArg memory_of(const ArrayPtr& a) { return BufferArg{a->bytes.data(), a->size()}; }

class CpuExecutor final : public ir::PlanExecutor {
public:
    explicit CpuExecutor(std::string why_no_gpu) : why_no_gpu_(std::move(why_no_gpu)) {}
    std::string name() const override { return "cpu"; }
    std::string description() const override {
        const int threads = thread_budget();
        return "the CPU executor (" + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s") +
               ", " + tier_name(tier_.tier()) + " tier" + (why_no_gpu_.empty() ? ")" : "; no GPU: " + why_no_gpu_ + ")");
    }

    std::string device_report() const override {
        return (why_no_gpu_.empty() ? std::string("no GPU") : "no GPU: " + why_no_gpu_) + "\nkernels run on " +
               description() + "\n" + tier_.describe() + "\nproducts: " + blas_description();
    }

    std::string memory_report(const std::map<const ir::DeviceArray*, std::string>&) const override {
        return "no device memory: arrays are in host memory (" + description() + ")";
    }

    ir::PlanOutcome run(const std::shared_ptr<const ir::LaunchPlan>& plan, const ir::PlanBindings& bindings,
                        const ir::RunOptions& options) override {
        PlanArgs args;
        args.scalars = bindings.scalars;
        // An array another executor left in device memory comes to the host
        // (after `:set executor cpu`); it keeps its device copy.
        std::vector<ArrayPtr> moved;
        for (const auto& [name, a] : bindings.inputs) {
            if (a.host) {
                args.buffers[name] = memory_of(a.host);
                continue;
            }
            const Prim p = ir::buffer_prim(a.device->elem());
            moved.push_back(ir::host_array(a, p, Shape{a.device->count()}));
            args.buffers[name] = memory_of(moved.back());
        }
        ExecOptions exec;
        exec.check = options.check;
        exec.cancel = options.cancel;
        if (tier_.tier() == Tier::Compare) return run_compared(plan, args, exec);
        // Checking mode and :profile's counters are the interpreter's.
        std::shared_ptr<const NativePlan> native;
        // A plan of library calls alone (a product) has nothing to build.
        const bool builds = !options.check && !options.counters && !plan->kernels.empty();
        if (builds) native = tier_.for_run(plan, options.cancel);
        args.native = native.get();
        std::shared_ptr<const NativePlan> switched;  // built while this run was interpreted
        if (!native && builds && tier_.tier() == Tier::Auto)
            args.native_when_ready = [&](double seconds) { return (switched = tier_.when_ready(plan, seconds)).get(); };
        const auto start = std::chrono::steady_clock::now();
        ir::PlanOutcome out = run_into_arrays(*plan, std::move(args), exec);
        if (builds && !native && !switched)
            tier_.ran_interpreted(plan, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        return out;
    }

    std::string take_notice() override { return tier_.take_notice(); }
    // Native code reads its caches directly: a tile is only a copy (tiled and
    // untiled code run alike natively), and the interpreter, which runs a plan
    // first in the auto tier, pays 2.6x for one. Sorts take the CPU form
    // (lower_sort.cpp: 10x faster natively, the same bits). Checking mode,
    // the counters and the interpreter tier keep the GPU's form; the compare
    // tier keeps its tiles (their code tested natively) and sorts as users get them.
    ir::LoweringTarget lowering_target(const ir::RunOptions& options) const override {
        const Tier t = tier_.tier();
        if (options.check || options.counters || t == Tier::Interpret) return {};
        const int cores = worker_count(0, std::numeric_limits<int64_t>::max());
        return {.shared_tiles = t == Tier::Compare, .cpu_cores = cores};
    }
    bool has_library(const std::string& function) const override {
        return (function == "gemm" && have_blas()) || (function == "lu" && have_lapack()) || (function == "svd" && have_svd());
    }
    CompileCounters compilation() const override { return tier_.waited_builds(); }
    std::pair<int, std::string> parallel_units() const override {
        return {worker_count(0, std::numeric_limits<int64_t>::max()), "core"};
    }
    std::string cache_report() const override {
        const auto [programs, capacity] = interpreter_programs();
        return tier_.cache_report() + "\ninterpreter: " + std::to_string(programs) +
               " kernels held as node programs (at most " + std::to_string(capacity) + ")";
    }
    std::string native_compile_report(const std::vector<ir::LaunchPlan>& plans) override {
        if (tier_.tier() == Tier::Interpret) return "native code: not built (SHOAL_CPU_TIER=interpret)";
        std::string text = "native code for this CPU (one shared object per plan):";
        for (const ir::LaunchPlan& plan : plans) {
            std::string why;
            std::vector<std::string> skipped;
            const auto native = NativePlan::build(plan.kernels, &why, &skipped);
            char ms[32], load_ms[32];
            std::snprintf(ms, sizeof ms, "%.1f ms", native ? native->compile_seconds * 1e3 : 0.0);
            std::snprintf(load_ms, sizeof load_ms, "%.2f ms", native ? native->load_seconds * 1e3 : 0.0);
            text += "\n  " + plan.name + " (" + std::to_string(plan.kernels.size()) +
                    (plan.kernels.size() == 1 ? " kernel): " : " kernels): ") +
                    (!native ? "not built: " + why.substr(0, why.find('\n'))
                     : native->cache_hit ? std::string("from the cache, loaded in ") + load_ms
                                         : std::string("built in ") + ms);
            for (const std::string& k : skipped) text += "; interpreted: " + k;
        }
        return text;
    }

private:
    // Runs the plan with results in new arrays (no copy).
    static ir::PlanOutcome run_into_arrays(const ir::LaunchPlan& plan, PlanArgs args, const ExecOptions& exec) {
        ir::PlanOutcome out;
        args.allocate_output = [&out](const std::string& name, ir::ScalarType elem, int64_t count) {
            auto a = std::make_shared<Array>(ir::buffer_prim(elem), Shape{count}, Array::Uninitialised{});
            out.outputs[name] = ir::ArrayData{a, nullptr};
            return memory_of(a);
        };
        PlanResult r = run_plan(plan, args, exec);
        out.scalars = std::move(r.scalars);
        out.kernel_counters = std::move(r.kernel_counters);
        out.total = r.total;
        out.calls = std::move(r.calls);
        return out;
    }

    // SHOAL_CPU_TIER=compare: the plan on both tiers, new memory filled with
    // 0xff bytes in both (so unwritten elements compare equal), every output
    // and every scalar compared bit for bit (NaNs as NaNs); an error must be
    // the same error. The interpreter's outcome is returned (its counters).
    ir::PlanOutcome run_compared(const std::shared_ptr<const ir::LaunchPlan>& plan, PlanArgs args, ExecOptions exec) {
        exec.check = true;
        const std::shared_ptr<const NativePlan> native = tier_.for_run(plan, exec.cancel);
        // A run's outcome or its error (a failed check: the user's error).
        struct Ran {
            std::optional<ir::PlanOutcome> outcome;
            std::exception_ptr error;
            std::string message;
        };
        auto attempt = [&](const PlanArgs& a) {
            Ran r;
            try {
                r.outcome = run_into_arrays(*plan, a, exec);
            } catch (const Error& e) {
                if (e.kind == ErrorKind::Internal || e.kind == ErrorKind::Interrupted) throw;
                r.error = std::current_exception();
                r.message = e.what();
            }
            return r;
        };
        Ran interpreted = attempt(args);
        if (native) {
            args.native = native.get();
            const Ran compiled = attempt(args);
            const std::string difference = differences(*plan, interpreted.outcome, compiled.outcome,
                                                       interpreted.message, compiled.message);
            if (!difference.empty())
                internal_error(__FILE__, __LINE__,
                               "native code and the interpreter disagree on plan " + plan->name + ": " + difference);
        }
        if (interpreted.error) std::rethrow_exception(interpreted.error);
        return std::move(*interpreted.outcome);
    }

    static std::string differences(const ir::LaunchPlan& plan, const std::optional<ir::PlanOutcome>& a,
                                   const std::optional<ir::PlanOutcome>& b, const std::string& a_error,
                                   const std::string& b_error) {
        if (!a || !b)
            return without_memory_state(a_error) == without_memory_state(b_error)
                       ? ""
                       : "errors: interpreter '" + a_error + "', native '" + b_error + "'";
        for (const auto& [name, data] : a->outputs) {
            auto it = b->outputs.find(name);
            if (it == b->outputs.end()) return "output " + name + " missing";
            const Array &x = *data.host, &y = *it->second.host;
            if (x.size() != y.size()) return "output " + name + " sizes differ";
            const ir::PlanBuffer* pb = plan.find_buffer(name);
            const size_t width = ir::scalar_size(pb->elem);
            for (int64_t i = 0; i < x.size(); ++i) {
                const auto* p = x.bytes.data() + i * int64_t(width);
                const auto* q = y.bytes.data() + i * int64_t(width);
                if (!same_element(pb->elem, p, q))
                    return "output " + name + "[" + std::to_string(i) + "]: interpreter " +
                           show_element(pb->elem, p) + ", native " + show_element(pb->elem, q);
            }
        }
        for (const auto& [name, v] : a->scalars) {
            auto it = b->scalars.find(name);
            if (it == b->scalars.end()) return "scalar " + name + " missing";
            const ir::HostValue& w = it->second;
            const bool both_nan = ir::is_float(v.type) && v.f != v.f && w.f != w.f;
            const bool same = both_nan || (std::memcmp(&v.f, &w.f, sizeof v.f) == 0 && v.i == w.i);
            if (!same) return "scalar " + name + " differs";
        }
        return "";
    }

    // Bit for bit, but any NaN equals any NaN (payloads may differ).
    static bool same_element(ir::ScalarType t, const void* p, const void* q) {
        if (ir::is_float(t)) {
            const double x = ir::load_element(t, p).f, y = ir::load_element(t, q).f;
            if (x != x && y != y) return true;
        }
        return std::memcmp(p, q, ir::scalar_size(t)) == 0;
    }

    static std::string show_element(ir::ScalarType t, const void* p) {
        const ir::HostValue v = ir::load_element(t, p);
        return ir::is_float(t) ? std::to_string(v.f) : std::to_string(v.i);
    }

    std::string why_no_gpu_;
    NativeTier tier_;  // SHOAL_CPU_TIER
};

}  // namespace

std::shared_ptr<ir::PlanExecutor> make_cpu_executor(std::string why_no_gpu) {
    return std::make_shared<CpuExecutor>(std::move(why_no_gpu));
}

}  // namespace shoal::cpu
