#include "codegen/step_replay.h"

#include <bit>

#include "codegen/array_graph.h"
#include "codegen/engine.h"

namespace shoal::compiled {

void StepRecording::record(const std::string& name, const std::shared_ptr<const ir::LaunchPlan>& plan,
                           const ir::CheckMoves& moves, const ir::PlanBindings& bind, const RunSource& source,
                           const Loc& origin, const ir::PlanOutcome& r) {
    for (const ir::PlanStep& step : plan->steps)
        if (step.kind == ir::StepKind::ReadBack) refuse("`" + name + "` reads a value back to the host");
    if (!bind.symbols.empty()) refuse("a plan's scalars carry symbols");
    runs.push_back({name, plan, moves, bind, source.scalars, source.fused, source.materialised, origin, r.outputs});
}

namespace {

// An array of the state: its memory, element type and shape.
struct Leaf {
    ir::ArrayData data;
    Prim elem = Prim::Float;
    Shape shape;
};

// The state's arrays in order (tuples flattened); false if it holds
// anything else (a scalar, an array not computed).
bool state_leaves(const Value& v, std::vector<Leaf>& out) {
    if (v.is_tuple()) {
        for (const Value& x : v.tuple())
            if (!state_leaves(x, out)) return false;
        return true;
    }
    if (v.is_array()) {
        out.push_back({ir::ArrayData{v.array(), nullptr}, v.array()->elem, v.array()->shape});
        return true;
    }
    const auto* node = v.is_delayed() ? dynamic_cast<const Node*>(v.delayed().get()) : nullptr;
    if (!node || !node->computed()) return false;
    out.push_back({node->data(), node->elem(), node->shape()});
    return true;
}

// The value's tuples with every leaf dropped: what a replayed result is shaped like.
Value skeleton(const Value& v) {
    if (!v.is_tuple()) return Value();
    std::vector<Value> elems;
    for (const Value& x : v.tuple()) elems.push_back(skeleton(x));
    return Value(std::move(elems));
}

// The value shaped like `like` (tuples) with these leaves, consumed in order.
Value with_leaves(const Value& like, const std::vector<Value>& leaves, size_t& at) {
    if (!like.is_tuple()) return leaves.at(at++);
    std::vector<Value> elems;
    for (const Value& x : like.tuple()) elems.push_back(with_leaves(x, leaves, at));
    return Value(std::move(elems));
}

// Where an operand of a recorded run (or a leaf of the step's result) came from.
struct Source {
    enum class Kind { State, Output, Outside } kind = Kind::Outside;
    size_t index = 0;        // State: the state leaf; Output: the run
    std::string buffer;      // Output: the run's output buffer
    ir::ArrayData outside;   // Outside: the array itself
};

// Host arrays compared element by element (at most this many bytes).
constexpr size_t kComparedBytes = size_t{1} << 20;

// Whether two steps read the same array from outside the loop: the same
// one, or arrays with the same elements. A step makes an array anew only
// from constants (a literal in the body): whatever it read of the state or
// of a plan's result on the host ruled replaying out, so equal elements in
// two steps are equal elements in every step.
bool same_outside(const ir::ArrayData& a, const ir::ArrayData& b) {
    if (identity(a) == identity(b)) return true;
    return a.host && b.host && a.host->elem == b.host->elem && a.host->shape == b.host->shape &&
           a.host->bytes.size() <= kComparedBytes && a.host->bytes == b.host->bytes;
}

bool same_source(const Source& a, const Source& b) {
    if (a.kind != b.kind) return false;
    switch (a.kind) {
        case Source::Kind::State: return a.index == b.index;
        case Source::Kind::Output: return a.index == b.index && a.buffer == b.buffer;
        case Source::Kind::Outside: return same_outside(a.outside, b.outside);
    }
    return false;
}

bool same_scalars(const std::map<std::string, ir::HostValue>& a, const std::map<std::string, ir::HostValue>& b) {
    if (a.size() != b.size()) return false;
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
        if (i->first != j->first || i->second.type != j->second.type || i->second.i != j->second.i ||
            std::bit_cast<uint64_t>(i->second.f) != std::bit_cast<uint64_t>(j->second.f))
            return false;
    return true;
}

// One recorded step: the state it began with and ended with, and its runs.
struct Step {
    std::vector<Leaf> start, end;
    Value result;  // its structure (tuples) is the replayed result's
    StepRecording record;

