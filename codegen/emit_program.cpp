// `:emit`'s driver: traces each function (emit_trace.h) into a
// TracedFunction, twice with different probes, and prints the unit.
#include "codegen/emit_program.h"

#include <algorithm>
#include <set>

#include "codegen/array_graph.h"
#include "codegen/display_names.h"
#include "codegen/engine.h"
#include "lang/array_ops.h"
#include "lang/builtins_eval.h"
#include "lang/diagnostics.h"

namespace shoal::emit {

using ir::ExprPtr;

bool is_reserved_cpp_name(const std::string& name) {
    // The wrapper's own names: its stream, the runtime's namespace, the
    // standard library's.
    static const std::set<std::string> wrapper = {"stream", "shoal", "std", "cudaStream_t", "status", "workspace",
                                                 "memory", "errors", "check_messages", "kernels"};
    return !ir::is_valid_name(name) || wrapper.count(name) > 0;
}

ExprPtr substitute_params(const ExprPtr& e, const std::map<std::string, ExprPtr>& values) {
    if (!e) return e;
    if (e->kind == ir::ExprKind::Param)
        if (auto it = values.find(e->name); it != values.end()) return ir::cast(e->type, it->second);
    if (e->args.empty()) return e;
    auto copy = std::make_shared<ir::Expr>(*e);
    for (ExprPtr& a : copy->args) a = substitute_params(a, values);
    return copy;
}

bool reads_back(const ExprPtr& e, const std::set<std::string>& read_vars) {
    if (!e) return false;
    if (e->kind == ir::ExprKind::Param && read_vars.count(e->name)) return true;
    for (const ExprPtr& a : e->args)
        if (reads_back(a, read_vars)) return true;
    return false;
}

std::map<std::string, ExprPtr> plan_formulas(const RecordedPlan& r) {
    std::map<std::string, ExprPtr> f = r.scalars;
    for (const auto& [scalar, var] : r.read_backs) f[scalar] = ir::param(var, r.plan->find_scalar(scalar)->type);
    for (const ir::PlanScalar& s : r.plan->scalars)
        if (s.source == ir::ScalarSource::Derived) f[s.name] = substitute_params(s.value, f);
    return f;
}

namespace {

class FunctionTracer {
public:
    FunctionTracer(compiled::FusionEngine& session, const EmitRequest& request, const EmitFunction& f)
        : session_(session), request_(request), f_(f) {}

    TracedFunction trace(uint64_t seed) {
        std::map<std::string, ExprPtr> aliases;
        std::vector<EmitConstraint> constraints;
        // Each round either succeeds or makes one extent an alias of
        // another: at most one round per extent, plus the last.
        for (int round = 0;; ++round) {
            try {
                TracedFunction t = trace_once(seed, aliases);
                t.constraints = constraints;
                return t;
            } catch (const ops::ShapeMismatch& m) {
                if (!learn_equality(m, aliases, constraints) || round > 64)
                    user_error(ErrorKind::Runtime, m.loc,
                               "shape mismatch in " + m.name + " while tracing '" + f_.name + "' for :emit",
                               {"the extents involved are " + shape_to_string(m.a) + " and " + shape_to_string(m.b) +
                                " of different formulas; :emit can only require two parameters to have equal extents"});
            }
        }
    }

private:
    // The last trace's tracer: its formulas name the extents in the mismatch.
    bool learn_equality(const ops::ShapeMismatch& m, std::map<std::string, ExprPtr>& aliases,
                        std::vector<EmitConstraint>& constraints) {
        if (m.a.size() != m.b.size() || !last_) return false;
        bool learned = false;
        for (size_t k = 0; k < m.a.size(); ++k) {
            if (m.a[k] == m.b[k]) continue;
            const ExprPtr fa = last_->extent_formula(m.a[k]), fb = last_->extent_formula(m.b[k]);
            if (!fa || !fb) return false;
            // One side must be a parameter's extent of its own: it becomes
            // the other's formula, checked when the wrapper is called.
            const ExprPtr* atom = fb->kind == ir::ExprKind::Param && fb->name.rfind("len_", 0) == 0 ? &fb
                                  : fa->kind == ir::ExprKind::Param && fa->name.rfind("len_", 0) == 0 ? &fa
                                                                                                       : nullptr;
            if (!atom || aliases.count((*atom)->name)) return false;
            const ExprPtr& other = atom == &fb ? fa : fb;
            aliases[(*atom)->name] = other;
            constraints.push_back(EmitConstraint{(*atom)->name, other, "shape mismatch in " + m.name});
            learned = true;
        }
        return learned;
    }

