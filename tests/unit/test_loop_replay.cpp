// Replayed loop steps (codegen/step_replay.h, docs/compiler.md): a loop
// whose steps only run plans records two of them and runs the rest without
// evaluating its body. Every case checks the results (and errors) against
// the reference evaluator, and whether the steps were replayed: a step that
// reads or does anything on the host must be evaluated every time.
#include <doctest/doctest.h>

#include <regex>

#include "differential.h"
#include "session_capture.h"

using namespace shoal;
using shoal::testing::differential;
using shoal::testing::printed;

namespace {

const char* kSetup =
    "let x = [1.0, 2.0, 3.0]\n"
    "let X = generate (200, 3) (\\i j -> float ((i * 7 + j * 3) % 11) / 10.0)\n"
    "let y = X @ [1.0, -2.0, 0.5] + 0.1\n"
    "let step = \\w -> let r = X @ w - y in w - 0.001 * flatten (transpose X @ reshape (rows X, 1) r)\n";

// The profile of the statement (after the setup, in a compiled session):
// how many plans it replayed, and why a loop was not replayed.
ProfileReport profile(const std::string& statement) {
    runtime::install_compiled_backend();
    Session s;
    printed(s, kSetup);
    std::string out;
    ProfileReport r = s.compiled_backend()->profile([&] { out = printed(s, statement); }, "");
    INFO(out);
    CHECK(out.find("error") == std::string::npos);
    return r;
}

int64_t replayed(const std::string& statement) { return profile(statement).plans_replayed; }

void agrees(const std::string& statement) {
    INFO(statement);
    CHECK(differential(std::string(kSetup) + statement + "\n"));
}

}  // namespace

TEST_CASE("replayed loop steps: a loop that only runs plans is replayed, with the reference's results") {
    const char* replayable[] = {
        "loop w = [0.0, 0.0, 0.0] for i < 40 do step w",                       // gradient descent: a product and a map
        "iterate 30 step [0.5, 0.5, 0.5]",                                     // iterate is a loop too
        "loop w = x for i < 20 do sort (w * (-1.0))",                          // a sort's plan
        "loop (a, b) = (x, [1.0, 1.0, 1.0]) for i < 20 do (b, step (a + b))",  // a leaf passed on, another computed
        "loop (a, b) = (x, x) for i < 20 do (a, step b)",                      // a leaf kept as it is
        "loop w = [0.0, 0.0, 0.0] for i < 20 do loop v = w for j < 3 do step v",  // a loop inside the step
        "loop w = x for i < 20 do step w + [1.0, 2.0, 3.0]",  // a literal: a new array each step, the same elements
        // An update: each step computes the last one's state first (eval_with).
        "iterate 20 (\\u -> u with [1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * (u[:-2, 1:-1] + u[2:, 1:-1] - 2.0 * u[1:-1, 1:-1])) X",
    };
    for (const char* loop : replayable) {
        agrees(loop);
        CHECK(replayed(loop) > 0);
    }
    // Steps that only build delayed arrays still fuse into one kernel: not replayed.
    const ProfileReport fused = profile("iterate 30 (\\v -> v * 0.9 + 1.0) x");
    CHECK(fused.plans_replayed == 0);
    CHECK(fused.plans_run == 1);
    // :time says how many plans were replayed.
    runtime::install_compiled_backend();
    Session s;
    printed(s, kSetup);
    const std::string timed = printed(s, ":time loop w = [0.0, 0.0, 0.0] for i < 40 do step w");
    INFO(timed);
    CHECK(std::regex_search(timed, std::regex("; 80 plans, 72 replayed, ")));
    // The state passes through the steps' plans without the host: the last
    // steps' results are the reference's, not the recorded steps'.
    agrees("let w = loop w = [0.0, 0.0, 0.0] for i < 60 do step w\nw[0]\nw");
}

TEST_CASE("replayed loop steps: a step that reads or does anything on the host is evaluated every time") {
    // Each with the reason `:time`'s advice gives.
    const std::pair<const char*, const char*> evaluated[] = {
        {"loop w = x for i < 20 do if w[0] > 100.0 then w - 50.0 else step w * 2.0", "reads an array's elements on the host"},
        {"loop w = x for i < 20 do step w + float i", "reads the loop's counter"},
        {"loop w = x for i < 20 do step w * (3.0 / sum w) + 1.0", "`sum`'s result is read on the host"},
        {"loop (w, s) = (x, 0.0) for i < 20 do (step w * 1.5, s + 1.0)", "the loop's state holds a scalar"},
        {"loop w = x for i < 20 do let k = filter (\\v -> v > 1.5) (step w) in w + float (length k)",
         "`filter` reads a value back to the host"},
        {"loop w = x for i < 20 do step w + random 3", "draws random numbers"},
    };
    for (const auto& [loop, why] : evaluated) {
        if (std::string(loop).find("random") == std::string::npos) agrees(loop);
        const ProfileReport r = profile(loop);
        CHECK(r.plans_replayed == 0);
        CHECK(r.loop_not_replayed.find(why) != std::string::npos);
    }
}

TEST_CASE("replayed loop steps: an error in a replayed step is the reference's") {
    // w grows by one each step: the index fails in the fourth step, the
    // first one replayed.
    const char* failing = "loop w = [0, 0, 0] for i < 20 do sort (map (\\k -> w[k] + 1) w)";
    agrees(failing);
    const char* fine = "loop w = [0, 0, 0] for i < 20 do sort (map (\\k -> w[k % 3] + 1) w)";
    agrees(fine);
    CHECK(replayed(fine) > 0);
}

TEST_CASE("fusion bound: a product's fused operand counts once per inner index") {
    // Each step reads the last one k times per element: fused without bound
    // the kernel grows as k^steps (20 steps of a 2x2 product took minutes).
    agrees("let m = [[0.5, 0.1], [0.2, 0.3]]\nloop a = m for i < 24 do a @ m + m");
}
