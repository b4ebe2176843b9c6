// Unit tests of the reference evaluator (lang/eval.cpp, builtins_eval.cpp,
// array_ops.cpp): programs are parsed, type checked and evaluated, and their
// printed values compared. Every builtin is covered with its edge cases.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <string>

#include "lang/builtins_eval.h"
#include "lang/eval.h"
#include "lang/format.h"
#include "lang/io.h"
#include "lang/parser.h"
#include "lang/random.h"
#include "lang/typecheck.h"

using namespace shoal;

namespace {

// A minimal session: statements are checked and evaluated in order; `let`s
// become globals (generalised functions are specialised on use).
struct Shoal {
    Globals globals;
    TypeEnvironment types;
    EvalContext ctx;

    Shoal() {
        ctx.globals = &globals;
        // No static typing of files: `load` takes its type from the program,
        // so the evaluator's own dtype/rank check is exercised.
        types.load_typer = [](const std::string&, const Loc&) { return Type(); };
    }

    void let(const Stmt& s) {
        auto names = check_let(s, types);
        if (names.size() == 1 && names[0].second->polymorphic()) {
            auto b = std::make_shared<Binding>();
            b->scheme = names[0].second;
            b->generic = s.expr;
            globals[names[0].first] = b;
            types.globals[names[0].first] = names[0].second;
            return;
        }
        const auto values = bind_pattern(s.pattern, evaluate(s.expr, ctx));
        for (size_t k = 0; k < names.size(); ++k) {
            auto b = std::make_shared<Binding>();
            b->scheme = names[k].second;
            b->value = values[k].second;
            globals[names[k].first] = b;
            types.globals[names[k].first] = names[k].second;
        }
    }

    // Runs the statements of `text`; returns the printed value of the last expression.
    std::string run(const std::string& text) {
        auto src = std::make_shared<const Source>("<test>", text);
        std::string printed;
        for (const StatementSpan& span : split_statements(*src)) {
            StmtPtr s = parse_statement(src, span);
            if (s->kind == StmtKind::Let) {
                let(*s);
            } else {
                check_expression(s->expr, types);
                printed = format_value(evaluate(s->expr, ctx));
            }
        }
        return printed;
    }

    // The message of the runtime (or I/O) error `text` raises.
    std::string error(const std::string& text, ErrorKind kind = ErrorKind::Runtime) {
        try {
            run(text);
        } catch (const Error& e) {
            CHECK_MESSAGE(e.kind == kind, "wrong error kind for: " << text << ": " << e.message);
            return e.message;
        }
        FAIL("no error from: " << text);
        return "";
    }
};

std::string run(const std::string& text) { return Shoal().run(text); }
std::string error(const std::string& text) { return Shoal().error(text); }

}  // namespace

TEST_CASE("eval: the issue's examples") {
    CHECK(run("sum (iota 10)") == "45");
    CHECK(run("scan (+) 0 [1, 2, 3, 4]") == "[1, 3, 6, 10]");
    CHECK(run("filter (\\x -> x % 2 == 0) (iota 10)") == "[0, 2, 4, 6, 8]");
    CHECK(run("let fwd x = x[1:] - x[:-1]\nfwd [1.0, 4.0, 9.0, 16.0]") == "[3.0, 5.0, 7.0]");
}

TEST_CASE("eval: literals take their inferred type") {
    CHECK(run("42") == "42");
    CHECK(run("3.14") == "3.14");
    CHECK(run("(3.14 : double)") == "3.14");
    CHECK(run("(0.1 : float)") == "0.1");
    CHECK(run("(2 : double)") == "2.0");
    CHECK(run("(3000000000 : long)") == "3000000000");
    CHECK(run("-2147483647") == "-2147483647");
    CHECK(run("-1.5") == "-1.5");
    CHECK(run("true") == "true");
    CHECK(run("(1, 2.5, false)") == "(1, 2.5, false)");
}

TEST_CASE("eval: integer arithmetic wraps; division by zero gives 0") {
    CHECK(run("2147483647 + 1") == "-2147483648");
    CHECK(run("-2147483647 - 2") == "2147483647");
    CHECK(run("65536 * 65536") == "0");
    CHECK(run("(9223372036854775807 : long) + 1") == "-9223372036854775808");
    CHECK(run("-7 / 2") == "-3");
    CHECK(run("-7 % 2") == "-1");
    CHECK(run("7 % -2") == "1");
    CHECK(run("7 / 0") == "0");
    CHECK(run("7 % 0") == "0");
    const std::string min_int = "let m = -2147483647 - 1 in ";
    CHECK(run(min_int + "m / -1") == "-2147483648");
    CHECK(run(min_int + "m % -1") == "0");
    CHECK(run(min_int + "-m") == "-2147483648");
    CHECK(run(min_int + "abs m") == "-2147483648");
    CHECK(run("abs (-5)") == "5");
}

TEST_CASE("eval: floating arithmetic is IEEE") {
    CHECK(run("1.0 / 0.0") == "inf");
    CHECK(run("-1.0 / 0.0") == "-inf");
    CHECK(run("0.0 / 0.0") == "nan");
    CHECK(run("7.5 % 2.0") == "1.5");
    CHECK(run("-7.5 % 2.0") == "-1.5");
    CHECK(run("0.1 + 0.2") == "0.3");  // float: rounds to 0.3f
    CHECK(run("(0.1 + 0.2 : double)") == "0.30000000000000004");
}

TEST_CASE("eval: ** by repeated squaring on integers, pow on floats") {
    CHECK(run("2 ** 10") == "1024");
    CHECK(run("3 ** 0") == "1");
    CHECK(run("2 ** 31") == "-2147483648");
    CHECK(run("2 ** 32") == "0");
    CHECK(run("2 ** -1") == "0");
    CHECK(run("1 ** -5") == "1");
    CHECK(run("-1 ** -3") == "-1");
    CHECK(run("(-1) ** -3") == "-1");
    CHECK(run("(-1) ** -4") == "1");
    CHECK(run("0 ** -1") == "0");
    CHECK(run("(3 : long) ** 40") == "-6289078614652622815");  // 3^40 wraps
    CHECK(run("(3 : long) ** 39") == "4052555153018976267");
    CHECK(run("2.0 ** 0.5") == "1.4142135");
    CHECK(run("pow 2.0 10.0") == "1024.0");
    CHECK(run("[1, 2, 3] ** 2") == "[1, 4, 9]");
}

TEST_CASE("eval: bitwise operators and shifts modulo the bit width") {
    CHECK(run("5 & 3") == "1");
    CHECK(run("5 | 3") == "7");
    CHECK(run("5 ^ 3") == "6");
    CHECK(run("~0") == "-1");
    CHECK(run("1 << 4") == "16");
    CHECK(run("1 << 31") == "-2147483648");
    CHECK(run("1 << 32") == "1");
    CHECK(run("1 << 33") == "2");
    CHECK(run("(1 : long) << 33") == "8589934592");
    CHECK(run("-8 >> 1") == "-4");
    CHECK(run("-1 >> 40") == "-1");
    CHECK(run("256 >> 36") == "16");
    CHECK(run("[1, 2, 4] << 1") == "[2, 4, 8]");
}

