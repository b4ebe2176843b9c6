// The CUDA executor on the simulated device (runtime/cuda): the device's
// strictness itself (unsynchronised copies, host pointers, freed memory),
// arrays staying in device memory across statements, out of device memory,
// a sticky error, `:device` and `:set executor`.
#ifdef SHOAL_HAVE_CUDA
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "codegen/compiled_backend.h"
#include "lang/session.h"
#include "runtime/cuda/kernel_toolchain.h"
#include "runtime/cuda/nccl_api.h"
#include "runtime/cuda/simulated_device.h"
#include "runtime/executors.h"
#include "session_capture.h"

namespace shoal {

namespace {

using testing::SessionCapture;

// Sessions on a fresh simulated device with these faults.
cuda::SimulatedFaults g_faults;
cuda::SimulatedNvrtcOptions g_nvrtc;

std::shared_ptr<CompiledBackend> simulated_backend() {
    return compiled::make_compiled_backend(
        runtime::simulated_gpu_executor(g_faults, g_nvrtc),
        [](const std::string& name) {
            return name == "cuda" ? runtime::simulated_gpu_executor(g_faults, g_nvrtc) : runtime::make_executor(name);
        },
        runtime::kernel_toolchain());
}

struct SimulatedSession {
    explicit SimulatedSession(cuda::SimulatedFaults faults = {}, cuda::SimulatedNvrtcOptions nvrtc = {}) {
        g_faults = faults;
        g_nvrtc = nvrtc;
        set_compiled_backend_factory(simulated_backend);
    }
    ~SimulatedSession() { runtime::install_compiled_backend(); }
    std::string run(const std::string& text) { return testing::printed(session, text); }
    Session session;
};

struct Stream {
    cuda::SimulatedDevice& d;
    cudaStream_t s = nullptr;
    cudaMemPool_t pool = nullptr;
    explicit Stream(cuda::SimulatedDevice& device) : d(device) {
        REQUIRE(d.streamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
        REQUIRE(d.deviceGetDefaultMemPool(&pool, 0) == cudaSuccess);
    }
    void* alloc(size_t bytes) {
        void* p = nullptr;
        REQUIRE(d.mallocFromPoolAsync(&p, bytes, pool, s) == cudaSuccess);
        return p;
    }
};

}  // namespace

TEST_CASE("simulated device: a copy to the host lands only when the stream is synchronised") {
    auto device = cuda::simulated_device();
    Stream st(*device);
    const int in[4] = {1, 2, 3, 4};
    int out[4] = {0, 0, 0, 0};
    void* p = st.alloc(sizeof in);
    CHECK(device->memcpyAsync(p, in, sizeof in, cudaMemcpyHostToDevice, st.s) == cudaSuccess);
    CHECK(device->memcpyAsync(out, p, sizeof out, cudaMemcpyDeviceToHost, st.s) == cudaSuccess);
    CHECK(out[3] == 0);  // a missing synchronisation reads stale memory
    CHECK(device->streamSynchronize(st.s) == cudaSuccess);
    CHECK(std::memcmp(in, out, sizeof in) == 0);
    CHECK(device->stats().synchronisations == 1);
}

TEST_CASE("simulated device: host work in stream order waits, and streamQuery says so") {
    // The hook the simulated NCCL uses: a transfer runs when the stream
    // reaches it and holds the stream until its messages arrive.
    auto device = cuda::simulated_device();
    Stream st(*device);
    const int in[2] = {5, 6};
    int out[2] = {0, 0};
    void* p = st.alloc(sizeof in);
    CHECK(device->memcpyAsync(p, in, sizeof in, cudaMemcpyHostToDevice, st.s) == cudaSuccess);
    int polls = 0;
    device->enqueue_host_work(st.s, [&](const cuda::SimulatedDevice::DeviceMemory& memory) {
        int* at = static_cast<int*>(memory(p, sizeof in, "the test's buffer"));
        if (++polls < 3) return false;  // still waiting for the other ranks
        at[1] *= 10;  // it sees what the copy before it wrote
        return true;
    });
    CHECK(device->memcpyAsync(out, p, sizeof out, cudaMemcpyDeviceToHost, st.s) == cudaSuccess);
    CHECK(device->streamQuery(st.s) == cudaErrorNotReady);
    CHECK(out[1] == 0);  // the copy after it waits too
    CHECK(device->streamQuery(st.s) == cudaErrorNotReady);
    CHECK(device->streamQuery(st.s) == cudaSuccess);
    CHECK(out[0] == 5);
    CHECK(out[1] == 60);
    // Memory outside a live allocation is a violation, as for a kernel.
    device->enqueue_host_work(st.s, [&](const cuda::SimulatedDevice::DeviceMemory& memory) {
        memory(static_cast<char*>(p) + 4, sizeof in, "the test's buffer");
        return true;
    });
    CHECK_THROWS_WITH_AS(device->streamSynchronize(st.s), doctest::Contains("the test's buffer runs past its allocation"),
                         Error);
}

TEST_CASE("NCCL: the toolkit's library loads without a GPU and names its version") {
    // The NCCL backend of sharded arrays (runtime/cuda/nccl_comm.h) is tested
    // on the simulated NCCL (ctest comm_mpi, ranks); this is the real
    // library's side: every function Shoal calls is there.
    CHECK(cuda::nccl_version_text(22807) == "2.28.7");
    CHECK(cuda::nccl_version_text(2708) == "2.7.8");
    std::string why_not;
    std::shared_ptr<cuda::NcclApi> nccl = cuda::real_nccl(why_not);
    if (!nccl) {
        // Only a toolkit without NCCL may lack it; the CUDA toolkit Shoal builds with has it.
        MESSAGE("NCCL not loaded: " << why_not);
        CHECK(why_not.find("not found") != std::string::npos);
        return;
    }
    int version = 0;
    CHECK(nccl->getVersion(&version) == ncclSuccess);
    CHECK(version >= 20700);
    CHECK(nccl->name().find("NCCL " + cuda::nccl_version_text(version)) == 0);
    CHECK(std::string(nccl->getErrorString(ncclInvalidArgument)).find("invalid argument") != std::string::npos);
}

TEST_CASE("simulated device: a copy from device to device lands at the synchronisation and is no transfer") {
    auto device = cuda::simulated_device();
    Stream st(*device);
    const int in[4] = {1, 2, 3, 4};
    int out[4] = {0, 0, 0, 0};
    void* a = st.alloc(sizeof in);
    void* b = st.alloc(sizeof in);
    CHECK(device->memcpyAsync(a, in, sizeof in, cudaMemcpyHostToDevice, st.s) == cudaSuccess);
    CHECK(device->memcpyAsync(b, a, sizeof in, cudaMemcpyDeviceToDevice, st.s) == cudaSuccess);
    CHECK(device->memcpyAsync(out, b, sizeof out, cudaMemcpyDeviceToHost, st.s) == cudaSuccess);
    CHECK(device->streamSynchronize(st.s) == cudaSuccess);
    CHECK(std::memcmp(in, out, sizeof in) == 0);
    // One upload and one download: the copy between device buffers is neither.
    CHECK(device->stats().copies_to_device == 1);
    CHECK(device->stats().copies_to_host == 1);
    CHECK(device->stats().copies_device_to_device == 1);
    // A host address on either side of a device-to-device copy is a violation.
    CHECK_THROWS_WITH_AS(device->memcpyAsync(b, in, sizeof in, cudaMemcpyDeviceToDevice, st.s),
                         doctest::Contains("device to device with a host address"), Error);
}

TEST_CASE("simulated device: host pointers, freed memory and overruns are violations") {
    auto device = cuda::simulated_device();
    Stream st(*device);
    int host[4] = {};
    void* p = st.alloc(sizeof host);
    // A host address where device memory belongs.
    CHECK_THROWS_WITH_AS(device->memcpyAsync(host, host, sizeof host, cudaMemcpyHostToDevice, st.s),
                         doctest::Contains("host destination"), Error);
    // Past the allocation.
    CHECK_THROWS_WITH_AS(device->memcpyAsync(p, host, 2 * sizeof host, cudaMemcpyHostToDevice, st.s),
                         doctest::Contains("runs past its allocation"), Error);
    // Freed (once the free has run).
    CHECK(device->freeAsync(p, st.s) == cudaSuccess);
    CHECK(device->streamSynchronize(st.s) == cudaSuccess);
    CHECK_THROWS_WITH_AS(device->memcpyAsync(host, p, sizeof host, cudaMemcpyDeviceToHost, st.s),
                         doctest::Contains("freed memory"), Error);
    // Freed memory stays cached in the pool up to its release threshold (0 here).
    CHECK(device->stats().bytes_in_use == 0);
    CHECK(device->stats().live_allocations == 0);
}

TEST_CASE("simulated device: an image nobody described does not load") {
    auto device = cuda::simulated_device();
    cudaLibrary_t lib = nullptr;
    CHECK(device->libraryLoadData(&lib, "SHOALSIM\nextern \"C\" __global__ void k() {}") == cudaErrorInvalidKernelImage);
}

TEST_CASE("simulated device: error names and descriptions are cudart's") {
    const cudaError_t errors[] = {cudaSuccess, cudaErrorInvalidValue, cudaErrorMemoryAllocation,
                                  cudaErrorInvalidConfiguration, cudaErrorInvalidDevice, cudaErrorInvalidDeviceFunction,
                                  cudaErrorInvalidResourceHandle, cudaErrorInvalidKernelImage, cudaErrorSymbolNotFound,
                                  cudaErrorNotReady, cudaErrorNoDevice, cudaErrorInsufficientDriver,
                                  cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorNotSupported, cudaErrorUnknown};
    for (cudaError_t e : errors) {
        CHECK(std::string(cuda::simulated_error_name(e)) == cudaGetErrorName(e));
        CHECK(std::string(cuda::simulated_error_string(e)) == cudaGetErrorString(e));
    }
}

TEST_CASE("cuda executor: results stay in device memory across statements; the host gets what it prints") {
    SimulatedSession s;
    CHECK(s.run("let x = map (\\i -> float i * 0.5) (iota 100000)\nlet y = map (\\v -> v * 2.0) x\nlet z = x + y") == "");
    CompiledBackend& b = *s.session.compiled_backend();
    CHECK(!b.transfers().any());  // three plans, all on the device
    CHECK(s.run("sum z") == "7.499925e9\n");
    CHECK(b.transfers().to_host_copies == 1);  // the total, nothing else
    CHECK(b.transfers().to_host_bytes == 4);
    CHECK(b.transfers().to_device_copies == 0);
    CHECK(s.run("z[3]") == "4.5\n");
    CHECK(s.run("length (filter (\\v -> v > 100.0) z)") == "99933\n");
    CHECK(s.run("sort [3, 1, 2]") == "[1, 2, 3]\n");
    CHECK(s.run("argmin [[1, 5, 2], [9, 0, 9]]") == "[0, 1]\n");
    // A host array read by kernels twice is uploaded once.
    const TransferCounters before = b.transfers();
    CHECK(s.run("let h = [1.0, 2.0, 3.0]\nsum h\nsum (map (\\v -> v * v) h)") == "6.0\n14.0\n");
    CHECK((b.transfers() - before).to_device_copies == 1);
    CHECK((b.transfers() - before).to_device_bytes == 12);
    // :time shows the copies a statement made.
    const std::string timed = s.run(":time z[0:2]");
    INFO(timed);
    CHECK(timed.find("; 1 copy to the host (8 bytes)") != std::string::npos);
    CHECK(timed.find(" in 1 launch of 1 kernel)") != std::string::npos);  // timed with events
}

TEST_CASE("cuda executor: a function that indexes a device array reads it in device memory") {
    SimulatedSession s;
    CHECK(s.run("let u = map (\\i -> float i) (iota 1000)\nlet n = 1000") == "");
    CompiledBackend& b = *s.session.compiled_backend();
    // A gather from a binding, and from each step of a loop: no array comes
    // to the host (each used to be downloaded once, each step of a loop
    // again), only the bounds checks' error records (32 bytes a launch).
    CHECK(s.run("let v = generate n (\\i -> u[n - 1 - i])\n"
                "let w = loop w = u for k < 5 do generate n (\\i -> w[(i + 1) % n] + 1.0)") == "");
    CHECK(b.transfers().to_device_copies == 0);
    CHECK(b.transfers().to_host_copies == 6);
    CHECK(b.transfers().to_host_bytes == 6 * 32);
    CHECK(s.run("v[0]\nw[0]\nsum w") == "999.0\n10.0\n504500.0\n");
}

TEST_CASE("cuda executor: :mem names the arrays bindings hold in device memory") {
    SimulatedSession s;
    CHECK(s.run("let big = map float (iota 100000)\nlet small = map (\\i -> i + 1) (iota 10)\nlet h = [1, 2]") == "");
    CHECK(s.run("sum h") == "3\n");  // h is uploaded, its copy stays with it
    const std::string mem = s.run(":mem");
    INFO(mem);
    CHECK(mem.find("device memory on Shoal simulated device: 390.7 KiB in 3 arrays, ") == 0);
    CHECK(mem.find("\n  390.6 KiB  big\n  40 bytes  small\n  8 bytes  h") != std::string::npos);
    CHECK(s.run("let big = 0\n:mem").find("in 2 arrays") != std::string::npos);  // released with its binding
}

TEST_CASE("cuda executor: a failed check in a kernel is the reference's error, and the session goes on") {
    SimulatedSession s;
    CHECK(s.run("let x = iota 10") == "");
    const std::string err = s.run("let z = map (\\i -> x[i + 5]) x");
    CHECK(err.find("index 10 is out of bounds for axis 0 with extent 10") != std::string::npos);
    CHECK(s.run("sum x") == "45\n");
}

TEST_CASE("cuda executor: out of device memory is a clear error and every binding stays") {
    cuda::SimulatedFaults f;
    f.memory_bytes = 1 << 20;  // 1 MiB
    SimulatedSession s(f);
    CHECK(s.run("let small = map (\\i -> i * 2) (iota 1000)") == "");
    const std::string err = s.run("let big = map float (iota 1000000)");
    INFO(err);
    CHECK(err.find("out of device memory: tried to allocate 3.8 MiB; ") != std::string::npos);
    CHECK(err.find("free of 1.0 MiB; Shoal holds 3.9 KiB in 1 array (largest 3.9 KiB)") != std::string::npos);
    CHECK(err.find("note: :mem lists them with their bindings") != std::string::npos);
    CHECK(s.run("sum small") == "999000\n");
}

TEST_CASE("cuda executor: an array larger than the GPU memory left is refused before it is attempted") {
    cuda::SimulatedFaults f;
    f.memory_bytes = int64_t{256} << 20;
    SimulatedSession s(f);
    CHECK(s.run("let small = map (\\i -> i * 2) (iota 1000)") == "");
    std::string err = s.run("let big = random 100000000");
    INFO(err);
    CHECK(err.find("random: array of shape (100000000) is too large: it needs 381.5 MiB, but only 256.0 MiB of GPU "
                   "memory is free (Shoal holds 3.9 KiB)") != std::string::npos);
    // :set memlimit caps the device memory Shoal holds, the statement's temporaries included.
    CHECK(s.run(":set memlimit 2MiB") == "");
    err = s.run("let big = map float (iota 1000000)");
    CHECK(err.find("it needs 3.8 MiB, but Shoal holds 3.9 KiB in GPU memory of its limit of 2.0 MiB") !=
          std::string::npos);
    CHECK(s.run(":set memlimit off") == "");
    CHECK(s.run("sum small") == "999000\n");
}

TEST_CASE("cuda executor: an allocation that fails once is retried after the pool is trimmed") {
    cuda::SimulatedFaults f;
    f.oom_at_allocation = 2;
    SimulatedSession s(f);
    CHECK(s.run("sum (map (\\i -> i * 2) (iota 1000))") == "999000\n");
}

TEST_CASE("cuda executor: a sticky error names the kernel, moves the session to the CPU, keeps host bindings") {
    cuda::SimulatedFaults f;
    f.sticky_at_launch = 3;
    SimulatedSession s(f);
    CHECK(s.run("let h = [1, 2, 3]") == "");                       // on the host
    CHECK(s.run("let d = map (\\i -> i + 1) (iota 10)") == "");     // launch 1: on the device
    CHECK(s.run("let e = map (\\i -> i * 3) d") == "");              // launch 2
    CHECK(s.run("let f k = sum d + k") == "");                       // uses d
    const std::string err = s.run("sum (map (\\i -> i * i) h)");     // launch 3 fails
    INFO(err);
    CHECK(err.find("the GPU stopped with cudaErrorIllegalAddress") != std::string::npos);
    // Launch 3 is the sum's only one (a single block's total is the result).
    CHECK(err.find("in kernel sum_partials (sum (map (\\i -> i * i) h)   -- <t>:1:1) or one of the 2 kernels launched before it") !=
          std::string::npos);
    CHECK(err.find("the session moved to the CPU executor; lost (their arrays were only in GPU memory): d, e, f") !=
          std::string::npos);
    CHECK(s.run("sum (map (\\i -> i * i) h)") == "14\n");
    CHECK(s.run("d").find("unknown name") != std::string::npos);
    CHECK(s.run(":device").find("no GPU") == 0);
}

TEST_CASE("cuda executor: :device and :set executor move arrays between memories") {
    SimulatedSession s;
    const std::string device = s.run(":device");
    CHECK(device.find("GPU 0: Shoal simulated device\n  compute capability 9.0 (sm_90), 132 SMs") == 0);
    CHECK(s.run("let d = map (\\i -> i * 2) (iota 5)") == "");
    CHECK(s.run(":set executor cpu").find("kernels run on the CPU executor") == 0);
    CHECK(s.run("map (\\v -> v + 1) d") == "[1, 3, 5, 7, 9]\n");  // came to the host
    CHECK(s.run(":set executor cuda").find("kernels run on Shoal simulated device (sm_90") == 0);
    CHECK(s.run("sum d") == "20\n");
    CHECK(s.run(":set executor gpu").find("usage: :set executor cpu|cuda") != std::string::npos);
}

TEST_CASE("cuda executor: an NVRTC failure shows the log and the source, names the expression, and the session goes on") {
    cuda::SimulatedNvrtcOptions nvrtc;
    nvrtc.fail_sources_containing = "cosf(";
    SimulatedSession s({}, nvrtc);
    CHECK(s.run("let x = iota 10") == "");
    const std::string err = s.run("let y = map (\\v -> cos (float v)) x");
    INFO(err);
    CHECK(err.find("failed to compile kernel 'map'") != std::string::npos);
    CHECK(err.find("this is a bug in Shoal") != std::string::npos);
    CHECK(err.find("simulated NVRTC failure") != std::string::npos);
    CHECK(err.find("map (\\v -> cos (float v)) x") != std::string::npos);
    CHECK(s.run("sum x") == "45\n");
}

TEST_CASE(":compile reports registers, shared memory and occupancy through the kernel cache, without a GPU") {
    if (!runtime::kernel_toolchain()) return;  // no NVRTC here
    SimulatedSession s;
    const std::string first = s.run("let x = map float (iota 1000)\n:set arch sm_80\n:compile sum (x * x)");
    INFO(first);
    CHECK(first.find(" kernels for sm_80") != std::string::npos);
    CHECK(first.find("registers, 0 B spill stores") != std::string::npos);
    CHECK(first.find("occupancy on sm_80: ") != std::string::npos);
    CHECK(first.find("  sum (x * x)   -- <t>:3:10") != std::string::npos);
    // The same kernels again, from another line: cache hits.
    const std::string again = s.run(":compile sum (x * x)");
    CHECK(again.find("compiled in") == std::string::npos);
    CHECK(again.find("memory cache hit") != std::string::npos);
    CHECK(s.run(":cache").find("kernel cache\n  this process: ") != std::string::npos);
}

TEST_CASE("occupancy: threads, registers and shared memory limit resident blocks") {
    CHECK(cuda::occupancy(90, 256, 32, 1024).blocks_per_sm == 8);
    CHECK(cuda::occupancy(90, 256, 32, 1024).limited_by == "threads per SM");
    const cuda::Occupancy regs = cuda::occupancy(80, 256, 80, 0);  // 80 regs: 2560 per warp, 8 warps a block
    CHECK(regs.blocks_per_sm == 3);
    CHECK(regs.limited_by == "registers");
    CHECK(regs.percent == 37);
    const cuda::Occupancy smem = cuda::occupancy(80, 256, 32, 20992);
    CHECK(smem.blocks_per_sm == 7);
    CHECK(smem.limited_by == "shared memory");
}

TEST_CASE("cuda executor: products call cuBLAS (the simulated device's CPU BLAS), stream-ordered, device pointers only") {
    SimulatedSession s;
    CHECK(s.run("let a = generate (64, 48) (\\i j -> float ((i + 2 * j) % 7) - 3.0)\n"
                "let b = generate (48, 40) (\\i j -> float ((i * j) % 5) * 0.5)\nlet c = a @ b\n"
                "let v = generate 48 (\\i -> float (i % 3))") == "");
    CompiledBackend& b = *s.session.compiled_backend();
    CHECK(!b.transfers().to_host_copies);  // the product stays on the device
    // The same numbers as the CPU executor's BLAS and as the tiled kernel.
    const char* products = "c[5, 0:6]\na @ v\nsum (flatten ((a * 2.0) @ b))\nsum (flatten c)\n(transpose a @ a)[3, 0:4]";
    const std::string cuda = s.run(products);
    CHECK(cuda.find("[0.0, 0.0, 0.0, -2.5, -2.5, 0.0]\n[-1.0, 5.0, 11.0, ..., -6.0, -7.0, -1.0] (64)\n-160.0\n-80.0\n") == 0);
    s.run(":set executor cpu");
    CHECK(s.run(products) == cuda);
    s.run(":set executor cuda");
    const std::string timed = s.run(":time a @ b");
    INFO(timed);
    CHECK(timed.find("library call") != std::string::npos);
    CHECK(timed.find("cuBLAS simulated by the CPU BLAS") != std::string::npos);
}

TEST_CASE("simulated device: gemm reads and writes device memory in stream order; host pointers are violations") {
    auto device = cuda::simulated_device();
    Stream st(*device);
    const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1};  // 2 x 3 and 3 x 2
    float c[4] = {};
    void* da = st.alloc(sizeof a);
    void* db = st.alloc(sizeof b);
    void* dc = st.alloc(sizeof c);
    CHECK(device->memcpyAsync(da, a, sizeof a, cudaMemcpyHostToDevice, st.s) == cudaSuccess);
    CHECK(device->memcpyAsync(db, b, sizeof b, cudaMemcpyHostToDevice, st.s) == cudaSuccess);
    const ir::GemmShape g{2, 2, 3, false, false};
    CHECK(device->gemm(st.s, ir::ScalarType::F32, g, da, db, dc) == cudaSuccess);
    CHECK(device->memcpyAsync(c, dc, sizeof c, cudaMemcpyDeviceToHost, st.s) == cudaSuccess);
    CHECK(c[0] == 0);  // nothing ran before the synchronisation
    CHECK(device->streamSynchronize(st.s) == cudaSuccess);
    CHECK(c[0] == 4);
    CHECK(c[1] == 5);
    CHECK(c[2] == 10);
    CHECK(c[3] == 11);
    CHECK_THROWS_WITH_AS(device->gemm(st.s, ir::ScalarType::F32, g, a, db, dc), doctest::Contains("host address"), Error);
    const ir::GemmShape big{4, 4, 3, false, false};  // c holds 4 elements, not 16
    CHECK_THROWS_WITH_AS(device->gemm(st.s, ir::ScalarType::F32, big, da, db, dc), doctest::Contains("past its allocation"), Error);
}

// Ctrl-C stops a kernel inside its long loop (docs/cuda-backend.md,
// "Stopping a long kernel"): the kernel reads the session's flag through the
// bus every 1024th trip and returns; the statement is interrupted and the
// session goes on. On the kernel's IR and on its printed CUDA run as host C++.
TEST_CASE("cuda executor: Ctrl-C stops a kernel that loops forever, on the IR and on the printed CUDA") {
    for (const char* mode : {"ir", "printed"}) {
        CAPTURE(mode);
        setenv("SHOAL_SIMULATED_KERNELS", mode, 1);
        SimulatedSession s;
        std::thread ctrl_c([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            s.session.request_cancel();
        });
        const std::string out = s.run("map (\\x -> loop v = x while v > 0.0 do v + 1.0) [1.0, 2.0]");
        ctrl_c.join();
        INFO(out);
        CHECK(out.find("interrupted") != std::string::npos);
        CHECK(s.run("sum (map (\\x -> loop v = x while v < 10.0 do v + 1.0) [1.0, 2.0])") == "20.0\n");
        unsetenv("SHOAL_SIMULATED_KERNELS");
    }
}

// Ctrl-C during a slow NVRTC compile: the statement is interrupted within a
// few milliseconds, not when NVRTC returns; the compile goes on in the
// background and the next run of the statement finds its images.
TEST_CASE("cuda executor: Ctrl-C abandons the wait for a slow NVRTC compile") {
    // No disk cache, where an earlier run left the kernel: it is compiled now.
    const char* cache = std::getenv("SHOAL_CACHE_DIR");
    const std::string kept = cache ? cache : "";
    unsetenv("SHOAL_CACHE_DIR");
    cuda::SimulatedNvrtcOptions nvrtc;
    nvrtc.compile_seconds = 3;
    SimulatedSession s({}, nvrtc);
    std::thread ctrl_c([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        s.session.request_cancel();
    });
    const auto start = std::chrono::steady_clock::now();
    const std::string out = s.run("map (\\v -> v * 7 + 1) (iota 5)");
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ctrl_c.join();
    INFO(out);
    CHECK(out.find("interrupted") != std::string::npos);
    CHECK(waited < 2.0);  // not the compile's 3 s (a margin for a loaded machine)
    CHECK(s.run("map (\\v -> v * 7 + 1) (iota 5)") == "[1, 8, 15, 22, 29]\n");
    if (cache) setenv("SHOAL_CACHE_DIR", kept.c_str(), 1);
}

}  // namespace shoal
#endif

