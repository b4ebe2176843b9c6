#include "runtime/cuda/kernel_toolchain.h"

#include <algorithm>
#include <cstdio>

#include "codegen/cuda_printer.h"
#include "lang/value.h"

namespace shoal::cuda {

namespace {

// Per-SM limits of a compute capability (CUDA C++ Programming Guide,
// "Technical Specifications per Compute Capability").
struct SmLimits {
    int threads;        // resident threads
    int blocks;         // resident blocks
    int shared_bytes;   // shared memory per SM usable by blocks
    int reserved;       // shared memory the system reserves per block
};

SmLimits limits_of(int sm) {
    constexpr int KiB = 1024;
    if (sm >= 120) return {1536, 32, 100 * KiB, KiB};
    if (sm >= 100) return {2048, 32, 228 * KiB, KiB};
    if (sm >= 90) return {2048, 32, 228 * KiB, KiB};
    if (sm == 89) return {1536, 24, 100 * KiB, KiB};
    if (sm == 87) return {2048, 32, 164 * KiB, KiB};
    if (sm == 86 || sm == 88) return {1536, 16, 100 * KiB, KiB};
    if (sm >= 80) return {2048, 32, 164 * KiB, KiB};
    if (sm == 75) return {1024, 16, 64 * KiB, 0};
    return {2048, 32, 96 * KiB, 0};
}

std::string milliseconds(double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", seconds * 1e3);
    return buf;
}

class Toolchain final : public ir::KernelToolchain {
public:
    explicit Toolchain(std::shared_ptr<KernelCompiler> compiler) : compiler_(std::move(compiler)) {}

    std::string compile_report(const std::vector<ir::Kernel>& kernels, const std::vector<ir::Kernel>& shown,
                               const std::string& arch) override {
        const int sm = parse_sm_arch(arch);
        std::vector<KernelSource> sources;
        for (size_t i = 0; i < kernels.size(); ++i)
            sources.push_back({kernels[i].name, ir::print_cuda_for_device({kernels[i]}), shown[i].comment});
        const std::vector<CompiledKernel> compiled = compiler_->compile(sources, arch);
        std::string out = compiler_->compiler_id() + ", " + std::to_string(kernels.size()) + " kernel" +
                          (kernels.size() == 1 ? "" : "s") + " for " + arch;
        for (size_t i = 0; i < kernels.size(); ++i) {
            const ir::Kernel& k = shown[i];
            const CompiledKernel& c = compiled[i];
            out += "\n\n" + k.name + ": " +
                   (c.from == KernelFrom::Compiled ? "compiled in " + milliseconds(c.seconds)
                                                   : std::string(kernel_from_name(c.from)) + " hit") +
                   " (" + (c.kind == ImageKind::Cubin ? "CUBIN for " : "PTX for ") + c.gpu_architecture + ")";
            if (!k.comment.empty()) out += "\n  " + k.comment;
            out += "\n  " + describe(c.ptxas) + ", 0 B dynamic shared";
            if (!c.ptxas.known()) continue;
            const int shared = c.ptxas.static_shared_bytes >= 0 ? c.ptxas.static_shared_bytes
                                                                 : static_cast<int>(ir::shared_bytes(k));
            const Occupancy o = occupancy(sm, k.block_size, c.ptxas.registers, shared);
            out += "\n  occupancy on " + arch + ": " + std::to_string(o.blocks_per_sm) + " block" +
                   (o.blocks_per_sm == 1 ? "" : "s") + " of " + std::to_string(k.block_size) + " threads per SM, " +
                   std::to_string(o.percent) + "% (limited by " + o.limited_by + ")";
        }
        return out;
    }

    std::vector<ir::KernelResources> resources(const std::vector<ir::Kernel>& kernels, const std::string& arch) override {
        const int sm = parse_sm_arch(arch);
        std::vector<KernelSource> sources;
        for (const ir::Kernel& k : kernels) sources.push_back({k.name, ir::print_cuda_for_device({k}), k.comment});
        const std::vector<CompiledKernel> compiled = compiler_->compile(sources, arch);
        std::vector<ir::KernelResources> out;
        for (size_t i = 0; i < kernels.size(); ++i) {
            const PtxasInfo& p = compiled[i].ptxas;
            ir::KernelResources r;
            if (!p.known()) {
                r.note = "no ptxas report (" + std::string(compiled[i].kind == ImageKind::Cubin ? "CUBIN" : "PTX") + ")";
            } else {
                r.registers = p.registers;
                r.spill_bytes = std::max(p.spill_store_bytes, 0) + std::max(p.spill_load_bytes, 0);
                const int shared = p.static_shared_bytes >= 0 ? p.static_shared_bytes : static_cast<int>(ir::shared_bytes(kernels[i]));
                r.occupancy_percent = occupancy(sm, kernels[i].block_size, p.registers, shared).percent;
            }
            out.push_back(std::move(r));
        }
        return out;
    }

    std::string cache_report() const override {
        const KernelCompiler::Stats s = compiler_->stats();
        std::string out = compiler_->compiler_id() + " kernel cache\n  this process: " + std::to_string(s.misses) +
                          " compiled (" + milliseconds(s.compile_seconds) + " of NVRTC), " +
                          std::to_string(s.disk_hits) + " disk hits, " + std::to_string(s.memory_hits) +
                          " memory hits; " + std::to_string(s.memory_entries) + " kernels in memory (at most " +
                          std::to_string(s.memory_capacity) + ")";
        if (!s.has_disk) return out + "\n  no disk cache";
        out += "\n  on disk: " + std::to_string(s.disk.entries) + " entries, " +
               human_bytes(static_cast<int64_t>(s.disk.bytes)) + " (at most " +
               human_bytes(static_cast<int64_t>(compiler_->disk_max_bytes())) + ")";
        if (s.disk.corrupt) out += "; " + std::to_string(s.disk.corrupt) + " corrupt entries rebuilt";
        if (!s.disk_problem.empty()) out += "\n  not storing: " + s.disk_problem;
        return out;
    }

    std::string clear_cache() override {
        const KernelCompiler::Stats s = compiler_->stats();
        compiler_->clear();
        return "kernel cache cleared: " + std::to_string(s.memory_entries) + " kernels in memory" +
               (s.has_disk ? ", " + std::to_string(s.disk.entries) + " entries on disk" : "");
    }

private:
    std::shared_ptr<KernelCompiler> compiler_;
};

}  // namespace

Occupancy occupancy(int sm, int block_size, int registers, int shared_bytes) {
    const SmLimits l = limits_of(sm);
    Occupancy o;
    auto limit = [&o](int blocks, const char* why) {
        if (blocks < o.blocks_per_sm) {
            o.blocks_per_sm = blocks;
            o.limited_by = why;
        }
    };
    o.blocks_per_sm = l.blocks;
    o.limited_by = "blocks per SM";
    limit(l.threads / block_size, "threads per SM");
    if (registers >= 0) {
        // Registers are allocated per warp in units of 256 (8 per thread).
        const int warps = (block_size + 31) / 32;
        const int per_warp = (std::max(registers, 1) * 32 + 255) / 256 * 256;
        limit(65536 / per_warp / warps, "registers");
    }
    limit(l.shared_bytes / (shared_bytes + l.reserved), "shared memory");
    o.percent = o.blocks_per_sm * block_size * 100 / l.threads;
    return o;
}

std::shared_ptr<ir::KernelToolchain> make_kernel_toolchain(std::shared_ptr<KernelCompiler> compiler) {
    return std::make_shared<Toolchain>(std::move(compiler));
}

}  // namespace shoal::cuda
