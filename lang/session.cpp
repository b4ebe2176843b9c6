// The session: statements in, values and errors out. Every statement is
// parsed, type checked and evaluated against the committed bindings and only
// then committed, so a failure anywhere leaves the session as it was.
#include "session_internal.h"

#include <cstdlib>

namespace shoal {

namespace {
CompiledBackendFactory g_compiled_factory = nullptr;
}  // namespace

void set_compiled_backend_factory(CompiledBackendFactory factory) { g_compiled_factory = factory; }

uint64_t Session::front_end_reuses() const { return impl_->front_ends.reuses(); }

CompiledBackend* Session::compiled_backend() {
    if (!impl_->compiled && g_compiled_factory) impl_->compiled = g_compiled_factory();
    return impl_->compiled.get();
}

std::string Session::engine_description() {
    if (settings_.compiled && compiled_backend()) return compiled_backend()->description();
    return "the reference evaluator (CPU)";
}

EvalContext Session::eval_context() {
    EvalContext ctx{&impl_->globals, &cancel_, settings_.seed, impl_->random_stream, nullptr, &impl_->warnings};
    ctx.check = settings_.check;
    ctx.writes_files = impl_->writes_files();
    if (settings_.compiled && compiled_backend()) {
        impl_->compiled->set_check(settings_.check);
        impl_->compiled->set_optimisations(settings_.optimisations);
        ctx.backend = impl_->compiled.get();
        // On several ranks with `:set shard N`, large arrays are split over them.
        if (const auto& world = impl_->ranks(); world && settings_.shard > 0)
            ctx.backend = world->sharding(ctx.backend, settings_.shard, &cancel_);
    }
    return ctx;
}

namespace {

// A statement that fails to parse because a bracket is never closed (the
// layout rule joined every later line to it) is reported at that bracket, and
// the input goes on at the next line that starts a statement
// (find_unclosed_bracket). Returns where to go on, or nullopt: run the span.
std::optional<size_t> recover_unclosed_bracket(const SourcePtr& src, StatementSpan span, SessionOutput& out) {
    const std::optional<UnclosedBracket> unclosed = find_unclosed_bracket(*src, span);
    if (!unclosed) return std::nullopt;
    // A command's argument is raw text that always "parses": a bracket never
    // closed in it is the failure itself.
    const size_t first = src->text.find_first_not_of(" \t", span.begin);
    if (first >= span.end || src->text[first] != ':') {
        try {
            parse_statement(src, span);
            return std::nullopt;  // an open bracket continued at column 1 is legal
        } catch (const Error&) {
        }
    }
    try {
        parse_statement(src, StatementSpan{span.begin, unclosed->resume});
    } catch (const Error& e) {
        if (e.kind != ErrorKind::Incomplete) {  // an earlier mistake in the statement itself
            out.error(e);
            return unclosed->resume;
        }
    }
    const char open = src->text[unclosed->bracket];
    std::vector<std::string> notes = {std::string("close it with '") + (open == '(' ? ')' : ']') +
                                      "' where its expression ends"};
    if (unclosed->resume < span.end)
        notes.push_back("going on at line " +
                        std::to_string(source_loc(src, unclosed->resume, unclosed->resume + 1).line));
    out.error(Error(ErrorKind::Syntax, source_loc(src, unclosed->bracket, unclosed->bracket + 1),
                    std::string("'") + open + "' is never closed", std::move(notes)));
    return unclosed->resume;
}

}  // namespace

Session::Session() : impl_(std::make_unique<Impl>()) { impl_->cancel = &cancel_; }
Session::~Session() = default;

void Session::set_emit_writer(EmitWriter writer) { impl_->emit_writer = std::move(writer); }

bool Session::execute(std::string_view text, const std::string& name, SessionOutput& out, bool single_statement) {
    Impl& I = *impl_;
    if (I.depth == 0) {
        // Only the outermost call clears a pending Ctrl-C, so one pressed
        // during a :load stops the whole input.
        cancel_.store(false);
        I.interrupt_reported = false;
    }
    auto src = std::make_shared<const Source>(name, std::string(text));
    std::vector<StatementSpan> spans;
    try {
        spans = split_statements(*src);
    } catch (const Error& e) {
        out.error(e);
        return false;
    }
    if (single_statement && !spans.empty()) spans = {StatementSpan{spans.front().begin, spans.back().end}};

    struct DepthGuard {
        int& d;
        explicit DepthGuard(int& depth) : d(depth) { ++d; }
        ~DepthGuard() { --d; }
    } guard(I.depth);

    bool ok = true;
    for (size_t i = 0; i < spans.size(); ++i) {
        const StatementSpan span = spans[i];
        if (cancel_.load()) {
            // Ctrl-C between statements (or during parsing, which does not
            // poll the flag: it is linear in the text): stop the rest.
            if (!I.interrupt_reported) {
                I.interrupt_reported = true;
                out.error(Error(ErrorKind::Interrupted, source_loc(src, span.begin, span.end), "interrupted"));
            }
            return false;
        }
        if (std::optional<size_t> resume = recover_unclosed_bracket(src, span, out)) {
            ok = false;
            if (single_statement) break;  // one statement (the REPL's): nothing after it runs
            const std::vector<StatementSpan> rest = split_statements(*src, *resume, span.end);
            spans.insert(spans.begin() + static_cast<std::ptrdiff_t>(i) + 1, rest.begin(), rest.end());
            continue;
        }
        // On several ranks, every rank runs each top-level statement.
        if (I.depth == 1 && I.ranks() && I.world->rank() == 0) I.world->begin_statement(src, span);
        if (!SessionCommands::run_statement(*this, src, span, out)) ok = false;
        if (quit_ || I.interrupt_reported) break;
    }
    return ok && !I.interrupt_reported;
}

bool SessionCommands::run_statement(Session& s, const SourcePtr& src, StatementSpan span, SessionOutput& out) {
    // Warnings found while the statement ran are reported after it, each
    // once, whether or not it succeeded.
    Session::Impl& I = *s.impl_;
    I.warnings.clear();
    // SHOAL_CHECK_BINDINGS=1 (the program tests): a failed statement must
    // leave every binding as it was; a command (:load, :reset) may not.
    static const bool check_bindings = std::getenv("SHOAL_CHECK_BINDINGS") != nullptr;
    const bool is_command = src->text[std::min(span.begin, src->text.size() - 1)] == ':';
    std::vector<std::pair<std::string, BindingPtr>> before;
    if (check_bindings && !is_command)
        for (const auto& [name, key] : I.names) before.emplace_back(name, I.globals.at(key));
    const bool ok = run_statement_reporting_errors(s, src, span, out);
    if (check_bindings && !is_command && !ok) {
        std::vector<std::pair<std::string, BindingPtr>> after;
        for (const auto& [name, key] : I.names) after.emplace_back(name, I.globals.at(key));
        if (after != before)
            out.error(Error(ErrorKind::Internal, source_loc(src, span.begin, span.end),
                            "internal error: a failed statement changed the session's bindings"));
    }
    std::set<std::string> seen;
    for (const Warning& w : I.warnings) {
        std::string text = format_diagnostic(Severity::Warning, w.loc, w.message, w.notes);
        if (seen.insert(text).second) out.warning(text);
    }
    I.warnings.clear();
    return ok;
}

std::shared_ptr<const CheckedStatement> Session::Impl::front_end(const SourcePtr& src, size_t begin, size_t end) {
    const std::string text = src->text.substr(begin, end - begin);
    const Loc at = source_loc(src, begin, end);
    auto resolve = [this](const std::string& name) -> std::pair<BindingPtr, std::string> {
        auto it = names.find(name);
        if (it == names.end()) return {nullptr, ""};
        return {globals.at(it->second), it->second};
    };
    if (auto hit = front_ends.find(text, at, resolve)) return hit;
    auto checked = std::make_shared<CheckedStatement>();
    CheckedStatement& c = *checked;
    c.stmt = parse_statement(src, StatementSpan{begin, end});
    if (c.stmt->kind == StmtKind::Command) return checked;
    TypeEnvironment env = type_env();
    bool loaded = false;  // a `load` typed from a file's header: checked anew each time
    env.load_typer = [&loaded](const std::string& path, const Loc& loc) {
        loaded = true;
        return type_of_load(path, loc);
    };
    bool keep = true;
    if (c.stmt->kind == StmtKind::Let) {
        c.names = check_let(*c.stmt, env);
        for (const auto& [name, scheme] : c.names)
            keep = keep && !scheme->polymorphic() && FrontEndCache::keepable(scheme->type);
    } else {
        c.type = check_expression(c.stmt->expr, env);
        keep = FrontEndCache::keepable(c.type);
    }
    std::vector<FrontEndCache::Read> reads;
    c.used = pin(c.stmt->expr, &reads);
    if (keep && !loaded) front_ends.store(text, at, checked, std::move(reads));
    return checked;
}

void SessionCommands::run_let(Session& s, const CheckedStatement& let, const std::string& text, const Measured& measured,
                              const EvalContext* context) {
    Session::Impl& I = *s.impl_;
    const Stmt& stmt = *let.stmt;
    const auto& names = let.names;
    const std::set<std::string>& used = let.used;
    std::map<std::string, BindingPtr> fresh;
    uint64_t stream = I.random_stream;
    bool generic = std::any_of(names.begin(), names.end(), [](const auto& p) { return p.second->polymorphic(); });
    if (generic) {
        // A generalised function is specialised per use by the evaluator;
        // its definition is all there is to store.
        SHOAL_INTERNAL_ASSERT(names.size() == 1 && stmt.pattern->kind == PatternKind::Var,
                              "a generalised binding must be a single function");
        auto b = std::make_shared<Binding>();
        b->scheme = names[0].second;
        b->generic = stmt.expr;
        fresh[names[0].first] = b;
    } else {
        EvalContext ctx = context ? *context : s.eval_context();
        // Bindings are computed here (their errors are this statement's);
        // an array a GPU computed stays there.
        Value v;
        auto evaluate_it = [&] { v = I.materialise(evaluate(stmt.expr, ctx), "a top-level let binds it", true); };
        if (measured) measured(evaluate_it);
        else evaluate_it();
        stream = ctx.random_stream;
        auto values = bind_pattern(stmt.pattern, v);
        for (auto& [name, scheme] : names) {
            auto it = std::find_if(values.begin(), values.end(), [&name = name](const auto& p) { return p.first == name; });
            SHOAL_INTERNAL_ASSERT(it != values.end(), "pattern did not bind '" + name + "'");
            auto b = std::make_shared<Binding>();
            b->scheme = scheme;
            b->value = it->second;
            fresh[name] = b;
        }
    }
    // Commit: nothing above touched the session. A binding keeps the
    // bindings it reads alive only while its value can still read them (a
    // function): a computed array does not, and `let b = b * 2.0` run 20
    // times over 40 MB kept all 21 arrays (867 MB).
    const bool reads_later = generic || std::any_of(names.begin(), names.end(), [](const auto& p) {
                                            return mentions_function(p.second->type);
                                        });
    I.agree_success(s.cancel_);  // every rank computed it
    I.commit(fresh, reads_later ? used : std::set<std::string>{}, text);
    I.random_stream = stream;
}

namespace {
// A statement that prints `<function>` because a builtin got too few
// arguments (`max xs`, NumPy's `arange 10`): say so, with its signature.
void note_partial_builtin(const Value& v, const Loc& at, std::vector<Warning>& warnings) {
    const evalimpl::CallableView view = evalimpl::as_callable(v).view();
    if (!view.builtin || view.args.empty()) return;
    const std::string name = view.builtin->name;
    const size_t given = view.args.size(), wanted = static_cast<size_t>(view.builtin->arity);
    std::vector<std::string> notes;
    if (const BuiltinDoc* d = find_builtin_doc(name)) notes.push_back("`" + name + " : " + d->signature + "`");
    if ((name == "max" || name == "min") && given == 1)
        notes.push_back("the " + std::string(name == "max" ? "largest" : "smallest") + " element is `" +
                        (name == "max" ? "maximum" : "minimum") + " xs`; `" + name + " a b` compares two values");
    if (name == "arange" && given == 1) notes.push_back("NumPy's arange(n) is `iota n`");
    warnings.push_back({at,
                        "this is a function: `" + name + "` takes " + std::to_string(wanted) + " argument" +
                            (wanted == 1 ? "" : "s") + " and was given " + std::to_string(given),
                        notes});
}
}  // namespace

bool SessionCommands::run_statement_reporting_errors(Session& s, const SourcePtr& src, StatementSpan span,
                                                     SessionOutput& out) {
    Session::Impl& I = *s.impl_;
    const SessionSettings& settings = s.settings_;
    Loc stmt_loc = source_loc(src, span.begin, span.end);
    // A top-level statement on several ranks ends with their agreement.
    I.statement_world = I.depth == 1 ? I.ranks() : nullptr;
    I.agreed = false;
    I.statement_source = src;
    std::optional<Error> failure;
    try {
        const std::shared_ptr<const CheckedStatement> checked = I.front_end(src, span.begin, span.end);
        const StmtPtr& stmt = checked->stmt;
        switch (stmt->kind) {
            case StmtKind::Let:
                run_let(s, *checked, src->text.substr(span.begin, span.end - span.begin));
                return true;
            case StmtKind::Expr: {
                const Type& t = checked->type;
                EvalContext ctx = s.eval_context();
                // An array split over ranks is computed where it is, and only
                // the rows printing shows move (formatted before the ranks agree).
                const Value r = evaluate(stmt->expr, ctx);
                const Value v = I.materialise(r, "printed", distributed(r));
                const std::string shown = v.is_unit() ? std::string() : format_value(v, settings.print_threshold);
                I.agree_success(s.cancel_);
                I.random_stream = ctx.random_stream;
                if (!v.is_unit()) out.value(v, t, shown);
                if (v.is_function()) note_partial_builtin(v, stmt_loc, I.warnings);
                return true;
            }
            case StmtKind::Command: {
                const bool ran = SessionCommands{s, I, out, *stmt, src}.run();
                I.agree_success(s.cancel_);
                return ran;
            }
        }
        internal_error(__FILE__, __LINE__, "unknown statement kind");
    } catch (const Error& caught) {
        failure = caught;
    } catch (const std::bad_alloc&) {
        failure = Error(ErrorKind::Runtime, stmt_loc, "out of memory");
    } catch (const std::length_error&) {
        failure = Error(ErrorKind::Runtime, stmt_loc, "out of memory (an array is too large)");
    } catch (const std::exception& e) {
        failure = Error(ErrorKind::Internal, stmt_loc,
                        std::string("internal error: ") + e.what() + " -- this is a bug in Shoal, please report it");
    } catch (...) {
        // Nothing may escape a statement: the session must survive any bug.
        failure = Error(ErrorKind::Internal, stmt_loc,
                        "internal error: an unexpected exception -- this is a bug in Shoal, please report it");
    }
    {
        // The other ranks learn of the failure (and this one may learn of
        // an earlier rank's): the statement fails alike everywhere.
        try {
            if (std::optional<Error> verdict = I.agree(failure, s.cancel_)) failure = *verdict;
        } catch (const Error& lost) {
            failure = lost;  // the exchange itself failed (a rank lost)
        }
        Error e = *failure;
        if (e.kind == ErrorKind::Interrupted) I.interrupt_reported = true;
        // A GPU that stopped (a sticky CUDA error) is given up for the CPU;
        // the arrays only it held are gone, every other binding stays.
        if (I.compiled && !I.compiled->device_lost().empty()) {
            I.compiled->use_executor("cpu");
            const std::vector<std::string> lost = I.forget_device_only();
            std::string names;
            for (const std::string& n : lost) names += (names.empty() ? "" : ", ") + n;
            e.notes.push_back("the session moved to the CPU executor; " +
                              (lost.empty() ? std::string("no binding was lost")
                                            : "lost (their arrays were only in GPU memory): " + names) +
                              "; :set executor cuda after restarting Shoal uses the GPU again");
        }
        if (e.loc.valid() || !stmt_loc.valid()) {
            out.error(e);
        } else {
            // Point at the statement at least, so a script says which one failed.
            out.error(Error(e.kind, stmt_loc, e.message, e.notes));
        }
    }
    return false;
}

namespace {

constexpr size_t kMaxScriptBytes = size_t{256} << 20;

// The text of a script, or an Io error at `loc`: a directory, a binary file
// (a NUL byte: :load of a .npy, /dev/zero) or an absurdly large one.
std::string read_script(const std::string& path, const Loc& loc) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        user_error(ErrorKind::Io, loc, "cannot open '" + path + "': Is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) user_error(ErrorKind::Io, loc, "cannot open '" + path + "': " + std::strerror(errno));
    std::string text;
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        const std::string_view chunk(buf, static_cast<size_t>(in.gcount()));
        if (size_t nul = chunk.find('\0'); nul != std::string_view::npos)
            user_error(ErrorKind::Io, loc,
                       "'" + path + "' is not a Shoal script: it holds a NUL byte at offset " +
                           std::to_string(text.size() + nul) + " (a binary file?)");
        if (text.size() + chunk.size() > kMaxScriptBytes)
            user_error(ErrorKind::Io, loc,
                       "'" + path + "' is too large for a script (more than " + std::to_string(kMaxScriptBytes >> 20) +
                           " MiB)");
        text.append(chunk);
    }
    if (in.bad()) user_error(ErrorKind::Io, loc, "cannot read '" + path + "': " + std::strerror(errno));
    return text;
}

}  // namespace

