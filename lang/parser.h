// Parsing: the layout rule that splits a source into statements, the
// statement/expression parser, and the completeness check shared by the REPL
// and the Jupyter kernel (decided by the parser's own end-of-input error, as
// Lua's REPL does).
#pragma once
#include <cstddef>
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
// whitespace, and while brackets ( [ are open. Blank and comment-only lines
// belong to no statement.
std::vector<StatementSpan> split_statements(const Source& src);

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
