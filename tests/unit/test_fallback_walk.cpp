// Nothing falls back in silence (issue 22): every builtin, called inside the
// function of a `map`, a `generate`, a `zipWith`, a named lambda and a loop
// inside a function, either compiles or runs on the reference evaluator
// with a warning at the construct. Each call also gives the reference's
// result. A builtin added to the language must be added to the table below
// (or to the host-only list, with the reason): the walk covers them all.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "codegen/compiled_backend.h"
#include "differential.h"
#include "lang/builtins_eval.h"

using namespace shoal;

namespace {

// A scalar expression in `i : int` calling the builtin.
const std::map<std::string, std::string> kCalls = {
    {"+", "i + 1"}, {"-", "i - 1"}, {"*", "i * 3"}, {"/", "float i / 2.0"}, {"%", "i % 2"},
    {"**", "float i ** 2.0"}, {"==", "i == 1"}, {"!=", "i != 1"}, {"<", "i < 1"}, {"<=", "i <= 1"},
    {">", "i > 1"}, {">=", "i >= 1"}, {"&&", "i > 0 && i < 2"}, {"||", "i < 1 || i > 1"}, {"&", "i & 1"},
    {"|", "i | 2"}, {"^", "i ^ 3"}, {"<<", "i << 2"}, {">>", "i >> 1"}, {"++", "length ([float i] ++ xs)"},
    {"negate", "-(i + 1)"}, {"!", "!(i > 1)"}, {"~", "~i"}, {"sqrt", "sqrt (float i)"}, {"exp", "exp (float i)"},
    {"log", "log (float i + 1.0)"}, {"sin", "sin (float i)"}, {"cos", "cos (float i)"}, {"tan", "tan (float i)"},
    {"asin", "asin (float i / 4.0)"}, {"acos", "acos (float i / 4.0)"}, {"atan", "atan (float i)"},
    {"sinh", "sinh (float i)"}, {"cosh", "cosh (float i)"}, {"tanh", "tanh (float i)"}, {"erf", "erf (float i)"},
    {"floor", "floor (float i * 0.7)"}, {"ceil", "ceil (float i * 0.7)"}, {"round", "round (float i * 0.7)"},
    {"abs", "abs (i - 1)"}, {"atan2", "atan2 (float i) 2.0"}, {"pow", "pow (float i) 3.0"}, {"min", "min i 1"},
    {"max", "max i 1"}, {"int", "int (float i * 1.5)"}, {"long", "long i"}, {"float", "float i"},
    {"double", "double i"}, {"iota", "sum (iota (i + 1))"}, {"fill", "sum (fill (i + 1) 2.0)"},
    {"generate", "sum (generate (i + 1) (\\k -> k * 2))"}, {"random", "length (random (i + 1))"},
    {"length", "length (take (i + 1) xs)"}, {"rows", "rows m + i"}, {"cols", "cols m + i"},
    {"shape", "let (a, b) = shape m in a + b + i"}, {"reshape", "(reshape (2, 4) xs)[1, i]"},
    {"flatten", "(flatten m)[i]"}, {"transpose", "(transpose m)[i, 1]"},
    {"col", "(col xs)[i, 0]"}, {"where", "sum (where (xs > float i) xs 0.0)"},
    {"compress", "sum (compress (xs > float i) xs) + sum (xs[xs < float i])"},
    {"mean", "mean (drop i xs) + mean (transpose m)[0]"}, {"var", "var (take (i + 2) xs) + (var m)[1]"},
    {"std", "std (xs[xs > float i]) + (std (transpose m))[i]"},
    {"dot", "dot xs xs + dot (take 2 xs) [float i]"}, {"norm", "norm (drop i xs) + (norm m)[1]"},
    {"outer", "(outer xs xs)[i, 1] + float i"}, {"cumsum", "(cumsum xs)[i] + (cumsum m)[1, i]"},
    {"cumprod", "(cumprod (take 3 ys))[i]"}, {"eye", "(eye 4)[i, 1]"}, {"linspace", "(linspace 0.0 1.0 5)[i]"},
    {"arange", "(arange 0.0 2.0 0.5)[i]"},
    {"argsort", "float (argsort xs)[i] + (xs[argsort xs])[0]"},
    {"median", "median (drop i xs) + (median m)[1]"}, {"quantile", "quantile 0.5 (take (i + 1) xs)"},
    {"topk", "let (v, k) = topk 2 xs in v[i % 2] + float k[0]"}, {"unique", "length (unique (take (i + 2) ys))"},
    {"bincount", "(bincount ys)[i]"}, {"tally", "(tally 4 ys)[i]"}, {"histogram", "(histogram 4 0.0 4.0 xs)[i]"},
    {"solve", "(solve (eye 3 * 2.0) (take 3 xs))[i]"}, {"inv", "(inv (eye 3 * 2.0))[i, i]"},
    {"det", "det (eye 3 * float (i + 1))"}, {"lstsq", "(lstsq (eye 3 * 2.0) (take 3 xs))[i] + (lstsq m (take 3 xs))[1]"}, {"row", "(row xs - col xs)[0, i]"},
    {"matmul", "(matmul m (transpose m))[i, 0]"}, {"@", "(m @ transpose m)[0, i]"},
    {"map", "sum (map (\\v -> v * float i) xs)"}, {"zipWith", "sum (zipWith (\\a b -> a * float b + float i) xs ys)"},
    {"zipWith3", "sum (zipWith3 (\\a b c -> a + float b + c * float i) xs ys xs)"},
    {"zip", "let (a, b) = (zip xs ys)[i] in a + float b"}, {"zip3", "let (a, b, c) = (zip3 xs ys xs)[i] in a + float b + c"},
    {"unzip", "let (a, b) = unzip (zip xs ys) in a[i] + float b[i]"}, {"reduce", "reduce (+) 0.0 (take (i + 1) xs)"},
    {"sum", "sum (drop i xs)"}, {"product", "product (take (i + 1) xs)"}, {"maximum", "maximum (take (i + 1) xs)"},
    {"minimum", "minimum (drop i xs)"}, {"all", "all (map (\\v -> v > float i) xs)"},
    {"any", "any (map (\\v -> v > float i) xs)"}, {"count", "count (\\v -> v > float i) xs"},
    {"argmax", "argmax (take (i + 1) xs)"}, {"argmin", "argmin (drop i xs)"}, {"scan", "(scan (+) 0.0 xs)[i]"},
    {"scanExclusive", "(scanExclusive (+) 0.0 xs)[i]"}, {"segscan", "(segscan (+) 0 flags ys)[i + 2]"},
    {"gather", "(gather [2, 0, 1] xs)[i]"}, {"scatter", "(scatter xs [i, 3] [7.0, 8.0])[i]"},
    {"permute", "(permute (+) (fill 4 0) (\\k -> k % 4) ys)[i]"}, {"reverse", "(reverse xs)[i]"},
    {"interleave", "(interleave xs xs)[i]"}, {"take", "sum (take i xs)"}, {"drop", "sum (drop i xs)"},
    {"filter", "length (filter (\\v -> v > float i) xs)"}, {"sort", "(sort (reverse xs))[i]"},
    {"sortByKey", "let (k, v) = sortByKey (reverse ys) xs in v[i]"}, {"iterate", "iterate i (\\v -> v * 2) 1"},
    {"vmap", "(vmap (\\r -> sum r * float i) m)[1] + (vmap (\\r -> r[i] - mean r) m)[0]"},
};

// Builtins that only the host runs, and why they are not in the walk.
const std::map<std::string, std::string> kHostOnly = {
    {"show", "text, formatted on the host"}, {"load", "file I/O"}, {"save", "file I/O"}, {"loadCsv", "file I/O"}, {"loadCsv1", "file I/O"}, {"saveCsv", "file I/O"},
};

const char* kPrelude =
    "let xs = generate 8 (\\k -> float k * 0.5)\n"
    "let ys = generate 8 (\\k -> k)\n"
    "let m = generate (3, 4) (\\a b -> float (a + b))\n"
    "let flags = map (\\k -> k % 3 == 0) ys\n";

// The contexts a call is walked in: `E` is the call.
const char* kContexts[] = {
    "map (\\i -> E) (iota 3)",
    "generate 3 (\\i -> E)",
    "zipWith (\\i j -> E) (iota 3) (iota 3)",
    "let f = \\i -> E in map f (iota 3)",
    "map (\\i -> loop a = E for k < 2 do a) (iota 3)",
};

struct Outcome {
    std::string printed;
    std::vector<std::string> warnings;
    int64_t fallbacks = 0;  // builtins and nodes the reference evaluator computed
};

struct WarningLog : testing::Capture {
    std::vector<std::string> warnings;
    void warning(const std::string& w) override { warnings.push_back(w); }
};

Outcome run_compiled(const std::string& statement) {
    runtime::install_compiled_backend();
    Session s;
    WarningLog out;
    s.execute(":set check on", "<t>", out);
    s.execute(kPrelude, "<t>", out);
    CompiledBackend& b = *s.compiled_backend();
    out.all.clear();
    const compiled::BackendStats before = compiled::backend_stats(b);
    s.execute(statement, "<t>", out);
    const compiled::BackendStats& after = compiled::backend_stats(b);
    Outcome o{out.all, out.warnings, after.reference_replays - before.reference_replays};
    for (const auto& [name, n] : after.reference_builtins) {
        auto it = before.reference_builtins.find(name);
        o.fallbacks += n - (it == before.reference_builtins.end() ? 0 : it->second);
    }
    return o;
}

}  // namespace

