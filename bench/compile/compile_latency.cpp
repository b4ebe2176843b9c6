// How long the CUDA backend takes to compile the kernels of Shoal programs,
// with NVRTC alone (no GPU needed), through cuda::KernelCompiler
// (runtime/cuda/kernel_compiler.h) as the CUDA executor uses it:
//
//   shoal_bench_compile [--arch sm_90] [--kernels] FILE.shoal...
//
// Each program runs, statement by statement, through a Session whose
// compiled backend runs its plans on the CPU executor behind a decorator
// that records the kernels of every plan. A statement's kernels are those of
// its plans, each distinct kernel (by CUDA source) counted at the first
// statement that launches it: what a session compiles, since the executor
// keeps what it compiled. Those kernels then go to the compiler three ways:
//   cold    a compiler over a fresh, empty disk cache directory (NVRTC);
//   disk    a fresh compiler over the same directory (a disk-cache hit);
//   memory  that compiler again (a memory-cache hit);
// once per kernel alone, and once per statement (its kernels in one
// compile() call, which compiles them in parallel; the executor calls it
// per plan, so a statement whose plans bring new kernels in several plans
// waits for several calls), each way in a directory of its own under
// $TMPDIR. Times are wall clock around compile(); disk and memory are the
// best of 5 rounds. Prints, per program and for all together, the counts
// and the median/max of each latency; with --kernels also one line per
// kernel. The first NVRTC compile of a process also loads NVRTC's builtins:
// it is done (and shown) before timing.
//
//   shoal_bench_compile --smoke
//
// measures one one-kernel statement (a ctest: the benchmark still builds and
// the three ways still give what they should). Exit status 77 when NVRTC
// cannot be loaded.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "codegen/compiled_backend.h"
#include "codegen/cuda_printer.h"
#include "lang/parser.h"
#include "lang/session.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/cuda/kernel_compiler.h"

using namespace shoal;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& why) {
    std::fprintf(stderr, "shoal_bench_compile: %s\n", why.c_str());
    std::exit(1);
}

// The CPU executor, remembering the kernels of every plan it runs.
class RecordingExecutor final : public ir::PlanExecutor {
public:
    std::string name() const override { return inner_->name(); }
    std::string description() const override { return inner_->description(); }
    std::string device_report() const override { return inner_->device_report(); }
    std::string memory_report(const std::map<const ir::DeviceArray*, std::string>& names) const override {
        return inner_->memory_report(names);
    }
    ir::PlanOutcome run(const std::shared_ptr<const ir::LaunchPlan>& plan, const ir::PlanBindings& bindings,
                        const ir::RunOptions& options) override {
        kernels_.insert(kernels_.end(), plan->kernels.begin(), plan->kernels.end());
        return inner_->run(plan, bindings, options);
    }
    // The kernels run since the last call, in launch order.
    std::vector<ir::Kernel> take() { return std::exchange(kernels_, {}); }

private:
    std::shared_ptr<ir::PlanExecutor> inner_ = cpu::make_cpu_executor("compile latency benchmark");
    std::vector<ir::Kernel> kernels_;
};

// The one recorder every session's backend runs its plans on.
const std::shared_ptr<RecordingExecutor>& recorder() {
    static const auto r = std::make_shared<RecordingExecutor>();
    return r;
}

std::shared_ptr<CompiledBackend> recording_backend() { return compiled::make_compiled_backend(recorder()); }

// A statement that fails would leave its kernels out.
struct StrictOutput : SessionOutput {
    std::string program;
    void value(const Value&, const Type&, const std::string&) override {}
    void text(const std::string&) override {}
    void warning(const std::string&) override {}
    void error(const Error& e) override { fail(program + ": " + e.message); }
};

// A statement that launches kernels no earlier one did, and those kernels.
struct Compile {
    int line = 0;
    std::vector<cuda::KernelSource> kernels;
};

struct Program {
    std::string name;
    int statements = 0;
    std::vector<Compile> compiles;
};

Program record(std::string name, const std::string& text) {
    Program p;
    p.name = std::move(name);
    Session session;
    StrictOutput out;
    out.program = p.name;
    session.execute(":set backend compiled", "<bench>", out);
    std::set<std::string> seen;
    const Source src(p.name, text);
    for (const StatementSpan& span : split_statements(src)) {
        ++p.statements;
        session.execute(text.substr(span.begin, span.end - span.begin), p.name, out, true);
        Compile c;
        for (const ir::Kernel& k : recorder()->take()) {
            std::string source = ir::print_cuda({k});
            if (seen.insert(source).second) c.kernels.push_back({k.name, std::move(source), k.comment});
        }
        int column = 0;
        src.position(span.begin, c.line, column);
        if (!c.kernels.empty()) p.compiles.push_back(std::move(c));
    }
    return p;
}

