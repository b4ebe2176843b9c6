// Which executor runs a session's launch plans. The front ends call
// install_compiled_backend() once and name no executor: this file picks the
// best one the machine has (the CPU executor today; the CUDA executor, with
// its reasons for declining, when it lands) and the banners describe it.
#pragma once
#include <memory>

#include "codegen/plan_executor.h"

namespace shoal::runtime {

// The executor new sessions use.
std::shared_ptr<ir::PlanExecutor> default_executor();

// Makes every Session's compiled backend the fusion engine on default_executor().
void install_compiled_backend();

}  // namespace shoal::runtime
