#include "runtime/cuda/nvrtc_target.h"

#include <algorithm>
#include <cctype>

#include "lang/diagnostics.h"

namespace shoal::cuda {

int parse_sm_arch(const std::string& arch) {
    const std::string digits = arch.size() > 3 && arch.compare(0, 3, "sm_") == 0 ? arch.substr(3) : "";
    const bool numeric = !digits.empty() && digits.size() <= 4 &&
                         std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); });
    if (!numeric)
        user_error(ErrorKind::Usage, Loc{}, "'" + arch + "' is not a GPU architecture",
                   {"architectures are written sm_XY, e.g. sm_80 or sm_90"});
    return std::stoi(digits);
}

std::vector<std::string> standard_options(const std::string& gpu_architecture) {
    // --fmad=false: NVRTC contracts a * b + c into one fused multiply-add by
    // default, which rounds once where the reference rounds twice (the fused
    // `b[1:] - b[:-1]` of squares differed on an H200); docs/semantics.md.
    return {"--gpu-architecture=" + gpu_architecture, "-default-device", "--std=c++17", "--fmad=false"};
}

NvrtcTarget choose_target(int device_arch, const std::vector<int>& supported) {
    NvrtcTarget target;
    if (std::find(supported.begin(), supported.end(), device_arch) != supported.end()) {
        target.kind = ImageKind::Cubin;
        target.gpu_architecture = "sm_" + std::to_string(device_arch);
        target.options = standard_options(target.gpu_architecture);
        // ptxas's report (registers, spills, shared memory) in the log, for :compile.
        target.options.push_back("--ptxas-options=--verbose");
        return target;
    }
    int best = -1;
    for (int a : supported)
        if (a <= device_arch) best = std::max(best, a);
    if (best < 0) {
        std::string known;
        for (int a : supported) known += (known.empty() ? "sm_" : ", sm_") + std::to_string(a);
        user_error(ErrorKind::Runtime, Loc{},
                   "NVRTC cannot compile for sm_" + std::to_string(device_arch) +
                       ": it supports no architecture at or below it",
                   {"this NVRTC supports " + (known.empty() ? std::string("no architecture") : known)});
    }
    target.kind = ImageKind::Ptx;
    target.gpu_architecture = "compute_" + std::to_string(best);
    target.options = standard_options(target.gpu_architecture);
    return target;
}

}  // namespace shoal::cuda
