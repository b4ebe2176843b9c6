// The papers' ablation table, reproduced (issue 12 §5): each seed program
// with one optimisation on and off -- fusion (RMSE, SDOT, Black-Scholes),
// shared tiles (forward difference, Spencer-15, Jacobi 2-D), hoisting
// (addSum), the tiled matmul against the naive `generate`, and the
// deterministic float histogram against integer atomics -- run through a
// Session on the CPU executor. Per program and setting: kernels launched,
// global bytes moved, 32-byte sectors, the roofline estimate on an H100
// (lang/profile.h, from the counters) and the CPU executor's wall time (best
// of ROUNDS), then the off/on ratios. Counters are exact; times are this
// machine's. The unit tests (tests/unit/test_optimisations.cpp) assert the
// direction and size of each effect from the same counters.
//
// usage: shoal_bench_ablation [--smoke] [--rounds N] [NAME ...]
//   --smoke   every program once at a small size (a ctest; times nothing)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_session.h"
#include "runtime/executors.h"

using namespace shoal;
using shoal::bench::run;

namespace {

struct Case {
    std::string program, size, what;  // what: the optimisation switched
    std::string setup;                // definitions and inputs, run once per session
    std::string on, off;              // the timed statement with the optimisation on / the baseline
    std::string off_setting;          // run before `off` (":set fusion off"); empty: `off` is another statement
};

struct Measured {
    int64_t launches = 0, bytes = 0, sectors = 0;
    double estimate = 0, seconds = 1e30;
};

std::string n_text(int64_t n) { return std::to_string(n); }

std::vector<Case> cases(bool smoke) {
    const int64_t n = smoke ? 4096 : int64_t{1} << 22;
    const std::string vec = "let x = generate " + n_text(n) + " (\\i -> float (i % 1000) * 0.001)\n"
                            "let y = generate " + n_text(n) + " (\\i -> float (i % 7) * 0.5)\n";
    const std::string rmse = "let rmse (p : [float]) (o : [float]) : float =\n  let d = p - o in\n"
                             "  sqrt (sum (d * d) / float (length d))\n";
    const std::string sdot = "let sdot (a : [float]) (b : [float]) : float = sum (a * b)\n";
    std::string bs = bench::example_program("blackscholes").definitions;
    bs += "\nlet n = " + n_text(n) + "\nlet price = generate " + n_text(n) + " (\\i -> 5.0 + float (i % 100) * 0.3)\n"
          "let strike = generate " + n_text(n) + " (\\i -> 1.0 + float (i % 77) * 0.4)\n"
          "let years = generate " + n_text(n) + " (\\i -> 0.25 + float (i % 40) * 0.25)\n";
    const std::string spencer = std::string(bench::example_program("spencer").definitions) + "\n";
    const std::string add_sum = "let addSum (xs : [float]) (ys : [float]) : [float] = map (\\x -> x + sum ys) xs\n"
                                "let xs = generate " + n_text(smoke ? 1000 : 1 << 16) + " (\\i -> float i)\n"
                                "let ys = generate " + n_text(smoke ? 500 : 4096) + " (\\i -> 1.0 / float (i + 1))\n";
    auto jacobi = [](int64_t m) {
        return "let g = generate (" + n_text(m) + ", " + n_text(m) + ") (\\i j -> float ((i * 7 + j) % 13))\n";
    };
    auto matrices = [](int64_t m) {
        return "let a = generate (" + n_text(m) + ", " + n_text(m) + ") (\\i j -> float ((i + j) % 7))\n"
               "let b = generate (" + n_text(m) + ", " + n_text(m) + ") (\\i j -> float ((i * 3 + j) % 5))\n";
    };
    const std::string stencil = "let j = g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:]";
    const std::string vec_size = smoke ? "2^12" : "2^22";
    std::vector<Case> out = {
        {"rmse", vec_size, "fusion", vec + rmse, "let r = rmse x y", "let r = rmse x y", ":set fusion off"},
        {"sdot", vec_size, "fusion", vec + sdot, "let r = sdot x y", "let r = sdot x y", ":set fusion off"},
        {"blackscholes", vec_size, "fusion", bs, bench::example_program("blackscholes").statement,
         bench::example_program("blackscholes").statement, ":set fusion off"},
        {"forward difference", vec_size, "sharedmem", vec, "let d = x[1:] - x[:-1]", "let d = x[1:] - x[:-1]",
         ":set sharedmem off"},
        {"spencer-15", vec_size, "sharedmem", vec + spencer, "let s = spencer x", "let s = spencer x", ":set sharedmem off"},
        {"addSum", smoke ? "1000" : "2^16", "hoist", add_sum, "let r = addSum xs ys", "let r = addSum xs ys", ":set hoist off"},
    };
    for (int64_t m : smoke ? std::vector<int64_t>{64} : std::vector<int64_t>{512, 2048})
        out.push_back({"jacobi 2-D", n_text(m) + "^2", "sharedmem", jacobi(m), stencil, stencil, ":set sharedmem off"});
    for (int64_t m : smoke ? std::vector<int64_t>{64} : std::vector<int64_t>{512, 1024})
        out.push_back({"matmul", n_text(m) + "^2", "tiles", matrices(m), "let c = a @ b",
                       "let c = generate (" + n_text(m) + ", " + n_text(m) + ") (\\i j -> sum (zipWith (*) a[i, :] b[:, j]))",
                       ""});
    // Deterministic float permute (lower_permute.cpp) against integer atomics
    // on the same targets: the price of the same bits on every run.
    const std::string weights = vec + "let w = map (\\v -> int (v * 1000.0)) x\n";
    for (int64_t m : smoke ? std::vector<int64_t>{10, 2000} : std::vector<int64_t>{10, 256, 4096}) {
        const std::string target = "(\\i -> (i * 37) % " + n_text(m) + ")";
        out.push_back({"histogram", vec_size + ":" + n_text(m), "ordered", weights,
                       "let h = permute (+) (fill " + n_text(m) + " 0.0) " + target + " x",
                       "let h = permute (+) (fill " + n_text(m) + " 0) " + target + " w", ""});
    }
    return out;
}

Measured measure(Session& s, const std::string& statement, int rounds, const GpuModel& h100) {
    CompiledBackend& b = *s.compiled_backend();
    run(s, statement);  // the warm-up: lowers, optimises and caches the plan
    Measured m;
    for (int r = 0; r < rounds; ++r) {
        compiled::reset_backend_stats(b);
        const auto t0 = std::chrono::steady_clock::now();
        const ProfileReport report = b.profile([&] { run(s, statement); }, "");
        m.seconds = std::min(m.seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        bench::require_compiled(s, statement.c_str());
        m.launches = m.bytes = m.sectors = 0;
        m.estimate = 0;
        for (const KernelProfile& k : report.kernels) {
            m.launches += k.launches;
            m.bytes += k.global_bytes_loaded + k.global_bytes_stored;
            m.sectors += k.global_sectors;
            m.estimate += roofline_seconds(k, h100);
        }
    }
    return m;
}

std::string human(double v, const char* unit) {
    char buf[32];
    const char* prefixes[] = {"", "K", "M", "G", "T"};
    int p = 0;
    while (v >= 1000 && p < 4) v /= 1000, ++p;
    std::snprintf(buf, sizeof buf, "%.1f %s%s", v, prefixes[p], unit);
    return buf;
}

std::string seconds_text(double s) {
    char buf[32];
    if (s < 1e-3) std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
    else if (s < 1) std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
    else std::snprintf(buf, sizeof buf, "%.2f s", s);
    return buf;
}

std::string ratio(double off, double on) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", on > 0 ? off / on : 0.0);
    return buf;
}

}  // namespace

