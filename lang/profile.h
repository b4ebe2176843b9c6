// What kernels did, for `:profile`, `:time` and the tests: the counters an
// executor reports per kernel (codegen/plan_executor.h), and a profile row.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lang/source.h"

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
    int64_t flops = 0;                  // floating-point operations (one per active lane of a float op)
    int64_t nanoseconds = 0;            // wall time of the launches
    int64_t native_launches = 0;        // launches the CPU executor ran as native code (no traffic counted)

    KernelCounters& operator+=(const KernelCounters& b) {
        launches += b.launches;
        global_bytes_loaded += b.global_bytes_loaded;
        global_bytes_stored += b.global_bytes_stored;
        global_sectors += b.global_sectors;
        shared_bank_conflicts += b.shared_bank_conflicts;
        atomics += b.atomics;
        barriers += b.barriers;
        flops += b.flops;
        nanoseconds += b.nanoseconds;
        native_launches += b.native_launches;
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
    int64_t compiled = 0;     // NVRTC runs, or kernels the C++ compiler built (the CPU's native tier)
    double seconds = 0;       // their time
    int64_t cache_hits = 0;   // memory and disk
    double cache_seconds = 0; // loading those (where the executor measures it)

    CompileCounters operator-(const CompileCounters& b) const {
        return {compiled - b.compiled, seconds - b.seconds, cache_hits - b.cache_hits, cache_seconds - b.cache_seconds};
    }
};

// One kernel's counters during a :profile or :time run, summed over its
// launches, and what `:profile` explains about it.
struct KernelProfile : KernelCounters {
    std::string plan;    // the launch plan (the primitive that made it)
    std::string kernel;
    std::string source;          // the source expression it came from ("x[1:] - x[:-1]   -- <stdin>:1:5")
    Loc at;                      // where that is (rows are told apart by it)
    int64_t grid = 0;            // blocks of its last launch
    int block = 0;               // threads per block
    int64_t static_shared = 0;   // bytes of shared memory (all static; Shoal uses no dynamic shared memory)
    bool double_precision = false;  // computes in double (the roofline takes the FP64 peak)
    // The least global traffic it needs: each byte of the buffers it reads
    // loaded once, each byte of those it writes stored once (summed over launches).
    int64_t minimum_bytes = 0;
    // From ptxas for the architecture `:profile` compiled for (through the kernel cache).
    int registers = -1;          // per thread; -1: unknown (resources_note says why)
    int spill_bytes = -1;        // spill stores + loads
    int occupancy_percent = -1;
    std::string resources_note;
};

// What the fusion engine decided for one launch plan a :profile ran: the
// primitives fused into its kernels and, for each array it read from
// memory, why that array was materialised.
struct PlanDecisions {
    std::string plan;                       // "map", "sum", ...
    std::string source;                     // the source expression it computes
    std::vector<std::string> fused;         // "- at <stdin>:1:7", "slice at <stdin>:1:2", ...
    std::vector<std::string> materialised;  // "x: a host array (a binding)", "the map at 1:9: a top-level let binds it"
};

// A library call a plan made (a product through the BLAS): `:time` and
// `:profile` show which path ran and why.
struct LibraryCallProfile {
    std::string plan;            // "matmul"
    std::string function;        // "gemm"
    std::string implementation;  // "OpenBLAS sgemm"
    std::string why;             // the plan step's comment
    std::string source;          // the source expression
    Loc at;                      // where that is
    int64_t calls = 0;
    int64_t nanoseconds = 0;
    int64_t flops = 0;
    int64_t minimum_bytes = 0;
};

// Everything `:profile e` shows.
struct ProfileReport {
    std::vector<KernelProfile> kernels;   // in order of first launch
    std::vector<LibraryCallProfile> calls;  // in order of first call
    std::vector<PlanDecisions> plans;     // in order of running
    // The least global traffic the statement needs: every array it reads
    // that it did not compute loaded once, every result it keeps stored once.
    int64_t minimum_bytes = 0;
    std::string arch;                     // what registers were compiled for ("sm_90")
    double seconds = 0;                   // the statement's run (not the compiling after it)
    int64_t plans_run = 0;                // launch plans the statement ran
    int64_t plans_found = 0;              // of those, found before lowering (codegen/plan_memo.h)
    int64_t plans_replayed = 0;           // of those, run by a replayed loop step (nothing evaluated)
    std::string loop_not_replayed;        // why a long loop's steps were all evaluated (the first reason seen)
    // What runs blocks side by side on the executor: its cores ("core") or
    // a GPU's multiprocessors ("SM"); 0: unknown.
    int parallel_units = 0;
    std::string unit_name = "core";
    bool traffic_counted = false;         // :profile's counters (bytes per kernel) are there
};

// Performance advice for a statement that ran (`:time`, `:profile`), one
// line each, with the fix: most of its time outside kernels (many small
// plans), a kernel that kept most of the machine idle for long (few blocks),
// a kernel that loaded many times the bytes it needs (an array re-read or
// an expression recomputed per output). `busy_seconds`: the time that was
// neither compiling nor the front end. Empty when nothing stands out.
std::vector<std::string> performance_advice(const ProfileReport& report, double busy_seconds);

// A GPU for the roofline estimate of `:profile` (`:set gpu NAME`): its
// memory bandwidth and peak arithmetic (without tensor cores).
struct GpuModel {
    const char* name;         // "h100"
    const char* full_name;    // "NVIDIA H100 SXM"
    double bytes_per_second;
    double fp32_per_second;
    double fp64_per_second;
};
const std::vector<GpuModel>& gpu_models();
const GpuModel* find_gpu_model(const std::string& name);
// The estimate: the kernel is bound by memory or by arithmetic, whichever
// takes longer (no overlap of launches, no caches).
double roofline_seconds(const KernelProfile& k, const GpuModel& gpu);

}  // namespace shoal
