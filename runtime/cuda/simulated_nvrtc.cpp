#include "runtime/cuda/simulated_nvrtc.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstring>
#include <thread>

namespace shoal::cuda {

namespace {

struct SimulatedProgram {
    std::string source;
    std::string log;
    std::string image;
    bool compiled = false;
    bool real_arch = false;  // sm_XY: a CUBIN exists
};

SimulatedProgram* program_of(nvrtcProgram p) { return reinterpret_cast<SimulatedProgram*>(p); }

struct State {
    explicit State(SimulatedNvrtcOptions o) : options(std::move(o)) {}
    SimulatedNvrtcOptions options;
    std::atomic<int> compiles{0};
};

// The names of the __global__ functions of `source` (extern "C" kernels as
// the CUDA printer writes them: `__global__ void [__launch_bounds__(..)] name(`).
std::vector<std::string> entry_functions(const std::string& source) {
    std::vector<std::string> names;
    auto skip_space = [&](size_t i) {
        while (i < source.size() && std::isspace(static_cast<unsigned char>(source[i]))) ++i;
        return i;
    };
    for (size_t at = source.find("__global__"); at != std::string::npos; at = source.find("__global__", at + 1)) {
        size_t i = skip_space(at + std::strlen("__global__"));
        if (source.compare(i, 4, "void") != 0) continue;
        i = skip_space(i + 4);
        if (source.compare(i, 17, "__launch_bounds__") == 0) {
            i = source.find(')', i);
            if (i == std::string::npos) break;
            i = skip_space(i + 1);
        }
        size_t end = i;
        while (end < source.size() && (std::isalnum(static_cast<unsigned char>(source[end])) || source[end] == '_')) ++end;
        if (end > i) names.push_back(source.substr(i, end - i));
    }
    return names;
}

std::string fake_ptxas_report(const std::string& source, const std::string& arch, int registers) {
    std::string log;
    for (const std::string& name : entry_functions(source)) {
        log += "ptxas info    : Compiling entry function '" + name + "' for '" + arch + "'\n";
        log += "ptxas info    : Function properties for " + name + "\n";
        log += "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
        log += "ptxas info    : Used " + std::to_string(registers) + " registers, used 0 barriers\n";
    }
    return log;
}

nvrtcResult compile(State& state, SimulatedProgram& program, int num_options, const char* const* options) {
    program.log.clear();
    std::string arch;
    bool verbose_ptxas = false;
    for (int i = 0; i < num_options; ++i) {
        const std::string option = options[i] ? options[i] : "";
        if (option.empty() || option[0] != '-') {
            program.log = "nvrtc: error: invalid option '" + option + "'";
            return NVRTC_ERROR_INVALID_OPTION;
        }
        if (option.rfind("--gpu-architecture=", 0) == 0) arch = option.substr(std::strlen("--gpu-architecture="));
        if (option == "--ptxas-options=--verbose" || option == "--ptxas-options=-v") verbose_ptxas = true;
    }
    const bool real = arch.rfind("sm_", 0) == 0;
    const std::string digits = real ? arch.substr(3) : arch.rfind("compute_", 0) == 0 ? arch.substr(8) : "";
    const auto& supported = state.options.supported_archs;
    const bool known = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }) &&
                       std::find(supported.begin(), supported.end(), std::stoi(digits)) != supported.end();
    if (!known) {
        program.log = "nvrtc: error: invalid value for --gpu-architecture (-arch): '" + arch + "'";
        return NVRTC_ERROR_INVALID_OPTION;
    }
    const int nth = ++state.compiles;
    if (state.options.compile_seconds > 0)
        std::this_thread::sleep_for(std::chrono::duration<double>(state.options.compile_seconds));
    const std::string& marker = state.options.fail_sources_containing;
    if (nth == state.options.compile_failure_at || (!marker.empty() && program.source.find(marker) != std::string::npos)) {
        program.log = state.options.failure_log;
        return NVRTC_ERROR_COMPILATION;
    }
    program.compiled = true;
    program.real_arch = real;
    program.image = kSimulatedImageMagic + program.source;
    if (verbose_ptxas && real) program.log = fake_ptxas_report(program.source, arch, state.options.registers);
    return NVRTC_SUCCESS;
}

