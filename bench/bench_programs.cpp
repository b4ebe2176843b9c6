// Whole Shoal programs (those of examples/*.shoal) run through a Session with
// the compiled backend, timed side by side with numpy by bench/run.sh.
//
//   shoal_bench_programs DIR [N]
//
// reads the inputs programs_numpy.py wrote into DIR (the same data on both
// sides), binds them once per size, then times the statement that computes
// each program's result: a top-level let, so an array result is materialised
// (as numpy's is). The time includes everything the session does for the
// statement (parsing, type checking, fusion, the plan's launches, the result
// array). N picks one of the sizes (2^20, 2^24; default both). Prints one
// line per program and size:
//   <program> <n> <ns per element>
//
//   shoal_bench_programs --smoke
//
// runs every program once on small generated inputs (a ctest: the benchmark
// still builds and its programs still compile to kernels), timing nothing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lang/session.h"
#include "codegen/compiled_backend.h"
#include "runtime/executors.h"

using namespace shoal;

namespace {

struct Program {
    const char* name;
    const char* definitions;  // run once
    const char* statement;    // timed
};

// The definitions are the examples' own; the inputs x, y, price, strike and
// years are bound to the .npy data of one size, and n to their length.
const Program kPrograms[] = {
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

const int64_t kSizes[] = {int64_t(1) << 20, int64_t(1) << 24};

// Fails loudly: a benchmark of a statement that errors would time nothing.
struct StrictOutput : SessionOutput {
    void value(const Value&, const Type&, const std::string&) override {}
    void text(const std::string&) override {}
    void warning(const std::string&) override {}
    void error(const Error& e) override {
        std::fprintf(stderr, "bench_programs: %s\n", e.message.c_str());
        std::exit(1);
    }
};

void run(Session& s, const std::string& text) {
    StrictOutput out;
    s.execute(text, "<bench>", out);
}

// A program the compiled backend left (partly) to the reference evaluator
// would time the wrong thing.
void require_compiled(Session& s, const Program& p) {
    const compiled::BackendStats& st = compiled::backend_stats(*s.compiled_backend());
    if (st.reference_replays == 0 && st.reference_builtins.empty()) return;
    std::fprintf(stderr, "bench_programs: %s is not compiled entirely (%lld replays, %zu builtins left to the reference)\n",
                 p.name, static_cast<long long>(st.reference_replays), st.reference_builtins.size());
    std::exit(1);
}

// Runs p's statement once (compiling its plan's kernels), checks that it
// compiled, then times reps more runs: the best, in seconds.
double best_seconds(int reps, Session& s, const Program& p) {
    compiled::reset_backend_stats(*s.compiled_backend());
    run(s, p.statement);
    require_compiled(s, p);
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        run(s, p.statement);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

// Binds x, y, price, strike, years and n: the .npy inputs of size n in dir,
// or, for the smoke run (dir empty), the examples' generated ones.
void bind_inputs(Session& s, const std::string& dir, int64_t n) {
    run(s, ":set backend compiled");
    if (dir.empty()) {
        run(s, "let n = " + std::to_string(n) +
                   "\nlet x = generate n (\\i -> float (i % 1000) * 0.001)"
                   "\nlet y = generate n (\\i -> float (i % 777) * 0.002)"
                   "\nlet price = generate n (\\i -> 5.0 + 25.0 * float ((i * 37) % 101) / 100.0)"
                   "\nlet strike = generate n (\\i -> 1.0 + 99.0 * float ((i * 53) % 97) / 96.0)"
                   "\nlet years = generate n (\\i -> 0.25 + 9.75 * float ((i * 29) % 89) / 88.0)");
        return;
    }
    for (const char* input : {"x", "y", "price", "strike", "years"})
        run(s, "let " + std::string(input) + " = load \"" + dir + "/" + input + "_" + std::to_string(n) + ".npy\"");
    run(s, "let n = length x");
}

}  // namespace

int main(int argc, char** argv) {
    const bool smoke = argc == 2 && std::strcmp(argv[1], "--smoke") == 0;
    if (argc < 2 || argc > 3 || (argc == 3 && std::atoll(argv[2]) <= 0)) {
        std::fprintf(stderr, "usage: shoal_bench_programs DIR [N] | --smoke (DIR: the inputs of programs_numpy.py data DIR)\n");
        return 2;
    }
    runtime::install_compiled_backend();
    const std::string dir = smoke ? "" : argv[1];
    const int64_t only = argc == 3 ? std::atoll(argv[2]) : 0;
    for (int64_t n : smoke ? std::vector<int64_t>{4096} : std::vector<int64_t>(std::begin(kSizes), std::end(kSizes))) {
        if (only && n != only) continue;
        Session s;
        bind_inputs(s, dir, n);
        const int reps = smoke ? 0 : n > (int64_t(1) << 20) ? 5 : 20;
        for (const Program& p : kPrograms) {
            run(s, p.definitions);
            const double seconds = best_seconds(reps, s, p);
            if (smoke) std::printf("%s ok\n", p.name);
            else std::printf("%s %lld %.3f\n", p.name, static_cast<long long>(n), seconds * 1e9 / double(n));
            std::fflush(stdout);
        }
    }
}
