// The printed CUDA, run on the CPU (issue 24; docs/cuda-backend.md "The
// printed CUDA, run"): the simulated device's `printed` mode compiles the
// exact text NVRTC is given as host C++, with the CUDA built-ins of
// cuda_shim.h before it, into a shared object (the native compiler: its disk
// cache, memfd + dlopen), and a launch calls the kernel there with the real
// argument array: every CUDA thread a fiber, the printed barriers,
// shuffles and atomics as a GPU's rules have them.
//
// SHOAL_SIMULATED_KERNELS=printed chooses it (`ir`, the default, runs the
// kernel's IR on the CPU executor: much faster, but the text is only
// compiled by NVRTC, never run). SHOAL_SIMULATED_ORDER=forward|reverse|
// random[:seed] orders the threads of a block and the blocks of a grid.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace shoal::native {
class NativeModule;
}

namespace shoal::cuda {

enum class SimulatedKernels { Ir, Printed };
// SHOAL_SIMULATED_KERNELS; throws Error(Internal) for another value.
SimulatedKernels simulated_kernels_from_env();

struct PrintedLaunchOptions {
    int order = 0;  // 0 forward, 1 reverse, 2 seeded random
    uint64_t seed = 0;
    double watchdog_seconds = 120;  // a block running longer is a hang
};
// SHOAL_SIMULATED_ORDER; throws Error(Internal) naming a malformed value.
PrintedLaunchOptions printed_launch_options_from_env();

// The host C++ text of cuda_shim.h (embedded at build time).
const std::string& cuda_shim_text();

// One printed unit (one NVRTC program) compiled with the shim.
class PrintedUnit {
public:
    PrintedUnit(std::shared_ptr<native::NativeModule> module, void* entry, void* where, void* release)
        : module_(std::move(module)), entry_(entry), where_(where), release_(release) {}
    // Runs `kernel` over grid x block threads with the CUDA argument array;
    // "" or why it failed (a broken rule of the GPU: divergent barrier,
    // shuffle, a hang; a fault: a guard page, a division by zero), naming
    // the kernel, block, thread and, for a broken rule, the printed line.
    std::string launch(const std::string& kernel, unsigned grid, unsigned block, void** args,
                       const PrintedLaunchOptions& options) const;

private:
    std::shared_ptr<native::NativeModule> module_;
    void* entry_;
    void* where_;  // the unit's shoal_sim_where: which thread runs
    void* release_;  // the unit's shoal_sim_release: frees what a faulted launch held
};

// The C++ the compiler is given: the shim, the unit with its entry
// functions renamed (a kernel called `sum` or `exp` must not be libc's),
// then the unit's launch table. `kernels`: the unit's entry functions.
std::string printed_unit_source(const std::string& cuda, const std::vector<std::string>& kernels);

// Compiles (or finds in the disk cache) and loads a unit; null and the
// compiler's message in *error when it does not compile.
std::shared_ptr<const PrintedUnit> compile_printed_unit(const std::string& cuda, const std::vector<std::string>& kernels,
                                                        std::string* error);

}  // namespace shoal::cuda
