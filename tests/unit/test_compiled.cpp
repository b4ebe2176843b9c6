// The compiled backend against the reference evaluator: the same statements
// through both, printed results compared (integers exactly, floats within a
// relative 1e-4), plus fusion and kernel-cache checks on the backend's counters.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "differential.h"
#include "lang/builtins.h"
#include "lang/session.h"
#include "codegen/compiled_backend.h"
#include "runtime/executors.h"

using namespace shoal;

using shoal::testing::Capture;
using shoal::testing::differential;

TEST_CASE("compiled backend: expressions agree with the reference evaluator") {
    const char* programs[] = {
        "let x = map float (iota 1000)\nsum x\nproduct (map (\\i -> 1.0001) x)\nmaximum x\nminimum x",
        "let a = iota 10\na + 1\na * a - 3\na / 3\na % 4\n-a\n~a\na << 2\na >> 1\nmin a 5\nmax 4 a",
        "let a = iota 10\na == 3\na < 5 && a > 1\nall (a >= 0)\nany (a > 8)\n!(a < 3)",
        "let f = map double (iota 7)\nsqrt f\nexp f\nlog (f + 1.0)\nsin f\nfloor (f / 2.0)\nabs (f - 3.0)\nint (f * 1.5)",
        "let x = map (\\i -> float i * 0.5) (iota 100)\nlet y = zipWith (\\a b -> a * b + 1.0) x x\nsum y",
        "let saxpy a x y = zipWith (\\xi yi -> a * xi + yi) x y\nlet x = map float (iota 5)\nsaxpy 2.0 x x\nsaxpy 3.0 x x",
        "zipWith3 (\\a b c -> if a > 2 then b else c) (iota 6) (iota 6) (fill 6 7)",
        "generate (3, 4) (\\i j -> i * 10 + j)\nsum (generate (3, 4) (\\i j -> i * 10 + j))",
        "let m = generate (4, 5) (\\i j -> float (i + j))\nsum m\nmaximum m\nreduce (+) 1.0 m",
        "reduce (+) 10 (iota 100)\nreduce (*) 1 (map (\\i -> i % 3 + 1) (iota 10))\nreduce max 0 (iota 9)",
        "let a = iota 20\na[2:10:3]\nsum a[::2]\nreverse a\nsum (reverse (a * 2))",
        "let t = map float (iota 4)\nmap (\\i -> t[i % 4] + t[-1]) (iota 8)\nmap (\\i -> t[i]) (iota 5)",
        "let g x = let y = x * x in y + y\nmap g (iota 5)\nmap (\\x -> (x > 2) || (x == 0)) (iota 5)",
        "fill (2, 3) 1.5\nsum (fill 10 2)\niota 0\nsum (iota 0)\nmaximum (map float (iota 0))",
        "map (\\x -> x + 1) [1, 2, 3]\nlet z = zipWith (+) (iota 3) (iota 4)",
        "let xs = map (\\i -> float i) (iota 50)\nlet ys = filter (\\v -> v > 10.0) xs\nsum ys\nscan (+) 0.0 (xs * 2.0)",
        // Float powers: the shorthand exponents are arithmetic (lang/scalar_semantics.h, float_pow)
        // on every path; the native tier's copy (unit_native) is compared with the interpreter bit for bit.
        "let xs = [0.0, -0.0, 1.5, -2.5, 3.0, 1.0e30, -1.0e30, 1.0e-40, 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0]\n"
        "map (\\v -> v ** 2.0) xs\nmap (\\v -> v ** 3.0) xs\nmap (\\v -> v ** (-1.0)) xs\nmap (\\v -> v ** 0.5) xs\n"
        "map (\\v -> v ** 1.0) xs\nmap (\\v -> v ** 0.0) xs\nmap (\\v -> v ** 2.5) xs\nmap (\\v -> pow (double v) 0.5) xs\n"
        "map (\\v -> (double v) ** (-1.0)) xs\nxs ** 2.0\nsum (map (\\v -> v ** 2.0) (map float (iota 100)))",
    };
    for (const char* p : programs) differential(p);
}

TEST_CASE("compiled backend: the examples agree with the reference evaluator") {
    for (const char* name : {"rmse", "saxpy", "sdot", "sine", "blackscholes", "forward_difference", "spencer",
                             "addsum", "histogram", "filter", "prefix_sum", "segscan", "jacobi", "bitonic", "ndp"}) {
        std::ifstream in(std::string(SHOAL_SOURCE_DIR) + "/examples/" + name + ".shoal");
        std::stringstream text;
        text << in.rdbuf();
        INFO("example " << name);
        differential(text.str());
    }
}

TEST_CASE("compiled backend: sum (map f (x - y)) is one fused reduction reading x and y once") {
    runtime::install_compiled_backend();
    Session s;
    Capture out;
    s.execute(":set backend compiled\nlet x = map float (iota 65536)\nlet y = map (\\i -> float i * 0.5) (iota 65536)",
              "<t>", out);
    CompiledBackend& b = *s.compiled_backend();
    compiled::reset_backend_stats(b);
    s.execute("sum (map (\\d -> d * d) (x - y))", "<t>", out);
    const compiled::BackendStats& st = compiled::backend_stats(b);
    INFO(out.all);
    CHECK(st.plans_run == 1);
    CHECK(st.last_plan == "sum");
    const int64_t n = 65536;
    CHECK(st.last.global_bytes_loaded >= 8 * n);
    CHECK(st.last.global_bytes_loaded <= 8 * n + 8 * 1024);  // plus the block partials
}

TEST_CASE("compiled backend: saxpy with two constants compiles one kernel") {
    runtime::install_compiled_backend();
    Session s;
    Capture out;
    s.execute(":set backend compiled\nlet saxpy a x y = zipWith (\\xi yi -> a * xi + yi) x y\n"
              "let x = map float (iota 100)",
              "<t>", out);
    CompiledBackend& b = *s.compiled_backend();
    compiled::reset_backend_stats(b);
    s.execute("sum (saxpy 2.0 x x)\nsum (saxpy 3.0 x x)", "<t>", out);
    CHECK(out.all == "14850.0\n19800.0\n");
    CHECK(compiled::backend_stats(b).cache_misses == 1);
    CHECK(compiled::backend_stats(b).cache_hits == 1);
}

