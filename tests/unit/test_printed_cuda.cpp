// The printed CUDA run as host C++ with the shim (runtime/cuda/printed):
// CUDA's rules for shuffles and barriers as PTX defines them, and each
// broken rule a failure that names the kernel and the line, where a GPU
// would hang or give undefined results.
#ifdef SHOAL_HAVE_CUDA
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "codegen/cuda_printer.h"
#include "codegen/kernel_builder.h"
#include "codegen/thread_levels.h"
#include "runtime/cpu/executor.h"
#include "runtime/cuda/printed/printed_kernels.h"
#include "sample_kernels.h"

namespace shoal {

namespace {

using cuda::PrintedLaunchOptions;
using cuda::PrintedUnit;

std::shared_ptr<const PrintedUnit> unit(const std::string& cuda, const std::string& kernel) {
    std::string error;
    auto u = cuda::compile_printed_unit(cuda, {kernel}, &error);
    INFO(error);
    REQUIRE(u);
    return u;
}

// Runs `kernel(int* out)` over one block of `threads`; "" or the failure.
std::string run(const PrintedUnit& u, const std::string& kernel, std::vector<int>& out, unsigned threads,
                PrintedLaunchOptions o = {}) {
    int* p = out.data();
    void* args[] = {&p};
    return u.launch(kernel, 1, threads, args, o);
}

const char* kShuffles = R"(
extern "C" __global__ void __launch_bounds__(64) shuffles(int* __restrict__ out) {
    const int t = (int)threadIdx.x;
    out[t] = __shfl_down_sync(0xffffffffu, t, 3);
    out[64 + t] = __shfl_up_sync(0xffffffffu, t, 5);
    out[128 + t] = __shfl_xor_sync(0xffffffffu, t, 17);
    out[192 + t] = __shfl_sync(0xffffffffu, t, 35);
    out[256 + t] = __shfl_down_sync(0xffffffffu, t, 3, 8);
    out[320 + t] = __shfl_xor_sync(0xffffffffu, t, 4, 4);
}
)";

}  // namespace

TEST_CASE("printed CUDA: shuffles as PTX defines them, in every thread order") {
    auto u = unit(kShuffles, "shuffles");
    for (int order : {0, 1, 2}) {
        CAPTURE(order);
        std::vector<int> out(384, -7);
        PrintedLaunchOptions o;
        o.order = order;
        o.seed = 11;
        REQUIRE(run(*u, "shuffles", out, 64, o) == "");
        for (int t = 0; t < 64; ++t) {
            CAPTURE(t);
            const int lane = t % 32, warp = t - lane;
            CHECK(out[t] == (lane + 3 < 32 ? t + 3 : t));         // down: past the warp, the own value
            CHECK(out[64 + t] == (lane >= 5 ? t - 5 : t));        // up: before it, the own value
            CHECK(out[128 + t] == warp + (lane ^ 17));
            CHECK(out[192 + t] == warp + 3);                       // a source lane modulo the width
            CHECK(out[256 + t] == ((lane & 7) + 3 < 8 ? t + 3 : t));  // segments of 8
            // xor in segments of 4: an earlier segment's lane is read, a later one's gives the own value
            CHECK(out[320 + t] == ((lane ^ 4) < (lane & ~3) + 4 ? warp + (lane ^ 4) : t));
        }
    }
}

TEST_CASE("printed CUDA: a barrier keeps shared memory consistent; shared memory starts poisoned") {
    auto u = unit(R"(
extern "C" __global__ void __launch_bounds__(128) reverse(int* __restrict__ out) {
    __shared__ int tile[128];
    __shared__ int never[4];
    tile[(int)threadIdx.x] = (int)threadIdx.x * 10;
    __syncthreads();
    out[(int)threadIdx.x] = tile[127 - (int)threadIdx.x];
    if ((int)threadIdx.x == 0) out[128] = never[2];
}
)",
                  "reverse");
    for (int order : {0, 1, 2}) {
        std::vector<int> out(129, 0);
        PrintedLaunchOptions o;
        o.order = order;
        REQUIRE(run(*u, "reverse", out, 128, o) == "");
        for (int t = 0; t < 128; ++t) CHECK(out[t] == (127 - t) * 10);
        CHECK(out[128] == -1);  // 0xff bytes: never written
    }
}