// A fresh, empty directory, removed with its contents.
struct TempDir {
    fs::path path;
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "shoal-bench-compile-XXXXXX").string();
        if (!mkdtemp(pattern.data())) fail("cannot make a temporary directory in " + fs::temp_directory_path().string());
        path = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        fs::remove_all(path, ignored);
    }
};

struct Latencies {  // seconds, one per group of kernels
    std::vector<double> cold, disk, memory;
};

struct Setup {
    std::shared_ptr<const cuda::NvrtcApi> nvrtc;
    std::string arch;
};

// Times compiler.compile(group) per group; every kernel must come `from` there.
void time_pass(cuda::KernelCompiler& compiler, const Setup& setup,
               const std::vector<std::vector<cuda::KernelSource>>& groups, cuda::KernelFrom from,
               std::vector<double>& seconds) {
    for (const auto& group : groups) {
        const auto start = Clock::now();
        const std::vector<cuda::CompiledKernel> images = compiler.compile(group, setup.arch);
        seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
        for (const cuda::CompiledKernel& image : images)
            if (image.from != from)
                fail(image.name + " came from the " + cuda::kernel_from_name(image.from) + ", not the " +
                     cuda::kernel_from_name(from));
    }
}

// Element by element, the smaller of best and round (all of round when best is empty).
void keep_best(std::vector<double>& best, const std::vector<double>& round) {
    if (best.empty()) best = round;
    for (size_t i = 0; i < best.size(); ++i) best[i] = std::min(best[i], round[i]);
}

// Cold, disk and memory, in a directory of their own. Hits take tens of
// microseconds, where a busy machine's scheduling shows (a thread waiting a
// 4 ms tick): they are the best of kHitRounds rounds, each on a fresh compiler.
constexpr int kHitRounds = 5;

Latencies time_three_ways(const Setup& setup, const std::vector<std::vector<cuda::KernelSource>>& groups) {
    TempDir dir;
    Latencies l;
    cuda::KernelCompiler cold(setup.nvrtc, std::make_shared<cache::KernelDiskCache>(dir.path));
    time_pass(cold, setup, groups, cuda::KernelFrom::Compiled, l.cold);
    for (int round = 0; round < kHitRounds; ++round) {
        cuda::KernelCompiler warm(setup.nvrtc, std::make_shared<cache::KernelDiskCache>(dir.path));
        std::vector<double> disk, memory;
        time_pass(warm, setup, groups, cuda::KernelFrom::Disk, disk);
        time_pass(warm, setup, groups, cuda::KernelFrom::Memory, memory);
        keep_best(l.disk, disk);
        keep_best(l.memory, memory);
    }
    return l;
}

struct Measured {
    std::string name;
    int statements = 0;
    std::vector<double> kernels_per_statement;  // of the statements that compile
    Latencies kernel, statement;
};

void append(std::vector<double>& to, const std::vector<double>& from) { to.insert(to.end(), from.begin(), from.end()); }

void append(Measured& to, const Measured& from) {
    to.statements += from.statements;
    append(to.kernels_per_statement, from.kernels_per_statement);
    for (auto field : {&Latencies::cold, &Latencies::disk, &Latencies::memory}) {
        append(to.kernel.*field, from.kernel.*field);
        append(to.statement.*field, from.statement.*field);
    }
}

Measured measure(const Setup& setup, const Program& p, bool print_kernels) {
    Measured m;
    m.name = p.name;
    m.statements = p.statements;
    std::vector<std::vector<cuda::KernelSource>> statements, singles;
    std::vector<int> lines;  // per single
    for (const Compile& c : p.compiles) {
        m.kernels_per_statement.push_back(double(c.kernels.size()));
        statements.push_back(c.kernels);
        for (const cuda::KernelSource& k : c.kernels) {
            singles.push_back({k});
            lines.push_back(c.line);
        }
    }
    m.kernel = time_three_ways(setup, singles);
    m.statement = time_three_ways(setup, statements);
    if (print_kernels)
        for (size_t k = 0; k < singles.size(); ++k)
            std::printf("  line %-4d %-22s %7.1f ms %7.1f us %5.1f us\n", lines[k], singles[k][0].name.c_str(),
                        m.kernel.cold[k] * 1e3, m.kernel.disk[k] * 1e6, m.kernel.memory[k] * 1e6);
    return m;
}

