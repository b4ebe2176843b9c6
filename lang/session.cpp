// The session: statements in, values and errors out. Every statement is
// parsed, type checked and evaluated against the committed bindings and only
// then committed, so a failure anywhere leaves the session as it was.
#include "session.h"

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <new>
#include <optional>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "builtins.h"
#include "builtins_eval.h"
#include "display.h"
#include "format.h"
#include "io.h"
#include "lexer.h"
#include "plot.h"

#ifndef SHOAL_VERSION
#define SHOAL_VERSION "unknown"
#endif

namespace shoal {

namespace {

constexpr int kMinPrintThreshold = 7;  // room for three leading, three trailing and "..."
constexpr int kMaxLoadDepth = 32;      // :load nesting, so a script loading itself stops

const char* const kKeywords[] = {"let", "in", "if", "then", "else", "loop", "for",
                                 "while", "do", "with", "true", "false"};

bool is_identifier(std::string_view s) {
    if (s.empty() || !is_ident_start(s[0])) return false;
    return std::all_of(s.begin(), s.end(), is_ident_char);
}

std::string_view trim(std::string_view s) {
    const char* ws = " \t\r\n";
    size_t b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    size_t e = s.find_last_not_of(ws);
    return s.substr(b, e - b + 1);
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }


// Byte offset of a Loc inside its source.
size_t offset_of(const Loc& loc) {
    std::string_view line = loc.source->line(loc.line);
    return static_cast<size_t>(line.data() - loc.source->text.data()) + static_cast<size_t>(loc.col - 1);
}

// Lets `let x = load "x.npy"` be typed from the file's header.
Type type_of_load(const std::string& path, const Loc& loc) {
    const std::string csv = ".csv";
    if (path.size() >= csv.size() && path.compare(path.size() - csv.size(), csv.size(), csv) == 0)
        user_error(ErrorKind::Io, loc, "`load` reads .npy files; use `loadCsv \"" + path + "\"` for a CSV file");
    // Any other name is read as .npy, so a missing or malformed file gets its real message.
    NpyHeader h = read_npy_header(path, loc);
    int rank = static_cast<int>(h.shape.size());
    if (rank < 1 || rank > 3)
        user_error(ErrorKind::Io, loc,
                   "'" + path + "' holds an array of rank " + std::to_string(rank) + "; Shoal arrays have rank 1 to 3");
    return t_array(rank, t_prim(h.elem));
}

// Builtin groups for the :help overview (names missing from the builtin
// tables are skipped, so the overview never lists what does not exist).
const std::pair<const char*, std::vector<const char*>> kHelpGroups[] = {
    {"construction", {"iota", "fill", "generate", "random", "linspace", "arange", "eye"}},
    {"shape", {"length", "rows", "cols", "shape", "reshape", "flatten", "transpose", "col", "row"}},
    {"elementwise", {"map", "zipWith", "zipWith3", "zip", "unzip", "where"}},
    {"math", {"sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
              "tanh", "abs", "floor", "ceil", "round", "min", "max", "pow", "erf"}},
    {"conversions", {"int", "long", "float", "double"}},
    {"reductions", {"reduce", "sum", "product", "maximum", "minimum", "all", "any", "count", "argmax", "argmin"}},
    {"statistics", {"mean", "var", "std", "median", "quantile", "dot", "norm", "outer", "cumsum", "cumprod"}},
    {"matrices", {"matmul", "solve", "inv", "det"}},
    {"scans", {"scan", "scanExclusive", "segscan"}},
    {"permutations", {"gather", "scatter", "permute", "reverse"}},
    {"structure", {"interleave", "take", "drop", "filter", "compress", "sort", "sortByKey", "argsort", "topk", "unique"}},
    {"counting", {"bincount", "tally", "histogram"}},
    {"iteration", {"iterate"}},
    {"I/O", {"load", "save", "loadCsv", "loadCsv1", "saveCsv"}},
};

// The commands are the ones documented in builtins.h (command_docs): one
// table serves dispatch, :help, completion and the docs.
using CommandInfo = CommandDoc;

const std::string& command_usage(const CommandInfo& c) { return c.usage; }
const std::string& command_summary(const CommandInfo& c) { return c.summary; }


// Calls `visit` with every free variable of `e` (a Var no enclosing lambda,
// let or loop binds). Scopes follow eval.cpp.
void for_each_free_variable(Expr& e, std::vector<std::string>& locals, const std::function<void(Expr&)>& visit) {
    auto push_pattern = [&](const auto& self, const PatternPtr& p) -> void {
        if (!p) return;
        if (p->kind == PatternKind::Var) locals.push_back(p->name);
        for (const auto& k : p->elems) self(self, k);
    };
    auto walk = [&](const ExprPtr& k) {
        if (k) for_each_free_variable(*k, locals, visit);
    };
    const size_t outer = locals.size();
    switch (e.kind) {
        case ExprKind::Var:
            if (std::find(locals.begin(), locals.end(), e.text) == locals.end()) visit(e);
            return;
        case ExprKind::Lambda:
            for (const auto& p : e.params) push_pattern(push_pattern, p);
            walk(e.kids[0]);
            break;
        case ExprKind::Let:
            walk(e.kids[0]);
            push_pattern(push_pattern, e.pattern);
            walk(e.kids[1]);
            break;
        case ExprKind::LoopFor:
            walk(e.kids[0]);
            walk(e.kids[1]);
            push_pattern(push_pattern, e.pattern);
            locals.push_back(e.counter);
            walk(e.kids[2]);
            break;
        case ExprKind::LoopWhile:
            walk(e.kids[0]);
            push_pattern(push_pattern, e.pattern);
            walk(e.kids[1]);
            walk(e.kids[2]);
            break;
        default:
            for (const auto& k : e.kids) walk(k);
            for (const auto& ix : e.indices) {
                walk(ix.index);
                walk(ix.lo);
                walk(ix.hi);
                walk(ix.step);
            }
            break;
    }
    locals.resize(outer);
}

// Points every free variable of `e` that names a session binding at that
// binding's key. The evaluator finds globals by name when it runs, so without
// this `let sq x = x * x; let quad x = sq (sq x); let sq = ...` would change
// what quad computes (and could even break its types).
void pin_free_variables(Expr& e, std::vector<std::string>& locals,
                        const std::map<std::string, std::string>& keys, std::set<std::string>& refs) {
    for_each_free_variable(e, locals, [&](Expr& var) {
        if (auto it = keys.find(var.text); it != keys.end()) {
            var.text = it->second;
            refs.insert(it->second);
        }
    });
}

}  // namespace

// The bindings live in `globals` under a key: the name itself, or name~N once
// the name has been rebound while an older definition still uses the old one
// ('~' cannot occur in an identifier). `names` maps what the user sees to the
// current key.
struct Session::Impl {
    Globals globals;                                    // every live binding, by key
    std::map<std::string, std::string> names;           // user name -> key of its current binding
    std::map<std::string, std::set<std::string>> refs;  // key -> keys its definition uses
    std::map<std::string, std::string> definitions;     // user name -> its `let` text, for inspect(detail)
    uint64_t versions = 0;
    uint64_t random_stream = 0;
    std::shared_ptr<CompiledBackend> compiled;  // made on first use, kept for the session
    std::vector<Warning> warnings;    // found while the current statement runs
    int depth = 0;                    // nesting of execute() through :load
    bool interrupt_reported = false;  // one "interrupted" per Ctrl-C
    EmitWriter emit_writer;           // null: write the files