    TracedFunction trace_once(uint64_t seed, const std::map<std::string, ExprPtr>& aliases) {
        auto tracer = std::make_shared<EmitTracer>(seed);
        last_ = tracer;
        tracer->aliases = aliases;
        auto backend = compiled::make_compiled_backend(make_tracing_executor(*tracer));
        auto& engine = dynamic_cast<compiled::FusionEngine&>(*backend);
        engine.passes = session_.passes;
        engine.set_check(session_.checking());

        TracedFunction out;
        out.request = f_;
        EvalContext ctx = request_.context;
        ctx.backend = &engine;
        ctx.tracer = tracer.get();
        ctx.warnings = nullptr;
        std::vector<Value> args;
        Type t = f_.type;
        for (size_t k = 0; is_func(t); ++k, t = func_result(t)) {
            const Type p = prune(func_param(t));
            EmitParam param{f_.params.at(k), prim_of(p), is_array(p) ? array_rank(p) : 0, {}};
            for (int d = 0; d < param.rank; ++d)
                param.extents.push_back(
                    ir::extent_name(param.name, static_cast<size_t>(param.rank), static_cast<size_t>(d)));
            out.params.push_back(param);
            args.emplace_back();
            if (!is_array(p)) args.back() = tracer->scalar_param(param.name, param.elem);
        }
        // Arrays whose extents are aliases come last: an alias refers to an
        // extent traced before it.
        std::vector<size_t> order;
        for (size_t k = 0; k < out.params.size(); ++k)
            if (out.params[k].rank > 0) order.push_back(k);
        std::stable_partition(order.begin(), order.end(), [&](size_t k) {
            const std::vector<std::string>& e = out.params[k].extents;
            return std::none_of(e.begin(), e.end(), [&](const std::string& n) { return aliases.count(n) > 0; });
        });
        for (size_t k : order) {
            EmitParam& p = out.params[k];
            const std::vector<int64_t> extents = tracer->extents_param(p.name, p.rank);
            int64_t count = 1;
            for (int64_t n : extents) count *= n;
            auto a = std::make_shared<TracedArray>(*tracer, ir::scalar_of(p.elem), count);
            a->param = p.name;
            args[k] = engine.result(ir::ArrayData{nullptr, a}, p.elem, Shape(extents.begin(), extents.end()));
        }

        // The kernels name buffers and extents after the parameters, as `:cuda f` does.
        std::map<const void*, std::string> names;
        if (request_.context.parameter_names) names = *request_.context.parameter_names;
        for (size_t k = 0; k < args.size(); ++k)
            if (args[k].is_delayed()) names[args[k].delayed().get()] = out.params[k].name;
        ctx.parameter_names = &names;
        Value v;
        try {
            const ops::ShapeMismatchScope mismatches;
            engine.trace([&] { v = settle(evalimpl::apply_value(f_.value, args, ctx, f_.loc)); }, f_.cpp_name,
                         tracer->shown);
        } catch (const Refusal& r) {
            std::vector<std::string> notes = r.notes;
            notes.insert(notes.begin(), "while tracing '" + f_.name + "' for :emit");
            user_error(ErrorKind::Runtime, r.loc.valid() ? r.loc : f_.loc, "cannot emit '" + f_.name + "': " + r.message,
                       notes);
        }
        out.plans = tracer->plans;
        out.host_reads = tracer->host_reads;
        for (const RecordedPlan& p : out.plans)
            for (const ir::Kernel& k : p.plan->kernels) out.checks = out.checks || !k.checks.empty();
        results(*tracer, out, v);
        return out;
    }