TEST_CASE("eval: comparisons, logic and NaN") {
    CHECK(run("1 < 2") == "true");
    CHECK(run("2 <= 1") == "false");
    CHECK(run("1.5 >= 1.5") == "true");
    CHECK(run("3 != 3") == "false");
    CHECK(run("true == false") == "false");
    CHECK(run("let nan = 0.0 / 0.0 in (nan == nan, nan != nan, nan < 1.0, nan >= 1.0)") ==
          "(false, true, false, false)");
    CHECK(run("max (0.0 / 0.0) 1.0") == "1.0");
    CHECK(run("min 1.0 (0.0 / 0.0)") == "1.0");
    CHECK(run("min 3 (-4)") == "-4");
    CHECK(run("max [1, 5, 3] 2") == "[2, 5, 3]");
    CHECK(run("!true") == "false");
    CHECK(run("true && false || true") == "true");
    CHECK(run("[true, false] && true") == "[true, false]");
    CHECK(run("!([1, 2] > 1)") == "[true, false]");
}

TEST_CASE("eval: && and || short-circuit on scalars") {
    CHECK(run("false && [1, 2][5] == 1") == "false");
    CHECK(run("true || [1, 2][5] == 1") == "true");
    CHECK(run("false && [true, false]") == "[false, false]");
    CHECK(run("true || [true, false]") == "[true, true]");
    CHECK(error("true && [1, 2][5] == 1") == "index 5 is out of bounds for axis 0 with extent 2");
}

TEST_CASE("eval: elementwise operators broadcast by NumPy's rules") {
    CHECK(run("[1, 2, 3] + 1") == "[2, 3, 4]");
    CHECK(run("10 - [1, 2, 3]") == "[9, 8, 7]");
    CHECK(run("2.0 * [1.0, 2.5]") == "[2.0, 5.0]");
    CHECK(run("[1, 2, 3] * [4, 5, 6]") == "[4, 10, 18]");
    CHECK(run("[[1, 2], [3, 4]] + [[10, 20], [30, 40]]") == "[[11, 22], [33, 44]]");
    CHECK(run("[[1, 2], [3, 4]] * 2") == "[[2, 4], [6, 8]]");
    CHECK(run("[1.0, 0.2] > 0.5") == "[true, false]");
    CHECK(run("-[1, -2]") == "[-1, 2]");
    CHECK(run("[] + (1 : int)") == "[]");
    // Shapes aligned at the last axis; an extent of 1 stretches; a lower rank gets leading axes.
    CHECK(run("[[1, 2], [3, 4], [5, 6]] - [10, 20]") == "[[-9, -18], [-7, -16], [-5, -14]]");
    CHECK(run("[[1], [2]] * [10, 20, 30]") == "[[10, 20, 30], [20, 40, 60]]");
    CHECK(run("[[1, 2, 3]] + [[10], [20]]") == "[[11, 12, 13], [21, 22, 23]]");
    CHECK(run("[[[1, 2]], [[3, 4]]] + [[10], [20], [30]]") ==
          "[[[11, 12], [21, 22], [31, 32]], [[13, 14], [23, 24], [33, 34]]]");
    CHECK(run("max [1.0] [1.0, 2.0]") == "[1.0, 2.0]");
    CHECK(run("[[1.0, 2.0]] < [[1.5], [0.5]]") == "[[true, false], [false, false]]");
    CHECK(run("[] + [1]") == "[]");
    CHECK(run("[[1, 2]][0:0] + [5, 6]") == "[]");
    CHECK(error("[1, 2, 3] + [1, 2, 3, 4]") == "operands of `+` could not be broadcast together with shapes (3) (4)");
    CHECK(error("[[1, 2], [3, 4]] * [[1, 2, 3], [4, 5, 6]]") ==
          "operands of `*` could not be broadcast together with shapes (2, 2) (2, 3)");
    CHECK(error("[[1, 2, 3], [4, 5, 6]] - [1, 2]") ==
          "operands of `-` could not be broadcast together with shapes (2, 3) (2)");
}

TEST_CASE("eval: math functions elementwise, in float or double") {
    CHECK(run("sqrt 4.0") == "2.0");
    CHECK(run("sqrt [4.0, 9.0]") == "[2.0, 3.0]");
    CHECK(run("sqrt 2.0") == "1.4142135");
    CHECK(run("(sqrt 2.0 : double)") == "1.4142135623730951");
    CHECK(run("sqrt (-1.0)") == "nan");
    CHECK(run("exp 0.0") == "1.0");
    CHECK(run("log 1.0") == "0.0");
    CHECK(run("sin 0.0 + cos 0.0 + tan 0.0") == "1.0");
    CHECK(run("asin 1.0 * 2.0") == "3.1415927");
    CHECK(run("acos 1.0 + atan 0.0 + sinh 0.0 + tanh 0.0") == "0.0");
    CHECK(run("cosh 0.0") == "1.0");
    CHECK(run("atan2 1.0 1.0 * 4.0") == "3.1415927");
    CHECK(run("erf 0.0") == "0.0");
    CHECK(run("(erf 1.0 : double)") == "0.8427007929497149");
    CHECK(run("floor [-1.5, 1.5]") == "[-2.0, 1.0]");
    CHECK(run("ceil [-1.5, 1.5]") == "[-1.0, 2.0]");
    CHECK(run("round [-2.5, -0.5, 0.5, 2.5, 2.4]") == "[-3.0, -1.0, 1.0, 3.0, 2.0]");
    CHECK(run("abs [-1.5, 2.0]") == "[1.5, 2.0]");
    CHECK(run("map sqrt [[1.0, 4.0], [9.0, 16.0]]") == "[[1.0, 2.0], [3.0, 4.0]]");
}

TEST_CASE("eval: conversions truncate, saturate and accept bool") {
    CHECK(run("int 3.7") == "3");
    CHECK(run("int (-3.7)") == "-3");
    CHECK(run("int (0.0 / 0.0)") == "0");
    CHECK(run("int 1e10") == "2147483647");
    CHECK(run("int (-1e10)") == "-2147483648");
    CHECK(run("long 1e10") == "10000000000");
    CHECK(run("int (4294967297 : long)") == "1");
    CHECK(run("float true") == "1.0");
    CHECK(run("int [true, false]") == "[1, 0]");
    CHECK(run("double 1.5") == "1.5");
    CHECK(run("float [1, 2]") == "[1.0, 2.0]");
    CHECK(run("long (iota 3)") == "[0, 1, 2]");
}