int main(int argc, char** argv) {
    bench::g_tool = "bench_ablation";
    bool smoke = false;
    int rounds = 3;
    std::vector<std::string> only;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--smoke")) smoke = true;
        else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
        else only.push_back(argv[i]);
    }
    if (smoke) rounds = 1;
    runtime::install_compiled_backend();
    const GpuModel& h100 = *find_gpu_model("h100");
    std::printf("%-18s %-6s %-9s | %13s | %21s %6s | %17s | %19s %6s | %19s %6s\n", "program", "size", "switched",
                "kernels on/off", "bytes moved on/off", "ratio", "sectors on/off", "H100 est. on/off", "ratio",
                "CPU wall on/off", "ratio");
    for (const Case& c : cases(smoke)) {
        if (!only.empty() && std::find(only.begin(), only.end(), c.program) == only.end()) continue;
        Session s;
        run(s, ":set backend compiled\n:set executor cpu");
        run(s, c.setup);
        const Measured on = measure(s, c.on, rounds, h100);
        if (!c.off_setting.empty()) run(s, c.off_setting);
        const Measured off = measure(s, c.off, rounds, h100);
        const std::string kernels = std::to_string(on.launches) + " / " + std::to_string(off.launches);
        std::printf("%-18s %-6s %-9s | %13s | %21s %6s | %17s | %19s %6s | %19s %6s\n", c.program.c_str(), c.size.c_str(),
                    c.what.c_str(), kernels.c_str(),
                    (human(static_cast<double>(on.bytes), "B") + " / " + human(static_cast<double>(off.bytes), "B")).c_str(),
                    ratio(static_cast<double>(off.bytes), static_cast<double>(on.bytes)).c_str(),
                    (human(static_cast<double>(on.sectors), "") + " / " + human(static_cast<double>(off.sectors), "")).c_str(),
                    (seconds_text(on.estimate) + " / " + seconds_text(off.estimate)).c_str(),
                    ratio(off.estimate, on.estimate).c_str(),
                    (seconds_text(on.seconds) + " / " + seconds_text(off.seconds)).c_str(),
                    ratio(off.seconds, on.seconds).c_str());
        std::fflush(stdout);
    }
    std::printf("\nbytes and sectors: the CPU executor's counters (what a GPU would move); H100 est.: the roofline "
                "of lang/profile.h from them (an estimate); CPU wall: best of %d on this machine.\n",
                rounds);
    return 0;
}
