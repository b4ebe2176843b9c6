// :emit: the traced functions written as CUDA kernels with C++ wrappers.
#include "session_internal.h"

namespace shoal {

// :emit f (g : t) h as "cname" ... to "dir/name": traces each function
// with the array compiler and writes dir/name.h, dir/name.cu and
// dir/shoal_runtime.h (docs/emit.md). Every file is written to a
// temporary first and renamed once all are: a failure writes nothing.
bool SessionCommands::emit(const CommandInfo& c, std::string_view arg) {
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
        // Strings stay on the host: an exported kernel takes numbers and arrays.
        for (Type t = f.type; is_func(t); t = func_result(t))
            if (prune(func_param(t))->kind == TypeKind::String || (!is_func(func_result(t)) &&
                                                                   prune(func_result(t))->kind == TypeKind::String))
                user_error(ErrorKind::Usage, f.loc,
                           ":emit cannot export '" + f.name + "' (" + type_to_string(f.type) +
                               "): it takes or gives a string, and exported kernels take numbers and arrays",
                           {"read and write files in the C++ program; emit the function of the arrays"});
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
    if (!I.writes_files()) return true;  // rank 0 writes them
    const std::string written =
        I.emit_writer ? I.emit_writer(dir.string(), files, path_loc) : write_all(dir, files, path_loc);
    out.text(written);
    return true;
}

// A function the wrapper compiles may read only the arrays it is passed:
// one that uses a session array is refused, naming it.
void SessionCommands::refuse_captured_arrays(const EmitFunction& f) const {
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
std::vector<std::string> SessionCommands::parameter_names(const Value& f, Type t) {
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
std::string SessionCommands::write_all(const std::filesystem::path& dir, const std::vector<EmittedFile>& files, const Loc& loc) {
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

}  // namespace shoal
