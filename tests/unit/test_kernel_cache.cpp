// The compile side of the CUDA backend (runtime/cuda/): the kernel cache on
// disk (keys, entries that are checked before they are trusted, LRU
// eviction, unwritable directories, two processes sharing a directory), the
// KernelCompiler in front of it (memory and disk hits, parallel misses,
// NVRTC failures as Shoal bugs) on the simulated NVRTC, the target choice,
// ptxas reports, and a real NVRTC cubin through the disk cache. Every test
// uses a directory of its own, never the user's ~/.cache.
#include <doctest/doctest.h>

#ifdef SHOAL_HAVE_NVRTC

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "lang/diagnostics.h"
#include "runtime/cache/kernel_cache.h"
#include "runtime/cuda/kernel_compiler.h"
#include "runtime/cuda/nvrtc_target.h"
#include "runtime/cuda/ptxas_info.h"
#include "runtime/cuda/simulated_nvrtc.h"
#include "temp_files.h"

using namespace shoal;
using namespace shoal::cuda;
using namespace shoal::cache;
namespace fs = std::filesystem;
using shoal::testing::TempDir;
using shoal::testing::read_bytes;
using shoal::testing::write_bytes;

namespace {

Sha256Digest key_of(const std::string& source) { return kernel_cache_key(source, {"-a"}, "sm_90", "test 1.0"); }

CachedKernel kernel_of(const std::string& image, ImageKind kind = ImageKind::Cubin) {
    return CachedKernel{kind, image, "ptxas info    : Used 8 registers"};
}

std::string kernel_source(const std::string& name, const std::string& body = "x[0] = 1.0f;") {
    return "extern \"C\" __global__ void __launch_bounds__(256) " + name + "(float* x) { " + body + " }\n";
}

KernelSource kernel(const std::string& name, const std::string& body = "x[0] = 1.0f;") {
    return KernelSource{name, kernel_source(name, body), "map (\\v -> v + 1.0) xs"};
}

// Writes `bytes` as the entry of `key` and loads it: the load must fail;
// returns the problem it reports.
std::string problem_loading(KernelDiskCache& cache, const Sha256Digest& key, const std::string& bytes) {
    write_bytes(cache.entry_path(key), bytes);
    std::string problem;
    CHECK_FALSE(cache.load(key, ImageKind::Cubin, &problem));
    return problem;
}

std::shared_ptr<KernelDiskCache> disk_cache(const fs::path& dir, uint64_t max_bytes = KernelDiskCache::kDefaultMaxBytes) {
    return std::make_shared<KernelDiskCache>(dir, max_bytes);
}

// The message and notes as the REPL prints them.
std::string thrown_text(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        CHECK(e.kind == ErrorKind::Internal);
        return format_error(e);
    }
    FAIL_CHECK("no Error thrown");
    return "";
}

}  // namespace

// ---------------------------------------------------------------- keys and entries

TEST_CASE("kernel cache: the key changes with each of its inputs") {
    const std::string src = kernel_source("k");
    const std::vector<std::string> opts = {"--gpu-architecture=sm_90", "-default-device"};
    const Sha256Digest base = kernel_cache_key(src, opts, "sm_90", "NVRTC 13.0", "0.1.0");
    CHECK(kernel_cache_key(src, opts, "sm_90", "NVRTC 13.0", "0.1.0") == base);
    std::set<Sha256Digest> keys = {
        base,
        kernel_cache_key(src + " ", opts, "sm_90", "NVRTC 13.0", "0.1.0"),
        kernel_cache_key(src, {"--gpu-architecture=sm_80", "-default-device"}, "sm_90", "NVRTC 13.0", "0.1.0"),
        kernel_cache_key(src, {"--gpu-architecture=sm_90"}, "sm_90", "NVRTC 13.0", "0.1.0"),
        kernel_cache_key(src, {"-default-device", "--gpu-architecture=sm_90"}, "sm_90", "NVRTC 13.0", "0.1.0"),
        kernel_cache_key(src, opts, "sm_89", "NVRTC 13.0", "0.1.0"),
        kernel_cache_key(src, opts, "sm_90", "NVRTC 12.8", "0.1.0"),
        kernel_cache_key(src, opts, "sm_90", "simulated NVRTC 13.0", "0.1.0"),
        kernel_cache_key(src, opts, "sm_90", "NVRTC 13.0", "0.1.1"),
    };
    CHECK(keys.size() == 9);
    // Length prefixes: moving bytes from one field to the next changes the key.
    CHECK(kernel_cache_key("ab", {"c"}, "x", "y", "z") != kernel_cache_key("a", {"bc"}, "x", "y", "z"));
    CHECK(kernel_cache_key("a", {"b", "c"}, "x", "y", "z") != kernel_cache_key("a", {"bc"}, "x", "y", "z"));
    CHECK(kernel_cache_key("a", {}, "b", "y", "z") != kernel_cache_key("a", {"b"}, "", "y", "z"));
    CHECK(to_hex(base).size() == 64);
}

