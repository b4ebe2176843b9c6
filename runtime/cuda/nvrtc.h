// Compiling generated CUDA C++ (codegen/cuda_printer.h) with NVRTC, the CUDA
// runtime compiler. Built only with the CUDA toolkit (SHOAL_HAVE_NVRTC); the
// header is harmless without it. No GPU is needed to compile: tests use this
// to check every generated kernel for sm_80 and sm_90 on any machine.
#pragma once
#include <string>
#include <vector>

namespace shoal::cuda {

struct NvrtcResult {
    bool ok = false;
    std::string log;  // NVRTC's diagnostics (warnings too); empty when clean
    std::string ptx;  // the PTX when ok
};

// Compiles `source` (one translation unit that needs no headers) for `arch`
// ("sm_80", "sm_90", ... as NVRTC's --gpu-architecture takes it) with
// Shoal's standard options (--std=c++17 -default-device) followed by
// `extra_options`. Compile errors do not throw: ok is false and they are in
// `log`. Thread safe (one NVRTC program per call). A typical kernel takes
// 50-100 ms, a large fused one a few hundred: cache the PTX by source text.
NvrtcResult compile_cuda(const std::string& source, const std::string& arch,
                         const std::vector<std::string>& extra_options = {});

// "13.0": the NVRTC library's version, for diagnostics and `:cuda`.
std::string nvrtc_version();

// `source` with 1-based line numbers, for printing a failed compilation.
std::string number_lines(const std::string& source);

}  // namespace shoal::cuda
