// The compiled backend (docs/compiler.md): array builtins build a delayed
// graph whose nodes are pull arrays; consumers (reductions, scans, ++,
// interleave, transpose, filter) and forcing (a top-level binding, printing,
// a reference builtin's argument) lower the fused graph to one launch plan
// and run it on the CPU executor. Whatever is
// outside the compiled subset declines and the reference evaluator computes
// it; a node whose function turns out not to compile is forced by replaying
// its builtin in the reference evaluator.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/launch_plan.h"
#include "lang/session.h"
#include "runtime/cpu/executor.h"

namespace shoal::cpu {

// What the backend has run, for tests and `:ir` (counters of the CPU executor).
struct BackendStats {
    int64_t plans_run = 0;
    int64_t cache_hits = 0;    // a plan whose kernels were already compiled
    int64_t cache_misses = 0;
    int64_t reference_replays = 0;  // delayed nodes forced by the reference evaluator
    // Builtins on arrays the backend declined (the reference evaluator
    // computed them), by name: what is still outside the compiled subset.
    std::map<std::string, int64_t> reference_builtins;
    std::map<std::string, int64_t> declines;  // why functions did not compile (compile_function's Decline)
    Counters total;                 // summed over every launch
    Counters last;                  // the last plan run
    std::string last_plan;          // its name
};

std::shared_ptr<CompiledBackend> make_compiled_backend();

// Called with every plan a backend compiles (a kernel cache miss), in any
// session: the tests compile all of them with NVRTC. Null: none.
using PlanObserver = void (*)(const ir::LaunchPlan&);
void set_plan_observer(PlanObserver observer);

// The backend behind make_compiled_backend, for tests that read its counters.
class CpuCompiledBackend;
const BackendStats& backend_stats(CompiledBackend& b);
void reset_backend_stats(CompiledBackend& b);

}  // namespace shoal::cpu
