// A simulated NVRTC for the tests of the CUDA backend without a GPU: the
// same table as the real one (nvrtc.h), but a "compile" is instant and its
// image is "SHOALSIM\n" followed by the source, which a simulated device
// recognises (a real driver would reject it). Options are checked the way
// Shoal uses them: --gpu-architecture must name an architecture the
// simulated NVRTC supports, and a CUBIN exists only for a real one (sm_XY).
// With --ptxas-options=--verbose the log carries a ptxas report for each
// entry function, as the real one's does.
#pragma once
#ifdef SHOAL_HAVE_NVRTC
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/nvrtc.h"

namespace shoal::cuda {

inline constexpr const char* kSimulatedImageMagic = "SHOALSIM\n";

struct SimulatedNvrtcOptions {
    int version_major = 13;
    int version_minor = 0;
    std::vector<int> supported_archs = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
    int registers = 32;  // what the fake ptxas report says for every kernel

    // Fault injection: the compile_failure_at-th compile (1-based, counted
    // over the table's life; 0: never) fails, and so does every compile of a
    // source containing fail_sources_containing (when not empty: the
    // deterministic choice when kernels compile in parallel). A failed
    // compile returns NVRTC_ERROR_COMPILATION with failure_log as its log.
    int compile_failure_at = 0;
    std::string fail_sources_containing;
    std::string failure_log = "shoal_kernels.cu(1): error: simulated NVRTC failure";
    // Each compile takes at least this long (a slow compile, for Ctrl-C).
    double compile_seconds = 0;
};

std::shared_ptr<NvrtcApi> simulated_nvrtc(SimulatedNvrtcOptions options = {});

}  // namespace shoal::cuda
#endif  // SHOAL_HAVE_NVRTC