TEST_CASE("kernel cache: an entry stores and loads back") {
    TempDir t("shoal-test-kernel-cache-");
    KernelDiskCache cache(t.dir / "kernels");  // created on the first store
    const Sha256Digest key = key_of("roundtrip");
    std::string problem = "unset";
    CHECK_FALSE(cache.load(key, ImageKind::Cubin, &problem));
    CHECK(problem.empty());  // absent is a plain miss
    std::string image = "\x7f" "ELF";
    image += std::string("\0\1\2\xff", 4) + std::string(5000, 'c');
    REQUIRE(cache.store(key, kernel_of(image)));
    CHECK(cache.store_problem().empty());
    CHECK(fs::exists(cache.entry_path(key)));
    const auto loaded = cache.load(key, ImageKind::Cubin, &problem);
    REQUIRE(loaded);
    CHECK(problem.empty());
    CHECK(loaded->image == image);
    CHECK(loaded->log == "ptxas info    : Used 8 registers");
    CHECK(loaded->kind == ImageKind::Cubin);
    // The same key asked as another kind of image is not trusted either.
    CHECK_FALSE(cache.load(key, ImageKind::Ptx, &problem));
    CHECK(problem == "not a ptx image");
    const auto s = cache.stats();
    CHECK(s.entries == 1);
    CHECK(s.bytes == kEntryHeaderBytes + image.size() + loaded->log.size());
    CHECK(s.hits == 1);
    CHECK(s.misses == 2);
    CHECK(s.stores == 1);
    // No temporary file is left behind.
    size_t files = 0;
    for (const auto& e : fs::directory_iterator(cache.directory())) files += e.is_regular_file();
    CHECK(files == 1);
}

TEST_CASE("kernel cache: a corrupt byte anywhere is a miss, and the entry is rebuilt") {
    TempDir t("shoal-test-kernel-cache-");
    KernelDiskCache cache(t.dir);
    const Sha256Digest key = key_of("corrupt");
    REQUIRE(cache.store(key, kernel_of(std::string(300, 'p'))));
    const std::string good = read_bytes(cache.entry_path(key));
    // Every byte of the header and of the payload is covered.
    for (size_t at : {size_t(20), size_t(50), size_t(70), kEntryHeaderBytes + 5, good.size() - 1}) {
        CAPTURE(at);
        std::string bad = good;
        bad[at] = static_cast<char>(bad[at] ^ 0x20);
        CHECK_FALSE(problem_loading(cache, key, bad).empty());
    }
    std::string bad = good;
    bad[kEntryHeaderBytes + 5] ^= 1;
    CHECK(problem_loading(cache, key, bad) == "checksum mismatch (corrupt)");
    CHECK(cache.stats().corrupt == 6);
    // The rebuild overwrites it.
    REQUIRE(cache.store(key, kernel_of(std::string(300, 'p'))));
    CHECK(read_bytes(cache.entry_path(key)) == good);
    CHECK(cache.load(key, ImageKind::Cubin));
}

TEST_CASE("kernel cache: a truncated or padded entry is a miss") {
    TempDir t("shoal-test-kernel-cache-");
    KernelDiskCache cache(t.dir);
    const Sha256Digest key = key_of("truncated");
    REQUIRE(cache.store(key, kernel_of(std::string(1000, 'q'))));
    const std::string good = read_bytes(cache.entry_path(key));
    for (size_t size : {size_t(0), size_t(10), kEntryHeaderBytes, good.size() / 2, good.size() - 1}) {
        CAPTURE(size);
        CHECK(problem_loading(cache, key, good.substr(0, size)).find("truncated") == 0);
    }
    CHECK(problem_loading(cache, key, good + "x").find("padded") != std::string::npos);
}

