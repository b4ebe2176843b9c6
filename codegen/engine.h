// The fusion engine: the compiled backend's implementation, shared by its
// parts (engine.cpp: forcing, running plans, the entry point; producers.cpp;
// consumers.cpp). Not for use outside codegen/: see compiled_backend.h.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "codegen/array_graph.h"
#include "codegen/compiled_backend.h"
#include "codegen/plan_cache.h"
#include "codegen/plan_memo.h"
#include "codegen/step_replay.h"

namespace shoal::compiled {

// Sets a member for the length of a scope (also when it throws).
template <class T> class Restore {
public:
    Restore(T& slot, T value) : slot_(slot), saved_(std::exchange(slot, std::move(value))) {}
    ~Restore() { slot_ = std::move(saved_); }
    Restore(const Restore&) = delete;
    Restore& operator=(const Restore&) = delete;

private:
    T& slot_;
    T saved_;
};


class FusionEngine final : public CompiledBackend, public std::enable_shared_from_this<FusionEngine> {
public:
    FusionEngine(std::shared_ptr<ir::PlanExecutor> executor, ir::ExecutorFactory factory,
                 std::shared_ptr<ir::KernelToolchain> toolchain)
        : executor_(std::move(executor)), factory_(std::move(factory)), toolchain_(std::move(toolchain)) {}

    std::optional<Value> apply_builtin(std::string_view name, const Type& type, std::span<const Value> args,
                                       EvalContext& ctx, const Loc& loc) override;
    std::optional<Value> slice(const Value& a, std::span<const ops::AxisSelect> sel, const Loc& loc) override;
    std::optional<Value> update(const Value& a, std::span<const ops::AxisSelect> sel, const Value& v,
                                const Loc& loc) override;
    int64_t plans_run() const override { return stats.plans_run; }
    std::optional<Value> random_block(const Shape& shape, uint64_t seed, uint64_t stream, int64_t first,
                                      EvalContext& ctx) override;
    std::unique_ptr<LoopReplay> replay_loop(const EvalContext& ctx) override;
    void set_check(bool on) override { options_.check = on; }
    void set_optimisations(const Optimisations& on) override { optimisations = on; }
    void forcing_because(const std::string& why) override { forcing_why_ = why; }
    std::string explain(const std::function<void()>& run, const ExplainOptions& options) override;
    ProfileReport profile(const std::function<void()>& run, const std::string& arch) override;
    std::string description() const override;
    std::string executor_name() const override { return executor_->name(); }
    void use_executor(const std::string& name) override;
    std::string device_lost() const override { return executor_->lost_reason(); }
    std::string device_report() const override { return executor_->device_report(); }
    TransferCounters transfers() const override { return executor_->transfers(); }
    CompileCounters compilation() const override { return executor_->compilation(); }
    std::string compile_report(const std::function<void()>& run, const std::string& arch) override;
    std::string cache_report() const override;
    std::string memory_report(const std::vector<std::pair<std::string, Value>>& bindings) const override;
    std::string clear_cache() override;
    std::vector<EmittedFile> emit(const EmitRequest& request) override;
    // The kernels of the units emitted so far, by unit name, as their
    // source defines them (emit::EmittedUnit): the simulated CUDA runtime
    // runs them when an emitted wrapper launches one.
    const std::map<std::string, std::vector<ir::Kernel>>& emitted_kernels() const { return emitted_kernels_; }

    // `:emit`'s trace (codegen/emit_trace.h): runs `run` with every plan
    // recorded as `:cuda` would show it (kernels named after `function`)
    // into `shown`, before the executor runs it.
    void trace(const std::function<void()>& run, const std::string& function, std::vector<ir::LaunchPlan>& shown);
    bool checking() const { return options_.check; }

    // Forces a group: one map kernel writing every member, or (when a
    // function does not compile) the reference evaluator's replay.
    // `why`: why it is materialised rather than fused (`:profile` shows it);
    // empty: the reason the caller set (forcing_because), else kNeededWhole.
    void force_group(const NodeGroup& g, const std::string& why = "");
    // What a plan's lowering reads besides the options, for the structural
    // cache (plan_memo.h): its operands as pull arrays, made before the
    // lowering, and the consumer (`descriptor`: everything else the lowering
    // depends on, "" for a plan that is not memoised).
    struct PlanOperands {
        std::string descriptor;
        std::vector<ir::PullTuple> operands;
        std::vector<ir::Combine> combines = {};  // a reduction's or scan's operator (probed too)
    };
    // Looks the plan up in the structural cache, else lowers it (build) and
    // looks it up in the plan cache; runs it on the executor.
    ir::PlanOutcome run(const std::string& name, FuseContext& fc, const PlanOperands& in,
                        const std::function<void(ir::PlanBuilder&)>& build);
    // Runs a plan on bound operands: execute's second half, and each run
    // of a replayed loop step (step_replay.h).
    // A failed check's error names the position `moves` moves it to.
    ir::PlanOutcome launch(const std::shared_ptr<const ir::LaunchPlan>& plan, const ir::PlanBindings& bind,
                           const EvalContext& ctx, const RunSource& source, bool replayed = false,
                           const ir::CheckMoves& moves = nullptr);
    // While a loop step is recorded (step_replay.h): the record; else null.
    StepRecording* step_recording() const { return step_recording_; }
    void set_step_recording(StepRecording* r) { step_recording_ = r; }
    // A loop was not replayed, for this reason (`:time`'s advice says the first).
    void not_replayed(const std::string& why) {
        if (profiling_ && profiling_->report.loop_not_replayed.empty()) profiling_->report.loop_not_replayed = why;
    }
    // The origin plans run for (a replayed run sets its recorded one).
    Loc& origin() { return origin_; }
    // Whether a plan's fusion decisions are shown (`:profile`, and what
    // shows plans): FuseContext notes them only then.
    bool shows_decisions() const;
    // A plan's output as a value of `elem` and `shape`: the host array (no
    // copy) or, in device memory, a computed node that stays there until
    // the host needs it (also a host one while a loop step is recorded).
    Value result(const ir::ArrayData& out, Prim elem, const Shape& shape);
    // The outputs `names`, one per element type in `prims`, all of `shape`.
    std::vector<Value> results(const ir::PlanOutcome& r, const std::vector<std::string>& names,
                               const std::vector<Prim>& prims, const Shape& shape);