    // Where `data`, read by run `before` (or by the result: runs.size()), came from.
    Source source_of(const ir::ArrayData& data, size_t before) const {
        const void* id = identity(data);
        for (size_t j = 0; j < start.size(); ++j)
            if (identity(start[j].data) == id) return {Source::Kind::State, j, "", {}};
        for (size_t m = 0; m < before; ++m)
            for (const auto& [buffer, out] : record.runs[m].outputs)
                if (identity(out) == id) return {Source::Kind::Output, m, buffer, {}};
        return {Source::Kind::Outside, 0, "", data};
    }
};

// A run of the replayed program.
struct ProgramRun {
    RecordedRun run;  // its bindings' arrays are dropped: `inputs` says where each comes from
    std::vector<std::pair<std::string, Source>> inputs;
    std::map<std::string, StepRecording::Taken> shapes;  // each output's value
};

class EngineLoopReplay final : public LoopReplay {
public:
    EngineLoopReplay(FusionEngine& engine, const EvalContext& ctx) : engine_(engine), ctx_(ctx) {}
    ~EngineLoopReplay() override {
        if (current_ && engine_.step_recording() == &current_->record) engine_.set_step_recording(nullptr);
    }

    Value begin(const Value& state_given) override {
        // A state still delayed (the step before ran no plan) is computed
        // first, outside the record: the recorded step starts from memory.
        const Value state = settle(state_given);
        current_ = std::make_unique<Step>();
        engine_.set_step_recording(&current_->record);
        if (!state_leaves(state, current_->start)) {
            current_->record.refuse("the loop's state holds a scalar");
            return state;
        }
        // Watched: each array of the state becomes a node (a host read of it goes through Node::force).
        std::vector<Value> watched;
        for (const Leaf& l : current_->start) watched.push_back(engine_.result(l.data, l.elem, l.shape));
        size_t at = 0;
        return with_leaves(state, watched, at);
    }

    bool end(const Value& result_given, const char* host_effect) override {
        // A recorded step computes its result (recorded with it): the loop
        // runs plans at least every other step (lang/eval.cpp run_loop), and
        // one that updates its state would compute it at the next step's
        // start (eval_with) anyway.
        const Value result = settle(result_given);
        engine_.set_step_recording(nullptr);
        std::unique_ptr<Step> step = std::move(current_);
        StepRecording& record = step->record;
        if (host_effect) record.refuse(host_effect);
        if (!state_leaves(result, step->end))
            record.refuse("the step's result holds a scalar");
        for (const RecordedRun& r : record.runs)
            for (const auto& [buffer, out] : r.outputs)
                if (!record.taken.count(identity(out))) record.refuse("`" + r.name + "`'s result is read on the host");
        if (!record.why_not.empty()) {
            refuse(record.why_not);
            return false;
        }
        step->result = skeleton(result);
        if (!first_) {
            first_ = std::move(step);
            return true;
        }
        ready_ = make_program(*first_, *step);
        first_.reset();
        return ready_;
    }

    void refuse(const std::string& why) override { engine_.not_replayed(why); }

    bool ready() const override { return ready_; }

