// Lexer, layout rule, parser and completeness check. Trees are compared as
// S-expressions printed by show() below, so each test reads like the syntax.
#include <doctest/doctest.h>

#include <string>

#include "lang/lexer.h"
#include "lang/parser.h"

using namespace shoal;

namespace {

// ------------------------------------------------------------------ printers

std::string show(const Type& t);

std::string show_list(const std::vector<Type>& ts, const char* sep) {
    std::string s;
    for (size_t i = 0; i < ts.size(); ++i) s += (i ? sep : "") + show(ts[i]);
    return s;
}

std::string show(const Type& t) {
    switch (t->kind) {
        case TypeKind::Prim: return prim_name(t->prim);
        case TypeKind::Array: {
            int rank = t->args[0]->rank;
            return std::string(rank, '[') + show(t->args[1]) + std::string(rank, ']');
        }
        case TypeKind::Tuple: return "(" + show_list(t->args, ", ") + ")";
        case TypeKind::Func: return "(" + show(t->args[0]) + " -> " + show(t->args[1]) + ")";
        case TypeKind::Unit: return "()";
        case TypeKind::Var: return "'" + t->name;
        default: return "?";
    }
}

std::string show(const PatternPtr& p) {
    std::string s;
    switch (p->kind) {
        case PatternKind::Var: s = p->name; break;
        case PatternKind::Wildcard: s = "_"; break;
        case PatternKind::Tuple:
            s = "(";
            for (size_t i = 0; i < p->elems.size(); ++i) s += (i ? ", " : "") + show(p->elems[i]);
            s += ")";
            break;
    }
    return p->annotation ? "(" + s + " : " + show(p->annotation) + ")" : s;
}

std::string show(const ExprPtr& e);

std::string show_kids(const ExprPtr& e, size_t from = 0) {
    std::string s;
    for (size_t i = from; i < e->kids.size(); ++i) s += " " + show(e->kids[i]);
    return s;
}

std::string show(const IndexArg& a) {
    if (!a.is_slice) return show(a.index);
    auto part = [](const ExprPtr& e) { return e ? show(e) : std::string(); };
    return part(a.lo) + ":" + part(a.hi) + ":" + part(a.step);
}

std::string show_indices(const ExprPtr& e) {
    std::string s;
    for (const auto& a : e->indices) s += " " + show(a);
    return s;
}

std::string show(const ExprPtr& e) {
    switch (e->kind) {
        case ExprKind::IntLit:
        case ExprKind::FloatLit:
        case ExprKind::BoolLit:
        case ExprKind::Var: return e->text;
        case ExprKind::StringLit: return "\"" + e->text + "\"";
        case ExprKind::Lambda: {
            std::string s = "(\\";
            for (const auto& p : e->params) s += " " + show(p);
            s += " ->" + show_kids(e);
            if (e->annotation) s += " : " + show(e->annotation);
            return s + ")";
        }
        case ExprKind::App: return "(" + show(e->kids[0]) + show_kids(e, 1) + ")";
        case ExprKind::Let: return "(let " + show(e->pattern) + show_kids(e) + ")";
        case ExprKind::If: return "(if" + show_kids(e) + ")";
        case ExprKind::Tuple: return "(tuple" + show_kids(e) + ")";
        case ExprKind::ArrayLit: {
            std::string s = show_kids(e);
            return "[" + (s.empty() ? s : s.substr(1)) + "]";
        }
        case ExprKind::Binary:
        case ExprKind::Unary: return "(" + e->text + show_kids(e) + ")";
        case ExprKind::Index: return "(index " + show(e->kids[0]) + show_indices(e) + ")";
        case ExprKind::With:
            return "(with " + show(e->kids[0]) + " [" + show_indices(e).substr(1) + "] " + show(e->kids[1]) + ")";
        case ExprKind::LoopFor:
            return "(loop-for " + show(e->pattern) + " " + show(e->kids[0]) + " " + e->counter + show_kids(e, 1) + ")";
        case ExprKind::LoopWhile: return "(loop-while " + show(e->pattern) + show_kids(e) + ")";
        case ExprKind::Annot: return "(: " + show(e->kids[0]) + " " + show(e->annotation) + ")";
    }
    return "?";
}

SourcePtr source(const std::string& text) { return std::make_shared<const Source>("<test>", text); }

// One statement made of all of `text`.
StmtPtr statement(const std::string& text) {
    auto src = source(text);
    return parse_statement(src, {0, text.size()});
}

std::string stmt(const std::string& text) {
    StmtPtr s = statement(text);
    switch (s->kind) {
        case StmtKind::Let: return "(let! " + show(s->pattern) + " " + show(s->expr) + ")";
        case StmtKind::Expr: return show(s->expr);
        case StmtKind::Command: return ":" + s->command + " [" + s->argument + "]";
    }
    return "?";
}

std::string expr(const std::string& text) {
    auto src = source(text);
    return show(parse_expression(src, 0, text.size()));
}

// The error that parsing `text` as one statement throws.
Error error_of(const std::string& text) {
    try {
        statement(text);
    } catch (const Error& e) {
        return e;
    }
    FAIL("no error for: " << text);
    return Error(ErrorKind::Internal, Loc{}, "");
}

std::string where(const Error& e) { return std::to_string(e.loc.line) + ":" + std::to_string(e.loc.col); }

#define CHECK_SYNTAX_ERROR(text, msg, pos)             \
    do {                                               \
        Error err_ = error_of(text);                   \
        CHECK(err_.kind == ErrorKind::Syntax);         \
        CHECK(err_.message == (msg));                  \
        CHECK(where(err_) == (pos));                   \
    } while (0)

#define CHECK_INCOMPLETE(text)                          \
    do {                                                \
        Error err_ = error_of(text);                    \
        CHECK(err_.kind == ErrorKind::Incomplete);      \
    } while (0)

std::vector<std::string> spans_of(const std::string& text) {
    Source src("<test>", text);
    std::vector<std::string> out;
    for (auto span : split_statements(src)) out.push_back(text.substr(span.begin, span.end - span.begin));
    return out;
}

using Strings = std::vector<std::string>;

}  // namespace

