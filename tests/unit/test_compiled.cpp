// The compiled backend against the reference evaluator: the same statements
// through both, printed results compared (integers exactly, floats within a
// relative 1e-5), plus fusion and kernel-cache checks on the backend's counters.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "lang/session.h"
#include "runtime/cpu/compiled_backend.h"

using namespace shoal;

namespace {

struct Capture : SessionOutput {
    std::string all;
    void value(const Value&, const Type&, const std::string& t) override { all += t + "\n"; }
    void text(const std::string& s) override { all += s + "\n"; }
    void error(const Error& e) override { all += "error: " + e.message + "\n"; }
    void warning(const std::string&) override {}
};

std::string run(const std::string& program, bool compiled) {
    set_compiled_backend_factory(cpu::make_compiled_backend);
    Session s;
    Capture out;
    s.execute(":set check on", "<t>", out);
    if (compiled) s.execute(":set backend compiled", "<t>", out);
    s.execute(program, "<t>", out);
    return out.all;
}

// Token-wise comparison: numbers with a decimal point or exponent within a
// relative 1e-4, everything else exactly. 1e-5 is not reachable for float32
// reductions: the reference sums sequentially (error grows with n), the
// kernels in a tree, so e.g. the sum of 100000 sines differs by 1.4e-5.
bool same_output(const std::string& a, const std::string& b) {
    auto split = [](const std::string& s) {
        std::vector<std::string> t;
        std::string cur;
        for (char c : s) {
            if (std::isspace(static_cast<unsigned char>(c)) || c == ',' || c == '[' || c == ']' || c == '(' || c == ')') {
                if (!cur.empty()) t.push_back(cur);
                cur.clear();
                t.push_back(std::string(1, c));
            } else {
                cur += c;
            }
        }
        if (!cur.empty()) t.push_back(cur);
        return t;
    };
    auto ta = split(a), tb = split(b);
    if (ta.size() != tb.size()) return false;
    for (size_t k = 0; k < ta.size(); ++k) {
        if (ta[k] == tb[k]) continue;
        const bool floaty = ta[k].find_first_of(".eE") != std::string::npos;
        char* ea = nullptr;
        char* eb = nullptr;
        const double x = std::strtod(ta[k].c_str(), &ea), y = std::strtod(tb[k].c_str(), &eb);
        if (!floaty || *ea || *eb) return false;
        if (std::fabs(x - y) > 1e-4 * std::max({std::fabs(x), std::fabs(y), 1e-30})) return false;
    }
    return true;
}

void differential(const std::string& program) {
    const std::string ref = run(program, false), comp = run(program, true);
    INFO("program:\n" << program << "\nreference:\n" << ref << "compiled:\n" << comp);
    CHECK(same_output(ref, comp));
}

}  // namespace

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
    set_compiled_backend_factory(cpu::make_compiled_backend);
    Session s;
    Capture out;
    s.execute(":set backend compiled\nlet x = map float (iota 65536)\nlet y = map (\\i -> float i * 0.5) (iota 65536)",
              "<t>", out);
    CompiledBackend& b = *s.compiled_backend();
    cpu::reset_backend_stats(b);
    s.execute("sum (map (\\d -> d * d) (x - y))", "<t>", out);
    const cpu::BackendStats& st = cpu::backend_stats(b);
    INFO(out.all);
    CHECK(st.plans_run == 1);
    CHECK(st.last_plan == "sum");
    const int64_t n = 65536;
    CHECK(st.last.global_bytes_loaded >= 8 * n);
    CHECK(st.last.global_bytes_loaded <= 8 * n + 8 * 1024);  // plus the block partials
}

TEST_CASE("compiled backend: saxpy with two constants compiles one kernel") {
    set_compiled_backend_factory(cpu::make_compiled_backend);
    Session s;
    Capture out;
    s.execute(":set backend compiled\nlet saxpy a x y = zipWith (\\xi yi -> a * xi + yi) x y\n"
              "let x = map float (iota 100)",
              "<t>", out);
    CompiledBackend& b = *s.compiled_backend();
    cpu::reset_backend_stats(b);
    s.execute("sum (saxpy 2.0 x x)\nsum (saxpy 3.0 x x)", "<t>", out);
    CHECK(out.all == "14850.0\n19800.0\n");
    CHECK(cpu::backend_stats(b).cache_misses == 1);
    CHECK(cpu::backend_stats(b).cache_hits == 1);
}

TEST_CASE("compiled backend: :ir and :cuda show the plan") {
    set_compiled_backend_factory(cpu::make_compiled_backend);
    Session s;
    Capture out;
    s.execute("let x = map float (iota 10)\n:ir sum (x * x)\n:cuda sum (x * x)\n:set", "<t>", out);
    CHECK(out.all.find("__global__") != std::string::npos);
    CHECK(out.all.find("backend reference") != std::string::npos);
}
