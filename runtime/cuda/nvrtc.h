// NVRTC, the CUDA runtime compiler, found at run time: Shoal does not link
// libnvrtc, so a binary built with the toolkit still starts (on the CPU
// executor, with the reason) on a machine without it. No GPU is needed to
// compile: tests check every generated kernel for sm_80 and sm_90 anywhere.
//
// NvrtcApi is the one table every NVRTC call goes through: the real library
// (real_nvrtc) or the simulated one of the tests (simulated_nvrtc.h). It is
// built only with the toolkit's headers (SHOAL_HAVE_NVRTC), which give it
// NVRTC's own types; compile_cuda and nvrtc_version work in every build.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/cache/image_kind.h"

#ifdef SHOAL_HAVE_NVRTC
#include <functional>
#include <nvrtc.h>
#endif

namespace shoal::cuda {

// What NVRTC produces: a CUBIN or PTX (runtime/cache/image_kind.h).
using cache::ImageKind;
using cache::image_kind_name;

#ifdef SHOAL_HAVE_NVRTC

// NVRTC's C API, one member per function Shoal calls, with its signature.
// std::function so that a simulated NVRTC can carry its own state.
struct NvrtcApi {
    std::string name;     // "NVRTC" or "simulated NVRTC": part of the kernel cache key
    std::string library;  // where it was loaded from ("libnvrtc.so.13"), for messages

    std::function<nvrtcResult(nvrtcProgram* program, const char* source, const char* file_name, int num_headers,
                              const char* const* headers, const char* const* include_names)>
        create_program;
    std::function<nvrtcResult(nvrtcProgram program, int num_options, const char* const* options)> compile_program;
    std::function<nvrtcResult(nvrtcProgram* program)> destroy_program;
    std::function<nvrtcResult(nvrtcProgram program, size_t* size)> program_log_size;
    std::function<nvrtcResult(nvrtcProgram program, char* log)> program_log;
    std::function<nvrtcResult(nvrtcProgram program, size_t* size)> ptx_size;
    std::function<nvrtcResult(nvrtcProgram program, char* ptx)> ptx;
    std::function<nvrtcResult(nvrtcProgram program, size_t* size)> cubin_size;
    std::function<nvrtcResult(nvrtcProgram program, char* cubin)> cubin;
    std::function<nvrtcResult(int* major, int* minor)> version;
    std::function<nvrtcResult(int* count)> num_supported_archs;
    std::function<nvrtcResult(int* archs)> supported_archs;
    std::function<const char*(nvrtcResult result)> error_string;
};

// The real NVRTC, loaded once (libnvrtc.so.13, .so.12, .so, then the
// toolkit's library directory known at build time). Null when it cannot be
// loaded; then *why_not (when given) is one line, e.g.
// "libnvrtc.so.13 not found: libnvrtc.so.13: cannot open shared object file".
const NvrtcApi* real_nvrtc(std::string* why_not = nullptr);
// The same, for owners of a table (KernelCompiler); never freed.
std::shared_ptr<const NvrtcApi> shared_real_nvrtc(std::string* why_not = nullptr);

// Loads NVRTC from the first of `candidates` (names or paths for dlopen)
// that opens and has every function; real_nvrtc uses it, tests call it with
// names that do not exist.
std::shared_ptr<const NvrtcApi> load_nvrtc(const std::vector<std::string>& candidates, std::string* why_not);

// "13.0", or "unknown" when NVRTC does not say.
std::string nvrtc_version(const NvrtcApi& api);

// The real architectures NVRTC compiles for (75, 80, 86, 90, ...), ascending.
std::vector<int> nvrtc_supported_archs(const NvrtcApi& api);

struct NvrtcOutput {
    bool ok = false;
    std::string log;    // NVRTC's diagnostics (warnings, ptxas info); empty when clean
    std::string image;  // the CUBIN or PTX when ok
};

// Compiles `source` (a translation unit that needs no headers; the file
// name in diagnostics is `file_name`) with exactly `options`, returning the
// image of `kind`. Compile errors do not throw: ok is false and they are in
// the log. Thread safe as NVRTC is (one program per call).
NvrtcOutput nvrtc_compile(const NvrtcApi& api, const std::string& source, const std::string& file_name,
                          const std::vector<std::string>& options, ImageKind kind);

#endif  // SHOAL_HAVE_NVRTC

struct NvrtcResult {
    bool ok = false;
    std::string log;  // NVRTC's diagnostics (warnings too); empty when clean
    std::string ptx;  // the PTX when ok
};

// Compiles `source` to PTX with the real NVRTC for `arch` ("sm_80",
// "sm_90", ... as --gpu-architecture takes it) with Shoal's standard
// options (--std=c++17 -default-device) followed by `extra_options`. Compile
// errors, a Shoal built without the toolkit and a missing libnvrtc do not
// throw: ok is false and the reason is in `log`. Thread safe. A typical
// kernel takes 50-100 ms: the CUDA backend goes through KernelCompiler
// (kernel_compiler.h), which caches.
NvrtcResult compile_cuda(const std::string& source, const std::string& arch,
                         const std::vector<std::string>& extra_options = {});

// "13.0": the real NVRTC's version, "none" in a build without the toolkit,
// "unavailable" when libnvrtc cannot be loaded.
std::string nvrtc_version();

// `source` with 1-based line numbers, for printing a failed compilation.
std::string number_lines(const std::string& source);

}  // namespace shoal::cuda