TEST_CASE("eval: let, lambdas, closures, partial application, shadowing") {
    CHECK(run("let x = 5 in x * x") == "25");
    CHECK(run("let x = 1 in let x = x + 1 in x") == "2");
    CHECK(run("let f a b = a - b in f 10 3") == "7");
    CHECK(run("(\\x y -> x * 10 + y) 1 2") == "12");
    CHECK(run("let add3 = (+) 3 in add3 4") == "7");
    CHECK(run("let k = 10 in let f = \\x -> x + k in let k = 100 in f 1") == "11");
    CHECK(run("let (a, b) = (1, 2.5) in float a + b") == "3.5");
    CHECK(run("let ((a, _), c) = ((1, 2), 3) in a + c") == "4");
    CHECK(run("(\\(a, b) -> a * b) (6, 7)") == "42");
    CHECK(run("let f = \\x -> \\y -> x - y in f 5 2") == "3");
    CHECK(run("[1.0, 2.0] |> map (\\x -> x * 2.0) |> sum") == "6.0");
    CHECK(run("if 1 < 2 then 10 else 20") == "10");
    CHECK(run("if [1, 2][1] < 2 then 10 else 20") == "20");
    CHECK(run("(\\f -> f 1 + f 2) (\\x -> x * 100)") == "300");
    CHECK(run("let f = zipWith (+) in f [1, 2] [3, 4]") == "[4, 6]");
    CHECK(run("let s = sum in s [1, 2]") == "3");
}

TEST_CASE("eval: top-level bindings and generalised functions") {
    Shoal s;
    s.run("let twice f x = f (f x)\nlet n = 3\nlet inc x = x + 1");
    CHECK(s.run("twice inc n") == "5");
    CHECK(s.run("twice (\\x -> x * 2.0) 1.5") == "6.0");
    CHECK(s.run("inc 1.5") == "2.5");
    CHECK(s.run("inc [1, 2]") == "[2, 3]");
    CHECK(s.run("inc (1 : long)") == "2");
    CHECK(s.run("twice inc 1") == "3");  // cached specialisation
    s.run("let fwd x = x[1:] - x[:-1]");
    CHECK(s.run("fwd [1, 4, 9]") == "[3, 5]");
    CHECK(s.run("fwd [1.0, 4.0, 9.0]") == "[3.0, 5.0]");
    s.run("let (a, b) = (1, [2.0])");
    CHECK(s.run("(a, b)") == "(1, [2.0])");
    s.run("let sq = map (\\x -> x * x)");
    CHECK(s.run("sq [1, 2, 3]") == "[1, 4, 9]");
    CHECK(s.globals.at("inc")->specialisations.size() >= 3);
}

TEST_CASE("eval: array literals") {
    CHECK(run("[1, 2, 3]") == "[1, 2, 3]");
    CHECK(run("[[1.0, 2.0], [3.0, 4.0]]") == "[[1.0, 2.0], [3.0, 4.0]]");
    CHECK(run("[[[1], [2]], [[3], [4]]]") == "[[[1], [2]], [[3], [4]]]");
    CHECK(run("let v = [1, 2] in [v, v + 10]") == "[[1, 2], [11, 12]]");
    CHECK(run("([] : [int])") == "[]");
    CHECK(run("length ([] : [[int]])") == "0");
    CHECK(run("[(1, 2.0), (3, 4.0)]") == "([1, 3], [2.0, 4.0])");
    CHECK(run("[([] : [int])]") == "[[]]");
    CHECK(run("shape [([] : [int]), []]") == "(2, 0)");
    CHECK(error("[[1, 2], [3]]") == "array literal rows have different lengths");
    CHECK(error("[[[1], [2]], [[3]]]") == "array literal rows have different lengths");
}

TEST_CASE("eval: indexing with negative indices and bounds errors") {
    CHECK(run("[10, 20, 30][0]") == "10");
    CHECK(run("[10, 20, 30][-1]") == "30");
    CHECK(run("[10, 20, 30][-3]") == "10");
    CHECK(run("let m = [[1, 2, 3], [4, 5, 6]] in m[1, 2]") == "6");
    CHECK(run("let m = [[1, 2, 3], [4, 5, 6]] in m[1]") == "[4, 5, 6]");
    CHECK(run("let m = [[1, 2, 3], [4, 5, 6]] in m[-1, -3]") == "4");
    CHECK(run("let t = [[[1, 2], [3, 4]], [[5, 6], [7, 8]]] in (t[1, 0, 1], t[0, 1], t[1])") ==
          "(6, [3, 4], [[5, 6], [7, 8]])");
    CHECK(run("let a = [1.0, 2.0] in min a[0] a[1]") == "1.0");
    CHECK(run("(zip [1, 2] [3.0, 4.0])[1]") == "(2, 4.0)");
    CHECK(error("[1, 2, 3, 4, 5][7]") == "index 7 is out of bounds for axis 0 with extent 5");
    CHECK(error("[1, 2, 3, 4, 5][-6]") == "index -6 is out of bounds for axis 0 with extent 5");
    CHECK(error("[[1, 2], [3, 4]][0, 2]") == "index 2 is out of bounds for axis 1 with extent 2");
    CHECK(error("([] : [int])[0]") == "index 0 is out of bounds for axis 0 with extent 0");
}

TEST_CASE("eval: slices follow Python") {
    const std::string a = "let a = [0, 1, 2, 3, 4, 5] in ";
    CHECK(run(a + "a[1:]") == "[1, 2, 3, 4, 5]");
    CHECK(run(a + "a[:-1]") == "[0, 1, 2, 3, 4]");
    CHECK(run(a + "a[::2]") == "[0, 2, 4]");
    CHECK(run(a + "a[1::2]") == "[1, 3, 5]");
    CHECK(run(a + "a[::-1]") == "[5, 4, 3, 2, 1, 0]");
    CHECK(run(a + "a[::-2]") == "[5, 3, 1]");
    CHECK(run(a + "a[4:1:-1]") == "[4, 3, 2]");
    CHECK(run(a + "a[-2:]") == "[4, 5]");
    CHECK(run(a + "a[:-10]") == "[]");
    CHECK(run(a + "a[-100:100]") == "[0, 1, 2, 3, 4, 5]");
    CHECK(run(a + "a[10:]") == "[]");
    CHECK(run(a + "a[3:1]") == "[]");
    CHECK(run(a + "a[1:3:-1]") == "[]");
    CHECK(run(a + "a[100::-1]") == "[5, 4, 3, 2, 1, 0]");
    CHECK(run(a + "a[:-100:-1]") == "[5, 4, 3, 2, 1, 0]");
    CHECK(run(a + "a[-1:-3:-1]") == "[5, 4]");
    CHECK(run(a + "a[2:2]") == "[]");
    CHECK(run(a + "a[:]") == "[0, 1, 2, 3, 4, 5]");
    CHECK(run("[7][::-1]") == "[7]");
    CHECK(run("([] : [int])[::-1]") == "[]");
    CHECK(error(a + "a[::0]") == "slice step cannot be zero");
    const std::string m = "let m = [[1, 2, 3], [4, 5, 6], [7, 8, 9]] in ";
    CHECK(run(m + "m[1:-1, 1:-1]") == "[[5]]");
    CHECK(run(m + "m[1, :]") == "[4, 5, 6]");
    CHECK(run(m + "m[:, 1]") == "[2, 5, 8]");
    CHECK(run(m + "m[::-1, ::2]") == "[[7, 9], [4, 6], [1, 3]]");
    CHECK(run(m + "m[:2]") == "[[1, 2, 3], [4, 5, 6]]");
    CHECK(run(m + "m[:, -1]") == "[3, 6, 9]");
    CHECK(error(m + "m[:, 3]") == "index 3 is out of bounds for axis 1 with extent 3");
}

