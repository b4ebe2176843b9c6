// The structural plan cache: a plan found *before* lowering. The plan cache
// (plan_cache.h) keys plans by their printed text, so every statement lowers
// its primitives, prints the plan and tears it down again (~600k
// instructions for `sum (x * float i)`, 80% of the statement). A plan's
// lowering is a function of
//   - what the consumer is (its descriptor: `sum` of f32, a map with two
//     outputs, ...) and the lowering options (target, switches, passes);
//   - its operands as pull arrays: their shapes and the code that reads an
//     element, which one *probe* call of each operand's `at` at symbolic
//     indices prints in full (every producer fused into it, every
//     parameter and buffer name, every constant baked in);
//   - the integer facts the lowering asked for (an extent's value choosing
//     a form), recorded with their answers;
// and never of the data otherwise: values reach a plan only as lifted
// parameters and buffers, named in the order the operands and the probe
// met them. So the key is the descriptor, the options, the probe's text and
// the source position (checks name it); an entry holds while its facts give
// the same answers, and a hit binds the parameters the probe named.
//
// A lowering that lifts a parameter the probe did not (a nested array's
// extent in a loop) is not memoised. SHOAL_CHECK_PLAN_CACHE=1 lowers anyway
// on every hit and fails, naming both plans, if the plan differs: one CI
// entry runs the suites that way, so a stale plan is never returned in
// silence.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codegen/launch_plan.h"
#include "codegen/lower_primitives.h"
#include "lang/lru_map.h"
#include "codegen/plan_cache.h"

namespace shoal::compiled {

// The integer facts one lowering asked for (LoweringFacts::value), in order, with the answers.
using FactQueries = std::vector<std::pair<std::string, std::optional<int64_t>>>;

// The source positions a plan's checks may name: the consumer's, then the
// checks the probe met, in order. The key leaves them out (the same
// statement typed on another line is a hit); a hit from other positions
// runs the same plan with the moves from its checks' positions to these
// (ir::CheckMoves), which only a failed check reads: copying the plan
// with its checks moved cost a tenth of a small statement.
using CheckPositions = std::vector<Loc>;

// A plan the memo found, and where its checks are now (null: where the
// plan says).
struct FoundPlan {
    std::shared_ptr<const ir::LaunchPlan> plan;
    ir::CheckMoves moves;
    explicit operator bool() const { return plan != nullptr; }
};

class PlanMemo {
public:
    // The plan of `key` whose facts give the same answers through `answer`,
    // with its checks at `positions`; empty if there is none.
    template <class Answer>
    FoundPlan find(const std::string& key, Answer&& answer, const CheckPositions& positions) {
        std::vector<Entry>* same_key = entries_.find(key);
        if (!same_key) return {};
        for (Entry& e : *same_key) {
            bool same = true;
            for (const auto& [name, value] : e.facts)
                if (answer(name) != value) {
                    same = false;
                    break;
                }
            if (same) return at_positions(e, positions);
        }
        return {};
    }
    void store(const std::string& key, std::shared_ptr<const ir::LaunchPlan> plan, FactQueries facts,
               CheckPositions positions);
    void clear() { entries_.clear(); }
    size_t size() const { return entries_.size(); }
    size_t capacity() const { return entries_.capacity(); }

private:
    struct Entry {
        FactQueries facts;
        std::shared_ptr<const ir::LaunchPlan> plan;
        CheckPositions lowered_at;  // the positions the plan's checks name
        // The moves for each other set of positions it ran with (a few).
        std::vector<std::pair<CheckPositions, ir::CheckMoves>> moved;
    };
    static FoundPlan at_positions(Entry& e, const CheckPositions& positions);
    // A key's entries, one per set of answers (a few: an extent crossing a
    // threshold); as many keys as the plan cache holds plans (each entry
    // keeps its plan alive).
    LruMap<std::string, std::vector<Entry>> entries_{PlanCache::kCapacity};
};

// What one probe of the operands encodes (structural_key.h): each operand's
// element types, its shape and the code its `at` emits at symbolic indices
// (without source positions), and the positions of the checks it emitted. Lifts parameters
// and registers buffers in the operands' FuseContext, as the lowering will.
struct Probe {
    std::string key;
    std::vector<Loc> checks;
};
// `combines`: the operators a reduction or scan combines with (a user's
// function compiled into them), probed at symbolic operands as well.
Probe probe_operands(std::span<const ir::PullTuple> operands, std::span<const ir::Combine> combines = {});

// The lowering options a plan key needs (everything but `facts`).
std::string options_key(const ir::LoweringOptions& options);

// SHOAL_CHECK_PLAN_CACHE=1: every hit is lowered again and compared.
bool check_plan_memo();

}  // namespace shoal::compiled
