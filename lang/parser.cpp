// Recursive descent with precedence climbing for the binary operators.
//
// Grammar sketch (lowest precedence first; see docs/language.md):
//   expr        := binary(|>)
//   binary(l)   := unary { op(>= l) binary(l' ) | 'with' [indices] = binary(||) }
//   unary       := ('-' | '!' | '~') unary | application
//   application := lambda | let | if | loop | postfix { postfix }
//   postfix     := atom { '[' indices ']' }        -- '[' glued to what precedes it
//   atom        := name | literal | '(' ... ')' | '[' elements ']'
//
// Every error that is raised because the tokens ran out is Incomplete (the
// REPL then asks for another line); every other one is Syntax.
#include <cctype>
#include "parser.h"

#include <cstdlib>
#include <map>

#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

#include "builtins.h"
#include "lexer.h"

namespace shoal {

namespace {

// Binding power of the binary operators and of the postfix `with`.
enum Level : int {
    LevelLowest = 0,
    LevelPipe = 1,
    LevelWith = 2,
    LevelOr = 3,
    LevelAnd = 4,
    LevelCompare = 5,
    LevelConcat = 6,
    LevelBitwise = 7,
    LevelShift = 8,
    LevelAdditive = 9,
    LevelMultiplicative = 10,
    LevelPower = 11,
};

struct BinaryOp {
    std::string_view text;
    int level;
    bool right_assoc;
};

constexpr std::array<BinaryOp, 21> kBinaryOps = {{
    {"|>", LevelPipe, false},          {"||", LevelOr, false},
    {"&&", LevelAnd, false},           {"==", LevelCompare, false},
    {"!=", LevelCompare, false},       {"<", LevelCompare, false},
    {"<=", LevelCompare, false},       {">", LevelCompare, false},
    {">=", LevelCompare, false},       {"++", LevelConcat, true},
    {"|", LevelBitwise, false},        {"^", LevelBitwise, false},
    {"&", LevelBitwise, false},        {"<<", LevelShift, false},
    {">>", LevelShift, false},         {"+", LevelAdditive, false},
    {"-", LevelAdditive, false},       {"*", LevelMultiplicative, false},
    {"/", LevelMultiplicative, false}, {"%", LevelMultiplicative, false},
    {"@", LevelMultiplicative, false},
}};
constexpr BinaryOp kPowerOp = {"**", LevelPower, true};

const BinaryOp* binary_op(const Token& t) {
    if (t.kind != TokenKind::Symbol) return nullptr;
    if (t.text == kPowerOp.text) return &kPowerOp;
    for (const BinaryOp& op : kBinaryOps)
        if (op.text == t.text) return &op;
    return nullptr;
}

// The parameter of the lambda a section `(+ 1)` desugars to. It starts with a
// quote, which no identifier can, so it never captures a user's name.
constexpr const char* kSectionParam = "'x";

const char* unary_op_name(const Token& t) {
    if (t.kind != TokenKind::Symbol) return nullptr;
    if (t.text == "-") return "negate";
    if (t.text == "!") return "!";
    if (t.text == "~") return "~";
    return nullptr;
}

bool is_prim_name(std::string_view name, Prim& prim) {
    static constexpr std::array<std::pair<std::string_view, Prim>, 5> kPrims = {{
        {"bool", Prim::Bool}, {"int", Prim::Int}, {"long", Prim::Long},
        {"float", Prim::Float}, {"double", Prim::Double},
    }};
    for (const auto& [n, p] : kPrims) {
        if (n == name) {
            prim = p;
            return true;
        }
    }
    return false;
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

// First offset in [pos, end) that is neither whitespace nor inside a comment.
size_t skip_blank(const std::string& text, size_t pos, size_t end) {
    while (pos < end) {
        if (is_blank(text[pos])) {
            ++pos;
        } else if (text.compare(pos, 2, "--") == 0) {
            while (pos < end && text[pos] != '\n') ++pos;
        } else {
            break;
        }
    }
    return pos;
}

class Parser {
public:
    Parser(const SourcePtr& src, size_t begin, size_t end) : src_(src), tokens_(tokenize(src, begin, end)) {}

    StmtPtr statement(size_t span_end);
    ExprPtr whole_expression();

private:
    struct Binding {
        PatternPtr pattern;
        ExprPtr value;
    };

    // ---- token access
    const Token& tok() const { return tokens_[pos_]; }
    const Token& next() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
    Token advance() {
        Token t = tokens_[pos_];
        if (pos_ + 1 < tokens_.size()) ++pos_;
        prev_end_ = t.end();
        return t;
    }
    bool accept_symbol(std::string_view s) {
        if (!tok().is_symbol(s)) return false;
        advance();
        return true;
    }
    bool accept_keyword(std::string_view k) {
        if (!tok().is_keyword(k)) return false;
        advance();
        return true;
    }
    Token expect_symbol(std::string_view s, const std::string& context);
    Token expect_keyword(std::string_view k, const std::string& context);
    void expect_end();

    // ---- locations and errors
    Loc loc_of(const Token& t) const { return source_loc(src_, t.offset, t.end()); }
    Loc span_from(size_t begin) const { return source_loc(src_, begin, std::max(prev_end_, begin)); }
    std::string describe(const Token& t) const;
    [[noreturn]] void fail_expected(const std::string& what) const;
    [[noreturn]] void fail_at(const Token& t, std::string message, std::vector<std::string> notes = {}) const;
    [[noreturn]] void fail_unexpected(const Token& t) const;
    [[noreturn]] void fail_keyword_argument(const std::string& name) const;

    // ---- expressions
    ExprPtr parse_expr() { return parse_binary(LevelLowest, false); }
    ExprPtr parse_binary(int min_level, bool allow_left_section);
    void reject_chained_comparison();
    ExprPtr make_binary(std::string_view op, ExprPtr lhs, ExprPtr rhs, const Loc& loc) const;
    ExprPtr parse_with(ExprPtr array);
    ExprPtr parse_unary();
    ExprPtr parse_application();
    static bool starts_argument(const Token& t);
    ExprPtr parse_postfix();
    ExprPtr parse_index(ExprPtr array, size_t begin);
    std::vector<IndexArg> parse_index_list();
    IndexArg parse_index_arg();
    ExprPtr parse_atom();
    ExprPtr parse_paren();
    ExprPtr parse_right_section(size_t begin, const BinaryOp& op);
    ExprPtr parse_left_section(size_t begin, ExprPtr lhs);
    ExprPtr section_lambda(size_t begin, std::string_view op, ExprPtr lhs, ExprPtr rhs, const Loc& op_loc);
    ExprPtr parse_optional_annotation(ExprPtr e, size_t begin);
    ExprPtr parse_array_literal();
    ExprPtr parse_lambda();
    ExprPtr parse_if();
    ExprPtr parse_let_expression();
    Binding parse_binding();
    Binding parse_function_binding();
    ExprPtr parse_loop();

    // ---- patterns and types
    static bool starts_pattern(const Token& t);
    PatternPtr parse_pattern();
    PatternPtr parse_annotated_pattern();
    static void reject_repeated_names(const std::vector<PatternPtr>& patterns);
    Type parse_type();
    Type parse_type_atom();
    Type parse_named_type();
    Type array_of(const Type& elem, const Token& open);

    // Bounds the recursion so that absurdly nested input is an error, not a stack overflow.
    struct DepthGuard {
        static constexpr int kMaxDepth = 500;
        Parser& parser;
        explicit DepthGuard(Parser& p) : parser(p) {
            if (++parser.depth_ <= kMaxDepth) return;
            --parser.depth_;  // the destructor will not run
            parser.fail_at(parser.tok(), "expression nested too deeply");
        }
        ~DepthGuard() { --parser.depth_; }
    };

    // Bounds the depth of the tree itself: chains built by loops (`a + b + ...`,
    // `f x y ...`, `a[i][j]...`, `with`) do not recurse in the parser but do in
    // every later pass (type checking, evaluation, destruction).
    static constexpr int kMaxTreeDepth = 1000;
    int tree_depth(const ExprPtr& e);
    ExprPtr bounded(ExprPtr e, const Token& at);
    // Depths of the nodes measured so far (each node is measured once); the
    // map holds a reference so that no address is reused while it is alive.
    std::unordered_map<const Expr*, std::pair<ExprPtr, int>> depths_;

    const SourcePtr& src_;
    std::vector<Token> tokens_;
    size_t pos_ = 0;
    size_t prev_end_ = 0;  // end offset of the last consumed token
    int depth_ = 0;
};

// ------------------------------------------------------------------ errors

std::string Parser::describe(const Token& t) const {
    if (t.kind == TokenKind::End) return "end of input";
    std::string spelled = src_->text.substr(t.offset, std::min<size_t>(t.length, 30));
    if (t.length > 30) spelled += "...";
    return "'" + spelled + "'";
}

// A lambda counts one level per parameter: its type nests that deep.
int Parser::tree_depth(const ExprPtr& e) {
    if (!e) return 0;
    if (auto it = depths_.find(e.get()); it != depths_.end()) return it->second.second;
    int d = 0;
    for (const ExprPtr& k : e->kids) d = std::max(d, tree_depth(k));
    for (const IndexArg& a : e->indices)
        for (const ExprPtr* k : {&a.index, &a.lo, &a.hi, &a.step}) d = std::max(d, tree_depth(*k));
    d += 1 + static_cast<int>(std::min<size_t>(e->params.size(), kMaxTreeDepth));
    depths_.emplace(e.get(), std::make_pair(e, d));
    return d;
}

ExprPtr Parser::bounded(ExprPtr e, const Token& at) {
    if (tree_depth(e) > kMaxTreeDepth)
        fail_at(at, "expression nested too deeply (more than " + std::to_string(kMaxTreeDepth) + " levels)",
                {"split it into several `let` bindings"});
    return e;
}

void Parser::fail_at(const Token& t, std::string message, std::vector<std::string> notes) const {
    user_error(ErrorKind::Syntax, loc_of(t), std::move(message), std::move(notes));
}

// "expected X, found Y"; when the input ran out, Incomplete instead.
void Parser::fail_expected(const std::string& what) const {
    const Token& t = tok();
    if (t.kind == TokenKind::End)
        user_error(ErrorKind::Incomplete, loc_of(t), "unexpected end of input: expected " + what);
    fail_at(t, "expected " + what + ", found " + describe(t));
}

void Parser::fail_unexpected(const Token& t) const {
    std::vector<std::string> notes;
    if (t.is_symbol("\\") || t.is_keyword("if") || t.is_keyword("let") || t.is_keyword("loop"))
        notes.push_back("an argument that is a lambda, 'if', 'let' or 'loop' needs parentheses: f (\\x -> x + 1)");
    else if (t.is_symbol("="))
        notes.push_back("to define a name write 'let name = value'; to compare use '=='");
    else if (t.is_symbol(".") && !t.space_before && next().kind == TokenKind::Ident) {
        // xs.sum, np.mean: a method or module habit.
        const std::string& name = next().text;
        const std::string instead = habit_code(name);
        notes.push_back("Shoal has no methods or modules: apply a function to the value, e.g. `" +
                        (!instead.empty() ? instead : find_builtin_doc(name) ? name + " xs" : std::string("sum xs")) + "`");
    }
    fail_at(t, "unexpected " + describe(t), std::move(notes));
}

// `sum(m, axis=0)`: NumPy's keyword arguments, with what Shoal writes instead.
void Parser::fail_keyword_argument(const std::string& name) const {
    static const std::map<std::string, std::string> instead = {
        {"axis", "reductions and statistics work along the innermost axis (NumPy's axis=-1); for axis=0 reduce the "
                 "transpose: `sum (transpose m)`, `mean (transpose m)`"},
        {"keepdims", "a row's statistic kept as a column is `col (sum m)`: it then broadcasts along the rows"},
        {"ddof", "var and std use NumPy's default ddof = 0; for ddof = 1 multiply the variance by n / (n - 1)"},
        {"dtype", "convert with `float xs`, `double xs`, `int xs` or `long xs`"},
        {"range", "histogram takes its range as arguments: `histogram bins lo hi xs`"},
        {"bins", "histogram takes the number of bins first: `histogram bins lo hi xs`"},
        {"k", "topk takes k first: `topk k xs`"},
        {"q", "quantile takes q first: `quantile q xs`"},
    };
    std::vector<std::string> notes;
    if (auto it = instead.find(name); it != instead.end()) notes.push_back(it->second);
    notes.push_back("arguments are passed by position, separated by spaces: `f x y`");
    fail_at(tok(), "`" + name + "=` is a keyword argument, and Shoal has none", std::move(notes));
}

Token Parser::expect_symbol(std::string_view s, const std::string& context) {
    if (!tok().is_symbol(s)) fail_expected("'" + std::string(s) + "'" + (context.empty() ? "" : " " + context));
    return advance();
}

Token Parser::expect_keyword(std::string_view k, const std::string& context) {
    if (!tok().is_keyword(k)) fail_expected("'" + std::string(k) + "'" + (context.empty() ? "" : " " + context));
    return advance();
}

void Parser::expect_end() {
    if (tok().kind != TokenKind::End) fail_unexpected(tok());
}

// ------------------------------------------------------------------ binary operators

ExprPtr Parser::parse_binary(int min_level, bool allow_left_section) {
    ExprPtr lhs = parse_unary();
    while (true) {
        if (tok().is_keyword("with")) {
            if (LevelWith < min_level) break;
            const Token with_tok = tok();
            lhs = bounded(parse_with(lhs), with_tok);
            continue;
        }
        const BinaryOp* op = binary_op(tok());
        if (!op || op->level < min_level) break;
        if (next().is_symbol(")")) {
            // `(e +)` is a left section, recognised only for the whole
            // parenthesised expression: `(a + b *)` stays an error.
            if (allow_left_section && min_level == LevelLowest) break;
            advance();
            fail_expected("an expression after '" + std::string(op->text) + "'");
        }
        Token op_tok = advance();
        ExprPtr rhs;
        if (op->right_assoc) {
            DepthGuard guard(*this);  // `a ** b ** ...` and `a ++ b ++ ...` recurse here
            rhs = parse_binary(op->level, false);
        } else {
            rhs = parse_binary(op->level + 1, false);
        }
        if (op->level == LevelCompare) reject_chained_comparison();
        lhs = bounded(make_binary(op->text, lhs, rhs, loc_of(op_tok)), op_tok);
    }
    return lhs;
}

// Comparisons are non-associative: `a < b < c` would compare a bool with c.
void Parser::reject_chained_comparison() {
    const BinaryOp* op = binary_op(tok());
    if (!op || op->level != LevelCompare) return;
    fail_at(tok(), "comparison operators cannot be chained: '" + std::string(op->text) +
                       "' follows another comparison",
            {"write 'a < b && b < c' instead of 'a < b < c'"});
}

ExprPtr Parser::make_binary(std::string_view op, ExprPtr lhs, ExprPtr rhs, const Loc& loc) const {
    if (op == "|>") {  // x |> f  is  f x
        auto app = make_expr(ExprKind::App, loc);
        app->kids = {std::move(rhs), std::move(lhs)};
        return app;
    }
    auto e = make_expr(ExprKind::Binary, loc);
    e->text = std::string(op);
    e->kids = {std::move(lhs), std::move(rhs)};
    return e;
}

// a with [i, j:k] = v  (the value binds tighter than |> and `with`, so updates chain)
ExprPtr Parser::parse_with(ExprPtr array) {
    Token with_tok = advance();
    expect_symbol("[", "after 'with'");
    auto e = make_expr(ExprKind::With, loc_of(with_tok));
    e->indices = parse_index_list();
    expect_symbol("=", "after the index list of 'with'");
    ExprPtr value = parse_binary(LevelOr, false);
    e->kids = {std::move(array), std::move(value)};
    return e;
}

// ------------------------------------------------------------------ unary, application, postfix

ExprPtr Parser::parse_unary() {
    DepthGuard guard(*this);
    const char* name = unary_op_name(tok());
    if (!name) return parse_application();
    Token op_tok = advance();
    ExprPtr operand = parse_unary();
    auto e = make_expr(ExprKind::Unary, span_from(op_tok.offset));
    e->text = name;
    e->kids = {std::move(operand)};
    return e;
}

ExprPtr Parser::parse_application() {
    const Token& t = tok();
    if (t.is_symbol("\\")) return parse_lambda();
    if (t.is_keyword("let")) return parse_let_expression();
    if (t.is_keyword("if")) return parse_if();
    if (t.is_keyword("loop")) return parse_loop();
    size_t begin = t.offset;
    ExprPtr fn = parse_postfix();
    while (starts_argument(tok())) {
        const Token arg_tok = tok();
        ExprPtr arg = parse_postfix();
        auto app = make_expr(ExprKind::App, span_from(begin));
        app->kids = {std::move(fn), std::move(arg)};
        fn = bounded(std::move(app), arg_tok);
    }
    return fn;
}

bool Parser::starts_argument(const Token& t) {
    switch (t.kind) {
        case TokenKind::Ident:
        case TokenKind::Int:
        case TokenKind::Float:
        case TokenKind::String: return true;
        case TokenKind::Keyword: return t.text == "true" || t.text == "false";
        // `_` only so that parse_atom can explain that it is not a value.
        case TokenKind::Symbol: return t.text == "(" || t.text == "[" || t.text == "_";
        case TokenKind::End: return false;
    }
    return false;
}

ExprPtr Parser::parse_postfix() {
    size_t begin = tok().offset;
    ExprPtr e = parse_atom();
    // Only a glued '[' indexes: `f a [1, 2]` passes an array literal.
    while (tok().is_symbol("[") && !tok().space_before) {
        const Token open = tok();
        e = bounded(parse_index(e, begin), open);
    }
    return e;
}

ExprPtr Parser::parse_index(ExprPtr array, size_t begin) {
    advance();  // '['
    std::vector<IndexArg> indices = parse_index_list();
    auto e = make_expr(ExprKind::Index, span_from(begin));
    e->kids = {std::move(array)};
    e->indices = std::move(indices);
    return e;
}

// After '[': one or more index arguments separated by ',', then ']'.
std::vector<IndexArg> Parser::parse_index_list() {
    std::vector<IndexArg> args;
    while (true) {
        args.push_back(parse_index_arg());
        if (accept_symbol(",")) continue;
        if (accept_symbol("]")) return args;
        fail_expected("',' or ']' in the index list");
    }
}

// i  |  lo:hi  |  lo:hi:step, each part of a slice optional
IndexArg Parser::parse_index_arg() {
    if (tok().is_symbol("]") || tok().is_symbol(",")) fail_expected("an index or a slice");
    size_t begin = tok().offset;
    IndexArg arg;
    if (!tok().is_symbol(":")) {
        ExprPtr e = parse_expr();
        if (!tok().is_symbol(":")) {
            arg.index = std::move(e);
            arg.loc = span_from(begin);
            return arg;
        }
        arg.lo = std::move(e);
    }
    arg.is_slice = true;
    advance();  // ':'
    auto part_follows = [this](bool colon_ends) {
        const Token& t = tok();
        return !(t.is_symbol(",") || t.is_symbol("]") || (colon_ends && t.is_symbol(":")));
    };
    if (part_follows(true)) arg.hi = parse_expr();
    if (accept_symbol(":") && part_follows(false)) arg.step = parse_expr();
    arg.loc = span_from(begin);
    return arg;
}

// ------------------------------------------------------------------ atoms

ExprPtr Parser::parse_atom() {
    const Token& t = tok();
    switch (t.kind) {
        case TokenKind::Ident: {
            auto e = make_expr(ExprKind::Var, loc_of(t));
            e->text = advance().text;
            return e;
        }
        case TokenKind::Int: {
            auto e = make_expr(ExprKind::IntLit, loc_of(t));
            e->int_value = t.int_value;
            e->text = advance().text;
            return e;
        }
        case TokenKind::Float: {
            auto e = make_expr(ExprKind::FloatLit, loc_of(t));
            e->float_value = t.float_value;
            e->float_value32 = std::strtof(t.text.c_str(), nullptr);
            e->text = advance().text;
            return e;
        }
        case TokenKind::String: {
            auto e = make_expr(ExprKind::StringLit, loc_of(t));
            e->text = advance().text;
            return e;
        }
        case TokenKind::Keyword:
            if (t.text == "true" || t.text == "false") {
                auto e = make_expr(ExprKind::BoolLit, loc_of(t));
                e->bool_value = t.text == "true";
                e->text = advance().text;
                return e;
            }
            break;
        case TokenKind::Symbol:
            if (t.text == "(") return parse_paren();
            if (t.text == "[") return parse_array_literal();
            if (t.text == "_") fail_at(t, "'_' can only be used in a pattern (it ignores a value)");
            break;
        case TokenKind::End: break;
    }
    fail_expected("an expression");
}

// () | (op) | (op e) | (e op) | (e) | (e : t) | (e1, e2, ...)
ExprPtr Parser::parse_paren() {
    size_t begin = advance().offset;  // '('
    if (accept_symbol(")")) return make_expr(ExprKind::Tuple, span_from(begin));
    if (const BinaryOp* op = binary_op(tok())) {
        if (op->text != "|>" && next().is_symbol(")")) {
            auto e = make_expr(ExprKind::Var, span_from(begin));
            e->text = advance().text;
            advance();  // ')'
            e->loc = span_from(begin);
            return e;
        }
        if (op->text != "-") return parse_right_section(begin, *op);  // `(- 1)` is a negation
    }
    size_t first_begin = tok().offset;
    ExprPtr first = parse_binary(LevelLowest, true);
    if (binary_op(tok()) && next().is_symbol(")")) return parse_left_section(begin, first);
    first = parse_optional_annotation(first, first_begin);
    if (accept_symbol(")")) return first;
    if (tok().is_symbol("=") && first->kind == ExprKind::Var) fail_keyword_argument(first->text);
    if (!tok().is_symbol(",")) fail_expected("',' or ')'");
    auto tuple = make_expr(ExprKind::Tuple, Loc{});
    tuple->kids.push_back(std::move(first));
    while (accept_symbol(",")) {
        size_t elem_begin = tok().offset;
        tuple->kids.push_back(parse_optional_annotation(parse_expr(), elem_begin));
    }
    if (tok().is_symbol("=") && tuple->kids.back()->kind == ExprKind::Var) fail_keyword_argument(tuple->kids.back()->text);
    expect_symbol(")", "after the last element of the tuple");
    tuple->loc = span_from(begin);
    return tuple;
}

ExprPtr Parser::parse_optional_annotation(ExprPtr e, size_t begin) {
    if (!accept_symbol(":")) return e;
    auto annot = make_expr(ExprKind::Annot, Loc{});
    annot->annotation = parse_type();
    annot->loc = span_from(begin);
    annot->kids = {std::move(e)};
    return annot;
}

// (+ 1) is \x -> x + 1
ExprPtr Parser::parse_right_section(size_t begin, const BinaryOp& op) {
    Token op_tok = advance();
    ExprPtr rhs = parse_binary(op.right_assoc ? op.level : op.level + 1, false);
    expect_symbol(")", "to close the operator section");
    auto param = make_expr(ExprKind::Var, loc_of(op_tok));
    param->text = kSectionParam;
    return section_lambda(begin, op.text, std::move(param), std::move(rhs), loc_of(op_tok));
}

// (2 *) is \x -> 2 * x
ExprPtr Parser::parse_left_section(size_t begin, ExprPtr lhs) {
    Token op_tok = advance();
    advance();  // ')'
    auto param = make_expr(ExprKind::Var, loc_of(op_tok));
    param->text = kSectionParam;
    return section_lambda(begin, op_tok.text, std::move(lhs), std::move(param), loc_of(op_tok));
}

ExprPtr Parser::section_lambda(size_t begin, std::string_view op, ExprPtr lhs, ExprPtr rhs, const Loc& op_loc) {
    auto lambda = make_expr(ExprKind::Lambda, span_from(begin));
    auto param = make_pattern(PatternKind::Var, op_loc);
    param->name = kSectionParam;
    lambda->params = {std::move(param)};
    lambda->kids = {make_binary(op, std::move(lhs), std::move(rhs), op_loc)};
    return lambda;
}

ExprPtr Parser::parse_array_literal() {
    size_t begin = advance().offset;  // '['
    auto e = make_expr(ExprKind::ArrayLit, Loc{});
    if (!accept_symbol("]")) {
        do {
            e->kids.push_back(parse_expr());
        } while (accept_symbol(","));
        expect_symbol("]", "to close the array literal");
    }
    e->loc = span_from(begin);
    return e;
}

// ------------------------------------------------------------------ keyword forms

ExprPtr Parser::parse_lambda() {
    Token backslash = advance();
    auto e = make_expr(ExprKind::Lambda, Loc{});
    while (starts_pattern(tok())) e->params.push_back(parse_pattern());
    if (e->params.empty()) fail_expected("a parameter after '\\'");
    reject_repeated_names(e->params);
    if (!tok().is_symbol("->")) {
        if (tok().is_symbol(":"))
            fail_at(tok(), "expected '->' after the parameters of the lambda, found ':'",
                    {"annotate a parameter inside parentheses: \\(x : float) -> ..."});
        fail_expected("'->' after the parameters of the lambda");
    }
    advance();
    e->kids = {parse_expr()};
    e->loc = span_from(backslash.offset);
    return bounded(std::move(e), backslash);
}

ExprPtr Parser::parse_if() {
    Token if_tok = advance();
    ExprPtr cond = parse_expr();
    expect_keyword("then", "after the condition of 'if'");
    ExprPtr then_branch = parse_expr();
    expect_keyword("else", "after the 'then' branch of 'if'");
    ExprPtr else_branch = parse_expr();
    auto e = make_expr(ExprKind::If, span_from(if_tok.offset));
    e->kids = {std::move(cond), std::move(then_branch), std::move(else_branch)};
    return e;
}

ExprPtr Parser::parse_let_expression() {
    Token let_tok = advance();
    Binding b = parse_binding();
    expect_keyword("in", "after the value of a local 'let'");
    ExprPtr body = parse_expr();
    auto e = make_expr(ExprKind::Let, span_from(let_tok.offset));
    e->pattern = std::move(b.pattern);
    e->kids = {std::move(b.value), std::move(body)};
    return e;
}

// After 'let': `p [: t] = e`  or  `f params [: t] = e`
Parser::Binding Parser::parse_binding() {
    if (tok().kind == TokenKind::Ident && starts_pattern(next())) return parse_function_binding();
    if (!starts_pattern(tok())) fail_expected("a name or a pattern after 'let'");
    Binding b;
    b.pattern = parse_pattern();
    reject_repeated_names({b.pattern});
    if (accept_symbol(":")) b.pattern->annotation = parse_type();
    expect_symbol("=", "in the 'let' binding");
    b.value = parse_expr();
    return b;
}

// let f a (b : t) : r = body   binds f to  \a (b : t) -> body  with result type r
Parser::Binding Parser::parse_function_binding() {
    Token name = advance();
    Binding b;
    b.pattern = make_pattern(PatternKind::Var, loc_of(name));
    b.pattern->name = name.text;
    auto lambda = make_expr(ExprKind::Lambda, loc_of(name));
    while (starts_pattern(tok())) lambda->params.push_back(parse_pattern());
    reject_repeated_names(lambda->params);
    if (accept_symbol(":")) lambda->annotation = parse_type();
    expect_symbol("=", "in the definition of '" + name.text + "'");
    lambda->kids = {parse_expr()};
    b.value = bounded(std::move(lambda), name);
    return b;
}

// loop p = init for i < n do body  |  loop p = init while cond do body
ExprPtr Parser::parse_loop() {
    Token loop_tok = advance();
    if (!starts_pattern(tok())) fail_expected("a name or a pattern after 'loop'");
    PatternPtr pattern = parse_pattern();
    reject_repeated_names({pattern});
    if (accept_symbol(":")) pattern->annotation = parse_type();
    expect_symbol("=", "after the pattern of 'loop'");
    ExprPtr init = parse_expr();
    ExprPtr e;
    if (accept_keyword("for")) {
        if (tok().kind != TokenKind::Ident) fail_expected("the name of the loop counter after 'for'");
        Token counter = advance();
        expect_symbol("<", "after the loop counter (loop x = x0 for i < n do ...)");
        ExprPtr count = parse_expr();
        expect_keyword("do", "after the count of 'loop ... for'");
        ExprPtr body = parse_expr();
        e = make_expr(ExprKind::LoopFor, span_from(loop_tok.offset));
        e->counter = counter.text;
        e->counter_loc = loc_of(counter);
        e->kids = {std::move(init), std::move(count), std::move(body)};
    } else if (accept_keyword("while")) {
        ExprPtr cond = parse_expr();
        expect_keyword("do", "after the condition of 'loop ... while'");
        ExprPtr body = parse_expr();
        e = make_expr(ExprKind::LoopWhile, span_from(loop_tok.offset));
        e->kids = {std::move(init), std::move(cond), std::move(body)};
    } else {
        fail_expected("'for' or 'while' after the initial value of 'loop'");
    }
    e->pattern = std::move(pattern);
    return e;
}

// ------------------------------------------------------------------ patterns

bool Parser::starts_pattern(const Token& t) {
    return t.kind == TokenKind::Ident || t.is_symbol("_") || t.is_symbol("(");
}

// x | _ | () | (p : t) | (p1, p2, ...)
PatternPtr Parser::parse_pattern() {
    DepthGuard guard(*this);
    const Token& t = tok();
    if (t.kind == TokenKind::Ident) {
        auto p = make_pattern(PatternKind::Var, loc_of(t));
        p->name = advance().text;
        return p;
    }
    if (t.is_symbol("_")) return make_pattern(PatternKind::Wildcard, loc_of(advance()));
    if (!t.is_symbol("(")) fail_expected("a pattern (a name, '_' or a tuple)");
    size_t begin = advance().offset;
    if (accept_symbol(")")) return make_pattern(PatternKind::Tuple, span_from(begin));
    PatternPtr first = parse_annotated_pattern();
    if (accept_symbol(")")) return first;
    if (!tok().is_symbol(",")) fail_expected("',' or ')' in the pattern");
    auto tuple = make_pattern(PatternKind::Tuple, Loc{});
    tuple->elems.push_back(std::move(first));
    while (accept_symbol(",")) tuple->elems.push_back(parse_annotated_pattern());
    expect_symbol(")", "after the last element of the tuple pattern");
    tuple->loc = span_from(begin);
    return tuple;
}

// `\x x -> x`, `let (a, a) = ...`: which of the two a use of the name
// means would be arbitrary, so the second one is an error.
void Parser::reject_repeated_names(const std::vector<PatternPtr>& patterns) {
    std::unordered_set<std::string_view> seen;
    auto walk = [&](auto& self, const PatternPtr& p) -> void {
        if (p->kind == PatternKind::Var && !seen.insert(p->name).second)
            user_error(ErrorKind::Syntax, p->loc, "`" + p->name + "` is bound twice in this pattern",
                       {"give each a name of its own; `_` ignores a value"});
        for (const PatternPtr& e : p->elems) self(self, e);
    };
    for (const PatternPtr& p : patterns) walk(walk, p);
}

PatternPtr Parser::parse_annotated_pattern() {
    PatternPtr p = parse_pattern();
    if (accept_symbol(":")) p->annotation = parse_type();
    return p;
}

// ------------------------------------------------------------------ types

// t -> t -> t (right associative)
Type Parser::parse_type() {
    DepthGuard guard(*this);  // `a -> b -> ...` recurses here
    Type t = parse_type_atom();
    if (accept_symbol("->")) return t_func(t, parse_type());
    return t;
}

// scalar | a | [t] | () | (t) | (t1, t2, ...)
Type Parser::parse_type_atom() {
    DepthGuard guard(*this);
    if (tok().kind == TokenKind::Ident) return parse_named_type();
    if (tok().is_symbol("[")) {
        Token open = advance();
        Type elem = parse_type();
        expect_symbol("]", "to close the array type");
        return array_of(elem, open);
    }
    if (!tok().is_symbol("(")) fail_expected("a type");
    advance();
    if (accept_symbol(")")) return t_unit();
    Type first = parse_type();
    if (accept_symbol(")")) return first;
    std::vector<Type> elems = {first};
    if (!tok().is_symbol(",")) fail_expected("',' or ')' in the tuple type");
    while (accept_symbol(",")) elems.push_back(parse_type());
    expect_symbol(")", "after the last element of the tuple type");
    return t_tuple(std::move(elems));
}

// A scalar name, string, or a lowercase type variable (the checker maps each name to
// one fresh variable per annotation scope).
Type Parser::parse_named_type() {
    Token name = advance();
    Prim prim = Prim::Int;
    if (is_prim_name(name.text, prim)) return t_prim(prim);
    if (name.text == "string") return t_string();
    if (name.text[0] >= 'A' && name.text[0] <= 'Z')
        fail_at(name, "unknown type '" + name.text + "'",
                {"types are bool, int, long, float, double, string, [t], (t1, t2), a -> b, and lowercase type variables"});
    Type var = t_var(-1);
    var->name = name.text;
    return var;
}

// [elem]: one more dimension; arrays of tuples become tuples of arrays.
Type Parser::array_of(const Type& elem, const Token& open) {
    switch (elem->kind) {
        case TypeKind::Prim:
        case TypeKind::Var: return t_array(1, elem);
        case TypeKind::Array: {
            int rank = elem->args[0]->rank + 1;
            if (rank > 3) fail_at(open, "arrays have rank at most 3");
            return t_array(rank, elem->args[1]);
        }
        case TypeKind::Tuple: {
            std::vector<Type> elems;
            for (const Type& e : elem->args) elems.push_back(array_of(e, open));
            return t_tuple(std::move(elems));
        }
        default: fail_at(open, "array elements must be scalars or tuples of scalars");
    }
}

// ------------------------------------------------------------------ statements

StmtPtr Parser::statement(size_t span_end) {
    const Token first = tok();
    if (first.kind == TokenKind::End) fail_at(first, "empty statement");
    auto stmt = std::make_shared<Stmt>();
    stmt->loc = source_loc(src_, first.offset, span_end);
    if (!first.is_keyword("let")) {
        stmt->kind = StmtKind::Expr;
        stmt->expr = bounded(parse_expr(), first);
        expect_end();
        return stmt;
    }
    advance();
    Binding b = parse_binding();
    if (accept_keyword("in")) {  // `let x = e in body` at top level is an expression
        auto e = make_expr(ExprKind::Let, Loc{});
        e->pattern = std::move(b.pattern);
        e->kids = {std::move(b.value), parse_expr()};
        e->loc = span_from(first.offset);
        stmt->kind = StmtKind::Expr;
        stmt->expr = std::move(e);
    } else {
        stmt->kind = StmtKind::Let;
        stmt->pattern = std::move(b.pattern);
        stmt->expr = std::move(b.value);
    }
    bounded(stmt->expr, first);
    expect_end();
    return stmt;
}

ExprPtr Parser::whole_expression() {
    const Token first = tok();
    ExprPtr e = bounded(parse_expr(), first);
    expect_end();
    return e;
}

bool is_command_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// `:name argument`: the argument is raw text (a file name, an expression, ...).
StmtPtr parse_command(const SourcePtr& src, size_t colon, size_t end) {
    const std::string& text = src->text;
    size_t name_end = colon + 1;
    while (name_end < end && is_command_char(text[name_end])) ++name_end;
    if (name_end == colon + 1)
        user_error(ErrorKind::Syntax, source_loc(src, colon, colon + 1), "expected a command name after ':' (try :help)");
    size_t arg_begin = name_end;
    while (arg_begin < end && is_blank(text[arg_begin])) ++arg_begin;
    size_t arg_end = end;
    while (arg_end > arg_begin && is_blank(text[arg_end - 1])) --arg_end;
    auto stmt = std::make_shared<Stmt>();
    stmt->kind = StmtKind::Command;
    stmt->loc = source_loc(src, colon, name_end);
    stmt->command = text.substr(colon + 1, name_end - colon - 1);
    stmt->argument = text.substr(arg_begin, arg_end - arg_begin);
    stmt->argument_loc = source_loc(src, arg_begin, arg_end);
    return stmt;
}

// ------------------------------------------------------------------ layout

// Tracks ( [ nesting across the lines of one statement, skipping strings and
// comments: the offsets of the brackets still open, innermost last.
struct LineScan {
    std::vector<size_t> open;
    // Scans text[begin, end) (one line); returns the end of its last
    // character that is not blank or part of a comment. Before `options_end`
    // (a command's options, `:cuda --full`) a `--` starts no comment.
    size_t scan(const std::string& text, size_t begin, size_t end, size_t options_end = 0) {
        size_t content_end = begin;
        for (size_t i = begin; i < end; ++i) {
            char c = text[i];
            if (c == '-' && i + 1 < end && text[i + 1] == '-' && i >= options_end) break;
            if (c == '"') {
                i = skip_string(text, i, end);
                content_end = std::min(i + 1, end);
                continue;
            }
            if (c == '(' || c == '[') open.push_back(i);
            if ((c == ')' || c == ']') && !open.empty()) open.pop_back();
            if (!is_blank(c)) content_end = i + 1;
        }
        return content_end;
    }
    // Offset of the closing quote of the string opening at `quote` (or the line end).
    static size_t skip_string(const std::string& text, size_t quote, size_t end) {
        for (size_t i = quote + 1; i < end; ++i) {
            if (text[i] == '\\') ++i;
            else if (text[i] == '"') return i;
        }
        return end;
    }
};

// The end of a command's options: `--word`s right after `:name` (`:cuda
// --full e`), which are not comments. `first` is the line's first character.
size_t command_options_end(const std::string& text, size_t first, size_t end) {
    if (first >= end || text[first] != ':') return 0;
    size_t i = first + 1;
    while (i < end && is_command_char(text[i])) ++i;
    size_t options_end = 0;
    for (;;) {
        while (i < end && is_blank(text[i])) ++i;
        if (i + 2 >= end || text.compare(i, 2, "--") != 0 || !std::isalpha(static_cast<unsigned char>(text[i + 2])))
            return options_end;
        while (i < end && !is_blank(text[i])) ++i;
        options_end = i;
    }
}

}  // namespace

bool continues_statement(std::string_view line) {
    size_t first = 0;
    while (first < line.size() && is_blank(line[first])) ++first;
    const std::string_view rest = line.substr(first);
    size_t longest = 0;
    std::string_view op;
    for (const BinaryOp& b : kBinaryOps)
        if (rest.substr(0, b.text.size()) == b.text && b.text.size() > longest) longest = b.text.size(), op = b.text;
    if (rest.substr(0, kPowerOp.text.size()) == kPowerOp.text) op = kPowerOp.text;
    return !op.empty() && op != "-";  // `-x` starts a negation; `--` a comment
}

// Calls visit(first, line_end) for each line of text[begin, end) with content
// (not blank, not only a comment); `first` is its first non-blank character.
template <class Visit>
void for_each_content_line(const std::string& text, size_t begin, size_t end, Visit visit) {
    size_t line_begin = begin;
    while (line_begin < end) {
        size_t line_end = std::min(text.find('\n', line_begin), end);
        size_t first = line_begin;
        while (first < line_end && is_blank(text[first])) ++first;
        if (first < line_end && text.compare(first, 2, "--") != 0) visit(line_begin, first, line_end);
        line_begin = line_end + 1;
    }
}

std::vector<StatementSpan> split_statements(const Source& src, size_t begin, size_t end) {
    const std::string& text = src.text;
    end = std::min(end, text.size());
    std::vector<StatementSpan> spans;
    LineScan scan;
    bool open = false;
    StatementSpan current;
    for_each_content_line(text, begin, end, [&](size_t line_begin, size_t first, size_t line_end) {
        bool indented = first != line_begin;
        bool continues = open && (!scan.open.empty() || indented ||
                                  continues_statement(std::string_view(text).substr(first, line_end - first)));
        if (!continues) {
            if (open) spans.push_back(current);
            current.begin = first;
            scan.open.clear();
            open = true;
        }
        current.end = scan.scan(text, first, line_end, continues ? 0 : command_options_end(text, first, line_end));
    });
    if (open) spans.push_back(current);
    return spans;
}

std::optional<UnclosedBracket> find_unclosed_bracket(const Source& src, StatementSpan span) {
    const std::string& text = src.text;
    LineScan scan;
    struct Line {
        size_t first;
        bool starts_statement;  // at column 1 (not an operator, not a closing bracket) or a `let`
        std::vector<size_t> open;  // brackets open where it starts
    };
    std::vector<Line> lines;
    for_each_content_line(text, span.begin, span.end, [&](size_t line_begin, size_t first, size_t line_end) {
        const std::string_view line = std::string_view(text).substr(first, line_end - first);
        const bool is_let = line.substr(0, 3) == "let" && (line.size() == 3 || !is_ident_char(line[3]));
        const bool at_column_1 = first == line_begin && !continues_statement(line) && line[0] != ')' && line[0] != ']';
        lines.push_back({first, is_let || at_column_1, scan.open});
        scan.scan(text, first, line_end, lines.size() == 1 ? command_options_end(text, first, line_end) : 0);
    });
    if (scan.open.empty()) return std::nullopt;
    // Brackets still open at the span's end were never closed; the statement
    // ends before the first line after the outermost of them that starts a statement.
    const size_t outermost = scan.open.front();
    const std::vector<size_t>& never_closed = scan.open;
    for (const Line& line : lines) {
        if (line.first <= outermost || !line.starts_statement) continue;
        // The innermost never-closed bracket opened before this line.
        size_t bracket = outermost;
        for (size_t b : never_closed)
            if (b < line.first) bracket = b;
        return UnclosedBracket{bracket, line.first};
    }
    return UnclosedBracket{never_closed.back(), span.end};
}

StmtPtr parse_statement(const SourcePtr& src, StatementSpan span) {
    size_t end = std::min(span.end, src->text.size());
    size_t first = skip_blank(src->text, span.begin, end);
    if (first < end && src->text[first] == ':') return parse_command(src, first, end);
    return Parser(src, span.begin, end).statement(end);
}

ExprPtr parse_expression(const SourcePtr& src, size_t begin, size_t end) {
    return Parser(src, begin, end).whole_expression();
}

InputStatus check_input(std::string_view text, bool single_statement) {
    auto src = std::make_shared<const Source>("<input>", std::string(text));
    std::vector<StatementSpan> spans;
    if (single_statement) {
        if (skip_blank(src->text, 0, src->text.size()) < src->text.size()) spans.push_back({0, src->text.size()});
    } else {
        spans = split_statements(*src);
    }
    for (size_t i = 0; i < spans.size(); ++i) {
        try {
            parse_statement(src, spans[i]);
        } catch (const Error& e) {
            bool last = i + 1 == spans.size();
            return e.kind == ErrorKind::Incomplete && last ? InputStatus::Incomplete : InputStatus::Invalid;
        }
    }
    return InputStatus::Complete;
}

}  // namespace shoal