// ------------------------------------------------------------------ lexer

TEST_CASE("lexer: tokens, offsets and preceding whitespace") {
    auto src = source("f a[i] -- note\n  [1, 2]");
    auto toks = tokenize(src, 0, src->text.size());
    REQUIRE(toks.size() == 11);
    CHECK(toks[0].is(TokenKind::Ident, "f"));
    CHECK(toks[1].space_before);
    CHECK(toks[2].is_symbol("["));
    CHECK_FALSE(toks[2].space_before);
    CHECK(toks[2].offset == 3);
    CHECK(toks[5].is_symbol("["));
    CHECK(toks[5].space_before);  // a comment and a newline precede it
    CHECK(toks[5].offset == 17);
    CHECK(toks[10].kind == TokenKind::End);
    CHECK(toks[10].offset == src->text.size());
}

TEST_CASE("lexer: keywords, identifiers with primes, wildcard") {
    auto src = source("let x' = _ in with_x _y true");
    auto toks = tokenize(src, 0, src->text.size());
    CHECK(toks[0].is_keyword("let"));
    CHECK(toks[1].is(TokenKind::Ident, "x'"));
    CHECK(toks[3].is_symbol("_"));
    CHECK(toks[4].is_keyword("in"));
    CHECK(toks[5].is(TokenKind::Ident, "with_x"));
    CHECK(toks[6].is(TokenKind::Ident, "_y"));
    CHECK(toks[7].is_keyword("true"));
}

TEST_CASE("lexer: numbers") {
    auto src = source("42 3.14 1e-3 2.5e10 1. 7E2");
    auto toks = tokenize(src, 0, src->text.size());
    CHECK(toks[0].kind == TokenKind::Int);
    CHECK(toks[0].int_value == 42);
    CHECK(toks[1].kind == TokenKind::Float);
    CHECK(toks[1].float_value == 3.14);
    CHECK(toks[2].float_value == 1e-3);
    CHECK(toks[3].float_value == 2.5e10);
    CHECK(toks[4].kind == TokenKind::Float);
    CHECK(toks[4].text == "1.");
    CHECK(toks[5].float_value == 700.0);
}

TEST_CASE("lexer: strings and escapes") {
    auto src = source(R"("a.npy" "q\"b\\s\n\t")");
    auto toks = tokenize(src, 0, src->text.size());
    CHECK(toks[0].is(TokenKind::String, "a.npy"));
    CHECK(toks[0].length == 7);
    CHECK(toks[1].text == "q\"b\\s\n\t");
}

TEST_CASE("lexer: every operator is one token") {
    std::string ops = "|> || && == != < <= > >= ++ | ^ & << >> + - * / % ** ! ~ ( ) [ ] , : = -> \\ _ .";
    auto src = source(ops);
    auto toks = tokenize(src, 0, ops.size());
    std::string joined;
    for (const auto& t : toks) {
        if (t.kind == TokenKind::End) break;
        CHECK(t.kind == TokenKind::Symbol);
        joined += (joined.empty() ? "" : " ") + t.text;
    }
    CHECK(joined == ops);
}

