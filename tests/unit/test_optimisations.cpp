// The seed optimisations (issue 12) measured by the CPU executor's counters,
// never by wall time: shared tiles for overlapping reads, fusion and
// hoisting, each switched on and off (`:set sharedmem|fusion|hoist`), with
// the same results either way (checked against the reference evaluator).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "differential.h"

using namespace shoal;
using shoal::testing::Capture;
using shoal::testing::differential;

namespace {

// A compiled session on the CPU executor (its counters; on a GPU machine the
// default executor counts no traffic) in checking mode (a shared-memory race
// fails the test), with some statements run.
struct Measured {
    Session s;
    Capture out;
    std::string printed;  // by the last run()
    explicit Measured(const std::string& setup) {
        runtime::install_compiled_backend();
        s.execute(":set check on\n:set backend compiled\n:set executor cpu\n" + setup, "<t>", out);
        REQUIRE(out.all.find("error") == std::string::npos);
    }
    // The counters of every plan `statement` ran.
    ir::KernelCounters run(const std::string& statement) {
        CompiledBackend& b = *s.compiled_backend();
        compiled::reset_backend_stats(b);
        const size_t before = out.all.size();
        s.execute(statement, "<t>", out);
        printed = out.all.substr(before);
        INFO(printed);
        CHECK(printed.find("error") == std::string::npos);
        return compiled::backend_stats(b).total;
    }
    // Global bytes loaded per byte of an input of `elements` x `size` bytes.
    double loads_per_element(const std::string& statement, int64_t elements, int64_t size) {
        return static_cast<double>(run(statement).global_bytes_loaded) / static_cast<double>(elements * size);
    }
};

const char* kSpencer =
    "let weights = map float [-3, -6, -5, 3, 21, 46, 67, 74, 67, 46, 21, 3, -5, -6, -3]\n"
    "let spencer (x : [float]) : [float] =\n"
    "  let m = length x - 14 in\n"
    "  let acc = loop acc = fill m 0.0 for k < 15 do acc + weights[k] * x[k:k + m] in\n"
    "  acc / 320.0\n";

}  // namespace

TEST_CASE("shared tiles: forward difference reads each input element about once") {
    const int64_t n = 1 << 20;
    Measured m("let x = generate " + std::to_string(n) + " (\\i -> float (i % 1000))");
    const double on = m.loads_per_element("let d = x[1:] - x[:-1]", n, 4);
    CHECK(on <= 1.2);
    m.run(":set sharedmem off");
    const double off = m.loads_per_element("let d = x[1:] - x[:-1]", n, 4);
    CHECK(off >= 1.9);
    CHECK(off <= 2.1);
}

TEST_CASE("shared tiles: Spencer's 15-point average written with 15 slices") {
    const int64_t n = 1 << 18;
    Measured m(std::string(kSpencer) + "let x = generate " + std::to_string(n) + " (\\i -> sin (float i * 0.01))");
    const double on = m.loads_per_element("let s = spencer x", n, 4);
    CHECK(on <= 1.3);
    m.run(":set sharedmem off");
    const double off = m.loads_per_element("let s = spencer x", n, 4);
    CHECK(off >= 14.0);
}

TEST_CASE("shared tiles: the 2-D Jacobi update loads a tile and its halo once") {
    for (int n : {512, 2048}) {
        INFO("n = " << n);
        const std::string size = std::to_string(n);
        Measured m("let g = generate (" + size + ", " + size + ") (\\i j -> float ((i * 7 + j) % 13))");
        const std::string jacobi = "let j = g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:]";
        const double on = m.loads_per_element(jacobi, int64_t{n} * n, 4);
        CHECK(on <= 1.3);
        m.run(":set sharedmem off");
        const double off = m.loads_per_element(jacobi, int64_t{n} * n, 4);
        CHECK(off >= 3.9);
    }
}

TEST_CASE("shared tiles: reads through fused producers and functions count") {
    const int64_t n = 100000;
    Measured m("let x = generate " + std::to_string(n) + " (\\i -> float (i % 100))\n"
               "let fd a = let b = map (\\v -> v * 2.0) a in b[1:] - b[:-1]");
    CHECK(m.loads_per_element("let d = fd x", n, 4) <= 1.2);
    CHECK(m.loads_per_element("let d = zipWith (\\a b -> a * b) x[:-3] x[3:]", n, 4) <= 1.2);
    // Offsets spanning more than half a tile (1024 elements) stay global reads.
    CHECK(m.loads_per_element("let d = x[600:] - x[:-600]", n, 4) >= 1.9);
    CHECK(m.loads_per_element("let d = x[500:] - x[:-500]", n, 4) <= 1.6);
}

