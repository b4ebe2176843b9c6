// Type inference: the types of expressions and definitions, and the errors
// for ill-typed input.
#include <doctest/doctest.h>

#include "lang/parser.h"
#include "lang/typecheck.h"

using namespace shoal;

namespace {

// Checks a sequence of statements; returns the type (or scheme) of the last.
struct Typer {
    TypeEnvironment env;

    std::string run(const std::string& text) {
        auto src = std::make_shared<Source>("<test>", text);
        std::string last;
        for (auto span : split_statements(*src)) {
            StmtPtr s = parse_statement(src, span);
            if (s->kind == StmtKind::Expr) {
                last = type_to_string(check_expression(s->expr, env));
            } else if (s->kind == StmtKind::Let) {
                for (auto& [name, scheme] : check_let(*s, env)) {
                    env.globals[name] = scheme;
                    last = scheme_to_string(*scheme);
                }
            }
        }
        return last;
    }

    // The message of the error the last statement raises ("" if none).
    std::string error(const std::string& text) {
        try {
            run(text);
        } catch (const Error& e) {
            return format_error(e);
        }
        return "";
    }
};

std::string type_of(const std::string& text) { return Typer().run(text); }

}  // namespace

TEST_CASE("literals default to int and float, and take the type the context demands") {
    CHECK(type_of("42") == "int");
    CHECK(type_of("3.14") == "float");
    CHECK(type_of("true") == "bool");
    CHECK(type_of("1 + 2.5") == "float");
    CHECK(type_of("double 1 + 2.5") == "double");
    CHECK(type_of("(3000000000 : long)") == "long");
    CHECK(type_of("[1, 2, 3]") == "[int]");
    CHECK(type_of("[[1.0, 2.0], [3.0, 4.0]]") == "[[float]]");
    CHECK(type_of("(1, [2.0])") == "(int, [float])");
}

TEST_CASE("elementwise operators broadcast scalars over arrays") {
    CHECK(type_of("[1.0, 2.0] + 1.0") == "[float]");
    CHECK(type_of("2.0 * [1.0, 2.0]") == "[float]");
    CHECK(type_of("[1.0, 2.0] > 0.5") == "[bool]");
    CHECK(type_of("sqrt [1.0, 4.0]") == "[float]");
    CHECK(type_of("max [1, 2] [3, 0]") == "[int]");
    CHECK(type_of("float (iota 3)") == "[float]");
    CHECK(type_of("[[1, 2]] * 2") == "[[int]]");
}

TEST_CASE("builtins") {
    CHECK(type_of("sum (iota 10)") == "int");
    CHECK(type_of("scan (+) 0 [1, 2, 3, 4]") == "[int]");
    CHECK(type_of("filter (\\x -> x % 2 == 0) (iota 10)") == "[int]");
    CHECK(type_of("sum [[1.0, 2.0]]") == "[float]");
    CHECK(type_of("fill (2, 3) 0.0") == "[[float]]");
    CHECK(type_of("fill 3 0") == "[int]");
    CHECK(type_of("generate (2, 3) (\\i j -> i + j)") == "[[int]]");
    CHECK(type_of("random 4") == "[float]");
    CHECK(type_of("shape (fill (2, 3) 1)") == "(int, int)");
    CHECK(type_of("map (\\s -> (s + 1.0, s - 1.0)) [1.0]") == "([float], [float])");
    CHECK(type_of("zip [1] [2.0]") == "([int], [float])");
    CHECK(type_of("map (\\(a, b) -> float a + b) (zip [1] [2.0])") == "[float]");
    CHECK(type_of("sortByKey [3, 1] [1.0, 2.0]") == "([int], [float])");
    CHECK(type_of("iterate 3 (\\x -> x * 2) 1") == "int");
    CHECK(type_of("loop x = 0 for i < 10 do x + i") == "int");
    CHECK(type_of("loop (a, b) = (0, 1) while a < 100 do (b, a + b)") == "(int, int)");
    CHECK(type_of("argmax [1.0, 3.0]") == "int");
    CHECK(type_of("count (\\x -> x > 1) [[1, 2], [3, 4]]") == "[int]");
    CHECK(type_of("reshape (2, 2) (iota 4)") == "[[int]]");
    CHECK(type_of("(iota 4)[1:]") == "[int]");
    CHECK(type_of("(fill (3, 3) 1.0)[1, :]") == "[float]");
    CHECK(type_of("(fill (3, 3) 1.0)[1, 2]") == "float");
    CHECK(type_of("(fill (3, 3) 1.0) with [1:-1, 1:-1] = 0.0") == "[[float]]");
    CHECK(type_of("[1, 2] with [0] = 5") == "[int]");
    CHECK(type_of("[1, 2] ++ [3]") == "[int]");
}