    void results(EmitTracer& tracer, TracedFunction& out, const Value& v) {
        std::vector<Value> leaves;
        flatten(v, leaves);
        std::set<std::string> read_vars;
        for (const HostRead& h : out.host_reads) read_vars.insert(h.variable);
        for (const RecordedPlan& p : out.plans)
            for (const auto& [scalar, var] : p.read_backs) read_vars.insert(var);
        std::set<std::pair<int, std::string>> written;
        for (size_t k = 0; k < leaves.size(); ++k) {
            const Value& leaf = leaves[k];
            EmitResult r;
            r.name = leaves.size() == 1 ? "result" : "result" + std::to_string(k);
            if (leaf.is_scalar()) {
                r.elem = leaf.scalar().type;
                r.value = formula_of(leaf);
                out.results.push_back(r);
                continue;
            }
            const auto* node = leaf.is_delayed() ? dynamic_cast<const compiled::Node*>(leaf.delayed().get()) : nullptr;
            const auto traced = node && node->computed()
                                    ? std::dynamic_pointer_cast<const TracedArray>(node->data().device)
                                    : nullptr;
            if (!traced)
                user_error(ErrorKind::Runtime, f_.loc,
                           "cannot emit '" + f_.name + "': its result" +
                               (leaves.size() > 1 ? " " + std::to_string(k) : std::string()) +
                               " is not computed by kernels on the device",
                           {"the reference evaluator computes it on the host (a builtin the compiler does not "
                            "cover, or a constant array)"});
            r.elem = node->elem();
            r.rank = static_cast<int>(node->shape().size());
            for (int64_t n : node->shape()) {
                ExprPtr f = tracer.extent_formula(n);
                if (!f) f = ir::const_int(n);
                r.extents.push_back(f);
            }
            if (!traced->param.empty()) {
                r.copy_of = traced->param;
            } else if (!written.insert({traced->plan, traced->buffer}).second) {
                for (const EmitResult& earlier : out.results)
                    if (earlier.plan == traced->plan && earlier.buffer == traced->buffer) r.copy_of = earlier.name;
            } else {
                r.plan = traced->plan;
                r.buffer = traced->buffer;
                const RecordedPlan& p = out.plans.at(static_cast<size_t>(r.plan));
                const ExprPtr count = substitute_params(p.plan->find_buffer(r.buffer)->count, plan_formulas(p));
                r.owned = reads_back(count, read_vars);
            }
            for (const ExprPtr& e : r.extents) r.owned = r.owned || (r.copy_of.empty() && reads_back(e, read_vars));
            out.results.push_back(r);
        }
    }

    static void flatten(const Value& v, std::vector<Value>& out) {
        if (!v.is_tuple()) {
            out.push_back(v);
            return;
        }
        for (const Value& x : v.tuple()) flatten(x, out);
    }