TEST_CASE("compiled backend: switching a pass off never returns a plan optimised under other options") {
    runtime::install_compiled_backend();
    Session s;
    Capture setup;
    s.execute("let x = map float (iota 1000)", "<t>", setup);
    CompiledBackend& b = *s.compiled_backend();
    auto run = [&](const std::string& statement) {
        compiled::reset_backend_stats(b);
        Capture out;
        s.execute(statement, "<t>", out);
        return out.all;
    };
    const std::string with_cse = run("sum (x * x)");
    const int64_t loads_with = compiled::backend_stats(b).last.global_bytes_loaded;
    compiled::set_pass_options(b, ir::PassOptions{}.disable("cse"));
    const std::string without_cse = run("sum (x * x)");
    CHECK(compiled::backend_stats(b).cache_misses == 1);  // not the plan cached with CSE
    CHECK(compiled::backend_stats(b).last.global_bytes_loaded > loads_with);  // x * x reads x twice
    CHECK(without_cse == with_cse);
    compiled::set_pass_options(b, ir::PassOptions{});
    CHECK(run("sum (x * x)") == with_cse);
    CHECK(compiled::backend_stats(b).cache_hits == 1);  // the first plan again
    CHECK(compiled::backend_stats(b).last.global_bytes_loaded == loads_with);
}

TEST_CASE("compiled backend: a map returning a tuple") {
    const char* programs[] = {
        "let (s, d) = map (\\i -> (i + 1, float i * 0.5)) (iota 10)\ns\nd\nsum d",
        "let (lo, hi) = zipWith (\\a b -> (min a b, max a b)) (iota 8) (reverse (iota 8))\nlo\nhi",
        "map (\\x -> (x, x > 3, double x)) (iota 6)\nlength (map (\\x -> (x, x)) (iota 0))",
        "let p = map (\\x -> (x * 2, x * 3)) (iota 5)\np\nlet (a, b) = p\nsum (zipWith (+) a b)",
        "let f x = if x > 2 then (x, 1.0) else (0, 2.0)\nmap f (iota 5)\nmap (\\x -> (x, [1, 2][x])) (iota 3)",
    };
    for (const char* p : programs) differential(p);
}

TEST_CASE("compiled backend: scans with operator sections") {
    const char* programs[] = {
        "let a = map (\\i -> (i * 7) % 13 - 6) (iota 3000)\nscan (+) 0 a\nscan (+) 5 a\nscanExclusive (+) 0 a\n"
        "scanExclusive (+) 5 a\nscan max 0 a\nscan min 2 a\nscanExclusive max (-100) a",
        "let f = map (\\i -> 1.0 + float (i % 5) * 0.001) (iota 2000)\nscan (*) 1.0 f\nscanExclusive (*) 2.0 f\n"
        "scan (+) 0.5 (f * 2.0)\nscan max 0.0 (reverse f)",
        "let b = map (\\i -> i % 17 != 3) (iota 1000)\nscan (&&) true b\nscanExclusive (||) false (!b)\n"
        "scan (||) true b",
        "let m = generate (5, 300) (\\i j -> i * j % 11)\nscan (+) 0 m\nscanExclusive (+) 1 m\nscan max 3 m",
        "scan (+) 0 (iota 0)\nscanExclusive (+) 0 (iota 0)\nscan (+) 0 [7]\nscanExclusive (*) 3 [7]",
        "let fl = map (\\i -> i % 7 == 0 || i % 11 == 0) (iota 5000)\nlet v = map (\\i -> i % 5 + 1) (iota 5000)\n"
        "segscan (+) 0 fl v\nsegscan (+) 10 fl v\nsegscan max 2 fl v\nsegscan min 100 fl (v * 3)\n"
        "segscan (*) 1.0 fl (map (\\x -> 1.0 + float x * 0.01) v)\nsegscan (&&) true fl (v > 1)\n"
        "segscan (+) 0 (!fl) v\nsegscan (+) 0 (iota 3 > 5) (iota 3)",
        "segscan (+) 0 [true, false] (iota 3)\nscan (-) 0 (iota 4)",
    };
    for (const char* p : programs) differential(p);
}

TEST_CASE("compiled backend: a scan fuses its producers into one plan") {
    runtime::install_compiled_backend();
    Session s;
    Capture out;
    s.execute(":set backend compiled\nlet x = map float (iota 5000)", "<t>", out);
    CompiledBackend& b = *s.compiled_backend();
    compiled::reset_backend_stats(b);
    s.execute("length (scan (+) 0.0 (map (\\v -> v * v) (reverse x)))", "<t>", out);
    const compiled::BackendStats& st = compiled::backend_stats(b);
    INFO(out.all);
    CHECK(out.all == "5000\n");
    CHECK(st.plans_run == 1);
    CHECK(st.last_plan == "scan");
}