bool Session::execute_file(const std::string& path, SessionOutput& out) {
    std::string text;
    try {
        text = read_script(path, Loc{});
    } catch (const Error& e) {
        out.error(e);
        return false;
    }
    return execute(text, path, out);
}

bool Session::load_file(const std::string& path, const Loc& loc, SessionOutput& out) {
    return execute(read_script(path, loc), path, out);
}

InputStatus Session::check_input(std::string_view text, bool single_statement) const {
    return shoal::check_input(text, single_statement);
}

std::vector<std::string> Session::binding_names() const {
    std::vector<std::string> names;
    for (const auto& [name, _] : impl_->names) names.push_back(name);
    return names;
}

namespace {

// File names for `:load` completion: entries of the directory part of
// `word` that start with its last component.
std::vector<std::string> complete_path(const std::string& word) {
    size_t slash = word.rfind('/');
    std::string dir = slash == std::string::npos ? "." : word.substr(0, slash + 1);
    std::string prefix = slash == std::string::npos ? word : word.substr(slash + 1);
    std::string shown = slash == std::string::npos ? "" : dir;
    std::vector<std::string> out;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n == "." || n == ".." || !starts_with(n, prefix)) continue;
        if (prefix.empty() && n[0] == '.') continue;
        struct stat st {};
        bool is_dir = ::stat((dir + n).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
        out.push_back(shown + n + (is_dir ? "/" : ""));
    }
    ::closedir(d);
    return out;
}

}  // namespace

