// The plan cache: launch plans keyed by their structure as lowered (the
// printed plan and kernel IR) and by the optimisation options, never by
// data: extents and literals are parameters, so `saxpy 2.0 x y` and
// `saxpy 3.0 x' y'` share one plan. Only a miss pays for the pass pipeline
// (and, on a device executor, for compiling the kernels); switching a pass
// off or on never returns a plan optimised under other options.
//
// Nor by where the source is: the same statement typed again on another
// line lowers to kernels whose checks name other positions. The key leaves
// the positions out; a hit whose positions differ gets a copy of the
// optimised plan with the new positions in its checks (kept, so the next
// run from that line hits exactly), and errors name the line that ran.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "codegen/launch_plan.h"
#include "codegen/pipeline.h"
#include "lang/lru_map.h"

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
    size_t capacity() const { return plans_.capacity(); }
    uint64_t evictions() const { return plans_.evictions(); }
    // The least recently used plan goes beyond this many (a long session
    // lowering ever new statements must not grow without bound). A key is
    // the printed plan (tens of KiB): 2048 of them held ~100 MiB and slowed
    // every lookup; re-lowering an evicted plan costs about a millisecond.
    static constexpr size_t kCapacity = 512;

private:
    struct Entry {
        std::shared_ptr<const ir::LaunchPlan> optimised;
        // The optimised plan with each set of check positions it ran with.
        std::map<std::string, std::shared_ptr<const ir::LaunchPlan>> by_positions;
    };
    LruMap<std::string, Entry> plans_{kCapacity};
};

}  // namespace shoal::compiled
