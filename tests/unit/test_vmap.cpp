// vmap f xs (lang/vmap.cpp): the compiled backend batches f's body over
// every row at once and agrees with the reference evaluator, which applies f
// row by row; a batched vmap builds the broadcasting form's kernels; a
// construct without a batching rule runs row by row with a warning.
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

const char* kSetup =
    "let m = generate (4, 5) (\\i j -> float ((i * 7 + j * 3) % 11) / 4.0 - 0.5)\n"
    "let w = [1.0, 2.0, 0.5, -1.0, 3.0]\n"
    "let t = generate (3, 2, 4) (\\i j k -> float (i * 8 + j * 4 + k) / 3.0)\n"
    "let softmax r = let e = exp (r - maximum r) in e / sum e\n"
    "let scale k r = r * k\n"
    "let centre r = r - mean r\n";

std::vector<std::string> warnings_of(const std::string& statement) { return shoal::testing::warnings_of(kSetup, statement); }

}  // namespace

TEST_CASE("vmap: kernels agree with the reference on every form") {
    for (const char* e : {
             // builtins and their partial applications: per row as they are
             "vmap sum m", "vmap sort m", "vmap (topk 2) m", "vmap median m", "vmap (quantile 0.25) m",
             "vmap cumsum m", "vmap (scan (+) 0.0) m", "vmap argmax m", "vmap (reduce max 0.0) m",
             "vmap mean t", "vmap sum t",
             // lambdas and user functions: elementwise alignment, reductions, where
             "vmap softmax m", "vmap (\\r -> sum (r * w)) m", "vmap (scale 2.0) m", "vmap centre m",
             "vmap (\\r -> softmax (centre r)) m", "vmap (\\r -> (r - mean r) / std r) m",
             "vmap (\\r -> (maximum r, argmax r)) m", "vmap (\\r -> (sum r, w)) m",
             "vmap (\\r -> r * sum w) m", "vmap (\\r -> 1.0) m", "vmap (\\r -> w) m", "vmap (\\r -> sum r * w) m",
             "vmap (\\r -> where (r > mean r) r 0.0) m", "vmap (\\r -> max r (mean r)) m",
             "vmap (\\r -> if sum r > 5.0 then r else -r) m", "vmap (\\r -> if sum w > 0.0 then r else -r) m",
             "vmap (\\r -> let s = sum r in (s, r / s)) m", "vmap (\\r -> let (a, b) = (sum r, maximum r) in a - b) m",
             // indices, slices, lengths, products
             "vmap (\\r -> r[1:3]) m", "vmap (\\r -> r[0] + r[-1]) m", "vmap (\\r -> r[::-2]) m",
             "vmap (\\r -> float (length r) * r) m", "vmap (\\r -> r @ w) m",
             "vmap (\\r -> r @ generate (5, 2) (\\i j -> float (i + j))) m", "vmap (\\r -> dot r w) m",
             "vmap (\\r -> col r * row w) m", "vmap (\\x -> sum x) t", "vmap (\\x -> x[1] - x[0]) t",
             "vmap (\\x -> x - col (mean x)) t",
             // map and zipWith inside, reading the row
             "vmap (\\r -> map (\\x -> x / sum r) r) m", "vmap (\\r -> map (\\x -> x * 2.0) r) m",
             "vmap (\\r -> zipWith (\\a b -> a * b + maximum r) r w) m", "vmap (\\r -> map (\\x -> maximum r) r) m",
             "vmap (\\r -> map (\\x -> x + maximum r) w) m",
             // array literals of per-row values: a new axis after the mapped one
             "vmap (\\r -> [mean r, 1.0, r[0]]) m", "vmap (\\r -> [r, r * 2.0]) m", "vmap (\\r -> [r]) m",
             "vmap (\\r -> [sum r, maximum r] * 2.0) m", "vmap (\\r -> r - mean r) (generate (0, 3) (\\i j -> 1.0))",
             // with, reverse, take, drop on rows; counts and indices computed from the row
             "vmap (\\r -> r with [0] = 1.0) m", "vmap (\\r -> r with [1:3] = r[0]) m", "vmap (\\r -> w with [0] = sum r) m",
             "vmap (\\r -> r with [::2] = r[1::2] * 2.0) m", "vmap (\\r -> r with [1::2] = r[::2]) m",
             "vmap (\\r -> if r[0] > 1.0 then r[7] else r[0]) m", "vmap (\\r -> zipWith (-) r (reverse r)) m",
             "vmap (\\r -> take 2 (reverse r)) m", "vmap (\\r -> drop 3 r) m", "vmap (\\x -> reverse x) t",
             "vmap (\\r -> loop a = 0.0 for i < length r do a + r[i]) m", "vmap (\\r -> r[length r - 1]) m",
             "vmap (\\r -> w[length r - 1] + r) m", "vmap (\\r -> zipWith3 (\\a b c -> a + b * c) w r r) m",
             // indices that differ per row: gathers; generate reading the row
             "vmap (\\r -> generate (length r - 1) (\\i -> r[i + 1] - r[i])) m", "vmap (\\r -> r[-1 - argmin r]) m",
             "vmap (\\r -> map (\\x -> r[int (abs x) % 5]) r) m", "vmap (\\r -> r[argmax r + 3]) m",
             "vmap (\\r -> if argmax r < 2 then r[argmax r + 3] else r[0]) m", "vmap (\\x -> x * float (argmax w)) w",
             // loops carrying per-row state
             "vmap (\\r -> loop a = r for k < 3 do a * 0.5 + float k) m",
             "vmap (\\r -> loop s = 0.0 for k < 3 do s + r[k]) m",
             // a vector's elements; row by row (no rule): the same answers
             "vmap (\\x -> x * 2.0 + 1.0) w", "vmap (\\x -> [x, 2.0 * x]) w",
             "vmap (\\r -> generate 3 (\\i -> r[i] * 2.0)) m", "vmap (\\r -> sum (filter (\\x -> x > 1.0) r)) m",
             "vmap (\\r -> [sum r, maximum r]) m", "vmap (\\r -> vmap (\\x -> x * 2.0) r) m",
             "vmap (\\r -> r[argmax r]) m", "vmap (\\r -> r + random 5) m\nrandom 3",
             // empty
             "vmap sum (generate (0, 3) (\\i j -> 1.0))", "vmap softmax (generate (2, 0) (\\i j -> 1.0))"}) {
        INFO(e);
        CHECK(shoal::testing::differential(std::string(kSetup) + e));
    }
}

