// The native tier's compile service (runtime/native/native_compiler.h) and
// tiers (runtime/cpu/native_tier.h): the C++ printer's output needs no
// header; the disk cache refuses to load from a directory others may write,
// rebuilds corrupt entries, keys on the CPU; no compiler is a reason, not a
// crash; the auto tier interprets first and switches to native code later
// with the same results. Every executor test kernel also runs natively
// (native_check.h) and whole programs are compared in the ctest entries
// *_native (SHOAL_CPU_TIER=compare).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "codegen/cpu_printer.h"
#include "codegen/kernel_builder.h"
#include "lang/session.h"
#include "runtime/cache/kernel_cache.h"
#include "runtime/cpu/native_tier.h"
#include "runtime/executors.h"
#include "runtime/native/native_compiler.h"
#include "session_capture.h"
#include "temp_files.h"

using namespace shoal;
namespace fs = std::filesystem;

namespace {

// out[i] = x[i] * 2 over one block.
ir::Kernel doubling_kernel() {
    using ST = ir::ScalarType;
    ir::Kernel k;
    k.name = "doubling";
    k.block_size = 32;
    k.params = {ir::Param{"out", ir::ParamKind::Buffer, ST::F32, ir::Access::Write},
                ir::Param{"x", ir::ParamKind::Buffer, ST::F32, ir::Access::Read}};
    const auto i = ir::cast(ST::I64, ir::thread_idx());
    k.body = {ir::phase(ir::store("out", i, ir::binary(ir::BinaryOp::Mul, ir::load("x", i, ST::F32),
                                                         ir::const_float(2.0, ST::F32))))};
    return k;
}

struct ScopedEnv {
    std::string name;
    std::optional<std::string> old;
    ScopedEnv(const std::string& n, const std::string& value) : name(n) {
        if (const char* v = std::getenv(n.c_str())) old = v;
        setenv(n.c_str(), value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (old) setenv(name.c_str(), old->c_str(), 1);
        else unsetenv(name.c_str());
    }
};

// A session on the compiled backend and the CPU executor (its tier from SHOAL_CPU_TIER).
void use_compiled_cpu(Session& s, testing::SessionCapture& out) {
    s.execute(":set backend compiled", "<t>", out);
    s.execute(":set executor cpu", "<t>", out);
}

}  // namespace

TEST_CASE("native: the CPU printer's unit includes no header and names one entry per kernel") {
    const std::string text = ir::print_cpu({doubling_kernel()});
    CHECK(text.find("#include") == std::string::npos);
    CHECK(text.find("extern \"C\" int shoal_native_doubling(") != std::string::npos);
    CHECK(text.find("__restrict__ x") != std::string::npos);
}

TEST_CASE("native: no compiler is a reason, never a crash") {
    ScopedEnv cxx("SHOAL_CXX", "/nonexistent/c++");
    const native::Toolchain t = native::probe_toolchain();
    CHECK(t.why_not.find("/nonexistent/c++") != std::string::npos);
    native::NativeCompiler compiler(t, nullptr);
    const native::NativeBuild b = compiler.build(ir::print_cpu({doubling_kernel()}));
    CHECK_FALSE(b.module);
    CHECK(b.error == t.why_not);
}

TEST_CASE("native: the disk cache stores, reloads, rebuilds a corrupt entry and refuses a shared directory") {
    const native::Toolchain& t = native::system_toolchain();
    if (!t.why_not.empty()) {
        MESSAGE("skipped: " << t.why_not);
        return;
    }
    testing::TempDir tmp("shoal-native-cache-");
    const fs::path dir = tmp.dir / "cache";
    const std::string source = ir::print_cpu({doubling_kernel()});
    {
        native::NativeCompiler compiler(t, std::make_shared<cache::KernelDiskCache>(dir));
        CHECK(compiler.disk_problem().empty());
        CHECK((fs::status(dir).permissions() & fs::perms::all) == fs::perms::owner_all);  // made private
        const native::NativeBuild first = compiler.build(source);
        REQUIRE(first.module);
        CHECK_FALSE(first.cache_hit);
        CHECK(first.module->symbol("shoal_native_doubling") != nullptr);
        const native::NativeBuild second = compiler.build(source);
        REQUIRE(second.module);
        CHECK(second.cache_hit);
    }
    // A flipped byte: the entry is rejected and rebuilt.
    std::vector<fs::path> entries;
    for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path());
    REQUIRE(entries.size() == 1);
    std::string bytes = testing::read_bytes(entries[0]);
    bytes[bytes.size() / 2] ^= 0x40;
    testing::write_bytes(entries[0], bytes);
    {
        native::NativeCompiler compiler(t, std::make_shared<cache::KernelDiskCache>(dir));
        const native::NativeBuild b = compiler.build(source);
        REQUIRE(b.module);
        CHECK_FALSE(b.cache_hit);
        CHECK(compiler.build(source).cache_hit);  // stored again
    }
    // Truncated: the same.
    testing::write_bytes(entries[0], bytes.substr(0, 100));
    {
        native::NativeCompiler compiler(t, std::make_shared<cache::KernelDiskCache>(dir));
        CHECK_FALSE(compiler.build(source).cache_hit);
    }
    // A directory others may write: nothing is loaded from it or stored in it.
    fs::permissions(dir, fs::perms::all);
    {
        native::NativeCompiler compiler(t, std::make_shared<cache::KernelDiskCache>(dir));
        CHECK(compiler.disk_problem().find("writable by others") != std::string::npos);
        const native::NativeBuild b = compiler.build(source);
        REQUIRE(b.module);
        CHECK_FALSE(b.cache_hit);
    }
    // Another CPU is another key: an object for this one is never found for it.
    native::Toolchain other = t;
    other.cpu = "another CPU | avx512f";
    fs::permissions(dir, fs::perms::owner_all);
    {
        native::NativeCompiler compiler(other, std::make_shared<cache::KernelDiskCache>(dir));
        CHECK_FALSE(compiler.build(source).cache_hit);
    }
}

