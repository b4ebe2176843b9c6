// Internal to the session's files (session.cpp and the commands:
// session_commands.cpp, session_help.cpp, session_explain.cpp,
// session_emit.cpp): the session's state, the command runner and the
// helpers they share. A new command is a member of SessionCommands in a
// file of its own, using the shared prelude (argument_expression,
// checked_argument, require_compiled).
#pragma once
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
#include "front_end_cache.h"
#include "io.h"
#include "lexer.h"
#include "plot.h"

#ifndef SHOAL_VERSION
#define SHOAL_VERSION "unknown"
#endif

namespace shoal {

namespace sessionimpl {


inline constexpr int kMinPrintThreshold = 7;  // room for three leading, three trailing and "..."
inline constexpr int kMaxLoadDepth = 32;      // :load nesting, so a script loading itself stops

inline const char* const kKeywords[] = {"let", "in", "if", "then", "else", "loop", "for",
                                 "while", "do", "with", "true", "false"};

inline bool is_identifier(std::string_view s) {
    if (s.empty() || !is_ident_start(s[0])) return false;
    return std::all_of(s.begin(), s.end(), is_ident_char);
}

inline std::string_view trim(std::string_view s) {
    const char* ws = " \t\r\n";
    size_t b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    size_t e = s.find_last_not_of(ws);
    return s.substr(b, e - b + 1);
}

inline bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }


// Byte offset of a Loc inside its source.
inline size_t offset_of(const Loc& loc) {
    std::string_view line = loc.source->line(loc.line);
    return static_cast<size_t>(line.data() - loc.source->text.data()) + static_cast<size_t>(loc.col - 1);
}

// Lets `let x = load "x.npy"` be typed from the file's header.
inline Type type_of_load(const std::string& path, const Loc& loc) {
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
inline const std::pair<const char*, std::vector<const char*>> kHelpGroups[] = {
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
    {"text", {"show"}},
    {"I/O", {"load", "save", "loadCsv", "loadCsv1", "saveCsv"}},
};

// The commands are the ones documented in builtins.h (command_docs): one
// table serves dispatch, :help, completion and the docs.
using CommandInfo = CommandDoc;

inline const std::string& command_usage(const CommandInfo& c) { return c.usage; }
inline const std::string& command_summary(const CommandInfo& c) { return c.summary; }


// Points every free variable of `e` that names a session binding at that
// binding's key. The evaluator finds globals by name when it runs, so without
// this `let sq x = x * x; let quad x = sq (sq x); let sq = ...` would change
// what quad computes (and could even break its types).
inline void pin_free_variables(Expr& e, std::vector<std::string>& locals,
                        const std::map<std::string, std::string>& keys, std::set<std::string>& refs) {
    for_each_free_variable(e, locals, [&](Expr& var) {
        if (auto it = keys.find(var.text); it != keys.end()) {
            var.text = it->second;
            refs.insert(it->second);
        }
    });
}


}  // namespace sessionimpl

using namespace sessionimpl;

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
    const std::atomic<bool>* cancel = nullptr;  // the session's Ctrl-C flag (its type checks poll it)
    EmitWriter emit_writer;           // null: write the files
    FrontEndCache front_ends;         // statements checked before, by text
    std::shared_ptr<RankWorld> world;  // the ranks this session runs on (null: this process alone)
    // The top-level statement running on several ranks: the world it agrees
    // with (null when alone, or nested in a :load), whether it has agreed
    // yet, and its source.
    std::shared_ptr<RankWorld> statement_world;
    bool agreed = false;
    SourcePtr statement_source;

    // Rank 0 writes the files every rank computed (save, :emit); alone, this process does.
    bool writes_files() const { return !world || world->rank() == 0; }
    // The world while the session runs on several ranks; null alone.
    const std::shared_ptr<RankWorld>& ranks() const {
        static const std::shared_ptr<RankWorld> alone;
        return world && world->running() && world->size() > 1 ? world : alone;
    }

