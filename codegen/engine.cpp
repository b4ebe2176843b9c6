// The fusion engine's core: forcing nodes, running plans through the plan
// cache and the executor, `:ir`/`:cuda`/`:profile` support and the entry
// point that routes a builtin to a producer or a consumer (engine.h).
#include "codegen/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "codegen/cuda_printer.h"
#include "codegen/display_names.h"
#include "codegen/emit_program.h"

namespace shoal::compiled {


// ---------------------------------------------------------------- results
std::vector<std::string> leaf_buffers(const std::string& prefix, size_t n, bool bare_single) {
    std::vector<std::string> names;
    for (size_t k = 0; k < n; ++k) names.push_back(n == 1 && bare_single ? prefix : prefix + std::to_string(k));
    return names;
}

ArrayPtr shaped(const ArrayPtr& flat, Prim p, const Shape& shape) {
    SHOAL_INTERNAL_ASSERT(prim_size(flat->elem) == prim_size(p) && flat->size() == shape_size(shape),
                          "an executor's output does not fit its result");
    flat->elem = p;
    flat->shape = shape;
    return flat;
}

const void* identity(const ir::ArrayData& d) {
    return d.host ? static_cast<const void*>(d.host.get()) : static_cast<const void*>(d.device.get());
}

Scalar first_element(const ir::ArrayData& out, Prim elem) { return ir::host_array(out, elem, {1})->get(0); }

Value FusionEngine::result(const ir::ArrayData& out, Prim elem, const Shape& shape) {
    if (step_recording_) step_recording_->taken[identity(out)] = {elem, shape};
    // While a loop step is recorded a host result is a node too, so that
    // the evaluator reading its elements is seen (Node::force).
    if (out.host) {
        shaped(out.host, elem, shape);
        if (!step_recording_) return Value(out.host);
    } else {
        SHOAL_INTERNAL_ASSERT(out.device && out.device->count() == shape_size(shape) &&
                                  ir::scalar_size(out.device->elem()) == prim_size(elem),
                              "an executor's output does not fit its result");
    }
    // A computed node: consumers read its memory, force() downloads it.
    auto g = std::make_shared<NodeGroup>();
    g->elems = {elem};
    g->shape = shape;
    g->origin = origin_;
    g->forced = {out};
    return Value(std::make_shared<const Node>(shared_from_this(), std::move(g), 0, nullptr));
}

std::vector<Value> FusionEngine::results(const ir::PlanOutcome& r, const std::vector<std::string>& names,
                                         const std::vector<Prim>& prims, const Shape& shape) {
    std::vector<Value> values;
    for (size_t k = 0; k < names.size(); ++k) values.push_back(result(r.outputs.at(names[k]), prims[k], shape));
    return values;
}


void FusionEngine::note_row_values(const Value& v, const Value& of, const std::string& what) {
    row_values_.note_reduction(v, aligned_sources(of), what, origin_);
}

// ---------------------------------------------------------------- forcing
namespace {

// Never slow in silence: the reference evaluator computes every element on
// the host, one at a time, typically 100x slower than a kernel.
void warn_reference(const EvalContext& ctx, const Loc& loc, const std::string& what, const std::string& why,
                    std::vector<std::string> notes = {}) {
    if (ctx.warnings)
        ctx.warnings->push_back(
            {loc, "`" + what + "` runs on the reference evaluator (on the host, one element at a time): " + why,
             std::move(notes)});
}

}  // namespace

void FusionEngine::force_group(const NodeGroup& g, const std::string& why) {
    if (g.forced.empty()) g.why_forced = !why.empty() ? why : !forcing_why_.empty() ? forcing_why_ : kNeededWhole;
    {
        const Restore<Loc> during(origin_, g.origin);
        g.forced = materialise(g);
    }
    if (g.forced.empty()) {
        ++stats.reference_replays;
        warn_reference(g.ctx, g.origin, g.what.empty() ? "this array" : g.what, "its function does not compile to a kernel",
                       {"the compiled backend cannot compile " + declined_ +
                        "; write it with builtins that compile (docs/language.md), or `:set backend reference` to say "
                        "that this is intended"});
        for (const Value& x : leaves(g.replay())) g.forced.push_back(ir::ArrayData{x.array(), nullptr});
    }
    // Computed: the operands are no longer needed (NodeGroup says why).
    g.pull = nullptr;
    g.replay = nullptr;
    g.transpose_of.reset();
    g.product_of.reset();
    g.reads_transposed = false;  // it is in memory, row by row
}

// Empty when a function does not compile.
std::vector<ir::ArrayData> FusionEngine::materialise(const NodeGroup& g) {
    try {
        FuseContext fc(g.ctx);
        const std::vector<std::string> outs = leaf_buffers("out", g.elems.size(), true);
        std::string described;
        for (const std::string& o : outs) described += o + " ";
        ir::PlanOutcome r;
        if (g.product_of) {
            r = run_product(g.product_of->first, g.product_of->second, true, fc, outs[0]);
        } else if (g.transpose_of) {
            const PullArray a = pull_of(*g.transpose_of, fc);
            r = run("transpose", fc, {"transpose into " + described, {ir::tuple_of(a)}}, [&](ir::PlanBuilder& pb) {
                const ir::LoweringFacts facts = fc.facts(pb);
                ir::lower_transpose(pb, "transpose", a, outs[0], lowering_options(facts));
            });
        } else {
            const ir::PullTuple x = g.pull(fc);
            r = run("map", fc, {"map into " + described, {x}}, [&](ir::PlanBuilder& pb) {
                const ir::LoweringFacts facts = fc.facts(pb);
                ir::lower_map(pb, "map", x, outs, lowering_options(facts));
            });
        }
        std::vector<ir::ArrayData> arrays;
        for (size_t k = 0; k < outs.size(); ++k) {
            ir::ArrayData& d = r.outputs.at(outs[k]);
            if (d.host) shaped(d.host, g.elems[k], g.shape);
            if (step_recording_) step_recording_->taken[identity(d)] = {g.elems[k], g.shape};
            arrays.push_back(std::move(d));
        }
        return arrays;
    } catch (const Decline& d) {
        ++stats.declines[d.why];
        declined_ = d.why;
        return {};
    }
}

Value FusionEngine::node(Prim elem, Shape shape, Node::MakePull pull, Replay replay, const EvalContext& ctx,
                               const std::vector<Value>& operands, std::optional<Value> transpose_of, int64_t reads,
                               AlignedSources aligned, bool reads_transposed) {
    check_fits(elem, shape);  // "array of shape ... is too large", as the reference raises it
    reads_transposed = reads_transposed || transpose_of.has_value();
    auto g = std::make_shared<NodeGroup>(
        NodeGroup{[pull](FuseContext& fc) { return ir::tuple_of(pull(fc)); }, {elem}, std::move(shape),
                  std::move(replay), ctx, bounded_weight(operands, reads), origin_, origin_name_, {}, {},
                  std::move(transpose_of), std::move(aligned), reads_transposed});
    Value v(std::make_shared<const Node>(shared_from_this(), std::move(g), 0, std::move(pull)));
    if (!optimisations.fusion) static_cast<const Node&>(*v.delayed()).compute_because(kFusionOff);  // a kernel per primitive
    return v;
}

std::vector<Value> FusionEngine::tuple_nodes(std::vector<Prim> elems, Shape shape,
                                                   std::function<ir::PullTuple(FuseContext&)> pull, Replay replay,
                                                   const EvalContext& ctx, const std::vector<Value>& operands) {
    for (Prim p : elems) check_fits(p, shape);
    auto g = std::make_shared<const NodeGroup>(NodeGroup{std::move(pull), std::move(elems), std::move(shape),
                                                         std::move(replay), ctx, bounded_weight(operands), origin_,
                                                         origin_name_, {}, {}, {}, {}});
    std::vector<Value> members;
    for (size_t k = 0; k < g->elems.size(); ++k) {
        // Fused into a consumer, a member computes the whole tuple and keeps
        // its component (the others are dead code).
        Node::MakePull component = [g, k](FuseContext& fc) {
            const ir::PullTuple t = g->pull(fc);
            return PullArray{t.shape, t.elems[k], [t, k](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
                                 return t.at(kb, i)[k];
                             }};
        };
        members.emplace_back(std::make_shared<const Node>(shared_from_this(), g, k, std::move(component)));
    }
    if (!optimisations.fusion)  // computes every member
        static_cast<const Node&>(*members[0].delayed()).compute_because(kFusionOff);
    return members;
}

// ---------------------------------------------------------------- running plans
namespace {
std::atomic<PlanObserver> g_plan_observer{nullptr};
}  // namespace

PlanObserver set_plan_observer(PlanObserver observer) { return g_plan_observer.exchange(observer); }

bool FusionEngine::shows_decisions() const { return showing_plans() || (profiling_ && profiling_->counters); }

bool FusionEngine::showing_plans() const { return recording_ || compiling_ || !explaining_.empty() || emitting_; }

std::unique_ptr<LoopReplay> FusionEngine::replay_loop(const EvalContext& ctx) {
    if (showing_plans() || step_recording_) return nullptr;  // a loop inside a recorded step runs as part of it
    return make_loop_replay(*this, ctx);
}

bool FusionEngine::memo_allowed(FuseContext& fc) const {
    return !showing_plans() && !(profiling_ && profiling_->counters) && !fc.eval_context().tracer;
}

namespace {

// Whether fc binds every parameter and input buffer `plan` reads.
bool binds_all(const ir::LaunchPlan& plan, const FuseContext& fc) {
    for (const ir::PlanScalar& s : plan.scalars)
        if (s.source == ir::ScalarSource::Input && !fc.scalars().count(s.name)) return false;
    for (const ir::PlanBuffer& b : plan.buffers)
        if (b.role == ir::BufferRole::Input && !fc.buffers().count(b.name)) return false;
    return true;
}

// A key's bytes as text (its encoding is binary: structural_key.h).
std::string printable(const std::string& key) {
    std::string s;
    for (unsigned char c : key) {
        if (c == '\n' || (c >= 0x20 && c < 0x7f)) s.push_back(static_cast<char>(c));
        else {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            s += hex;
        }
    }
    return s;
}

std::string plan_text(const ir::LaunchPlan& plan) {
    std::string s = ir::to_string(plan);
    for (const ir::Kernel& k : plan.kernels) s += ir::to_string(k);
    return s;
}

}  // namespace

ir::PlanOutcome FusionEngine::run(const std::string& name, FuseContext& fc, const PlanOperands& in,
                                  const std::function<void(ir::PlanBuilder&)>& build) {
    std::string key;
    CheckPositions positions;
    const bool memoised = !in.descriptor.empty() && memo_allowed(fc);
    if (!in.descriptor.empty()) {
        // Probed whenever the plan could be memoised, so that its parameters
        // have the same names whether it is found or lowered.
        Probe probe = probe_operands(in.operands, in.combines);
        const std::string& options = options_key(lowering_options());
        key.reserve(name.size() + in.descriptor.size() + options.size() + probe.key.size() + 64);
        key.append(name).append("\n").append(in.descriptor).append("\n").append(options).append(passes.key());
        key.append("\n").append(probe.key);
        positions.push_back(origin_);
        positions.insert(positions.end(), probe.checks.begin(), probe.checks.end());
    }
    fc.take_fact_queries();
    auto answer = [&fc](const std::string& s) { return fc.integer_value(s); };
    FoundPlan found_early = memoised ? memo_.find(key, answer, positions) : FoundPlan{};
    if (found_early && !binds_all(*found_early.plan, fc)) found_early = {};
    if (found_early) {
        ++stats.found_before_lowering;
        if (profiling_) ++profiling_->plans_found;
    }
    if (found_early && !check_plan_memo()) return execute(name, fc, found_early.plan, true, found_early.moves);

    const size_t bound = fc.bound();
    ir::PlanBuilder pb(name);
    build(pb);
    fc.size_inputs(pb);
    FactQueries facts = fc.take_fact_queries();
    const PlanCache::Found found = cache_.get(pb.finish(), passes);
    const bool complete = fc.bound() == bound;  // the probe named every binding
    if (found_early) {  // SHOAL_CHECK_PLAN_CACHE=1: the plan found before lowering must be the one lowered
        const auto moved = ir::with_moved_checks(found_early.plan, found_early.moves);
        if (moved != found.plan && (!complete || plan_text(*moved) != plan_text(*found.plan)))
            internal_error(__FILE__, __LINE__,
                           "the structural plan cache returned a stale plan for `" + name + "` at " +
                               (origin_.valid() ? origin_.position() : "?") + "\nkey:\n" + printable(key) + "\ncached:\n" +
                               plan_text(*moved) + "\nlowered now:\n" + plan_text(*found.plan));
        return execute(name, fc, found_early.plan, true, found_early.moves);
    }
    if (const PlanObserver observe = g_plan_observer.load(); !found.hit && observe) observe(*found.plan);
    if (memoised && complete) memo_.store(key, found.plan, std::move(facts), std::move(positions));
    return execute(name, fc, found.plan, found.hit);
}

ir::PlanOutcome FusionEngine::execute(const std::string& name, FuseContext& fc,
                                      const std::shared_ptr<const ir::LaunchPlan>& found_plan, bool hit,
                                      const ir::CheckMoves& moves) {
    const ir::LaunchPlan& plan = *found_plan;
    ++(hit ? stats.cache_hits : stats.cache_misses);
    if (recording_) recording_->push_back(ir::for_display(plan, {explaining_, fc.shown_names(), ir::source_comment(origin_)}));
    if (compiling_) compiling_->push_back(plan);

    ir::PlanBindings bind;
    for (const ir::PlanScalar& s : plan.scalars)
        if (s.source == ir::ScalarSource::Input) bind.scalars[s.name] = ir::host_value(fc.scalars().at(s.name));
    bind.inputs = fc.buffers();
    bind.symbols = fc.symbols();
    // The plan compiled: its advice applies (even if running it fails).
    if (std::vector<Warning>* w = fc.eval_context().warnings) w->insert(w->end(), fc.warnings.begin(), fc.warnings.end());
    const RunSource source{fc.scalars(), fc.buffers(), fc.fused(), fc.materialised()};
    ir::PlanOutcome r = launch(found_plan, bind, fc.eval_context(), source, false, moves);
    if (step_recording_) step_recording_->record(name, found_plan, moves, bind, source, origin_, r);
    stats.last_plan = name;
    return r;
}

ir::PlanOutcome FusionEngine::launch(const std::shared_ptr<const ir::LaunchPlan>& plan, const ir::PlanBindings& bind,
                                     const EvalContext& ctx, const RunSource& source, bool replayed,
                                     const ir::CheckMoves& moves) {
    ir::RunOptions options = options_;
    options.cancel = ctx.cancel;  // Ctrl-C stops a running kernel
    options.origin = origin_;
    options.timed = profiling_ != nullptr;
    options.counters = profiling_ && profiling_->counters;
    ir::PlanOutcome r;
    try {
        r = executor_->run(plan, bind, options);
    } catch (Error& e) {
        ir::move_check_error(e, moves);
        throw;
    }
    if (std::string notice = executor_->take_notice(); !notice.empty())
        if (std::vector<Warning>* w = ctx.warnings) w->push_back(Warning{origin_, notice, {}});
    ++stats.plans_run;
    if (profiling_) {
        ++profiling_->plans_run;
        profiling_->plans_replayed += replayed;
        record_profile(*plan, r, source);
    }
    stats.last = r.total;
    stats.total += r.total;
    return r;
}

namespace {

// A plan scalar's value in this run: the run's, else the lifted value
// (an input's extent the kernels never read is not bound).
ir::HostValue scalar_value(const std::string& name, const ir::PlanOutcome& r, const RunSource& fc) {
    if (auto it = r.scalars.find(name); it != r.scalars.end()) return it->second;
    if (auto it = fc.scalars.find(name); it != fc.scalars.end()) return ir::host_value(it->second);
    internal_error(__FILE__, __LINE__, "profile: no value for the plan scalar " + name);
}

// Bytes of a plan buffer in this run.
int64_t buffer_bytes(const ir::LaunchPlan& plan, const std::string& name, const ir::PlanOutcome& r, const RunSource& fc) {
    const ir::PlanBuffer* b = plan.find_buffer(name);
    if (!b || !b->count) return 0;
    const int64_t n = ir::eval_host_int(b->count, [&](const std::string& s) { return scalar_value(s, r, fc); });
    return n * static_cast<int64_t>(ir::scalar_size(b->elem));
}

bool computes_in_double(const ir::Kernel& k) {
    for (const ir::Param& p : k.params)
        if (p.type == ir::ScalarType::F64) return true;
    for (const ir::SharedArray& a : k.shared)
        if (a.type == ir::ScalarType::F64) return true;
    return false;
}

}  // namespace

void FusionEngine::record_profile(const ir::LaunchPlan& plan, const ir::PlanOutcome& r, const RunSource& fc) {
    ProfileReport& report = profiling_->report;
    auto lookup = [&](const std::string& s) { return scalar_value(s, r, fc); };
    // `:time` runs this inside what it measures: rows are told apart by
    // their source position (profile() writes the line's text afterwards),
    // and the traffic and fusion decisions, which only `:profile`'s tables
    // show, are left out.
    const bool full = profiling_->counters;
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
        const ir::KernelCounters& c = r.kernel_counters[k];
        if (c.launches == 0) continue;
        const ir::Kernel& kernel = plan.kernels[k];
        auto same = [&](const KernelProfile& p) {
            return ir::same_position(p.at, origin_) && p.plan == plan.name && p.kernel == kernel.name;
        };
        auto it = std::find_if(report.kernels.begin(), report.kernels.end(), same);
        if (it == report.kernels.end()) {
            KernelProfile row;
            row.plan = plan.name;
            row.kernel = kernel.name;
            row.at = origin_;
            row.block = kernel.block_size;
            row.static_shared = ir::shared_bytes(kernel);
            row.double_precision = computes_in_double(kernel);
            it = report.kernels.insert(it, row);
            profiling_->kernels.insert(profiling_->kernels.begin() + (it - report.kernels.begin()), kernel);
        }
        *it += c;
        for (const ir::PlanStep& step : plan.steps)
            if (step.kind == ir::StepKind::Launch && step.kernel == static_cast<int>(k))
                it->grid = ir::eval_host_int(step.grid, lookup);
        if (!full) continue;
        for (const ir::Param& p : kernel.params)
            if (p.kind == ir::ParamKind::Buffer)
                it->minimum_bytes += buffer_bytes(plan, p.name, r, fc) * (p.access == ir::Access::ReadWrite ? 2 : 1) * c.launches;
    }
    for (const ir::CallCounters& c : r.calls) {
        auto same = [&](const LibraryCallProfile& p) {
            return ir::same_position(p.at, origin_) && p.plan == plan.name && p.implementation == c.implementation &&
                   p.why == c.comment;
        };
        auto it = std::find_if(report.calls.begin(), report.calls.end(), same);
        if (it == report.calls.end())
            it = report.calls.insert(report.calls.end(),
                                     {plan.name, c.function, c.implementation, c.comment, "", origin_});
        it->calls += c.calls;
        it->nanoseconds += c.nanoseconds;
        it->flops += c.flops;
        it->minimum_bytes += c.minimum_bytes;
    }
    if (!full) return;
    // The statement's least traffic: arrays it reads that no earlier plan of
    // it computed, and the results no later plan of it reads.
    for (const auto& [name, data] : fc.buffers) {
        const void* id = identity(data);
        if (profiling_->results.erase(id) || profiling_->computed.count(id)) continue;
        profiling_->read[id] = buffer_bytes(plan, name, r, fc);
    }
    for (const auto& [name, data] : r.outputs) {
        profiling_->computed.insert(identity(data));
        profiling_->results[identity(data)] = buffer_bytes(plan, name, r, fc);
    }
    // A loop runs the same plan with the same decisions at every step: one row.
    const std::string source = ir::source_comment(origin_);
    auto same_decisions = [&](const PlanDecisions& p) {
        return p.plan == plan.name && p.source == source && p.fused == fc.fused && p.materialised == fc.materialised;
    };
    if (std::find_if(report.plans.rbegin(), report.plans.rend(), same_decisions) == report.plans.rend())
        report.plans.push_back({plan.name, source, fc.fused, fc.materialised});
}

