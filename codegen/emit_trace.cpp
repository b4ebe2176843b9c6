// `:emit`'s trace: symbols for what the host computes, and the executor that
// records plans instead of running them (emit_trace.h).
#include "codegen/emit_trace.h"

#include <cstring>

#include "codegen/array_graph.h"
#include "codegen/compile_function.h"
#include "codegen/display_names.h"
#include "codegen/kernel_builder.h"
#include "lang/diagnostics.h"

namespace shoal::emit {

using ir::ExprPtr;
using ir::HostValue;
using ir::ScalarType;

void refuse(const Loc& loc, std::string message, std::vector<std::string> notes) {
    throw Refusal{loc, std::move(message), std::move(notes)};
}

namespace {

ExprPtr constant(const HostValue& v) {
    if (v.type == ScalarType::Bool) return ir::const_bool(v.i != 0);
    if (ir::is_float(v.type)) return ir::const_float(v.f, v.type);
    return ir::const_int(v.i, v.type);
}

bool has_symbol(const Value& v) {
    if (v.symbol()) return true;
    if (!v.is_tuple()) return false;
    for (const Value& x : v.tuple())
        if (has_symbol(x)) return true;
    return false;
}

bool is_small(const HostValue& v) {
    return !ir::is_float(v.type) && v.i > -kSmallInteger && v.i < kSmallInteger;
}

// The C++ a formula is printed as, for messages.
std::string show_formula(const ExprPtr& e) { return ir::host_expr_string(e); }

}  // namespace

ExprPtr formula_of(const Value& v) {
    if (auto* f = dynamic_cast<const Formula*>(v.symbol().get())) return f->expr;
    SHOAL_INTERNAL_ASSERT(v.is_scalar(), "formula of a value that is not a scalar");
    return constant(ir::host_value(v.scalar()));
}

// ---------------------------------------------------------------- atoms
std::pair<ScalarType, uint64_t> EmitTracer::key_of(const HostValue& v) {
    uint64_t bits = 0;
    if (ir::is_float(v.type)) {
        if (v.type == ScalarType::F32) {
            const float f = static_cast<float>(v.f);
            uint32_t b = 0;
            std::memcpy(&b, &f, sizeof b);
            bits = b;
        } else {
            std::memcpy(&bits, &v.f, sizeof bits);
        }
        return {v.type, bits};
    }
    // Integers of every width share one key space: an int extent and the
    // long it is widened to are the same quantity.
    return {ScalarType::I64, static_cast<uint64_t>(v.i)};
}

void EmitTracer::remember(const HostValue& v, const ExprPtr& f) {
    if (v.type == ScalarType::Bool || is_small(v)) return;
    known_.emplace(key_of(v), f);  // the first formula with a value wins (see emit_trace.h)
}

void EmitTracer::remember_extent(int64_t n, const ExprPtr& f) { remember(HostValue{ScalarType::I64, n, 0}, f); }

Value EmitTracer::scalar_param(const std::string& name, Prim p) {
    Scalar s;
    switch (p) {
        case Prim::Bool: s = Scalar::of_bool(rng_() & 1); break;
        case Prim::Int: s = Scalar::of_int(static_cast<int32_t>(kSmallInteger * 8 + rng_() % (1 << 24))); break;
        case Prim::Long: s = Scalar::of_long(static_cast<int64_t>(kSmallInteger * 8 + rng_() % (1ull << 40))); break;
        case Prim::Float: s = Scalar::of_float(static_cast<float>(random_unit())); break;
        case Prim::Double: s = Scalar::of_double(random_unit()); break;
    }
    ExprPtr f = ir::param(name, ir::scalar_of(p));
    remember(ir::host_value(s), f);
    return Value(s).with_symbol(std::make_shared<const Formula>(f));
}

std::vector<int64_t> EmitTracer::extents_param(const std::string& name, int rank) {
    std::vector<int64_t> out;
    for (int k = 0; k < rank; ++k) {
        const std::string var = ir::extent_name(name, static_cast<size_t>(rank), static_cast<size_t>(k));
        if (auto alias = aliases.find(var); alias != aliases.end()) {
            const int64_t n = ir::eval_host_int(alias->second, [&](const std::string& atom) {
                SHOAL_INTERNAL_ASSERT(atoms_.count(atom), "an alias refers to " + atom + ", not traced yet");
                return HostValue{ScalarType::I64, atoms_.at(atom), 0};
            });
            out.push_back(n);
            continue;
        }
        const int64_t n = random_size();
        atoms_[var] = n;
        remember_extent(n, ir::param(var, ScalarType::I64));
        out.push_back(n);
    }
    return out;
}

ExprPtr EmitTracer::extent_formula(int64_t n) const {
    const HostValue v{ScalarType::I64, n, 0};
    if (is_small(v)) return nullptr;
    auto it = known_.find(key_of(v));
    return it == known_.end() ? nullptr : it->second;
}

ExprPtr EmitTracer::scalar_formula(const HostValue& v, const SymbolPtr& exact) const {
    if (auto* f = dynamic_cast<const Formula*>(exact.get())) return f->expr;
    if (v.type != ScalarType::Bool && !is_small(v))
        if (auto it = known_.find(key_of(v)); it != known_.end()) {
            return ir::cast(v.type, it->second);
        }
    return constant(v);
}

std::string EmitTracer::fresh_variable(const std::string& prefix) {
    const int n = counters_[prefix]++;
    return n == 0 ? prefix : prefix + "_" + std::to_string(n);
}

HostValue EmitTracer::probe(ScalarType t, const std::string& variable) {
    HostValue v{t, 0, 0};
    if (ir::is_float(t)) {
        v.f = t == ScalarType::F32 ? static_cast<float>(random_unit()) : random_unit();
    } else if (t == ScalarType::Bool) {
        v.i = 1;
    } else {
        v.i = random_size();  // a count or a total: it may size an array later in the trace
    }
    remember(v, ir::param(variable, t));
    return v;
}

// ---------------------------------------------------------------- host reads
void TracedArray::read(void* host) const { tracer_->read_element(*this, host); }

void EmitTracer::read_element(const TracedArray& a, void* host) {
    if (a.count() != 1 || !a.param.empty())
        refuse({}, "the function reads the elements of an array on the host",
               {"the emitted code keeps arrays on the device; indexing an array (x[i]), printing one or a "
                "builtin that is not compiled reads them"});
    const std::string plan_name = plans.at(static_cast<size_t>(a.plan)).shown.name;
    const std::string var = fresh_variable(plan_name + "_value");
    const HostValue v = probe(a.elem(), var);
    ir::store_element(a.elem(), v, host);
    host_reads.push_back(HostRead{var, a.elem(), a.plan, a.buffer});
    pending_.emplace_back(v, std::make_shared<const Formula>(ir::param(var, a.elem())));
}

// ---------------------------------------------------------------- the Tracer
Value EmitTracer::builtin_result(std::string_view name, std::span<const Value> args, Value result, const Loc& loc) {
    const bool any_symbol = std::any_of(args.begin(), args.end(), has_symbol);
    const bool any_array = std::any_of(args.begin(), args.end(), compiled::holds_array);
    if (!pending_.empty()) {
        // A value read back on the host: the builtin must return it as it is
        // (sum xs), not decide something with it.
        if (pending_.size() != 1 || !result.is_scalar())
            refuse(loc, "`" + std::string(name) + "` reads values of an array on the host and decides with them",
                   {"the emitted code cannot do that without waiting for the device; this builtin is not supported "
                    "by :emit yet"});
        const HostValue got = ir::host_value(result.scalar()), read = pending_[0].first;
        if (got.type != read.type || key_of(got) != key_of(read))
            refuse(loc, "`" + std::string(name) + "` changes a value read back from the device on the host",
                   {"this builtin is not supported by :emit yet"});
        SymbolPtr sym = pending_[0].second;
        pending_.clear();
        return result.with_symbol(std::move(sym));
    }
    if (!result.is_scalar()) {
        // A delayed array (iota n) is the engine's: its plans carry the
        // size, found by value like any extent. A host array is not.
        if (any_symbol && !any_array && !result.is_function() && !result.is_delayed())
            refuse(loc, "`" + std::string(name) + "` builds a value from scalars computed from the parameters",
                   {":emit supports scalar results and arrays computed on the device"});
        return result;  // arrays: the engine's plans carry their sizes
    }
    if (!any_symbol) {
        // length xs, rows m: an extent of a traced array, found by value.
        if (any_array)
            if (ExprPtr f = extent_formula(result.scalar().as_long()); f && is_integral(result.scalar().type))
                return result.with_symbol(
                    std::make_shared<const Formula>(ir::cast(ir::scalar_of(result.scalar().type), f)));
        return result;
    }
    if (any_array)
        refuse(loc, "`" + std::string(name) + "` combines an array with scalars computed from the parameters on the host",
               {"this builtin is not supported by :emit yet"});
    // A scalar builtin on symbolic scalars: its formula, as a kernel would
    // compute it (compile_function's emit_builtin), if it is one expression.
    std::vector<ExprPtr> operands;
    for (const Value& a : args) {
        if (!a.is_scalar())
            refuse(loc, "`" + std::string(name) + "` on a tuple computed from the parameters",
                   {"this builtin is not supported by :emit yet"});
        operands.push_back(formula_of(a));
    }
    ir::KernelBuilder kb("host");
    ExprPtr f;
    kb.open();
    try {
        f = compiled::emit_builtin(kb, std::string(name), operands);
    } catch (const compiled::Decline& d) {
        refuse(loc, "`" + std::string(name) + "` cannot be computed by the emitted host code (" + d.why + ")");
    }
    if (!kb.close().empty())
        refuse(loc, "`" + std::string(name) + "` on scalars computed from the parameters needs a loop on the host",
               {"integer ** is not supported by :emit's host code; use floating point or a product"});
    f = ir::cast(ir::scalar_of(result.scalar().type), f);
    remember(ir::host_value(result.scalar()), f);
    return result.with_symbol(std::make_shared<const Formula>(f));
}

void EmitTracer::decide(const Value& v, std::string_view what, const Loc& loc) {
    if (!has_symbol(v)) return;
    const ExprPtr f = v.is_scalar() ? formula_of(v) : nullptr;
    refuse(loc,
           std::string(what) + " depends on the arguments" + (f ? " (" + show_formula(f) + ")" : std::string()) +
               ": the emitted code would have to decide it for every call",
           {"inside map/zipWith a condition is compiled per element; at the top of a function :emit needs "
            "control flow that does not depend on the arguments"});
}

void EmitTracer::slice(const Value* lo, const Value* hi, const Value* step, int64_t n, int64_t start, int64_t step_taken,
                       int64_t count, const Loc& loc) {
    if (step && step->symbol())
        refuse(loc, "a slice step depends on the arguments (" + show_formula(formula_of(*step)) + ")",
               {"write the step as a constant"});
    ExprPtr len = extent_formula(n);
    const bool symbolic = len || (lo && lo->symbol()) || (hi && hi->symbol());
    if (!symbolic) return;
    if (!len) len = ir::const_int(n);
    // ops::select_slice as a formula: negative bounds count from the end,
    // bounds are clamped, the count is 0 for an empty range.
    using ir::BinaryOp;
    auto i64 = [](int64_t v) { return ir::const_int(v); };
    auto widen = [](ExprPtr e) { return ir::cast(ScalarType::I64, std::move(e)); };
    const int64_t st = step_taken;
    const ExprPtr lower = i64(st > 0 ? 0 : -1);
    const ExprPtr upper = st > 0 ? len : ir::binary(BinaryOp::Sub, len, i64(1));
    auto adjust = [&](const Value* x, ExprPtr fallback) -> ExprPtr {
        if (!x) return fallback;
        const ExprPtr v = widen(formula_of(*x));
        if (!x->symbol()) {
            const int64_t c = x->scalar().as_long();
            return c < 0 ? ir::min_expr(ir::max_expr(ir::binary(BinaryOp::Add, v, len), lower), upper)
                         : ir::min_expr(v, upper);
        }
        const ExprPtr wrapped = ir::select(ir::binary(BinaryOp::Lt, v, i64(0)),
                                           ir::max_expr(ir::binary(BinaryOp::Add, v, len), lower), v);
        return ir::min_expr(wrapped, upper);
    };
    const ExprPtr first = adjust(lo, st > 0 ? lower : upper);
    const ExprPtr stop = adjust(hi, st > 0 ? upper : lower);
    const int64_t magnitude = st > 0 ? st : -st;
    const ExprPtr span = st > 0 ? ir::binary(BinaryOp::Sub, stop, first) : ir::binary(BinaryOp::Sub, first, stop);
    const ExprPtr steps = magnitude == 1 ? span
                                         : ir::binary(BinaryOp::Add,
                                                      ir::binary(BinaryOp::Div, ir::binary(BinaryOp::Sub, span, i64(1)),
                                                                 i64(magnitude)),
                                                      i64(1));
    const ExprPtr n_taken = ir::max_expr(steps, i64(0));
    remember_extent(start, first);
    remember_extent(count, n_taken);
}

// ---------------------------------------------------------------- recorded plans
std::string RecordedPlan::shown_scalar(const std::string& name) const {
    for (size_t k = 0; k < plan->scalars.size(); ++k)
        if (plan->scalars[k].name == name) return shown.scalars.at(k).name;
    return name;
}

std::string RecordedPlan::shown_buffer(const std::string& name) const {
    for (size_t k = 0; k < plan->buffers.size(); ++k)
        if (plan->buffers[k].name == name) return shown.buffers.at(k).name;
    return name;
}

// ---------------------------------------------------------------- the tracing executor
namespace {

class TracingExecutor final : public ir::PlanExecutor {
public:
    explicit TracingExecutor(EmitTracer& tracer) : tracer_(tracer) {}
    std::string name() const override { return "trace"; }
    std::string description() const override { return "the trace of :emit (nothing runs)"; }
    std::string device_report() const override { return ""; }
    std::string memory_report(const std::map<const ir::DeviceArray*, std::string>&) const override { return ""; }

