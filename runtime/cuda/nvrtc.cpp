#include "runtime/cuda/nvrtc.h"

#include <cstdio>
#include <memory>
#include <sstream>

#ifdef SHOAL_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace shoal::cuda {

std::string number_lines(const std::string& source) {
    std::istringstream in(source);
    std::string out;
    int n = 0;
    char num[16];
    for (std::string line; std::getline(in, line);) {
        std::snprintf(num, sizeof num, "%4d | ", ++n);
        out += num + line + "\n";
    }
    return out;
}

#ifdef SHOAL_HAVE_NVRTC

namespace {

struct ProgramDeleter {
    void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};
using Program = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

std::string program_log(nvrtcProgram p) {
    size_t size = 0;
    if (nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size <= 1) return "";
    std::string log(size, '\0');
    nvrtcGetProgramLog(p, log.data());
    log.resize(size - 1);  // drop the terminating NUL
    return log;
}

std::string program_ptx(nvrtcProgram p) {
    size_t size = 0;
    if (nvrtcGetPTXSize(p, &size) != NVRTC_SUCCESS || size <= 1) return "";
    std::string ptx(size, '\0');
    nvrtcGetPTX(p, ptx.data());
    ptx.resize(size - 1);
    return ptx;
}

}  // namespace

NvrtcResult compile_cuda(const std::string& source, const std::string& arch,
                         const std::vector<std::string>& extra_options) {
    NvrtcResult result;
    nvrtcProgram raw = nullptr;
    nvrtcResult rc = nvrtcCreateProgram(&raw, source.c_str(), "shoal_kernels.cu", 0, nullptr, nullptr);
    if (rc != NVRTC_SUCCESS) {
        result.log = std::string("nvrtcCreateProgram failed: ") + nvrtcGetErrorString(rc);
        return result;
    }
    Program program(raw);
    // -default-device: the helpers need no __device__ of their own to be
    // callable; --std=c++17 is what every supported NVRTC accepts.
    std::vector<std::string> options = {"--gpu-architecture=" + arch, "-default-device", "--std=c++17"};
    options.insert(options.end(), extra_options.begin(), extra_options.end());
    std::vector<const char*> argv;
    for (const auto& o : options) argv.push_back(o.c_str());
    rc = nvrtcCompileProgram(raw, static_cast<int>(argv.size()), argv.data());
    result.log = program_log(raw);
    if (rc != NVRTC_SUCCESS) {
        if (result.log.empty()) result.log = std::string("nvrtcCompileProgram failed: ") + nvrtcGetErrorString(rc);
        return result;
    }
    result.ptx = program_ptx(raw);
    result.ok = !result.ptx.empty();
    if (!result.ok) result.log += "NVRTC produced no PTX";
    return result;
}

std::string nvrtc_version() {
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
    return std::to_string(major) + "." + std::to_string(minor);
}

#else  // no CUDA toolkit: a clear answer instead of a link error

NvrtcResult compile_cuda(const std::string&, const std::string&, const std::vector<std::string>&) {
    return NvrtcResult{false, "Shoal was built without the CUDA toolkit (no NVRTC)", ""};
}

std::string nvrtc_version() { return "none"; }

#endif

}  // namespace shoal::cuda