TEST_CASE("eval: functional update with `with`") {
    CHECK(run("[1, 2, 3] with [1] = 10") == "[1, 10, 3]");
    CHECK(run("[1, 2, 3] with [-1] = 10") == "[1, 2, 10]");
    CHECK(run("[1, 2, 3, 4] with [1:3] = [7, 8]") == "[1, 7, 8, 4]");
    CHECK(run("[1, 2, 3, 4] with [::2] = 0") == "[0, 2, 0, 4]");
    CHECK(run("[1, 2, 3, 4] with [::-1] = [5, 6, 7, 8]") == "[8, 7, 6, 5]");
    CHECK(run("fill (3, 3) 1 with [1:-1, 1:-1] = 0") == "[[1, 1, 1], [1, 0, 1], [1, 1, 1]]");
    CHECK(run("[[1, 2], [3, 4]] with [0] = [9, 9]") == "[[9, 9], [3, 4]]");
    CHECK(run("[[1, 2], [3, 4]] with [:, 1] = [7, 8]") == "[[1, 7], [3, 8]]");
    CHECK(run("let a = [1, 2] in let b = a with [0] = 5 in (a, b)") == "([1, 2], [5, 2])");
    CHECK(run("(zip [1, 2] [3.0, 4.0]) with [0] = (5, 6.0)") == "([5, 2], [6.0, 4.0])");
    CHECK(error("[1, 2, 3] with [3] = 0") == "index 3 is out of bounds for axis 0 with extent 3");
    CHECK(error("[1, 2, 3, 4] with [1:3] = [7, 8, 9]") ==
          "shape mismatch in with: the selected part has shape (2) and the value's shape (3) does not broadcast to it");
    CHECK(error("fill (3, 3) 1 with [1:, 1:] = [[1, 2, 3], [4, 5, 6]]") ==
          "shape mismatch in with: the selected part has shape (2, 2) and the value's shape (2, 3) does not broadcast "
          "to it");
    // The value broadcasts to the part (NumPy's rule, one way).
    CHECK(run("fill (3, 4) 0 with [0:2] = [1, 2, 3, 4]") == "[[1, 2, 3, 4], [1, 2, 3, 4], [0, 0, 0, 0]]");
    CHECK(run("fill (3, 4) 0 with [:, 1:3] = col [7, 8, 9]") == "[[0, 7, 7, 0], [0, 8, 8, 0], [0, 9, 9, 0]]");
    CHECK(run("fill (2, 3) 0 with [1] = [5]") == "[[0, 0, 0], [5, 5, 5]]");
    CHECK(error("fill (3, 4) 0 with [0:2] = [1, 2]") ==
          "shape mismatch in with: the selected part has shape (2, 4) and the value's shape (2) does not broadcast to it");
}

TEST_CASE("eval: construction builtins") {
    CHECK(run("iota 5") == "[0, 1, 2, 3, 4]");
    CHECK(run("iota 0") == "[]");
    CHECK(run("iota 1") == "[0]");
    CHECK(run("fill 3 7") == "[7, 7, 7]");
    CHECK(run("fill (2, 2) 1.5") == "[[1.5, 1.5], [1.5, 1.5]]");
    CHECK(run("fill (2, 1, 2) true") == "[[[true, true]], [[true, true]]]");
    CHECK(run("fill 0 1") == "[]");
    CHECK(run("shape (fill (0, 3) 1)") == "(0, 3)");
    CHECK(run("fill 2 (1, 2.0)") == "([1, 1], [2.0, 2.0])");
    CHECK(run("generate 4 (\\i -> i * i)") == "[0, 1, 4, 9]");
    CHECK(run("generate (2, 3) (\\i j -> i * 10 + j)") == "[[0, 1, 2], [10, 11, 12]]");
    CHECK(run("generate (2, 2, 2) (\\i j k -> i * 100 + j * 10 + k)") ==
          "[[[0, 1], [10, 11]], [[100, 101], [110, 111]]]");
    CHECK(run("generate 3 (\\i -> float i / 2.0)") == "[0.0, 0.5, 1.0]");
    CHECK(run("generate 0 (\\i -> i)") == "[]");
    CHECK(run("generate 2 (\\i -> (i, i > 0))") == "([0, 1], [false, true])");
    CHECK(error("iota (-3)") == "iota: negative extent -3 in shape (-3)");
    CHECK(error("fill (2, -1) 0") == "fill: negative extent -1 in shape (2, -1)");
    CHECK(error("generate (-1) (\\i -> i)") == "generate: negative extent -1 in shape (-1)");
    CHECK(error("random (-2)") == "random: negative extent -2 in shape (-2)");
}

TEST_CASE("eval: random is a pure function of seed, call number and index") {
    Shoal s;
    const std::string first = s.run("random 4");
    const std::string second = s.run("random 4");
    CHECK(first != second);
    CHECK(s.ctx.random_stream == 2);
    std::string expected = "[";
    for (uint64_t i = 0; i < 4; ++i)
        expected += (i ? ", " : "") + format_scalar(Scalar::of_float(random_uniform(kDefaultSeed, 0, i)));
    CHECK(first == expected + "]");
    CHECK(Shoal().run("random 4") == first);  // a fresh session repeats the numbers
    Shoal seeded;
    seeded.ctx.seed = 7;
    CHECK(seeded.run("random 4") != first);
    CHECK(s.run("let r = random (20, 30) in (shape r, all (flatten (r >= 0.0 && r < 1.0)))") == "((20, 30), true)");
    CHECK(s.run("random 0") == "[]");
}

