#include "diagnostics.h"

#include <sstream>

namespace shoal {

const char* error_kind_name(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::Syntax: return "SyntaxError";
        case ErrorKind::Incomplete: return "SyntaxError";
        case ErrorKind::Type: return "TypeError";
        case ErrorKind::Runtime: return "RuntimeError";
        case ErrorKind::Io: return "IOError";
        case ErrorKind::Interrupted: return "Interrupted";
        case ErrorKind::Usage: return "UsageError";
        case ErrorKind::Internal: return "InternalError";
    }
    return "Error";
}

static std::string what_text(const Loc& loc, const std::string& message) {
    if (!loc.valid()) return message;
    return loc.position() + ": " + message;
}

Error::Error(ErrorKind k, Loc l, std::string m, std::vector<std::string> n)
    : std::runtime_error(what_text(l, m)), kind(k), loc(std::move(l)), message(std::move(m)), notes(std::move(n)) {}

void user_error(ErrorKind kind, const Loc& loc, std::string message, std::vector<std::string> notes) {
    throw Error(kind, loc, std::move(message), std::move(notes));
}

void internal_error(const char* file, int line, const std::string& message) {
    throw Error(ErrorKind::Internal, Loc{}, "internal error (" + std::string(file) + ":" + std::to_string(line) +
                                                "): " + message + " -- this is a bug in Shoal, please report it");
}

std::string format_diagnostic(Severity severity, const Loc& loc, const std::string& message,
                              const std::vector<std::string>& notes) {
    const char* label = severity == Severity::Error ? "error" : severity == Severity::Warning ? "warning" : "note";
    std::ostringstream out;
    if (loc.valid())
        out << loc.source->name << ':' << loc.line << ':' << loc.col << ": ";
    out << label << ": " << message;
    if (loc.valid()) {
        std::string_view text = loc.source->line(loc.line);
        out << "\n  " << text << "\n  ";
        // Keep tabs so the caret lines up under tab-indented code.
        for (int i = 1; i < loc.col && i - 1 < static_cast<int>(text.size()); ++i)
            out << (text[i - 1] == '\t' ? '\t' : ' ');
        int room = static_cast<int>(text.size()) - (loc.col - 1);
        int len = loc.length < 1 ? 1 : loc.length;
        if (room >= 1 && len > room) len = room;
        out << std::string(static_cast<size_t>(len), '^');
    }
    for (const auto& n : notes) out << "\nnote: " << n;
    return out.str();
}

std::string format_error(const Error& e) { return format_diagnostic(Severity::Error, e.loc, e.message, e.notes); }

std::vector<std::string> error_traceback(const Error& e) {
    std::vector<std::string> lines;
    std::istringstream in(format_error(e));
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
}

}  // namespace shoal
