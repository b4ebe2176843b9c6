#include "runtime/cuda/nvrtc.h"

#include <cstdio>
#include <sstream>

#ifdef SHOAL_HAVE_NVRTC
#include <dlfcn.h>

#include "runtime/cuda/nvrtc_target.h"
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

// ---------------------------------------------------------------- loading

namespace {

// Fills the table from an opened library; the name of the first missing
// function otherwise. decltype(&::nvrtcX) gives each pointer the header's
// exact signature without linking the library.
std::string bind_functions(void* lib, NvrtcApi& api) {
    std::string missing;
    auto bind = [&](auto& slot, auto typed_null, const char* symbol) {
        void* address = dlsym(lib, symbol);
        if (!address && missing.empty()) missing = symbol;
        slot = reinterpret_cast<decltype(typed_null)>(address);
    };
#define SHOAL_BIND(member, function) bind(api.member, static_cast<decltype(&::function)>(nullptr), #function)
    SHOAL_BIND(create_program, nvrtcCreateProgram);
    SHOAL_BIND(compile_program, nvrtcCompileProgram);
    SHOAL_BIND(destroy_program, nvrtcDestroyProgram);
    SHOAL_BIND(program_log_size, nvrtcGetProgramLogSize);
    SHOAL_BIND(program_log, nvrtcGetProgramLog);
    SHOAL_BIND(ptx_size, nvrtcGetPTXSize);
    SHOAL_BIND(ptx, nvrtcGetPTX);
    SHOAL_BIND(cubin_size, nvrtcGetCUBINSize);
    SHOAL_BIND(cubin, nvrtcGetCUBIN);
    SHOAL_BIND(version, nvrtcVersion);
    SHOAL_BIND(num_supported_archs, nvrtcGetNumSupportedArchs);
    SHOAL_BIND(supported_archs, nvrtcGetSupportedArchs);
    SHOAL_BIND(error_string, nvrtcGetErrorString);
#undef SHOAL_BIND
    return missing;
}

std::vector<std::string> default_candidates() {
    std::vector<std::string> names = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
#ifdef SHOAL_NVRTC_FALLBACK_DIR
    // The toolkit's own directory, for a machine whose loader path lacks it.
    for (size_t i = 0, n = names.size(); i < n; ++i) names.push_back(std::string(SHOAL_NVRTC_FALLBACK_DIR) + "/" + names[i]);
#endif
    return names;
}

}  // namespace

std::shared_ptr<const NvrtcApi> load_nvrtc(const std::vector<std::string>& candidates, std::string* why_not) {
    std::string not_found, incomplete;  // the first failure of each kind
    for (const std::string& candidate : candidates) {
        // Never closed: the table's functions live as long as the process.
        void* lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char* error = dlerror();
            if (not_found.empty()) not_found = candidate + " not found: " + (error ? error : "dlopen failed");
            continue;
        }
        auto api = std::make_shared<NvrtcApi>();
        api->name = "NVRTC";
        api->library = candidate;
        if (std::string missing = bind_functions(lib, *api); !missing.empty()) {
            if (incomplete.empty()) incomplete = candidate + " lacks " + missing + " (NVRTC too old?)";
            dlclose(lib);
            continue;
        }
        return api;
    }
    if (why_not) *why_not = !incomplete.empty() ? incomplete : !not_found.empty() ? not_found : "no NVRTC library to try";
    return nullptr;
}

std::shared_ptr<const NvrtcApi> shared_real_nvrtc(std::string* why_not) {
    static std::string reason;
    static const std::shared_ptr<const NvrtcApi> api = load_nvrtc(default_candidates(), &reason);
    if (!api && why_not) *why_not = reason;
    return api;
}

const NvrtcApi* real_nvrtc(std::string* why_not) { return shared_real_nvrtc(why_not).get(); }

