// The optimisation pipeline every kernel goes through after lowering: one
// list of passes, in order. PlanBuilder::add_kernel runs it, so every kernel
// of every launch plan (what the executor runs, the CUDA printer prints and
// `:ir` shows) is optimised exactly once.
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
// SHOAL_DUMP_IR=1 in the environment prints the IR after each pass to
// std::cerr, each dump headed by `// SHOAL_DUMP_IR <kernel> after <pass>`.
#pragma once
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

Kernel optimize_kernel(const Kernel& k);
// Every kernel of a plan built with PlanBuilder::defer_optimization.
void optimize_plan(LaunchPlan& plan);

}  // namespace shoal::ir
