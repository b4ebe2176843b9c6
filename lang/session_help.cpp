// :help: the overview laid out for the terminal, and help on one topic.
#include "session_internal.h"

namespace shoal {

bool SessionCommands::help(std::string_view topic) {
    if (topic.empty()) {
        out.text(overview());
        return true;
    }
    std::string t(topic);
    if (t.size() > 1 && t.front() == '"' && t.back() == '"') t = t.substr(1, t.size() - 2);  // :help "map"
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
std::string SessionCommands::wrapped(const std::string& text, size_t indent, size_t columns) {
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

std::string SessionCommands::overview() const {
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

}  // namespace shoal