    Value step(const Value& state) override {
        std::vector<Leaf> start;
        SHOAL_INTERNAL_ASSERT(state_leaves(state, start) && start.size() == state_size_,
                              "a replayed loop step's state changed its form");
        std::vector<std::map<std::string, ir::ArrayData>> outputs;
        outputs.reserve(program_.size());
        auto data_of = [&](const Source& s) -> const ir::ArrayData& {
            switch (s.kind) {
                case Source::Kind::State: return start[s.index].data;
                case Source::Kind::Output: return outputs[s.index].at(s.buffer);
                case Source::Kind::Outside: break;
            }
            return s.outside;
        };
        for (const ProgramRun& p : program_) {
            ir::PlanBindings bind;
            bind.scalars = p.run.bind.scalars;
            for (const auto& [name, source] : p.inputs) bind.inputs.emplace(name, data_of(source));
            const Restore<Loc> at(engine_.origin(), p.run.origin);
            ir::PlanOutcome r = engine_.launch(p.run.plan, bind, ctx_,
                                               RunSource{p.run.lifted, bind.inputs, p.run.fused, p.run.materialised},
                                               /*replayed=*/true, p.run.moves);
            for (auto& [buffer, out] : r.outputs)
                if (out.host) {
                    const StepRecording::Taken& t = p.shapes.at(buffer);
                    shaped(out.host, t.elem, t.shape);
                }
            outputs.push_back(std::move(r.outputs));
        }
        std::vector<Value> leaves;
        for (size_t k = 0; k < results_.size(); ++k)
            leaves.push_back(engine_.result(data_of(results_[k]), result_shapes_[k].elem, result_shapes_[k].shape));
        size_t at = 0;
        return with_leaves(like_, leaves, at);
    }

private:
    // The program of two recorded steps, if they agree: the same plans with
    // the same scalars, each operand of the same origin.
    bool make_program(const Step& a, const Step& b) {
        const std::vector<RecordedRun>& ra = a.record.runs;
        const std::vector<RecordedRun>& rb = b.record.runs;
        auto differ = [this](const std::string& what) {
            refuse("two steps " + what);
            return false;
        };
        if (ra.size() != rb.size() || a.end.size() != b.end.size() || a.start.size() != b.start.size())
            return differ("ran different numbers of plans");
        std::vector<ProgramRun> program;
        for (size_t k = 0; k < rb.size(); ++k) {
            if (ra[k].plan != rb[k].plan || ra[k].bind.inputs.size() != rb[k].bind.inputs.size())
                return differ("ran different plans (`" + ra[k].name + "`, `" + rb[k].name + "`)");
            if (!same_scalars(ra[k].bind.scalars, rb[k].bind.scalars))
                return differ("gave `" + rb[k].name + "` different scalars (computed on the host from the state)");
            ProgramRun p{rb[k], {}, {}};
            for (const auto& [name, data] : rb[k].bind.inputs) {
                const auto other = ra[k].bind.inputs.find(name);
                Source s = b.source_of(data, k);
                if (other == ra[k].bind.inputs.end() || !same_source(a.source_of(other->second, k), s))
                    return differ("gave `" + rb[k].name +
                                  "` arrays of different origins or elements (a large array made anew on the host "
                                  "each step, or one in device memory)");
                p.inputs.emplace_back(name, std::move(s));
            }
            for (const auto& [buffer, out] : rb[k].outputs) p.shapes[buffer] = b.record.taken.at(identity(out));
            p.run.bind.inputs.clear();  // not kept alive by the program
            p.run.outputs.clear();
            program.push_back(std::move(p));
        }
        std::vector<Source> results;
        for (size_t j = 0; j < b.end.size(); ++j) {
            Source s = b.source_of(b.end[j].data, rb.size());
            if (!same_source(a.source_of(a.end[j].data, ra.size()), s))
                return differ("ended with arrays of different origins");
            if (a.end[j].shape != b.end[j].shape || a.end[j].elem != b.end[j].elem || a.start[j].shape != b.end[j].shape)
                return differ("changed the state's shape");
            results.push_back(std::move(s));
        }
        program_ = std::move(program);
        results_ = std::move(results);
        result_shapes_.clear();
        for (const Leaf& l : b.end) result_shapes_.push_back({l.elem, l.shape});
        like_ = b.result;
        state_size_ = b.end.size();
        return true;
    }

    FusionEngine& engine_;
    const EvalContext& ctx_;
    std::unique_ptr<Step> current_, first_;
    bool ready_ = false;
    std::vector<ProgramRun> program_;
    std::vector<Source> results_;
    std::vector<StepRecording::Taken> result_shapes_;
    Value like_;
    size_t state_size_ = 0;
};

}  // namespace

std::unique_ptr<LoopReplay> make_loop_replay(FusionEngine& engine, const EvalContext& ctx) {
    return std::make_unique<EngineLoopReplay>(engine, ctx);
}

}  // namespace shoal::compiled
