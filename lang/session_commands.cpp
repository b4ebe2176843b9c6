// The command runner (:type, :load, :env, :seed, :set, ...) and the prelude
// the commands share: parsing, checking and pinning their argument.
#include "session_internal.h"

namespace shoal {

void SessionCommands::usage(const CommandInfo& c) const {
    user_error(ErrorKind::Usage, stmt.loc, "usage: " + command_usage(c));
}

// Returns false when the command ran but something inside failed (:load).
bool SessionCommands::run() {
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
        const std::string mine = require_compiled()->memory_report(bindings);
        const auto& world = I.ranks();
        if (!world) {
            out.text(mine);
            return true;
        }
        // On several ranks: each rank's memory (a sharded array's block is on its rank).
        const std::vector<std::string> texts = world->gather_texts(mine);
        std::string all;
        for (size_t r = 0; r < texts.size(); ++r)
            all += (r ? "\n" : "") + std::string("rank ") + std::to_string(r) + ":\n" + texts[r];
        out.text(all);
        return true;
    }
    if (name == "cache") {
        if (arg == "clear") {
            out.text(require_compiled()->clear_cache());
            return true;
        }
        if (!arg.empty()) user_error(ErrorKind::Usage, stmt.argument_loc, "usage: :cache [clear]");
        out.text("checked statements: " + std::to_string(I.front_ends.size()) + " (at most " +
                 std::to_string(I.front_ends.capacity()) + ")\n" + require_compiled()->cache_report());
        return true;
    }
    if (name == "ranks") {
        no_argument(*cmd, arg);
        return ranks();
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
const CommandInfo* SessionCommands::lookup(const std::string& name_typed) const {
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

void SessionCommands::no_argument(const CommandInfo& c, std::string_view arg) const {
    if (!arg.empty()) usage(c);
}

bool SessionCommands::type(const CommandInfo& c, std::string_view arg) {
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
std::optional<std::string_view> SessionCommands::leading_option(std::string_view arg) {
    if (arg.size() < 3 || !arg.starts_with("--") || !std::isalpha(static_cast<unsigned char>(arg[2])))
        return std::nullopt;
    return arg.substr(0, std::min(arg.size(), arg.find_first_of(" \t")));
}

// Where the option at the start of `arg` (a view into stmt.argument) is.
Loc SessionCommands::option_loc(std::string_view arg) const { return part_loc(*leading_option(arg)); }

Loc SessionCommands::part_loc(std::string_view part) const {
    Loc loc = stmt.argument_loc;
    loc.col += static_cast<int>(part.data() - trim(stmt.argument).data());
    loc.length = static_cast<int>(std::max<size_t>(part.size(), 1));
    return loc;
}

// The command's argument parsed as an expression (positions in the
// statement's source), after its first `skip` bytes (an option).
ExprPtr SessionCommands::argument_expression(size_t skip) const {
    const size_t start = offset_of(stmt.argument_loc);
    const size_t end = std::min(start + stmt.argument.size(), src->text.size());
    const size_t begin = std::min(start + skip, end);
    return parse_expression(src, begin, end);
}

// e type checked against the session's bindings and pinned to them.
Type SessionCommands::checked(const ExprPtr& e) const {
    Type t = check_expression(e, I.type_env());
    I.pin(e);
    return t;
}

std::pair<ExprPtr, Type> SessionCommands::checked_argument(size_t skip) const {
    ExprPtr e = argument_expression(skip);
    Type t = checked(e);
    return {e, t};
}

std::shared_ptr<const CheckedStatement> SessionCommands::argument_statement() const {
    const size_t start = offset_of(stmt.argument_loc);
    return I.front_end(src, start, std::min(start + stmt.argument.size(), src->text.size()));
}

CompiledBackend* SessionCommands::require_compiled() const {
    CompiledBackend* b = s.compiled_backend();
    if (!b) user_error(ErrorKind::Usage, stmt.loc, "the array compiler is not available in this program");
    return b;
}

bool SessionCommands::load(const CommandInfo& c, std::string_view arg) {
    // The file name may be quoted, as a string literal is.
    if (!arg.empty() && arg.front() == '"') {
        const size_t close = arg.find('"', 1);
        if (close == std::string_view::npos)
            user_error(ErrorKind::Usage, part_loc(arg),
                       "unterminated string: expected '\"' after the file name, found end of line",
                       {"usage: " + command_usage(c)});
        if (close + 1 != arg.size())
            user_error(ErrorKind::Usage, part_loc(trim(arg.substr(close + 1))),
                       "expected the end of the line after the file name, found '" +
                           std::string(trim(arg.substr(close + 1))) + "'",
                       {"usage: " + command_usage(c)});
        arg = arg.substr(1, close - 1);
    }
    if (arg.empty()) usage(c);
    if (I.depth >= kMaxLoadDepth)
        user_error(ErrorKind::Usage, stmt.loc,
                   ":load nested more than " + std::to_string(kMaxLoadDepth) + " deep (does a script load itself?)");
    return s.load_file(std::string(arg), stmt.argument_loc.valid() ? stmt.argument_loc : stmt.loc, out);
}

bool SessionCommands::env() {
    std::string text;
    for (const auto& [name, key] : I.names)
        text += (text.empty() ? "" : "\n") + I.type_line(name, *I.globals.at(key));
    out.text(text.empty() ? "no bindings" : text);
    return true;
}

bool SessionCommands::parse_u64(std::string_view s, uint64_t& v) {
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool SessionCommands::seed(const CommandInfo& c, std::string_view arg) {
    if (arg.empty()) {
        out.text("seed " + std::to_string(s.settings_.seed));
        return true;
    }
    uint64_t v = 0;
    if (!parse_u64(arg, v))
        user_error(ErrorKind::Usage, part_loc(arg),
                   "expected a whole number from 0 to " + std::to_string(UINT64_MAX) + ", found '" + std::string(arg) +
                       "'",
                   {"usage: " + command_usage(c)});
    s.settings_.seed = v;
    I.random_stream = 0;
    return true;
}

bool SessionCommands::set(const CommandInfo& c, std::string_view arg) {
    if (arg.empty()) {
        out.text("print " + std::to_string(s.settings_.print_threshold) + "\ncheck " + on_off(s.settings_.check) + "\nseed " + std::to_string(s.settings_.seed) +
                 "\nbackend " + (s.settings_.compiled && s.compiled_backend() ? "compiled" : "reference") +
                 (s.compiled_backend() ? "\nexecutor " + s.compiled_backend()->executor_name() : "") +
                 "\narch " + (s.settings_.arch.empty() ? "the GPU's (sm_90 without one)" : s.settings_.arch) +
                 "\nfusion " + on_off(s.settings_.optimisations.fusion) + "\nsharedmem " +
                 on_off(s.settings_.optimisations.shared_memory) + "\nhoist " +
                 on_off(s.settings_.optimisations.hoist) + "\nblas " + on_off(s.settings_.optimisations.blas) +
                 "\ngpu " + s.settings_.gpu + "\nmemlimit " +
                 (memory_limit() > 0 ? human_bytes(memory_limit()) : "off (the memory the machine has free)") +
                 "\nshard " + (s.settings_.shard > 0 ? std::to_string(s.settings_.shard) + " elements" : std::string("off")));
        return true;
    }
    size_t sp = arg.find_first_of(" \t");
    std::string_view key = arg.substr(0, sp);
    std::string_view value = sp == std::string_view::npos ? std::string_view{} : trim(arg.substr(sp));
    if (key == "print") {
        constexpr uint64_t kMaxPrintThreshold = 1000000;
        uint64_t n = 0;
        if (!parse_u64(value, n) || n < kMinPrintThreshold || n > kMaxPrintThreshold)
            bad_setting(key, value,
                        "a whole number from " + std::to_string(kMinPrintThreshold) + " to " +
                            std::to_string(kMaxPrintThreshold),
                        ":set print N  (N is the longest axis printed in full)");
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
        bad_setting(key, value, "on or off", ":set " + std::string(name) + " on|off");
    }
    if (key == "backend") {
        if (value != "reference" && value != "compiled")
            bad_setting(key, value, "reference or compiled", ":set backend reference|compiled");
        if (value == "compiled") require_compiled();
        s.settings_.compiled = value == "compiled";
        return true;
    }
    if (key == "arch") {
        // A compute capability: major (5 to 12) and minor digit, as nvcc spells it (sm_50 .. sm_120).
        const std::string_view digits = value.substr(std::min<size_t>(3, value.size()));
        const bool ok = value.starts_with("sm_") && (digits.size() == 2 || digits.size() == 3) &&
                        std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) &&
                        digits[0] != '0' && (digits.size() == 2 ? digits[0] >= '5' : digits.substr(0, 2) <= "12");
        if (!ok)
            bad_setting(key, value, "a compute capability from sm_50 to sm_120",
                        ":set arch sm_XY  (e.g. sm_80, sm_90, sm_120)");
        s.settings_.arch = std::string(value);
        return true;
    }
    if (key == "gpu") {
        if (!find_gpu_model(std::string(value))) {
            std::string names, usage_names;
            for (const GpuModel& g : gpu_models()) {
                names += (names.empty() ? "" : ", ") + std::string(g.name);
                usage_names += (usage_names.empty() ? "" : "|") + std::string(g.name);
            }
            bad_setting(key, value, "one of " + names,
                        ":set gpu " + usage_names + "  (the GPU :profile estimates times for)");
        }
        s.settings_.gpu = std::string(value);
        return true;
    }
    if (key == "memlimit") {
        const int64_t bytes = value == "off" ? 0 : parse_byte_size(std::string(value));
        if (bytes < 0 || (bytes == 0 && value != "off"))
            bad_setting(key, value, "a size (in bytes or with a unit: 512MiB, 8GiB) or off",
                        ":set memlimit N|off  (off: the machine's free memory)");
        set_memory_limit(bytes);
        return true;
    }
    if (key == "ranks" || key == "timeout" || key == "shard") return set_ranks(key, value);
    if (key == "executor") {
        if (value != "cpu" && value != "cuda") bad_setting(key, value, "cpu or cuda", ":set executor cpu|cuda");
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
    user_error(ErrorKind::Usage, part_loc(key),
               "expected a setting (print, check, backend, executor, arch, fusion, sharedmem, hoist, blas, gpu, "
               "memlimit, ranks, shard or timeout), found '" + std::string(key) + "'",
               {"usage: " + command_usage(c)});
}

void SessionCommands::bad_setting(std::string_view key, std::string_view value, const std::string& expected,
                                  const std::string& usage) const {
    user_error(ErrorKind::Usage, part_loc(value.empty() ? key : value),
               "expected " + expected + " after ':set " + std::string(key) + "', found " +
                   (value.empty() ? std::string("nothing") : "'" + std::string(value) + "'"),
               {"usage: " + usage});
}

}  // namespace shoal
