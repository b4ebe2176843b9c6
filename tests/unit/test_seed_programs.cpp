// Golden tests of the generated code for the seed programs (issue 3): the
// shape of the plans (how many kernels, outputs, no source-selecting
// conditionals in push arrays) and the CPU executor's traffic counters, which
// show fusion: RMSE of two n-element float arrays loads about 8n bytes, not
// the 20n that a kernel per primitive would.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "differential.h"
#include "lang/session.h"
#include "codegen/compiled_backend.h"
#include "runtime/executors.h"

using namespace shoal;
using shoal::testing::Capture;

namespace {

// A session with the compiled backend and the seed program's definitions.
struct Seed {
    Session session;
    Capture out;

    explicit Seed(const std::string& setup) {
        runtime::install_compiled_backend();
        session.execute(":set backend compiled\n:set check on\n" + setup, "<seed>", out);
        REQUIRE(out.all.find("error") == std::string::npos);
    }

    // Runs one statement with fresh counters and returns them.
    const compiled::BackendStats& run(const std::string& statement) {
        compiled::reset_backend_stats(*session.compiled_backend());
        out.all.clear();
        session.execute(statement, "<seed>", out);
        INFO(out.all);
        CHECK(out.all.find("error") == std::string::npos);
        return compiled::backend_stats(*session.compiled_backend());
    }

    // The :ir text of an expression (its plans and kernels).
    std::string ir(const std::string& expression) {
        out.all.clear();
        session.execute(":ir " + expression, "<seed>", out);
        return out.all;
    }
};

int count_lines_starting(const std::string& text, const std::string& prefix) {
    std::istringstream in(text);
    int n = 0;
    for (std::string line; std::getline(in, line);)
        if (line.rfind(prefix, 0) == 0) ++n;
    return n;
}

const int64_t kN = 1 << 16;
const std::string kN_text = std::to_string(kN);

}  // namespace

TEST_CASE("seed programs: RMSE is one reduction plan loading 8n bytes") {
    Seed s("let rmse (p : [float]) (o : [float]) : float =\n  let d = p - o in\n  sqrt (sum (d * d) / float (length d))\n"
           "let obs = generate " + kN_text + " (\\i -> sin (float i * 0.01))\n"
           "let pred = obs + 0.5");
    const compiled::BackendStats& st = s.run("rmse pred obs");
    CHECK(st.plans_run == 1);
    CHECK(st.last.launches <= 2);  // the block partials, then one block combining them
    // 8n bytes of inputs plus the block partials (at most max_blocks floats).
    CHECK(st.last.global_bytes_loaded >= 8 * kN);
    CHECK(st.last.global_bytes_loaded <= 8 * kN + 4 * 1024);
    CHECK(st.last.global_bytes_stored <= 4 * 1024 + 4);
    const std::string ir = s.ir("rmse pred obs");
    CHECK(count_lines_starting(ir, "launch plan") == 1);
    CHECK(count_lines_starting(ir, "kernel ") <= 2);
}

TEST_CASE("seed programs: SDOT is one reduction plan loading 8n bytes") {
    Seed s("let sdot (x : [float]) (y : [float]) : float = sum (x * y)\n"
           "let x = generate " + kN_text + " (\\i -> float (i % 10) * 0.5)\n"
           "let y = generate " + kN_text + " (\\i -> 1.0 / float (i % 13 + 1))");
    for (const char* statement : {"sdot x y", "reduce (+) 0.0 (zipWith (*) x y)"}) {
        INFO(statement);
        const compiled::BackendStats& st = s.run(statement);
        CHECK(st.plans_run == 1);
        CHECK(st.last.launches <= 2);
        CHECK(st.last.global_bytes_loaded >= 8 * kN);
        CHECK(st.last.global_bytes_loaded <= 8 * kN + 4 * 1024);
    }
}

TEST_CASE("seed programs: SAXPY is one map kernel, 8n bytes in and 4n out, one kernel for every constant") {
    Seed s("let saxpy (a : float) (x : [float]) (y : [float]) : [float] = zipWith (\\xi yi -> a * xi + yi) x y\n"
           "let x = generate " + kN_text + " (\\i -> float i)\nlet y = fill " + kN_text + " 1.0");
    const compiled::BackendStats& st = s.run("let r = saxpy 2.0 x y");
    CHECK(st.plans_run == 1);
    CHECK(st.last.launches == 1);
    CHECK(st.last.global_bytes_loaded == 8 * kN);
    CHECK(st.last.global_bytes_stored == 4 * kN);
    const compiled::BackendStats& again = s.run("let r2 = saxpy 3.0 x y");
    CHECK(again.cache_hits == 1);  // literals are kernel parameters
    CHECK(again.cache_misses == 0);
}

