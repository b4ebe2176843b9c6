// Masks (docs/language.md, "Masks"): `xs[mask]` is `compress mask xs` (a
// filter plan with the mask as its flags; a matrix's rows kept as their
// elements), `xs with [mask] = v` is `where mask v xs`; both agree with the
// reference evaluator, in kernels and inside compiled functions.
#include <doctest/doctest.h>

#include <string>

#include "differential.h"

TEST_CASE("masks: kernels agree with the reference on selection and update") {
    const std::string setup =
        "let xs = [0.1, 0.7, 0.3, 0.9, 0.5]\nlet m = generate (4, 3) (\\i j -> float (i * 3 + j))\n"
        "let ts = [(1, 2.5), (3, 4.5)]\nlet e = xs[xs > 2.0]\n";
    for (const char* p : {
             "xs[xs > 0.4]", "xs[xs > 2.0]", "e", "length e", "sum (xs[xs < 0.6] * 2.0)", "m[m[:, 0] > 2.0]",
             "m[[false, true, false, true]]", "m[[false, false, false, false]]", "(iota 5)[xs > 0.2]",
             "compress [true, false, true, true, false] xs", "compress [true, true] [[1, 2], [3, 4]]",
             "xs[[true, false]]", "m[[true]]", "xs with [xs > 0.5] = 0.0", "m with [[true, false, true, false]] = -1.0",
             "m with [[true, false, true, false]] = [7.0, 8.0, 9.0]", "xs with [[true]] = 1.0",
             "map (\\t -> sum (xs[xs > t])) [0.2, 0.5, 1.0]", "map (\\t -> length (xs[xs > t])) [0.0, 0.6]",
             "map (\\t -> sum (xs[[true, false]])) [0.2]", "loop a = xs for i < 3 do a with [a > 0.2] = a[0]",
             "let (k, v) = unzip (compress [true, false] ts) in (k, v)"}) {
        INFO(p);
        CHECK(shoal::testing::differential(setup + p));
    }
}

TEST_CASE("masks: type errors say what a mask is") {
    CHECK(shoal::testing::run("[1, 2][[1.5, 0.5]]", true)
              .find("an array index must be a mask of bools or a vector of ints, found [float]") != std::string::npos);
    CHECK(shoal::testing::run("let xs = [1.0, 2.0]\nxs with [xs > 1.0] = [5.0]", true)
              .find("a mask update takes a scalar") != std::string::npos);
}

TEST_CASE("statistics: kernels agree with the reference (mean, var, std, dot, norm, outer, cumsum, cumprod)") {
    const std::string setup = "let m = generate (5, 7) (\\i j -> float (i * 7 + j * j) * 0.25)\nlet xs = m[2]\n";
    for (const char* p : {"mean m", "var m", "std m", "mean xs", "var xs", "std (transpose m)", "mean (exp (m * 0.1))",
                          "m - col (mean m)", "(m - col (mean m)) / col (std m)", "var (m[m[:, 0] > 3.0])",
                          "map (\\i -> mean m[i]) (iota 5)", "map (\\i -> std (m[i][m[i] > 2.0])) (iota 5)",
                          "map (\\i -> var m[i]) (iota 5)", "mean (fill (3, 0) 1.0)", "dot m xs", "norm m",
                          "outer xs (xs * 2.0)", "cumsum m", "cumprod (xs * 0.01 + 1.0)",
                          "map (\\i -> dot m[i] xs + norm m[i]) (iota 5)", "map (\\i -> dot m[i] [2.0]) (iota 5)",
                          "eye 3", "m @ eye 7", "linspace 0.0 1.0 9", "arange 0.0 2.0 0.3", "argsort xs",
                          "xs[argsort xs]", "m[[4, 0, 4]]", "map (\\i -> sum (xs[[i, 0]])) (iota 3)", "xs[[9]]"}) {
        INFO(p);
        CHECK(shoal::testing::differential(setup + p));
    }
}