std::vector<std::string> Session::complete(std::string_view line, size_t cursor, size_t& start) const {
    cursor = std::min(cursor, line.size());
    std::vector<std::string> out;
    std::string_view before = line.substr(0, cursor);

    // `:load path`: complete file names.
    size_t cmd_at = before.find_first_not_of(" \t");
    if (cmd_at != std::string_view::npos && before[cmd_at] == ':') {
        size_t name_end = before.find_first_of(" \t", cmd_at);
        std::string cmd(before.substr(cmd_at + 1, name_end == std::string_view::npos ? std::string_view::npos
                                                                                       : name_end - cmd_at - 1));
        if (name_end != std::string_view::npos && cmd.size() >= 1 && starts_with("load", cmd)) {
            size_t b = before.find_first_not_of(" \t\"", name_end);
            if (b == std::string_view::npos) b = cursor;
            start = b;
            out = complete_path(std::string(before.substr(b)));
            std::sort(out.begin(), out.end());
            return out;
        }
    }

    size_t b = cursor;
    while (b > 0 && is_ident_char(line[b - 1])) --b;
    start = b;
    std::string word(line.substr(b, cursor - b));
    if (!word.empty() && !is_ident_start(word[0])) return out;  // a number

    // `:comm` at the start of a line.
    if (b > 0 && line[b - 1] == ':' && trim(line.substr(0, b - 1)).empty()) {
        start = b - 1;
        for (const auto& c : command_docs())
            if (starts_with(c.name, word)) out.push_back(":" + c.name);
        return out;
    }

    std::set<std::string> names;
    auto add = [&](const std::string& n) {
        if (is_identifier(n) && starts_with(n, word)) names.insert(n);
    };
    for (const auto& [n, _] : impl_->names) add(n);
    for (const auto& [n, _] : builtin_schemes()) add(n);
    for (const auto& d : builtin_docs()) add(d.name);
    for (const char* k : kKeywords) add(k);
    return {names.begin(), names.end()};
}

std::string Session::inspect(std::string_view name_view, bool detail) const {
    std::string name(trim(name_view));
    if (name.size() > 2 && name.front() == '(' && name.back() == ')') name = name.substr(1, name.size() - 2);
    const Impl& I = *impl_;
    if (const Binding* b = I.find(name)) {
        std::string s = I.type_line(name, *b);
        if (detail) {
            if (auto d = I.definitions.find(name); d != I.definitions.end()) s += "\n" + d->second;
        }
        return s;
    }
    if (const BuiltinDoc* d = find_builtin_doc(name)) return d->name + " : " + d->signature + "\n" + d->summary;
    const auto& schemes = builtin_schemes();
    if (auto it = schemes.find(name); it != schemes.end()) return name + " : " + scheme_to_string(*it->second);
    return {};
}

}  // namespace shoal