TEST_CASE("lexer: errors point at the offending text") {
    auto lex_error = [](const std::string& text) {
        auto src = source(text);
        try {
            tokenize(src, 0, text.size());
        } catch (const Error& e) {
            return e;
        }
        FAIL("no error for: " << text);
        return Error(ErrorKind::Internal, Loc{}, "");
    };
    Error e = lex_error("x + $y");
    CHECK(e.kind == ErrorKind::Syntax);
    CHECK(e.message == "unexpected character '$'");
    CHECK(where(e) == "1:5");
    e = lex_error("load \"a.npy");
    CHECK(e.message == "unterminated string (a string ends on the line it starts)");
    CHECK(where(e) == "1:6");
    CHECK(e.loc.length == 6);
    e = lex_error("f\n  12abc");
    CHECK(e.message == "malformed number '12abc'");
    CHECK(where(e) == "2:3");
    CHECK(e.loc.length == 5);
    e = lex_error("1e+");
    CHECK(e.message == "malformed number '1e+'");
    e = lex_error("1.5.2");
    CHECK(e.message == "malformed number '1.5.2'");
    e = lex_error("\"a\\qb\"");
    CHECK(e.message == "unknown escape '\\q' in string (use \\\" \\\\ \\n or \\t)");
    CHECK(where(e) == "1:3");
    e = lex_error("99999999999999999999");
    CHECK(e.message == "integer literal 99999999999999999999 is too large");
}

// ------------------------------------------------------------------ expressions

TEST_CASE("literals and variables") {
    CHECK(expr("42") == "42");
    CHECK(expr("3.14") == "3.14");
    CHECK(expr("true") == "true");
    CHECK(expr("\"a.npy\"") == "\"a.npy\"");
    CHECK(expr("xs'") == "xs'");
}

TEST_CASE("precedence and associativity") {
    CHECK(expr("1 + 2 * 3") == "(+ 1 (* 2 3))");
    CHECK(expr("1 * 2 + 3") == "(+ (* 1 2) 3)");
    CHECK(expr("a - b - c") == "(- (- a b) c)");
    CHECK(expr("a / b % c") == "(% (/ a b) c)");
    CHECK(expr("2 ** 3 ** 2") == "(** 2 (** 3 2))");
    CHECK(expr("-x ** 2") == "(** (negate x) 2)");
    CHECK(expr("2 ** -1") == "(** 2 (negate 1))");
    CHECK(expr("a ++ b ++ c") == "(++ a (++ b c))");
    CHECK(expr("a | b ^ c & d") == "(& (^ (| a b) c) d)");
    CHECK(expr("a << 1 + 2") == "(<< a (+ 1 2))");
    CHECK(expr("a & b << c") == "(& a (<< b c))");
    CHECK(expr("x ++ y | z") == "(++ x (| y z))");
    CHECK(expr("a < b ++ c") == "(< a (++ b c))");
    CHECK(expr("a == b && c != d || e") == "(|| (&& (== a b) (!= c d)) e)");
    CHECK(expr("a <= b || c >= d && e > f") == "(|| (<= a b) (&& (>= c d) (> e f)))");
    CHECK(expr("!a && ~b == -c") == "(&& (! a) (== (~ b) (negate c)))");
    CHECK(expr("- - x") == "(negate (negate x))");
}

TEST_CASE("application binds tighter than operators and is curried") {
    CHECK(expr("f x y") == "((f x) y)");
    CHECK(expr("f x + g y") == "(+ (f x) (g y))");
    CHECK(expr("-f x") == "(negate (f x))");
    CHECK(expr("f -1") == "(- f 1)");
    CHECK(expr("f (-1)") == "(f (negate 1))");
    CHECK(expr("sum (iota 10)") == "(sum (iota 10))");
    CHECK(expr("f true 1.5 \"s\"") == "(((f true) 1.5) \"s\")");
}

TEST_CASE("pipe") {
    CHECK(expr("x |> f |> g") == "(g (f x))");
    CHECK(expr("x |> map f |> sum") == "(sum ((map f) x))");
    CHECK(expr("a + b |> f") == "(f (+ a b))");
    auto src = source("x |> f");
    ExprPtr e = parse_expression(src, 0, 6);
    CHECK(e->kind == ExprKind::App);
    CHECK(e->loc.col == 3);
    CHECK(e->loc.length == 2);
}

TEST_CASE("indexing versus array literal arguments") {
    CHECK(expr("a[i]") == "(index a i)");
    CHECK(expr("min a[i] a[p]") == "((min (index a i)) (index a p))");
    CHECK(expr("f a [1, 2]") == "((f a) [1 2])");
    CHECK(expr("m[i, j]") == "(index m i j)");
    CHECK(expr("m[i][j]") == "(index (index m i) j)");
    CHECK(expr("(f x)[0]") == "(index (f x) 0)");
    CHECK(expr("-a[i]") == "(negate (index a i))");
    CHECK(expr("a[i + 1] * 2") == "(* (index a (+ i 1)) 2)");
    CHECK(expr("[1, 2, 3][1]") == "(index [1 2 3] 1)");
}

