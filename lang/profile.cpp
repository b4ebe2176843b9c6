// The GPUs `:profile` estimates for (`:set gpu`), and the roofline estimate.
#include "profile.h"

#include <algorithm>

namespace shoal {

const std::vector<GpuModel>& gpu_models() {
    // Datasheet peaks: HBM bandwidth, FP32 and FP64 without tensor cores.
    static const std::vector<GpuModel> models = {
        {"h100", "NVIDIA H100 SXM", 3.35e12, 67e12, 34e12},
        {"h200", "NVIDIA H200 SXM", 4.8e12, 67e12, 34e12},
        {"a100", "NVIDIA A100 SXM (80 GB)", 2.0e12, 19.5e12, 9.7e12},
    };
    return models;
}

const GpuModel* find_gpu_model(const std::string& name) {
    for (const GpuModel& g : gpu_models())
        if (name == g.name) return &g;
    return nullptr;
}

double roofline_seconds(const KernelProfile& k, const GpuModel& gpu) {
    const double bytes = static_cast<double>(k.global_bytes_loaded + k.global_bytes_stored);
    const double peak = k.double_precision ? gpu.fp64_per_second : gpu.fp32_per_second;
    return std::max(bytes / gpu.bytes_per_second, static_cast<double>(k.flops) / peak);
}

}  // namespace shoal