    // The statement's agreement (once per top-level statement on several
    // ranks; none otherwise): this rank's outcome in, the statement's out.
    std::optional<Error> agree(const std::optional<Error>& mine, std::atomic<bool>& cancel) {
        if (!statement_world || agreed) return std::nullopt;
        agreed = true;
        const auto start = std::chrono::steady_clock::now();
        std::optional<Error> verdict = statement_world->agree(mine, statement_source, cancel);
        agreement_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return verdict;
    }
    // A statement that succeeded on this rank, before it commits or prints:
    // throws the statement's error when it failed on another rank.
    void agree_success(std::atomic<bool>& cancel) {
        if (std::optional<Error> e = agree(std::nullopt, cancel)) throw *e;
    }
    double agreement_seconds = 0;  // the last agreement's wait (`:time` on several ranks)

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
        env.cancel = cancel;
        return env;
    }

    // Rewrites the statement's free variables to keys; returns the keys used.
    // `reads` (when given) gets each free name and what it meant.
    std::set<std::string> pin(const ExprPtr& e, std::vector<FrontEndCache::Read>* reads = nullptr) const {
        std::set<std::string> used;
        std::vector<std::string> locals;
        if (!e) return used;
        if (!reads) {
            pin_free_variables(*e, locals, names, used);
            return used;
        }
        for_each_free_variable(*e, locals, [&](Expr& var) {
            auto r = std::find_if(reads->begin(), reads->end(), [&](const auto& x) { return x.name == var.text; });
            const auto it = names.find(var.text);
            if (r == reads->end()) {
                const BindingPtr b = it == names.end() ? nullptr : globals.at(it->second);
                reads->push_back({var.text, b ? b->scheme : nullptr, b, {}});
                r = reads->end() - 1;
            }
            if (it == names.end()) return;  // a builtin
            r->vars.push_back(&var);
            var.text = it->second;
            used.insert(it->second);
        });
        return used;
    }

    // The let or expression statement src[begin, end) after the front end
    // (lang/front_end_cache.h): checked before from the same text with names
    // of the same types, or parsed, checked and pinned now. A command is only
    // parsed.
    std::shared_ptr<const CheckedStatement> front_end(const SourcePtr& src, size_t begin, size_t end);

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
        front_ends = FrontEndCache{};
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

    [[noreturn]] void usage(const CommandInfo& c) const;

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
    static void run_let(Session& s, const CheckedStatement& let, const std::string& text,
                        const Measured& measured = nullptr, const EvalContext* context = nullptr);

    // Returns false when the command ran but something inside failed (:load).
    bool run();

    // Exact names, or an unambiguous prefix (`:t`, `:q`), as in GHCi.
    const CommandInfo* lookup(const std::string& name_typed) const;

    void no_argument(const CommandInfo& c, std::string_view arg) const;

    bool help(std::string_view topic);

    // `text` wrapped at word boundaries to `columns`, continuation lines
    // indented by `indent` spaces.
    static std::string wrapped(const std::string& text, size_t indent, size_t columns);

    std::string overview() const;

    bool type(const CommandInfo& c, std::string_view arg);

    // `:ranks`, `:set ranks N`, `:set shard N|off` and `:set timeout S` (lang/session_ranks.cpp).
    bool ranks();
    bool set_ranks(std::string_view key, std::string_view value);

    // The `--word` a command's argument starts with (the parser keeps such
    // options out of comments: lang/parser.cpp command_options_end).
    static std::optional<std::string_view> leading_option(std::string_view arg);

    // Where the option at the start of `arg` (a view into stmt.argument) is.
    Loc option_loc(std::string_view arg) const;
    // Where `part`, a non-empty view into stmt.argument, is.
    Loc part_loc(std::string_view part) const;

    // The command's argument parsed as an expression (positions in the
    // statement's source), after its first `skip` bytes (an option).
    ExprPtr argument_expression(size_t skip = 0) const;
    // The prelude of the commands that evaluate an expression: it type
    // checked against the bindings and its names pinned for the evaluation
    // (a binding it reads stays as it is while it runs).
    Type checked(const ExprPtr& e) const;
    // argument_expression, checked.
    std::pair<ExprPtr, Type> checked_argument(size_t skip = 0) const;

    // :ir e / :cuda e: evaluates e with the compiled backend (whatever the
    // current backend), forcing its value, and prints the plans built, with
    // the session's bindings as the names of the buffers they fill. A
    // function (`:cuda saxpy`) is applied to placeholder arguments: arrays of
    // one element whose buffers and extents are named after its parameters,
    // so the plan reads as formulas of them. `:cuda --full e` shows the
    // complete CUDA units (the helper functions are folded otherwise).
    bool explain(const CommandInfo& c, std::string_view arg, bool cuda);

    // The context of a command that shows generated code (`:cuda`,
    // `:emit`): the compiled backend whatever the current one, the session's
    // check setting, and `names` (filled here) naming the session's arrays.
    EvalContext naming_context(CompiledBackend* backend, std::map<const void*, std::string>& names) const;

    // `(f : T)` for the first example instance of f's scheme that checks
    // (what a hint may suggest), or "".
    std::string working_annotation(const std::string& name, const Scheme& scheme) const;

    // The user function an explained expression is (`saxpy`) or applies
    // (`rmse a b`): it names the kernels. Empty for anything else.
    std::string explained_function(const Expr& e) const;

    // Names the arrays of a binding's value for the generated code: `x`, or
    // `p_0`, `p_1` for the components of a tuple `p`.
    static void name_arrays(const Value& v, const std::string& name, std::map<const void*, std::string>& names);

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

    // The argument as the statement it would be on its own: a top-level
    // `let` (`:time let x = random 1000`) or an expression (`let ... in ...`
    // included), after the front end.
    std::shared_ptr<const CheckedStatement> argument_statement() const;

    // :time e evaluates e on the current backend, shows its value and how long
    // it took; :profile e evaluates it with the compiled backend and explains
    // what each kernel did. Both take a top-level `let` too: it binds as
    // usual, and the evaluation of its value is what they measure.
    bool measure(const CommandInfo& c, std::string_view arg, bool per_kernel);

    // :compile e: runs e on the array compiler, then compiles the kernels
    // of every plan it ran for the GPU (`:set arch`, else the device's).
    bool compile(const CommandInfo& c, std::string_view arg);

    // :emit f (g : t) h as "cname" ... to "dir/name": traces each function
    // with the array compiler and writes dir/name.h, dir/name.cu and
    // dir/shoal_runtime.h (docs/emit.md). Every file is written to a
    // temporary first and renamed once all are: a failure writes nothing.
    bool emit(const CommandInfo& c, std::string_view arg);

    // A function the wrapper compiles may read only the arrays it is passed:
    // one that uses a session array is refused, naming it.
    void refuse_captured_arrays(const EmitFunction& f) const;

    // The names of a function's parameters (x0, x1, ... where a pattern has none).
    static std::vector<std::string> parameter_names(const Value& f, Type t);

    // Writes every file to a temporary in `dir`, then renames them all; a
    // file that exists with the same text is left alone. Says what it wrote.
    static std::string write_all(const std::filesystem::path& dir, const std::vector<EmittedFile>& files, const Loc& loc);

    // :plot e / :hist e: evaluates e on the current backend and draws it.
    bool plot(const CommandInfo& c, std::string_view arg, PlotKind kind);

    CompiledBackend* require_compiled() const;

    bool load(const CommandInfo& c, std::string_view arg);

    bool env();

    static bool parse_u64(std::string_view s, uint64_t& v);

    bool seed(const CommandInfo& c, std::string_view arg);

    static std::string on_off(bool on) { return on ? "on" : "off"; }

    bool set(const CommandInfo& c, std::string_view arg);
    // `:set key value` with a bad value: the error points at the value (at
    // the key when there is none) and says what the key takes.
    [[noreturn]] void bad_setting(std::string_view key, std::string_view value, const std::string& expected,
                                  const std::string& usage) const;
};

}  // namespace shoal