TEST_CASE("top-level functions are generalised and instantiated per use") {
    Typer t;
    t.run("let fwd x = x[1:] - x[:-1]");
    CHECK(t.run("fwd [1.0, 4.0, 9.0, 16.0]") == "[float]");
    CHECK(t.run("fwd [1, 4]") == "[int]");
    t.run("let add x y = x + y");
    CHECK(t.run("add 1 2") == "int");
    CHECK(t.run("add [1.0] [2.0]") == "[float]");
    CHECK(t.run("add 1.0 [2.0]") == "[float]");
    CHECK(t.run("let f (x : [float]) (a : float) : [float] = x + a") == "[float] -> float -> [float]");
    CHECK(t.run("let rmse (x : [float]) (y : [float]) = sqrt (sum (map (\\d -> d * d) (x - y)) / float (length x))") ==
          "[float] -> [float] -> float");
    CHECK(t.run("let inc = map (\\x -> x + 1)") == "Num a => [a] -> [a]  (also elementwise over arrays)");
    CHECK(t.run("let fwd2 x = x[1:] - x[:-1]") == "Num a => [a] -> [a]");
    CHECK(t.run("let g f xs = map f xs") == "(a -> b) -> [a] -> [b]");
    CHECK(t.run("let add2 x y = x + y") == "Num a => a -> a -> a  (also elementwise over arrays)");
}

TEST_CASE("type errors say what was expected and what was found") {
    Typer t;
    t.run("let n = 3");
    std::string e = t.error("1.5 + n");
    CHECK(e.find("<test>:1:5: error: mismatched types in `+`: float or double (a decimal literal) and int") != std::string::npos);
    CHECK(e.find("`float n`") != std::string::npos);
    CHECK(t.error("if 1 then 2 else 3").find("condition of `if` must be bool") != std::string::npos);
    CHECK(t.error("if true then 2 else [3]").find("branches of `if` have different types") != std::string::npos);
    CHECK(t.error("nosuch 3").find("unknown name `nosuch`") != std::string::npos);
    CHECK(t.error("summ [1]").find("did you mean `sum`?") != std::string::npos);
    CHECK(t.error("sum 3").find("argument 1 of `sum`") != std::string::npos);
    CHECK(t.error("[1, 2.5, true]").find("array elements must all have one type") != std::string::npos);
    CHECK(t.error("(iota 3)[1.5]").find("an array index must be int") != std::string::npos);
    CHECK(t.error("(iota 3)[1, 2]").find("too many indices") != std::string::npos);
    CHECK(t.error("let (a, b) = (1, 2, 3)").find("this pattern has 2 elements") != std::string::npos);
    CHECK(t.error("3 1").find("is not a function") != std::string::npos);
    CHECK(t.error("sum [1] 2").find("takes 1 argument but is given 2") != std::string::npos);
    CHECK(t.error("(1, 2) + 1").find("works on numbers and arrays of numbers, not on") != std::string::npos);
    CHECK(t.run("[1] + [[1]]") == "[[int]]");  // broadcasting: the larger rank
    CHECK(t.run("\\(m : [[float]]) (v : [float]) -> m - v") == "[[float]] -> [float] -> [[float]]");
    CHECK(t.error("1 & 2.0").find("mismatched types in `&`") != std::string::npos);
    CHECK(t.error("3000000000").find("does not fit in int") != std::string::npos);
}