// "median/max" of v * scale, or "-" when empty.
std::string median_max(std::vector<double> v, double scale, int decimals) {
    if (v.empty()) return "-";
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    char text[64];
    std::snprintf(text, sizeof text, "%.*f/%.*f", decimals, median * scale, decimals, v.back() * scale);
    return text;
}

void print_header() {
    std::printf("%-26s %5s %9s %7s %8s | %-22s %12s %12s | %-22s %12s %12s\n", "", "", "", "", "kernels",
                "per kernel (med/max):", "", "", "per statement (med/max):", "", "");
    std::printf("%-26s %5s %9s %7s %8s | %12s %12s %12s | %12s %12s %12s\n", "program", "stmts", "compiling", "kernels",
                "/stmt", "cold ms", "disk us", "memory us", "cold ms", "disk us", "memory us");
}

void print_row(const Measured& m) {
    size_t kernels = 0;
    for (double k : m.kernels_per_statement) kernels += size_t(k);
    std::printf("%-26s %5d %9zu %7zu %8s | %12s %12s %12s | %12s %12s %12s\n", m.name.c_str(), m.statements,
                m.kernels_per_statement.size(), kernels, median_max(m.kernels_per_statement, 1, 0).c_str(),
                median_max(m.kernel.cold, 1e3, 0).c_str(), median_max(m.kernel.disk, 1e6, 0).c_str(),
                median_max(m.kernel.memory, 1e6, 1).c_str(), median_max(m.statement.cold, 1e3, 0).c_str(),
                median_max(m.statement.disk, 1e6, 0).c_str(), median_max(m.statement.memory, 1e6, 1).c_str());
    std::fflush(stdout);
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) fail("cannot read " + path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// "examples/saxpy" for .../examples/saxpy.shoal.
std::string program_name(const fs::path& path) {
    return (path.parent_path().filename() / path.stem()).string();
}

int usage() {
    std::fprintf(stderr, "usage: shoal_bench_compile [--arch sm_90] [--kernels] FILE.shoal... | --smoke\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    Setup setup{nullptr, "sm_90"};
    bool smoke = false, print_kernels = false;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--smoke") smoke = true;
        else if (arg == "--kernels") print_kernels = true;
        else if (arg == "--arch" && i + 1 < argc) setup.arch = argv[++i];
        else if (arg.rfind("--", 0) != 0) files.push_back(arg);
        else return usage();
    }
    if (smoke == !files.empty()) return usage();
    std::string why_not;
    setup.nvrtc = cuda::shared_real_nvrtc(&why_not);
    if (!setup.nvrtc) {
        std::fprintf(stderr, "shoal_bench_compile: no NVRTC: %s\n", why_not.c_str());
        return 77;
    }
    set_compiled_backend_factory(recording_backend);

    try {
        cuda::KernelCompiler first(setup.nvrtc, nullptr);
        const cuda::NvrtcTarget target = first.target_for(setup.arch);
        const auto start = Clock::now();
        first.compile({{"shoal_first", "extern \"C\" __global__ void shoal_first() {}", "the first compile"}}, setup.arch);
        std::printf("%s (%s) for %s: %s %s; %u cores; the first compile of the process (an empty kernel): %.0f ms\n\n",
                    first.compiler_id().c_str(), setup.nvrtc->library.c_str(), setup.arch.c_str(),
                    cuda::image_kind_name(target.kind), target.gpu_architecture.c_str(),
                    std::thread::hardware_concurrency(),
                    std::chrono::duration<double>(Clock::now() - start).count() * 1e3);

        std::vector<Program> programs;
        if (smoke) programs.push_back(record("smoke", "let z = map (\\i -> float i * 0.5) (iota 16)"));
        for (const std::string& file : files) programs.push_back(record(program_name(file), read_file(file)));
        if (smoke && (programs[0].compiles.size() != 1 || programs[0].compiles[0].kernels.size() != 1))
            fail("the smoke statement should compile one kernel");

        print_header();
        Measured all;
        all.name = "all";
        for (const Program& p : programs) {
            const Measured m = measure(setup, p, print_kernels);
            print_row(m);
            append(all, m);
        }
        if (programs.size() > 1) print_row(all);
    } catch (const Error& e) {
        fail(e.message);
    }
}