TEST_CASE("shared tiles: results agree with the reference evaluator, with and without") {
    const char* programs[] = {
        "let x = map float (iota 3000)\nx[1:] - x[:-1]\nx[:-2] + x[1:-1] * 2.0 + x[2:]\nlet e = map float (iota 1)\ne[1:] - e[:-1]",
        "let x = map (\\i -> i * i) (iota 2500)\nx[3:] - x[:-3]\nzipWith (\\a b -> a * b) x[:-1] x[1:]\n"
        "x[::-1] + x\nsum (x[1:] - x[:-1])",
        "let g = generate (37, 70) (\\i j -> float (i * 70 + j))\n"
        "g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:]\ng[1:, :] - g[:-1, :]\ng[:, 1:] - g[:, :-1]",
        "let g = generate (200, 3) (\\i j -> double (i * 3 - j))\ng[1:, 1:] * g[:-1, :-1]\ng[2:, :] + g[:-2, :]",
        "let fd a = let b = map (\\v -> v * v) a in b[1:] - b[:-1]\nfd (map float (iota 5000))\nfd [1.0, 2.0]",
        "let x = map (\\i -> double i * 0.5) (iota 70000)\nlet d = x[500:] - x[:-500]\nd[0:3]\nsum d",
        "let a = generate (3, 4) (\\i j -> i * 10 + j)\na[1:, 2]\na[:, 1:3]\na[::-1, ::2]\na[1, :]\nsum a[1:, :-1]",
    };
    for (const char* p : programs) {
        differential(p);
        differential(p, ":set sharedmem off");
    }
}

TEST_CASE("fusion: RMSE fused moves at most 45% of the unfused bytes, with the same result") {
    const int64_t n = 1 << 18;
    Measured m("let x = generate " + std::to_string(n) + " (\\i -> float (i % 100))\n"
               "let y = generate " + std::to_string(n) + " (\\i -> float (i % 7))\n"
               "let rmse a b = sqrt (sum (map (\\d -> d * d) (a - b)) / float (length a))");
    const ir::KernelCounters fused = m.run("rmse x y");
    const std::string fused_result = m.printed;
    m.run(":set fusion off");
    const ir::KernelCounters unfused = m.run("rmse x y");
    CHECK(shoal::testing::same_output(m.printed, fused_result));
    const double moved_fused = static_cast<double>(fused.global_bytes_loaded + fused.global_bytes_stored);
    const double moved_unfused = static_cast<double>(unfused.global_bytes_loaded + unfused.global_bytes_stored);
    CHECK(moved_fused <= 0.45 * moved_unfused);
    CHECK(fused.launches == 2);    // one reduction: per-block partials, then their total
    CHECK(unfused.launches == 4);  // a - b, map, then the reduction's two
}

TEST_CASE("hoisting: addSum launches the same kernels whatever the length of the hoisted array") {
    const std::string add_sum = "let addSum (xs : [float]) (ys : [float]) : [float] = map (\\x -> x + sum ys) xs\n";
    int64_t launches = -1;
    for (int ny : {10000, 100000}) {  // both reductions of several blocks (one block is one launch)
        INFO("length ys = " << ny);
        Measured m(add_sum + "let xs = generate 20000 (\\i -> float i)\nlet ys = generate " + std::to_string(ny) +
                   " (\\i -> 1.0 / float (i + 1))");
        const ir::KernelCounters hoisted = m.run("let r = addSum xs ys");
        if (launches < 0) launches = hoisted.launches;
        CHECK(hoisted.launches == launches);
        CHECK(hoisted.global_bytes_loaded <= 4 * (20000 + ny) + 4096);  // each input about once
    }
    Measured m(add_sum + "let xs = generate 2000 (\\i -> float i)\nlet ys = generate 1000 (\\i -> float (i % 3))");
    m.run(":set hoist off");
    const ir::KernelCounters nested = m.run("let r = addSum xs ys");
    CHECK(nested.global_bytes_loaded >= int64_t{4} * 2000 * 1000);  // every thread sums ys again
}

TEST_CASE("optimisations switched off: the examples agree with the reference evaluator") {
    for (const char* name : {"forward_difference", "spencer", "jacobi", "addsum", "rmse", "sdot", "blackscholes"}) {
        std::ifstream in(std::string(SHOAL_SOURCE_DIR) + "/examples/" + name + ".shoal");
        std::stringstream text;
        text << in.rdbuf();
        for (const char* off : {":set fusion off", ":set sharedmem off", ":set hoist off"}) {
            INFO("example " << name << " with " << off);
            differential(text.str(), off);
        }
    }
}