    // v forced (or settled) where the statement needs it whole; `why` is
    // what :profile says about materialising it.
    Value materialise(const Value& v, const std::string& why, bool keep_on_device) {
        if (compiled) compiled->forcing_because(why);
        struct Reset {
            CompiledBackend* b;
            ~Reset() {
                if (b) b->forcing_because("");
            }
        } reset{compiled.get()};
        return keep_on_device ? settle(v) : force(v);
    }

    const Binding* find(const std::string& name) const {
        auto it = names.find(name);
        return it == names.end() ? nullptr : globals.at(it->second).get();
    }

    TypeEnvironment type_env() const {
        TypeEnvironment env;
        for (const auto& [name, key] : names) env.globals[name] = globals.at(key)->scheme;
        env.load_typer = type_of_load;
        return env;
    }

    // Rewrites the statement's free variables to keys; returns the keys used.
    std::set<std::string> pin(const ExprPtr& e) const {
        std::set<std::string> used;
        std::vector<std::string> locals;
        if (e) pin_free_variables(*e, locals, names, used);
        return used;
    }

    void commit(const std::map<std::string, BindingPtr>& fresh, const std::set<std::string>& used,
                const std::string& text) {
        for (const auto& [name, b] : fresh) {
            std::string key = globals.count(name) ? name + "~" + std::to_string(++versions) : name;
            globals[key] = b;
            refs[key] = used;
            names[name] = key;
            definitions[name] = text;
        }
        collect();
    }

    // Drops the bindings that no current name reaches any more.
    void collect() {
        std::set<std::string> live;
        std::vector<std::string> todo;
        for (const auto& [_, key] : names) todo.push_back(key);
        while (!todo.empty()) {
            std::string k = todo.back();
            todo.pop_back();
            if (!live.insert(k).second) continue;
            for (const auto& r : refs[k]) todo.push_back(r);
        }
        for (auto it = globals.begin(); it != globals.end();) {
            if (live.count(it->first)) {
                ++it;
            } else {
                refs.erase(it->first);
                it = globals.erase(it);
            }
        }
    }

    // After the GPU stopped: forgets the bindings whose arrays were only in
    // its memory, and those whose definitions use them; returns their names.
    std::vector<std::string> forget_device_only() {
        std::set<std::string> gone;  // keys
        for (const auto& [key, b] : globals)
            if (device_only(b->value)) gone.insert(key);
        for (bool more = true; more;) {
            more = false;
            for (const auto& [key, used] : refs)
                if (!gone.count(key) && std::any_of(used.begin(), used.end(), [&](const auto& k) { return gone.count(k) > 0; }))
                    more = gone.insert(key).second;
        }
        std::vector<std::string> lost;
        for (auto it = names.begin(); it != names.end();) {
            if (!gone.count(it->second)) {
                ++it;
                continue;
            }
            lost.push_back(it->first);
            definitions.erase(it->first);
            it = names.erase(it);
        }
        collect();
        return lost;
    }
    static bool device_only(const Value& v) {
        if (v.is_delayed()) return !v.delayed()->host();
        if (!v.is_tuple()) return false;
        return std::any_of(v.tuple().begin(), v.tuple().end(), device_only);
    }

    void clear() {
        globals.clear();
        names.clear();
        refs.clear();
        definitions.clear();
        random_stream = 0;
    }

    std::string type_line(const std::string& name, const Binding& b) const {
        std::string s = name + " : " + scheme_to_string(*b.scheme);
        if (!b.generic && is_array_like(b.value)) s += "  " + shape_to_string(array_like_shape(b.value));
        return s;
    }
};


// The :commands, with access to the session's private state.
struct SessionCommands {
    Session& s;
    Session::Impl& I;
    SessionOutput& out;
    const Stmt& stmt;
    const SourcePtr& src;

    [[noreturn]] void usage(const CommandInfo& c) const {
        user_error(ErrorKind::Usage, stmt.loc, "usage: " + command_usage(c));
    }

    // One statement: parse, check, evaluate, commit. Reports its own errors.
    static bool run_statement(Session& s, const SourcePtr& src, StatementSpan span, SessionOutput& out);
    static bool run_statement_reporting_errors(Session& s, const SourcePtr& src, StatementSpan span,
                                               SessionOutput& out);
    // Runs a top-level `let p = e`: the session changes only if it succeeds.
    // `measured` runs the evaluation of e it is given (:time and :profile
    // wrap it); null: run it.
    using Measured = std::function<void(const std::function<void()>& evaluate_it)>;
    // `context`: the evaluation context to use (:profile names the bindings
    // in it); null: the session's.
    static void run_let(Session& s, const Stmt& stmt, const std::string& text, const Measured& measured = nullptr,
                        const EvalContext* context = nullptr);