TEST_CASE("kernel cache: foreign files are misses (random bytes, wrong magic, wrong version, another key)") {
    TempDir t("shoal-test-kernel-cache-");
    KernelDiskCache cache(t.dir);
    const Sha256Digest key = key_of("foreign");
    const fs::path path = cache.entry_path(key);
    auto problem_with = [&](const std::string& bytes) { return problem_loading(cache, key, bytes); };
    std::mt19937 random(42);
    std::string noise(4096, '\0');
    for (char& c : noise) c = static_cast<char>(random());
    CHECK(problem_with(noise) == "not a Shoal kernel cache entry (wrong magic number)");

    const std::string good = encode_entry(key, kernel_of("image"));
    std::string magic = good;
    magic[0] = 'X';
    CHECK(problem_with(magic) == "not a Shoal kernel cache entry (wrong magic number)");
    std::string version = good;
    version[8] = 2;
    CHECK(problem_with(version) == "format version 2, expected 1");
    // A valid entry, but another key's (copied or renamed by hand).
    CHECK(problem_with(encode_entry(key_of("other"), kernel_of("image"))) == "an entry for another key");
    CHECK(cache.stats().corrupt == 4);
    write_bytes(path, good);
    CHECK(cache.load(key, ImageKind::Cubin));
}

TEST_CASE("kernel cache: an unwritable directory still compiles, and says why it stores nothing") {
    TempDir t("shoal-test-kernel-cache-");
    auto compile_one = [](const std::shared_ptr<KernelDiskCache>& disk) {
        KernelCompiler compiler(simulated_nvrtc(), disk);
        const auto out = compiler.compile({kernel("k")}, "sm_90");
        REQUIRE(out.size() == 1);
        CHECK(out[0].from == KernelFrom::Compiled);
        CHECK(out[0].image == kSimulatedImageMagic + kernel_source("k"));
        const auto s = compiler.stats();
        CHECK(s.disk.store_failures == 1);
        CHECK(s.disk.stores == 0);
        return s.disk_problem;
    };
    SUBCASE("a path through a regular file (cannot be created, even by root)") {
        write_bytes(t.dir / "file", "not a directory");
        const std::string why = compile_one(disk_cache(t.dir / "file" / "kernels"));
        CHECK(why.find("cannot create the kernel cache " + (t.dir / "file" / "kernels").string()) == 0);
        CHECK(why.find('\n') == std::string::npos);
    }
    SUBCASE("a read-only directory") {
        if (::geteuid() == 0) {
            MESSAGE("skipped: running as root, which writes into read-only directories");
            return;
        }
        fs::permissions(t.dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
        const std::string why = compile_one(disk_cache(t.dir));
        CHECK(why == "cannot write to the kernel cache " + t.dir.string() + ": Permission denied");
    }
    SUBCASE("no directory at all") {
        const std::string why = compile_one(std::make_shared<KernelDiskCache>(fs::path(), 1 << 20, "no HOME"));
        CHECK(why == "no HOME");
    }
}

TEST_CASE("kernel cache: the directory comes from SHOAL_CACHE_DIR, XDG_CACHE_HOME or HOME") {
    struct SavedEnv {
        std::vector<std::pair<std::string, std::optional<std::string>>> saved;
        SavedEnv() {
            for (const char* name : {"SHOAL_CACHE_DIR", "XDG_CACHE_HOME", "HOME"}) {
                const char* v = std::getenv(name);
                saved.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
            }
        }
        ~SavedEnv() {
            for (const auto& [name, value] : saved) value ? ::setenv(name.c_str(), value->c_str(), 1) : ::unsetenv(name.c_str());
        }
    } restore;
    ::setenv("SHOAL_CACHE_DIR", "/tmp/a", 1);
    ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    ::setenv("HOME", "/tmp/home", 1);
    CHECK(KernelDiskCache::default_directory() == "/tmp/a");
    ::unsetenv("SHOAL_CACHE_DIR");
    CHECK(KernelDiskCache::default_directory() == "/tmp/xdg/shoal/kernels");
    ::setenv("XDG_CACHE_HOME", "relative", 1);  // ignored, as the XDG spec says
    CHECK(KernelDiskCache::default_directory() == "/tmp/home/.cache/shoal/kernels");
    ::unsetenv("XDG_CACHE_HOME");
    ::unsetenv("HOME");
    std::string why;
    CHECK(KernelDiskCache::default_directory(&why).empty());
    CHECK(why.find("no kernel cache directory") == 0);
}

TEST_CASE("kernel cache: under a small cap, eviction keeps the most recently used entries") {
    TempDir t("shoal-test-kernel-cache-");
    const CachedKernel entry = kernel_of(std::string(1000, 'e'));
    const uint64_t entry_bytes = encode_entry(key_of("a"), entry).size();
    KernelDiskCache cache(t.dir, 3 * entry_bytes + entry_bytes / 2);  // room for three
    auto pause = [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
    for (const char* name : {"a", "b", "c"}) {
        REQUIRE(cache.store(key_of(name), entry));
        pause();
    }
    CHECK(cache.load(key_of("a"), ImageKind::Cubin));  // a is now more recent than b and c
    pause();
    REQUIRE(cache.store(key_of("d"), entry));
    CHECK(fs::exists(cache.entry_path(key_of("a"))));
    CHECK_FALSE(fs::exists(cache.entry_path(key_of("b"))));
    CHECK(fs::exists(cache.entry_path(key_of("c"))));
    CHECK(fs::exists(cache.entry_path(key_of("d"))));
    auto s = cache.stats();
    CHECK(s.entries == 3);
    CHECK(s.evictions == 1);
    CHECK(s.bytes <= cache.max_bytes());
    // A lower cap applies from the next store; the entry just stored stays
    // even when it alone is over the cap.
    cache.set_max_bytes(entry_bytes);
    pause();
    REQUIRE(cache.store(key_of("e"), entry));
    s = cache.stats();
    CHECK(s.entries == 1);
    CHECK(fs::exists(cache.entry_path(key_of("e"))));
    cache.clear();
    CHECK(cache.stats().entries == 0);
}

TEST_CASE("kernel cache: two processes share a directory") {
    TempDir t("shoal-test-kernel-cache-");
    // Each process stores and loads keys of its own and keys both use (with
    // the same contents, as two Shoal processes compiling the same kernel
    // would), under a roomy cap and then under one that evicts all the time.
    // A load may miss (evicted) but must never see a partial or corrupt entry.
    auto image_of = [](const std::string& name) { return "image of " + name + std::string(2000, '.'); };
    // The number of bad loads and stores, and of the entries this process evicted.
    auto work = [&](const std::string& who, uint64_t cap, int rounds) -> std::pair<int, uint64_t> {
        KernelDiskCache cache(t.dir, cap);
        int bad = 0;
        for (int r = 0; r < rounds; ++r) {
            for (int i = 0; i < 8; ++i) {
                for (const std::string& name : {"shared" + std::to_string(i), who + std::to_string(i)}) {
                    if (!cache.store(key_of(name), kernel_of(image_of(name)))) ++bad;
                    std::string problem;
                    const auto got = cache.load(key_of(name), ImageKind::Cubin, &problem);
                    if (!problem.empty() || (got && got->image != image_of(name))) ++bad;
                    if (!got && cap == KernelDiskCache::kDefaultMaxBytes) ++bad;
                }
            }
        }
        return {bad, cache.stats().evictions};
    };
    for (uint64_t cap : {KernelDiskCache::kDefaultMaxBytes, uint64_t(5 * 2200)}) {
        CAPTURE(cap);
        std::vector<pid_t> children;
        for (const char* who : {"first", "second"}) {
            const pid_t pid = ::fork();
            REQUIRE(pid >= 0);
            if (pid == 0) ::_exit(work(who, cap, 25).first == 0 ? 0 : 1);  // no doctest, no atexit in the child
            children.push_back(pid);
        }
        const auto [bad_here, evicted_here] = work("parent", cap, 25);
        for (pid_t pid : children) {
            int status = 0;
            REQUIRE(::waitpid(pid, &status, 0) == pid);
            CHECK(WIFEXITED(status));
            CHECK(WEXITSTATUS(status) == 0);
        }
        CHECK(bad_here == 0);
        CHECK((evicted_here > 0) == (cap != KernelDiskCache::kDefaultMaxBytes));
        // What is left is whole: every entry on disk loads, and nothing temporary remains.
        KernelDiskCache cache(t.dir, cap);
        size_t entries = 0;
        for (const std::string who : {"shared", "first", "second", "parent"})
            for (int i = 0; i < 8; ++i) {
                const std::string name = who + std::to_string(i);
                if (!fs::exists(cache.entry_path(key_of(name)))) continue;
                ++entries;
                const auto got = cache.load(key_of(name), ImageKind::Cubin);
                CHECK(got);
                if (got) CHECK(got->image == image_of(name));
            }
        CHECK(entries == cache.stats().entries);
        if (cap == KernelDiskCache::kDefaultMaxBytes) CHECK(entries == 32);
        for (const auto& e : fs::directory_iterator(t.dir)) CHECK(e.path().extension() == ".kernel");
        cache.clear();
    }
}

TEST_CASE("kernel cache: a process killed (kill -9) in the middle of its stores leaves only whole entries") {
    TempDir t("shoal-test-kernel-cache-");
    auto image_of = [](int i) { return "image " + std::to_string(i) + std::string(200000, static_cast<char>('a' + i % 26)); };
    for (int delay_ms : {2, 15, 40}) {
        CAPTURE(delay_ms);
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {  // stores until killed
            KernelDiskCache cache(t.dir);
            for (int i = 0;; i = (i + 1) % 400) cache.store(key_of("k" + std::to_string(i)), kernel_of(image_of(i)));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        REQUIRE(::kill(pid, SIGKILL) == 0);
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        CHECK(WIFSIGNALED(status));
        // Every entry under its final name is whole; a half-written temporary
        // is never read, and the next store or clear() removes it.
        KernelDiskCache cache(t.dir);
        size_t whole = 0;
        for (int i = 0; i < 400; ++i) {
            std::string problem;
            const auto got = cache.load(key_of("k" + std::to_string(i)), ImageKind::Cubin, &problem);
            CHECK(problem.empty());
            if (got) {
                CHECK(got->image == image_of(i));
                ++whole;
            }
        }
        CHECK(cache.stats().corrupt == 0);
        CHECK(cache.store(key_of("after"), kernel_of(image_of(1))));
        CHECK(cache.load(key_of("after"), ImageKind::Cubin));
        MESSAGE(whole << " whole entries after a kill at " << delay_ms << " ms");
    }
}

// ---------------------------------------------------------------- target choice and ptxas reports

TEST_CASE("kernel compiler: a CUBIN for an architecture NVRTC knows, else PTX for the highest below") {
    CHECK(parse_sm_arch("sm_90") == 90);
    CHECK(parse_sm_arch("sm_120") == 120);
    for (const char* bad : {"compute_90", "sm_", "sm_9x", "90", "SM_90"})
        CHECK_THROWS_WITH_AS(parse_sm_arch(bad), doctest::Contains("is not a GPU architecture"), Error);

    const NvrtcTarget cubin = choose_target(90, {75, 80, 86, 90});
    CHECK(cubin.kind == ImageKind::Cubin);
    CHECK(cubin.gpu_architecture == "sm_90");
    CHECK(cubin.options == std::vector<std::string>{"--gpu-architecture=sm_90", "-default-device", "--std=c++17",
                                                    "--fmad=false", "--ptxas-options=--verbose"});
    const NvrtcTarget ptx = choose_target(89, {75, 80, 86, 90});
    CHECK(ptx.kind == ImageKind::Ptx);
    CHECK(ptx.gpu_architecture == "compute_86");
    CHECK(ptx.options ==
          std::vector<std::string>{"--gpu-architecture=compute_86", "-default-device", "--std=c++17", "--fmad=false"});
    CHECK_THROWS_WITH_AS(choose_target(70, {75, 80}), doctest::Contains("NVRTC cannot compile for sm_70"), Error);

    // Through the compiler: a simulated NVRTC that knows sm_80 and sm_90 only.
    SimulatedNvrtcOptions old;
    old.supported_archs = {80, 90};
    KernelCompiler compiler(simulated_nvrtc(old), nullptr);
    const auto out = compiler.compile({kernel("k")}, "sm_86");
    CHECK(out[0].kind == ImageKind::Ptx);
    CHECK(out[0].gpu_architecture == "compute_80");
    CHECK_FALSE(out[0].ptxas.known());
    const auto native = compiler.compile({kernel("k")}, "sm_90");
    CHECK(native[0].kind == ImageKind::Cubin);
    CHECK(native[0].key != out[0].key);
    CHECK(native[0].ptxas.registers == 32);
}

TEST_CASE("kernel compiler: ptxas reports are read per entry function") {
    const std::string log =
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'first' for 'sm_90'\n"
        "ptxas info    : Function properties for first\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem\n"
        "ptxas info    : Function properties for helper\n"
        "ptxas         .     64 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
        "ptxas info    : Compiling entry function 'second' for 'sm_90'\n"
        "ptxas info    : Function properties for second\n"
        "ptxas         .     16 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads\n"
        "ptxas info    : Used 255 registers, used 0 barriers, 360 bytes cmem[0]\n"
        "ptxas info    : Compile time = 3.288 ms\n";
    const PtxasInfo first = parse_ptxas_info(log, "first");
    CHECK(first.registers == 10);
    CHECK(first.spill_store_bytes == 0);
    CHECK(first.spill_load_bytes == 0);
    CHECK(first.stack_frame_bytes == 0);
    CHECK(first.static_shared_bytes == 256);
    const PtxasInfo second = parse_ptxas_info(log, "second");
    CHECK(second.registers == 255);
    CHECK(second.spill_store_bytes == 12);
    CHECK(second.spill_load_bytes == 20);
    CHECK(second.stack_frame_bytes == 16);
    CHECK(second.static_shared_bytes == 0);
    CHECK(describe(second) == "255 registers, 12 B spill stores, 20 B spill loads, 0 B static shared");
    CHECK_FALSE(parse_ptxas_info(log, "third").known());  // two entries: no guessing
    CHECK(parse_ptxas_info(log.substr(0, log.find("ptxas info    : Function properties for helper")), "").registers == 10);
    CHECK_FALSE(parse_ptxas_info("", "first").known());
    CHECK(describe(PtxasInfo{}) == "no ptxas report");
}

// ---------------------------------------------------------------- the compiler on the simulated NVRTC

TEST_CASE("kernel compiler: memory hits, then disk hits in a fresh compiler") {
    TempDir t("shoal-test-kernel-cache-");
    const std::vector<KernelSource> kernels = {kernel("a"), kernel("b", "x[1] = 2.0f;")};
    KernelCompiler first(simulated_nvrtc(), disk_cache(t.dir));
    const auto cold = first.compile(kernels, "sm_90");
    REQUIRE(cold.size() == 2);
    for (size_t i = 0; i < 2; ++i) {
        CHECK(cold[i].name == kernels[i].name);
        CHECK(cold[i].from == KernelFrom::Compiled);
        CHECK(cold[i].image == kSimulatedImageMagic + kernels[i].source);
        CHECK(cold[i].ptxas.registers == 32);
        CHECK(cold[i].gpu_architecture == "sm_90");
    }
    const auto warm = first.compile(kernels, "sm_90");
    CHECK(warm[0].from == KernelFrom::Memory);
    CHECK(warm[1].from == KernelFrom::Memory);
    CHECK(warm[1].image == cold[1].image);
    CHECK(warm[1].ptxas.registers == 32);  // the log is cached with the image

    KernelCompiler second(simulated_nvrtc(), disk_cache(t.dir));
    const auto disk = second.compile(kernels, "sm_90");
    CHECK(disk[0].from == KernelFrom::Disk);
    CHECK(disk[1].from == KernelFrom::Disk);
    CHECK(disk[0].image == cold[0].image);
    CHECK(disk[0].key == cold[0].key);
    CHECK(disk[0].ptxas.registers == 32);

    auto s = first.stats();
    CHECK(s.memory_entries == 2);
    CHECK(s.misses == 2);
    CHECK(s.memory_hits == 2);
    CHECK(s.disk_hits == 0);
    CHECK(s.has_disk);
    CHECK(s.disk.entries == 2);
    s = second.stats();
    CHECK(s.disk_hits == 2);
    CHECK(s.misses == 0);

    second.clear();
    s = second.stats();
    CHECK(s.memory_entries == 0);
    CHECK(s.disk.entries == 0);
    CHECK(second.compile(kernels, "sm_90")[0].from == KernelFrom::Compiled);
}

TEST_CASE("kernel compiler: several kernels compile in parallel and come back in order") {
    TempDir t("shoal-test-kernel-cache-");
    std::vector<KernelSource> kernels;
    for (int i = 0; i < 12; ++i) kernels.push_back(kernel("k" + std::to_string(i), "x[" + std::to_string(i) + "] = 1.0f;"));
    kernels.push_back(kernels[3]);  // the same kernel twice in one statement: compiled once
    KernelCompiler compiler(simulated_nvrtc(), disk_cache(t.dir));
    const auto out = compiler.compile(kernels, "sm_90");
    REQUIRE(out.size() == kernels.size());
    for (size_t i = 0; i < kernels.size(); ++i) {
        CHECK(out[i].name == kernels[i].name);
        CHECK(out[i].image == kSimulatedImageMagic + kernels[i].source);
    }
    CHECK(out[12].from == KernelFrom::Memory);
    CHECK(out[12].key == out[3].key);
    const auto s = compiler.stats();
    CHECK(s.misses == 12);
    CHECK(s.memory_hits == 1);
    CHECK(s.disk.entries == 12);
}

TEST_CASE("kernel compiler: an NVRTC failure names the kernel and its expression, with the log and the source") {
    TempDir t("shoal-test-kernel-cache-");
    SimulatedNvrtcOptions faults;
    faults.fail_sources_containing = "BROKEN";
    faults.failure_log = "broken.cu(1): error: identifier \"BROKEN\" is undefined";
    KernelCompiler compiler(simulated_nvrtc(faults), disk_cache(t.dir));
    KernelSource broken = kernel("broken_map", "x[0] = BROKEN;");
    broken.origin = "map (\\v -> v * 2.0) ys";
    const std::string text = thrown_text([&] { compiler.compile({kernel("fine"), broken, kernel("fine2", "")}, "sm_90"); });
    CHECK(text.find("simulated NVRTC 13.0 failed to compile kernel 'broken_map' of `map (\\v -> v * 2.0) ys` for sm_90") !=
          std::string::npos);
    CHECK(text.find("bug in Shoal") != std::string::npos);
    CHECK(text.find(faults.failure_log) != std::string::npos);
    CHECK(text.find("   1 | extern \"C\" __global__ void __launch_bounds__(256) broken_map(float* x) { x[0] = BROKEN; }") !=
          std::string::npos);
    // Still usable: the kernels that compiled are cached, the broken one is not.
    const auto s = compiler.stats();
    CHECK(s.memory_entries == 2);
    CHECK(s.disk.entries == 2);
    CHECK(compiler.compile({kernel("fine")}, "sm_90")[0].from == KernelFrom::Memory);
    CHECK_THROWS_AS(compiler.compile({broken}, "sm_90"), Error);

    // The Nth compile failing (counted over the simulated NVRTC's life).
    SimulatedNvrtcOptions second;
    second.compile_failure_at = 2;
    KernelCompiler counted(simulated_nvrtc(second), nullptr);
    CHECK(counted.compile({kernel("one")}, "sm_90").size() == 1);
    const std::string again = thrown_text([&] { counted.compile({kernel("two")}, "sm_90"); });
    CHECK(again.find("kernel 'two'") != std::string::npos);
    CHECK(again.find("simulated NVRTC failure") != std::string::npos);
    CHECK(counted.compile({kernel("two")}, "sm_90")[0].from == KernelFrom::Compiled);
}

TEST_CASE("kernel compiler: the simulated NVRTC checks its options") {
    auto api = simulated_nvrtc();
    NvrtcOutput bad_arch = nvrtc_compile(*api, "x", "x.cu", standard_options("sm_61"), ImageKind::Cubin);
    CHECK_FALSE(bad_arch.ok);
    CHECK(bad_arch.log.find("invalid value for --gpu-architecture") != std::string::npos);
    NvrtcOutput bad_option = nvrtc_compile(*api, "x", "x.cu", {"--gpu-architecture=sm_90", "fast"}, ImageKind::Cubin);
    CHECK_FALSE(bad_option.ok);
    CHECK(bad_option.log == "nvrtc: error: invalid option 'fast'");
    NvrtcOutput no_cubin = nvrtc_compile(*api, "x", "x.cu", standard_options("compute_90"), ImageKind::Cubin);
    CHECK_FALSE(no_cubin.ok);
    CHECK(no_cubin.log == "NVRTC produced no cubin");
    NvrtcOutput ptx = nvrtc_compile(*api, "x", "x.cu", standard_options("compute_90"), ImageKind::Ptx);
    CHECK(ptx.ok);
    CHECK(ptx.image == std::string(kSimulatedImageMagic) + "x");
    CHECK(nvrtc_version(*api) == "13.0");
}

// ---------------------------------------------------------------- the real NVRTC

TEST_CASE("kernel cache: NVRTC that cannot be loaded is a one-line reason") {
    std::string why;
    CHECK_FALSE(load_nvrtc({"libnvrtc-shoal-test-absent.so.99"}, &why));
    CHECK(why.find("libnvrtc-shoal-test-absent.so.99 not found: ") == 0);
    CHECK(why.find('\n') == std::string::npos);
    // A library that opens but is no NVRTC.
    CHECK_FALSE(load_nvrtc({"libnvrtc-shoal-test-absent.so.99", "libm.so.6"}, &why));
    CHECK(why == "libm.so.6 lacks nvrtcCreateProgram (NVRTC too old?)");
}

TEST_CASE("kernel cache: a real NVRTC cubin is stored, reloaded, corrupted and rebuilt") {
    std::string why;
    const std::shared_ptr<const NvrtcApi> nvrtc = shared_real_nvrtc(&why);
    if (!nvrtc) {
        MESSAGE("skipped: " << why);
        return;
    }
    TempDir t("shoal-test-kernel-cache-");
    const std::vector<KernelSource> kernels = {
        {"scale",
         "extern \"C\" __global__ void scale(float* x, float a, int n) {\n"
         "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "    if (i < n) x[i] *= a;\n"
         "}\n",
         "x * a"},
    };
    KernelCompiler cold(nvrtc, disk_cache(t.dir));
    const auto first = cold.compile(kernels, "sm_90");
    REQUIRE(first.size() == 1);
    CHECK(first[0].from == KernelFrom::Compiled);
    CHECK(first[0].kind == ImageKind::Cubin);
    CHECK(first[0].image.compare(0, 4, "\x7f" "ELF") == 0);
    CHECK(first[0].ptxas.registers > 0);
    CHECK(first[0].ptxas.spill_store_bytes == 0);
    CHECK(first[0].ptxas.static_shared_bytes == 0);
    const fs::path entry = t.dir / (first[0].key + ".kernel");
    REQUIRE(fs::exists(entry));

    KernelCompiler reloaded(nvrtc, disk_cache(t.dir));
    const auto hit = reloaded.compile(kernels, "sm_90");
    CHECK(hit[0].from == KernelFrom::Disk);
    CHECK(hit[0].image == first[0].image);
    CHECK(hit[0].ptxas.registers == first[0].ptxas.registers);

    std::string bytes = read_bytes(entry);
    bytes[bytes.size() / 2] ^= 0x55;
    write_bytes(entry, bytes);
    KernelCompiler rebuilt(nvrtc, disk_cache(t.dir));
    const auto again = rebuilt.compile(kernels, "sm_90");
    CHECK(again[0].from == KernelFrom::Compiled);
    CHECK(again[0].image == first[0].image);  // NVRTC is deterministic
    const auto s = rebuilt.stats();
    CHECK(s.disk.corrupt == 1);
    CHECK(s.misses == 1);
    CHECK(KernelCompiler(nvrtc, disk_cache(t.dir)).compile(kernels, "sm_90")[0].from == KernelFrom::Disk);
    MESSAGE("NVRTC " << nvrtc_version(*nvrtc) << " compiled the cubin in " << first[0].seconds * 1000
                     << " ms, read it from disk in " << hit[0].seconds * 1000 << " ms");
}

#endif  // SHOAL_HAVE_NVRTC