    BackendStats stats;
    ir::PassOptions passes;
    Optimisations optimisations;  // `:set fusion|sharedmem|hoist` (lang/session.h)

private:
    // A node computed from `operands` (array-likes it reads; they are fused
    // into it unless that would make kernels too large, then forced first).
    Value node(Prim elem, Shape shape, Node::MakePull pull, Replay replay, const EvalContext& ctx,
               const std::vector<Value>& operands, std::optional<Value> transpose_of = std::nullopt,
               int64_t reads = 1, AlignedSources aligned = {}, bool reads_transposed = false);
    // The nodes of a map returning a tuple: one per leaf component.
    std::vector<Value> tuple_nodes(std::vector<Prim> elems, Shape shape,
                                   std::function<ir::PullTuple(FuseContext&)> pull, Replay replay,
                                   const EvalContext& ctx, const std::vector<Value>& operands);
    std::vector<ir::ArrayData> materialise(const NodeGroup& g);
    std::optional<Value> compile_builtin(const std::string& name, const Type& type, std::span<const Value> args,
                                         EvalContext& ctx, const Loc& loc);
    std::optional<Value> producer(const std::string& name, const Type& type, std::span<const Value> args,
                                  const EvalContext& ctx, const Loc& loc);
    void warn_rows_along_columns(const std::vector<Value>& a, const std::vector<Shape>& shapes, const EvalContext& ctx,
                                 const Loc& loc);
    std::optional<Value> map_node(const std::string& name, const Type& type, const std::vector<Value>& a,
                                  const EvalContext& ctx, const Loc& loc);
    std::optional<Value> index_map(const std::string& name, const Type& type, const std::vector<Value>& a,
                                   const EvalContext& ctx, const Loc& loc);
    std::optional<Value> random(const Value& shape, EvalContext& ctx);
    // Elements [first, ...) of random's array of `seed` and `stream`, shaped
    // `shape`; `offset`: the kernel adds `first` to the element index (a
    // block of a sharded array: every rank compiles the same kernel).
    Value random_numbers(const Shape& shape, uint64_t seed, uint64_t stream, int64_t first, bool offset,
                         const EvalContext& ctx);
    std::optional<Value> thin_product(const Type& type, std::span<const Value> args, const EvalContext& ctx,
                                      const Loc& loc);
    std::optional<Value> consumer(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> lower_consumer(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> sort(bool by_key, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> known_reduce(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> general_reduce(const Value& f, const Value& z, const Value& xs, EvalContext& ctx);
    std::optional<Value> count(const Value& p, const Value& xs, EvalContext& ctx);
    std::optional<Value> arg_extreme(bool largest, const Value& xs, EvalContext& ctx);
    std::optional<Value> scan(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> push(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> filter(std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> compress(std::span<const Value> args, EvalContext& ctx);
    std::vector<Value> kept_elements(const std::string& name, FuseContext& fc, const std::vector<Prim>& prims,
                                     const PullArray& keep, const std::vector<PullArray>& x);
    std::optional<Value> matmul(std::span<const Value> args, EvalContext& ctx);
    ir::ProductOperand product_operand(const Value& v, bool row, FuseContext& fc);
    ir::PlanOutcome run_product(const Value& a, const Value& b, bool library, FuseContext& fc, const std::string& out);
    Value product_node(std::span<const Value> args, const ProductShape& shape, const EvalContext& ctx);
    ir::MatrixOperand matrix_operand(const Value& v, FuseContext& fc);
    std::optional<Value> tiny_product(std::span<const Value> args, const ProductShape& shape, bool library,
                                      EvalContext& ctx);
    std::optional<Value> permute(std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> scatter(std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> tally(const Value& n, const Value& xs, EvalContext& ctx);
    std::optional<Value> linalg(const std::string& name, std::span<const Value> args, EvalContext& ctx);
    std::optional<Value> least_squares(std::span<const Value> args, EvalContext& ctx);

    const ir::KernelToolchain& toolchain() const;  // or the error saying there is none

    std::shared_ptr<ir::PlanExecutor> executor_;
    ir::ExecutorFactory factory_;
    std::shared_ptr<ir::KernelToolchain> toolchain_;
    ir::RunOptions options_;
    PlanCache cache_;
    PlanMemo memo_;  // plans found before lowering (plan_memo.h)
    // Whether plans may come from memo_: not while a plan is shown, emitted
    // or counted (those lower every time, for the form they show).
    bool memo_allowed(FuseContext& fc) const;
    // Whether plans are being shown or traced (`:cuda`/`:explain`, `:compile`,
    // `:emit`): those lower every plan and evaluate every loop step.
    bool showing_plans() const;
    // Runs a plan found in a cache on the executor, with the bindings in fc.
    ir::PlanOutcome execute(const std::string& name, FuseContext& fc, const std::shared_ptr<const ir::LaunchPlan>& plan,
                            bool hit, const ir::CheckMoves& moves = nullptr);
    // During explain(): each plan run, as the user reads it (display_names.h).
    std::vector<ir::LaunchPlan>* recording_ = nullptr;
    std::vector<ir::LaunchPlan>* compiling_ = nullptr;  // during compile_report(): each plan as run
    std::string explaining_;  // ExplainOptions::function during explain()
    bool emitting_ = false;   // during `:emit`'s trace
    Loc origin_;              // the builtin call being compiled or forced
    std::string origin_name_;  // its name
    std::string forcing_why_;  // why arrays forced now are materialised (set by the session; `:profile`)
    std::string declined_;     // why the last materialise did not compile (Decline::why)
    // During profile(): the report being made, the kernels of its rows and
    // the arrays the statement's plans read and computed (by identity).
    struct ProfileState {
        ProfileReport report;
        std::vector<ir::Kernel> kernels;
        std::map<const void*, int64_t> read, results;  // bytes
        std::set<const void*> computed;
        bool counters = false;  // :profile (the traffic counters), not :time
        int64_t plans_run = 0;
        int64_t plans_found = 0;  // found before lowering
        int64_t plans_replayed = 0;  // run by a replayed loop step (step_replay.h)
    };
    ProfileState* profiling_ = nullptr;
    // Lowering options for the plan being built: shaped for the executor
    // that will run it (PlanExecutor::lowering_target) and the optimisations.
    ir::LoweringOptions lowering_options() const;
    // Whether plans are lowered for the executor that runs them (else the
    // GPU's form, as `:cuda`, `:compile`, `:explain` and `:emit` show it).
    bool shaped_for_executor() const;
    // "array of shape ... is too large" unless it fits the memory left where
    // the executor keeps its arrays (lang/memory_limit.h).
    void check_fits(Prim elem, const Shape& shape) const {
        check_array_size(elem, shape, [this] { return executor_->memory_room(); });
    }
    // The same with the plan's facts (a lowering that chooses a form by an
    // extent's value then prints only that form): `facts` must outlive the lowering.
    ir::LoweringOptions lowering_options(const ir::LoweringFacts& facts) const {
        ir::LoweringOptions opt = lowering_options();
        opt.facts = &facts;
        return opt;
    }
    ir::LoweringOptions lowering_options(ir::LoweringFacts&&) const = delete;  // it would dangle (found by ASan)
    void record_profile(const ir::LaunchPlan& plan, const ir::PlanOutcome& r, const RunSource& source);
    StepRecording* step_recording_ = nullptr;
    RowValues row_values_;  // reductions' results: one value per row of which matrix (row_values.h)
    // An innermost reduction's result `v` of the matrix `of`, noted for the footgun check.
    void note_row_values(const Value& v, const Value& of, const std::string& what);
    EvalContext last_ctx_;  // the context of the last builtin (slices have none of their own)
    std::map<std::string, std::vector<ir::Kernel>> emitted_kernels_;
};


// Why arrays are materialised, as `:profile` says it.
inline const char* kNeededWhole =
    "needed whole (an index, an update, a builtin the array compiler does not cover, or a value on the host)";
// The plan key's words for a product of these operands (with a BLAS: the
// buffers it reads as they are).
std::string product_words(const ir::ProductOperand& left, const ir::ProductOperand& right, bool library);

inline const char* kFusionOff = "fusion is switched off (:set fusion off): every primitive is its own kernel";

// ---------------------------------------------------------------- results
// Output buffer names for n leaves: prefix0, prefix1, ...; a single leaf
// is plain `prefix` when bare_single.
std::vector<std::string> leaf_buffers(const std::string& prefix, size_t n, bool bare_single);

// An output the executor allocated (rank 1, its element count), given its
// shape and element type: the same memory, no copy.
ArrayPtr shaped(const ArrayPtr& flat, Prim p, const Shape& shape);
// An array's identity in host or device memory (the host array, else the device one).
const void* identity(const ir::ArrayData& d);
// The one element of a plan's output (a reduction's total): waits for it.
Scalar first_element(const ir::ArrayData& out, Prim elem);

}  // namespace shoal::compiled
