// Broadcasting by NumPy's rules (docs/language.md, "Elementwise"): the
// compiled kernels agree with the reference evaluator on every form, a
// stretched axis is an index map (no copy), and the footgun -- a vector of
// one value per row lined up with a square matrix's columns -- is warned
// of, while correct code is not.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "differential.h"
#include "lang/session.h"
#include "runtime/executors.h"
#include "session_capture.h"

namespace {

using shoal::Session;
using shoal::testing::printed;
using shoal::testing::warnings_of;


const char* kSquare = "let m = generate (3, 3) (\\i j -> float (i * 3 + j * j))";
const char* kWide = "let w = generate (2, 3) (\\i j -> float (i * 3 + j * j))";

}  // namespace

TEST_CASE("broadcasting: kernels agree with the reference on every form") {
    const std::string setup = std::string(kSquare) + "\n" + kWide +
                              "\nlet v3 = [1.0, -2.0, 0.5]\nlet v2 = [10.0, 20.0]\nlet one = [3.0]\n"
                              "let t = generate (2, 1, 3) (\\i j k -> i * 10 + k)\n";
    for (const char* e : {
             "w - v3", "v3 * w", "w + col v2", "col v2 - w", "row v3 * col v2", "w - row v3", "m - one", "one + v3",
             "max w (col v2)", "w > v3", "atan2 w (col v2)", "t + [[1], [2], [3]]", "t * [7, 8, 9]",
             "w[0:1] + w", "sum (w - v3)", "maximum (w * col v2)", "exp (w - col (maximum w))",
             "let e = exp (w - col (maximum w)) in e / col (sum e)", "(w - v3)[1, 2]",
             "map (\\i -> sum (w[i] * v3)) (iota 2)", "map (\\i -> sum (w[i] * one)) (iota 2)",
             "loop a = w for i < 3 do a - v3 * 0.5", "w - [1.0, 2.0]", "map (\\i -> sum (w[i] * v2)) (iota 2)",
             // with: the value broadcasts to the selected part
             "w with [0:1] = v3", "w with [:, 1:3] = col v2", "m with [1] = one", "w with [0:2] = v2",
             // where: the condition and both values broadcast
             "where (w > 2.0) w 0.0", "where (w > v3) w (col v2)", "where [true, false, true] w (-w)",
             "where (v3 > 0.0) 1 0", "map (\\i -> sum (where (w[i] > 1.0) w[i] one)) (iota 2)",
             "where (w > 0.0) w [1.0, 2.0]",
             // zipWith, zipWith3: the arrays broadcast together
             "zipWith (\\a b -> a * b + 1.0) w v3", "zipWith (+) (col v2) v3", "zipWith3 (\\a b c -> a + b * c) w one v3",
             "map (\\i -> sum (zipWith (*) w[i] one)) (iota 2)", "zipWith (+) w [1.0, 2.0]",
             "map (\\i -> sum (zipWith (*) w[i] v2)) (iota 2)"}) {
        INFO(e);
        CHECK(shoal::testing::differential(setup + e));
    }
}

TEST_CASE("broadcasting: a stretched axis reads index 0 in the one fused kernel, no copy") {
    shoal::runtime::install_compiled_backend();
    Session s;
    const std::string all = printed(s, std::string(kWide) + "\nlet c = [1.0, 2.0]\n:cuda w - col c");
    INFO(all);
    CHECK(all.find("1. alloc float out[len_w0 * len_w1]") != std::string::npos);
    CHECK(all.find("2. launch map") != std::string::npos);
    CHECK(all.find("3. launch") == std::string::npos);  // one kernel: the column is not materialised
    CHECK(all.find("w[gid] - c[") != std::string::npos);
}

TEST_CASE("broadcasting: a vector of one value per row, lined up with a square matrix's columns, is warned of") {
    // The footgun, as NumPy would run it silently.
    for (const char* e : {"m - maximum m", "maximum m - m", "exp m - maximum m", "m - sum m / 3.0",
                          "let mx = minimum m in m * mx", "m / product (m + 1.0)"}) {
        INFO(e);
        const std::vector<std::string> w = warnings_of(kSquare, e);
        REQUIRE(w.size() == 1);
        CHECK(w[0].find("has one value per row of a matrix, but broadcasting lines a vector up") != std::string::npos);
        CHECK(w[0].find("write `col (") != std::string::npos);
    }
    CHECK(warnings_of(kSquare, "m - maximum m")[0].find("write `col (maximum m)`") != std::string::npos);
    // Correct code: a column, a reduction of the transpose (the columns), an
    // unrelated vector, a reduction of another matrix.
    for (const char* e : {"m - col (maximum m)", "m - maximum (transpose m)", "m - sum (transpose m) / 3.0",
                          "m - [1.0, 2.0, 3.0]",
                          "let other = generate (3, 3) (\\i j -> 1.0) in m - maximum other"}) {
        INFO(e);
        CHECK(warnings_of(kSquare, e).empty());
    }
    // Not square: the shapes do not broadcast, and the error suggests `col`.
    shoal::runtime::install_compiled_backend();
    Session s;
    CHECK(printed(s, std::string(kWide) + "\nw - maximum w").find("could not be broadcast together with shapes (2, 3) (2)") !=
          std::string::npos);
}

TEST_CASE("habits: a builtin given too few arguments prints a function, and says so") {
    const std::vector<std::string> w = warnings_of("", "max [1, 2]");
    REQUIRE(w.size() == 1);
    CHECK(w[0].find("this is a function: `max` takes 2 arguments and was given 1") != std::string::npos);
    CHECK(w[0].find("the largest element is `maximum xs`") != std::string::npos);
    CHECK(warnings_of("", "arange 10")[0].find("NumPy's arange(n) is `iota n`") != std::string::npos);
    CHECK(warnings_of("", "let f = \\x -> x\nf").empty());  // a function the user made: no note
}
