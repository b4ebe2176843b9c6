// What the whole-program benchmarks share (bench_programs.cpp on the CPU
// executor, gpu/bench_gpu.cpp on a GPU): the seed programs as
// examples/*.shoal writes them, and a Session that fails loudly and refuses
// to time what the compiled backend did not compile.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/compiled_backend.h"
#include "lang/session.h"

namespace shoal::bench {

// The tool's name, for its messages ("bench_programs").
inline const char* g_tool = "bench";

struct Program {
    const char* name;
    const char* definitions;  // run once
    const char* statement;    // timed: a top-level let, so an array result is computed, not printed
};

// The examples' programs over inputs x, y, price, strike and years (floats)
// of length n, bound by the benchmark.
inline const std::vector<Program>& example_programs() {
    static const std::vector<Program> programs = {
        {"saxpy", "let saxpy (a : float) (x : [float]) (y : [float]) : [float] = a * x + y", "let z = saxpy 2.5 x y"},
        {"rmse",
         "let rmse (p : [float]) (o : [float]) : float =\n"
         "  let d = p - o in\n"
         "  sqrt (sum (d * d) / float (length d))",
         "let r = rmse x y"},
        {"blackscholes",
         "let riskfree = 0.02\n"
         "let volatility = 0.30\n"
         "let cnd (d : float) : float =\n"
         "  let a1 = 0.31938153 in\n"
         "  let a2 = -0.356563782 in\n"
         "  let a3 = 1.781477937 in\n"
         "  let a4 = -1.821255978 in\n"
         "  let a5 = 1.330274429 in\n"
         "  let rsqrt2pi = 0.39894228040143267793994605993438 in\n"
         "  let k = 1.0 / (1.0 + 0.2316419 * abs d) in\n"
         "  let c = rsqrt2pi * exp (-0.5 * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5))))) in\n"
         "  if d > 0.0 then 1.0 - c else c\n"
         "let option (s : float) (x : float) (t : float) : (float, float) =\n"
         "  let sqrtT = sqrt t in\n"
         "  let d1 = (log (s / x) + (riskfree + 0.5 * volatility * volatility) * t) / (volatility * sqrtT) in\n"
         "  let d2 = d1 - volatility * sqrtT in\n"
         "  let cndD1 = cnd d1 in\n"
         "  let cndD2 = cnd d2 in\n"
         "  let expRT = exp (-riskfree * t) in\n"
         "  (s * cndD1 - x * expRT * cndD2, x * expRT * (1.0 - cndD2) - s * (1.0 - cndD1))",
         "let (call, put) = map (\\i -> option price[i] strike[i] years[i]) (iota n)"},
        {"fwd_diff", "let fwd x = x[1:] - x[:-1]", "let dx = fwd x"},
        {"spencer",
         "let weights = map float [-3, -6, -5, 3, 21, 46, 67, 74, 67, 46, 21, 3, -5, -6, -3]\n"
         "let spencer (x : [float]) : [float] =\n"
         "  let m = length x - 14 in\n"
         "  let acc = loop acc = fill m 0.0 for k < 15 do acc + weights[k] * x[k:k + m] in\n"
         "  acc / 320.0",
         "let smooth = spencer x"},
        {"sum", "", "let total = sum x"},
    };
    return programs;
}

inline const Program& example_program(std::string_view name) {
    for (const Program& p : example_programs())
        if (p.name == name) return p;
    std::fprintf(stderr, "%s: no example program %.*s\n", g_tool, static_cast<int>(name.size()), name.data());
    std::exit(2);
}

// Fails loudly: a benchmark of a statement that errors would time nothing.
// Keeps the last value's text (`value_text`).
struct StrictOutput : SessionOutput {
    std::string last;
    void value(const Value&, const Type&, const std::string& text) override { last = text; }
    void text(const std::string&) override {}
    void warning(const std::string&) override {}
    void error(const Error& e) override {
        std::fprintf(stderr, "%s: %s\n", g_tool, e.message.c_str());
        std::exit(1);
    }
};

inline void run(Session& s, const std::string& text) {
    StrictOutput out;
    s.execute(text, "<bench>", out);
}

// The printed value of an expression statement.
inline std::string value_text(Session& s, const std::string& expression) {
    StrictOutput out;
    s.execute(expression, "<bench>", out);
    return out.last;
}

// A program the compiled backend left (partly) to the reference evaluator
// would time the wrong thing: exits unless everything since the last
// compiled::reset_backend_stats ran as kernels.
inline void require_compiled(Session& s, const char* program) {
    const compiled::BackendStats& st = compiled::backend_stats(*s.compiled_backend());
    if (st.reference_replays == 0 && st.reference_builtins.empty()) return;
    std::fprintf(stderr, "%s: %s is not compiled entirely (%lld replays, %zu builtins left to the reference)\n", g_tool,
                 program, static_cast<long long>(st.reference_replays), st.reference_builtins.size());
    std::exit(1);
}

}  // namespace shoal::bench
