// The optimisation pipeline every kernel goes through after lowering: one
// list of passes, in order. The plan cache (codegen/plan_cache.h) runs it on
// a miss, so every kernel of every launch plan (what the executors run, the
// CUDA printer prints and `:ir` shows) is optimised exactly once, under the
// session's PassOptions.
//
//   verify -> simplify -> cse -> simplify -> dead_code -> verify
//
// simplify runs again after CSE, which turns equal values into one variable
// (`count != count` after two copies of a fused producer are merged).
//
// Each pass is one IRMutator in its own file (simplify.h, cse.h,
// dead_code.h): it says what it does and the rules that keep it safe. The
// final verify catches a pass that broke an invariant, naming the kernel.
//
// Every pass but verify can be switched off by name (PassOptions), to see
// its effect or to rule it out when hunting a miscompilation; the results
// must not change, only the code.
//
// SHOAL_DUMP_IR=1 in the environment prints the IR after each pass to
// std::cerr, each dump headed by `// SHOAL_DUMP_IR <kernel> after <pass>`.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "codegen/ir.h"

namespace shoal::ir {

struct LaunchPlan;

struct KernelPass {
    const char* name;
    Kernel (*run)(const Kernel&);
};

// The passes, in the order optimize_kernel runs them.
const std::vector<KernelPass>& kernel_passes();

// Which passes run. verify always does (it proves the others kept the
// invariants); disabling an unknown name is an internal error.
struct PassOptions {
    std::set<std::string> disabled;  // pass names, as in kernel_passes()

    bool enabled(const std::string& pass) const { return !disabled.count(pass); }
    PassOptions& disable(const std::string& pass);
    // A text that differs whenever the options do (part of the plan cache key).
    std::string key() const;
};

Kernel optimize_kernel(const Kernel& k, const PassOptions& options = {});
// Every kernel of a plan (as its lowering built it); checks its host program
// first (verify_host_program).
void optimize(LaunchPlan& plan, const PassOptions& options = {});

}  // namespace shoal::ir