    // Returns false when the command ran but something inside failed (:load).
    bool run() {
        const CommandInfo* cmd = lookup(stmt.command);
        std::string_view arg = trim(stmt.argument);
        std::string name = cmd->name;
        // Options (`--word` right after the command) only where a command takes them.
        if (name != "cuda" && leading_option(arg))
            user_error(ErrorKind::Usage, option_loc(arg), "':" + name + "' takes no options", {"usage: " + command_usage(*cmd)});
        if (name == "help") return help(arg);
        if (name == "type") return type(*cmd, arg);
        if (name == "load") return load(*cmd, arg);
        if (name == "env") {
            no_argument(*cmd, arg);
            return env();
        }
        if (name == "reset") {
            no_argument(*cmd, arg);
            I.clear();
            const int columns = s.settings_.columns;  // the terminal's, not a setting
            s.settings_ = SessionSettings{};
            s.settings_.columns = columns;
            return true;
        }
        if (name == "seed") return seed(*cmd, arg);
        if (name == "ir" || name == "cuda") return explain(*cmd, arg, name == "cuda");
        if (name == "profile" || name == "time") return measure(*cmd, arg, name == "profile");
        if (name == "plot" || name == "hist") return plot(*cmd, arg, name == "hist" ? PlotKind::Hist : PlotKind::Plot);
        if (name == "set") return set(*cmd, arg);
        if (name == "compile") return compile(*cmd, arg);
        if (name == "emit") return emit(*cmd, arg);
        if (name == "mem") {
            no_argument(*cmd, arg);
            std::vector<std::pair<std::string, Value>> bindings;
            for (const auto& [user, key] : I.names) bindings.emplace_back(user, I.globals.at(key)->value);
            out.text(require_compiled()->memory_report(bindings));
            return true;
        }
        if (name == "cache") {
            if (arg == "clear") {
                out.text(require_compiled()->clear_cache());
                return true;
            }
            if (!arg.empty()) user_error(ErrorKind::Usage, stmt.argument_loc, "usage: :cache [clear]");
            out.text(require_compiled()->cache_report());
            return true;
        }
        if (name == "device") {
            no_argument(*cmd, arg);
            out.text(require_compiled()->device_report());
            return true;
        }
        if (name == "quit") {
            no_argument(*cmd, arg);
            s.quit_ = true;
            return true;
        }
        internal_error(__FILE__, __LINE__, "command table and dispatch disagree on :" + name);
    }

    // Exact names, or an unambiguous prefix (`:t`, `:q`), as in GHCi.
    const CommandInfo* lookup(const std::string& name_typed) const {
        // `:h` and `:t` are help and type by convention (GHCi), though :hist
        // and :time share the prefixes.
        const std::string name = name_typed == "h" ? "help" : name_typed == "t" ? "type" : name_typed;
        std::vector<const CommandInfo*> matches;
        for (const auto& c : command_docs()) {
            if (name == c.name) return &c;
            if (!name.empty() && starts_with(c.name, name)) matches.push_back(&c);
        }
        if (matches.size() == 1) return matches[0];
        if (matches.empty())
            user_error(ErrorKind::Usage, stmt.loc, "unknown command ':" + name + "' (try :help)");
        std::string list;
        for (const auto* c : matches) list += (list.empty() ? ":" : ", :") + c->name;
        user_error(ErrorKind::Usage, stmt.loc, "ambiguous command ':" + name + "': " + list);
    }

    void no_argument(const CommandInfo& c, std::string_view arg) const {
        if (!arg.empty()) usage(c);
    }

    bool help(std::string_view topic) {
        if (topic.empty()) {
            out.text(overview());
            return true;
        }
        std::string t(topic);
        if (t.size() > 1 && t.front() == '(' && t.back() == ')') t = t.substr(1, t.size() - 2);  // (+)
        if (!t.empty() && t[0] == ':') {
            t.erase(0, 1);
            for (const auto& c : command_docs())
                if (t == c.name) {
                    out.text(command_usage(c) + "\n  " + command_summary(c));
                    return true;
                }
        }
        if (const BuiltinDoc* d = find_builtin_doc(t)) {
            out.text(d->name + " : " + d->signature + "\n  " + d->summary);
            return true;
        }
        for (const auto& c : command_docs())
            if (t == c.name) {
                out.text(command_usage(c) + "\n  " + command_summary(c));
                return true;
            }
        const auto& schemes = builtin_schemes();
        if (auto it = schemes.find(t); it != schemes.end()) {
            out.text(t + " : " + scheme_to_string(*it->second));
            return true;
        }
        for (const char* k : kKeywords)
            if (t == k) {
                out.text("'" + t + "' is a keyword; see docs/language.md");
                return true;
            }
        if (const std::string instead = habit_instead(t); !instead.empty())
            user_error(ErrorKind::Usage, stmt.argument_loc.valid() ? stmt.argument_loc : stmt.loc,
                       "no help for '" + std::string(topic) + "': it is not Shoal's", {instead});
        user_error(ErrorKind::Usage, stmt.argument_loc.valid() ? stmt.argument_loc : stmt.loc,
                   "no help for '" + std::string(topic) + "'", {"try :help for the list of builtins and commands"});
    }

    // `text` wrapped at word boundaries to `columns`, continuation lines
    // indented by `indent` spaces.
    static std::string wrapped(const std::string& text, size_t indent, size_t columns) {
        std::string out, line;
        size_t at = 0;
        while (at < text.size()) {
            size_t end = text.find(' ', at + 1);
            if (end == std::string::npos) end = text.size();
            const std::string word = text.substr(at, end - at);  // with its leading blank
            if (line.size() + word.size() > columns && line.find_first_not_of(' ') != std::string::npos &&
                line.size() > indent) {
                out += line + "\n";
                line = std::string(indent, ' ') + word.substr(word.find_first_not_of(' ') == std::string::npos
                                                                  ? word.size()
                                                                  : word.find_first_not_of(' '));
            } else {
                line += word;
            }
            at = end;
        }
        return out + line;
    }