TEST_CASE("eval: shape builtins") {
    const std::string m = "let m = [[1, 2, 3], [4, 5, 6]] in ";
    CHECK(run("length [1, 2, 3]") == "3");
    CHECK(run("length ([] : [float])") == "0");
    CHECK(run(m + "length m") == "2");
    CHECK(run(m + "(rows m, cols m)") == "(2, 3)");
    CHECK(run("shape [1, 2, 3]") == "3");
    CHECK(run(m + "shape m") == "(2, 3)");
    CHECK(run("shape (fill (4, 3, 2) 0)") == "(4, 3, 2)");
    CHECK(run("length (zip [1, 2] [3, 4])") == "2");
    CHECK(run("reshape (2, 3) (iota 6)") == "[[0, 1, 2], [3, 4, 5]]");
    CHECK(run(m + "reshape 6 m") == "[1, 2, 3, 4, 5, 6]");
    CHECK(run(m + "reshape (3, 2) m") == "[[1, 2], [3, 4], [5, 6]]");
    CHECK(run("reshape (0, 2) (iota 0)") == "[]");
    CHECK(run(m + "flatten m") == "[1, 2, 3, 4, 5, 6]");
    CHECK(run("flatten [1, 2]") == "[1, 2]");
    CHECK(run(m + "transpose m") == "[[1, 4], [2, 5], [3, 6]]");
    CHECK(run("transpose [[1]]") == "[[1]]");
    CHECK(run("shape (transpose (fill (0, 3) 1))") == "(3, 0)");
    CHECK(error("reshape (4, 2) (iota 6)") == "reshape: cannot reshape (6) into (4, 2)");
    CHECK(error("reshape (-1, 2) (iota 6)") == "reshape: negative extent -1 in shape (-1, 2)");
}

TEST_CASE("eval: map, zipWith, zipWith3, zip, unzip") {
    CHECK(run("map (\\x -> x + 1) [1, 2, 3]") == "[2, 3, 4]");
    CHECK(run("map (\\x -> x + 1) ([] : [int])") == "[]");
    CHECK(run("map (\\x -> float x) [[1, 2], [3, 4]]") == "[[1.0, 2.0], [3.0, 4.0]]");
    CHECK(run("map (\\x -> x > 1) [1, 2]") == "[false, true]");
    CHECK(run("let (c, p) = map (\\s -> (s + 1.0, s - 1.0)) [1.0, 2.0] in (c, p)") == "([2.0, 3.0], [0.0, 1.0])");
    CHECK(run("map (\\s -> (s, s * 2)) ([] : [int])") == "([], [])");
    CHECK(run("map (\\(a, b) -> a * b) (zip [1, 2, 3] [4, 5, 6])") == "[4, 10, 18]");
    CHECK(run("map ((*) 2) [1, 2]") == "[2, 4]");
    CHECK(run("map negate [1, -2]") == "[-1, 2]");
    CHECK(run("zipWith (+) [1, 2] [10, 20]") == "[11, 22]");
    CHECK(run("zipWith (\\a b -> a * float b) [1.5, 2.0] [2, 3]") == "[3.0, 6.0]");
    CHECK(run("zipWith max [[1, 5]] [[4, 2]]") == "[[4, 5]]");
    CHECK(run("zipWith3 (\\a b c -> a + b * c) [1, 2] [3, 4] [5, 6]") == "[16, 26]");
    CHECK(run("zip [1, 2] [3.0, 4.0]") == "([1, 2], [3.0, 4.0])");
    CHECK(run("zip3 [1] [2.0] [true]") == "([1], [2.0], [true])");
    CHECK(run("unzip (zip [1, 2] [3, 4])") == "([1, 2], [3, 4])");
    CHECK(error("zipWith (+) [1, 2] [1, 2, 3]") == "operands of `zipWith` could not be broadcast together with shapes (2) (3)");
    CHECK(run("zipWith3 (\\a b c -> a + b + c) [1] [1] [1, 2]") == "[3, 4]");  // broadcast, NumPy's rule
    CHECK(run("zipWith (+) [[1, 2], [3, 4]] [10, 20]") == "[[11, 22], [13, 24]]");
    CHECK(error("zip [1, 2] [1, 2, 3]") == "shape mismatch in zip: (2) vs (3)");
    CHECK(error("map (\\i -> [1, 2][i]) [0, 1, 2]") == "index 2 is out of bounds for axis 0 with extent 2");
}

TEST_CASE("eval: reductions act on the innermost dimension") {
    CHECK(run("reduce (+) 0 [1, 2, 3]") == "6");
    CHECK(run("reduce (-) 0 [1, 2, 3]") == "-6");  // left fold from z
    CHECK(run("reduce (\\a b -> a * 10 + b) 0 [1, 2, 3]") == "123");
    CHECK(run("reduce (+) 5 ([] : [int])") == "5");
    CHECK(run("reduce (+) 0 [[1, 2], [3, 4]]") == "[3, 7]");
    CHECK(run("reduce max 0.0 (fill (2, 0) 1.0)") == "[0.0, 0.0]");
    CHECK(run("sum [1.5, 2.5]") == "4.0");
    CHECK(run("sum ([] : [int])") == "0");
    CHECK(run("sum [[1, 2], [3, 4]]") == "[3, 7]");
    CHECK(run("sum (flatten [[1, 2], [3, 4]])") == "10");
    CHECK(run("sum [2147483647, 1]") == "-2147483648");
    CHECK(run("product [1, 2, 3, 4]") == "24");
    CHECK(run("product ([] : [float])") == "1.0");
    CHECK(run("maximum [3, 9, 2]") == "9");
    CHECK(run("maximum ([] : [float])") == "-inf");
    CHECK(run("maximum ([] : [int])") == "-2147483648");
    CHECK(run("minimum ([] : [long])") == "9223372036854775807");
    CHECK(run("minimum ([] : [double])") == "inf");
    CHECK(run("minimum [[3, 1], [0, 5]]") == "[1, 0]");
    CHECK(run("maximum [1.0, 0.0 / 0.0, 2.0]") == "2.0");
    CHECK(run("all [true, true]") == "true");
    CHECK(run("all ([] : [bool])") == "true");
    CHECK(run("any ([] : [bool])") == "false");
    CHECK(run("any [[false, true], [false, false]]") == "[true, false]");
    CHECK(run("count (\\x -> x > 1) [1, 2, 3]") == "2");
    CHECK(run("count (\\x -> x > 1) ([] : [int])") == "0");
    CHECK(run("count (\\x -> x) [[true, true], [false, true]]") == "[2, 1]");
    CHECK(run("argmax [1, 5, 3, 5]") == "1");
    CHECK(run("argmin [4, 1, 3, 1]") == "1");
    CHECK(run("argmax [7]") == "0");
    CHECK(run("argmax [[1, 2], [4, 3]]") == "[1, 0]");
    CHECK(run("argmax [0.0 / 0.0, 1.0, 3.0]") == "2");
    CHECK(run("argmin [2.0, 0.0 / 0.0, 1.0]") == "2");
    CHECK(run("argmax [0.0 / 0.0, 0.0 / 0.0]") == "0");
    CHECK(error("argmax ([] : [int])") == "argmax of an empty array");
    CHECK(error("argmin ([] : [float])") == "argmin of an empty array");
}