TEST_CASE("compiled backend: index maps, ++, interleave, transpose and filter") {
    const char* programs[] = {
        "let a = map (\\i -> i * i) (iota 20)\ngather [3, 0, 19, 3] a\nsum (gather (reverse (iota 20)) (a * 2))\n"
        "gather [1, 0] (generate (3, 2) (\\i j -> i + j))\ngather [] a\ngather [0, 20] a",
        // An index map whose extent the consumer's loop does not read (found by test_random_programs).
        "zipWith (+) (iota 3) (drop 1 (iota 4))\nzipWith (\\a b -> a * b) (iota 4) (reverse (take 4 (iota 9)))\n"
        "sum (zipWith (+) (iota 5) (drop 2 (iota 7)))\nzipWith (\\a b -> b) (iota 3) (drop 1 (sum (generate (4, 1) (\\i j -> j))))",
        "let a = iota 10\ntake 3 a\ndrop 3 a\ntake (-2) a\ntake 99 a\ndrop 99 a\ndrop (-1) (a * 2)\n"
        "sum (take 4 (reverse a))\ntake 1 (generate (3, 2) (\\i j -> i * j))\ndrop 2 (fill (3, 2) 1.5)",
        "let a = iota 5\na ++ (a * 10)\n(map float a) ++ [0.5]\niota 0 ++ iota 0\n"
        "generate (2, 3) (\\i j -> i + j) ++ fill (1, 3) 9\niota 3 ++ iota 1000\nfill (1, 2) 0 ++ fill (1, 3) 0",
        "interleave (iota 4) (iota 4 * 10)\ninterleave (iota 0) (iota 0)\ninterleave (iota 2) (iota 3)\n"
        "sum (interleave (map float (iota 999)) (fill 999 0.5))",
        "let m = generate (37, 70) (\\i j -> i * 100 + j)\ntranspose m\nsum (transpose (m * 2))\n"
        "transpose (generate (1, 3) (\\i j -> j > 0))\ntranspose (generate (0, 4) (\\i j -> i))",
        "let xs = map (\\i -> (i * 7919 + 11) % 10007) (iota 50000)\nfilter (\\x -> x < 50) xs\n"
        "length (filter (\\x -> x % 2 == 0) xs)\nsum (filter (\\y -> y > 0.99) (map (\\x -> float x / 10007.0) xs))\n"
        "filter (\\x -> x > 100) (iota 50)\nfilter (\\b -> b) (iota 5 > 2)\nlet t = 3\nfilter (\\x -> x % t == 0) (iota 20)",
    };
    for (const char* p : programs) differential(p);
}

TEST_CASE("compiled backend: Black-Scholes prices call and put with one kernel") {
    std::ifstream in(std::string(SHOAL_SOURCE_DIR) + "/examples/blackscholes.shoal");
    std::stringstream text;
    text << in.rdbuf();
    const std::string program = text.str();
    const size_t split = program.find("let (call, put)");
    REQUIRE(split != std::string::npos);
    const size_t end = program.find('\n', split);
    runtime::install_compiled_backend();
    Session s;
    Capture out;
    s.execute(":set backend compiled\n" + program.substr(0, split), "<t>", out);
    CompiledBackend& b = *s.compiled_backend();
    compiled::reset_backend_stats(b);
    s.execute(program.substr(split, end - split), "<t>", out);
    const compiled::BackendStats& st = compiled::backend_stats(b);
    INFO(out.all);
    CHECK(st.plans_run == 1);
    CHECK(st.last_plan == "map");
    CHECK(st.last.launches == 1);
    CHECK(st.reference_replays == 0);
}

TEST_CASE("compiled backend: :ir and :cuda show the plan") {
    runtime::install_compiled_backend();
    Session s;
    Capture out;
    s.execute("let x = map float (iota 10)\n:ir sum (x * x)\n:cuda sum (x * x)\n:set", "<t>", out);
    CHECK(out.all.find("__global__") != std::string::npos);
    CHECK(out.all.find("backend compiled") != std::string::npos);  // the default where the compiler is registered
}

// The builtins the reference evaluator computed for a program run with the
// compiled backend ("name x count ..."), empty when everything compiled.
std::string reference_fallbacks(const std::string& program) {
    runtime::install_compiled_backend();
    Session s;
    Capture out;
    s.execute(":set backend compiled\n:set check on", "<t>", out);
    s.execute(program, "<t>", out);
    const compiled::BackendStats& st = compiled::backend_stats(*s.compiled_backend());
    std::string fallbacks;
    for (const auto& [b, n] : st.reference_builtins) fallbacks += " " + b + " x" + std::to_string(n);
    if (st.reference_replays) fallbacks += " replays x" + std::to_string(st.reference_replays);
    for (const auto& [why, n] : st.declines) fallbacks += " [" + why + "]";
    return fallbacks;
}