TEST_CASE("printed CUDA: each broken GPU rule fails with the kernel and the line") {
    struct Case {
        const char* name;
        const char* body;
        const char* says;
    };
    const Case cases[] = {
        {"divergent_barrier", "if ((int)threadIdx.x < 32) {\n        __syncthreads();\n    } else {\n        __syncthreads();\n    }",
         "divergent barrier"},
        {"divergent_shuffle", "if ((int)threadIdx.x % 2 == 1) out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);",
         "for lanes that never come"},
        {"mask_without_lane", "out[threadIdx.x] = __shfl_sync(0x1u, 5, 0);", "does not name the calling lane"},
        {"unnamed_source", "if ((int)threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0xffffu, 5, 20);",
         "reads a lane its mask does not name"},
        {"different_shuffles",
         "if ((int)threadIdx.x < 8) out[threadIdx.x] = __shfl_up_sync(0xffffffffu, 1, 1);\n"
         "    else out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1, 1);",
         "divergent shuffle"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        const std::string text = std::string("\nextern \"C\" __global__ void __launch_bounds__(64) ") + c.name +
                                 "(int* __restrict__ out) {\n    " + c.body + "\n}\n";
        auto u = unit(text, c.name);
        std::vector<int> out(64, 0);
        const std::string failed = run(*u, c.name, out, 64);
        INFO(failed);
        CHECK(failed.find(c.says) != std::string::npos);
        CHECK(failed.find(c.name) != std::string::npos);
        CHECK(failed.find("line ") != std::string::npos);
    }
    // Spins that never end stop at the watchdog: the shim's, which looks at
    // every atomic, and the host's timer for one that never reaches any.
    const std::pair<const char*, const char*> spins[] = {{"spin", "atomicAdd(&out[0], 0) == 0"},
                                                         {"tight", "*(volatile int*)&out[0] == 0"}};
    for (const auto& entry : spins) {
        const auto& name = entry.first;  // not a structured binding: clang 14 cannot capture those
        const auto& condition = entry.second;
        CAPTURE(name);
        auto u = unit(std::string("\nextern \"C\" __global__ void __launch_bounds__(32) ") + name +
                          "(int* __restrict__ out) {\n    while (" + condition + ") {\n    }\n}\n",
                      name);
        std::vector<int> out(32, 0);
        PrintedLaunchOptions o;
        o.watchdog_seconds = 0.2;
        const std::string failed = run(*u, name, out, 32, o);
        INFO(failed);
        CHECK(failed.find(std::string(name) + " (block 0") != std::string::npos);
        CHECK(failed.find("a hang") != std::string::npos);
    }
}

TEST_CASE("printed CUDA: a fault in a kernel ends its launch with a message naming the thread; the process goes on") {
    auto u = unit(R"(
extern "C" __global__ void __launch_bounds__(64) faults(int* __restrict__ out) {
    if ((int)threadIdx.x == 37) out[1LL << 40] = 1;
}
)",
                  "faults");
    std::vector<int> out(64, 0);
    const std::string segv = run(*u, "faults", out, 64);
    INFO(segv);
    CHECK(segv.find("faults (block 0, thread 37)") != std::string::npos);
    CHECK(segv.find("outside every allocation") != std::string::npos);
    std::string error;
    auto d = cuda::compile_printed_unit(R"(
extern "C" __global__ void __launch_bounds__(64) divides(int* __restrict__ out) {
    out[threadIdx.x] = 7 / ((int)threadIdx.x - 5);
}
)",
                                        {"divides"}, &error);
    REQUIRE(d);
    const std::string fpe = run(*d, "divides", out, 64);
    INFO(fpe);
    CHECK(fpe.find("divides (block 0, thread 5)") != std::string::npos);
    CHECK(fpe.find("SIGFPE") != std::string::npos);
    // Launches after a fault run normally.
    auto again = unit(kShuffles, "shuffles");
    std::vector<int> lanes(384, 0);
    CHECK(run(*again, "shuffles", lanes, 64) == "");
}