    std::string overview() const {
        std::ostringstream o;
        // The banner fits 100 columns like the rest (the engine's description is long).
        o << wrapped(std::string("Shoal ") + SHOAL_VERSION + ", an array language: " + s.engine_description() + ".", 2, 100)
          << "\n"
          << "A statement is `let x = e`, `let f a b = e`, an expression (its value is printed)\n"
          << "or a command; indented lines and open brackets continue a statement.\n\n"
          << "Commands (a unique prefix works: :t, :q):\n";
        // Laid out for the terminal: usages up to kUsageColumn wide share a
        // line with their summary, longer ones stand on their own line;
        // summaries wrap at word boundaries under their column.
        constexpr size_t kUsageColumn = 22;
        const size_t columns = static_cast<size_t>(std::max(s.settings_.columns, 40));
        for (const auto& c : command_docs()) {
            const std::string u = command_usage(c);
            std::string line = "  " + u;
            if (u.size() > kUsageColumn) {
                o << wrapped(line, 4, columns) << '\n';
                line.clear();
            }
            line += std::string(kUsageColumn + 4 - line.size(), ' ') + command_summary(c);
            o << wrapped(line, kUsageColumn + 4, columns) << '\n';
        }
        o << "\nBuiltins (:help name for one of them):\n";
        std::set<std::string> listed;
        const auto& schemes = builtin_schemes();
        auto exists = [&](const std::string& n) { return find_builtin_doc(n) || schemes.count(n); };
        // "  group         name name ...", wrapped under the names at 78 columns.
        auto group_line = [&o](const std::string& group, const std::vector<std::string>& names) {
            if (names.empty()) return;
            const size_t indent = 16;
            std::string line = "  " + group + std::string(indent - 2 - group.size(), ' ');
            size_t start = line.size();
            for (const auto& n : names) {
                if (line.size() > start && line.size() + 1 + n.size() > 78) {
                    o << line << '\n';
                    line = std::string(indent, ' ');
                    start = line.size();
                }
                line += (line.size() > start ? " " : "") + n;
            }
            o << line << '\n';
        };
        for (const auto& [group, names] : kHelpGroups) {
            std::vector<std::string> present;
            for (const char* n : names)
                if (exists(n)) {
                    present.push_back(n);
                    listed.insert(n);
                }
            group_line(group, present);
        }
        std::vector<std::string> rest;
        for (const auto& d : builtin_docs())
            if (is_identifier(d.name) && listed.insert(d.name).second) rest.push_back(d.name);
        for (const auto& [n, _] : schemes)
            if (is_identifier(n) && listed.insert(n).second) rest.push_back(n);
        group_line("other", rest);
        o << "\nOperators: |> || && == != < <= > >= ++ | ^ & << >> + - * / % ** and unary - ! ~;\n"
          << "(+) etc. are functions. Loops: loop x = x0 for i < k do e, loop x = x0 while c do e.\n"
          << "The full reference is docs/language.md.";
        return o.str();
    }

    bool type(const CommandInfo& c, std::string_view arg) {
        if (arg.empty() || !stmt.argument_loc.valid()) usage(c);
        // A bare name prints its scheme as declared: instantiating it would
        // default its type variables (`Num a => [a] -> a` would read `[int] -> int`).
        std::string name(arg);
        if (name.size() > 2 && name.front() == '(' && name.back() == ')') {
            std::string op(trim(std::string_view(name).substr(1, name.size() - 2)));
            if (!is_identifier(op)) name = op;
        }
        if (const Binding* b = I.find(name)) {
            out.text(scheme_to_string(*b->scheme));
            return true;
        }
        const auto& schemes = builtin_schemes();
        if (auto it = schemes.find(name); it != schemes.end()) {
            out.text(scheme_to_string(*it->second));
            return true;
        }
        size_t begin = offset_of(stmt.argument_loc);
        size_t end = std::min(begin + stmt.argument.size(), src->text.size());
        ExprPtr e = parse_expression(src, begin, end);
        out.text(scheme_to_string(*check_expression_scheme(e, I.type_env())));
        return true;
    }

    // The `--word` a command's argument starts with (the parser keeps such
    // options out of comments: lang/parser.cpp command_options_end).
    static std::optional<std::string_view> leading_option(std::string_view arg) {
        if (arg.size() < 3 || !arg.starts_with("--") || !std::isalpha(static_cast<unsigned char>(arg[2])))
            return std::nullopt;
        return arg.substr(0, std::min(arg.size(), arg.find_first_of(" \t")));
    }

    // Where the option at the start of `arg` (a view into stmt.argument) is.
    Loc option_loc(std::string_view arg) const {
        Loc loc = stmt.argument_loc;
        loc.col += static_cast<int>(arg.data() - trim(stmt.argument).data());
        loc.length = static_cast<int>(leading_option(arg)->size());
        return loc;
    }

    // The command's argument parsed as an expression (positions in the
    // statement's source), after its first `skip` bytes (an option).
    ExprPtr argument_expression(size_t skip = 0) const {
        const size_t start = offset_of(stmt.argument_loc);
        const size_t end = std::min(start + stmt.argument.size(), src->text.size());
        const size_t begin = std::min(start + skip, end);
        return parse_expression(src, begin, end);
    }