// NVRTC's size-then-fill pairs; `text` counts and writes a final NUL.
nvrtcResult size_of(const std::string& bytes, bool available, bool text, size_t* size) {
    if (!available) return NVRTC_ERROR_INVALID_PROGRAM;
    *size = bytes.size() + (text ? 1 : 0);
    return NVRTC_SUCCESS;
}
nvrtcResult copy_out(const std::string& bytes, bool available, bool text, char* out) {
    if (!available) return NVRTC_ERROR_INVALID_PROGRAM;
    std::memcpy(out, bytes.data(), bytes.size());
    if (text) out[bytes.size()] = '\0';
    return NVRTC_SUCCESS;
}

const char* error_name(nvrtcResult result) {
    switch (result) {
        case NVRTC_SUCCESS: return "NVRTC_SUCCESS";
        case NVRTC_ERROR_INVALID_OPTION: return "NVRTC_ERROR_INVALID_OPTION";
        case NVRTC_ERROR_COMPILATION: return "NVRTC_ERROR_COMPILATION";
        case NVRTC_ERROR_INVALID_PROGRAM: return "NVRTC_ERROR_INVALID_PROGRAM";
        case NVRTC_ERROR_INVALID_INPUT: return "NVRTC_ERROR_INVALID_INPUT";
        default: return "NVRTC_ERROR (simulated)";
    }
}

}  // namespace

std::shared_ptr<NvrtcApi> simulated_nvrtc(SimulatedNvrtcOptions options) {
    auto state = std::make_shared<State>(std::move(options));
    auto api = std::make_shared<NvrtcApi>();
    api->name = "simulated NVRTC";
    api->library = "simulated";
    api->create_program = [](nvrtcProgram* program, const char* source, const char*, int, const char* const*,
                             const char* const*) {
        if (!program || !source) return NVRTC_ERROR_INVALID_INPUT;
        *program = reinterpret_cast<nvrtcProgram>(new SimulatedProgram{source, "", "", false, false});
        return NVRTC_SUCCESS;
    };
    api->compile_program = [state](nvrtcProgram p, int n, const char* const* options) {
        return p ? compile(*state, *program_of(p), n, options) : NVRTC_ERROR_INVALID_PROGRAM;
    };
    api->destroy_program = [](nvrtcProgram* p) {
        if (!p || !*p) return NVRTC_ERROR_INVALID_PROGRAM;
        delete program_of(*p);
        *p = nullptr;
        return NVRTC_SUCCESS;
    };
    api->program_log_size = [](nvrtcProgram p, size_t* size) { return size_of(program_of(p)->log, true, true, size); };
    api->program_log = [](nvrtcProgram p, char* out) { return copy_out(program_of(p)->log, true, true, out); };
    api->ptx_size = [](nvrtcProgram p, size_t* size) {
        return size_of(program_of(p)->image, program_of(p)->compiled, true, size);
    };
    api->ptx = [](nvrtcProgram p, char* out) { return copy_out(program_of(p)->image, program_of(p)->compiled, true, out); };
    // Like the real one: no CUBIN (size 0) after compiling for a virtual architecture.
    api->cubin_size = [](nvrtcProgram p, size_t* size) {
        const SimulatedProgram& program = *program_of(p);
        return size_of(program.real_arch ? program.image : "", program.compiled, false, size);
    };
    api->cubin = [](nvrtcProgram p, char* out) {
        const SimulatedProgram& program = *program_of(p);
        return copy_out(program.real_arch ? program.image : "", program.compiled, false, out);
    };
    api->version = [state](int* major, int* minor) {
        *major = state->options.version_major;
        *minor = state->options.version_minor;
        return NVRTC_SUCCESS;
    };
    api->num_supported_archs = [state](int* count) {
        *count = static_cast<int>(state->options.supported_archs.size());
        return NVRTC_SUCCESS;
    };
    api->supported_archs = [state](int* archs) {
        std::copy(state->options.supported_archs.begin(), state->options.supported_archs.end(), archs);
        return NVRTC_SUCCESS;
    };
    api->error_string = error_name;
    return api;
}

}  // namespace shoal::cuda