// No lowering emits shuffles today, so the programs of tests/printed_bugs
// cannot catch the planted shuffle bugs: a kernel of the IR with a shuffle
// of each kind, printed as the device gets it, does.
TEST_CASE("printed CUDA: planted shuffle bugs in an IR kernel's printed text are caught") {
    using namespace ir;
    KernelBuilder kb("lanes", 64);
    kb.buffer_param("out", ScalarType::I32, Access::Write);
    const ExprPtr t = kb.bind("t", thread_idx());
    const ShuffleOp ops[] = {ShuffleOp::Down, ShuffleOp::Up, ShuffleOp::Xor, ShuffleOp::Idx};
    const int args[] = {1, 2, 3, 5};
    for (int k = 0; k < 4; ++k)
        kb.emit(store("out", binary(BinaryOp::Add, cast(ScalarType::I64, t), const_int(64 * k, ScalarType::I64)),
                      shuffle(ops[k], binary(BinaryOp::Mul, t, const_int(10, ScalarType::I32)), const_int(args[k], ScalarType::I32))));
    const std::vector<Kernel> kernels = {kb.finish()};
    auto lanes = [&](const std::string& cuda, std::vector<int>& out) { return run(*unit(cuda, "lanes"), "lanes", out, 64); };
    std::vector<int> out(256, 0);
    REQUIRE(lanes(print_cuda_for_device(kernels), out) == "");
    for (int i = 0; i < 64; ++i) {
        const int lane = i % 32, warp = i - lane;
        CHECK(out[i] == 10 * (lane + 1 < 32 ? i + 1 : i));
        CHECK(out[64 + i] == 10 * (lane >= 2 ? i - 2 : i));
        CHECK(out[128 + i] == 10 * (warp + (lane ^ 3)));
        CHECK(out[192 + i] == 10 * (warp + 5));
    }
    std::vector<int> swapped(256, 0);
    REQUIRE(lanes(print_cuda_with_planted_bug(kernels, "shuffle-direction"), swapped) == "");
    CHECK(swapped != out);
    std::vector<int> divergent(256, 0);
    CHECK(lanes(print_cuda_with_planted_bug(kernels, "divergent-shuffle"), divergent).find("never come") != std::string::npos);
}

namespace {

// A sample kernel's arguments: every buffer 64 elements per index of n (the
// elementwise kernels store dozens of values per index), filled with a
// pattern of its type; the scalars n = 300, m = 40 and c = 3.
struct SampleArgs {
    std::map<std::string, std::vector<unsigned char>> buffers;
    std::map<std::string, cpu::ScalarArg> scalars;
};
constexpr int64_t kSampleN = 300, kSampleM = 40, kPerIndex = 64;

SampleArgs sample_args(const ir::Kernel& k) {
    SampleArgs a;
    for (const ir::Param& p : k.params) {
        if (p.kind == ir::ParamKind::Scalar) {
            cpu::ScalarArg v;
            v.type = p.type;
            const int64_t x = p.name == "n" ? kSampleN : p.name == "m" ? kSampleM : 3;
            if (ir::is_float(p.type)) v.f = double(x);
            else v.i = x;
            a.scalars[p.name] = v;
            continue;
        }
        const size_t size = ir::scalar_size(p.type), count = size_t(kSampleN * kPerIndex);
        std::vector<unsigned char> bytes(count * size);
        for (size_t i = 0; i < count; ++i) {
            const int64_t pattern = int64_t(i * 7919 % 201) - 100;
            unsigned char* at = bytes.data() + i * size;
            switch (p.type) {
                case ir::ScalarType::Bool: *at = i % 3 == 0; break;
                case ir::ScalarType::F32: { const float f = float(pattern) * 0.37f; std::memcpy(at, &f, size); break; }
                case ir::ScalarType::F64: { const double d = double(pattern) * 0.37; std::memcpy(at, &d, size); break; }
                default: {  // the gather's indices: some out of bounds
                    const int64_t v = p.name == "idx" ? (pattern + 100) % (kSampleM + 7) - 3 : pattern;
                    std::memcpy(at, &v, size);  // little-endian: the low bytes for narrower types
                }
            }
        }
        a.buffers[p.name] = std::move(bytes);
    }
    return a;
}

// Equal bit for bit, except that any two NaNs are equal.
bool same_elements(const std::vector<unsigned char>& x, const std::vector<unsigned char>& y, ir::ScalarType t) {
    const size_t size = ir::scalar_size(t);
    for (size_t i = 0; i + size <= x.size(); i += size) {
        if (std::memcmp(&x[i], &y[i], size) == 0) continue;
        if (t == ir::ScalarType::F32) {
            float a, b;
            std::memcpy(&a, &x[i], 4);
            std::memcpy(&b, &y[i], 4);
            if (std::isnan(a) && std::isnan(b)) continue;
        } else if (t == ir::ScalarType::F64) {
            double a, b;
            std::memcpy(&a, &x[i], 8);
            std::memcpy(&b, &y[i], 8);
            if (std::isnan(a) && std::isnan(b)) continue;
        }
        double a = 0, b = 0;
        if (t == ir::ScalarType::F32) {
            float fa, fb;
            std::memcpy(&fa, &x[i], 4);
            std::memcpy(&fb, &y[i], 4);
            a = fa;
            b = fb;
        } else if (t == ir::ScalarType::F64) {
            std::memcpy(&a, &x[i], 8);
            std::memcpy(&b, &y[i], 8);
        }
        MESSAGE("element " << i / size << " differs (as floats: " << a << " against " << b << ")");
        return false;
    }
    return true;
}

// The launch contract's error record (codegen/cuda_printer.cpp).
struct ErrorRecord {
    unsigned long long key = ~0ull;
    int code = -1, lock = 0;
    long long index = 0, extent = 0;
};

}  // namespace