TEST_CASE("slices") {
    CHECK(expr("a[lo:hi]") == "(index a lo:hi:)");
    CHECK(expr("a[lo:hi:step]") == "(index a lo:hi:step)");
    CHECK(expr("a[1:]") == "(index a 1::)");
    CHECK(expr("a[:-1]") == "(index a :(negate 1):)");
    CHECK(expr("a[::2]") == "(index a ::2)");
    CHECK(expr("a[::-1]") == "(index a ::(negate 1))");
    CHECK(expr("a[:]") == "(index a ::)");
    CHECK(expr("m[1:-1, 1:-1]") == "(index m 1:(negate 1): 1:(negate 1):)");
    CHECK(expr("m[i, :]") == "(index m i ::)");
    CHECK(expr("m[:, j]") == "(index m :: j)");
    CHECK(expr("x[1:] - x[:-1]") == "(- (index x 1::) (index x :(negate 1):))");
}

TEST_CASE("functional update with 'with'") {
    CHECK(expr("a with [i] = v") == "(with a [i] v)");
    CHECK(expr("m with [1:-1, 1:-1] = e") == "(with m [1:(negate 1): 1:(negate 1):] e)");
    CHECK(expr("a with [0] = 1 with [1] = 2") == "(with (with a [0] 1) [1] 2)");
    CHECK(expr("a with [i] = x + 1") == "(with a [i] (+ x 1))");
    CHECK(expr("a with [i] = b || c") == "(with a [i] (|| b c))");
    CHECK(expr("a with [i] = v |> f") == "(f (with a [i] v))");
    CHECK(expr("a ++ b with [0] = 1") == "(with (++ a b) [0] 1)");
}

TEST_CASE("array literals") {
    CHECK(expr("[1, 2, 3]") == "[1 2 3]");
    CHECK(expr("[[1.0, 2.0], [3.0, 4.0]]") == "[[1.0 2.0] [3.0 4.0]]");
    CHECK(expr("[]") == "[]");
    CHECK(expr("[f x, -1]") == "[(f x) (negate 1)]");
}

TEST_CASE("tuples, unit, parentheses, annotations") {
    CHECK(expr("(a, b)") == "(tuple a b)");
    CHECK(expr("(1, (2, 3), x)") == "(tuple 1 (tuple 2 3) x)");
    CHECK(expr("()") == "(tuple)");
    CHECK(expr("(min)") == "min");
    CHECK(expr("((x))") == "x");
    CHECK(expr("(x : [float])") == "(: x [float])");
    CHECK(expr("(x : int, y)") == "(tuple (: x int) y)");
    CHECK(expr("(f : a -> [a] -> (a, int))") == "(: f ('a -> (['a] -> ('a, int))))");
}

TEST_CASE("operator values and sections") {
    for (std::string op : {"+", "-", "*", "/", "%", "**", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "&", "|",
                           "^", "<<", ">>", "++"})
        CHECK(expr("(" + op + ")") == op);
    CHECK(expr("scan (+) 0 [1, 2, 3, 4]") == "(((scan +) 0) [1 2 3 4])");
    CHECK(expr("(+ 1)") == "(\\ 'x -> (+ 'x 1))");
    CHECK(expr("(2 *)") == "(\\ 'x -> (* 2 'x))");
    CHECK(expr("(a * b +)") == "(\\ 'x -> (+ (* a b) 'x))");
}

TEST_CASE("minus in parentheses is negation, not a section") {
    CHECK(expr("(- 1)") == "(negate 1)");
    CHECK(expr("(-1)") == "(negate 1)");
    CHECK(expr("(-)") == "-");
    CHECK(expr("(x -)") == "(\\ 'x -> (- x 'x))");
}

TEST_CASE("lambdas") {
    CHECK(expr("\\x y -> x + y") == "(\\ x y -> (+ x y))");
    CHECK(expr("\\(a, b) -> a") == "(\\ (a, b) -> a)");
    CHECK(expr("\\_ -> 0") == "(\\ _ -> 0)");
    CHECK(expr("\\(x : float) -> x") == "(\\ (x : float) -> x)");
    CHECK(expr("\\(x : int) (p, _) -> x") == "(\\ (x : int) (p, _) -> x)");
    CHECK(expr("\\x -> x |> f") == "(\\ x -> (f x))");
    CHECK(expr("map (\\s -> (s + 1.0, s - 1.0)) xs") ==
          "((map (\\ s -> (tuple (+ s 1.0) (- s 1.0)))) xs)");
    CHECK(expr("filter (\\x -> x % 2 == 0) (iota 10)") == "((filter (\\ x -> (== (% x 2) 0))) (iota 10))");
    CHECK(expr("1 + \\x -> x") == "(+ 1 (\\ x -> x))");
}