TEST_CASE("compiled backend: tuples, general folds, permutations and random agree and never fall back") {
    const char* programs[] = {
        // arrays of tuples
        "let a = map float (iota 6)\nlet b = iota 6\nlet p = zip a b\nmap (\\(x, i) -> x * float i) p\nunzip p",
        "let p = map (\\i -> (i, float i * 0.5)) (iota 5)\np\nmap (\\(i, f) -> (f, i + 1)) p\nfilter (\\(i, f) -> i % 2 == 0) p",
        "let p = zip (iota 4) (map (\\i -> i > 1) (iota 4))\nreverse p\np ++ p\ninterleave p p\ntake 2 p\ngather [3, 0] p",
        "fill 3 (1, 2.5)\ngenerate (2, 3) (\\i j -> (i + j, float i - float j))",
        // folds with any function, on tuples too
        "reduce (\\a b -> a + b) 3 (iota 10)\nreduce (\\a b -> if a > b then a else b) 0 [4, 9, 2]\nreduce (\\a b -> max a b) (-5) (map negate (iota 4))",
        "reduce (\\(s, n) (t, m) -> (s + t, n + m)) (0.0, 0) (zip (map float (iota 100)) (fill 100 1))",
        "let m = generate (3, 4) (\\i j -> i * 4 + j)\nreduce (\\a b -> a * b) 1 m\nreduce (\\a b -> a + b) 7 (generate (3, 0) (\\i j -> i))",
        "reduce (\\a b -> a - b) 100 (iota 0)\nreduce (\\a b -> a * b) 3 (iota 1)",
        "scan (\\a b -> a + b) 0 (iota 10)\nscanExclusive (\\a b -> a + b) 5 (iota 10)\nscan (\\a b -> min a b) 3 (map (\\i -> 9 - i) (iota 6))",
        "scan (\\(s, n) (t, m) -> (s + t, max n m)) (0, 0) (zip (iota 8) (map (\\i -> (i * 5) % 7) (iota 8)))",
        "scan (\\a b -> a * b) 1 (generate (3, 4) (\\i j -> i + j + 1))\nscanExclusive max 0 (generate (2, 3) (\\i j -> j - i))",
        "let f = map (\\i -> i % 4 == 0) (iota 12)\nsegscan (\\a b -> a + b) 0 f (iota 12)\nsegscan (\\a b -> a * b) 1 f (map (\\i -> i % 3 + 1) (iota 12))",
        // count, argmax, argmin
        "count (\\x -> x % 3 == 0) (iota 100)\ncount (\\x -> x > 2) (generate (3, 5) (\\i j -> i + j))",
        "let v = [3.0, 7.0, 7.0, -1.0, 7.0]\nargmax v\nargmin v\nargmax (generate (2, 3) (\\i j -> (i * 3 + j) % 4))\nargmin [2, 1, 1, 5]",
        "let n = sqrt (-1.0)\nargmax [n, 1.0, 3.0, 3.0]\nargmin [n, n]\nargmax [1.0, n, 5.0]",
        // permute and scatter
        "permute (+) (fill 5 0) (\\i -> i % 5) (iota 23)\npermute max (fill 3 0) (\\i -> i % 3) (iota 10)",
        "permute (+) (fill 4 0.0) (\\i -> if i < 10 then i % 4 else 9) (map float (iota 12))\npermute min (fill 2 100) (\\i -> i - 1) (iota 4)",
        // permute with any function: in source order per target, exactly as the reference
        "permute (\\a b -> a * 2 + b) (fill 3 1) (\\i -> i % 3) (iota 10)\npermute (\\a b -> a + b) (fill 4 0.5) (\\i -> 3 - i % 5) (map (\\i -> 1.0 / float (i + 1)) (iota 50))",
        "permute (\\(a, n) (b, m) -> (a + b, n + m)) (zip (fill 3 0.0) (fill 3 0)) (\\i -> i % 3) (zip (map float (iota 9)) (fill 9 1))",
        "permute (&&) (fill 3 true) (\\i -> i % 3) (map (\\i -> i != 4) (iota 9))\npermute (\\a b -> b) (iota 5) (\\i -> i - 2) (iota 0)\npermute (\\a b -> a - b) (iota 4) (\\i -> 7 - i) (iota 8)",
        // permute on matrices: rows as elements (atomics and ordered paths, targets out of range)
        "permute (+) (fill (3, 2) 0.0) (\\i -> i % 4) (generate (9, 2) (\\i j -> float (i * 2 + j) * 0.5))\npermute max (fill (4, 3) 0) (\\i -> 3 - i % 5) (generate (11, 3) (\\i j -> (i * 7 + j) % 10))",
        "permute (\\a b -> a * 2.0 + b) (fill (2, 3) 1.0) (\\i -> i - 1) (generate (4, 3) (\\i j -> float (i + j)))\npermute (+) (fill (3, 0) 0) (\\i -> i) (fill (5, 0) 1)",
        "scatter (fill 5 0) [1, 3, 1, 7] [10, 20, 30, 40]\nscatter (zip (fill 3 0) (fill 3 false)) [2, 0] (zip [5, 6] [true, true])",
        "scatter (generate (3, 2) (\\i j -> i * 2 + j)) [2, 2] (generate (2, 2) (\\i j -> 100 + i))",
        // sorts: radix passes, stable, NaNs last, -0.0 equal to 0.0, per row
        "sort [3, 1, 2]\nsort (map (\\i -> (i * 7) % 5) (iota 20))\nsort (generate (3, 4) (\\i j -> (i * 5 + j * 3) % 7))",
        "sort [2.5, sqrt (-1.0), -0.0, 0.0, -1.0]\nsort [true, false, true]\nsort (iota 0)\nsort (map (\\i -> long (i * 7919 % 1000) - 500) (iota 3000))",
        "sortByKey [3, 1, 2, 1] [10, 20, 30, 40]\nsortByKey (map (\\i -> i % 3) (iota 9)) (zip (iota 9) (map float (iota 9)))",
        "sortByKey [2.0, 1.0] (generate (2, 3) (\\i j -> i + j))\nsortByKey (map long (iota 5)) (iota 5)\nsortByKey (iota 0) (iota 0)",
        // random, shapes, reshape, iterate
        "let r = random 1000\nr[0]\nr[999]\nsum r\nrandom (2, 3)\nlet q = random 5\nq",
        "let m = generate (2, 3) (\\i j -> i * 3 + j)\nlength m\nrows m\ncols m\nshape m\nshape (iota 4)\nlength (zip (iota 3) (iota 3))",
        "reshape (3, 2) (iota 6)\nflatten (generate (2, 3) (\\i j -> i - j))\nsum (reshape (2, 2) (map float (iota 4)))",
        // integer powers: repeated squaring, wrapping, negative exponents
        "let b = map (\\i -> i - 3) (iota 7)\nb ** 3\nb ** (-1)\nb ** (-2)\n2 ** iota 40\nmap (\\i -> long i ** 21) (iota 5)",
        "iterate 5 (\\x -> x * 2 + 1) (iota 4)\niterate 300 (\\x -> x + 1) (fill 3 0)\nlet y = iterate 40 (\\x -> x + x) (fill 2 1)\ny",
    };
    for (const char* p : programs) {
        differential(p);
        INFO("program:\n" << p);
        CHECK(reference_fallbacks(p) == "");
    }
}

