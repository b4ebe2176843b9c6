// The lexer: turns a byte range of a Source into tokens. Each token remembers
// whether whitespace (or a comment or newline) precedes it, because layout is
// significant in one place: `a[i]` indexes while `f a [1, 2]` passes an array.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "source.h"

namespace shoal {

enum class TokenKind : uint8_t {
    Ident,    // x, sum, f'
    Keyword,  // let in if then else loop for while do with true false
    Int,      // 42
    Float,    // 3.14, 1e-3, 1.
    String,   // "a.npy"
    Symbol,   // operators and punctuation: + |> ( [ , : = -> \ _ ...
    End,      // end of the range
};

struct Token {
    TokenKind kind = TokenKind::End;
    // Ident/Keyword/Symbol: the spelling; Int/Float: the literal as written;
    // String: the decoded contents.
    std::string text;
    size_t offset = 0;  // byte offset in the Source's text
    size_t length = 0;  // bytes of source text the token covers
    bool space_before = false;  // whitespace, a comment or the range start precedes it
    int64_t int_value = 0;      // Int
    double float_value = 0;     // Float

    bool is(TokenKind k, std::string_view t) const { return kind == k && text == t; }
    bool is_symbol(std::string_view t) const { return is(TokenKind::Symbol, t); }
    bool is_keyword(std::string_view t) const { return is(TokenKind::Keyword, t); }
    size_t end() const { return offset + length; }
};

bool is_keyword(std::string_view word);

// Identifiers are [a-zA-Z_][a-zA-Z0-9_']* (ASCII, whatever the locale).
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c) || c == '\''; }

// Tokenizes src->text[begin, end). The result always ends with one End token,
// placed just after the last real token (where "more input" would go).
// Throws Error(Syntax) for a bad character, an unterminated string, an unknown
// escape or a malformed number, located at the offending text.
std::vector<Token> tokenize(const SourcePtr& src, size_t begin, size_t end);

// A Loc for the bytes [begin, end) of src: the line/column of `begin`, the
// length clamped to the rest of that line (at least 1).
Loc source_loc(const SourcePtr& src, size_t begin, size_t end);

}  // namespace shoal