TEST_CASE("let expressions") {
    CHECK(expr("let x = 1 in x + 1") == "(let x 1 (+ x 1))");
    CHECK(expr("let (c, p) = f xs in c") == "(let (c, p) (f xs) c)");
    CHECK(expr("let f a b = a * b in f 2 3") == "(let f (\\ a b -> (* a b)) ((f 2) 3))");
    CHECK(expr("let x : [float] = e in x") == "(let (x : [float]) e x)");
    CHECK(expr("let x = let y = 1 in y in x") == "(let x (let y 1 y) x)");
}

TEST_CASE("if") {
    CHECK(expr("if c then a else b") == "(if c a b)");
    CHECK(expr("if a < b then f a else g b + 1") == "(if (< a b) (f a) (+ (g b) 1))");
    CHECK(expr("if p then if q then 1 else 2 else 3") == "(if p (if q 1 2) 3)");
}

TEST_CASE("loops") {
    CHECK(expr("loop x = x0 for i < k do x + i") == "(loop-for x x0 i k (+ x i))");
    CHECK(expr("loop x = x0 while x < 10 do x * 2") == "(loop-while x x0 (< x 10) (* x 2))");
    CHECK(expr("loop (a, b) = (0, 1) for i < n do (b, a + b)") ==
          "(loop-for (a, b) (tuple 0 1) i n (tuple b (+ a b)))");
    CHECK(expr("loop x : float = 0.0 for i < n - 1 do f x") == "(loop-for (x : float) 0.0 i (- n 1) (f x))");
}

// ------------------------------------------------------------------ types

TEST_CASE("type annotations") {
    CHECK(expr("(x : int)") == "(: x int)");
    CHECK(expr("(x : long)") == "(: x long)");
    CHECK(expr("(x : double)") == "(: x double)");
    CHECK(expr("(x : bool)") == "(: x bool)");
    CHECK(expr("(x : [[float]])") == "(: x [[float]])");
    CHECK(expr("(x : [[[int]]])") == "(: x [[[int]]])");
    CHECK(expr("(x : (float, [int]))") == "(: x (float, [int]))");
    CHECK(expr("(x : ())") == "(: x ())");
    CHECK(expr("(x : (int))") == "(: x int)");
    CHECK(expr("(f : int -> int -> int)") == "(: f (int -> (int -> int)))");
    CHECK(expr("(f : (int -> int) -> int)") == "(: f ((int -> int) -> int))");
    CHECK(expr("(x : [(int, float)])") == "(: x ([int], [float]))");
    auto src = source("(x : a -> a)");
    ExprPtr e = parse_expression(src, 0, src->text.size());
    REQUIRE(e->annotation->kind == TypeKind::Func);
    CHECK(e->annotation->args[0]->kind == TypeKind::Var);
    CHECK(e->annotation->args[0]->id == -1);
    CHECK(e->annotation->args[0]->name == "a");
}

// ------------------------------------------------------------------ statements

TEST_CASE("statements") {
    CHECK(stmt("let x = 1") == "(let! x 1)");
    CHECK(stmt("let f a b = a + b") == "(let! f (\\ a b -> (+ a b)))");
    CHECK(stmt("let fwd x = x[1:] - x[:-1]") == "(let! fwd (\\ x -> (- (index x 1::) (index x :(negate 1):))))");
    CHECK(stmt("let (c, p) = map g xs") == "(let! (c, p) ((map g) xs))");
    CHECK(stmt("let x : [float] = e") == "(let! (x : [float]) e)");
    CHECK(stmt("let f (x : [float]) (a : float) : [float] = x") ==
          "(let! f (\\ (x : [float]) (a : float) -> x : [float]))");
    CHECK(stmt("let id (x : a) : a = x") == "(let! id (\\ (x : 'a) -> x : 'a))");
    CHECK(stmt("let _ = 1") == "(let! _ 1)");
    CHECK(stmt("let x = 1 in x") == "(let x 1 x)");
    CHECK(stmt("sum (iota 10)") == "(sum (iota 10))");
    CHECK(stmt("  fwd [1.0, 4.0]  -- comment") == "(fwd [1.0 4.0])");
}