TEST_CASE("eval: scans") {
    CHECK(run("scan (+) 0 [1, 2, 3, 4]") == "[1, 3, 6, 10]");
    CHECK(run("scan (+) 10 [1, 2]") == "[11, 13]");
    CHECK(run("scan (-) 0 [1, 2, 3]") == "[-1, -3, -6]");
    CHECK(run("scan (+) 0 ([] : [int])") == "[]");
    CHECK(run("scan (*) 1 [[1, 2, 3], [4, 5, 6]]") == "[[1, 2, 6], [4, 20, 120]]");
    CHECK(run("scanExclusive (+) 0 [1, 2, 3, 4]") == "[0, 1, 3, 6]");
    CHECK(run("scanExclusive (+) 0 [5]") == "[0]");
    CHECK(run("scanExclusive (+) 0 ([] : [int])") == "[]");
    CHECK(run("scanExclusive max 0 [[3, 1], [2, 5]]") == "[[0, 3], [0, 2]]");
    CHECK(run("segscan (+) 0 [true, false, true, false, false] [1, 2, 3, 4, 5]") == "[1, 3, 3, 7, 12]");
    CHECK(run("segscan (+) 0 [false, false, true] [1, 2, 3]") == "[1, 3, 3]");
    CHECK(run("segscan (+) 0 [[false, true], [false, false]] [[1, 2], [3, 4]]") == "[[1, 2], [3, 7]]");
    CHECK(run("segscan (+) 0.0 ([] : [bool]) []") == "[]");
    CHECK(error("segscan (+) 0 [true] [1, 2]") == "shape mismatch in segscan: (1) vs (2)");
}

TEST_CASE("eval: gather, scatter, permute, reverse") {
    CHECK(run("gather [2, 0, 0] [10, 20, 30]") == "[30, 10, 10]");
    CHECK(run("gather ([] : [int]) [10, 20]") == "[]");
    CHECK(run("gather [1] [[1, 2], [3, 4]]") == "[[3, 4]]");
    CHECK(run("gather [1, 0] (zip [1, 2] [3.0, 4.0])") == "([2, 1], [4.0, 3.0])");
    CHECK(error("gather [0, 7] [1, 2, 3, 4, 5]") == "gather: index 7 is out of bounds for axis 0 with extent 5");
    CHECK(error("gather [-1] [1, 2]") == "gather: index -1 is out of bounds for axis 0 with extent 2");
    CHECK(run("scatter [0, 0, 0, 0] [3, 1] [7, 8]") == "[0, 8, 0, 7]");
    CHECK(run("scatter [0, 0] [5, -1, 0] [1, 2, 3]") == "[3, 0]");
    CHECK(run("scatter [0, 0] [1, 1] [1, 2]") == "[0, 2]");  // the last write wins
    CHECK(run("scatter [1, 2] ([] : [int]) []") == "[1, 2]");
    CHECK(error("scatter [0, 0] [1] [1, 2]") == "scatter: 1 indices but 2 values");
    CHECK(run("permute (+) (fill 3 0) (\\i -> [0, 2, 2, 5][i]) [1, 1, 1, 1]") == "[1, 0, 2]");
    CHECK(run("permute (+) (fill 2 0) (\\i -> i % 2) [1, 2, 3, 4, 5]") == "[9, 6]");
    CHECK(run("permute (\\a b -> a * 10 + b) [0] (\\i -> 0) [1, 2, 3]") == "[123]");  // in order
    CHECK(run("permute (+) [1, 2] (\\i -> -1) [5]") == "[1, 2]");
    CHECK(run("let xs = [0.05, 0.15, 0.95, 0.55, 0.15] in "
              "permute (+) (fill 10 0) (\\i -> int (xs[i] * 10.0)) (fill (length xs) 1)") ==
          "[1, 2, 0, 0, 0, 1, 0, 0, 0, 1]");
    CHECK(run("reverse [1, 2, 3]") == "[3, 2, 1]");
    CHECK(run("reverse ([] : [int])") == "[]");
    CHECK(run("reverse [[1, 2], [3, 4]]") == "[[3, 4], [1, 2]]");
    CHECK(run("reverse (zip [1, 2] [true, false])") == "([2, 1], [false, true])");
}

TEST_CASE("eval: ++, interleave, take, drop, filter") {
    CHECK(run("[1, 2] ++ [3]") == "[1, 2, 3]");
    CHECK(run("([] : [int]) ++ []") == "[]");
    CHECK(run("[[1, 2]] ++ [[3, 4], [5, 6]]") == "[[1, 2], [3, 4], [5, 6]]");
    CHECK(run("zip [1] [2.0] ++ zip [3] [4.0]") == "([1, 3], [2.0, 4.0])");
    CHECK(error("[[1, 2]] ++ [[3, 4, 5]]") == "shape mismatch in ++: (1, 2) vs (1, 3)");
    CHECK(run("interleave [1, 2, 3] [10, 20, 30]") == "[1, 10, 2, 20, 3, 30]");
    CHECK(run("interleave ([] : [int]) []") == "[]");
    CHECK(run("interleave [[1, 2]] [[3, 4]]") == "[[1, 2], [3, 4]]");
    CHECK(error("interleave [1, 2] [1]") == "shape mismatch in interleave: (2) vs (1)");
    CHECK(run("take 2 [1, 2, 3]") == "[1, 2]");
    CHECK(run("take 5 [1, 2, 3]") == "[1, 2, 3]");
    CHECK(run("take (-1) [1, 2, 3]") == "[]");
    CHECK(run("take 1 [[1, 2], [3, 4]]") == "[[1, 2]]");
    CHECK(run("drop 2 [1, 2, 3]") == "[3]");
    CHECK(run("drop 5 [1, 2, 3]") == "[]");
    CHECK(run("drop (-1) [1, 2, 3]") == "[1, 2, 3]");
    CHECK(run("drop 1 (zip [1, 2] [3, 4])") == "([2], [4])");
    CHECK(run("filter (\\x -> x > 1.5) [1.0, 2.0, 3.0]") == "[2.0, 3.0]");
    CHECK(run("filter (\\x -> x > 9) [1, 2]") == "[]");
    CHECK(run("filter (\\x -> true) ([] : [int])") == "[]");
    CHECK(run("filter (\\(a, b) -> b) (zip [1, 2, 3] [true, false, true])") == "([1, 3], [true, true])");
}