    compiled::FusionEngine& session_;
    const EmitRequest& request_;
    const EmitFunction& f_;
    std::shared_ptr<EmitTracer> last_;
};

// The first line where two texts differ, for the determinism check's message.
std::string first_difference(const std::string& a, const std::string& b) {
    size_t line = 1, k = 0;
    for (; k < a.size() && k < b.size() && a[k] == b[k]; ++k) line += a[k] == '\n';
    const size_t start = a.rfind('\n', k == 0 ? 0 : k - 1);
    const size_t from = start == std::string::npos ? 0 : start + 1;
    return "line " + std::to_string(line) + ": " + a.substr(from, a.find('\n', from) - from);
}

}  // namespace

namespace {

// Names the C++ must be able to use: the unit (a namespace), the wrappers,
// their parameters; a clash or a keyword is refused before anything is traced.
void check_names(const EmitRequest& request) {
    auto bad = [](const std::string& name) { return is_reserved_cpp_name(name); };
    const Loc& first = request.functions.at(0).loc;
    if (bad(request.unit))
        user_error(ErrorKind::Usage, first,
                   "cannot emit to \"" + request.unit + "\": the file name is the C++ namespace, and '" + request.unit +
                       "' is not a usable C++ name",
                   {"choose a name that is a C++ identifier and not a keyword, e.g. \"" + request.unit + "_kernels\""});
    std::map<std::string, const EmitFunction*> wrappers;
    for (const EmitFunction& f : request.functions) {
        if (bad(f.cpp_name))
            user_error(ErrorKind::Usage, f.loc,
                       "cannot emit '" + f.name + "' as '" + f.cpp_name + "': it is a C++ keyword or a name the emitted code uses",
                       {"rename it: :emit " + f.name + " as \"" + f.cpp_name + "_\" to \"" + request.unit + "\""});
        if (f.cpp_name == request.unit)
            user_error(ErrorKind::Usage, f.loc, "'" + f.cpp_name + "' is also the name of the unit (its namespace)",
                       {"rename it with `as \"...\"` or write to another file name"});
        auto [it, fresh] = wrappers.emplace(f.cpp_name, &f);
        if (!fresh)
            user_error(ErrorKind::Usage, f.loc, "two emitted functions would be called '" + f.cpp_name + "'",
                       {"rename one: :emit " + f.name + " as \"" + f.cpp_name + "2\" ..."});
        if (f.cpp_name.ends_with(kWorkspaceQuery) &&
            std::any_of(request.functions.begin(), request.functions.end(),
                        [&](const EmitFunction& g) { return g.cpp_name + kWorkspaceQuery == f.cpp_name; }))
            user_error(ErrorKind::Usage, f.loc,
                       "'" + f.cpp_name + "' is the name of another emitted function's workspace query",
                       {"rename it: :emit " + f.name + " as \"" + f.cpp_name + "_\" ..."});
        std::set<std::string> params;
        for (const std::string& p : f.params) {
            if (bad(p) || p.rfind("len_", 0) == 0 || p.rfind("result", 0) == 0)
                user_error(ErrorKind::Usage, f.loc,
                           "the parameter '" + p + "' of '" + f.name + "' cannot be a C++ parameter name",
                           {"it is a C++ keyword or a name the wrapper uses (stream, result..., len_...); rename the "
                            "parameter where '" + f.name + "' is defined"});
            if (p == f.cpp_name)
                user_error(ErrorKind::Usage, f.loc, "the parameter '" + p + "' of '" + f.name + "' has the function's name",
                           {"rename the parameter where '" + f.name + "' is defined"});
            if (!params.insert(p).second)
                user_error(ErrorKind::Usage, f.loc, "two parameters of '" + f.name + "' are called '" + p + "'");
        }
    }
}

}  // namespace

EmittedUnit emit_unit(compiled::FusionEngine& session, const EmitRequest& request) {
    check_names(request);
    // Two traces with independent probes must print the same program: a
    // size that varies with the arguments, taken for a constant in one
    // trace, would differ in the other (emit_trace.h).
    EmitTexts texts[2];
    for (int pass = 0; pass < 2; ++pass) {
        std::vector<TracedFunction> functions;
        for (const EmitFunction& f : request.functions)
            functions.push_back(FunctionTracer(session, request, f).trace(0x5eed0000u + 7919u * pass));
        texts[pass] = print_unit(request, functions);
    }
    if (texts[0].source != texts[1].source || texts[0].header != texts[1].header)
        internal_error(__FILE__, __LINE__,
                       ":emit traced the functions twice and got different programs (" +
                           first_difference(texts[0].source + texts[0].header, texts[1].source + texts[1].header) +
                           "): a size that depends on the arguments was taken for a constant");
    return {{EmittedFile{request.unit + ".h", texts[0].header}, EmittedFile{request.unit + ".cu", texts[0].source},
             EmittedFile{"shoal_runtime.h", runtime_header()}},
            std::move(texts[0].kernels)};
}

}  // namespace shoal::emit