TEST_CASE("statement kinds and locations") {
    auto src = source("x = 1\nlet f a = a");
    StmtPtr s = parse_statement(src, {6, src->text.size()});
    CHECK(s->kind == StmtKind::Let);
    CHECK(s->loc.line == 2);
    CHECK(s->loc.col == 1);
    CHECK(s->pattern->kind == PatternKind::Var);
    CHECK(s->expr->kind == ExprKind::Lambda);
    CHECK(s->expr->loc.col == 5);
    s = statement("sum xs");
    CHECK(s->kind == StmtKind::Expr);
}

TEST_CASE("commands") {
    CHECK(stmt(":type map") == ":type [map]");
    CHECK(stmt(":seed 7") == ":seed [7]");
    CHECK(stmt(":set print 50  ") == ":set [print 50]");
    CHECK(stmt(":quit") == ":quit []");
    CHECK(stmt("  :load \"a b.shoal\"") == ":load [\"a b.shoal\"]");
    StmtPtr s = statement(":type  \\x -> x $");  // the argument is not lexed here
    CHECK(s->argument_loc.col == 8);
    CHECK(s->loc.col == 1);
    CHECK(s->loc.length == 5);
    CHECK_SYNTAX_ERROR(": x", "expected a command name after ':' (try :help)", "1:1");
    CHECK_SYNTAX_ERROR("x :type", "unexpected ':'", "1:3");
}

TEST_CASE("parse_expression takes exactly one expression") {
    auto src = source("let y = 1 + 2 3 )");
    CHECK(show(parse_expression(src, 8, 13)) == "(+ 1 2)");
    try {
        parse_expression(src, 8, src->text.size());
        FAIL("expected an error");
    } catch (const Error& e) {
        CHECK(e.kind == ErrorKind::Syntax);
        CHECK(e.message == "unexpected ')'");
        CHECK(where(e) == "1:17");
    }
    try {
        parse_expression(src, 8, 8);
        FAIL("expected an error");
    } catch (const Error& e) {
        CHECK(e.kind == ErrorKind::Incomplete);
    }
}

TEST_CASE("clone_expr is deep") {
    auto src = source("let f (a, b) = a[1:n] with [0] = \\x -> x");
    StmtPtr s = parse_statement(src, {0, src->text.size()});
    ExprPtr copy = clone_expr(s->expr);
    CHECK(show(copy) == show(s->expr));
    CHECK(copy != s->expr);
    CHECK(copy->kids[0] != s->expr->kids[0]);
    CHECK(copy->params[0] != s->expr->params[0]);
    CHECK(copy->params[0]->elems[0] != s->expr->params[0]->elems[0]);
    ExprPtr index = copy->kids[0]->kids[0];
    REQUIRE(index->kind == ExprKind::Index);
    CHECK(index->indices[0].hi != s->expr->kids[0]->kids[0]->indices[0].hi);
    copy->kids[0]->text = "changed";
    CHECK(s->expr->kids[0]->text == "");
}

// ------------------------------------------------------------------ layout

TEST_CASE("layout: one statement per unindented line") {
    CHECK(spans_of("let x = 1\nlet y = 2\nx + y") == Strings{"let x = 1", "let y = 2", "x + y"});
    CHECK(spans_of("") == Strings{});
    CHECK(spans_of("\n  \n-- only a comment\n") == Strings{});
}

TEST_CASE("layout: indented lines continue a statement") {
    CHECK(spans_of("let f x =\n  x + 1\nf 2") == Strings{"let f x =\n  x + 1", "f 2"});
    CHECK(spans_of("let f x =\n\n  -- why\n  x + 1\n") == Strings{"let f x =\n\n  -- why\n  x + 1"});
    CHECK(spans_of("a\n\tb\nc") == Strings{"a\n\tb", "c"});
    CHECK(spans_of("  x\ny") == Strings{"x", "y"});
}

TEST_CASE("layout: open brackets continue a statement") {
    CHECK(spans_of("let xs = [1,\n2,\n3]\nsum xs") == Strings{"let xs = [1,\n2,\n3]", "sum xs"});
    CHECK(spans_of("f (a,\nb\n)\ng") == Strings{"f (a,\nb\n)", "g"});
    CHECK(spans_of("f \"(\"\ng") == Strings{"f \"(\"", "g"});
    CHECK(spans_of("f x -- (\ng") == Strings{"f x", "g"});
    CHECK(spans_of("f ) (\nx\n") == Strings{"f ) (\nx"});
}

TEST_CASE("layout: spans parse in place") {
    std::string text = "let a = 1 -- one\n\nlet f x =\n  x * a\nf 2\n";
    auto src = source(text);
    auto spans = split_statements(*src);
    REQUIRE(spans.size() == 3);
    StmtPtr s = parse_statement(src, spans[1]);
    CHECK(s->loc.line == 3);
    CHECK(show(s->expr) == "(\\ x -> (* x a))");
    CHECK(s->expr->kids[0]->loc.line == 4);
    CHECK(s->expr->kids[0]->loc.col == 5);
}