TEST_CASE("compiled backend: nested arrays are hoisted when invariant and loops in the thread otherwise") {
    const char* programs[] = {
        // invariant: computed once before the kernel (addSum)
        "let ys = map float (iota 100)\nmap (\\x -> x + sum ys) (map float (iota 5))\nmap (\\x -> x * maximum (ys * 2.0)) [1.0, 2.0]",
        // an invariant error raised only where the branch runs
        "let ys = iota 3\nmap (\\i -> if i > 100 then ys[7] else i) (iota 4)\nmap (\\i -> if i > 1 then ys[7] else i) (iota 4)",
        // element dependent: sequential loops in the thread (ndp)
        "let xs = map float (iota 50)\nmap (\\i -> sum (take i xs)) (iota 10)\nmap (\\i -> sum (xs[i:] * xs[i:])) (iota 5)",
        "let xs = iota 30\ngenerate 5 (\\b -> count (\\x -> x % 5 == b) xs)\nmap (\\i -> maximum (drop i (reverse xs))) (iota 4)",
        "let xs = iota 10\nmap (\\i -> reduce (\\a b -> a * 2 + b) i (take 3 xs)) (iota 4)\nmap (\\i -> length (take i xs)) (iota 12)",
        "let xs = iota 10\nmap (\\i -> sum (map (\\x -> x * i) (take i xs))) (iota 5)\nmap (\\i -> sum (zipWith (+) (take i xs) (drop 2 xs))) (iota 5)",
        "let xs = iota 10\nmap (\\i -> sum (generate i (\\j -> j * j)) + sum (iota i) + sum (fill i 2)) (iota 6)\nmap (\\i -> xs[-i - 1]) (iota 3)",
        // loops in the thread
        "map (\\n -> loop x = 1 for i < n do x * 2 + i) (iota 8)\nmap (\\n -> loop (a, b) = (0, 1) for i < n do (b, a + b)) (iota 10)",
        // a state that swaps: every next value taken before any variable changes
        "map (\\i -> let (a, b) = loop (a, b) = (float i, 1.0) for k < 3 do (b, a) in a - 10.0 * b) (iota 5)",
        "map (\\n -> loop x = n while x > 1 do if x % 2 == 0 then x / 2 else 3 * x + 1) (iota 9)",
        "let xs = map float (iota 10)\nmap (\\k -> loop acc = 0.0 for i < k do acc + xs[i]) (iota 5)\nmap (\\k -> loop (s, j) = (0, k) while j > 0 do (s + j, j - 1)) (iota 6)",
        "let xs = iota 10\nmap (\\i -> sum (gather [i, 0] xs)) (iota 3)\nmap (\\i -> xs[i:i + 2][1]) (iota 3)\nmap (\\i -> xs[20 + i]) (iota 2)",
        // filtered nested arrays: folds and map over the elements kept
        "let xs = map float (iota 12)\nmap (\\i -> length (filter (\\v -> v > float i) xs)) (iota 4)\n"
        "map (\\i -> sum (map (\\v -> v * 2.0) (filter (\\v -> v > float i) xs))) (iota 4)\n"
        "map (\\i -> maximum (filter (\\v -> v < float i) xs)) (iota 3)\n"
        "map (\\i -> reduce (\\a b -> a * 2.0 + b) 0.0 (filter (\\v -> v > 7.0) (filter (\\v -> v > float i) xs))) (iota 3)\n"
        "map (\\i -> count (\\v -> v < 9.0) (filter (\\v -> v > float i) xs)) (iota 4)\n"
        "map (\\i -> any (filter (\\b -> b) (map (\\v -> v > float i + 8.0) xs))) (iota 5)",
        // ++ and iterate in the thread
        "let xs = map float (iota 6)\nmap (\\i -> sum (take (i + 2) ([float i, 10.0] ++ xs))) (iota 4)\n"
        "map (\\i -> length (xs ++ take i xs) + int (([1.0] ++ xs)[i])) (iota 4)\n"
        "map (\\i -> iterate i (\\v -> v * 2) 1) (iota 5)\n"
        "map (\\i -> let (a, b) = iterate 3 (\\(p, q) -> (q, p + q + i)) (0, 1) in a * 100 + b) (iota 3)",
        // an array of tuples indexed in the thread
        "let xs = map float (iota 6)\nlet ys = iota 6\nmap (\\i -> let (a, b) = (zip xs ys)[i] in a + float b) (iota 3)\n"
        "map (\\i -> let (a, b, c) = (zip3 xs ys xs)[-1 - i] in a * float b - c) (iota 4)\n"
        "map (\\i -> let (a, b) = (zip xs ys)[i + 9] in a) (iota 2)",
        // scatter in the thread: the last value aimed at an element wins, others are ignored
        "let xs = map float (iota 8)\nmap (\\i -> (scatter xs [i, 3, i] [7.0, 8.0, 9.0])[i]) (iota 4)\n"
        "map (\\i -> sum (scatter xs [i, 30, -1] [7.0, 8.0, 5.0])) (iota 3)\nmap (\\i -> sum (scatter xs [i] [7.0, 8.0])) (iota 3)",
        // scans in the thread: each element folds its prefix in order
        "let xs = map (\\k -> float ((k * 5) % 8)) (iota 8)\nmap (\\i -> (scan (+) 0.0 (take (i + 1) xs))[i]) (iota 4)\n"
        "map (\\i -> (scanExclusive (+) 0.0 (drop i xs))[2]) (iota 3)\n"
        "map (\\i -> sum (scan (\\a b -> a * 2.0 + b) 1.0 (take i xs))) (iota 4)\n"
        "map (\\i -> (scan (+) 0.0 (take (i + 1) xs))[i + 5]) (iota 3)",
        // sort in the thread: stable, ascending, NaNs last, -0.0 and 0.0 in their order
        "let xs = [3.0, -0.0, 1.0, 0.0, -2.0, 5.0, 1.0, 4.0]\nmap (\\i -> (sort (take (i + 3) xs))[1]) (iota 5)\n"
        "map (\\i -> sum (map (\\v -> v * v) (sort (drop i xs)))) (iota 4)\n"
        "let ns = map (\\v -> if v > 2.0 then 0.0 / 0.0 else v) xs\nmap (\\i -> (sort (drop i ns))[4 - i]) (iota 4)\n"
        "let ys = [5, 3, 9, 1, 3]\nmap (\\i -> (sort (take (i + 1) ys))[i]) (iota 5)\nmap (\\i -> (sort (take 2 ys))[i]) (iota 3)",
    };
    for (const char* p : programs) {
        differential(p);
        INFO("program:\n" << p);
        CHECK(reference_fallbacks(p) == "");
    }
}

