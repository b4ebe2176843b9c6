// The printed CUDA compiled with the shim and launched (printed_kernels.h).
#include "runtime/cuda/printed/printed_kernels.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "lang/diagnostics.h"
#include "runtime/native/native_compiler.h"

namespace shoal::cuda {

namespace {

// The entry every unit's shared object exports (its launch table).
using Entry = int (*)(const char* kernel, unsigned grid, unsigned block, void** args, int order, unsigned long long seed,
                      double watchdog, unsigned char* stacks, char* error, unsigned long error_size);
// The fibers' stacks (cuda_shim.h's kStackBytes per CUDA thread of a block).
constexpr size_t kStackBytes = 64 * 1024;
constexpr const char* kEntry = "shoal_sim_launch";

std::atomic<int64_t> g_units{0}, g_launches{0}, g_compiles{0}, g_hits{0};
std::atomic<int64_t> g_compile_micros{0};

// The system compiler with the flags host C++ from CUDA needs: no -march
// (nothing is vectorised that matters), -O1 (the build dominates: a unit
// runs briefly), no fused multiply-add (the GPU's --fmad=false, the other
// executors' bits), the C library left to the process (-nostdlib, as the
// native tier; -lm binds the math functions' current versions).
native::NativeCompiler& printed_compiler() {
    static native::NativeCompiler compiler = [] {
        native::Toolchain t = native::system_toolchain();
        if (t.why_not.empty()) {
            t.flags = {"-std=c++20", "-O1", "-fPIC", "-shared", "-fno-math-errno", "-ffp-contract=off",
                       "-fno-exceptions", "-fno-rtti", "-fno-gnu-unique", "-nostdlib", "-w"};
            t.libraries = {"-lm"};
            t.identity += " | printed CUDA";  // apart from the native tier's entries
        }
        std::string why_not;
        const std::filesystem::path dir = cache::KernelDiskCache::default_directory(&why_not);
        auto disk = dir.empty() ? nullptr
                                : std::make_shared<cache::KernelDiskCache>(dir, cache::KernelDiskCache::kDefaultMaxBytes, why_not);
        return native::NativeCompiler(t, disk);
    }();
    return compiler;
}

}  // namespace

SimulatedKernels simulated_kernels_from_env() {
    const char* v = std::getenv("SHOAL_SIMULATED_KERNELS");
    if (!v || !*v || std::strcmp(v, "ir") == 0) return SimulatedKernels::Ir;
    if (std::strcmp(v, "printed") == 0) return SimulatedKernels::Printed;
    internal_error(__FILE__, __LINE__,
                   std::string("SHOAL_SIMULATED_KERNELS must be `ir` or `printed`, not `") + v + "`");
}

PrintedLaunchOptions printed_launch_options_from_env() {
    PrintedLaunchOptions o;
    const char* v = std::getenv("SHOAL_SIMULATED_ORDER");
    if (!v || !*v) return o;
    const std::string s = v;
    if (s == "forward") return o;
    if (s == "reverse") {
        o.order = 1;
        return o;
    }
    if (s == "random" || s.rfind("random:", 0) == 0) {
        o.order = 2;
        if (s.size() > 7) {
            char* end = nullptr;
            o.seed = std::strtoull(s.c_str() + 7, &end, 10);
            if (*end) internal_error(__FILE__, __LINE__, "SHOAL_SIMULATED_ORDER: `" + s + "` has a malformed seed");
        }
        return o;
    }
    internal_error(__FILE__, __LINE__, "SHOAL_SIMULATED_ORDER must be forward, reverse or random[:seed], not `" + s + "`");
}

std::string printed_unit_source(const std::string& cuda, const std::vector<std::string>& kernels) {
    std::string out = cuda_shim_text();
    out += "\n// The unit's entry functions, renamed.\n";
    for (const std::string& k : kernels) out += "#define " + k + " shoal_k_" + k + "\n";
    out += "#line 1 \"shoal_kernels.cu\"\n";
    out += cuda;
    out += "\n#line 1 \"shoal_sim_launch\"\n"
           "extern \"C\" __attribute__((visibility(\"default\"))) int shoal_sim_launch(const char* kernel, unsigned grid,\n"
           "        unsigned block, void** args, int order, unsigned long long seed, double watchdog, unsigned char* stacks,\n"
           "        char* error, unsigned long error_size) {\n"
           "    ::shoal_sim::Options o;\n"
           "    o.order = order;\n"
           "    o.seed = seed;\n"
           "    o.watchdog_seconds = watchdog;\n"
           "    o.stacks = stacks;\n";
    for (const std::string& k : kernels)
        out += "    if (!strcmp(kernel, \"" + k + "\")) return ::shoal_sim::launch(\"" + k + "\", shoal_k_" + k +
               ", grid, block, args, o, error, error_size);\n";
    out += "    snprintf(error, error_size, \"no kernel %s in this unit\", kernel);\n"
           "    return 2;\n"
           "}\n";
    return out;
}

std::shared_ptr<const PrintedUnit> compile_printed_unit(const std::string& cuda, const std::vector<std::string>& kernels,
                                                        std::string* error) {
    native::NativeBuild b = printed_compiler().build(printed_unit_source(cuda, kernels));
    if (!b.module) {
        *error = b.error;
        return nullptr;
    }
    ++g_units;
    ++(b.cache_hit ? g_hits : g_compiles);
    g_compile_micros += static_cast<int64_t>(b.compile_seconds * 1e6);
    void* entry = b.module->symbol(kEntry);
    if (!entry) {
        *error = std::string("the compiled unit has no ") + kEntry;
        return nullptr;
    }
    return std::make_shared<const PrintedUnit>(std::move(b.module), entry);
}

std::string PrintedUnit::launch(const std::string& kernel, unsigned grid, unsigned block, void** args,
                                const PrintedLaunchOptions& options) const {
    ++g_launches;
    // One pool of stacks per launching thread, grown to the largest block.
    thread_local std::unique_ptr<unsigned char[]> stacks;
    thread_local unsigned stack_count = 0;
    if (block > stack_count) {
        stacks.reset(new unsigned char[size_t(block) * kStackBytes]);
        stack_count = block;
    }
    char error[1024] = "";
    const int status = reinterpret_cast<Entry>(entry_)(kernel.c_str(), grid, block, args, options.order, options.seed,
                                                       options.watchdog_seconds, stacks.get(), error, sizeof error);
    if (status == 0) return "";
    return error[0] ? error : "the printed kernel " + kernel + " failed";
}

PrintedStats printed_stats() {
    return {g_units.load(), g_launches.load(), g_compiles.load(), g_hits.load(), g_compile_micros.load() * 1e-6};
}

}  // namespace shoal::cuda