// ------------------------------------------------------------------ completeness

TEST_CASE("check_input") {
    CHECK(check_input("", false) == InputStatus::Complete);
    CHECK(check_input("  -- just a comment\n", true) == InputStatus::Complete);
    CHECK(check_input("sum (iota 10)", false) == InputStatus::Complete);
    CHECK(check_input("let x = 1\nlet y = x\n", false) == InputStatus::Complete);
    CHECK(check_input(":type map", false) == InputStatus::Complete);
    CHECK(check_input("let f x =\n  x + 1", false) == InputStatus::Complete);

    CHECK(check_input("let x =", false) == InputStatus::Incomplete);
    CHECK(check_input("f (1, 2", false) == InputStatus::Incomplete);
    CHECK(check_input("[1, 2,", false) == InputStatus::Incomplete);
    CHECK(check_input("if c then 1", false) == InputStatus::Incomplete);
    CHECK(check_input("\\x ->", false) == InputStatus::Incomplete);
    CHECK(check_input("1 +", false) == InputStatus::Incomplete);
    CHECK(check_input("let x = 1 in", false) == InputStatus::Incomplete);
    CHECK(check_input("loop x = 0 for i < 3", false) == InputStatus::Incomplete);
    CHECK(check_input("a with [0]", false) == InputStatus::Incomplete);
    CHECK(check_input("let x = 1\nlet y =", false) == InputStatus::Incomplete);
    CHECK(check_input("let f x =\n", true) == InputStatus::Incomplete);
    CHECK(check_input("let f x =\nx + 1", true) == InputStatus::Complete);

    CHECK(check_input("let x = )", false) == InputStatus::Invalid);
    CHECK(check_input("1 + + 2 )", false) == InputStatus::Invalid);
    CHECK(check_input("let x =\nlet y = 2", false) == InputStatus::Invalid);
    CHECK(check_input("load \"a.npy", false) == InputStatus::Invalid);
    CHECK(check_input("x $ y", false) == InputStatus::Invalid);
    CHECK(check_input("a < b < c", false) == InputStatus::Invalid);
}

// ------------------------------------------------------------------ syntax errors

TEST_CASE("syntax errors say what was expected and where") {
    CHECK_SYNTAX_ERROR("if c else 1", "expected 'then' after the condition of 'if', found 'else'", "1:6");
    CHECK_SYNTAX_ERROR("if c then 1 then 2", "expected 'else' after the 'then' branch of 'if', found 'then'", "1:13");
    CHECK_SYNTAX_ERROR("f x)", "unexpected ')'", "1:4");
    CHECK_SYNTAX_ERROR("let x = = 1", "expected an expression, found '='", "1:9");
    CHECK_SYNTAX_ERROR("1 + * 2", "expected an expression, found '*'", "1:5");
    CHECK_SYNTAX_ERROR("a < b < c", "comparison operators cannot be chained: '<' follows another comparison", "1:7");
    CHECK_SYNTAX_ERROR("a == b != c", "comparison operators cannot be chained: '!=' follows another comparison",
                       "1:8");
    CHECK_SYNTAX_ERROR("let 1 = 2", "expected a name or a pattern after 'let', found '1'", "1:5");
    CHECK_SYNTAX_ERROR("let f x y + 1", "expected '=' in the definition of 'f', found '+'", "1:11");
    CHECK_SYNTAX_ERROR("let (a, b c) = t", "expected ')' after the last element of the tuple pattern, found 'c'",
                       "1:11");
    CHECK_SYNTAX_ERROR("\\ -> 1", "expected a parameter after '\\', found '->'", "1:3");
    CHECK_SYNTAX_ERROR("\\x : int -> x", "expected '->' after the parameters of the lambda, found ':'", "1:4");
    CHECK_SYNTAX_ERROR("loop x = 0 until c do x",
                       "expected 'for' or 'while' after the initial value of 'loop', found 'do'", "1:20");
    CHECK_SYNTAX_ERROR("loop x = 0 for 1 < n do x", "expected the name of the loop counter after 'for', found '1'",
                       "1:16");
    CHECK_SYNTAX_ERROR("loop x = 0 for i <= n do x",
                       "expected '<' after the loop counter (loop x = x0 for i < n do ...), found '<='", "1:18");
    CHECK_SYNTAX_ERROR("a[]", "expected an index or a slice, found ']'", "1:3");
    CHECK_SYNTAX_ERROR("a[1 then]", "expected ',' or ']' in the index list, found 'then'", "1:5");
    CHECK_SYNTAX_ERROR("a[1:2:3:4]", "expected ',' or ']' in the index list, found ':'", "1:8");
    CHECK_SYNTAX_ERROR("[1, 2 then", "expected ']' to close the array literal, found 'then'", "1:7");
    CHECK_SYNTAX_ERROR("(1, 2 then", "expected ')' after the last element of the tuple, found 'then'", "1:7");
    CHECK_SYNTAX_ERROR("(1 then", "expected ',' or ')', found 'then'", "1:4");
    CHECK_SYNTAX_ERROR("(a + b *)", "expected an expression after '*', found ')'", "1:9");
    CHECK_SYNTAX_ERROR("(* a + b)", "expected ')' to close the operator section, found '+'", "1:6");
    CHECK_SYNTAX_ERROR("x with i = 1", "expected '[' after 'with', found 'i'", "1:8");
    CHECK_SYNTAX_ERROR("a with [0] 1", "expected '=' after the index list of 'with', found '1'", "1:12");
    CHECK_SYNTAX_ERROR("(x : Foo)", "unknown type 'Foo'", "1:6");
    CHECK_SYNTAX_ERROR("(x : [[[[int]]]])", "arrays have rank at most 3", "1:6");
    CHECK_SYNTAX_ERROR("(x : [int -> int])", "array elements must be scalars or tuples of scalars", "1:6");
    CHECK_SYNTAX_ERROR("(x : 3)", "expected a type, found '3'", "1:6");
    CHECK_SYNTAX_ERROR("f _", "'_' can only be used in a pattern (it ignores a value)", "1:3");
    CHECK_SYNTAX_ERROR("let f x =\n  x +\n  then", "expected an expression, found 'then'", "3:3");
    CHECK_SYNTAX_ERROR("sum xs\n  + ys $", "unexpected character '$'", "2:8");
}

