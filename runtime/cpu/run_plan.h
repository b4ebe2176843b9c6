// Running a LaunchPlan on the CPU executor: binds the caller's scalars and
// buffers by name and walks the plan's host program (launch_plan.h) step by
// step: computes host scalars, allocates, launches kernels on the IR
// interpreter, turns a failed check into the shoal::Error the reference
// evaluator gives, reads scalars back, frees.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/launch_plan.h"
#include "codegen/plan_executor.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/host_memory.h"

namespace shoal::cpu {

class NativePlan;

// Host memory owned by the runner (outputs, temporaries).
struct HostBuffer {
    ir::ScalarType elem = ir::ScalarType::F32;
    int64_t count = 0;
    HostBytes bytes;

    template <class T> const T* data() const { return reinterpret_cast<const T*>(bytes.data()); }
    template <class T> T* data() { return reinterpret_cast<T*>(bytes.data()); }
};

struct PlanArgs {
    std::map<std::string, ir::HostValue> scalars;  // every Input scalar
    std::map<std::string, BufferArg> buffers;      // every Input buffer (caller memory, not written)
    // Optional: caller memory for Output buffers (at least the plan's count of
    // elements), written in place, so the caller need not copy the result
    // out of PlanResult::outputs (which then has no entry for it).
    std::map<std::string, BufferArg> outputs;
    // Optional: memory for the other Output buffers, asked for by their Alloc
    // step (count elements), so that a result sized on the device (a filter's)
    // is written where the caller keeps it. Without it, run_plan allocates
    // them and hands them back in PlanResult::outputs.
    std::function<BufferArg(const std::string& buffer, ir::ScalarType elem, int64_t count)> allocate_output;
    // Optional: the plan's kernels as native code (native_tier.h); a kernel
    // it does not run goes to the interpreter.
    const NativePlan* native = nullptr;
    // Optional, without `native` (the auto tier): asked before each launch
    // with the seconds the run has taken so far; the native form to run the
    // rest of the plan with once it is ready, else null. A long first run
    // starts its build and switches between two launches.
    std::function<const NativePlan*(double seconds)> native_when_ready;
};

struct PlanResult {
    std::map<std::string, HostBuffer> outputs;        // every Output buffer not in PlanArgs::outputs
    std::map<std::string, ir::HostValue> scalars;     // every scalar that got a value (inputs, derived, read back)
    std::vector<Counters> kernel_counters;            // per plan kernel (index as in plan.kernels)
    Counters total;                                   // summed over all launches
    std::vector<ir::CallCounters> calls;              // per library call made
};

// Throws shoal::Error(Runtime) at the check's location when a kernel records
// a failed check (ir::raise_failed_check).
//
// Outputs and temporaries are NOT zeroed, as on a GPU: in check mode they
// are filled with 0xff bytes (NaN for floats, -1 for integers) so that a
// lowering that reads memory it never wrote shows up in tests.
PlanResult run_plan(const ir::LaunchPlan& plan, const PlanArgs& args, const ExecOptions& options);

}  // namespace shoal::cpu