    // :ir e / :cuda e: evaluates e with the compiled backend (whatever the
    // current backend), forcing its value, and prints the plans built, with
    // the session's bindings as the names of the buffers they fill. A
    // function (`:cuda saxpy`) is applied to placeholder arguments: arrays of
    // one element whose buffers and extents are named after its parameters,
    // so the plan reads as formulas of them. `:cuda --full e` shows the
    // complete CUDA units (the helper functions are folded otherwise).
    bool explain(const CommandInfo& c, std::string_view arg, bool cuda) {
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
        const Type t = check_expression(e, I.type_env());
        I.pin(e);
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
    EvalContext naming_context(CompiledBackend* backend, std::map<const void*, std::string>& names) const {
        EvalContext ctx = s.eval_context();
        ctx.backend = backend;
        backend->set_check(s.settings_.check);
        for (const auto& [name, key] : I.names) name_arrays(I.globals.at(key)->value, name, names);
        ctx.parameter_names = &names;
        return ctx;
    }

    // `(f : T)` for the first example instance of f's scheme that checks
    // (what a hint may suggest), or "".
    std::string working_annotation(const std::string& name, const Scheme& scheme) const {
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
    std::string explained_function(const Expr& e) const {
        const Expr* head = &e;
        while (head->kind == ExprKind::App || head->kind == ExprKind::Annot) head = head->kids.at(0).get();
        return head->kind == ExprKind::Var && I.find(head->text) ? head->text : "";
    }

    // Names the arrays of a binding's value for the generated code: `x`, or
    // `p_0`, `p_1` for the components of a tuple `p`.
    static void name_arrays(const Value& v, const std::string& name, std::map<const void*, std::string>& names) {
        if (v.is_array()) names.emplace(v.array().get(), name);
        if (v.is_delayed()) names.emplace(v.delayed().get(), name);
        if (!v.is_tuple()) return;
        for (size_t k = 0; k < v.tuple().size(); ++k) name_arrays(v.tuple()[k], name + "_" + std::to_string(k), names);
    }

    // The placeholder arguments of a function of type t for `:cuda f`, the
    // array ones registered in `names`; `header` gets one comment line per
    // parameter.
    std::vector<Value> placeholder_arguments(const Value& f, Type t, std::map<const void*, std::string>& names,
                                             std::string& header) const {
        const std::vector<std::string> param_names = parameter_names(f, t);
        std::vector<Value> args;
        header = "// " + std::string(trim(stmt.argument)) + " : " + type_to_string(t) +
                 ", traced with symbolic parameters:\n";
        for (size_t k = 0; is_func(t); ++k, t = func_result(t)) {
            const Type p = func_param(t);
            const std::string& name = param_names[k];
            if (!is_concrete(p) || (!is_prim(p) && !is_array(p)))
                user_error(ErrorKind::Type, stmt.argument_loc,
                           ":" + std::string(stmt.command) + " of a function needs parameters of known scalar or "
                           "array types; parameter " + std::to_string(k + 1) + " of '" + std::string(trim(stmt.argument)) +
                           "' is " + type_to_string(p),
                           {"apply it to arguments instead, e.g. `:" + stmt.command + " f xs`"});
            if (is_prim(p)) {
                header += "//   " + name + " : " + type_to_string(p) + "   a scalar kernel parameter (c...)\n";
                args.emplace_back(convert_scalar(Scalar::of_int(0), prim_of(p)));
                continue;
            }
            auto a = std::make_shared<Array>(prim_of(p), Shape(static_cast<size_t>(array_rank(p)), 1));
            names[a.get()] = name;
            header += "//   " + name + " : " + type_to_string(p) + "   buffer " + name + ", extent" +
                      (array_rank(p) > 1 ? "s len_" + name + "0.." : " len_" + name) + "\n";
            args.emplace_back(a);
        }
        return args;
    }

    // The argument as a statement when it is a top-level `let` (`:time let
    // x = random 1000`); null for an expression (`let ... in ...` included).
    StmtPtr argument_let() const {
        const std::string_view a = trim(stmt.argument);
        if (a.size() < 4 || !a.starts_with("let") || (a[3] != ' ' && a[3] != '\t')) return nullptr;
        const size_t start = offset_of(stmt.argument_loc);
        StmtPtr st = parse_statement(src, StatementSpan{start, std::min(start + stmt.argument.size(), src->text.size())});
        return st->kind == StmtKind::Let ? st : nullptr;
    }

    // :time e evaluates e on the current backend, shows its value and how long
    // it took; :profile e evaluates it with the compiled backend and explains
    // what each kernel did. Both take a top-level `let` too: it binds as
    // usual, and the evaluation of its value is what they measure.
    bool measure(const CommandInfo& c, std::string_view arg, bool per_kernel) {
        if (arg.empty() || !stmt.argument_loc.valid()) usage(c);
        const auto parsing = std::chrono::steady_clock::now();
        const StmtPtr let = argument_let();
        ExprPtr e;
        Type t;
        if (!let) {
            e = argument_expression();
            t = check_expression(e, I.type_env());
            I.pin(e);
        }
        std::map<const void*, std::string> names;  // :profile names the bindings its plans read
        EvalContext ctx = per_kernel ? naming_context(require_compiled(), names) : s.eval_context();
        CompiledBackend* backend = dynamic_cast<CompiledBackend*>(ctx.backend);
        Value v;
        const TransferCounters moved_before = backend ? backend->transfers() : TransferCounters{};
        const CompileCounters compiled_before = backend ? backend->compilation() : CompileCounters{};
        TimeBreakdown breakdown;
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
            I.random_stream = ctx.random_stream;
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
            out.display(profile_display(report, wall, backend->description(), breakdown.moved,
                                        *find_gpu_model(s.settings_.gpu), advice));
            return true;
        }
        if (!let && !v.is_unit()) out.value(v, t, format_value(v, s.settings_.print_threshold));
        out.display(time_display(report.kernels, wall, backend != nullptr, breakdown, report.calls, advice));
        return true;
    }

    // :compile e: runs e on the array compiler, then compiles the kernels
    // of every plan it ran for the GPU (`:set arch`, else the device's).
    bool compile(const CommandInfo& c, std::string_view arg) {
        if (arg.empty() || !stmt.argument_loc.valid()) usage(c);
        CompiledBackend* backend = require_compiled();
        ExprPtr e = argument_expression();
        check_expression(e, I.type_env());
        I.pin(e);
        EvalContext ctx = s.eval_context();
        ctx.backend = backend;
        backend->set_check(s.settings_.check);
        const std::string text =
            backend->compile_report([&] { force(evaluate(e, ctx)); }, s.settings_.arch);
        I.random_stream = ctx.random_stream;
        out.text(text);
        return true;
    }

    // :emit f (g : t) h as "cname" ... to "dir/name": traces each function
    // with the array compiler and writes dir/name.h, dir/name.cu and
    // dir/shoal_runtime.h (docs/emit.md). Every file is written to a
    // temporary first and renamed once all are: a failure writes nothing.
    bool emit(const CommandInfo& c, std::string_view arg) {
        if (arg.empty() || !stmt.argument_loc.valid()) usage(c);
        CompiledBackend* backend = require_compiled();
        const std::string_view whole = trim(stmt.argument);
        auto loc_at = [&](size_t at, size_t length) {
            Loc loc = stmt.argument_loc;
            loc.col += static_cast<int>(at);
            loc.length = static_cast<int>(std::max<size_t>(length, 1));
            return loc;
        };
        size_t at = 0;
        auto skip_blanks = [&] { while (at < whole.size() && (whole[at] == ' ' || whole[at] == '\t')) ++at; };
        auto word = [&] {
            size_t end = at;
            while (end < whole.size() && (std::isalnum(static_cast<unsigned char>(whole[end])) || whole[end] == '_' ||
                                          whole[end] == '\''))
                ++end;
            return whole.substr(at, end - at);
        };
        auto string_literal = [&](const char* after) {
            skip_blanks();
            if (at >= whole.size() || whole[at] != '"')
                user_error(ErrorKind::Usage, loc_at(at, 1), std::string("expected a quoted name after '") + after + "'",
                           {"usage: " + command_usage(c)});
            const size_t close = whole.find('"', at + 1);
            if (close == std::string_view::npos)
                user_error(ErrorKind::Usage, loc_at(at, whole.size() - at), "unterminated string", {"usage: " + command_usage(c)});
            std::string text(whole.substr(at + 1, close - at - 1));
            at = close + 1;
            return text;
        };
        EmitRequest request;
        request.command = ":emit " + std::string(whole);
        request.version = SHOAL_VERSION;
        std::string path;
        Loc path_loc;
        std::map<const void*, std::string> names;
        EvalContext ctx = naming_context(backend, names);
        for (;;) {
            skip_blanks();
            if (at >= whole.size()) break;
            const size_t item = at;
            if (word() == "to") {
                at += 2;
                skip_blanks();
                const size_t quote = at;
                path = string_literal("to");
                path_loc = loc_at(quote, at - quote);
                skip_blanks();
                if (at < whole.size())
                    user_error(ErrorKind::Usage, loc_at(at, whole.size() - at), "unexpected text after the file name",
                               {"usage: " + command_usage(c)});
                break;
            }
            EmitFunction f;
            ExprPtr e;
            if (whole[item] == '(') {
                int depth = 0;
                size_t end = item;
                for (; end < whole.size(); ++end) {
                    depth += whole[end] == '(' ? 1 : whole[end] == ')' ? -1 : 0;
                    if (depth == 0) break;
                }
                if (end >= whole.size())
                    user_error(ErrorKind::Syntax, loc_at(item, 1), "this '(' is never closed");
                const size_t begin = offset_of(stmt.argument_loc) + item;
                e = parse_expression(src, begin, begin + (end + 1 - item));
                at = end + 1;
            } else {
                const std::string_view name = word();
                if (name.empty())
                    user_error(ErrorKind::Usage, loc_at(item, 1), "expected a function's name, `(f : type)` or `to \"name\"`",
                               {"usage: " + command_usage(c)});
                at += name.size();
                const size_t begin = offset_of(stmt.argument_loc) + item;
                e = parse_expression(src, begin, begin + name.size());
            }
            f.loc = e->loc;
            const Expr* head = e.get();
            while (head->kind == ExprKind::Annot) head = head->kids.at(0).get();
            if (head->kind != ExprKind::Var)
                user_error(ErrorKind::Usage, f.loc, ":emit takes functions by name, optionally with a type: `(f : type)`");
            f.name = head->text;
            const Binding* b = I.find(f.name);
            if (!b)
                user_error(ErrorKind::Usage, f.loc,
                           evalimpl::find_builtin(f.name) ? "'" + f.name + "' is a builtin: :emit writes functions you define"
                                                : "unknown function '" + f.name + "'",
                           {"define it first with `let " + f.name + " x = ...`"});
            if (b->generic && e.get() == head) {
                const std::string example = working_annotation(f.name, *b->scheme);
                user_error(ErrorKind::Type, f.loc,
                           "'" + f.name + "' is polymorphic (" + scheme_to_string(*b->scheme) +
                               "): :emit needs the element types its wrapper takes",
                           {"annotate its parameters where it is defined" +
                            (example.empty() ? std::string() : ", or give the type here, e.g. :emit " + example + " to \"x\"")});
            }
            f.type = check_expression(e, I.type_env());
            if (!is_func(f.type))
                user_error(ErrorKind::Usage, f.loc, "'" + f.name + "' is not a function (" + type_to_string(f.type) + ")",
                           {":emit writes functions; to use an array in C++, save it (`save \"x.npy\" " + f.name + "`)"});
            if (!is_concrete(f.type))
                user_error(ErrorKind::Type, f.loc, "the type of '" + f.name + "' is not concrete: " + type_to_string(f.type),
                           {"give it here, e.g. :emit (" + f.name + " : [float] -> float) to \"x\""});
            I.pin(e);
            f.value = evaluate(e, ctx);
            refuse_captured_arrays(f);
            f.params = parameter_names(f.value, f.type);
            if (auto d = I.definitions.find(f.name); d != I.definitions.end()) f.source = d->second;
            f.cpp_name = f.name;
            skip_blanks();
            if (word() == "as") {
                at += 2;
                f.cpp_name = string_literal("as");
            }
            request.functions.push_back(std::move(f));
        }
        if (path.empty()) user_error(ErrorKind::Usage, stmt.loc, "where should :emit write? end with `to \"name\"`",
                                     {"usage: " + command_usage(c)});
        if (request.functions.empty())
            user_error(ErrorKind::Usage, stmt.loc, "no function to emit", {"usage: " + command_usage(c)});
        const std::filesystem::path target(path);
        request.unit = target.filename().string();
        if (request.unit.size() > 3 && request.unit.ends_with(".cu")) request.unit.resize(request.unit.size() - 3);
        request.context = ctx;
        const std::vector<EmittedFile> files = backend->emit(request);
        const std::filesystem::path dir = target.parent_path();
        const std::string written =
            I.emit_writer ? I.emit_writer(dir.string(), files, path_loc) : write_all(dir, files, path_loc);
        out.text(written);
        return true;
    }

    // A function the wrapper compiles may read only the arrays it is passed:
    // one that uses a session array is refused, naming it.
    void refuse_captured_arrays(const EmitFunction& f) const {
        const evalimpl::CallableView view = evalimpl::as_callable(f.value).view();
        if (!view.lambda) return;
        std::vector<std::string> locals;
        for_each_free_variable(*view.lambda, locals, [&](Expr& var) {
            auto g = I.globals.find(var.text);
            if (g == I.globals.end() || g->second->generic) return;
            const Value& v = g->second->value;
            if (!is_array_like(v) && !v.is_delayed()) return;
            const std::string name = var.text.substr(0, var.text.find('~'));
            user_error(ErrorKind::Usage, var.loc,
                       "cannot emit '" + f.name + "': it reads the session array '" + name +
                           "', which the C++ caller cannot pass",
                       {"make it a parameter: let " + f.name + " (" + name + " : " + type_to_string(g->second->scheme->type) +
                        ") ... = ..., then pass the array from C++"});
        });
    }

    // The names of a function's parameters (x0, x1, ... where a pattern has none).
    static std::vector<std::string> parameter_names(const Value& f, Type t) {
        std::vector<std::string> names;
        const evalimpl::CallableView view = evalimpl::as_callable(f).view();
        for (size_t k = 0; is_func(t); ++k, t = func_result(t)) {
            std::string name;
            if (view.lambda && view.bound + k < view.lambda->params.size()) {
                const PatternPtr& p = view.lambda->params[view.bound + k];
                if (p->kind == PatternKind::Var) name = p->name;
            }
            names.push_back(!name.empty() && is_identifier(name) ? name : "x" + std::to_string(k));
        }
        return names;
    }

    // Writes every file to a temporary in `dir`, then renames them all; a
    // file that exists with the same text is left alone. Says what it wrote.
    static std::string write_all(const std::filesystem::path& dir, const std::vector<EmittedFile>& files, const Loc& loc) {
        namespace fs = std::filesystem;
        std::vector<std::pair<fs::path, fs::path>> renames;  // temporary -> final
        std::vector<std::string> unchanged;
        auto fail = [&](const fs::path& p, const std::string& why) {
            for (const auto& [tmp, final_path] : renames) {
                std::error_code ignored;
                fs::remove(tmp, ignored);
            }
            user_error(ErrorKind::Io, loc, "cannot write " + p.string() + ": " + why, {"nothing was written"});
        };
        std::error_code ec;
        if (!dir.empty() && !fs::is_directory(dir, ec)) fail(dir, "no such directory");
        for (const EmittedFile& f : files) {
            const fs::path final_path = dir / f.name;
            {
                std::ifstream existing(final_path, std::ios::binary);
                if (existing) {
                    std::string text((std::istreambuf_iterator<char>(existing)), std::istreambuf_iterator<char>());
                    if (text == f.text) {
                        unchanged.push_back(final_path.string());
                        continue;
                    }
                }
            }
            const fs::path tmp = dir / ("." + f.name + ".tmp" + std::to_string(::getpid()));
            std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
            if (!o) fail(final_path, std::strerror(errno));
            renames.emplace_back(tmp, final_path);
            o << f.text;
            o.close();
            if (!o) fail(final_path, std::strerror(errno));
        }
        std::string written;
        for (const auto& [tmp, final_path] : renames) {
            fs::rename(tmp, final_path, ec);
            if (ec) fail(final_path, ec.message());
            written += (written.empty() ? "" : ", ") + final_path.string();
        }
        std::string text = written.empty() ? "nothing changed" : "wrote " + written;
        if (!unchanged.empty()) {
            std::string same;
            for (const std::string& u : unchanged) same += (same.empty() ? "" : ", ") + u;
            text += (written.empty() ? ": " : "; ") + same + " unchanged";
        }
        return text;
    }

    // :plot e / :hist e: evaluates e on the current backend and draws it.
    bool plot(const CommandInfo& c, std::string_view arg, PlotKind kind) {
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

    CompiledBackend* require_compiled() const {
        CompiledBackend* b = s.compiled_backend();
        if (!b) user_error(ErrorKind::Usage, stmt.loc, "the array compiler is not available in this program");
        return b;
    }

    bool load(const CommandInfo& c, std::string_view arg) {
        if (arg.size() >= 2 && arg.front() == '"' && arg.back() == '"') arg = arg.substr(1, arg.size() - 2);
        if (arg.empty()) usage(c);
        if (I.depth >= kMaxLoadDepth)
            user_error(ErrorKind::Usage, stmt.loc,
                       ":load nested more than " + std::to_string(kMaxLoadDepth) + " deep (does a script load itself?)");
        return s.load_file(std::string(arg), stmt.argument_loc.valid() ? stmt.argument_loc : stmt.loc, out);
    }

    bool env() {
        std::string text;
        for (const auto& [name, key] : I.names)
            text += (text.empty() ? "" : "\n") + I.type_line(name, *I.globals.at(key));
        out.text(text.empty() ? "no bindings" : text);
        return true;
    }

    static bool parse_u64(std::string_view s, uint64_t& v) {
        auto r = std::from_chars(s.data(), s.data() + s.size(), v);
        return r.ec == std::errc() && r.ptr == s.data() + s.size();
    }

    bool seed(const CommandInfo& c, std::string_view arg) {
        if (arg.empty()) {
            out.text("seed " + std::to_string(s.settings_.seed));
            return true;
        }
        uint64_t v = 0;
        if (!parse_u64(arg, v)) usage(c);
        s.settings_.seed = v;
        I.random_stream = 0;
        return true;
    }

    static std::string on_off(bool on) { return on ? "on" : "off"; }

    bool set(const CommandInfo& c, std::string_view arg) {
        if (arg.empty()) {
            out.text("print " + std::to_string(s.settings_.print_threshold) + "\ncheck " + on_off(s.settings_.check) + "\nseed " + std::to_string(s.settings_.seed) +
                     "\nbackend " + (s.settings_.compiled && s.compiled_backend() ? "compiled" : "reference") +
                     (s.compiled_backend() ? "\nexecutor " + s.compiled_backend()->executor_name() : "") +
                     "\narch " + (s.settings_.arch.empty() ? "the GPU's (sm_90 without one)" : s.settings_.arch) +
                     "\nfusion " + on_off(s.settings_.optimisations.fusion) + "\nsharedmem " +
                     on_off(s.settings_.optimisations.shared_memory) + "\nhoist " +
                     on_off(s.settings_.optimisations.hoist) + "\nblas " + on_off(s.settings_.optimisations.blas) +
                     "\ngpu " + s.settings_.gpu);
            return true;
        }
        size_t sp = arg.find_first_of(" \t");
        std::string_view key = arg.substr(0, sp);
        std::string_view value = sp == std::string_view::npos ? std::string_view{} : trim(arg.substr(sp));
        if (key == "print") {
            uint64_t n = 0;
            if (!parse_u64(value, n) || n < kMinPrintThreshold || n > 1000000)
                user_error(ErrorKind::Usage, stmt.loc,
                           "usage: :set print N  (N is the longest axis printed in full, at least " +
                               std::to_string(kMinPrintThreshold) + ")");
            s.settings_.print_threshold = static_cast<int>(n);
            return true;
        }
        Optimisations& o = s.settings_.optimisations;
        for (auto [name, flag] : {std::pair<const char*, bool*>{"check", &s.settings_.check}, {"fusion", &o.fusion},
                                  {"sharedmem", &o.shared_memory}, {"hoist", &o.hoist}, {"blas", &o.blas}}) {
            if (key != name) continue;
            if (value == "on" || value == "off") {
                *flag = value == "on";
                return true;
            }
            user_error(ErrorKind::Usage, stmt.loc, "usage: :set " + std::string(name) + " on|off");
        }
        if (key == "backend") {
            if (value != "reference" && value != "compiled")
                user_error(ErrorKind::Usage, stmt.loc, "usage: :set backend reference|compiled");
            if (value == "compiled") require_compiled();
            s.settings_.compiled = value == "compiled";
            return true;
        }
        if (key == "arch") {
            const bool ok = value.size() > 3 && value.substr(0, 3) == "sm_" &&
                            std::all_of(value.begin() + 3, value.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
            if (!ok) user_error(ErrorKind::Usage, stmt.loc, "usage: :set arch sm_XY  (e.g. sm_80, sm_90)");
            s.settings_.arch = std::string(value);
            return true;
        }
        if (key == "gpu") {
            if (!find_gpu_model(std::string(value))) {
                std::string names;
                for (const GpuModel& g : gpu_models()) names += (names.empty() ? "" : "|") + std::string(g.name);
                user_error(ErrorKind::Usage, stmt.loc, "usage: :set gpu " + names + "  (the GPU :profile estimates times for)");
            }
            s.settings_.gpu = std::string(value);
            return true;
        }
        if (key == "executor") {
            if (value != "cpu" && value != "cuda") user_error(ErrorKind::Usage, stmt.loc, "usage: :set executor cpu|cuda");
            CompiledBackend* b = require_compiled();
            try {
                b->use_executor(std::string(value));
            } catch (Error& e) {
                e.loc = stmt.argument_loc;
                throw;
            }
            out.text("kernels run on " + b->description().substr(b->description().find(" on ") + 4));
            return true;
        }
        usage(c);
    }
};

namespace {
CompiledBackendFactory g_compiled_factory = nullptr;
}  // namespace

void set_compiled_backend_factory(CompiledBackendFactory factory) { g_compiled_factory = factory; }

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
    if (settings_.compiled && compiled_backend()) {
        impl_->compiled->set_check(settings_.check);
        impl_->compiled->set_optimisations(settings_.optimisations);
        ctx.backend = impl_->compiled.get();
    }
    return ctx;
}

Session::Session() : impl_(std::make_unique<Impl>()) {}
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
    for (const auto& span : spans) {
        if (cancel_.load()) {
            // Ctrl-C between statements (or during parsing/type checking,
            // which do not poll the flag): stop the rest of the input.
            if (!I.interrupt_reported) {
                I.interrupt_reported = true;
                out.error(Error(ErrorKind::Interrupted, source_loc(src, span.begin, span.end), "interrupted"));
            }
            return false;
        }
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
    const bool ok = run_statement_reporting_errors(s, src, span, out);
    std::set<std::string> seen;
    for (const Warning& w : I.warnings) {
        std::string text = format_diagnostic(Severity::Warning, w.loc, w.message, w.notes);
        if (seen.insert(text).second) out.warning(text);
    }
    I.warnings.clear();
    return ok;
}

void SessionCommands::run_let(Session& s, const Stmt& stmt, const std::string& text, const Measured& measured,
                              const EvalContext* context) {
    Session::Impl& I = *s.impl_;
    auto names = check_let(stmt, I.type_env());
    const std::set<std::string> used = I.pin(stmt.expr);
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
            auto it = std::find_if(values.begin(), values.end(), [&](const auto& p) { return p.first == name; });
            SHOAL_INTERNAL_ASSERT(it != values.end(), "pattern did not bind '" + name + "'");
            auto b = std::make_shared<Binding>();
            b->scheme = scheme;
            b->value = it->second;
            fresh[name] = b;
        }
    }
    // Commit: nothing above touched the session.
    I.commit(fresh, used, text);
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
    try {
        StmtPtr stmt = parse_statement(src, span);
        switch (stmt->kind) {
            case StmtKind::Let:
                run_let(s, *stmt, src->text.substr(span.begin, span.end - span.begin));
                return true;
            case StmtKind::Expr: {
                Type t = check_expression(stmt->expr, I.type_env());
                I.pin(stmt->expr);
                EvalContext ctx = s.eval_context();
                Value v = I.materialise(evaluate(stmt->expr, ctx), "printed", false);
                I.random_stream = ctx.random_stream;
                if (!v.is_unit()) out.value(v, t, format_value(v, settings.print_threshold));
                if (v.is_function()) note_partial_builtin(v, stmt_loc, I.warnings);
                return true;
            }
            case StmtKind::Command:
                return SessionCommands{s, I, out, *stmt, src}.run();
        }
        internal_error(__FILE__, __LINE__, "unknown statement kind");
    } catch (const Error& caught) {
        Error e = caught;
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
    } catch (const std::bad_alloc&) {
        out.error(Error(ErrorKind::Runtime, stmt_loc, "out of memory"));
    } catch (const std::length_error&) {
        out.error(Error(ErrorKind::Runtime, stmt_loc, "out of memory (an array is too large)"));
    } catch (const std::exception& e) {
        out.error(Error(ErrorKind::Internal, stmt_loc,
                        std::string("internal error: ") + e.what() + " -- this is a bug in Shoal, please report it"));
    } catch (...) {
        // Nothing may escape a statement: the session must survive any bug.
        out.error(Error(ErrorKind::Internal, stmt_loc,
                        "internal error: an unexpected exception -- this is a bug in Shoal, please report it"));
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