TEST_CASE("eval: sort and sortByKey are stable; NaNs go last") {
    CHECK(run("sort [3, 1, 2]") == "[1, 2, 3]");
    CHECK(run("sort ([] : [int])") == "[]");
    CHECK(run("sort [1.0, 0.0 / 0.0, -1.0, 1.0 / 0.0]") == "[-1.0, 1.0, inf, nan]");
    CHECK(run("sort [[3, 1], [0, -2]]") == "[[1, 3], [-2, 0]]");
    CHECK(run("sort [0.0, -0.0]") == "[0.0, -0.0]");
    CHECK(run("sort [-0.0, 0.0]") == "[-0.0, 0.0]");
    CHECK(run("sortByKey [3, 1, 2, 1] [10, 20, 30, 40]") == "([1, 1, 2, 3], [20, 40, 30, 10])");
    CHECK(run("sortByKey [2.0, 1.0] (zip [1, 2] [true, false])") == "([1.0, 2.0], ([2, 1], [false, true]))");
    CHECK(run("sortByKey ([] : [int]) ([] : [float])") == "([], [])");
    CHECK(error("sortByKey [1, 2] [1]") == "sortByKey: 2 keys but 1 values");
}

TEST_CASE("eval: iterate and loops") {
    CHECK(run("iterate 3 (\\x -> x * 2) 1") == "8");
    CHECK(run("iterate 0 (\\x -> x * 2) 1") == "1");
    CHECK(run("iterate (-5) (\\x -> x * 2) 1") == "1");
    CHECK(run("iterate 2 (\\(a, b) -> (b, a + b)) (0, 1)") == "(1, 2)");
    CHECK(run("loop x = 0 for i < 5 do x + i") == "10");
    CHECK(run("loop x = 7 for i < 0 do x + i") == "7");
    CHECK(run("loop x = 1 while x < 100 do x * 3") == "243");
    CHECK(run("loop x = 1000 while x < 100 do x * 3") == "1000");
    CHECK(run("loop (a, b) = (0, 1) for i < 10 do (b, a + b)") == "(55, 89)");
    CHECK(run("loop (n, acc) = (5, 1) while n > 0 do (n - 1, acc * n)") == "(0, 120)");
    CHECK(run("loop v = [1, 1] for i < 3 do v ++ [i]") == "[1, 1, 0, 1, 2]");
}

TEST_CASE("eval: Ctrl-C interrupts long loops") {
    std::atomic<bool> cancel{true};
    Shoal s;
    s.ctx.cancel = &cancel;
    CHECK(s.error("loop x = 0 while true do x + 1", ErrorKind::Interrupted) == "interrupted");
    CHECK(s.error("loop x = 0 for i < 1000000000 do x + 1", ErrorKind::Interrupted) == "interrupted");
    CHECK(s.error("map (\\x -> x + 1) (iota 100000)", ErrorKind::Interrupted) == "interrupted");
    CHECK(s.error("iterate 1000000000 (\\x -> x) 1", ErrorKind::Interrupted) == "interrupted");
    cancel = false;
    CHECK(s.run("sum (map (\\x -> x + 1) (iota 10))") == "55");
}

TEST_CASE("eval: load, save, loadCsv, saveCsv") {
    const std::filesystem::path tmp = std::filesystem::temp_directory_path() / "shoal_test_eval";
    std::filesystem::create_directories(tmp);
    const std::string dir = tmp.string();
    Shoal s;
    CHECK(s.run("save \"" + dir + "/a.npy\" [[1.5, 2.0], [3.0, 4.0]]") == "");
    CHECK(s.run("(load \"" + dir + "/a.npy\" : [[float]])") == "[[1.5, 2.0], [3.0, 4.0]]");
    CHECK(s.run("save \"" + dir + "/b.npy\" [true, false]") == "");
    CHECK(s.run("(load \"" + dir + "/b.npy\" : [bool])") == "[true, false]");
    CHECK(s.error("(load \"" + dir + "/a.npy\" : [[double]])", ErrorKind::Io) ==
          "load: " + dir + "/a.npy holds [[float]] of shape (2, 2) but the program expects [[double]]");
    CHECK(s.error("(load \"" + dir + "/a.npy\" : [float])", ErrorKind::Io).find("but the program expects [float]") !=
          std::string::npos);
    CHECK(s.error("(load \"" + dir + "/missing.npy\" : [float])", ErrorKind::Io).find("missing.npy") !=
          std::string::npos);
    CHECK(s.run("saveCsv \"" + dir + "/m.csv\" [[1.0, 2.5], [3.0, 4.0]]") == "");
    CHECK(s.run("loadCsv \"" + dir + "/m.csv\"") == "[[1.0, 2.5], [3.0, 4.0]]");
    std::filesystem::remove_all(tmp);
}

TEST_CASE("eval: every builtin the type checker knows has an implementation") {
    for (const auto& entry : builtin_schemes()) CHECK_MESSAGE(evalimpl::find_builtin(entry.first), entry.first);
    for (const std::string& name : evalimpl::builtin_names())
        CHECK_MESSAGE(builtin_schemes().count(name) == 1, name);
}

TEST_CASE("eval: operators as values") {
    CHECK(run("reduce (*) 1 [1, 2, 3, 4]") == "24");
    CHECK(run("zipWith (-) [5, 5] [1, 2]") == "[4, 3]");
    CHECK(run("zipWith (/) [7, 7] [2, 0]") == "[3, 0]");
    CHECK(run("zipWith (%) [7.5] [2.0]") == "[1.5]");
    CHECK(run("zipWith (**) [2, 3] [3, 2]") == "[8, 9]");
    CHECK(run("zipWith (==) [1, 2] [1, 3]") == "[true, false]");
    CHECK(run("zipWith (!=) [1, 2] [1, 3]") == "[false, true]");
    CHECK(run("zipWith (<) [1, 2] [2, 2]") == "[true, false]");
    CHECK(run("zipWith (<=) [1, 2] [2, 2]") == "[true, true]");
    CHECK(run("zipWith (>) [1, 2] [2, 1]") == "[false, true]");
    CHECK(run("zipWith (>=) [1, 2] [2, 2]") == "[false, true]");
    CHECK(run("zipWith (&&) [true, true] [true, false]") == "[true, false]");
    CHECK(run("reduce (||) false [false, true]") == "true");
    CHECK(run("reduce (&) (-1) [7, 3]") == "3");
    CHECK(run("reduce (|) 0 [4, 1]") == "5");
    CHECK(run("reduce (^) 0 [5, 1]") == "4");
    CHECK(run("zipWith (<<) [1, 1] [1, 2]") == "[2, 4]");
    CHECK(run("zipWith (>>) [8, 8] [1, 2]") == "[4, 2]");
    CHECK(run("(++) [1] [2]") == "[1, 2]");
    CHECK(run("reduce min 100 [3, 9]") == "3");
    CHECK(run("reduce max 0.0 [3.0, 9.0]") == "9.0");
}

