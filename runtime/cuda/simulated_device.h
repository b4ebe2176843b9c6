// A simulated CUDA device behind CudaApi: how the CUDA executor is tested
// on machines without a GPU (all of ours). It is strict where a real GPU
// would be lenient or lucky:
//
// - Device memory is host memory behind opaque addresses in a reserved,
//   inaccessible address range: host code that dereferences a device pointer
//   crashes, and a copy or a kernel given a host pointer, a freed address or
//   one past its allocation is a simulator violation (Error(Internal)).
// - Work on a stream is queued and runs only at a synchronisation point
//   (streamSynchronize, or a freeAsync's memory being reused): a copy to the
//   host read before its stream is synchronised leaves the host bytes
//   unchanged, so a missing synchronisation gives a wrong answer instead of
//   passing by luck. Host memory a copy reads is read when the copy runs.
// - A launch decodes its argument array exactly as the kernel's parameter
//   list declares it (codegen/cuda_printer.h: buffers as pointers, scalars
//   by value, then the error record, then the cancel flag's address, which
//   must be page-locked host memory) and runs that kernel's IR on the CPU
//   executor in checking mode (or its printed text: SHOAL_SIMULATED_KERNELS). The IR comes from CudaApi::describe_image:
//   loading an image nobody described fails as a corrupt image would.
// - Faults on demand: out of memory at the Nth allocation, a sticky error at
//   the Nth launch (every later call then fails with it, as on a GPU).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/cuda/cuda_api.h"

namespace shoal::cuda {

struct SimulatedFaults {
    int64_t memory_bytes = int64_t{16} << 30;  // the device's memory
    int oom_at_allocation = 0;  // the Nth allocation (1-based) fails; 0: none
    int sticky_at_launch = 0;   // the Nth launch fails with an illegal address when it runs; 0: none
};

// SHOAL_SIMULATED_FAULTS, e.g. "oom@3,sticky@2,memory=64MiB" (for tests
// that drive the shoal binary); unset gives the defaults. Throws
// Error(Internal) naming a malformed item.
SimulatedFaults simulated_faults_from_env();

// What the simulated device did, for tests.
struct SimulatedDeviceStats {
    int64_t synchronisations = 0;
    int64_t launches = 0;        // run
    int64_t allocations = 0;     // made
    int64_t live_allocations = 0;
    int64_t bytes_in_use = 0;    // live allocations
    int64_t bytes_cached = 0;    // freed into the pool, kept (release threshold)
    int64_t copies_to_device = 0, copies_to_host = 0, copies_device_to_device = 0;
    int64_t libraries_loaded = 0;
};

class SimulatedDevice : public CudaApi {
public:
    virtual SimulatedDeviceStats stats() const = 0;

    // What a simulated library (the simulated NCCL) reads and writes: the
    // host memory behind [p, p + bytes) of one live allocation; an address
    // outside one is a simulator violation naming `what`.
    using DeviceMemory = std::function<void*(const void* p, size_t bytes, const std::string& what)>;
    // Host work in stream order: `step` runs when the stream reaches it, and
    // again at each later synchronisation or query until it returns true
    // (done). streamQuery answers cudaErrorNotReady while it waits.
    virtual void enqueue_host_work(cudaStream_t stream, std::function<bool(const DeviceMemory&)> step) = 0;
};

std::shared_ptr<SimulatedDevice> simulated_device(const SimulatedFaults& faults = {});

// What the CUDA Runtime's cudaGetErrorName / cudaGetErrorString say for the
// errors the simulated device and the simulated CUDA runtime library
// (simulated_cudart.cpp) return ("cudaErrorUnknown: unknown error"
// for others): the simulation links no CUDA library.
const char* simulated_error_name(cudaError_t error);
const char* simulated_error_string(cudaError_t error);

}  // namespace shoal::cuda
