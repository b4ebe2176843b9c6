// The compiled backend (docs/compiler.md): array builtins build a delayed
// graph whose nodes are pull arrays; consumers (reductions, scans, ++,
// interleave, transpose, filter, sort, permute, scatter) and forcing (a
// top-level binding, printing, a reference builtin's argument) lower the
// fused graph to one launch plan, look it up in the plan cache and hand it to
// a PlanExecutor (codegen/plan_executor.h): the CPU executor today, the CUDA
// executor with a GPU. Whatever is outside the compiled subset declines and
// the reference evaluator computes it; a node whose function turns out not
// to compile is forced by replaying its builtin in the reference evaluator.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "codegen/plan_executor.h"
#include "codegen/pipeline.h"
#include "lang/session.h"

namespace shoal::compiled {

// What the backend has run, for tests and `:ir` (the executor's counters).
struct BackendStats {
    int64_t plans_run = 0;
    int64_t cache_hits = 0;    // a plan already lowered, optimised and compiled
    int64_t cache_misses = 0;
    int64_t found_before_lowering = 0;  // hits of the structural cache (plan_memo.h): nothing lowered
    int64_t reference_replays = 0;  // delayed nodes forced by the reference evaluator
    // Builtins on arrays the backend declined (the reference evaluator
    // computed them), by name: what is still outside the compiled subset.
    std::map<std::string, int64_t> reference_builtins;
    std::map<std::string, int64_t> declines;  // why functions did not compile (compile_function's Decline)
    ir::KernelCounters total;        // summed over every launch
    ir::KernelCounters last;         // the last plan run
    std::string last_plan;           // its name
};

// The fusion engine running its plans on `executor`.
// `factory` makes the executors `:set executor` asks for (and the CPU one a
// session moves to when its GPU stops); null: the executor is fixed.
// `toolchain` compiles for `:compile` and reports `:cache` (null: no GPU compiler).
std::shared_ptr<CompiledBackend> make_compiled_backend(std::shared_ptr<ir::PlanExecutor> executor,
                                                       ir::ExecutorFactory factory = nullptr,
                                                       std::shared_ptr<ir::KernelToolchain> toolchain = nullptr);

// Called with every plan a backend compiles (a plan cache miss), in any
// session: the tests compile all of them with NVRTC. Null: none.
using PlanObserver = void (*)(const ir::LaunchPlan&);
PlanObserver set_plan_observer(PlanObserver observer);  // returns the one before

// The counters of a backend made by make_compiled_backend (for tests and benches).
const BackendStats& backend_stats(CompiledBackend& b);
void reset_backend_stats(CompiledBackend& b);
// The optimisation passes a backend runs on the plans it builds; changing
// them never returns a plan optimised under other options (the plan cache
// keys on them).
void set_pass_options(CompiledBackend& b, const ir::PassOptions& options);

}  // namespace shoal::compiled