TEST_CASE("eval: runtime errors point at the failing construct") {
    auto where = [](const std::string& text) {
        try {
            run(text);
        } catch (const Error& e) {
            return std::to_string(e.loc.line) + ":" + std::to_string(e.loc.col);
        }
        return std::string("no error");
    };
    CHECK(where("let a = [1, 2, 3] in\n  a[1] + a[7]") == "2:12");
    CHECK(where("let a = [1, 2, 3] in a + [1, 2]") == "1:24");  // the operator
    CHECK(where("1 + (reshape (4, 2) (iota 6))[0, 0]") == "1:6");
    CHECK(where("let f = reshape (4, 2) in\n  f (iota 6)") == "2:3");  // the saturating call
    CHECK(where("let a = [1, 2] in a[::0]") == "1:21");
}

TEST_CASE("eval: the reference evaluator is not needlessly slow") {
    // ~1 us per element is the budget; these finish in well under a second.
    CHECK(run("sum (map (\\x -> x * 2) (iota 1000000))") == "-728379968");  // wraps
    CHECK(run("let xs = map (\\x -> float x) (iota 1000000) in maximum (zipWith (\\a b -> a + b) xs xs)") ==
          "1999998.0");
    CHECK(run("reduce (+) (0 : long) (long (iota 1000000))") == "499999500000");
}

TEST_CASE("eval: masks select and update rows; where selects elementwise") {
    CHECK(run("let xs = [0.1, 0.7, 0.3, 0.9] in xs[xs > 0.5]") == "[0.7, 0.9]");
    CHECK(run("let xs = [0.1, 0.7, 0.3, 0.9] in xs with [xs > 0.5] = 0.5") == "[0.1, 0.5, 0.3, 0.5]");
    CHECK(run("let m = [[1, 2], [3, 4], [5, 6]] in m[[false, true, true]]") == "[[3, 4], [5, 6]]");
    CHECK(run("let m = [[1, 2], [3, 4], [5, 6]] in m with [[true, false, true]] = 0") == "[[0, 0], [3, 4], [0, 0]]");
    CHECK(run("let m = [[1, 2], [3, 4], [5, 6]] in m with [[true, false, true]] = [7, 8]") ==
          "[[7, 8], [3, 4], [7, 8]]");
    CHECK(run("compress [true, false, true] (iota 3)") == "[0, 2]");
    CHECK(run("(iota 4)[[false, false, false, false]]") == "[]");
    CHECK(run("generate 3 (\\i -> length ((iota 3)[iota 3 < i]))") == "[0, 1, 2]");
    CHECK(error("[1, 2, 3][[true, false]]") ==
          "boolean index did not match indexed array along axis 0; size of axis is 3 but size of corresponding boolean "
          "axis is 2");
    CHECK(run("where [true, false, true] [1, 2, 3] 0") == "[1, 0, 3]");
    CHECK(run("where ([[1.0, -1.0], [-2.0, 2.0]] > 0.0) 1.0 [10.0, 20.0]") == "[[1.0, 20.0], [10.0, 1.0]]");
    CHECK(run("where false 1 2") == "2");
    CHECK(error("where [true, false] [1, 2, 3] 0") ==
          "operands of `where` could not be broadcast together with shapes (2) (3)");
}

TEST_CASE("eval: mean, var and std along the innermost axis, NumPy's values (ddof 0)") {
    // np.mean / np.var / np.std of [[1, 2, 3], [4, 6, 8]] along axis 1, in float32.
    CHECK(run("mean [[1.0, 2.0, 3.0], [4.0, 6.0, 8.0]]") == "[2.0, 6.0]");
    CHECK(run("var [[1.0, 2.0, 3.0], [4.0, 6.0, 8.0]]") == "[0.6666667, 2.6666667]");
    CHECK(run("std [[1.0, 2.0, 3.0], [4.0, 6.0, 8.0]]") == "[0.8164966, 1.6329932]");
    CHECK(run("std [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]") == "2.0");
    CHECK(run("mean (transpose [[1.0, 2.0], [3.0, 6.0]])") == "[2.0, 4.0]");  // the columns
    CHECK(run("mean (double (iota 4))") == "1.5");
    CHECK(run("mean ([] : [float])") == "nan");  // 0 / 0, as NumPy (which warns)
    CHECK(run("var [1.0, 0.0 / 0.0]") == "nan");
    CHECK(run("mean [[1.0, 2.0, 3.0]][0:0]") == "[]");
}

TEST_CASE("eval: dot, norm, outer, cumsum, cumprod (NumPy's values)") {
    CHECK(run("dot [1.0, 2.0] [3.0, 4.0]") == "11.0");
    CHECK(run("dot [[1, 2, 3], [4, 5, 6]] [1, 0, 1]") == "[4, 10]");  // np.dot(m, v)
    CHECK(run("norm [3.0, 4.0]") == "5.0");
    CHECK(run("outer [1, 2] [10, 20, 30]") == "[[10, 20, 30], [20, 40, 60]]");
    CHECK(run("cumsum [[1, 2, 3], [4, 5, 6]]") == "[[1, 3, 6], [4, 9, 15]]");  // np.cumsum(m, axis=1)
    CHECK(run("cumprod [1.0, 2.0, 3.0, 4.0]") == "[1.0, 2.0, 6.0, 24.0]");
    CHECK(run("cumsum ([] : [int])") == "[]");
}

TEST_CASE("eval: eye, linspace, arange, argsort and index arrays (NumPy's values)") {
    CHECK(run("eye 2") == "[[1.0, 0.0], [0.0, 1.0]]");
    CHECK(run("linspace 0.0 1.0 5") == "[0.0, 0.25, 0.5, 0.75, 1.0]");  // np.linspace(0, 1, 5)
    CHECK(run("linspace 2.0 3.0 1") == "[2.0]");
    CHECK(run("linspace 2.0 3.0 0") == "[]");
    CHECK(run("arange 0.0 1.0 0.25") == "[0.0, 0.25, 0.5, 0.75]");  // np.arange(0, 1, 0.25)
    CHECK(run("arange 1.0 0.0 (-0.5)") == "[1.0, 0.5]");
    CHECK(run("arange 1.0 0.0 0.5") == "[]");
    CHECK(run("argsort [3.0, 1.0, 2.0, 1.0]") == "[1, 3, 2, 0]");  // stable: ties keep their order
    CHECK(run("let xs = [0.5, 0.1, 0.9] in xs[argsort xs]") == "[0.1, 0.5, 0.9]");
    CHECK(run("[0.5, 0.1, 0.9][[2, 2, 0]]") == "[0.9, 0.9, 0.5]");
    CHECK(run("[[1, 2], [3, 4]][[1, 0]]") == "[[3, 4], [1, 2]]");
    CHECK(error("[1, 2][[2]]") == "gather: index 2 is out of bounds for axis 0 with extent 2");
}
