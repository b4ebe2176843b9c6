#include "codegen/plan_cache.h"

#include "lang/diagnostics.h"

namespace shoal::compiled {

namespace {

// Every check's source position, in kernel and check order.
std::string check_positions(const ir::LaunchPlan& plan) {
    std::string s;
    for (const ir::Kernel& k : plan.kernels)
        for (const ir::Check& c : k.checks) s += (c.loc.valid() ? c.loc.position() : "-") + ";";
    return s;
}

// `plan` with the check positions of `lowered` (the same structure).
std::shared_ptr<const ir::LaunchPlan> relocated(const std::shared_ptr<const ir::LaunchPlan>& plan,
                                                const ir::LaunchPlan& lowered) {
    auto copy = ir::relocatable_copy(plan);
    SHOAL_INTERNAL_ASSERT(copy->kernels.size() == lowered.kernels.size(), "plan cache: relocating another plan");
    for (size_t k = 0; k < copy->kernels.size(); ++k) {
        std::vector<ir::Check>& checks = copy->kernels[k].checks;
        SHOAL_INTERNAL_ASSERT(checks.size() == lowered.kernels[k].checks.size(), "plan cache: relocating other checks");
        for (size_t c = 0; c < checks.size(); ++c) checks[c].loc = lowered.kernels[k].checks[c].loc;
    }
    return copy;
}

}  // namespace

PlanCache::Found PlanCache::get(ir::LaunchPlan lowered, const ir::PassOptions& options) {
    std::string key = options.key() + "\n" + ir::to_string(lowered);
    for (const ir::Kernel& k : lowered.kernels) key += ir::to_string_without_positions(k);
    const std::string positions = check_positions(lowered);
    if (Entry* found = plans_.find(key)) {
        Entry& e = *found;
        if (auto p = e.by_positions.find(positions); p != e.by_positions.end()) return {p->second, true};
        // A long session types the same statement on many lines: keep a few.
        if (e.by_positions.size() >= 16) e.by_positions.clear();
        auto plan = relocated(e.optimised, lowered);
        e.by_positions.emplace(positions, plan);
        return {plan, true};
    }
    ir::optimize(lowered, options);
    auto plan = std::make_shared<const ir::LaunchPlan>(std::move(lowered));
    plans_.insert(key, Entry{plan, {{positions, plan}}});
    return {plan, false};
}

}  // namespace shoal::compiled