TEST_CASE("matmul: tiled kernel agrees with the reference evaluator and the naive generate") {
    const char* programs[] = {
        "let a = generate (3, 2) (\\i j -> float (i + j))\nlet b = generate (2, 4) (\\i j -> float (i - j))\na @ b\nmatmul a b",
        "let x = generate (100, 70) (\\i j -> float ((i * 7 + j) % 11) - 5.0)\n"
        "let y = generate (70, 45) (\\i j -> float ((i * 3 + j * 5) % 13) - 6.0)\nx @ y\n"
        "generate (100, 45) (\\i j -> sum (zipWith (*) x[i, :] y[:, j]))\n(x * 0.5) @ (y + 1.0)",
        "let d = generate (33, 65) (\\i j -> double (i * j % 7) * 0.25)\nd @ transpose d\nsum (flatten (d @ transpose d))",
        "generate (2, 0) (\\i j -> 1.0) @ generate (0, 3) (\\i j -> 1.0)\n"
        "generate (0, 3) (\\i j -> 1.0) @ generate (3, 2) (\\i j -> 1.0)",
        "let a = generate (3, 2) (\\i j -> float (i + j))\na @ a",
        "let m = generate (4, 5) (\\i j -> float (i + j))\nmap (\\i -> sum m[i, 1:3]) (iota 4)\n"
        "map (\\j -> sum m[:, j]) (iota 5)\nmap (\\i -> sum m[i]) (iota 4)\nmap (\\i -> sum m[i + 2, :]) (iota 3)",
    };
    for (const char* p : programs) differential(p);
}

TEST_CASE("matmul: at 1024^2 the tiled kernel loads at least 8x fewer bytes than the naive one") {
    // Checking mode off: 2 x 1024^3 multiply-adds take seconds in the CPU executor.
    Measured m(":set check off\n:set blas off\nlet z = generate (1024, 1024) (\\i j -> float ((i + j) % 7))");
    const ir::KernelCounters tiled = m.run("let c = z @ z");
    const ir::KernelCounters naive = m.run("let c2 = generate (1024, 1024) (\\i j -> sum (zipWith (*) z[i, :] z[:, j]))");
    CHECK(tiled.launches == 1);
    CHECK(naive.launches == 1);
    CHECK(tiled.global_bytes_loaded * 8 <= naive.global_bytes_loaded);
    CHECK(tiled.shared_bank_conflicts == 0);
    m.run("all (flatten (c == c2))");  // both sum the inner axis in order
    CHECK(m.printed == "true\n");
}

TEST_CASE(":profile explains: traffic against the least, the estimate, the kernels and the fusion decisions") {
    Measured m("let x = generate 100000 (\\i -> float (i % 100))\nlet y = generate 100000 (\\i -> float (i % 7))\n"
               "let t = x * 2.0\nlet rmse a b = sqrt (sum (map (\\d -> d * d) (a - b)) / float (length a))");
    m.run(":profile x[1:] - x[:-1]");
    const std::string& p = m.printed;
    for (const char* part : {"coalesced", "x least", "h100 estimate", "1.00x", "kernels", "grid x block",
                             "x[1:] - x[:-1]   -- <t>:1:16", "fusion decisions", "`slice` at <t>:1:10",
                             "x: a top-level let binds it"})
        CHECK_MESSAGE(p.find(part) != std::string::npos, part << " in\n" << p);
    m.run(":profile sum t");
    CHECK(m.printed.find("t: a top-level let binds it") != std::string::npos);
    m.run(":set fusion off\n:set gpu a100\n:profile rmse x y");
    CHECK(m.printed.find("fusion is switched off") != std::string::npos);
    CHECK(m.printed.find("a100 estimate") != std::string::npos);
    CHECK(m.printed.find("3.00x") != std::string::npos);  // the statement moves 3x the least it needs
    m.run(":set fusion on\n:profile loop v = x for i < 300 do v + 1.0");
    CHECK(m.printed.find("the fusion size bound") != std::string::npos);
}

TEST_CASE("row-major reads at the position a map unflattened need no index arithmetic") {
    // A rank-2 map decomposes its flat position into (row, column); reading
    // a row-major buffer or a reshape there is the flat position again, so
    // the division and remainder are dead code.
    const char* program = "let m = generate (37, 3) (\\i j -> float (i * 3 + j))\n"
                          "let v = generate 111 (\\i -> float i)\n"
                          "let y = generate 37 (\\i -> 1.0)\n";
    CHECK(differential(std::string(program) + "m * 2.0 + reshape (37, 3) v\nreshape (37, 1) (v[0:37] - y)\n"));
    runtime::install_compiled_backend();
    Session s;
    Capture out;
    s.execute(std::string(program), "<t>", out);
    for (const char* statement : {":cuda m * 2.0 + reshape (37, 3) v", ":cuda reshape (37, 1) (v[0:37] - y)"}) {
        Capture shown;
        s.execute(statement, "<t>", shown);
        INFO(shown.all);
        CHECK(shown.all.find("__global__") != std::string::npos);
        CHECK(shown.all.find("shoal_div(") == std::string::npos);
        CHECK(shown.all.find("shoal_mod(") == std::string::npos);
    }
}