TEST_CASE("compiled backend: every example runs without the reference evaluator") {
    std::vector<std::filesystem::path> examples;
    for (const auto& e : std::filesystem::directory_iterator(std::string(SHOAL_SOURCE_DIR) + "/examples"))
        if (e.path().extension() == ".shoal") examples.push_back(e.path());
    REQUIRE(examples.size() >= 15);
    for (const auto& path : examples) {
        std::ifstream in(path);
        std::stringstream text;
        text << in.rdbuf();
        INFO("example " << path.filename().string());
        CHECK(reference_fallbacks(text.str()) == "");
    }
}

// A session's output with its warnings kept apart, in order.
struct WarningCapture : Capture {
    std::vector<std::string> seen;
    void warning(const std::string& w) override { seen.push_back(w); }
};

TEST_CASE("compiled backend: a nested reduction that runs sequentially in each thread is a warning, once") {
    runtime::install_compiled_backend();
    Session s;
    WarningCapture out;
    s.execute(":set backend compiled\nlet xs = map float (iota 50)", "<t>", out);
    s.execute("map (\\i -> sum (take i xs) + sum (drop i xs)) (iota 5)", "<t>", out);
    REQUIRE(out.seen.size() == 2);  // two sites, each reported once
    CHECK(out.seen[0].find("<t>:1:12: warning: sum over a nested array runs sequentially inside each thread") == 0);
    CHECK(out.seen[1].find("<t>:1:30: warning:") == 0);
    out.seen.clear();
    s.execute("map (\\x -> x + sum xs) (map float (iota 5))", "<t>", out);  // invariant: hoisted, no warning
    s.execute(":set backend reference\nmap (\\i -> sum (take i xs)) (iota 5)", "<t>", out);
    CHECK(out.seen.empty());
}

TEST_CASE("compiled backend: argmin and argmax inside a function compile, as the reference walks them") {
    const std::string program =
        "let cx = [0.25, 0.5, 0.75, 0.5]\nlet px = map (\\i -> float i / 9.0) (iota 10)\n"
        "map (\\i -> argmin (generate 4 (\\k -> (px[i] - cx[k]) * (px[i] - cx[k])))) (iota 10)\n"
        "map (\\i -> argmax (generate 4 (\\k -> (px[i] - cx[k]) * (px[i] - cx[k])))) (iota 10)\n"
        "map (\\i -> argmin (take (i + 1) [3.0, 1.0, 0.0 / 0.0, 1.0, -2.0])) (iota 5)\n"
        "map (\\i -> argmax (take (i + 1) [0.0 / 0.0, 1.0, 0.0 / 0.0, 5.0, 5.0])) (iota 5)\n"
        "map (\\i -> argmax (take (i + 1) [3, 9, 9, 1])) (iota 4)\n"
        "map (\\i -> argmin (take i [3.0, 1.0])) (iota 3)";  // the first is empty: the reference's error
    differential(program);
    CHECK(reference_fallbacks(program) == "");
}

TEST_CASE("compiled backend: `with` updates are kernels, as the reference computes them, one per stencil step") {
    const std::string program =
        "let a = map float (iota 10)\n"
        "a with [2:5] = [7.0, 8.0, 9.0]\na with [::3] = 0.5\na with [8:1:-2] = map float (iota 4)\n"
        "a with [-1] = 42.0\na with [3:3] = 1.0\n(a * 2.0) with [1:-1] = a[2:] - a[:-2]\n"
        "let m = generate (4, 5) (\\i j -> i * 10 + j)\n"
        "m with [1:-1, 1:-1] = m[:-2, 1:-1] + m[2:, 1:-1]\nm with [2] = fill 5 -1\nm with [:, 4] = iota 4\n"
        "m with [::2, ::-2] = generate (2, 3) (\\i j -> 100 + i + j)\n"
        "let t = loop u = map float m for it < 4 do u with [1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])\n"
        "t\n"
        "a with [2:5] = [1.0, 2.0]";  // the reference's shape mismatch error
    differential(program);
    CHECK(reference_fallbacks(program) == "");
    runtime::install_compiled_backend();
    Session s;
    Capture out;
    s.execute(":set backend compiled\nlet h = generate (64, 64) (\\i j -> float (i + j))\nlet h1 = h with [0] = fill 64 1.0\nh1",
              "<t>", out);
    const compiled::BackendStats& st = compiled::backend_stats(*s.compiled_backend());
    const int64_t before = st.plans_run;
    s.execute("let h2 = loop u = h1 for it < 5 do u with [1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + "
              "u[1:-1, :-2] + u[1:-1, 2:])\nh2[1, 1]",
              "<t>", out);
    CHECK(st.plans_run - before == 5);  // each step one kernel: the stencil fused into the update
}

TEST_CASE("compiled backend: a function that does not compile is a warning at its builtin, never silent") {
    runtime::install_compiled_backend();
    Session s;
    WarningCapture out;
    s.execute(":set backend compiled\nlet xs = map float (iota 50)", "<t>", out);
    // random inside a function is the one builtin left to the reference evaluator (its numbers are the session's stream).
    s.execute("map (\\i -> sum (random (i + 1))) (iota 5)", "<t>", out);
    REQUIRE(out.seen.size() == 1);
    CHECK(out.seen[0].find("<t>:1:1: warning: `map` runs on the reference evaluator") == 0);
    CHECK(out.seen[0].find("cannot compile the function random") != std::string::npos);
    out.seen.clear();
    s.execute(":set backend reference\nmap (\\i -> sum (random (i + 1))) (iota 5)", "<t>", out);
    CHECK(out.seen.empty());
}

