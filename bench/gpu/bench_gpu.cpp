// Shoal's kernels on a GPU, side by side in one run with the bandwidth limit
// (a device-to-device copy of the same bytes) and with CuPy (bench/gpu/run.sh).
//
//   shoal_bench_gpu [--rounds R] [--log2 24,26] [--cupy FILE] [--simulated] [--set NAME=VALUE]...
//   (--set sharedmem=off / fusion=off / hoist=off: an optimisation switched off in every session)
//
// For each size 2^k (Jacobi: a square of 2^k elements) it binds the inputs
// on the device (`random`, `generate`: resident before anything is timed),
// then for each program runs its timed statement once (compiling its
// kernels) and R more times inside CompiledBackend::profile, keeping the
// best of each figure:
//   kernel   the statement's kernels, summed (CUDA events around each launch)
//   wall     the whole statement: front end, launches, and the waits a timed
//            run makes at the end of each plan for its events
//   GB/s     the bytes the program must move at least (its inputs read once,
//            its results written once) per kernel second
//   copy     cudaMemcpyAsync device to device of half those bytes (so it
//            reads and writes them all), timed with CUDA events through
//            cuda::CudaApi; `of copy` = GB/s over the copy's GB/s
//   cupy     FILE's figures (cupy_side.py): CuPy's time from CUDA events and
//            its wall time with a synchronisation; ratios shoal/cupy (below
//            1: Shoal is faster)
// The timed statements are top-level lets: results stay on the device. The
// tool exits 1 if a statement fell back to the reference evaluator, uploaded
// anything or downloaded more than scalars and error records (1 KiB a run).
//
// Without a GPU (the executor is not the CUDA executor) it prints `:device`'s
// reason and exits 77; --simulated runs on the simulated device instead
// (figures of the CPU that simulates it, meaningless as speeds).
//
//   shoal_bench_gpu --smoke
//
// is --simulated --rounds 1 --log2 10: every program once more after its
// warm-up, with every check (a ctest, timing nothing that matters).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_session.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/simulated_device.h"
#include "runtime/executors.h"

using namespace shoal;
using bench::Program;
using bench::run;