ProfileReport FusionEngine::profile(const std::function<void()>& run_it, const std::string& arch) {
    ProfileState state;
    state.counters = !arch.empty();
    {
        const Restore<ProfileState*> during(profiling_, &state);
        const auto start = std::chrono::steady_clock::now();
        run_it();
        state.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    ProfileReport& report = state.report;
    for (KernelProfile& k : report.kernels) k.source = ir::source_comment(k.at);
    for (LibraryCallProfile& c : report.calls) c.source = ir::source_comment(c.at);
    report.plans_run = state.plans_run;
    report.plans_found = state.plans_found;
    report.plans_replayed = state.plans_replayed;
    report.traffic_counted = state.counters;
    std::tie(report.parallel_units, report.unit_name) = executor_->parallel_units();
    for (const auto& [id, bytes] : state.read) report.minimum_bytes += bytes;
    for (const auto& [id, bytes] : state.results) report.minimum_bytes += bytes;
    if (arch.empty() || report.kernels.empty()) return report;
    report.arch = arch != "default" ? arch : !executor_->gpu_arch().empty() ? executor_->gpu_arch() : "sm_90";
    std::vector<ir::KernelResources> resources(report.kernels.size());
    try {
        if (!toolchain_) throw Error(ErrorKind::Runtime, {}, "no GPU compiler in this build");
        resources = toolchain_->resources(state.kernels, report.arch);
    } catch (const Error& e) {
        if (e.kind == ErrorKind::Interrupted) throw;
        for (ir::KernelResources& r : resources) r.note = e.message;
    }
    for (size_t k = 0; k < report.kernels.size(); ++k) {
        report.kernels[k].registers = resources[k].registers;
        report.kernels[k].spill_bytes = resources[k].spill_bytes;
        report.kernels[k].occupancy_percent = resources[k].occupancy_percent;
        report.kernels[k].resources_note = resources[k].note;
    }
    return report;
}

std::string FusionEngine::explain(const std::function<void()>& run_it, const ExplainOptions& options) {
    std::vector<ir::LaunchPlan> plans;
    {
        const Restore<std::vector<ir::LaunchPlan>*> recording(recording_, &plans);
        const Restore<std::string> naming(explaining_, options.function);
        run_it();
    }
    std::string out;
    std::set<std::string> helpers;  // folded: named once, at the end
    for (const ir::LaunchPlan& p : plans) {
        out += (out.empty() ? "" : "\n\n") + ir::to_string(p);
        if (!options.cuda) {
            for (const ir::Kernel& k : p.kernels) out += "\n" + ir::to_string(k);
        } else if (options.full) {
            out += "\n" + ir::print_cuda(p.kernels);
        } else {
            const ir::CudaUnit unit = ir::print_cuda_unit(p.kernels);
            helpers.insert(unit.helpers.begin(), unit.helpers.end());
            out += "\n" + unit.kernels;
        }
    }
    while (!out.empty() && out.back() == '\n') out.pop_back();
    if (!helpers.empty()) {
        std::string names;
        for (const std::string& h : helpers) names += (names.empty() ? "" : ", ") + h;
        out += "\n\n// Shoal's helper functions are left out (" + names + "): :cuda --full shows the whole source NVRTC compiles.";
    }
    return out;
}

void FusionEngine::trace(const std::function<void()>& run_it, const std::string& function,
                         std::vector<ir::LaunchPlan>& shown) {
    const Restore<std::vector<ir::LaunchPlan>*> recording(recording_, &shown);
    const Restore<std::string> naming(explaining_, function);
    const Restore<bool> emitting(emitting_, true);
    run_it();
}

std::vector<EmittedFile> FusionEngine::emit(const EmitRequest& request) {
    emit::EmittedUnit unit = emit::emit_unit(*this, request);
    emitted_kernels_[request.unit] = std::move(unit.kernels);
    return std::move(unit.files);
}

// ---------------------------------------------------------------- entry
std::optional<Value> FusionEngine::apply_builtin(std::string_view name_view, const Type& type,
                                                       std::span<const Value> args, EvalContext& ctx, const Loc& loc) {
    // A composite (mean, var, std) applies builtins that come back here.
    if (const evalimpl::BuiltinDef* d = evalimpl::find_builtin(name_view); d && d->composite) return std::nullopt;
    std::optional<Value> r;
    {
        const Restore<Loc> during(origin_, loc);
        const Restore<std::string> named(origin_name_, std::string(name_view));
        r = compile_builtin(std::string(name_view), type, args, ctx, loc);
    }
    if (!r && (std::any_of(args.begin(), args.end(), holds_array) || (type && holds_array_type(type, args.size())))) {
        ++stats.reference_builtins[std::string(name_view)];
        const bool file_io = std::any_of(args.begin(), args.end(), [](const Value& v) { return v.is_string(); });
        const bool text = name_view == "show";
        if (!file_io && !text)  // file I/O and text are the host's anyway
            warn_reference(ctx, loc, std::string(name_view), "the compiled backend has no kernel for it with these arguments");
    }
    return r;
}

std::optional<Value> FusionEngine::compile_builtin(const std::string& name, const Type& type,
                                                         std::span<const Value> args, EvalContext& ctx,
                                                         const Loc& loc) {
    for (const Value& v : args)
        if (v.is_string()) return std::nullopt;  // file I/O: the reference evaluator's
    // Builtins the engine answers itself (looked up once: a loop step calls
    // several builtins, and each compared its name against every case).
    enum class Own : uint8_t { None, Shape, Zip, Unzip, Iterate, Random, Matmul };
    static const std::unordered_map<std::string_view, Own> own = {
        {"length", Own::Shape}, {"rows", Own::Shape}, {"cols", Own::Shape},       {"shape", Own::Shape},
        {"zip", Own::Zip},      {"zip3", Own::Zip},   {"unzip", Own::Unzip},      {"iterate", Own::Iterate},
        {"random", Own::Random}, {"matmul", Own::Matmul}, {"@", Own::Matmul}};
    const auto found = own.find(name);
    const Own kind = found == own.end() ? Own::None : found->second;
    // Shapes are known without computing anything.
    if (kind == Own::Shape && is_like(args[0])) {
        const Shape s = like_shape(args[0]);
        auto int_of = [](int64_t n) { return Value(Scalar::of_int(static_cast<int32_t>(n))); };
        if (name == "length") return int_of(s[0]);
        if (name != "shape") return s.size() == 2 ? std::optional(int_of(s[name == "rows" ? 0 : 1])) : std::nullopt;
        if (s.size() == 1) return int_of(s[0]);
        std::vector<Value> t;
        for (int64_t e : s) t.push_back(int_of(e));
        return Value(std::move(t));
    }
    // An array of tuples is a tuple of arrays: zip pairs them, unzip is the identity.
    if (kind == Own::Zip && is_like(Value(std::vector<Value>(args.begin(), args.end()))))
        return Value(std::vector<Value>(args.begin(), args.end()));
    if (kind == Own::Unzip && is_like(args[0])) return args[0];
    // iterate: host control flow; its steps build the graph (bounded by
    // kMaxFusedNodes) unless a step ran plans (`carried`, lang/eval.h).
    if (kind == Own::Iterate && args[0].is_scalar() && args[1].is_function())
        return run_loop(args[0].scalar().as_long(), args[2], ctx, /*counter_free=*/true, loc,
                        [&](int64_t, const Value& x) { return evalimpl::apply_value(args[1], std::span<const Value>(&x, 1), ctx, loc); });
    if (kind == Own::Random) return random(args[0], ctx);
    if (kind == Own::Matmul)
        if (std::optional<Value> r = thin_product(type, args, ctx, loc)) return r;
    if (std::optional<Value> r = consumer(name, args, ctx)) return r;
    // Nodes keep the context with this backend: functions compiled into
    // them hoist invariant array expressions, computed by this backend too.
    last_ctx_ = ctx;
    return producer(name, type, args, ctx, loc);
}

// ---------------------------------------------------------------- interface
std::string FusionEngine::description() const { return "compiled kernels on " + executor_->description(); }

void FusionEngine::use_executor(const std::string& name) {
    if (name == executor_->name() && executor_->lost_reason().empty()) return;
    if (!factory_) user_error(ErrorKind::Runtime, Loc{}, "this program cannot switch executors");
    executor_ = factory_(name);
    memo_.clear();  // plans lowered for the other executor's target
}

const ir::KernelToolchain& FusionEngine::toolchain() const {
    if (!toolchain_)
        user_error(ErrorKind::Runtime, Loc{},
                   "no GPU compiler: NVRTC is not available (Shoal was built without the CUDA toolkit, or libnvrtc "
                   "was not found; :device says which)");
    return *toolchain_;
}

std::string FusionEngine::compile_report(const std::function<void()>& run_it, const std::string& arch) {
    toolchain();  // before running anything
    std::vector<ir::LaunchPlan> shown, run;
    {
        const Restore<std::vector<ir::LaunchPlan>*> recording(recording_, &shown);
        const Restore<std::vector<ir::LaunchPlan>*> compiling(compiling_, &run);
        run_it();
    }
    std::vector<ir::Kernel> kernels, shown_kernels;
    for (size_t p = 0; p < run.size(); ++p) {
        kernels.insert(kernels.end(), run[p].kernels.begin(), run[p].kernels.end());
        shown_kernels.insert(shown_kernels.end(), shown[p].kernels.begin(), shown[p].kernels.end());
    }
    if (kernels.empty()) return "no kernels: this expression is evaluated by the reference evaluator";
    const std::string target = !arch.empty() ? arch : !executor_->gpu_arch().empty() ? executor_->gpu_arch() : "sm_90";
    const std::string own = executor_->native_compile_report(run);
    return toolchain_->compile_report(kernels, shown_kernels, target) + (own.empty() ? "" : "\n" + own);
}

std::string FusionEngine::memory_report(const std::vector<std::pair<std::string, Value>>& bindings) const {
    std::map<const ir::DeviceArray*, std::string> names;
    for (const auto& [name, value] : bindings) {
        const std::vector<Value> ls = leaves(value);
        for (size_t k = 0; k < ls.size(); ++k) {
            const std::string shown = ls.size() == 1 ? name : name + "." + std::to_string(k);
            ir::ArrayData data;
            if (ls[k].is_array()) data.host = ls[k].array();
            if (const auto* n = ls[k].is_delayed() ? dynamic_cast<const Node*>(ls[k].delayed().get()) : nullptr;
                n && n->computed())
                data = n->data();
            if (const ir::DeviceArray* memory = ir::device_memory(data)) names.emplace(memory, shown);
        }
    }
    return executor_->memory_report(names);
}

// `:cuda`, `:compile`, `:explain` and `:profile` show the GPU's form of a
// plan; other runs ask the executor what shape suits it.
bool FusionEngine::shaped_for_executor() const { return !recording_ && !compiling_ && explaining_.empty(); }

ir::LoweringOptions FusionEngine::lowering_options() const {
    ir::LoweringTarget target;
    if (shaped_for_executor()) {
        ir::RunOptions options = options_;
        options.counters = profiling_ && profiling_->counters;
        target = executor_->lowering_target(options);
    }
    ir::LoweringOptions opt;
    opt.shared_memory = optimisations.shared_memory && target.shared_tiles;
    opt.cpu_cores = target.cpu_cores;
    return opt;
}

std::string FusionEngine::cache_report() const {
    const std::string own = executor_->cache_report();
    return "launch plans: " + std::to_string(cache_.size()) + " (at most " + std::to_string(cache_.capacity()) + ", " +
           std::to_string(cache_.evictions()) + " forgotten); found before lowering: " + std::to_string(memo_.size()) +
           " (at most " + std::to_string(memo_.capacity()) + ")\n" + toolchain().cache_report() +
           (own.empty() ? "" : "\n" + own);
}
std::string FusionEngine::clear_cache() {
    toolchain();
    return toolchain_->clear_cache();
}

std::shared_ptr<CompiledBackend> make_compiled_backend(std::shared_ptr<ir::PlanExecutor> executor,
                                                       ir::ExecutorFactory factory,
                                                       std::shared_ptr<ir::KernelToolchain> toolchain) {
    return std::make_shared<FusionEngine>(std::move(executor), std::move(factory), std::move(toolchain));
}

const BackendStats& backend_stats(CompiledBackend& b) { return dynamic_cast<FusionEngine&>(b).stats; }
void reset_backend_stats(CompiledBackend& b) { dynamic_cast<FusionEngine&>(b).stats = BackendStats{}; }
void set_pass_options(CompiledBackend& b, const ir::PassOptions& options) { dynamic_cast<FusionEngine&>(b).passes = options; }

}  // namespace shoal::compiled