std::string nvrtc_version(const NvrtcApi& api) {
    int major = 0, minor = 0;
    if (api.version(&major, &minor) != NVRTC_SUCCESS) return "unknown";
    return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<int> nvrtc_supported_archs(const NvrtcApi& api) {
    int count = 0;
    if (api.num_supported_archs(&count) != NVRTC_SUCCESS || count <= 0) return {};
    std::vector<int> archs(static_cast<size_t>(count));
    if (api.supported_archs(archs.data()) != NVRTC_SUCCESS) return {};
    return archs;
}

// ---------------------------------------------------------------- compiling

namespace {

// One NVRTC program, destroyed on every path.
class Program {
public:
    explicit Program(const NvrtcApi& api) : api_(api) {}
    ~Program() {
        if (handle_) api_.destroy_program(&handle_);
    }
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;
    nvrtcProgram* out() { return &handle_; }
    nvrtcProgram get() const { return handle_; }

private:
    const NvrtcApi& api_;
    nvrtcProgram handle_ = nullptr;
};

// NVRTC's size-then-fill getters; the sizes of logs and PTX count a final NUL.
template <class SizeFn, class FillFn>
std::string fetch(nvrtcProgram program, const SizeFn& size_of, const FillFn& fill, bool nul_terminated) {
    size_t size = 0;
    if (size_of(program, &size) != NVRTC_SUCCESS || size == 0) return "";
    std::string bytes(size, '\0');
    if (fill(program, bytes.data()) != NVRTC_SUCCESS) return "";
    if (nul_terminated) bytes.resize(size - 1);
    return bytes;
}

}  // namespace

NvrtcOutput nvrtc_compile(const NvrtcApi& api, const std::string& source, const std::string& file_name,
                          const std::vector<std::string>& options, ImageKind kind) {
    NvrtcOutput out;
    Program program(api);
    nvrtcResult rc = api.create_program(program.out(), source.c_str(), file_name.c_str(), 0, nullptr, nullptr);
    if (rc != NVRTC_SUCCESS) {
        out.log = std::string("nvrtcCreateProgram failed: ") + api.error_string(rc);
        return out;
    }
    std::vector<const char*> argv;
    for (const auto& o : options) argv.push_back(o.c_str());
    rc = api.compile_program(program.get(), static_cast<int>(argv.size()), argv.data());
    out.log = fetch(program.get(), api.program_log_size, api.program_log, true);
    if (rc != NVRTC_SUCCESS) {
        if (out.log.empty()) out.log = std::string("nvrtcCompileProgram failed: ") + api.error_string(rc);
        return out;
    }
    out.image = kind == ImageKind::Cubin ? fetch(program.get(), api.cubin_size, api.cubin, false)
                                         : fetch(program.get(), api.ptx_size, api.ptx, true);
    out.ok = !out.image.empty();
    if (!out.ok) out.log += std::string("NVRTC produced no ") + image_kind_name(kind);
    return out;
}

NvrtcResult compile_cuda(const std::string& source, const std::string& arch,
                         const std::vector<std::string>& extra_options) {
    std::string why_not;
    const NvrtcApi* api = real_nvrtc(&why_not);
    if (!api) return NvrtcResult{false, "NVRTC is unavailable: " + why_not, ""};
    std::vector<std::string> options = standard_options(arch);
    options.insert(options.end(), extra_options.begin(), extra_options.end());
    NvrtcOutput out = nvrtc_compile(*api, source, "shoal_kernels.cu", options, ImageKind::Ptx);
    return NvrtcResult{out.ok, std::move(out.log), std::move(out.image)};
}

std::string nvrtc_version() {
    const NvrtcApi* api = real_nvrtc();
    return api ? nvrtc_version(*api) : "unavailable";
}

#else  // no CUDA toolkit: a clear answer instead of a link error

NvrtcResult compile_cuda(const std::string&, const std::string&, const std::vector<std::string>&) {
    return NvrtcResult{false, "Shoal was built without the CUDA toolkit (no NVRTC)", ""};
}

std::string nvrtc_version() { return "none"; }

#endif

}  // namespace shoal::cuda