TEST_CASE("vmap: batched forms build the broadcasting form's kernels; the rest warn and run row by row") {
    for (const char* e : {"vmap softmax m", "vmap (\\r -> sum (r * w)) m", "vmap (topk 2) m", "vmap (\\r -> [sum r, maximum r]) m",
                          "vmap (\\r -> map (\\x -> x / sum r) r) m", "vmap (\\r -> if sum r > 5.0 then r else -r) m"}) {
        INFO(e);
        CHECK(warnings_of(e).empty());
    }
    const std::vector<std::string> w = warnings_of("vmap (\\r -> sum (filter (\\x -> x > 1.0) r)) m");
    REQUIRE(w.size() == 1);
    CHECK(w[0].find("vmap ran its function row by row (4 calls): `filter` of a value that differs per row") !=
          std::string::npos);
    // An if whose untaken branch fails for some rows: the rows' answer, and a warning.
    const std::vector<std::string> guarded = warnings_of("vmap (\\r -> if argmax r < 2 then r[argmax r + 3] else r[0]) m");
    REQUIRE(guarded.size() == 1);
    CHECK(guarded[0].find("for all rows at once it raised") != std::string::npos);
    // One fused kernel per reduction and one for the result, as `e / col (sum e)`.
    shoal::runtime::install_compiled_backend();
    Session s;
    const std::string plan = printed(s, std::string(kSetup) + ":cuda vmap softmax m");
    INFO(plan);
    CHECK(plan.find("launch plan maximum") != std::string::npos);
    CHECK(plan.find("launch plan sum") != std::string::npos);
    CHECK(plan.find("launch plan map") != std::string::npos);
    CHECK(plan.find("launch plan", plan.find("launch plan map") + 1) == std::string::npos);
}

TEST_CASE("vmap: type errors and ragged results are reported clearly") {
    shoal::runtime::install_compiled_backend();
    Session s;
    CHECK(printed(s, "vmap sum 3.0").find("`vmap f xs` maps f over the rows of an array; xs is") != std::string::npos);
    CHECK(printed(s, std::string(kSetup) + "vmap (\\r -> t) m").find("arrays have at most rank 3") !=
          std::string::npos);
    CHECK(printed(s, std::string(kSetup) + "vmap (\\r -> filter (\\x -> x > 1.0) r) m")
              .find("vmap stacks one result per row, so they must have one shape") != std::string::npos);
    // The session survives, its bindings intact.
    CHECK(printed(s, "vmap sum m").find("[") != std::string::npos);
}
