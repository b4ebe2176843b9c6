#include "runtime/cpu/native_tier.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>
#include <exception>

#include "codegen/cpu_printer.h"
#include "runtime/cpu/thread_pool.h"
#include "runtime/native/native_compiler.h"

namespace shoal::cpu {

const char* tier_name(Tier t) {
    switch (t) {
        case Tier::Interpret: return "interpret";
        case Tier::Native: return "native";
        case Tier::Auto: return "auto";
        case Tier::Compare: return "compare";
    }
    return "?";
}

Tier tier_from_env(std::string* problem) {
    const char* env = std::getenv("SHOAL_CPU_TIER");
    const std::string v = env ? env : "";
    if (v.empty() || v == "auto") return Tier::Auto;
    if (v == "interpret") return Tier::Interpret;
    if (v == "native") return Tier::Native;
    if (v == "compare") return Tier::Compare;
    if (problem) *problem = "SHOAL_CPU_TIER=" + v + " is not interpret, native, auto or compare: using auto";
    return Tier::Auto;
}

// ---------------------------------------------------------------- launches

namespace {

// Launches of at most this many CUDA threads (grid x block) over buffers of
// at most this many elements in all run on the calling thread
// (NativePlan::launch): a thread's work is small when both are.
constexpr int64_t kSmallLaunchThreads = 4096;
constexpr int64_t kSmallLaunchElements = 65536;

// The error record of the entry contract (codegen/cpu_printer.h).
struct NativeError {
    unsigned long long key = ~0ull;
    int code = -1;
    int lock = 0;
    long long index = 0;
    long long extent = 0;
};
static_assert(sizeof(NativeError) == 32);

static_assert(sizeof(std::atomic<bool>) == 1 && std::atomic<bool>::is_always_lock_free,
              "native code reads the cancel flag as one byte");
const unsigned char kNeverCancelled = 0;

}  // namespace

bool buffers_overlap(const ir::Kernel& k, std::span<const BufferArg> buffers) {
    struct Span {
        uintptr_t start, end;
        bool written;
    };
    std::vector<Span> spans;
    for (size_t i = 0; i < k.params.size(); ++i) {
        const ir::Param& p = k.params[i];
        if (p.kind != ir::ParamKind::Buffer) continue;
        const auto start = reinterpret_cast<uintptr_t>(buffers[i].data);
        spans.push_back({start, start + uintptr_t(buffers[i].elements) * ir::scalar_size(p.type), p.access != ir::Access::Read});
    }
    for (size_t a = 0; a < spans.size(); ++a)
        for (size_t b = a + 1; b < spans.size(); ++b)
            if ((spans[a].written || spans[b].written) && spans[a].start < spans[b].end && spans[b].start < spans[a].end)
                return true;
    return false;
}

namespace {

// k's arguments by parameter position, from arguments by name.
std::pair<std::vector<BufferArg>, std::vector<ScalarArg>> by_position(const ir::Kernel& k, const LaunchArgs& args) {
    std::vector<BufferArg> buffers(k.params.size());
    std::vector<ScalarArg> scalars(k.params.size());
    for (size_t i = 0; i < k.params.size(); ++i) {
        const ir::Param& p = k.params[i];
        if (p.kind == ir::ParamKind::Buffer) buffers[i] = args.buffers.at(p.name);
        else scalars[i] = args.scalars.at(p.name);
    }
    return {std::move(buffers), std::move(scalars)};
}

}  // namespace

bool buffers_overlap(const ir::Kernel& k, const LaunchArgs& args) { return buffers_overlap(k, by_position(k, args).first); }

KernelError NativePlan::launch(size_t kernel, const ir::Kernel& k, const LaunchArgs& args, const ExecOptions& options,
                               Counters& counters) const {
    const auto [buffers, scalars] = by_position(k, args);
    return launch(kernel, k, args.grid, buffers, scalars, options, counters);
}

LaunchArgs launch_args(const ir::Kernel& k, int64_t grid, std::span<const BufferArg> buffers,
                       std::span<const ScalarArg> scalars) {
    LaunchArgs la;
    la.grid = grid;
    for (size_t i = 0; i < k.params.size(); ++i) {
        const ir::Param& p = k.params[i];
        if (p.kind == ir::ParamKind::Scalar) la.scalars[p.name] = scalars[i];
        else la.buffers[p.name] = buffers[i];
    }
    return la;
}

KernelError NativePlan::launch(size_t kernel, const ir::Kernel& k, int64_t grid, std::span<const BufferArg> buffers,
                               std::span<const ScalarArg> scalars, const ExecOptions& options, Counters& counters) const {
    if (buffers_overlap(k, buffers)) return run_kernel(k, launch_args(k, grid, buffers, scalars), options, counters);
    // Arguments in parameter order: buffers by address, scalars by the
    // address of their value in the parameter's type.
    const size_t n = k.params.size();
    std::vector<void*> pointers(n);
    std::vector<uint64_t> values(n);
    std::vector<long long> extents(n, 0);
    int64_t elements = 0;  // in every buffer the kernel reads or writes
    for (size_t i = 0; i < n; ++i) {
        const ir::Param& p = k.params[i];
        if (p.kind == ir::ParamKind::Buffer) {
            pointers[i] = buffers[i].data;
            extents[i] = buffers[i].elements;
            elements += buffers[i].elements;
        } else {
            const ScalarArg a = convert_scalar(p.type, scalars[i]);
            const bool f = ir::is_float(p.type);
            const ir::HostValue v{p.type, f ? 0 : a.i, f ? a.f : 0.0};
            ir::store_element(p.type, v, &values[i]);
            pointers[i] = &values[i];
        }
    }
    ++counters.launches;
    ++counters.native_launches;
    if (grid <= 0) return {};
    const Entry entry = entries_.at(kernel);
    const auto* cancel = options.cancel ? reinterpret_cast<const unsigned char*>(options.cancel) : &kNeverCancelled;
    // A small launch runs on the calling thread: waking the pool's workers
    // costs more than its work (2 blocks of a 2000-element map: 36 us on the
    // pool, 2 us here). A kernel of one-thread blocks is a block per core by
    // design (lower_permute.cpp's private copies) and keeps its workers.
    const bool small = k.block_size > 1 && grid * k.block_size <= kSmallLaunchThreads && elements <= kSmallLaunchElements;
    const int workers = small ? 1 : worker_count(options.threads, grid);
    auto result = [](const NativeError& e) { return e.code >= 0 ? KernelError{e.code, e.index, e.extent} : KernelError{}; };
    if (workers == 1) {  // every block here, without the pool's bookkeeping
        NativeError e;
        if (entry(pointers.data(), extents.data(), 0, grid, grid, &e, cancel) != 0)
            throw Error(ErrorKind::Interrupted, Loc{}, "interrupted");
        return result(e);
    }
    // A few chunks per worker balance uneven blocks; more would only add
    // claims (a chunk of native blocks is cheap to start).
    const int64_t chunk = (grid + int64_t(workers) * 4 - 1) / (int64_t(workers) * 4);
    std::mutex merge_mutex;
    NativeError first;  // the lowest failing thread over every chunk
    std::atomic<bool> cancelled{false};
    run_in_chunks(grid, workers, chunk, [&]() -> ChunkWork {
        return [&](int64_t begin, int64_t end, const std::atomic<bool>&) {
            NativeError e;
            if (entry(pointers.data(), extents.data(), begin, end, grid, &e, cancel) != 0) cancelled = true;
            if (e.code >= 0) {
                std::lock_guard hold(merge_mutex);
                if (e.key < first.key) first = e;
            }
        };
    });
    if (cancelled) throw Error(ErrorKind::Interrupted, Loc{}, "interrupted");
    return result(first);
}

// ---------------------------------------------------------------- the tier

struct NativeTier::PlanState {
    std::weak_ptr<const ir::LaunchPlan> plan;
    int runs = 0;
    bool started = false;  // a build was started (or is done)
    bool finished = false;  // the build is over (native set, or it failed)
    std::shared_ptr<const NativePlan> native;  // set once built
};

NativeTier::NativeTier(Tier tier) : tier_(tier) {}

NativeTier::NativeTier() {
    std::string problem;
    tier_ = tier_from_env(&problem);
    if (!problem.empty()) notices_.push_back(problem);
}

NativeTier::~NativeTier() {
    builders_.join_all();  // they use the tier's other members
}

std::shared_ptr<NativeTier::PlanState> NativeTier::state_of(const std::shared_ptr<const ir::LaunchPlan>& run) {
    // A relocated copy runs the code built for the plan it was copied from.
    const std::shared_ptr<const ir::LaunchPlan>& plan = run->relocated_from ? run->relocated_from : run;
    std::lock_guard hold(mutex_);
    // A plan freed and another made at the same address is a new plan.
    if (const auto* found = plans_.find(plan.get()); found && (*found)->plan.lock() == plan) return *found;
    auto s = std::make_shared<PlanState>();
    s->plan = plan;
    plans_.insert(plan.get(), s);
    return s;
}

void NativeTier::notice(const std::string& text) {
    std::lock_guard hold(mutex_);
    if (std::find(said_.begin(), said_.end(), text) != said_.end()) return;
    said_.push_back(text);
    notices_.push_back(text);
}

std::string NativeTier::take_notice() {
    std::lock_guard hold(mutex_);
    std::string all;
    for (const auto& n : notices_) all += (all.empty() ? "" : "\n") + n;
    notices_.clear();
    return all;
}

std::shared_ptr<NativePlan> NativePlan::build(const std::vector<ir::Kernel>& kernels, std::string* why,
                                              std::vector<std::string>* skipped) {
    std::vector<ir::Kernel> printable;
    std::vector<bool> runs_natively;  // by kernel
    for (const ir::Kernel& k : kernels) {
        const std::string reason = ir::cpu_unsupported_reason(k);
        runs_natively.push_back(reason.empty());
        if (reason.empty()) printable.push_back(k);
        else if (skipped) skipped->push_back(k.name + " (" + reason + ")");
    }
    if (printable.empty()) {
        *why = "no kernel the CPU printer supports";
        return nullptr;
    }
    native::NativeCompiler& compiler = native::shared_native_compiler();
    static const bool checked = std::getenv("SHOAL_NATIVE_CHECKED") != nullptr;
    const std::string source = ir::print_cpu(printable, checked);
    if (std::getenv("SHOAL_DUMP_NATIVE")) std::fprintf(stderr, "%s\n", source.c_str());  // to read what is compiled
    native::NativeBuild b = compiler.build(source);
    if (!b.module) {
        *why = b.error;
        return nullptr;
    }
    auto n = std::make_shared<NativePlan>();
    n->module_ = b.module;
    n->compile_seconds = b.compile_seconds;
    n->load_seconds = b.load_seconds;
    n->cache_hit = b.cache_hit;
    for (size_t i = 0; i < kernels.size(); ++i) {
        void* f = runs_natively[i] ? b.module->symbol(ir::cpu_entry_symbol(kernels[i].name)) : nullptr;
        n->entries_.push_back(reinterpret_cast<Entry>(f));
    }
    return n;
}

// Builds the plan's native form; on any failure the plan stays interpreted
// with a notice.
void NativeTier::build(const std::shared_ptr<PlanState>& s, const std::shared_ptr<const ir::LaunchPlan>& plan) {
    struct Finished {  // however the build ends (a run waiting for it looks)
        NativeTier& tier;
        PlanState& state;
        ~Finished() {
            std::lock_guard hold(tier.mutex_);
            state.finished = true;
        }
    } finished{*this, *s};
    const native::Toolchain& toolchain = native::shared_native_compiler().toolchain();
    if (!toolchain.why_not.empty()) {
        notice("native code: no C++ compiler (" + toolchain.why_not +
               "): kernels run on the interpreter (set SHOAL_CXX to a compiler)");
        return;
    }
    if (const std::string& p = native::shared_native_compiler().disk_problem(); !p.empty())
        notice("native code is not cached on disk: " + p);
    std::string why;
    std::vector<std::string> skipped;
    std::shared_ptr<NativePlan> n = NativePlan::build(plan->kernels, &why, &skipped);
    if (!skipped.empty()) {
        std::string list;
        for (const auto& k : skipped) list += (list.empty() ? "" : ", ") + k;
        notice("native code: interpreted kernel " + list);
    }
    if (!n) {
        if (!skipped.empty() && skipped.size() == plan->kernels.size()) return;
        notice("native code: building plan " + plan->name + " failed; it runs on the interpreter:\n" +
               why.substr(0, std::min<size_t>(why.size(), 600)));
        return;
    }
    ++native_plans_;
    std::lock_guard hold(mutex_);
    s->native = std::move(n);
}

// Whether the caller is the one to build s (once per plan); under mutex_.
bool NativeTier::claim_build(PlanState& s) { return !std::exchange(s.started, true); }

void NativeTier::start_background_build(const std::shared_ptr<PlanState>& s,
                                        const std::shared_ptr<const ir::LaunchPlan>& plan) {
    std::lock_guard hold(mutex_);
    if (!claim_build(*s)) return;
    spawn_builder(s, plan);
}

void NativeTier::spawn_builder(const std::shared_ptr<PlanState>& s, const std::shared_ptr<const ir::LaunchPlan>& plan) {
    builders_.start([this, s, plan] {
        try {  // nothing may escape a thread: the plan stays interpreted
            build(s, plan);
        } catch (const std::exception& e) {
            notice(std::string("native code: building plan ") + plan->name + " failed: " + e.what());
        }
    });
}

std::shared_ptr<const NativePlan> NativeTier::for_run(const std::shared_ptr<const ir::LaunchPlan>& plan,
                                                     const std::atomic<bool>* cancel) {
    if (tier_ == Tier::Interpret) return nullptr;
    const std::shared_ptr<PlanState> s = state_of(plan);
    if (tier_ == Tier::Native || tier_ == Tier::Compare) {
        bool first;
        {
            std::lock_guard hold(mutex_);
            first = claim_build(*s);
            // Ctrl-C can stop the wait, not the compiler: the build runs on a
            // thread of its own (and a later run finds it done, or waits again).
            if (first && cancel) spawn_builder(s, plan);
        }
        if (first && !cancel) build(s, plan);
        if (cancel)
            runtime::wait_unless_cancelled(
                [&] {
                    std::lock_guard hold(mutex_);
                    return s->finished;
                },
                *cancel, std::chrono::milliseconds(2));
        if (first) {
            std::lock_guard hold(mutex_);
            if (s->native) {
                const auto kernels = int64_t(plan->kernels.size());
                if (s->native->cache_hit) {
                    waited_.cache_hits += kernels;
                    waited_.cache_seconds += s->native->load_seconds;
                } else {
                    waited_.compiled += kernels;
                    waited_.seconds += s->native->compile_seconds;
                }
            }
        }
    }
    std::lock_guard hold(mutex_);
    ++s->runs;
    return s->native;
}

std::shared_ptr<const NativePlan> NativeTier::when_ready(const std::shared_ptr<const ir::LaunchPlan>& plan,
                                                         double seconds) {
    if (tier_ != Tier::Auto) return nullptr;
    const std::shared_ptr<PlanState> s = state_of(plan);
    if (seconds > kLongRun) start_background_build(s, plan);
    std::lock_guard hold(mutex_);
    return s->native;
}

void NativeTier::ran_interpreted(const std::shared_ptr<const ir::LaunchPlan>& plan, double seconds) {
    if (tier_ != Tier::Auto) return;
    const std::shared_ptr<PlanState> s = state_of(plan);
    int runs;
    {
        std::lock_guard hold(mutex_);
        runs = s->runs;
    }
    // Twice, or once for long: the build (0.1-1 s on another core) pays off.
    if (runs >= 2 || seconds > kLongRun) start_background_build(s, plan);
}

std::string NativeTier::cache_report() const {
    if (tier_ == Tier::Interpret) return "native code: none (SHOAL_CPU_TIER=interpret)";
    const native::NativeCompiler& compiler = native::shared_native_compiler();
    if (!compiler.toolchain().why_not.empty()) return "native code: none (" + compiler.toolchain().why_not + ")";
    const native::NativeCompiler::Stats st = compiler.stats();
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f", st.compile_seconds * 1e3);
    std::string text = "native code (" + compiler.toolchain().identity + ", one shared object per plan)\n  this process: " +
                       std::to_string(st.compiles) + " built (" + seconds + " ms of the C++ compiler), " +
                       std::to_string(st.hits) + " from the disk cache, " + std::to_string(st.compile_failures) +
                       " failed; " + std::to_string(native_plans_.load()) + " plans run natively";
    {
        std::lock_guard hold(mutex_);
        size_t loaded = 0;
        for (const auto& [plan, state] : plans_) loaded += state->native != nullptr;
        text += "\n  in memory: " + std::to_string(plans_.size()) + " plans tracked, " + std::to_string(loaded) +
                " with their shared object open (at most " + std::to_string(plans_.capacity()) + ")";
    }
    if (!compiler.disk_problem().empty()) text += "\n  not cached on disk: " + compiler.disk_problem();
    return text;
}

CompileCounters NativeTier::waited_builds() const {
    std::lock_guard hold(mutex_);
    return waited_;
}

std::string NativeTier::describe() const {
    switch (tier_) {
        case Tier::Interpret: return "kernels interpreted (SHOAL_CPU_TIER=interpret)";
        case Tier::Native: return "kernels compiled to native code before they run (SHOAL_CPU_TIER=native)";
        case Tier::Compare: return "kernels run both natively and interpreted, compared (SHOAL_CPU_TIER=compare)";
        case Tier::Auto: break;
    }
    const native::Toolchain& t = native::system_toolchain();
    if (!t.why_not.empty()) return "kernels interpreted: no C++ compiler for native code (" + t.why_not + ")";
    return "kernels interpreted first, then native code built in the background by " + t.compiler + " (" +
           t.identity + ")";
}

}  // namespace shoal::cpu