TEST_CASE("native: two processes' builds may share the cache directory") {
    const native::Toolchain& t = native::system_toolchain();
    if (!t.why_not.empty()) return;
    testing::TempDir tmp("shoal-native-shared-");
    const std::string source = ir::print_cpu({doubling_kernel()});
    // Two compilers (as two processes would) building the same unit at once.
    std::vector<native::NativeBuild> builds(2);
    std::vector<std::thread> threads;
    for (int i = 0; i < 2; ++i)
        threads.emplace_back([&, i] {
            native::NativeCompiler compiler(t, std::make_shared<cache::KernelDiskCache>(tmp.dir / "cache"));
            builds[size_t(i)] = compiler.build(source);
        });
    for (auto& th : threads) th.join();
    CHECK(builds[0].module);
    CHECK(builds[1].module);
    native::NativeCompiler later(t, std::make_shared<cache::KernelDiskCache>(tmp.dir / "cache"));
    CHECK(later.build(source).cache_hit);
}

TEST_CASE("native: the auto tier interprets first, then runs native code with the same results") {
    if (!native::system_toolchain().why_not.empty()) return;
    ScopedEnv tier("SHOAL_CPU_TIER", "auto");
    runtime::install_compiled_backend();
    Session s;
    testing::SessionCapture out;
    use_compiled_cpu(s, out);
    s.execute("let x = map (\\i -> float i * 0.37) (iota 5000)", "<t>", out);
    std::vector<std::string> results, times;
    // The third run of a plan at the latest starts its build; later runs use it once it is done.
    for (int run = 0; run < 40; ++run) {
        out.clear();
        s.execute(":time sum (map (\\v -> sin v * v) x)", "<t>", out);
        REQUIRE(out.values.size() == 1);
        results.push_back(out.values[0]);
        times.push_back(out.texts.empty() ? "" : out.texts[0]);
        if (times.back().find("native code") != std::string::npos && run > 2) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(times.front().find("native code") == std::string::npos);  // the first run is interpreted
    CHECK(times.back().find("native code") != std::string::npos);
    for (const std::string& r : results) CHECK(r == results.front());
    // :compile also reports the native build of each plan; :cache the native builds.
    out.clear();
    s.execute(":compile sum (map (\\v -> cos v) x)", "<t>", out);
    std::string compiled;
    for (const std::string& t : out.texts) compiled += t;
    INFO(compiled);
    CHECK(compiled.find("native code for this CPU") != std::string::npos);
    CHECK((compiled.find("(2 kernels): built in ") != std::string::npos ||
           compiled.find("(2 kernels): from the cache") != std::string::npos));
    out.clear();
    s.execute(":cache", "<t>", out);
    CHECK(!out.texts.empty());
    CHECK(out.texts.back().find("plans run natively") != std::string::npos);
}

TEST_CASE("native: Ctrl-C stops a native kernel that would never end") {
    if (!native::system_toolchain().why_not.empty()) return;
    using ST = ir::ScalarType;
    ir::Kernel k;
    k.name = "spin";
    k.block_size = 32;
    k.params = {ir::Param{"flag", ir::ParamKind::Buffer, ST::I32, ir::Access::Read}};
    k.body = {ir::phase(ir::while_loop(
        ir::binary(ir::BinaryOp::Eq, ir::load("flag", ir::const_int(0), ST::I32), ir::const_int(0, ST::I32)), {}))};
    std::string why;
    const auto plan = cpu::NativePlan::build({k}, &why);
    REQUIRE_MESSAGE(plan, why);
    std::vector<int32_t> flag{0};
    cpu::LaunchArgs args;
    args.grid = 4;
    args.buffers["flag"] = cpu::BufferArg{flag.data(), 1};
    std::atomic<bool> cancel{false};
    cpu::ExecOptions options;
    options.cancel = &cancel;
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        cancel = true;
    });
    cpu::Counters counters;
    const auto start = std::chrono::steady_clock::now();
    bool interrupted = false;
    try {
        plan->launch(0, k, args, options, counters);
    } catch (const Error& e) {
        interrupted = e.kind == ErrorKind::Interrupted;
    }
    stopper.join();
    CHECK(interrupted);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
}

