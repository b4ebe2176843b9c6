#include "lexer.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "diagnostics.h"

namespace shoal {

namespace {

constexpr std::array<std::string_view, 12> kKeywords = {
    "let", "in", "if", "then", "else", "loop", "for", "while", "do", "with", "true", "false"};

// Longest first, so that `|>` wins over `|` and `**` over `*`.
constexpr std::array<std::string_view, 12> kTwoCharSymbols = {
    "|>", "||", "&&", "==", "!=", "<=", ">=", "++", "<<", ">>", "**", "->"};
constexpr std::string_view kOneCharSymbols = "<>|^&+-*/%@!~()[],:=\\.";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

// Bytes in the UTF-8 sequence that starts with `c` (1 for ASCII or garbage).
size_t utf8_length(unsigned char c) {
    if (c >= 0xF0 && c < 0xF8) return 4;
    if (c >= 0xE0) return c < 0xF0 ? 3 : 1;
    if (c >= 0xC0) return 2;
    return 1;
}

class Lexer {
public:
    Lexer(const SourcePtr& src, size_t begin, size_t end)
        : src_(src), text_(src->text), pos_(begin), end_(end), last_end_(begin) {}

    std::vector<Token> run() {
        std::vector<Token> tokens;
        bool space = true;  // the range start counts as a separator
        while (true) {
            if (skip_space_and_comments()) space = true;
            if (pos_ >= end_) break;
            Token t = next_token();
            t.space_before = space;
            space = false;
            last_end_ = t.end();
            tokens.push_back(std::move(t));
        }
        Token end_token;
        end_token.kind = TokenKind::End;
        end_token.offset = last_end_;
        end_token.space_before = true;
        tokens.push_back(std::move(end_token));
        return tokens;
    }

private:
    char peek(size_t ahead = 0) const { return pos_ + ahead < end_ ? text_[pos_ + ahead] : '\0'; }

    [[noreturn]] void fail(size_t begin, size_t end, std::string message, std::vector<std::string> notes = {}) const {
        user_error(ErrorKind::Syntax, source_loc(src_, begin, end), std::move(message), std::move(notes));
    }

    // Returns true if it skipped anything.
    bool skip_space_and_comments() {
        size_t start = pos_;
        while (pos_ < end_) {
            if (is_space(peek())) {
                ++pos_;
            } else if (peek() == '-' && peek(1) == '-') {
                while (pos_ < end_ && peek() != '\n') ++pos_;
            } else {
                break;
            }
        }
        return pos_ != start;
    }

    Token make(TokenKind kind, size_t begin, std::string text) const {
        Token t;
        t.kind = kind;
        t.offset = begin;
        t.length = pos_ - begin;
        t.text = std::move(text);
        return t;
    }

    Token next_token() {
        char c = peek();
        if (is_ident_start(c)) return word();
        if (is_digit(c)) return number();
        if (c == '"') return string_literal();
        return symbol();
    }

    Token word() {
        size_t begin = pos_;
        while (pos_ < end_ && is_ident_char(peek())) ++pos_;
        std::string w = text_.substr(begin, pos_ - begin);
        if (w == "_") return make(TokenKind::Symbol, begin, w);
        return make(is_keyword(w) ? TokenKind::Keyword : TokenKind::Ident, begin, w);
    }

    void skip_digits() {
        while (pos_ < end_ && is_digit(peek())) ++pos_;
    }

    // digits [. digits*] [(e|E) [+|-] digits]
    Token number() {
        size_t begin = pos_;
        skip_digits();
        bool is_float = false;
        if (peek() == '.') {
            is_float = true;
            ++pos_;
            skip_digits();
        }
        if (peek() == 'e' || peek() == 'E') {
            is_float = true;
            ++pos_;
            if (peek() == '+' || peek() == '-') ++pos_;
            if (!is_digit(peek())) fail_malformed_number(begin);
            skip_digits();
        }
        // `2x`, `1.5.2`, `3e4e`: a number must not run into a word or another dot.
        if (is_ident_char(peek()) || peek() == '.') fail_malformed_number(begin);
        std::string spelled = text_.substr(begin, pos_ - begin);
        Token t = make(is_float ? TokenKind::Float : TokenKind::Int, begin, spelled);
        if (is_float) {
            t.float_value = std::strtod(spelled.c_str(), nullptr);
            // strtod gives inf for 1e999; a literal must not silently become infinity.
            if (std::isinf(t.float_value))
                fail(begin, pos_, "decimal literal " + spelled + " is too large: the largest double is about 1.8e308");
        } else {
            auto [ptr, ec] = std::from_chars(spelled.data(), spelled.data() + spelled.size(), t.int_value);
            if (ec != std::errc()) fail(begin, pos_, "integer literal " + spelled + " is too large");
        }
        return t;
    }

