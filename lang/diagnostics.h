// The one diagnostics reporter shared by the REPL, the Jupyter kernel and the
// tests. User-facing problems are thrown as shoal::Error (user_error); broken
// invariants inside Shoal use internal_error, which says so plainly.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "source.h"

namespace shoal {

enum class ErrorKind {
    Syntax,       // malformed input
    Incomplete,   // input ended inside a statement: the REPL asks for more lines
    Type,         // rejected by the type checker
    Runtime,      // shape mismatch, index out of bounds, ...
    Io,           // missing file, malformed .npy/.csv
    Interrupted,  // Ctrl-C / kernel interrupt
    Usage,        // bad :command arguments
    Internal,     // a bug in Shoal
};

// "SyntaxError", "TypeError", ... (Jupyter's ename).
const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, Loc loc, std::string message, std::vector<std::string> notes = {});

    ErrorKind kind;
    Loc loc;
    std::string message;             // one line, no location, no trailing period
    std::vector<std::string> notes;  // extra lines ("note: ..."), e.g. a suggested fix
};

// Throws a user-facing error. `loc` may be invalid (then no position is shown).
[[noreturn]] void user_error(ErrorKind kind, const Loc& loc, std::string message,
                             std::vector<std::string> notes = {});
// Throws ErrorKind::Internal: something Shoal itself got wrong.
[[noreturn]] void internal_error(const char* file, int line, const std::string& message);
#define SHOAL_INTERNAL_ASSERT(cond, msg) \
    do { if (!(cond)) ::shoal::internal_error(__FILE__, __LINE__, (msg)); } while (0)

enum class Severity { Error, Warning, Note };

// Formats a diagnostic the way every front end shows it:
//   file:line:col: error: message
//     let y = x + 1.5
//             ^^^^^^^
//   note: ...
// Without a valid location only "error: message" (and notes) is printed.
std::string format_diagnostic(Severity severity, const Loc& loc, const std::string& message,
                              const std::vector<std::string>& notes = {});
std::string format_error(const Error& e);

// The lines of format_error, split (Jupyter's traceback list).
std::vector<std::string> error_traceback(const Error& e);

}  // namespace shoal
