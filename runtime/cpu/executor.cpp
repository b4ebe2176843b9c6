// run_kernel: binds the launch's arguments, takes the kernel's compiled
// program from a process-wide cache (compiling it on the first launch), then
// spreads its blocks over the thread pool. Each worker claims blocks one at a time from
// an atomic counter and runs each whole (all phases, barriers between them)
// in a Frame of its own: the workers share only global memory, the error
// record and the counters.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <thread>
#include <unordered_map>

#include "lang/lru_map.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/nodes.h"
#include "runtime/cpu/program.h"
#include "runtime/cpu/scalar_ops.h"
#include "runtime/cpu/thread_pool.h"

namespace shoal::cpu {

// ---------------------------------------------------------------- errors
void fail(const Frame& f, const std::string& what) {
    throw Error(ErrorKind::Internal, Loc{},
                "CPU executor: kernel '" + f.prog->kernel_name + "', phase " + std::to_string(f.phase) + ": " + what);
}

void compile_fail(const ir::Kernel& k, const std::string& what) {
    throw Error(ErrorKind::Internal, Loc{}, "CPU executor: kernel '" + k.name + "': " + what);
}

void check_cancel(const LaunchState& s) {
    if (s.cancel && s.cancel->load(std::memory_order_relaxed)) throw Error(ErrorKind::Interrupted, Loc{}, "interrupted");
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
    const size_t regs = prog.reg_bytes;
    const size_t pointers = align64(2 * size_t(prog.num_regs) * sizeof(std::byte*));
    const size_t masks = align64(size_t(prog.num_mask_slots) * bs * sizeof(uint16_t));
    const size_t shared = align64(prog.shared_bytes);
    const size_t tracks = prog.check ? prog.shared_elements * sizeof(SharedTrack) : 0;
    std::byte* base = arena.get(regs + pointers + masks + shared + tracks);
    // Zeroed so that a (buggy) read of an unset register or shared word is
    // at least deterministic; tracks must start at epoch 0.
    std::memset(base, 0, regs);
    std::memset(base + regs + pointers + masks, 0, shared + tracks);

    Frame f;
    f.prog = &prog;
    f.launch = &state;
    f.buffers = state.buffers.data();
    f.regs = base;
    f.reg_offset = prog.reg_offset.data();
    f.read_at = reinterpret_cast<std::byte**>(base + regs);
    f.write_at = f.read_at + prog.num_regs;
    for (int r = 0; r < prog.num_regs; ++r) f.read_at[r] = f.write_at[r] = base + prog.reg_offset[size_t(r)];
    f.masks = reinterpret_cast<uint16_t*>(base + regs + pointers);
    f.shared = base + regs + pointers + masks;
    f.tracks = reinterpret_cast<SharedTrack*>(f.shared + shared);
    const std::vector<RegInit>* init_lists[] = {&prog.inits, &state.inits};
    for (const std::vector<RegInit>* inits : init_lists) {
        for (const RegInit& init : *inits) {
            if (init.kind == RegInit::ThreadIdx) {
                int32_t* t = f.reg<int32_t>(init.reg);
                for (int i = 0; i < prog.block_size; ++i) t[i] = i;
            } else {
                broadcast(f, init.reg, init.type, init.i, init.f);
            }
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
    s.flops.fetch_add(c.flops, relaxed);
    c = LocalCounters{};
}

// ---------------------------------------------------------------- scheduling
// Each worker runs whole blocks in a Frame of its own; its counters are
// merged into the launch once per chunk, before the chunk counts as done
// (the launch may return right after).
void run_blocks(const Program& prog, LaunchState& state, const ExecOptions& options) {
    const int workers = worker_count(options.threads, state.grid);
    const int64_t chunk = state.grid / (int64_t(workers) * 16);  // small enough to balance
    run_in_chunks(state.grid, workers, chunk, [&]() -> ChunkWork {
        auto frame = std::make_shared<Frame>(make_frame(prog, state));
        return [frame, &state](int64_t begin, int64_t end, const std::atomic<bool>& stop) {
            for (int64_t k = begin; k < end && !stop.load(std::memory_order_relaxed); ++k) {
                check_cancel(state);
                run_block(*frame, k);
            }
            merge(state, frame->counters);
        };
    });
}

// ---------------------------------------------------------------- arguments
// A scalar argument converted to its parameter's declared type, as the
// register init of that parameter.
RegInit scalar_init(int reg, ir::ScalarType t, const ScalarArg& a) {
    const ScalarArg v = convert_scalar(t, a);
    return RegInit{reg, t, RegInit::Value, ir::is_float(t) ? 0 : v.i, ir::is_float(t) ? v.f : 0};
}

// Checks the launch's arguments against k's parameters (before compiling, so
// these errors come first, as when compilation resolved them) and binds the
// buffers to state. Scalars are bound by bind_scalars once the program's
// registers are known.
void bind_buffers(const ir::Kernel& k, const LaunchArgs& args, LaunchState& state) {
    if (k.block_size < 1 || k.block_size > 1024)
        compile_fail(k, "block size " + std::to_string(k.block_size) + " outside 1..1024");
    if (args.grid < 0) compile_fail(k, "negative grid size " + std::to_string(args.grid));
    state.grid = args.grid;
    for (const auto& prm : k.params) {
        if (prm.kind == ir::ParamKind::Buffer) {
            auto it = args.buffers.find(prm.name);
            if (it == args.buffers.end()) compile_fail(k, "no buffer argument for parameter '" + prm.name + "'");
            if (!it->second.data && it->second.elements > 0)
                compile_fail(k, "null buffer for parameter '" + prm.name + "'");
            state.buffers.push_back(BoundBuffer{static_cast<std::byte*>(it->second.data), it->second.elements});
        } else if (!args.scalars.count(prm.name)) {
            compile_fail(k, "no scalar argument for parameter '" + prm.name + "'");
        }
    }
}

// Which buffers may be read or written in place (BoundBuffer): decided per
// launch, as two arguments may share memory.
void bind_aliasing(const ir::Kernel& k, const Program& prog, LaunchState& state) {
    std::vector<std::pair<uintptr_t, uintptr_t>> spans;  // [start, end) bytes by slot
    for (const auto& prm : k.params) {
        if (prm.kind != ir::ParamKind::Buffer) continue;
        const BoundBuffer& b = state.buffers[spans.size()];
        const auto start = reinterpret_cast<uintptr_t>(b.data);
        spans.emplace_back(start, start + uintptr_t(b.elements) * ir::scalar_size(prm.type));
    }
    auto overlap = [&](size_t a, size_t b) {
        return spans[a].first < spans[b].second && spans[b].first < spans[a].second;
    };
    for (size_t a = 0; a < spans.size(); ++a) {
        bool overlaps_written = false, overlaps_any = false;
        for (size_t b = 0; b < spans.size(); ++b) {
            if (b == a || !overlap(a, b)) continue;
            overlaps_any = true;
            overlaps_written = overlaps_written || prog.written[b];
        }
        state.buffers[a].read_in_place = !prog.written[a] && !overlaps_written;
        state.buffers[a].write_in_place = !overlaps_any;
    }
}

void bind_scalars(const ir::Kernel& k, const Program& prog, const LaunchArgs& args, LaunchState& state) {
    size_t s = 0;
    for (const auto& prm : k.params)
        if (prm.kind == ir::ParamKind::Scalar)
            state.inits.push_back(scalar_init(prog.scalar_regs[s++], prm.type, args.scalars.at(prm.name)));
    if (prog.grid_reg >= 0) state.inits.push_back(RegInit{prog.grid_reg, ir::ScalarType::I64, RegInit::Value, args.grid, 0});
}

// ---------------------------------------------------------------- program cache
// Compiled programs by kernel. IR trees are immutable (shared_ptr<const>)
// and an entry holds the kernel's top-level block statements, so the trees
// stay alive and equal root pointers mean the very same tree: a key compares
// the few header fields compile reads plus the root pointers, no tree walk
// or printing per launch. Copies of a Kernel (a copied LaunchPlan) share the
// entry.
class ProgramCache {
public:
    static ProgramCache& instance() {
        static ProgramCache cache;
        return cache;
    }

    std::shared_ptr<const Program> get(const ir::Kernel& k, const ExecOptions& options) {
        const ir::BlockStmt* root = k.body.empty() ? nullptr : k.body[0].get();
        {
            std::lock_guard lock(mutex_);
            if (auto found = find(k, root, options.check)) return found;
        }
        // Compiled outside the lock (other kernels need not wait); two threads
        // racing on one new kernel both compile it, and the first one wins.
        std::shared_ptr<const Program> prog = compile(k, options);
        std::lock_guard lock(mutex_);
        if (auto found = find(k, root, options.check)) return found;
        // Bounded: a session making endless new kernels must not keep every
        // tree alive; in-flight launches keep their program through the shared_ptr.
        Entry entry{k.name, k.block_size, options.check, k.params, k.shared, k.checks.size(), k.body, prog};
        if (std::vector<Entry>* same_root = entries_.find(root)) same_root->push_back(std::move(entry));
        else entries_.insert(root, {std::move(entry)});
        return prog;
    }

    size_t size() {
        std::lock_guard lock(mutex_);
        return entries_.size();
    }
    static constexpr size_t kMaxEntries = 512;

private:

    struct Entry {
        std::string name;
        int block_size;
        bool check;
        std::vector<ir::Param> params;
        std::vector<ir::SharedArray> shared;
        size_t checks;
        std::vector<ir::BlockStmtPtr> body;
        std::shared_ptr<const Program> prog;

        bool matches(const ir::Kernel& k, bool chk) const {
            if (chk != check || k.block_size != block_size || k.checks.size() != checks || k.name != name ||
                k.params.size() != params.size() || k.shared.size() != shared.size() || k.body != body)
                return false;
            for (size_t i = 0; i < params.size(); ++i) {
                const ir::Param &a = params[i], &b = k.params[i];
                if (a.name != b.name || a.kind != b.kind || a.type != b.type) return false;
            }
            for (size_t i = 0; i < shared.size(); ++i) {
                const ir::SharedArray &a = shared[i], &b = k.shared[i];
                if (a.name != b.name || a.type != b.type || a.size != b.size) return false;
            }
            return true;
        }
    };

    std::shared_ptr<const Program> find(const ir::Kernel& k, const ir::BlockStmt* root, bool check) {
        if (const std::vector<Entry>* same_root = entries_.find(root))
            for (const Entry& e : *same_root)
                if (e.matches(k, check)) return e.prog;
        return nullptr;
    }

    std::mutex mutex_;
    LruMap<const ir::BlockStmt*, std::vector<Entry>> entries_{kMaxEntries};  // by the body's root
};

}  // namespace

std::pair<size_t, size_t> interpreter_programs() {
    return {ProgramCache::instance().size(), ProgramCache::kMaxEntries};
}

ScalarArg convert_scalar(ir::ScalarType t, const ScalarArg& a) {
    const bool from_float = ir::is_float(a.type);
    ScalarArg v;
    v.type = t;
    if (ir::is_float(t)) v.f = from_float ? a.f : static_cast<double>(a.i);
    else if (t == ir::ScalarType::Bool) v.i = from_float ? a.f != 0 : a.i != 0;
    else v.i = from_float ? ops::saturate<int64_t>(a.f) : a.i;
    return v;
}

KernelError run_kernel(const ir::Kernel& k, const LaunchArgs& args, const ExecOptions& options, Counters& counters) {
    LaunchState state;
    state.cancel = options.cancel;
    bind_buffers(k, args, state);
    std::shared_ptr<const Program> prog = ProgramCache::instance().get(k, options);
    bind_scalars(k, *prog, args, state);
    bind_aliasing(k, *prog, state);
    ++counters.launches;
    if (state.grid > 0 && !prog->body.empty()) run_blocks(*prog, state, options);
    counters.global_bytes_loaded += state.bytes_loaded.load();
    counters.global_bytes_stored += state.bytes_stored.load();
    counters.global_sectors += state.sectors.load();
    counters.shared_bank_conflicts += state.bank_conflicts.load();
    counters.atomics += state.atomics.load();
    counters.barriers += state.barriers.load();
    counters.flops += state.flops.load();
    return state.error;
}

}  // namespace shoal::cpu