    [[noreturn]] void fail_malformed_number(size_t begin) {
        while (pos_ < end_ && (is_ident_char(peek()) || peek() == '.' ||
                               ((peek() == '+' || peek() == '-') && (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E'))))
            ++pos_;
        fail(begin, pos_, "malformed number '" + text_.substr(begin, pos_ - begin) + "'");
    }

    Token string_literal() {
        size_t begin = pos_++;
        std::string contents;
        while (true) {
            if (pos_ >= end_ || peek() == '\n') fail(begin, pos_, "unterminated string (a string ends on the line it starts)");
            char c = text_[pos_++];
            if (c == '"') break;
            if (c != '\\') {
                contents += c;
                continue;
            }
            char e = peek();
            switch (e) {
                case '"': contents += '"'; break;
                case '\\': contents += '\\'; break;
                case 'n': contents += '\n'; break;
                case 't': contents += '\t'; break;
                default:
                    if (pos_ >= end_ || e == '\n') fail(begin, pos_, "unterminated string (a string ends on the line it starts)");
                    fail(pos_ - 1, pos_ + 1, std::string("unknown escape '\\") + e + "' in string (use \\\" \\\\ \\n or \\t)");
            }
            ++pos_;
        }
        return make(TokenKind::String, begin, contents);
    }

    Token symbol() {
        size_t begin = pos_;
        reject_foreign_spelling();
        for (std::string_view two : kTwoCharSymbols) {
            if (peek() == two[0] && peek(1) == two[1]) {
                pos_ += 2;
                return make(TokenKind::Symbol, begin, std::string(two));
            }
        }
        if (kOneCharSymbols.find(peek()) != std::string_view::npos) {
            ++pos_;
            return make(TokenKind::Symbol, begin, std::string(1, text_[begin]));
        }
        size_t len = utf8_length(static_cast<unsigned char>(peek()));
        if (begin + len > end_) len = end_ - begin;
        const unsigned char c = static_cast<unsigned char>(text_[begin]);
        if (len == 1 && (c < 0x20 || c == 0x7f)) {  // a control character: shown as its code, not raw
            char code[8];
            std::snprintf(code, sizeof code, "%02X", c);
            fail(begin, begin + 1, std::string("unexpected control character U+00") + code);
        }
        fail(begin, begin + len, "unexpected character '" + text_.substr(begin, len) + "'");
    }

    // Spellings from other languages that would otherwise read as two
    // tokens (`<>` as `<` `>`) or an unexpected character: say what Shoal writes.
    void reject_foreign_spelling() {
        static constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kOperators = {{
            {"<>", "not equal is written '!='"},
            {"=<", "less than or equal is written '<='"},
            {"=>", "greater than or equal is written '>='; a lambda is \\x -> e"},
        }};
        for (const auto& [op, instead] : kOperators)
            if (peek() == op[0] && peek(1) == op[1])
                fail(pos_, pos_ + 2, "unknown operator '" + std::string(op) + "'", {std::string(instead)});
        // .5: C allows it; Shoal's decimal literals start with a digit.
        if (peek() == '.' && is_digit(peek(1)) && (pos_ == 0 || !is_ident_char(text_[pos_ - 1]))) {
            size_t end = pos_ + 1;
            while (end < end_ && is_digit(text_[end])) ++end;
            const std::string spelled = text_.substr(pos_, end - pos_);
            fail(pos_, end, "expected a digit before '.' in a decimal literal, found '" + spelled + "'",
                 {"write 0" + spelled});
        }
        if (peek() == '\'') {
            const size_t close = text_.find_first_of("'\n", pos_ + 1);
            const bool closed = close < end_ && text_[close] == '\'';
            fail(pos_, closed ? close + 1 : pos_ + 1, "unexpected character \"'\": Shoal strings use double quotes",
                 {closed ? "write \"" + text_.substr(pos_ + 1, close - pos_ - 1) + "\"" : "write \"text\""});
        }
    }

    const SourcePtr& src_;
    const std::string& text_;
    size_t pos_;
    size_t end_;
    size_t last_end_;
};

}  // namespace

bool is_keyword(std::string_view word) {
    for (std::string_view k : kKeywords)
        if (k == word) return true;
    return false;
}

std::vector<Token> tokenize(const SourcePtr& src, size_t begin, size_t end) {
    if (end > src->text.size()) end = src->text.size();
    if (begin > end) begin = end;
    return Lexer(src, begin, end).run();
}

Loc source_loc(const SourcePtr& src, size_t begin, size_t end) {
    Loc loc;
    loc.source = src;
    src->position(begin, loc.line, loc.col);
    size_t line_end = src->text.find('\n', begin);
    if (line_end == std::string::npos) line_end = src->text.size();
    if (end > line_end) end = line_end;
    loc.length = end > begin ? static_cast<int>(end - begin) : 1;
    return loc;
}

}  // namespace shoal