TEST_CASE("deep nesting is an error, not a crash") {
    CHECK(expr(std::string(100, '(') + "1" + std::string(100, ')')) == "1");
    Error e = error_of(std::string(100000, '(') + "1" + std::string(100000, ')'));
    CHECK(e.message == "expression nested too deeply");
    std::string negations;
    for (int i = 0; i < 100000; ++i) negations += "- ";  // "--" would start a comment
    e = error_of(negations + "1");
    CHECK(e.message == "expression nested too deeply");
    e = error_of("(x : " + std::string(100000, '(') + "int" + std::string(100000, ')') + ")");
    CHECK(e.message == "expression nested too deeply");
    e = error_of("\\" + std::string(100000, '(') + "x" + std::string(100000, ')') + " -> x");
    CHECK(e.message == "expression nested too deeply");
}

TEST_CASE("syntax errors carry hints") {
    Error e = error_of("f x \\y -> y");
    CHECK(e.message == "unexpected '\\'");
    CHECK(where(e) == "1:5");
    REQUIRE(e.notes.size() == 1);
    CHECK(e.notes[0].find("parentheses") != std::string::npos);
    e = error_of("x = 1");
    CHECK(e.message == "unexpected '='");
    REQUIRE(e.notes.size() == 1);
    CHECK(e.notes[0].find("let") != std::string::npos);
    e = error_of("a < b < c");
    REQUIRE(e.notes.size() == 1);
    CHECK(e.notes[0] == "write 'a < b && b < c' instead of 'a < b < c'");
}

TEST_CASE("input that stops early is Incomplete, located at its end") {
    Error e = error_of("let x =");
    CHECK(e.kind == ErrorKind::Incomplete);
    CHECK(e.message == "unexpected end of input: expected an expression");
    CHECK(where(e) == "1:8");
    e = error_of("if c then 1");
    CHECK(e.kind == ErrorKind::Incomplete);
    CHECK(e.message == "unexpected end of input: expected 'else' after the 'then' branch of 'if'");
    e = error_of("f (1,\n   2");
    CHECK(e.kind == ErrorKind::Incomplete);
    CHECK(e.message == "unexpected end of input: expected ')' after the last element of the tuple");
    CHECK(where(e) == "2:5");
    CHECK_INCOMPLETE("[");
    CHECK_INCOMPLETE("\\x ->");
    CHECK_INCOMPLETE("\\x y");
    CHECK_INCOMPLETE("x |>");
    CHECK_INCOMPLETE("2 **");
    CHECK_INCOMPLETE("-");
    CHECK_INCOMPLETE("let f x");
    CHECK_INCOMPLETE("let (a, b");
    CHECK_INCOMPLETE("loop x = 0 while x < 3 do");
    CHECK_INCOMPLETE("a[1:");
    CHECK_INCOMPLETE("(x : [float]");
    CHECK_INCOMPLETE("(x : int ->");
    CHECK_INCOMPLETE("let x = 1 in");
}
