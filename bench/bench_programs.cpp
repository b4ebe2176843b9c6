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

#include "bench/bench_session.h"
#include "runtime/executors.h"

using namespace shoal;
using bench::Program;
using bench::run;

namespace {

// The examples' programs (bench_session.h); the inputs x, y, price, strike
// and years are bound to the .npy data of one size, and n to their length.
const int64_t kSizes[] = {int64_t(1) << 20, int64_t(1) << 24};

// Runs p's statement once (compiling its plan's kernels), checks that it
// compiled, then times reps more runs: the best, in seconds.
double best_seconds(int reps, Session& s, const Program& p) {
    compiled::reset_backend_stats(*s.compiled_backend());
    run(s, p.statement);
    bench::require_compiled(s, p.name);
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
    bench::g_tool = "bench_programs";
    runtime::install_compiled_backend();
    const std::string dir = smoke ? "" : argv[1];
    const int64_t only = argc == 3 ? std::atoll(argv[2]) : 0;
    for (int64_t n : smoke ? std::vector<int64_t>{4096} : std::vector<int64_t>(std::begin(kSizes), std::end(kSizes))) {
        if (only && n != only) continue;
        Session s;
        bind_inputs(s, dir, n);
        const int reps = smoke ? 0 : n > (int64_t(1) << 20) ? 5 : 20;
        for (const Program& p : bench::example_programs()) {
            run(s, p.definitions);
            const double seconds = best_seconds(reps, s, p);
            if (smoke) std::printf("%s ok\n", p.name);
            else std::printf("%s %lld %.3f\n", p.name, static_cast<long long>(n), seconds * 1e9 / double(n));
            std::fflush(stdout);
        }
    }
}
