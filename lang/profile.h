// What kernels did, for `:profile`, `:time` and the tests: the counters an
// executor reports per kernel (codegen/plan_executor.h), and a profile row.
#pragma once
#include <cstdint>
#include <string>

namespace shoal {

// What the kernels of a plan did, per kernel and summed: launches and time on
// every executor; the memory-traffic model (bytes, sectors, bank conflicts,
// atomics, barriers) where the executor measures it (the CPU executor
// counts every access; a device executor leaves what it cannot see at 0).
struct KernelCounters {
    int64_t launches = 0;
    int64_t global_bytes_loaded = 0;    // element size x active lanes of every global load
    int64_t global_bytes_stored = 0;    // the same for stores (atomics count only in `atomics`)
    int64_t global_sectors = 0;         // distinct 32-byte sectors touched per warp load/store, summed
    int64_t shared_bank_conflicts = 0;  // extra serialised shared-memory wavefronts per warp access
                                        // (32 banks of 4 bytes; 8-byte accesses per half-warp)
    int64_t atomics = 0;                // atomic operations (one per active lane), global and shared
    int64_t barriers = 0;               // barriers executed, summed over blocks
    int64_t nanoseconds = 0;            // wall time of the launches

    KernelCounters& operator+=(const KernelCounters& b) {
        launches += b.launches;
        global_bytes_loaded += b.global_bytes_loaded;
        global_bytes_stored += b.global_bytes_stored;
        global_sectors += b.global_sectors;
        shared_bank_conflicts += b.shared_bank_conflicts;
        atomics += b.atomics;
        barriers += b.barriers;
        nanoseconds += b.nanoseconds;
        return *this;
    }
};

// Copies between host and device memory an executor made (counted since it
// started; `:time` shows the difference a statement made). The CPU executor
// makes none.
struct TransferCounters {
    int64_t to_device_copies = 0, to_device_bytes = 0;
    int64_t to_host_copies = 0, to_host_bytes = 0;

    TransferCounters operator-(const TransferCounters& b) const {
        return {to_device_copies - b.to_device_copies, to_device_bytes - b.to_device_bytes,
                to_host_copies - b.to_host_copies, to_host_bytes - b.to_host_bytes};
    }
    bool any() const { return to_device_copies || to_host_copies; }
};

// Kernels an executor had to compile (the CUDA executor: NVRTC behind the
// kernel caches), counted since it started; `:time` shows a statement's share.
struct CompileCounters {
    int64_t compiled = 0;     // NVRTC runs
    double seconds = 0;       // their time
    int64_t cache_hits = 0;   // memory and disk

    CompileCounters operator-(const CompileCounters& b) const {
        return {compiled - b.compiled, seconds - b.seconds, cache_hits - b.cache_hits};
    }
};

// One kernel's counters during a :profile or :time run, summed over its launches.
struct KernelProfile : KernelCounters {
    std::string plan;    // the launch plan (the primitive that made it)
    std::string kernel;
};

}  // namespace shoal
