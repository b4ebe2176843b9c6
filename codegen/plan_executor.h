// The interface between the fusion engine (codegen/) and the machines that
// run its launch plans (runtime/): an executor walks a plan's host program
// (codegen/launch_plan.h: allocate, compute host scalars, launch, check,
// read back, free) on arrays bound by buffer name, and reports what each
// kernel did. The CPU executor (runtime/cpu) interprets the kernel IR; the
// CUDA executor prints it, compiles it with NVRTC and launches it. The engine
// knows executors only through this header, so the same plan, cache and
// `:cuda`/`:profile` support serve every device.
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/launch_plan.h"
#include "lang/profile.h"
#include "lang/value.h"

namespace shoal::ir {

// What the kernels of a plan did (lang/profile.h: the session shows it).
using KernelCounters = shoal::KernelCounters;

// The arguments of one run of a plan, by the names of its entry signature.
struct PlanBindings {
    std::map<std::string, HostValue> scalars;  // every Input scalar
    std::map<std::string, ArrayPtr> inputs;    // every Input buffer (read only)
    // Optional, per Output buffer: an array of at least the buffer's element
    // count that the kernels write in place (no copy of the result).
    std::map<std::string, ArrayPtr> outputs;
};

struct PlanOutcome {
    // Every Output buffer not bound in PlanBindings::outputs, as a rank-1
    // array of the buffer's count (the caller gives it its shape).
    std::map<std::string, ArrayPtr> outputs;
    std::map<std::string, HostValue> scalars;   // every scalar that got a value (inputs, derived, read back)
    std::vector<KernelCounters> kernel_counters;  // per plan kernel (index as in plan.kernels)
    KernelCounters total;                         // summed over all launches
};

struct RunOptions {
    // Checking mode (`:set check on`, on in the tests): the executor checks
    // what it can (the CPU executor: shared-memory races, divergent barriers
    // and shuffles; fresh memory filled with 0xff bytes).
    bool check = false;
    // Set by another thread to stop the run (Ctrl-C): looked at often, the
    // run then throws Error(Interrupted).
    const std::atomic<bool>* cancel = nullptr;
};

// An executor of launch plans. A failed kernel check raises the
// shoal::Error(Runtime) the reference evaluator gives, at the check's
// source location; the same error on every executor (the lowest failing
// thread, see codegen/ir.h `Check`).
class PlanExecutor {
public:
    virtual ~PlanExecutor() = default;
    // A short name: "cpu", "cuda".
    virtual std::string name() const = 0;
    // One line for banners and `:help`: what runs the kernels, and where.
    virtual std::string description() const = 0;
    virtual PlanOutcome run(const LaunchPlan& plan, const PlanBindings& bindings, const RunOptions& options) = 0;
};

}  // namespace shoal::ir