TEST_CASE("fallback walk: every builtin in every function context compiles, or warns that it does not") {
    for (const std::string& name : evalimpl::builtin_names()) {
        INFO(name);
        CHECK_MESSAGE((kCalls.count(name) || kHostOnly.count(name)), "add the builtin to the walk (or to the host-only list)");
    }
    int compiled = 0, warned = 0;
    std::set<std::string> fell_back;
    for (const auto& [name, call] : kCalls) {
        for (const char* context : kContexts) {
            std::string statement = context;
            statement.replace(statement.find('E'), 1, call);
            CAPTURE(statement);
            const Outcome o = run_compiled(statement);
            const std::string ref = testing::run(std::string(kPrelude) + statement, false);
            // The reference printed the prelude's nothing, then the statement.
            CHECK_MESSAGE(testing::same_output(ref, o.printed), "compiled: " << o.printed << "reference: " << ref);
            CHECK_MESSAGE(o.printed.find("error") == std::string::npos, "the call itself is wrong: " << o.printed);
            if (o.fallbacks == 0) {
                ++compiled;
                continue;
            }
            fell_back.insert(name);
            bool said = false;
            for (const std::string& w : o.warnings) said = said || w.find("reference evaluator") != std::string::npos;
            CHECK_MESSAGE(said, "fell back to the reference evaluator without a warning");
            ++warned;
        }
    }
    std::string list;
    for (const std::string& n : fell_back) list += " " + n;
    MESSAGE(compiled << " calls compiled, " << warned << " ran on the reference evaluator with a warning:" << list);
}
