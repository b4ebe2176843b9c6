// What to ask NVRTC for, for a device: a CUBIN for the device's own
// architecture when this NVRTC knows it, otherwise PTX for the highest
// virtual architecture it knows not above the device's (the driver then
// compiles the PTX for the device when it loads it). Plus the options every
// Shoal kernel is compiled with.
#pragma once
#include <string>
#include <vector>

#include "runtime/cuda/nvrtc.h"

namespace shoal::cuda {

struct NvrtcTarget {
    ImageKind kind = ImageKind::Cubin;
    std::string gpu_architecture;      // "sm_90" for a CUBIN, "compute_89" for PTX
    std::vector<std::string> options;  // everything NVRTC is given, in order
};

// "sm_90" -> 90. Anything else throws a UsageError naming the expected form.
int parse_sm_arch(const std::string& arch);

// The target for a device of architecture `device_arch` (90 for sm_90),
// given the real architectures NVRTC supports (ascending). Throws a
// RuntimeError when NVRTC supports none at or below the device's.
NvrtcTarget choose_target(int device_arch, const std::vector<int>& supported);

// --gpu-architecture=<arch>, -default-device, --std=c++17: what every Shoal
// kernel needs (its helpers are device functions without __device__).
std::vector<std::string> standard_options(const std::string& gpu_architecture);

}  // namespace shoal::cuda