TEST_CASE("hostile input to the type checker: errors, never crashes or hangs") {
    Typer t;
    CHECK(t.error("reduce zip 0 (iota 3)").find("the type would be infinite") != std::string::npos);
    CHECK(t.error("random \"x\"").find("`random` needs a shape") != std::string::npos);
    CHECK(t.error("length ()").find("argument 1 of `length`") != std::string::npos);
    CHECK(t.error("round [][1:]").find("error:") != std::string::npos);
    CHECK(t.error("\"abc\" ++ 1").find("operand of `++` with a string") != std::string::npos);
    CHECK(t.error("\"abc\" + \"d\"").find("error:") != std::string::npos);
    t.run("let f x = x");
    std::string many = "f";
    for (int i = 0; i < 30; ++i) many += " f";
    CHECK(t.error(many).find("type is too large") != std::string::npos);
    std::string big = "[1";
    for (int i = 0; i < 40000; ++i) big += ",1";
    CHECK(t.run(big + "]") == "[int]");
}

TEST_CASE("readable schemes for functions over arrays") {
    Typer t;
    CHECK(t.run("let dot x y = sum (x * y)") == "Num a => [a] -> [a] -> a");
    CHECK(t.run("let norm x = sqrt (sum (x * x))") == "Floating a => [a] -> a");
    // y may be a scalar (the root mean square of x - y), which the display says.
    CHECK(t.run("let rmse x y = sqrt (sum ((x - y) ** 2.0) / float (length x))") ==
          "[float] -> [float] -> float  (a scalar also fits where an array combines elementwise)");
}

TEST_CASE("broadcasting: the result has the larger rank; an unknown rank waits, then defaults to the known one") {
    Typer t;
    CHECK(t.run("[[1.0]] * [2.0]") == "[[float]]");
    CHECK(t.run("[[[1]]] + [[1]] - [1]") == "[[[int]]]");
    CHECK(t.run("atan2 [[1.0]] [2.0]") == "[[float]]");
    CHECK(t.run("[[1.0]] > [2.0]") == "[[bool]]");
    // A function's operand of unknown rank: instantiated at each use.
    t.run("let f = \\a b -> a * b + 1.0");
    CHECK(t.run("f [[1.0]] [2.0]") == "[[float]]");
    CHECK(t.run("f [2.0] 3.0") == "[float]");
    // Defaulting: an operand of unknown shape is a scalar, before the
    // reduction of the result would default its rank to 1.
    t.run("let m = [[1.0, 2.0]]");
    CHECK(t.run("\\v -> sum (m - v)") == "float -> [float]");
    CHECK(t.run("\\(v : [float]) -> sum (m - v)") == "[float] -> [float]");
}

TEST_CASE("masks: an index of array type is a mask, decided when its type is known") {
    Typer t;
    t.run("let xs = [0.5, 1.5]");
    CHECK(t.run("xs[xs > 1.0]") == "[float]");
    CHECK(t.run("[[1]][[true]]") == "[[int]]");
    CHECK(t.run("generate 2 (\\i -> sum (xs[xs < float i]))") == "[float]");  // float i: open when indexed
    CHECK(t.run("generate 2 (\\i -> xs[i])") == "[float]");
    CHECK(t.run("xs with [xs > 1.0] = 0.0") == "[float]");
    CHECK(t.error("xs[[1.0, 0.0]]").find("an array index must be a mask of bools or a vector of ints") !=
          std::string::npos);
    CHECK(t.run("xs[[1, 0]]") == "[float]");  // integer literals: indices (a gather)
}

TEST_CASE("Ctrl-C stops a type check at the node it reached") {
    std::atomic<bool> cancel{false};
    Typer t;
    t.env.cancel = &cancel;
    CHECK(t.run("map (\\x -> x + 1) (iota 3)") == "[int]");
    cancel = true;
    try {
        t.run("map (\\x -> x + 1) (iota 3)");
        FAIL("the check went on after Ctrl-C");
    } catch (const Error& e) {
        CHECK(e.kind == ErrorKind::Interrupted);
        CHECK(e.message == "interrupted");
    }
}
