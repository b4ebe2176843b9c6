// Kernels to device images: the compile side of the CUDA backend. A
// statement's kernels go through an in-memory cache (key -> image), then the
// disk cache (kernel_cache.h), and the misses compile in parallel, one NVRTC
// program per kernel on its own thread (up to one per core): a cold
// statement costs about its slowest kernel, not the sum.
//
// The target: a CUBIN for the device's architecture when NVRTC supports it,
// else PTX for the highest virtual architecture below (nvrtc_target.h). A
// CUBIN's NVRTC log carries ptxas's report (registers, spills, shared
// memory), parsed for `:compile` and kept in the cache with the image.
//
// An NVRTC failure is a bug in Shoal: compile() throws an InternalError that
// names the kernel and its source expression, with NVRTC's log and the
// numbered source; the compiler stays usable (the other kernels of the
// statement are cached as usual).
#pragma once
#ifdef SHOAL_HAVE_NVRTC
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lang/lru_map.h"
#include "runtime/cache/kernel_cache.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/cuda/nvrtc_target.h"
#include "runtime/cuda/ptxas_info.h"

namespace shoal::cuda {

// The disk cache is shared with the CPU executor's native tier (runtime/cache/).
using cache::CachedKernel;
using cache::kernel_cache_key;
using cache::KernelDiskCache;
using cache::Sha256Digest;
using cache::to_hex;

struct KernelSource {
    std::string name;    // the extern "C" entry function (codegen's Kernel::name)
    std::string source;  // a complete translation unit (ir::print_cuda)
    std::string origin;  // the Shoal source expression, for messages (Kernel::comment)
};

enum class KernelFrom { Memory, Disk, Compiled };
const char* kernel_from_name(KernelFrom from);  // "memory cache", "disk cache", "compiled"

struct CompiledKernel {
    std::string name;
    std::string key;               // hex SHA-256: equal keys, equal images (for the loaded-module map)
    ImageKind kind = ImageKind::Cubin;
    std::string gpu_architecture;  // "sm_90", or "compute_89" for PTX
    std::string image;             // what cudaLibraryLoadData takes
    KernelFrom from = KernelFrom::Compiled;
    double seconds = 0;            // NVRTC's time when compiled, reading the entry when from disk, else 0
    PtxasInfo ptxas;               // unknown (-1) for PTX
    std::string log;               // NVRTC's log (warnings, ptxas report)
};

class KernelCompiler {
public:
    // `disk` may be null (no disk cache).
    KernelCompiler(std::shared_ptr<const NvrtcApi> nvrtc, std::shared_ptr<KernelDiskCache> disk,
                   std::vector<std::string> extra_options = {});

    // The kernels compiled for a device of architecture `arch` ("sm_90"),
    // in the order given. Thread safe.
    std::vector<CompiledKernel> compile(const std::vector<KernelSource>& kernels, const std::string& arch);

    // What compile() asks NVRTC for on `arch`.
    NvrtcTarget target_for(const std::string& arch) const;

    struct Stats {
        size_t memory_entries = 0;
        size_t memory_capacity = 0;
        uint64_t memory_hits = 0;
        uint64_t disk_hits = 0;
        uint64_t misses = 0;          // compiled
        double compile_seconds = 0;   // NVRTC's time, all misses together
        bool has_disk = false;
        KernelDiskCache::Stats disk;  // when has_disk
        std::string disk_problem;     // why the disk cache is not storing, or ""
    };
    Stats stats() const;
    // The hits, misses and compile time alone, without the disk cache's
    // directory scan: cheap enough for every statement (`:time`).
    Stats counters() const;

    static constexpr size_t kMemoryCapacity = 1024;

    // Empties the memory cache and the disk cache.
    void clear();

    const NvrtcApi& nvrtc() const { return *nvrtc_; }
    uint64_t disk_max_bytes() const { return disk_ ? disk_->max_bytes() : 0; }
    const std::string& compiler_id() const { return compiler_id_; }  // "NVRTC 13.0"

private:
    struct Job;
    void run_job(Job& job) const;

    const std::shared_ptr<const NvrtcApi> nvrtc_;
    const std::shared_ptr<KernelDiskCache> disk_;
    const std::vector<std::string> extra_options_;
    const std::string compiler_id_;
    const std::vector<int> supported_archs_;

    mutable std::mutex mutex_;  // guards what follows
    // By hex key; the least recently used image goes beyond the cap (a
    // launched kernel stays loaded in its executor regardless).
    LruMap<std::string, std::shared_ptr<const CachedKernel>> memory_{kMemoryCapacity};
    Stats counts_;
};

}  // namespace shoal::cuda
#endif  // SHOAL_HAVE_NVRTC