TEST_CASE("seed programs: Black-Scholes is one kernel with two outputs reading each input once") {
    std::ifstream in(std::string(SHOAL_SOURCE_DIR) + "/examples/blackscholes.shoal");
    std::stringstream text;
    text << in.rdbuf();
    // The definitions of the example up to its inputs, at a larger n.
    std::string setup = text.str();
    setup = setup.substr(0, setup.find("let (call, put)"));
    const std::string n_line = "let n = 4096";
    setup.replace(setup.find(n_line), n_line.size(), "let n = " + kN_text);
    Seed s(setup);
    const compiled::BackendStats& st = s.run("let (call, put) = map (\\i -> option price[i] strike[i] years[i]) (iota n)");
    CHECK(st.plans_run == 1);
    CHECK(st.last.launches == 1);
    CHECK(st.last.global_bytes_loaded == 12 * kN);  // price, strike, years: once each
    CHECK(st.last.global_bytes_stored == 8 * kN);   // call and put
    const std::string ir = s.ir("map (\\i -> option price[i] strike[i] years[i]) (iota n)");
    CHECK(count_lines_starting(ir, "kernel ") == 1);
    // Two results in the entry signature: "-> float out0[n1], float out1[n1]".
    const std::string signature = ir.substr(0, ir.find('\n'));
    CHECK(signature.find("-> float out0[") != std::string::npos);
    CHECK(signature.find(", float out1[") != std::string::npos);
}

TEST_CASE("seed programs: the forward difference and Spencer's average are one map kernel each") {
    Seed s("let fwd x = x[1:] - x[:-1]\n"
           "let weights = map float [-3, -6, -5, 3, 21, 46, 67, 74, 67, 46, 21, 3, -5, -6, -3]\n"
           "let spencer (x : [float]) : [float] =\n  let m = length x - 14 in\n"
           "  let acc = loop acc = fill m 0.0 for k < 15 do acc + weights[k] * x[k:k + m] in\n  acc / 320.0\n"
           "let signal = generate " + kN_text + " (\\i -> sin (float i * 0.01))");
    const compiled::BackendStats& d = s.run("let ds = fwd signal");
    CHECK(d.plans_run == 1);
    CHECK(d.last.launches == 1);
    // Two overlapping slices served from shared tiles (each element loaded
    // once, plus one halo element per tile of 1024), no temporary.
    CHECK(d.last.global_bytes_loaded >= 4 * kN);
    CHECK(d.last.global_bytes_loaded <= 4 * kN + 4 * (kN / 1024 + 1));
    CHECK(d.last.global_bytes_stored == 4 * (kN - 1));
    const int64_t m = kN - 14;
    const compiled::BackendStats& sp = s.run("let smooth = spencer signal");
    CHECK(sp.plans_run == 1);  // the loop's 15 steps fuse into one kernel
    CHECK(sp.last.launches == 1);
    CHECK(sp.last.global_bytes_loaded <= 4 * kN + 4 * 14 * (kN / 1024 + 1));  // 15 slices, one shared tile
    CHECK(sp.last.global_bytes_stored == 4 * m);
}

TEST_CASE("seed programs: sum loads each element once") {
    Seed s("let x = map float (iota " + kN_text + ")");
    const compiled::BackendStats& st = s.run("sum x");
    CHECK(st.plans_run == 1);
    CHECK(st.last.global_bytes_loaded >= 4 * kN);
    CHECK(st.last.global_bytes_loaded <= 4 * kN + 4 * 1024);
}

TEST_CASE("seed programs: ++ and interleave are push arrays without a source-selecting conditional") {
    Seed s("let a = iota 1000\nlet b = map (\\i -> i * 2) (iota 500)");
    for (const char* e : {"a ++ b", "interleave a a", "(a * 3) ++ reverse b"}) {
        INFO(e);
        const std::string ir = s.ir(e);
        INFO(ir);
        CHECK(count_lines_starting(ir, "kernel ") == 1);
        // Each part is its own loop: no `if` and no select choosing between the sources.
        CHECK(ir.find("if ") == std::string::npos);
        CHECK(ir.find("select") == std::string::npos);
        CHECK(ir.find(" ? ") == std::string::npos);
    }
}