// Ctrl-C while a run waits for its plan's build (the native and compare
// tiers build before they run): the wait ends at once, the build goes on,
// and the next run finds it. The kernel is new to the cache (a constant no
// other run uses), so its build takes the C++ compiler's tenths of a second.
TEST_CASE("native: Ctrl-C abandons the wait for a build, which a later run finds") {
    if (!native::system_toolchain().why_not.empty()) return;
    using ST = ir::ScalarType;
    ir::Kernel k;
    k.name = "fill_unique";
    k.block_size = 32;
    k.params = {ir::Param{"out", ir::ParamKind::Buffer, ST::I64, ir::Access::Write}};
    const int64_t unique = std::chrono::steady_clock::now().time_since_epoch().count();
    k.body = {ir::phase(ir::store("out", ir::const_int(0), ir::const_int(unique)))};
    auto plan = std::make_shared<ir::LaunchPlan>();
    plan->name = "fill_unique";
    plan->kernels = {k};
    cpu::NativeTier tier(cpu::Tier::Native);
    std::atomic<bool> cancel{true};
    bool interrupted = false;
    try {
        tier.for_run(plan, &cancel);
    } catch (const Error& e) {
        interrupted = e.kind == ErrorKind::Interrupted;
    }
    CHECK(interrupted);  // waiting for the build (the old way) would return the plan, not throw
    cancel = false;
    CHECK(tier.for_run(plan, &cancel) != nullptr);  // waits for the build started before
}

TEST_CASE("native: checked code stops at an index outside its buffer, with a message") {
    if (!native::system_toolchain().why_not.empty()) return;
    using ST = ir::ScalarType;
    ir::Kernel k = doubling_kernel();  // out[tid] for 32 threads
    const std::string text = ir::print_cpu({k}, /*checked=*/true);
    CHECK(text.find("shoal_checked_index(") != std::string::npos);
    native::NativeCompiler compiler(native::system_toolchain(), nullptr);
    const native::NativeBuild b = compiler.build(text);
    REQUIRE(b.module);
    using Entry = int (*)(void* const*, const long long*, long long, long long, long long, void*, const unsigned char*);
    const auto entry = reinterpret_cast<Entry>(b.module->symbol("shoal_native_doubling"));
    REQUIRE(bool(entry));
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const pid_t child = ::fork();
    if (child == 0) {  // 16 elements where 32 threads store: the 17th store must stop it
        ::dup2(pipe_fds[1], 2);
        std::vector<float> out(16), x(32, 1.0f);
        void* args[] = {out.data(), x.data()};
        const long long extents[] = {16, 32};
        unsigned char cancel = 0;
        long long record[4] = {-1, -1, 0, 0};
        entry(args, extents, 0, 1, 1, record, &cancel);
        ::_exit(0);
    }
    ::close(pipe_fds[1]);
    std::string message;
    char buf[256];
    for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) message.append(buf, size_t(n));
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    CHECK(WIFSIGNALED(status));
    CHECK(message.find("native kernel doubling: index 16 of buffer out is outside its 16 elements") != std::string::npos);
    (void)ST::F32;
}

// A vectorisable loop records a failed check as a flag and runs again as
// written to find the failure (cpu_printer.cpp, print_interchanged): the
// error is the interpreter's, the lowest thread's first failure.
TEST_CASE("native: a failed check in a vectorised loop is the interpreter's error") {
    if (!native::system_toolchain().why_not.empty()) return;
    std::vector<std::string> errors;
    for (const char* tier : {"native", "interpret"}) {
        ScopedEnv env("SHOAL_CPU_TIER", tier);
        runtime::install_compiled_backend();
        Session s;
        testing::SessionCapture out;
        use_compiled_cpu(s, out);
        s.execute("let x = map (\\i -> float i) (iota 100000)", "<t>", out);
        s.execute("let ys = map (\\i -> exp (x[i] * 0.001) + x[3 * i - 150000]) (iota 100000)", "<t>", out);
        REQUIRE(out.errors.size() == 1);
        errors.push_back(out.errors[0]);
        out.clear();
        s.execute("sum (map (\\i -> log (x[i] + 1.0)) (iota 100000))", "<t>", out);  // the session goes on
        CHECK(out.errors.empty());
    }
    CHECK(errors[0] == errors[1]);
    INFO(errors[0]);
    CHECK(errors[0].find("index -150000 is out of bounds for axis 0 with extent 100000") != std::string::npos);
}
