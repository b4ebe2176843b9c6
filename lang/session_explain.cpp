// The commands that explain an expression: :cuda / :ir (the kernels),
// :time / :profile (measured), :compile, :plot and :hist.
#include "session_internal.h"

#include <tuple>

namespace shoal {

// :ir e / :cuda e: evaluates e with the compiled backend (whatever the
// current backend), forcing its value, and prints the plans built, with
// the session's bindings as the names of the buffers they fill. A
// function (`:cuda saxpy`) is applied to placeholder arguments: arrays of
// one element whose buffers and extents are named after its parameters,
// so the plan reads as formulas of them. `:cuda --full e` shows the
// complete CUDA units (the helper functions are folded otherwise).
bool SessionCommands::explain(const CommandInfo& c, std::string_view arg, bool cuda) {
    ExplainOptions options;
    options.cuda = cuda;
    size_t skip = 0;
    while (std::optional<std::string_view> option = leading_option(arg)) {
        if (*option != "--full")
            user_error(ErrorKind::Usage, option_loc(arg), "unknown option '" + std::string(*option) + "' of :cuda",
                       {"usage: " + command_usage(c)});
        options.full = true;
        const size_t next = arg.find_first_not_of(" \t", option->size());
        skip += next == std::string_view::npos ? arg.size() : next;
        arg = next == std::string_view::npos ? std::string_view{} : arg.substr(next);
    }
    if (arg.empty() || !stmt.argument_loc.valid()) usage(c);
    CompiledBackend* backend = require_compiled();
    ExprPtr e = argument_expression(skip);
    options.function = explained_function(*e);
    if (const Binding* b = e->kind == ExprKind::Var ? I.find(e->text) : nullptr; b && b->generic) {
        const std::string example = working_annotation(e->text, *b->scheme);
        user_error(ErrorKind::Type, stmt.argument_loc,
                   "'" + e->text + "' is polymorphic (" + scheme_to_string(*b->scheme) + "): :" + stmt.command +
                       " of a function needs its parameter types",
                   {example.empty() ? "apply it to arguments, e.g. :" + stmt.command + " " + e->text + " x"
                                    : "annotate it, e.g. :" + stmt.command + " " + example + ", or apply it to arguments"});
    }
    const Type t = checked(e);
    std::map<const void*, std::string> names;
    EvalContext ctx = naming_context(backend, names);
    std::string header;
    std::string text = backend->explain(
        [&] {
            Value v = evaluate(e, ctx);
            if (is_func(t)) {
                const std::vector<Value> args = placeholder_arguments(v, t, names, header);
                v = evalimpl::apply_value(v, args, ctx, stmt.argument_loc);
            }
            force(v);
        },
        options);
    if (text.empty()) text = "no kernels: this expression is evaluated by the reference evaluator";
    out.display(explain_display(header + text, cuda));
    return true;
}

// The context of a command that shows generated code (`:cuda`,
// `:emit`): the compiled backend whatever the current one, the session's
// check setting, and `names` (filled here) naming the session's arrays.
EvalContext SessionCommands::naming_context(CompiledBackend* backend, std::map<const void*, std::string>& names) const {
    EvalContext ctx = s.eval_context();
    ctx.backend = backend;
    backend->set_check(s.settings_.check);
    for (const auto& [name, key] : I.names) name_arrays(I.globals.at(key)->value, name, names);
    ctx.parameter_names = &names;
    return ctx;
}

// `(f : T)` for the first example instance of f's scheme that checks
// (what a hint may suggest), or "".
std::string SessionCommands::working_annotation(const std::string& name, const Scheme& scheme) const {
    for (const Type& t : example_instances(scheme)) {
        const std::string text = "(" + name + " : " + type_to_string(t) + ")";
        try {
            const auto hint = std::make_shared<Source>("<hint>", text);
            check_expression(parse_expression(hint, 0, text.size()), I.type_env());
            return text;
        } catch (const Error&) {
        }
    }
    return "";
}

// The user function an explained expression is (`saxpy`) or applies
// (`rmse a b`): it names the kernels. Empty for anything else.
std::string SessionCommands::explained_function(const Expr& e) const {
    const Expr* head = &e;
    while (head->kind == ExprKind::App || head->kind == ExprKind::Annot) head = head->kids.at(0).get();
    return head->kind == ExprKind::Var && I.find(head->text) ? head->text : "";
}

// Names the arrays of a binding's value for the generated code: `x`, or
// `p_0`, `p_1` for the components of a tuple `p`.
void SessionCommands::name_arrays(const Value& v, const std::string& name, std::map<const void*, std::string>& names) {
    if (v.is_array()) names.emplace(v.array().get(), name);
    if (v.is_delayed()) names.emplace(v.delayed().get(), name);
    if (!v.is_tuple()) return;
    for (size_t k = 0; k < v.tuple().size(); ++k) name_arrays(v.tuple()[k], name + "_" + std::to_string(k), names);
}

// :time e evaluates e on the current backend, shows its value and how long
// it took; :profile e evaluates it with the compiled backend and explains
// what each kernel did. Both take a top-level `let` too: it binds as
// usual, and the evaluation of its value is what they measure.
bool SessionCommands::measure(const CommandInfo& c, std::string_view arg, bool per_kernel) {
    if (arg.empty() || !stmt.argument_loc.valid()) usage(c);
    const auto parsing = std::chrono::steady_clock::now();
    // Checked as the statement it would be on its own (reused when it ran
    // before: lang/front_end_cache.h).
    const std::shared_ptr<const CheckedStatement> checked = argument_statement();
    const CheckedStatement* let = checked->stmt->kind == StmtKind::Let ? checked.get() : nullptr;
    ExprPtr e;
    Type t;
    if (checked->stmt->kind == StmtKind::Expr) std::tie(e, t) = std::pair(checked->stmt->expr, checked->type);
    else if (!let) std::tie(e, t) = checked_argument();  // a command: the expression parser says what is wrong
    std::map<const void*, std::string> names;  // :profile names the bindings its plans read
    EvalContext ctx = per_kernel ? naming_context(require_compiled(), names) : s.eval_context();
    // :profile on several ranks profiles this rank's blocks of sharded arrays.
    if (per_kernel)
        if (const auto& world = I.ranks(); world && s.settings_.shard > 0)
            ctx.backend = world->sharding(ctx.backend, s.settings_.shard, &s.cancel_);
    CompiledBackend* backend = dynamic_cast<CompiledBackend*>(ctx.backend);
    // On several ranks with sharded arrays the compiled backend sits behind the sharding layer.
    if (!backend && ctx.backend && s.settings_.compiled) backend = s.compiled_backend();
    Value v;
    const TransferCounters moved_before = backend ? backend->transfers() : TransferCounters{};
    const CompileCounters compiled_before = backend ? backend->compilation() : CompileCounters{};
    TimeBreakdown breakdown;
    const RankWorld::CommunicationTotals communicated_before =
        I.statement_world ? I.statement_world->communication() : RankWorld::CommunicationTotals{};
    ProfileReport report;
    double wall = 0;
    // :profile also compiles the kernels for `:set arch` (registers and
    // spills, through the kernel cache) once they have run.
    const std::string arch = !per_kernel ? "" : s.settings_.arch.empty() ? "default" : s.settings_.arch;
    auto measured = [&](const std::function<void()>& evaluate_it) {
        const auto start = std::chrono::steady_clock::now();
        breakdown.front_end_seconds = std::chrono::duration<double>(start - parsing).count();
        if (backend) report = backend->profile(evaluate_it, arch);
        else evaluate_it();
        wall = backend ? report.seconds : std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    if (let) {
        const auto start = std::chrono::steady_clock::now();
        wall = -1;
        run_let(s, *let, std::string(trim(stmt.argument)), measured, &ctx);
        // A function definition computes nothing: its checking is the time.
        if (wall < 0) wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } else {
        measured([&] { v = I.materialise(evaluate(e, ctx), per_kernel ? "the profiled value" : "printed", false); });
        I.agree_success(s.cancel_);  // every rank computed it: shown only then
        I.random_stream = ctx.random_stream;
    }
    if (I.statement_world) {
        breakdown.ranks = I.statement_world->size();
        breakdown.agreement_seconds = I.agreement_seconds;
        const RankWorld::CommunicationTotals communicated = I.statement_world->communication();
        breakdown.collective_seconds = communicated.seconds - communicated_before.seconds;
        breakdown.collective_bytes = communicated.bytes - communicated_before.bytes;
    }
    if (backend) {
        breakdown.moved = backend->transfers() - moved_before;
        breakdown.compiled = backend->compilation() - compiled_before;
        breakdown.plans = report.plans_run;
        breakdown.plans_found = report.plans_found;
        breakdown.plans_replayed = report.plans_replayed;
    }
    // Advice weighs the time the statement ran, not its compiling.
    const double busy = wall - breakdown.compiled.seconds - breakdown.compiled.cache_seconds;
    const std::vector<std::string> advice = backend ? performance_advice(report, busy) : std::vector<std::string>{};
    if (per_kernel) {
        DisplayData d = profile_display(report, wall, backend->description(), breakdown.moved,
                                        *find_gpu_model(s.settings_.gpu), advice);
        if (breakdown.ranks > 1) {  // the kernels above are rank 0's blocks
            const std::string ranks = "kernels of rank 0's blocks; " + ranks_text(breakdown);
            d.plain += "\n" + ranks;
            d.rich["text/html"] += "<div style=\"font-family:monospace;font-size:12px\">" + html_escape(ranks) + "</div>";
        }
        out.display(d);
        return true;
    }
    if (!let && !v.is_unit()) out.value(v, t, format_value(v, s.settings_.print_threshold));
    out.display(time_display(report.kernels, wall, backend != nullptr, breakdown, report.calls, advice));
    return true;
}

// :compile e: runs e on the array compiler, then compiles the kernels
// of every plan it ran for the GPU (`:set arch`, else the device's).
bool SessionCommands::compile(const CommandInfo& c, std::string_view arg) {
    if (arg.empty() || !stmt.argument_loc.valid()) usage(c);
    CompiledBackend* backend = require_compiled();
    const ExprPtr e = checked_argument().first;
    EvalContext ctx = s.eval_context();
    ctx.backend = backend;
    backend->set_check(s.settings_.check);
    const std::string text =
        backend->compile_report([&] { force(evaluate(e, ctx)); }, s.settings_.arch);
    I.random_stream = ctx.random_stream;
    out.text(text);
    return true;
}

// :plot e / :hist e: evaluates e on the current backend and draws it.
bool SessionCommands::plot(const CommandInfo& c, std::string_view arg, PlotKind kind) {
    if (arg.empty() || !stmt.argument_loc.valid()) usage(c);
    ExprPtr e = argument_expression();
    Type t = check_expression(e, I.type_env());
    check_plot_argument(kind, t, stmt.argument_loc);  // before a long evaluation
    I.pin(e);
    EvalContext ctx = s.eval_context();
    Value v = force(evaluate(e, ctx));
    out.display(plot_display(kind, v, std::string(arg), s.settings_.columns, stmt.argument_loc));
    I.random_stream = ctx.random_stream;
    return true;
}

}  // namespace shoal
