// The CPU executor's native tier: a plan's kernels printed as C++
// (codegen/cpu_printer.h), built into one shared object per plan by the
// system compiler (runtime/native/native_compiler.h), and launched in
// chunks of consecutive blocks over the worker pool. The host program is
// the same (run_plan.h); only Launch steps change hands.
//
// Tiers (SHOAL_CPU_TIER, read when the executor is made):
//   interpret  every kernel on the IR interpreter
//   native     a plan is built before its first run (the caller waits)
//   auto       (default) the interpreter runs a plan until it has run twice
//              or one run took long; then it is built in the background and
//              the next launch after the build uses it (a long first run
//              switches between two of its launches): never a wait at the prompt
//   compare    (tests) every run on both tiers, outputs compared bit for bit
//              (NaNs as NaNs); a difference is an internal error
// Checking mode (`:set check on`) and `:profile` (traffic counters) run on
// the interpreter in every tier but compare. A plan the printer cannot
// print, a failed build or a failed dlopen keeps the plan interpreted; the
// reason is said once per session (NativeTier::take_notice).
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "lang/lru_map.h"
#include "codegen/launch_plan.h"
#include "runtime/background_threads.h"
#include "runtime/cpu/executor.h"

namespace shoal::native {
class NativeModule;
}

namespace shoal::cpu {

enum class Tier { Interpret, Native, Auto, Compare };
const char* tier_name(Tier t);  // "interpret", ...
// SHOAL_CPU_TIER, or Auto; *problem says why a value was not understood.
Tier tier_from_env(std::string* problem = nullptr);

// A plan's kernels as native code: an entry per kernel (null: interpreted).
class NativePlan {
public:
    // Prints the kernels the CPU printer supports as one unit and builds it
    // (runtime/native/native_compiler.h); null and *why on failure. Kernels
    // it cannot print get no entry (*skipped lists them with the reason).
    static std::shared_ptr<NativePlan> build(const std::vector<ir::Kernel>& kernels, std::string* why,
                                             std::vector<std::string>* skipped = nullptr);

    using Entry = int (*)(void* const* args, const long long* extents, long long first_block, long long end_block,
                          long long grid, void* error, const unsigned char* cancel);

    bool runs(size_t kernel) const { return kernel < entries_.size() && entries_[kernel] != nullptr; }
    // Runs one launch of kernel `kernel` (= k) natively, as run_kernel does
    // on the interpreter; counters get the launch (no traffic figures).
    // Native code takes its buffers as __restrict__ pointers: a launch whose
    // written buffer shares memory with another argument (buffers_overlap)
    // runs on the interpreter instead, which defines that case.
    // buffers[i] and scalars[i] are k.params[i]'s argument (the other kind's
    // entry is unused).
    KernelError launch(size_t kernel, const ir::Kernel& k, int64_t grid, std::span<const BufferArg> buffers,
                       std::span<const ScalarArg> scalars, const ExecOptions& options, Counters& counters) const;
    // The same with the arguments by parameter name (tests).
    KernelError launch(size_t kernel, const ir::Kernel& k, const LaunchArgs& args, const ExecOptions& options,
                       Counters& counters) const;

    double compile_seconds = 0;  // 0 when it came from the cache
    double load_seconds = 0;     // reading the cache entry (on a hit) and dlopen
    bool cache_hit = false;

private:
    std::shared_ptr<native::NativeModule> module_;
    std::vector<Entry> entries_;
};

// Whether a buffer the kernel writes shares memory with another of its
// buffer arguments in this launch.
bool buffers_overlap(const ir::Kernel& k, std::span<const BufferArg> buffers);  // buffers[i]: k.params[i]'s
bool buffers_overlap(const ir::Kernel& k, const LaunchArgs& args);
// Arguments by parameter position as arguments by name (the interpreter's).
LaunchArgs launch_args(const ir::Kernel& k, int64_t grid, std::span<const BufferArg> buffers,
                       std::span<const ScalarArg> scalars);

// The tier of one executor: which plans run natively, their builds.
class NativeTier {
public:
    explicit NativeTier(Tier tier);
    // The tier SHOAL_CPU_TIER asks for; a value it does not know is said in
    // the session's first notice (and auto is used).
    NativeTier();
    ~NativeTier();  // waits for builds in flight
    NativeTier(const NativeTier&) = delete;
    NativeTier& operator=(const NativeTier&) = delete;

    Tier tier() const { return tier_; }
    // The native form to run `plan` with now, or null (interpret). Native:
    // builds it first. Auto: counts the run and may start a background build.
    // `cancel` (Ctrl-C) abandons the wait for a build: the build goes on in
    // the background, the run throws Error(Interrupted), and the next run of
    // the plan waits for it again.
    std::shared_ptr<const NativePlan> for_run(const std::shared_ptr<const ir::LaunchPlan>& plan,
                                              const std::atomic<bool>* cancel = nullptr);
    // Auto: during an interpreted run that has taken `seconds` so far: the
    // native form if it is ready (the rest of the run switches to it), else
    // null; a long run starts its build now.
    std::shared_ptr<const NativePlan> when_ready(const std::shared_ptr<const ir::LaunchPlan>& plan, double seconds);
    // Auto: after an interpreted run that took `seconds`.
    void ran_interpreted(const std::shared_ptr<const ir::LaunchPlan>& plan, double seconds);
    // An interpreted run this long (seconds) is worth a build (0.1-1 s on another core).
    static constexpr double kLongRun = 0.05;
    // A message for the session, once per reason (no compiler, a failed
    // build), or "".
    std::string take_notice();
    // One line for the banner and `:device`.
    std::string describe() const;
    // `:cache`: the native builds of this process.
    std::string cache_report() const;
    // Builds the caller waited for (native and compare tiers), in kernels:
    // what `:time` reports as compiled. Background builds are not counted.
    CompileCounters waited_builds() const;

private:
    struct PlanState;
    std::shared_ptr<PlanState> state_of(const std::shared_ptr<const ir::LaunchPlan>& plan);
    void build(const std::shared_ptr<PlanState>& s, const std::shared_ptr<const ir::LaunchPlan>& plan);
    bool claim_build(PlanState& s);
    void start_background_build(const std::shared_ptr<PlanState>& s, const std::shared_ptr<const ir::LaunchPlan>& plan);
    // The build thread itself, for a plan whose build was claimed; under mutex_.
    void spawn_builder(const std::shared_ptr<PlanState>& s, const std::shared_ptr<const ir::LaunchPlan>& plan);
    void notice(const std::string& text);

    Tier tier_;
    mutable std::mutex mutex_;
    // Per plan: its runs and native code (a shared object kept open); the
    // least recently run plan goes beyond the cap, and its object is closed
    // once no run uses it (a later run reloads it from the disk cache).
    static constexpr size_t kPlanCapacity = 512;
    LruMap<const ir::LaunchPlan*, std::shared_ptr<PlanState>> plans_{kPlanCapacity};
    // Background builds (under mutex_).
    runtime::BackgroundThreads builders_;
    std::vector<std::string> notices_;
    std::vector<std::string> said_;
    std::atomic<int> native_plans_{0};
    CompileCounters waited_;  // under mutex_
};

}  // namespace shoal::cpu
