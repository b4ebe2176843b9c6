// Replayed loop steps (docs/compiler.md, "Replayed loop steps"): the
// engine's side of lang/eval.h's LoopReplay. While a step is recorded the
// engine notes every plan it runs (the plan, its bindings, its outputs),
// which outputs become values, and anything that rules replaying out: a
// plan that reads a scalar back, an array read on the host, an output used
// otherwise than as a value. Two recorded steps that agree make a program:
// each run's operands by origin (a state leaf, an earlier run's output, an
// array from outside the loop), its scalars as constants. Replaying runs
// the program's plans on the executor, without the evaluator.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/plan_executor.h"
#include "lang/eval.h"

namespace shoal::compiled {

class FusionEngine;

// What `:time`/`:profile` read of a run besides the plan and its outcome:
// the context's lifted scalars (extents the kernels do not read), the input
// buffers and the fusion decisions.
struct RunSource {
    const std::map<std::string, Scalar>& scalars;
    const std::map<std::string, ir::ArrayData>& buffers;
    const std::vector<std::string>& fused;
    const std::vector<std::string>& materialised;
};

// One plan run of a recorded step.
struct RecordedRun {
    std::string name;
    std::shared_ptr<const ir::LaunchPlan> plan;
    ir::CheckMoves moves;  // where its checks are (plan_memo.h)
    ir::PlanBindings bind;
    std::map<std::string, Scalar> lifted;
    std::vector<std::string> fused, materialised;
    Loc origin;
    std::map<std::string, ir::ArrayData> outputs;
};

// What one loop step did, filled in by the engine while it is recorded.
struct StepRecording {
    std::vector<RecordedRun> runs;
    // Plan outputs that became values (FusionEngine::result, a forced
    // node), by identity: their element type and shape.
    struct Taken {
        Prim elem = Prim::Float;
        Shape shape;
    };
    std::map<const void*, Taken> taken;
    std::string why_not;  // the first thing seen that rules replaying out

    void refuse(std::string why) {
        if (why_not.empty()) why_not = std::move(why);
    }
    void record(const std::string& name, const std::shared_ptr<const ir::LaunchPlan>& plan, const ir::CheckMoves& moves,
                const ir::PlanBindings& bind, const RunSource& source, const Loc& origin, const ir::PlanOutcome& r);
};

// The engine's LoopReplay (FusionEngine::replay_loop).
std::unique_ptr<LoopReplay> make_loop_replay(FusionEngine& engine, const EvalContext& ctx);

}  // namespace shoal::compiled
