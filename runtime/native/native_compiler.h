// Compile, cache, load: C++ text -> a shared object built by the system C++
// compiler, kept in the kernel disk cache (runtime/cache/), loaded with
// dlopen. The CPU executor's native tier uses it for a plan's kernels
// (codegen/cpu_printer.h); the simulated CUDA device will use it for the
// printed CUDA text compiled as host C++.
//
// - Compiler: $SHOAL_CXX, else `c++`, else `g++`; probed once (its
//   `--version`), with the CPU's model and feature flags for the cache key
//   (an object built with -march=native must never load on another CPU).
// - Cache: the key is SHA-256 over the source, every flag, the CPU and the
//   compiler's identity. An entry is loaded only from a private directory
//   (KernelDiskCache::private_problem); a corrupt, truncated or foreign entry
//   is a miss and rebuilt. Two processes may share the directory.
// - Loading: the image is copied to an anonymous memory file (memfd) and
//   dlopen'ed from there, so what runs is exactly the bytes that were
//   checked, whatever happens to the cache file afterwards.
// - Failures (no compiler, a compile error, dlopen refusing) are results
//   with the reason, never exceptions: the caller keeps interpreting.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/cache/kernel_cache.h"

namespace shoal::native {

// The system C++ compiler and the machine it compiles for.
struct Toolchain {
    std::string compiler;  // what is run ("c++", "/usr/bin/g++-12")
    std::string identity;  // the first line of its --version
    std::string cpu;       // model name and feature flags (/proc/cpuinfo)
    std::vector<std::string> flags;
    std::vector<std::string> libraries;  // after the source ("-lm")
    std::string why_not;   // non-empty: no usable compiler (then the rest is empty)
    // Whether `compiler` is GCC (clang refuses or ignores GCC's own flags,
    // and has no unique symbols to switch off).
    bool is_gcc() const;
    // The GCC-only flags (-fno-gnu-unique, -fvect-cost-model) for `compiler`: none for clang.
    std::vector<std::string> gcc_only_flags() const;
};

// Probed on first use ($SHOAL_CXX is read then).
const Toolchain& system_toolchain();
// Probes $SHOAL_CXX (else c++, else g++) now.
Toolchain probe_toolchain();

// A loaded shared object; dlclose'd with its last reference. It keeps the
// memory file it was loaded from open until then: dlopen knows a loaded
// object by its path (/proc/self/fd/N), so N must not name another object
// while this one is loaded.
class NativeModule {
public:
    NativeModule(void* handle, int fd) : handle_(handle), fd_(fd) {}
    ~NativeModule();
    NativeModule(const NativeModule&) = delete;
    NativeModule& operator=(const NativeModule&) = delete;
    // The address of an exported symbol, or null.
    void* symbol(const std::string& name) const;

private:
    void* handle_;
    int fd_;
};

struct NativeBuild {
    std::shared_ptr<NativeModule> module;  // null on failure
    std::string error;                     // why there is no module (compiler output, dlopen's message)
    bool cache_hit = false;
    double compile_seconds = 0;            // the compiler's wall time (0 on a hit)
    double load_seconds = 0;               // cache read + dlopen
    size_t image_bytes = 0;
};

class NativeCompiler {
public:
    // `disk` may be null (no disk cache: every build compiles).
    NativeCompiler(const Toolchain& toolchain, std::shared_ptr<cache::KernelDiskCache> disk);

    // Builds (or finds) and loads `source`. Thread safe; builds run in
    // parallel.
    NativeBuild build(const std::string& source);

    const Toolchain& toolchain() const { return toolchain_; }
    // Why entries are neither loaded from nor stored to disk (a shared or
    // foreign directory), or "".
    const std::string& disk_problem() const { return disk_problem_; }

    struct Stats {
        uint64_t compiles = 0, compile_failures = 0, hits = 0;
        double compile_seconds = 0;
    };
    Stats stats() const;

private:
    Toolchain toolchain_;
    std::shared_ptr<cache::KernelDiskCache> disk_;
    std::string disk_problem_;
    mutable std::mutex mutex_;
    Stats stats_;
};

// The process's compiler over the default kernel cache directory (or
// SHOAL_CACHE_DIR), made on first use.
NativeCompiler& shared_native_compiler();
// The kernel cache in the default directory (or SHOAL_CACHE_DIR); null where
// there is none.
std::shared_ptr<cache::KernelDiskCache> default_disk_cache();

}  // namespace shoal::native
