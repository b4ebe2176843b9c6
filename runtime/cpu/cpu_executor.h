// The CPU executor behind the engine's PlanExecutor interface: runs a plan's
// host program with run_plan (run_plan.h), the kernels on the IR interpreter
// (executor.h) over every core, on the host memory of Shoal's arrays.
#pragma once
#include <memory>

#include "codegen/plan_executor.h"

namespace shoal::cpu {

// `why_no_gpu`: why the session is not on a GPU ("no CUDA driver"), for the
// banner and `:device`.
std::shared_ptr<ir::PlanExecutor> make_cpu_executor(std::string why_no_gpu = "");

}  // namespace shoal::cpu
