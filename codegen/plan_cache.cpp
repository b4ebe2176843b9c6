#include "codegen/plan_cache.h"

namespace shoal::compiled {

PlanCache::Found PlanCache::get(ir::LaunchPlan lowered, const ir::PassOptions& options) {
    std::string key = options.key() + "\n" + ir::to_string(lowered);
    for (const ir::Kernel& k : lowered.kernels) key += ir::to_string(k);
    if (auto it = plans_.find(key); it != plans_.end()) return {it->second, true};
    ir::optimize(lowered, options);
    auto plan = std::make_shared<const ir::LaunchPlan>(std::move(lowered));
    plans_.emplace(std::move(key), plan);
    return {plan, false};
}

}  // namespace shoal::compiled
