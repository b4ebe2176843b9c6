// The GPUs `:profile` estimates for (`:set gpu`), and the roofline estimate.
#include "profile.h"

#include <algorithm>
#include <cstdio>

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

namespace {

std::string ms_text(double seconds) {
    char b[32];
    std::snprintf(b, sizeof b, seconds < 0.01 ? "%.2f ms" : "%.1f ms", seconds * 1e3);
    return b;
}

}  // namespace

std::vector<std::string> performance_advice(const ProfileReport& report, double busy_seconds) {
    std::vector<std::string> advice;
    double device_seconds = 0;
    for (const KernelProfile& k : report.kernels) device_seconds += static_cast<double>(k.nanoseconds) * 1e-9;
    for (const LibraryCallProfile& c : report.calls) device_seconds += static_cast<double>(c.nanoseconds) * 1e-9;
    // Many small plans: the host's lowering, launching and allocating dominate.
    // A loop whose steps only run plans is replayed (docs/compiler.md): say why one was not.
    if (report.plans_run >= 20 && busy_seconds > 0.002 && device_seconds < 0.3 * busy_seconds)
        advice.push_back(std::to_string(report.plans_run) + " plans ran and " + ms_text(busy_seconds - device_seconds) +
                         " of " + ms_text(busy_seconds) +
                         " went outside kernels (each small array operation is lowered, launched and given memory "
                         "on the host)" +
                         (report.loop_not_replayed.empty()
                              ? std::string()
                              : "; a loop's steps were evaluated one by one, not replayed, because " +
                                    report.loop_not_replayed + " (a step that only computes arrays from arrays is replayed)") +
                         ": do the loop's work as whole-array operations, so that fewer, larger kernels "
                         "do it (a 2-D `generate`, a reduction over rows instead of a loop over them)");
    for (const KernelProfile& k : report.kernels) {
        const double seconds = static_cast<double>(k.nanoseconds) * 1e-9;
        const std::string name = k.plan == k.kernel ? k.kernel : k.plan + " / " + k.kernel;
        // Few blocks for long: most of the machine idle. Not for a kernel
        // whose data is small (under 64 KiB, when :profile knows it): more
        // blocks would not help it, and a slow or busy machine (a sanitizer
        // build) can make such a kernel take over a millisecond.
        const bool small = k.minimum_bytes > 0 && k.minimum_bytes < (int64_t{64} << 10);
        if (report.parallel_units > 1 && k.grid > 0 && k.grid * 2 <= report.parallel_units && seconds > 0.001 &&
            seconds > 0.2 * busy_seconds && !small) {
            std::string fix = k.plan == "matmul"
                                  ? "a product of these extents is faster through the BLAS (`:set blas on`) or with its "
                                    "long axis outermost"
                              : k.kernel.find("reduce") != std::string::npos || k.plan == "sum" || k.plan == "maximum" ||
                                        k.plan == "minimum" || k.plan == "argmin" || k.plan == "argmax"
                                  ? "a reduction over a few long rows: reduce the flattened array (`sum (flatten m)`), "
                                    "or lay the data out with many rows"
                                  : "give the computation more rows or elements side by side (one block walks each)";
            advice.push_back("`" + name + "` ran " + std::to_string(k.grid) + (k.grid == 1 ? " block" : " blocks") +
                             " for " + ms_text(seconds) + ", using " + std::to_string(k.grid) + " of " +
                             std::to_string(report.parallel_units) + " " + report.unit_name + "s: " + fix);
        }
        // Far more traffic than the kernel needs: re-reads or recomputation.
        const int64_t loaded = k.global_bytes_loaded;
        if (report.traffic_counted && k.minimum_bytes > 0 && loaded > 8 * k.minimum_bytes && loaded > (int64_t{1} << 20)) {
            const double ratio = static_cast<double>(loaded) / static_cast<double>(k.minimum_bytes);
            char r[32];
            std::snprintf(r, sizeof r, "%.0fx", ratio);
            advice.push_back("`" + name + "` loaded " + r +
                             " the bytes it needs: an array is read again (or a fused expression computed again) for "
                             "every output element; for a matrix product write `a @ b`, otherwise bind the shared part "
                             "with `let` so that it is computed once");
        }
    }
    return advice;
}

}  // namespace shoal