// Issue 3: every builtin goes through the pipeline. One program per builtin
// that takes or makes arrays (file I/O excepted: reading and writing files is
// host work), checked against the reference and for fallbacks; a builtin
// added to the documentation without a sample here fails the test.
TEST_CASE("compiled backend: every array builtin runs compiled") {
    const std::map<std::string, std::string> samples = {
        {"iota", "iota 7"}, {"fill", "fill (2, 3) 1.5"}, {"generate", "generate (2, 3) (\\i j -> i * j)"},
        {"random", "random 4"}, {"length", "length (iota 5)"}, {"rows", "rows (fill (2, 3) 0)"},
        {"cols", "cols (fill (2, 3) 0)"}, {"shape", "shape (fill (2, 3) 0)"},
        {"reshape", "reshape (2, 3) (iota 6)"}, {"flatten", "flatten (fill (2, 3) 7)"},
        {"transpose", "transpose (generate (2, 3) (\\i j -> i * 3 + j))"},
        {"col", "col (iota 3) * generate (3, 2) (\\i j -> i + j)"},
        {"where", "where (iota 4 > 1) (iota 4) (col [10, 20])"},
        {"compress", "compress [true, false, true] (generate (3, 2) (\\i j -> i + j))"},
        {"mean", "mean (generate (3, 4) (\\i j -> float (i * j) * 0.5))"},
        {"var", "var (generate (3, 4) (\\i j -> float (i * j) * 0.5))"},
        {"std", "std (map (\\i -> float i * 0.25) (iota 7))"},
        {"dot", "dot (generate (2, 3) (\\i j -> i + j)) [1, 2, 3]"}, {"norm", "norm (map float (iota 5))"},
        {"outer", "outer (iota 3) (iota 4)"}, {"cumsum", "cumsum (generate (2, 5) (\\i j -> i * j))"},
        {"cumprod", "cumprod (map (\\i -> i % 3 + 1) (iota 6))"}, {"eye", "eye 4"},
        {"linspace", "linspace 1.0 2.0 7"}, {"arange", "arange 0.5 3.0 0.25"},
        {"argsort", "argsort (map (\\i -> (i * 7) % 5) (iota 9))"},
        {"median", "median (generate (3, 4) (\\i j -> float ((i * 5 + j * 3) % 7)))"},
        {"quantile", "quantile 0.3 (map (\\i -> float ((i * 7) % 5)) (iota 9))"},
        {"topk", "topk 2 (generate (2, 5) (\\i j -> (i * 3 + j * 7) % 5))"},
        {"unique", "unique (map (\\i -> (i * 7) % 5) (iota 9))"},
        {"bincount", "bincount (map (\\i -> (i * 7) % 5) (iota 9))"}, {"tally", "tally 3 (map (\\i -> i % 4) (iota 9))"},
        {"histogram", "histogram 3 0.0 1.0 (map (\\i -> float i / 8.0) (iota 9))"},
        {"solve", "solve (generate (3, 3) (\\i j -> if i == j then 4.0 else float (i + j) * 0.5)) (generate (3, 2) (\\i j -> float (i - j)))"},
        {"inv", "inv (generate (3, 3) (\\i j -> if i == j then 4.0 else float (i * j) * 0.25))"},
        {"det", "det (generate (4, 4) (\\i j -> if i == j then 3.0 else float ((i + 2 * j) % 3)))"},
        {"lstsq", "lstsq (generate (5, 3) (\\i j -> float ((i * 3 + j * 5) % 7) + (if i == j then 2.0 else 0.0))) (generate (5, 2) (\\i j -> float (i - j)))"},
        {"vmap", "vmap (\\r -> let e = exp (r - maximum r) in e / sum e) (generate (3, 4) (\\i j -> float ((i * 5 + j) % 7)))"}, {"row", "row (iota 4) - col (iota 2)"}, {"map", "map (\\x -> x * x) (iota 5)"},
        {"zipWith", "zipWith (+) (iota 4) (iota 4)"}, {"zipWith3", "zipWith3 (\\a b c -> a * b + c) (iota 3) (iota 3) (iota 3)"},
        {"zip", "zip (iota 3) (map float (iota 3))"}, {"zip3", "zip3 (iota 2) (iota 2) (fill 2 true)"},
        {"unzip", "unzip (zip (iota 3) (iota 3))"}, {"reduce", "reduce (\\a b -> a + b) 0 (iota 9)"},
        {"sum", "sum (iota 9)"}, {"product", "product (map (\\i -> i + 1) (iota 5))"}, {"maximum", "maximum [3, 9, 2]"},
        {"minimum", "minimum [3, 9, 2]"}, {"all", "all (map (\\i -> i < 9) (iota 5))"}, {"any", "any [false, true]"},
        {"count", "count (\\x -> x > 2) (iota 9)"}, {"argmax", "argmax [1, 5, 2]"}, {"argmin", "argmin [4, 1, 1]"},
        {"scan", "scan (+) 0 (iota 6)"}, {"scanExclusive", "scanExclusive (+) 0 (iota 6)"},
        {"segscan", "segscan (+) 0 [true, false, true, false] (iota 4)"}, {"gather", "gather [2, 0] (iota 3)"},
        {"scatter", "scatter (fill 3 0) [1] [9]"}, {"permute", "permute (+) (fill 3 0) (\\i -> i % 3) (iota 9)"},
        {"reverse", "reverse (iota 4)"}, {"interleave", "interleave (iota 3) (iota 3)"}, {"take", "take 2 (iota 5)"},
        {"drop", "drop 2 (iota 5)"}, {"filter", "filter (\\x -> x % 2 == 0) (iota 9)"}, {"sort", "sort [3, 1, 2]"},
        {"sortByKey", "sortByKey [2, 1] [10, 20]"}, {"iterate", "iterate 3 (\\x -> x + x) (iota 4)"},
        {"++", "iota 3 ++ iota 2"}, {"negate", "negate (iota 3)"}, {"!", "! [true, false]"}, {"~", "~ (iota 3)"},
        {"abs", "abs (map (\\i -> i - 2) (iota 4))"}, {"min", "min (iota 4) (fill 4 2)"}, {"max", "max (iota 4) 2"},
        {"pow", "pow (map float (iota 3)) 2.0"}, {"atan2", "atan2 (map float (iota 3)) 2.0"},
        {"**", "iota 4 ** 2"},
        {"matmul", "matmul (generate (3, 2) (\\i j -> float (i + j))) (generate (2, 4) (\\i j -> float (i - j)))"},
        {"@", "generate (3, 2) (\\i j -> double (i * j)) @ generate (2, 2) (\\i j -> double (i + 1))"},
    };
    const std::set<std::string> host_io = {"load", "save", "loadCsv", "loadCsv1", "saveCsv"};
    for (const auto& d : builtin_docs()) {
        const bool arrays = d.signature.find('[') != std::string::npos || d.signature.find("arr") != std::string::npos ||
                            d.signature.find("elementwise on arrays") != std::string::npos;
        if (!arrays || host_io.count(d.name)) continue;
        std::string program;
        if (auto it = samples.find(d.name); it != samples.end()) {
            program = it->second;
        } else if (d.signature.find("a -> a -> ") == 0 || d.signature.find("a -> a -> bool") == 0) {
            program = "let a = map (\\i -> float i + 0.5) (iota 4)\n(" + d.name + ") a (reverse a)";  // binary elementwise
            if (d.signature.find("integral") != std::string::npos) program = "(" + d.name + ") (iota 4) (fill 4 1)";
        } else if (d.signature.find("elementwise on arrays") != std::string::npos) {
            program = d.name + " (map (\\i -> float i * 0.25) (iota 4))";  // unary elementwise
        } else {
            FAIL_CHECK("no sample program for the array builtin '" << d.name << "'");
            continue;
        }
        INFO("builtin " << d.name << ": " << program);
        differential(program);
        CHECK(reference_fallbacks(program) == "");
    }
}

