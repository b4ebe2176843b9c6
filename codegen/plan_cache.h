// The plan cache: launch plans keyed by their structure as lowered (the
// printed plan and kernel IR) and by the optimisation options, never by
// data: extents and literals are parameters, so `saxpy 2.0 x y` and
// `saxpy 3.0 x' y'` share one plan. Only a miss pays for the pass pipeline
// (and, on a device executor, for compiling the kernels); switching a pass
// off or on never returns a plan optimised under other options.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "codegen/launch_plan.h"
#include "codegen/pipeline.h"

namespace shoal::compiled {

class PlanCache {
public:
    struct Found {
        std::shared_ptr<const ir::LaunchPlan> plan;  // optimised under the options asked for
        bool hit = false;                            // false: optimised now
    };
    // The optimised form of `lowered` (a plan as its lowering built it).
    Found get(ir::LaunchPlan lowered, const ir::PassOptions& options);
    size_t size() const { return plans_.size(); }

private:
    std::map<std::string, std::shared_ptr<const ir::LaunchPlan>> plans_;
};

}  // namespace shoal::compiled