    ir::PlanOutcome run(const std::shared_ptr<const ir::LaunchPlan>& plan_ptr, const ir::PlanBindings& bindings,
                        const ir::RunOptions& options) override {
        const ir::LaunchPlan& plan = *plan_ptr;
        SHOAL_INTERNAL_ASSERT(tracer_.shown.size() == tracer_.plans.size() + 1,
                              "the trace runs a plan the engine did not record");
        RecordedPlan rec;
        rec.plan = plan_ptr;
        rec.shown = tracer_.shown.back();
        const int index = static_cast<int>(tracer_.plans.size());
        std::map<std::string, HostValue> values = bindings.scalars;
        for (const ir::PlanScalar& s : plan.scalars) {
            if (s.source != ir::ScalarSource::Input) continue;
            const auto sym = bindings.symbols.find(s.name);
            const SymbolPtr exact = sym == bindings.symbols.end() ? nullptr : sym->second;
            const HostValue& v = values.at(s.name);
            rec.scalars[s.name] = s.type == ScalarType::I64 && !exact ? extent_or_constant(v)
                                                                      : tracer_.scalar_formula(v, exact);
        }
        for (size_t b = 0; b < plan.buffers.size(); ++b) {
            const ir::PlanBuffer& buf = plan.buffers[b];
            if (buf.role != ir::BufferRole::Input) continue;
            const ir::ArrayData& data = bindings.inputs.at(buf.name);
            auto traced = std::dynamic_pointer_cast<const TracedArray>(data.device);
            if (!traced)
                refuse(options.origin,
                       "the function reads the array `" + rec.shown.buffers[b].name +
                           "`, which is not one of its parameters",
                       {"a function :emit compiles may only read arrays passed as parameters; add `" +
                        rec.shown.buffers[b].name + "` as a parameter"});
            rec.inputs[buf.name] = traced;
        }
        tracer_.plans.push_back(rec);
        RecordedPlan& r = tracer_.plans.back();
        // Walk the host program on the probes: derived scalars, read-backs
        // (fresh probes), output counts.
        auto lookup = [&](const std::string& n) { return values.at(n); };
        ir::PlanOutcome out;
        for (const ir::PlanStep& step : plan.steps) {
            if (step.kind == ir::StepKind::Compute) {
                values[step.scalar] = ir::eval_host(plan.find_scalar(step.scalar)->value, lookup);
            } else if (step.kind == ir::StepKind::ReadBack) {
                const ScalarType t = plan.find_scalar(step.scalar)->type;
                const std::string var = tracer_.fresh_variable(r.shown.name + "_" + r.shown_scalar(step.scalar));
                values[step.scalar] = tracer_.probe(t, var);
                r.read_backs[step.scalar] = var;
            } else if (step.kind == ir::StepKind::Alloc) {
                const ir::PlanBuffer* buf = plan.find_buffer(step.buffer);
                if (buf->role != ir::BufferRole::Output) continue;
                auto a = std::make_shared<TracedArray>(tracer_, buf->elem, ir::eval_host_int(buf->count, lookup));
                a->plan = index;
                a->buffer = buf->name;
                out.outputs[buf->name] = ir::ArrayData{nullptr, a};
            }
        }
        out.scalars = values;
        out.kernel_counters.resize(plan.kernels.size());
        return out;
    }

private:
    ExprPtr extent_or_constant(const HostValue& v) {
        if (ExprPtr f = tracer_.extent_formula(v.i)) return ir::cast(ScalarType::I64, f);
        return tracer_.scalar_formula(v, nullptr);
    }

    EmitTracer& tracer_;
};

}  // namespace

std::shared_ptr<ir::PlanExecutor> make_tracing_executor(EmitTracer& tracer) {
    return std::make_shared<TracingExecutor>(tracer);
}

}  // namespace shoal::emit