// Every construct the printer knows (the printer tests' kernels: every
// operator, function, cast and constant of every type, a tree reduction,
// shuffles, atomics, a checked gather, control flow) run as printed CUDA and
// on the CPU executor: the same bits (NaNs as NaNs), the same error record.
TEST_CASE("printed CUDA: the printer's sample kernels agree with the CPU executor") {
    for (const ir::Kernel& k : ir::samples::sample_kernels()) {
        CAPTURE(k.name);
        const std::string cuda = ir::print_cuda_for_device({k});
        auto u = unit(cuda, k.name);
        SampleArgs printed = sample_args(k), interpreted = sample_args(k);
        const int64_t grid = 2;
        // The CPU executor, in checking mode (races, divergent barriers).
        cpu::LaunchArgs la;
        la.grid = grid;
        la.scalars = interpreted.scalars;
        for (auto& [name, bytes] : interpreted.buffers) {
            const ir::Param* p = nullptr;
            for (const ir::Param& q : k.params)
                if (q.name == name) p = &q;
            la.buffers[name] = cpu::BufferArg{bytes.data(), int64_t(bytes.size() / ir::scalar_size(p->type))};
        }
        cpu::ExecOptions options;
        options.check = true;
        cpu::Counters counters;
        const cpu::KernelError want = cpu::run_kernel(k, la, options, counters);
        // The printed kernel, with the argument array as the CUDA driver gets it.
        std::vector<std::vector<unsigned char>> values;
        std::vector<void*> args;
        values.reserve(k.params.size());
        for (const ir::Param& p : k.params) {
            if (p.kind == ir::ParamKind::Buffer) {
                void* data = printed.buffers[p.name].data();
                values.emplace_back(sizeof data);
                std::memcpy(values.back().data(), &data, sizeof data);
            } else {
                const cpu::ScalarArg& v = printed.scalars[p.name];
                const size_t size = ir::scalar_size(p.type);
                values.emplace_back(size);
                if (p.type == ir::ScalarType::F32) {
                    const float f = float(v.f);
                    std::memcpy(values.back().data(), &f, size);
                } else if (p.type == ir::ScalarType::F64) {
                    std::memcpy(values.back().data(), &v.f, size);
                } else {
                    std::memcpy(values.back().data(), &v.i, size);
                }
            }
            args.push_back(values.back().data());
        }
        ErrorRecord record;
        ErrorRecord* record_at = &record;
        if (!k.checks.empty()) args.push_back(&record_at);
        unsigned char not_cancelled = 0;  // the cancel flag, last, for a kernel with long loops
        unsigned char* cancel_at = &not_cancelled;
        if (ir::has_cancel_points(k)) args.push_back(&cancel_at);
        REQUIRE(u->launch(k.name, unsigned(grid), unsigned(k.block_size), args.data(), {}) == "");
        CHECK(record.code == want.code);
        if (want.code >= 0) {
            CHECK(record.index == want.index);
            CHECK(record.extent == want.extent);
        }
        // Atomics land in another order on each: their results are not compared.
        if (k.name.rfind("atomics_", 0) == 0) continue;
        for (const ir::Param& p : k.params)
            if (p.kind == ir::ParamKind::Buffer) {
                CAPTURE(p.name);
                CHECK(same_elements(printed.buffers[p.name], interpreted.buffers[p.name], p.type));
            }
    }
}

}  // namespace shoal

#endif  // SHOAL_HAVE_CUDA
