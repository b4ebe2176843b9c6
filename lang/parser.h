// Parsing: the layout rule that splits a source into statements, the
// statement/expression parser, and the completeness check shared by the REPL
// and the Jupyter kernel (decided by the parser's own end-of-input error, as
// Lua's REPL does).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ast.h"
#include "diagnostics.h"

namespace shoal {

// Byte range [begin, end) of one statement inside a Source's text.
struct StatementSpan {
    size_t begin = 0;
    size_t end = 0;
};

// Layout rule: a statement continues on following lines that start with
// whitespace, on lines that start with an operator no expression can start
// with (continues_statement), and while brackets ( [ are open. Blank and
// comment-only lines belong to no statement. Splits text[begin, end).
std::vector<StatementSpan> split_statements(const Source& src, size_t begin = 0, size_t end = std::string::npos);

// A statement the layout rule held open because a bracket was never closed.
// bracket: the innermost such bracket opened before `resume`; resume: the
// first later line that starts a statement (at column 1, not an operator or a
// closing bracket, or any line starting with `let`), or span.end. A script
// whose statement failed to parse reports the bracket and goes on at resume,
// as Python and GHC do; a statement that parses is never cut (an open
// bracket continued at column 1 is legal). nullopt: every bracket closes.
struct UnclosedBracket {
    size_t bracket;
    size_t resume;
};
std::optional<UnclosedBracket> find_unclosed_bracket(const Source& src, StatementSpan span);
// Whether a line starts with a binary operator that cannot start an
// expression (`|>`, `&&`, `*`, `++`, `==`, ...; not `-`, which negates): it
// continues the statement before it, in scripts and in pasted REPL input.
bool continues_statement(std::string_view line);

// Parses one statement. Throws Error with kind Incomplete when the text ends
// inside the statement (open bracket, `let x =`, `if c then`), Syntax for
// other malformed input. Locations are in terms of the whole Source.
StmtPtr parse_statement(const SourcePtr& src, StatementSpan span);

// Parses exactly one expression from [begin, end) (the argument of `:type`).
ExprPtr parse_expression(const SourcePtr& src, size_t begin, size_t end);

enum class InputStatus { Complete, Incomplete, Invalid };

// Is `text` ready to run? Incomplete when the last statement ends early (the
// front end asks for another line), Invalid for any other syntax error.
// single_statement: treat all of text as one statement (the terminal REPL's
// continuation lines), not split by the layout rule.
InputStatus check_input(std::string_view text, bool single_statement);

}  // namespace shoal
