// The interface between the fusion engine (codegen/) and the machines that
// run its launch plans (runtime/): an executor walks a plan's host program
// (codegen/launch_plan.h: allocate, compute host scalars, launch, check,
// read back, free) on arrays bound by buffer name, and reports what each
// kernel did. The CPU executor (runtime/cpu) interprets the kernel IR; the
// CUDA executor prints it, compiles it with NVRTC and launches it. The engine
// knows executors only through this header, so the same plan, cache and
// `:cuda`/`:profile` support serve every device.
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/launch_plan.h"
#include "codegen/library_calls.h"
#include "lang/profile.h"
#include "lang/source.h"
#include "lang/value.h"

namespace shoal::ir {

// What the kernels of a plan did (lang/profile.h: the session shows it).
using KernelCounters = shoal::KernelCounters;

// Memory of one array on an executor's device (the CUDA executor's): count()
// elements of elem(). The engine keeps a result there until the host needs
// its elements (shoal::force); it is freed with its last reference. A host
// array's upload hangs on the array (Array::device_copy), so it is made once.
class DeviceArray : public ArrayCopy {
public:
    DeviceArray(ScalarType elem, int64_t count) : elem_(elem), count_(count) {}
    ScalarType elem() const { return elem_; }
    int64_t count() const { return count_; }
    int64_t bytes() const { return count_ * static_cast<int64_t>(scalar_size(elem_)); }
    // The device it lives on: an executor uses memory of its own device
    // directly and moves any other array through the host.
    virtual const void* device() const = 0;
    // Copies every element to `host` (bytes() bytes) once the work that
    // computes them is done: the host waits here.
    virtual void read(void* host) const = 0;

private:
    ScalarType elem_;
    int64_t count_;
};

// An array handed to an executor or returned by one: host memory, device
// memory, or both (a downloaded result keeps its device copy).
struct ArrayData {
    ArrayPtr host;
    std::shared_ptr<DeviceArray> device;
};

// The arguments of one run of a plan, by the names of its entry signature.
struct PlanBindings {
    std::map<std::string, HostValue> scalars;  // every Input scalar
    std::map<std::string, ArrayData> inputs;   // every Input buffer (read only)
    // Input scalars lifted from values that carry a symbol (`:emit`'s
    // trace, codegen/emit_trace.h); empty otherwise.
    std::map<std::string, SymbolPtr> symbols;
};

// One library call a run made (`:time`, `:profile`): which function, what
// carried it out, its time and least work.
struct CallCounters {
    std::string function;        // "gemm"
    std::string implementation;  // "OpenBLAS sgemm", "cuBLAS cublasSgemm"
    std::string comment;         // the step's: why the plan calls it
    int64_t calls = 0;
    int64_t nanoseconds = 0;     // measured on the host (the call returns when done) or by events
    int64_t flops = 0;
    int64_t minimum_bytes = 0;   // operands read once, the result written once
};

// The counters of one gemm call of `step` that `implementation` carried
// out (its time is the caller's to add: measured on the host or by events).
CallCounters gemm_counters(const PlanStep& step, const GemmShape& shape, ScalarType elem, std::string implementation);
CallCounters lu_counters(const PlanStep& step, const LuShape& shape, ScalarType elem, std::string implementation);
CallCounters svd_counters(const PlanStep& step, const SvdShape& shape, ScalarType elem, std::string implementation);

struct PlanOutcome {
    // Every Output buffer, rank 1 of the buffer's count (the caller gives it
    // its shape): a host array on the CPU executor, device memory on a GPU's.
    std::map<std::string, ArrayData> outputs;
    std::map<std::string, HostValue> scalars;   // every scalar that got a value (inputs, derived, read back)
    std::vector<KernelCounters> kernel_counters;  // per plan kernel (index as in plan.kernels)
    KernelCounters total;                         // summed over all launches
    std::vector<CallCounters> calls;              // per library call made, in order
};

// The machine a plan is lowered for, as its executor describes it (what
// LoweringOptions takes from it).
struct LoweringTarget {
    bool shared_tiles = true;  // a map's overlapping reads go through shared-memory tiles
    int cpu_cores = 0;         // > 0: native CPU code on this many cores (LoweringOptions::cpu_cores)
};

struct RunOptions {
    // Checking mode (`:set check on`, on in the tests): the executor checks
    // what it can (the CPU executor: shared-memory races, divergent barriers
    // and shuffles; fresh memory filled with 0xff bytes).
    bool check = false;
    // Set by another thread to stop the run (Ctrl-C): looked at often, the
    // run then throws Error(Interrupted).
    const std::atomic<bool>* cancel = nullptr;
    // `:time`/`:profile`: each launch's time is measured (on a GPU with
    // events; the run then waits for its kernels).
    bool timed = false;
    // `:profile`: the memory-traffic counters are wanted (the CPU executor
    // then runs the kernels on its interpreter, which counts them).
    bool counters = false;
    // The builtin call the plan computes, for errors that can only name a
    // kernel (a GPU that stopped): formatted by source_comment only then, so
    // runs pay nothing for it.
    Loc origin;
};

// An executor of launch plans. A failed kernel check raises the
// shoal::Error(Runtime) the reference evaluator gives, at the check's
// source location; the same error on every executor (the lowest failing
// thread, see codegen/ir.h `Check`).
class PlanExecutor {
public:
    virtual ~PlanExecutor() = default;
    // A short name: "cpu", "cuda".
    virtual std::string name() const = 0;
    // One line for banners and `:help`: what runs the kernels, and where.
    virtual std::string description() const = 0;
    // `plan` is shared (the plan cache keeps it) so that an executor may keep
    // what it prepared for it (compiled, loaded kernels) while it lives.
    virtual PlanOutcome run(const std::shared_ptr<const LaunchPlan>& plan, const PlanBindings& bindings,
                            const RunOptions& options) = 0;
    // A message for the session about how plans run (a native build that
    // failed, no C++ compiler), each said once; "" when there is none.
    virtual std::string take_notice() { return ""; }
    // Why the device can no longer be used (a sticky CUDA error), or empty.
    // The session then moves to the CPU executor (docs/cuda-backend.md).
    virtual std::string lost_reason() const { return ""; }
    // `:device`: the device's properties, or why there is no GPU.
    virtual std::string device_report() const = 0;
    // Host <-> device copies made since the executor started.
    virtual TransferCounters transfers() const { return {}; }
    // How plans for a run with these options should be shaped. The GPU's
    // form is the default. The CPU's native code asks for its own where that
    // is faster with the same bits: no shared tiles (it reads its caches
    // directly; a tile is only a copy) and sorts walking chunks on its cores,
    // unless the GPU's form is what the run is for (checking mode, `:profile`'s
    // counters, the interpreter and compare tiers).
    virtual LoweringTarget lowering_target(const RunOptions&) const { return {}; }
    // Whether the executor implements a library function (library_calls.h):
    // asked only when a plan could call it, since the answer may load the
    // library (OpenBLAS, cuBLAS). A GPU's cuBLAS is what `:cuda` shows.
    virtual bool has_library(const std::string& function) const {
        return function == "gemm" || function == "lu" || function == "svd";
    }
    // What runs blocks side by side, for performance advice: the CPU's
    // cores, a GPU's multiprocessors ({0, ""}: unknown).
    virtual std::pair<int, std::string> parallel_units() const { return {0, ""}; }
    // `:compile`: the executor's own build of these plans (the CPU's native
    // code: per plan, the C++ compiler's time or a cache hit), or "".
    virtual std::string native_compile_report(const std::vector<LaunchPlan>&) { return ""; }
    // `:cache`: what the executor's own compiler did (the CPU's native
    // tier), after the GPU compiler's report; "" when it has none.
    virtual std::string cache_report() const { return ""; }
    // Kernels compiled (or found in the caches) since the executor started.
    virtual CompileCounters compilation() const { return {}; }
    // The GPU architecture its kernels are compiled for ("sm_90"), or "".
    virtual std::string gpu_arch() const { return ""; }
    // `:mem`: device memory in use and cached, the device's free and total,
    // the largest arrays (named after `names`, the bindings holding them).
    virtual std::string memory_report(const std::map<const DeviceArray*, std::string>& names) const = 0;
    // The memory left where this executor's arrays live (lang/memory_limit.h):
    // the host's by default; a GPU's free memory (with what its pool keeps
    // for reuse) and what Shoal holds there.
    virtual MemoryRoom memory_room() const { return host_memory_room(); }
};

// What ptxas reports for a kernel compiled for an architecture, and the
// occupancy that allows; -1: unknown (`note` says why).
struct KernelResources {
    int registers = -1;
    int spill_bytes = -1;  // spill stores + spill loads
    int occupancy_percent = -1;
    std::string note;
};

// The GPU compiler as the session sees it, whatever the executor (it works
// without a GPU): `:compile` and `:cache` (runtime/cuda/kernel_toolchain.h).
class KernelToolchain {
public:
    virtual ~KernelToolchain() = default;
    // Each kernel compiled for `arch` through the kernel cache (`:profile`).
    virtual std::vector<KernelResources> resources(const std::vector<Kernel>& kernels, const std::string& arch) = 0;
    // Compiles the kernels for `arch` ("sm_90") through the kernel cache;
    // per kernel: compile time or cache hit, registers, spills, shared
    // memory and the occupancy they allow on that architecture.
    // `shown[i]` is kernels[i] as `:cuda` shows it (the user's names, the
    // source expression as its comment); kernels[i] is what executors
    // compile, so both share the cache's entries.
    virtual std::string compile_report(const std::vector<Kernel>& kernels, const std::vector<Kernel>& shown,
                                       const std::string& arch) = 0;
    // The cache's entries, hits, misses and compile time.
    virtual std::string cache_report() const = 0;
    // Empties the memory and disk caches; says what was removed.
    virtual std::string clear_cache() = 0;
};

// Makes the executor a session asks for by name ("cpu", "cuda"); throws
// Error(Runtime) saying why when that one is not available here.
using ExecutorFactory = std::function<std::shared_ptr<PlanExecutor>(const std::string& name)>;

// What every executor does with a failed check (a Check step): raises the
// shoal::Error(Runtime) the reference evaluator gives, at the check's source
// location. The message may contain "{index}" and "{extent}", replaced by
// the recorded values; one without them is complete as it is.
[[noreturn]] void raise_failed_check(const Kernel& k, int code, int64_t index, int64_t extent);
std::string format_check(const std::string& message, int64_t index, int64_t extent);

// "sum (x * y)   -- <stdin>:1:5": the source expression at `loc`, as kernel
// comments and messages show it ("" for no location).
std::string source_comment(const Loc& loc);

// The host value of one element of type t at `p` (a ReadBack step), and
// the inverse: `v` stored at `p` as an element of type t.
HostValue load_element(ScalarType t, const void* p);
void store_element(ScalarType t, const HostValue& v, void* p);
// A Shoal scalar as a host value (a plan's Input scalar).
HostValue host_value(const Scalar& s);

// The Shoal element type of a buffer's elements, for a buffer handed back as
// an array (unsigned buffers keep their bits in the signed type of their width).
Prim buffer_prim(ScalarType t);

// The device memory holding `data`'s elements: its own, else the copy its
// host array keeps (Array::device_copy), else null.
const DeviceArray* device_memory(const ArrayData& data);

// The host array of `data`: its own, or its device memory copied to a new
// array of `elem` and `shape` that keeps the device copy (so a later kernel
// reads it without an upload). Waits for the work computing it.
ArrayPtr host_array(const ArrayData& data, Prim elem, const Shape& shape);

}  // namespace shoal::ir