TEST_CASE("compiled backend: :cuda f traces a function with symbolic parameters") {
    runtime::install_compiled_backend();
    Session s;
    Capture out;
    s.execute("let rmse (xs : [float]) (ys : [float]) = sqrt (sum (map (\\d -> d * d) (xs - ys)) / float (length xs))\n"
              ":cuda rmse",
              "<t>", out);
    CHECK(out.all.find("//   xs : [float]   buffer xs, extent len_xs") != std::string::npos);
    CHECK(out.all.find(". long long sum_blocks = min((len_xs + 4095) / 4096, 1024)") != std::string::npos);
    CHECK(out.all.find("const float* __restrict__ ys") != std::string::npos);
    // Kernels are named after the function, the plan's entry after its parameters.
    CHECK(out.all.find("launch plan rmse(long long len_xs, long long len_ys, const float xs[len_xs], const float ys[len_ys])") !=
          std::string::npos);
    CHECK(out.all.find("void __launch_bounds__(256) rmse_sum_partials(") != std::string::npos);
    CHECK(out.all.find("// sum (map (\\d -> d * d) (xs - ys))   -- <t>:1:") != std::string::npos);
    CHECK(out.all.find("error") == std::string::npos);
    Capture poly;
    s.execute("let saxpy a x y = a * x + y\n:cuda saxpy\n:ir (saxpy : float -> [float] -> [float] -> [float])\n:cuda map",
              "<t>", poly);
    CHECK(poly.all.find("error: 'saxpy' is polymorphic") != std::string::npos);
    CHECK(poly.all.find("out[gid] = (c") != std::string::npos);  // a * x + y with a lifted
    CHECK(poly.all.find("error: :cuda of a function needs parameters of known scalar or array types") != std::string::npos);
}

TEST_CASE("compiled backend: :cuda names buffers after the bindings, folds the helpers, --full shows them") {
    runtime::install_compiled_backend();
    Session s;
    Capture setup;
    s.execute("let x = generate 1000 (\\i -> float i)\nlet out = x * 2.0\nlet tree = iota 10", "<t>", setup);
    Capture folded;
    s.execute(":cuda x + out", "<t>", folded);
    INFO(folded.all);
    // x and out are bindings; `out` clashes with the plan's result buffer and keeps its own name.
    CHECK(folded.all.find("launch plan map(long long len_x, long long len_out, const float x[len_x], const float out_1[len_out]) -> float out[len_x]") !=
          std::string::npos);
    CHECK(folded.all.find("in0") == std::string::npos);
    CHECK(folded.all.find("__device__") == std::string::npos);  // the prelude is folded
    CHECK(folded.all.find("// Shoal's helper functions are left out (wrapping arithmetic): :cuda --full") != std::string::npos);
    Capture full;
    s.execute(":cuda --full x + out\n1 + 1", "<t>", full);  // the option does not make it read the next line
    CHECK(full.all.find("__device__ __forceinline__ long long shoal_add(") != std::string::npos);
    CHECK(full.all.find("left out") == std::string::npos);
    CHECK(full.all.find("error") == std::string::npos);
    CHECK(full.all.ends_with("\n2\n"));
    // A name that is a shared array of the kernel (the reduction's tree) is renamed, never clashes.
    Capture reduce;
    s.execute(":cuda sum (map float tree)", "<t>", reduce);
    CHECK(reduce.all.find("const int* __restrict__ tree_1") != std::string::npos);
    CHECK(reduce.all.find("error") == std::string::npos);
    // The cached plan keeps canonical names: the same structure over other bindings is a cache hit.
    compiled::reset_backend_stats(*s.compiled_backend());
    Capture again;
    s.execute("let y = x + 1.0\nlet z = out + 1.0", "<t>", again);
    CHECK(compiled::backend_stats(*s.compiled_backend()).cache_hits == 1);
}
