// run_kernel: compiles the kernel once for the launch, then spreads its
// blocks over the thread pool. Each worker claims blocks one at a time from
// an atomic counter and runs each whole (all phases, barriers between them)
// in a Frame of its own: the workers share only global memory, the error
// record and the counters.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <thread>

#include "runtime/cpu/executor.h"
#include "runtime/cpu/nodes.h"
#include "runtime/cpu/program.h"
#include "runtime/cpu/thread_pool.h"

namespace shoal::cpu {

// ---------------------------------------------------------------- errors
void fail(const Frame& f, const std::string& what) {
    throw Error(ErrorKind::Internal, Loc{},
                "CPU executor: kernel '" + f.prog->kernel->name + "', phase " + std::to_string(f.phase) + ": " + what);
}

void compile_fail(const ir::Kernel& k, const std::string& what) {
    throw Error(ErrorKind::Internal, Loc{}, "CPU executor: kernel '" + k.name + "': " + what);
}

void LaunchState::record_error(uint64_t key, int code, int64_t index, int64_t extent) {
    std::lock_guard lock(error_mutex);
    if (key >= error_key.load(std::memory_order_relaxed)) return;
    error = KernelError{code, index, extent};
    error_key.store(key, std::memory_order_relaxed);
}

namespace {

// ---------------------------------------------------------------- frames
// The memory of a worker's Frame, kept per OS thread and reused by later
// launches (no allocation and page faults per launch once warm).
struct Arena {
    std::unique_ptr<std::byte[]> bytes;
    size_t capacity = 0;

    std::byte* get(size_t n) {
        if (n > capacity) {
            bytes = std::make_unique_for_overwrite<std::byte[]>(n);
            capacity = n;
        }
        return bytes.get();
    }
};

size_t align64(size_t n) { return (n + 63) & ~size_t(63); }

// Lays out a Frame for prog in the calling thread's arena and fills the
// registers that hold per-launch values.
Frame make_frame(const Program& prog, LaunchState& state) {
    thread_local Arena arena;
    const auto bs = size_t(prog.block_size);
    const size_t regs = align64(size_t(prog.num_regs) * bs * 8);
    const size_t masks = align64(size_t(prog.num_mask_slots) * bs * sizeof(uint16_t));
    const size_t shared = align64(prog.shared_bytes);
    const size_t tracks = prog.check ? prog.shared_elements * sizeof(SharedTrack) : 0;
    std::byte* base = arena.get(regs + masks + shared + tracks);
    // Zeroed so that a (buggy) read of an unset register or shared word is
    // at least deterministic; tracks must start at epoch 0.
    std::memset(base, 0, regs);
    std::memset(base + regs + masks, 0, shared + tracks);

    Frame f;
    f.prog = &prog;
    f.launch = &state;
    f.regs = base;
    f.reg_stride = bs * 8;
    f.masks = reinterpret_cast<uint16_t*>(base + regs);
    f.shared = base + regs + masks;
    f.tracks = reinterpret_cast<SharedTrack*>(base + regs + masks + shared);
    for (const RegInit& init : prog.inits) {
        if (init.kind == RegInit::ThreadIdx) {
            int32_t* t = f.reg<int32_t>(init.reg);
            for (int i = 0; i < prog.block_size; ++i) t[i] = i;
        } else {
            broadcast(f, init.reg, init.type, init.i, init.f);
        }
    }
    for (ExprNode* e : prog.setup) e->eval(f, Mask::range(0, prog.block_size));
    return f;
}

void run_block(Frame& f, int64_t block) {
    f.block = block;
    f.reg<int64_t>(f.prog->block_idx_reg)[0] = block;  // uniform: lane 0 only
    for (BlockNode* b : f.prog->body) b->exec(f);
}

void merge(LaunchState& s, LocalCounters& c) {
    constexpr auto relaxed = std::memory_order_relaxed;
    s.bytes_loaded.fetch_add(c.bytes_loaded, relaxed);
    s.bytes_stored.fetch_add(c.bytes_stored, relaxed);
    s.sectors.fetch_add(c.sectors, relaxed);
    s.bank_conflicts.fetch_add(c.bank_conflicts, relaxed);
    s.atomics.fetch_add(c.atomics, relaxed);
    s.barriers.fetch_add(c.barriers, relaxed);
    c = LocalCounters{};
}

// ---------------------------------------------------------------- scheduling
// One launch's blocks. Helpers hold it by shared_ptr: a helper that starts
// after the launch returned finds no block to claim and never touches the
// program or the state again.
struct Job {
    const Program* prog;
    LaunchState* state;
    int64_t blocks;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::atomic<bool> failed{false};
    std::mutex failure_mutex;
    std::exception_ptr failure;

    void fail_with(std::exception_ptr e) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::move(e);
        failed.store(true);
    }

    void finish_block() {
        if (done.fetch_add(1) + 1 == blocks) done.notify_all();
    }

    // Claims and runs blocks until none is left. After a failure the
    // remaining blocks are claimed and skipped (so `done` reaches `blocks`).
    void work() {
        int64_t b = next.fetch_add(1);
        if (b >= blocks) return;
        Frame f;
        try {
            f = make_frame(*prog, *state);
        } catch (...) {
            fail_with(std::current_exception());
        }
        for (; b < blocks; b = next.fetch_add(1)) {
            if (!failed.load(std::memory_order_relaxed)) {
                try {
                    run_block(f, b);
                } catch (...) {
                    fail_with(std::current_exception());
                }
                merge(*state, f.counters);
            }
            finish_block();
        }
    }

    void wait() {
        for (int64_t d = done.load(); d < blocks; d = done.load()) done.wait(d);
    }
};

int worker_count(const ExecOptions& options, int64_t blocks) {
    int n = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    return int(std::min<int64_t>(n, blocks));
}

void run_blocks(const Program& prog, LaunchState& state, const ExecOptions& options) {
    auto job = std::make_shared<Job>();
    job->prog = &prog;
    job->state = &state;
    job->blocks = prog.grid;
    const int helpers = worker_count(options, prog.grid) - 1;
    if (helpers > 0) {
        ThreadPool& pool = ThreadPool::instance();
        pool.ensure(helpers);
        for (int h = 0; h < helpers; ++h) pool.submit([job] { job->work(); });
    }
    job->work();
    job->wait();
    if (job->failure) std::rethrow_exception(job->failure);
}

}  // namespace

KernelError run_kernel(const ir::Kernel& k, const LaunchArgs& args, const ExecOptions& options, Counters& counters) {
    auto prog = compile(k, args, options);
    LaunchState state;
    ++counters.launches;
    if (prog->grid > 0 && !prog->body.empty()) run_blocks(*prog, state, options);
    counters.global_bytes_loaded += state.bytes_loaded.load();
    counters.global_bytes_stored += state.bytes_stored.load();
    counters.global_sectors += state.sectors.load();
    counters.shared_bank_conflicts += state.bank_conflicts.load();
    counters.atomics += state.atomics.load();
    counters.barriers += state.barriers.load();
    return state.error;
}

}  // namespace shoal::cpu