namespace {

// cupy_side.py's JACOBI_SWEEPS.
constexpr int kJacobiSweeps = 10;

struct GpuProgram {
    Program program;
    bool square;  // on the side x side grid u0 (Jacobi), else on the length-n inputs
    // The bytes it must move at least, for `elements` input elements (4 bytes
    // each), once its statement has run in `s`.
    double (*bytes)(Session& s, double elements);
};

const Program kSdot{"sdot", "let sdot (x : [float]) (y : [float]) : float = sum (x * y)", "let d = sdot x y"};
// examples/jacobi.shoal's step with f = 1 (the interior: the average of four
// neighbours plus h^2/4; the boundary kept), as one generate: the example's
// `u with [1:-1, 1:-1] = ...` of rank-2 slices runs on the host today.
const std::string kJacobiSweep = "let u = loop u = u0 for it < " + std::to_string(kJacobiSweeps) + " do step u";
const Program kJacobi{"jacobi",
                      "let h = 1.0 / float (side - 1)\n"
                      "let step (u : [[float]]) : [[float]] =\n"
                      "  generate (side, side) (\\i j ->\n"
                      "    if i == 0 || j == 0 || i == side - 1 || j == side - 1 then u[i, j]\n"
                      "    else 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] + h * h))",
                      kJacobiSweep.c_str()};
// The 4-point update written with four rank-2 slices: one kernel whose reads
// shared tiles serve (docs/optimisations.md); compare with --set sharedmem=off.
const Program kStencil{"stencil-slices", "", "let j = u0[:-2, 1:-1] + u0[2:, 1:-1] + u0[1:-1, :-2] + u0[1:-1, 2:]"};
const Program kScan{"scan", "", "let ps = scan (+) 0.0 x"};
// examples/histogram.shoal's permute, 256 bins of [0, 1).
const Program kHistogram{"histogram", "let bin (v : float) : int = min 255 (int (v * 256.0))",
                         "let hist = permute (+) (fill 256 0) (\\i -> bin x[i]) (fill n 1)"};
const Program kFilter{"filter", "", "let kept = filter (\\v -> v > 0.5) x"};
const Program kSort{"sort", "", "let sorted = sort x"};

std::vector<GpuProgram> gpu_programs() {
    using bench::example_program;
    return {
        {example_program("saxpy"), false, [](Session&, double n) { return 12 * n; }},
        {kSdot, false, [](Session&, double n) { return 8 * n; }},
        {example_program("rmse"), false, [](Session&, double n) { return 8 * n; }},
        {example_program("blackscholes"), false, [](Session&, double n) { return 20 * n; }},
        {example_program("fwd_diff"), false, [](Session&, double n) { return 4 * n + 4 * (n - 1); }},
        {example_program("spencer"), false, [](Session&, double n) { return 4 * n + 4 * (n - 14); }},
        {kJacobi, true, [](Session&, double n) { return kJacobiSweeps * 8 * n; }},
        {kStencil, true,
         [](Session&, double n) {
             const double side = std::sqrt(n);
             return 4 * n + 4 * (side - 2) * (side - 2);
         }},
        {kScan, false, [](Session&, double n) { return 8 * n; }},
        {kHistogram, false, [](Session&, double n) { return 4 * n + 4 * 256; }},
        {kFilter, false,
         [](Session& s, double n) { return 4 * n + 4 * std::stod(bench::value_text(s, "length kept")); }},
        {kSort, false, [](Session&, double n) { return 8 * n; }},
    };
}

// The inputs, computed on the device: x, y, price, strike, years (the
// ranges of bench/programs_numpy.py) of length n; u0 (side x side, 1 on the
// top edge as in examples/jacobi.shoal).
void bind_inputs(Session& s, int64_t n, int64_t side) {
    run(s, "let n = " + std::to_string(n) + "\nlet side = " + std::to_string(side) +
               "\nlet x = random n"
               "\nlet y = random n"
               "\nlet price = 5.0 + 25.0 * random n"
               "\nlet strike = 1.0 + 99.0 * random n"
               "\nlet years = 0.25 + 9.75 * random n"
               "\nlet u0 = generate (side, side) (\\i j -> if i == 0 then 1.0 else 0.0)");
}

void check(cuda::CudaApi& api, cudaError_t e, const char* call) {
    if (e == cudaSuccess) return;
    std::fprintf(stderr, "%s: %s: %s (%s)\n", bench::g_tool, call, api.getErrorName(e), api.getErrorString(e));
    std::exit(1);
}

// The bandwidth limit: a device-to-device copy on the device's default pool,
// timed with CUDA events on a stream of its own.
class DeviceCopy {
public:
    explicit DeviceCopy(std::shared_ptr<cuda::CudaApi> api) : api_(std::move(api)) {
        check(*api_, api_->setDevice(0), "cudaSetDevice");
        check(*api_, api_->streamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        check(*api_, api_->deviceGetDefaultMemPool(&pool_, 0), "cudaDeviceGetDefaultMemPool");
        check(*api_, api_->eventCreate(&start_), "cudaEventCreate");
        check(*api_, api_->eventCreate(&end_), "cudaEventCreate");
    }
    ~DeviceCopy() {
        release();
        api_->eventDestroy(start_);
        api_->eventDestroy(end_);
        api_->streamDestroy(stream_);
    }
    DeviceCopy(const DeviceCopy&) = delete;
    DeviceCopy& operator=(const DeviceCopy&) = delete;

    // The best of `rounds` copies of bytes / 2 bytes (reading and writing
    // `bytes` in all), after one to warm up: seconds.
    double seconds(double bytes, int rounds) {
        const size_t half = std::max<size_t>(static_cast<size_t>(bytes / 2), 1);
        reserve(half);
        double best = 1e30;
        for (int r = -1; r < rounds; ++r) {
            check(*api_, api_->eventRecord(start_, stream_), "cudaEventRecord");
            check(*api_, api_->memcpyAsync(dst_, src_, half, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
            check(*api_, api_->eventRecord(end_, stream_), "cudaEventRecord");
            check(*api_, api_->streamSynchronize(stream_), "cudaStreamSynchronize");
            float ms = 0;
            check(*api_, api_->eventElapsedTime(&ms, start_, end_), "cudaEventElapsedTime");
            if (r >= 0) best = std::min(best, static_cast<double>(ms) * 1e-3);
        }
        return best;
    }

private:
    void reserve(size_t bytes) {
        if (bytes <= capacity_) return;
        release();
        check(*api_, api_->mallocFromPoolAsync(&src_, bytes, pool_, stream_), "cudaMallocFromPoolAsync");
        check(*api_, api_->mallocFromPoolAsync(&dst_, bytes, pool_, stream_), "cudaMallocFromPoolAsync");
        capacity_ = bytes;
    }
    void release() {
        if (capacity_ == 0) return;
        check(*api_, api_->freeAsync(src_, stream_), "cudaFreeAsync");
        check(*api_, api_->freeAsync(dst_, stream_), "cudaFreeAsync");
        check(*api_, api_->streamSynchronize(stream_), "cudaStreamSynchronize");
        capacity_ = 0;
    }

    std::shared_ptr<cuda::CudaApi> api_;
    cudaStream_t stream_ = nullptr;
    cudaMemPool_t pool_ = nullptr;
    cudaEvent_t start_ = nullptr, end_ = nullptr;
    void *src_ = nullptr, *dst_ = nullptr;
    size_t capacity_ = 0;
};

struct Row {
    std::string program, size;
    int log2 = 0;
    double bytes = 0;
    int64_t launches = 0;
    double kernel = 1e30, wall = 1e30, copy = 0;  // seconds, best of the rounds
    int64_t downloaded = 0;                        // bytes to the host, all rounds
};

// The statement's warm-up run, then `rounds` timed runs (kernel and wall
// time, each the best), with the checks the header promises.
Row time_program(Session& s, const GpuProgram& g, double elements, int rounds) {
    const Program& p = g.program;
    CompiledBackend& b = *s.compiled_backend();
    run(s, p.definitions);
    compiled::reset_backend_stats(b);
    run(s, p.statement);  // the warm-up: compiles and loads its kernels
    const TransferCounters before = b.transfers();
    Row row;
    row.program = p.name;
    for (int r = 0; r < rounds; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const std::vector<KernelProfile> kernels = b.profile([&] { run(s, p.statement); }, "").kernels;
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        int64_t ns = 0;
        row.launches = 0;
        for (const KernelProfile& k : kernels) {
            ns += k.nanoseconds;
            row.launches += k.launches;
        }
        row.kernel = std::min(row.kernel, static_cast<double>(ns) * 1e-9);
        row.wall = std::min(row.wall, wall);
    }
    bench::require_compiled(s, p.name);
    if (b.executor_name() != "cuda") {
        std::fprintf(stderr, "%s: %s: the session left the GPU: %s\n", bench::g_tool, p.name, b.device_lost().c_str());
        std::exit(1);
    }
    const TransferCounters moved = b.transfers() - before;
    if (moved.to_device_copies != 0 || moved.to_host_bytes > int64_t{1024} * rounds) {
        std::fprintf(stderr, "%s: %s moved arrays between host and device in its timed runs (%lld bytes up, %lld down)\n",
                     bench::g_tool, p.name, static_cast<long long>(moved.to_device_bytes),
                     static_cast<long long>(moved.to_host_bytes));
        std::exit(1);
    }
    row.downloaded = moved.to_host_bytes;
    row.bytes = g.bytes(s, elements);
    return row;
}

// CuPy's figures from cupy_side.py: "<program> <log2> <ms> <wall ms>" lines,
// or "skipped <reason>"; "cupy <version> ..." says what ran.
struct CupySide {
    std::map<std::pair<std::string, int>, std::pair<double, double>> ms;  // events, wall
    std::string about;  // what ran, or why nothing did
};

CupySide read_cupy(const std::string& path) {
    CupySide c;
    if (path.empty()) {
        c.about = "CuPy: skipped (no --cupy file: bench/gpu/run.sh runs cupy_side.py)";
        return c;
    }
    std::ifstream in(path);
    if (!in) {
        c.about = "CuPy: skipped (cannot read " + path + ")";
        return c;
    }
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::string first, rest;
        words >> first;
        std::getline(words >> std::ws, rest);
        if (first == "skipped") c.about = "CuPy: skipped (" + rest + ")";
        else if (first == "cupy") c.about = "CuPy " + rest;
        else if (!first.empty()) {
            std::istringstream figures(rest);
            int log2 = 0;
            double ms = 0, wall = 0;
            if (figures >> log2 >> ms >> wall) c.ms[{first, log2}] = {ms, wall};
        }
    }
    if (c.about.empty()) c.about = "CuPy: skipped (" + path + " says nothing)";
    return c;
}

void print_table(const std::vector<Row>& rows, const CupySide& cupy) {
    std::printf("%-12s %-7s %9s %8s %10s %9s %8s %9s %7s %9s %10s %9s %9s\n", "program", "n", "min MB", "launches",
                "kernel ms", "wall ms", "GB/s", "copy GB/s", "of copy", "cupy ms", "shoal/cupy", "cupy wall", "wall/cupy");
    for (const Row& r : rows) {
        std::printf("%-12s %-7s %9.1f %8lld %10.3f %9.3f %8.1f %9.1f %7.2f", r.program.c_str(), r.size.c_str(),
                    r.bytes * 1e-6, static_cast<long long>(r.launches), r.kernel * 1e3, r.wall * 1e3,
                    r.bytes / r.kernel * 1e-9, r.bytes / r.copy * 1e-9, r.copy / r.kernel);
        auto it = cupy.ms.find({r.program, r.log2});
        if (it != cupy.ms.end()) {
            const auto [ms, wall] = it->second;
            std::printf(" %9.3f %10.2f %9.3f %9.2f", ms, r.kernel * 1e3 / ms, wall, r.wall * 1e3 / wall);
        } else {
            std::printf(" %9s %10s %9s %9s", "-", "-", "-", "-");
        }
        std::printf("\n");
    }
}

[[noreturn]] void usage() {
    std::fprintf(stderr,
                 "usage: shoal_bench_gpu [--rounds R] [--log2 24,26] [--cupy FILE] [--simulated] [--set NAME=VALUE]... "
                 "| --smoke\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    bench::g_tool = "shoal_bench_gpu";
    int rounds = 10;
    std::vector<int> sizes = {24, 26};
    std::string cupy_file;
    bool simulated = false, smoke = false;
    std::vector<std::string> settings;  // --set sharedmem=off: `:set sharedmem off` in every session
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--smoke") {
            smoke = simulated = true;
            rounds = 1;
            sizes = {10};
        } else if (a == "--simulated") simulated = true;
        else if (a == "--rounds" && has_value) rounds = std::atoi(argv[++i]);
        else if (a == "--cupy" && has_value) cupy_file = argv[++i];
        else if (a == "--set" && has_value) {
            std::string kv = argv[++i];
            const size_t eq = kv.find('=');
            if (eq == std::string::npos) usage();
            settings.push_back(":set " + kv.substr(0, eq) + " " + kv.substr(eq + 1));
        }
        else if (a == "--log2" && has_value) {
            sizes.clear();
            std::istringstream list(argv[++i]);
            for (std::string k; std::getline(list, k, ',');) sizes.push_back(std::atoi(k.c_str()));
        } else usage();
    }
    if (rounds < 1 || sizes.empty() ||
        std::any_of(sizes.begin(), sizes.end(), [](int k) { return k < 6 || k > 32; }))
        usage();
    if (simulated) setenv("SHOAL_DEVICE", "simulated", 1);
    runtime::install_compiled_backend();

    std::string device;
    {
        Session probe;
        CompiledBackend* b = probe.compiled_backend();
        if (b->executor_name() != "cuda") {
            std::fprintf(stderr, "%s: not on a GPU (--simulated runs on the simulated device):\n%s\n", bench::g_tool,
                         b->device_report().c_str());
            return 77;
        }
        device = b->description();
    }
    DeviceCopy copy(simulated ? std::shared_ptr<cuda::CudaApi>(cuda::simulated_device()) : cuda::real_cuda_runtime());
    const CupySide cupy = read_cupy(cupy_file);
    std::printf("Shoal: %s; best of %d rounds after a warm-up\n", device.c_str(), rounds);

    std::vector<Row> rows;
    for (int log2 : sizes) {
        const int64_t n = int64_t{1} << log2;
        const auto side = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
        Session s;
        run(s, ":set backend compiled");
        for (const std::string& setting : settings) run(s, setting);
        bind_inputs(s, n, side);
        for (const GpuProgram& g : gpu_programs()) {
            const double elements = static_cast<double>(g.square ? side * side : n);
            Row row = time_program(s, g, elements, rounds);
            row.log2 = log2;
            row.size = g.square ? std::to_string(side) + "^2" : "2^" + std::to_string(log2);
            row.copy = copy.seconds(row.bytes, rounds);
            rows.push_back(row);
            if (smoke)
                std::printf("%s %s: compiled, %lld launches, %lld bytes to the host (scalars, error records)\n",
                            row.program.c_str(), row.size.c_str(), static_cast<long long>(row.launches),
                            static_cast<long long>(row.downloaded));
        }
    }
    print_table(rows, cupy);
    std::printf("min MB: what the program must move at least (inputs read once, results written once); kernel:\n"
                "its kernels summed (CUDA events); copy GB/s: cudaMemcpyAsync device to device moving as much; of copy:\n"
                "GB/s over copy GB/s; cupy ms: CUDA events around the call, cupy wall: the call and a synchronisation;\n"
                "shoal/cupy: kernel over cupy ms, wall/cupy: wall over cupy wall (below 1: Shoal is faster)\n%s\n",
                cupy.about.c_str());
}
