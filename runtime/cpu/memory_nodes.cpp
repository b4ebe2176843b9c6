// Memory vector nodes: global and shared loads and stores, atomics and warp
// shuffles, with the bounds checks, traffic counters and (check mode)
// shared-memory race tracking of every access.
//
// Bounds are always checked: an out-of-bounds access is a bug of the compiler
// and must not corrupt the user's session; the check is one predictable
// compare per lane (or two per block on the coalesced fast path).
#include <atomic>
#include <cstring>
#include <string>

#include "runtime/cpu/memory_model.h"
#include "runtime/cpu/nodes.h"
#include "runtime/cpu/scalar_ops.h"

namespace shoal::cpu {

namespace {

using ir::AtomicOp;
using ir::ScalarType;
using ir::ShuffleOp;

std::string lane_text(const Frame& f, int lane) {
    return "thread " + std::to_string(lane) + " of block " + std::to_string(f.block);
}

[[noreturn]] void out_of_bounds(const Frame& f, const char* what, const std::string& mem, int lane,
                                int64_t index, int64_t extent) {
    fail(f, std::string(what) + " '" + mem + "' at index " + std::to_string(index) +
                " out of bounds (extent " + std::to_string(extent) + ") by " + lane_text(f, lane));
}

// Checks the lanes of a coalesced access first.. (lanes [lo, hi)) at once.
void check_span(const Frame& f, const char* what, const std::string& mem, int64_t first, const Mask& m,
                int64_t extent) {
    if (first >= 0 && first <= extent - m.count) return;
    const int lane = first < 0 ? m.lo : m.lo + int(std::max<int64_t>(0, extent - first));
    out_of_bounds(f, what, mem, lane, first + (lane - m.lo), extent);
}

// ---------------------------------------------------------------- race tracking
enum class Use { Read, Write, Atomic };

const char* use_name(Use u) { return u == Use::Read ? "reads" : u == Use::Write ? "writes" : "atomically updates"; }

bool other(int16_t who, int lane) { return who != -1 && who != lane; }

// Records lane's access of shared element `index` in the current phase and
// fails when another lane wrote it, or it writes what another lane used.
void track(Frame& f, const SharedLayout& s, int64_t index, int lane, Use use) {
    SharedTrack& t = f.tracks[s.track_base + size_t(index)];
    if (t.epoch != f.epoch) t = SharedTrack{f.epoch, -1, -1, -1};
    const char* conflict = nullptr;
    if (other(t.writer, lane)) conflict = "written";
    else if (use != Use::Read && other(t.reader, lane)) conflict = "read";
    else if (use != Use::Atomic && other(t.atomic, lane)) conflict = "atomically updated";
    if (conflict) {
        fail(f, "shared-memory race on '" + s.name + "'[" + std::to_string(index) + "]: " + lane_text(f, lane) +
                    " " + use_name(use) + " an element another thread " + conflict +
                    " in the same phase (no barrier between)");
    }
    int16_t& slot = use == Use::Read ? t.reader : use == Use::Write ? t.writer : t.atomic;
    slot = slot == -1 || slot == lane ? int16_t(lane) : int16_t(-2);
}

// ---------------------------------------------------------------- loads
template <class T>
T read_elem(const T* p) {
    if constexpr (is_bool_v<T>) return *p != 0;  // memory bytes other than 0/1 read as true
    else return *p;
}

// Whether lanes first.. of a contiguous access of m's lanes are in bounds.
bool span_in_bounds(int64_t first, const Mask& m, int64_t extent) { return first >= 0 && first <= extent - m.count; }

// The first element of a contiguous affine access: lane m.lo's index.
int64_t first_index(int64_t base, const Mask& m) { return int64_t(uint64_t(base) + uint64_t(m.lo)); }

// Asks for the cache line holding p. GCC deletes a loop of nothing but
// __builtin_prefetch (no side effects, to the optimiser), hence the asm.
inline void prefetch(const void* p) {
#if defined(__x86_64__) && defined(__GNUC__)
    asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
    __builtin_prefetch(p);
#endif
}

// AccessHints::prefetch: the elements the lanes of range m will access on
// the loop's next trip (first + Frame::prefetch_ahead..), if in buf.
template <class T>
void prefetch_next_trip(const Frame& f, const Mask& m, const BoundBuffer& buf, int64_t first) {
    const int64_t ahead = f.prefetch_ahead;
    if (ahead <= 0 || ahead > buf.elements - m.count - first) return;
    const T* next = reinterpret_cast<const T*>(buf.data) + first + ahead;
    for (int k = 0; k < m.count; k += 64 / int(sizeof(T))) prefetch(next + k);
}

// The lanes of range m read elements first.. of buf: copied into the output
// register, or, where the launch allows it, left in place (the register
// then reads the buffer; not when a store has the output written elsewhere).
template <class T>
void load_contiguous(Frame& f, const Mask& m, int out, AccessHints hints, const BoundBuffer& buf, int64_t first,
                     const std::string& name) {
    check_span(f, "load of global", name, first, m, buf.elements);
    if (hints.prefetch) prefetch_next_trip<T>(f, m, buf, first);
    const T* src = reinterpret_cast<const T*>(buf.data) + first;
    if (hints.in_place && buf.read_in_place && f.writes_own(out)) {
        // Lane i at src + (i - lo): an address computed as an integer, as it
        // may lie before the buffer.
        f.read_at[out] = reinterpret_cast<std::byte*>(reinterpret_cast<uintptr_t>(src) - uintptr_t(m.lo) * sizeof(T));
    } else {
        std::memcpy(f.out<T>(out) + m.lo, src, sizeof(T) * size_t(m.count));
    }
    f.counters.bytes_loaded += int64_t(sizeof(T)) * m.count;
    f.counters.sectors += contiguous_sectors(first, m.lo, m.hi, sizeof(T));
}

template <class T>
void load_scattered(Frame& f, const Mask& m, T* o, const int64_t* ix, const BoundBuffer& buf,
                    const std::string& name) {
    const T* base = reinterpret_cast<const T*>(buf.data);
    for_lanes(m, [&](int i) {
        const int64_t k = ix[i];
        if (uint64_t(k) >= uint64_t(buf.elements)) out_of_bounds(f, "load of global", name, i, k, buf.elements);
        o[i] = read_elem(base + k);
    });
    f.counters.bytes_loaded += int64_t(sizeof(T)) * m.count;
    f.counters.sectors += scattered_sectors(ix, m, sizeof(T));
}

template <class T>
struct GlobalLoad final : ExprNode {
    GlobalRef mem;
    int index;
    AccessHints hints;
    GlobalLoad(GlobalRef m, int i, AccessHints h) : mem(std::move(m)), index(i), hints(h) {}

    void compute(Frame& f, const Mask& m) override {
        const int64_t* ix = f.in<int64_t>(index);
        const BoundBuffer buf = f.buffers[mem.slot];
        if constexpr (!is_bool_v<T>) {
            if (m.is_range() && is_consecutive(ix, m.lo, m.hi))
                return load_contiguous<T>(f, m, out, hints, buf, ix[m.lo], mem.name);
        }
        load_scattered(f, m, f.out<T>(out), ix, buf, mem.name);
    }
};

// A load at base + lane * stride: contiguous for stride 1 without looking at
// lanes; other strides (and lane lists) compute the index lanes.
template <class T>
struct AffineGlobalLoad final : ExprNode {
    GlobalRef mem;
    AffineIndex index;
    int lanes;  // scratch: the index lanes
    AccessHints hints;
    AffineGlobalLoad(GlobalRef m, const AffineIndex& i, int l, AccessHints h)
        : mem(std::move(m)), index(i), lanes(l), hints(h) {}

    void compute(Frame& f, const Mask& m) override {
        const auto [base, stride] = affine_parts<int64_t>(f, index);
        const BoundBuffer buf = f.buffers[mem.slot];
        if constexpr (!is_bool_v<T>) {
            if (m.is_range() && stride == 1)
                return load_contiguous<T>(f, m, out, hints, buf, first_index(base, m), mem.name);
        }
        int64_t* ix = f.reg<int64_t>(lanes);
        affine_lanes(m, base, stride, ix);
        load_scattered(f, m, f.out<T>(out), ix, buf, mem.name);
    }
};

template <class T>
struct SharedLoad final : ExprNode {
    SharedRef mem;
    int index;
    SharedLoad(SharedRef m, int i) : mem(m), index(i) {}

    void compute(Frame& f, const Mask& m) override {
        const SharedLayout& s = f.prog->shared[size_t(mem.index)];
        T* o = f.out<T>(out);
        const int32_t* ix = f.in<int32_t>(index);
        const T* base = reinterpret_cast<const T*>(f.shared + s.offset);
        if (!f.prog->check && m.is_range() && is_consecutive(ix, m.lo, m.hi)) {
            check_span(f, "load of shared", s.name, ix[m.lo], m, s.size);
            std::memcpy(o + m.lo, base + ix[m.lo], sizeof(T) * size_t(m.count));
            return;  // consecutive words: one per bank, no conflict
        }
        for_lanes(m, [&](int i) {
            const int32_t k = ix[i];
            if (k < 0 || k >= s.size) out_of_bounds(f, "load of shared", s.name, i, k, s.size);
            if (f.prog->check) track(f, s, k, i, Use::Read);
            o[i] = read_elem(base + k);
        });
        f.counters.bank_conflicts += bank_conflicts(ix, m, sizeof(T));
    }
};

// ---------------------------------------------------------------- stores
// Evaluates a statement's operand nodes (leaves have none) under m.
void eval_all(const std::vector<ExprNode*>& nodes, Frame& f, const Mask& m) {
    for (ExprNode* n : nodes) n->eval(f, m);
}

template <class T>
void store_contiguous(Frame& f, const Mask& m, const T* v, const BoundBuffer& buf, int64_t first,
                      const std::string& name) {
    check_span(f, "store to global", name, first, m, buf.elements);
    std::memcpy(reinterpret_cast<T*>(buf.data) + first, v + m.lo, sizeof(T) * size_t(m.count));
    f.counters.sectors += contiguous_sectors(first, m.lo, m.hi, sizeof(T));
}

template <class T>
void store_scattered(Frame& f, const Mask& m, const int64_t* ix, const T* v, const BoundBuffer& buf,
                     const std::string& name) {
    T* base = reinterpret_cast<T*>(buf.data);
    for_lanes(m, [&](int i) {
        const int64_t k = ix[i];
        if (uint64_t(k) >= uint64_t(buf.elements)) out_of_bounds(f, "store to global", name, i, k, buf.elements);
        base[k] = v[i];
    });
    f.counters.sectors += scattered_sectors(ix, m, sizeof(T));
}

template <class T>
struct GlobalStore final : StmtNode {
    GlobalRef mem;
    std::vector<ExprNode*> operands;
    int index, value;
    GlobalStore(GlobalRef m, std::vector<ExprNode*> ops, int i, int v)
        : mem(std::move(m)), operands(std::move(ops)), index(i), value(v) {}

    void exec(Frame& f, const Mask& m) override {
        eval_all(operands, f, m);
        const int64_t* ix = f.in<int64_t>(index);
        const T* v = f.in<T>(value);
        const BoundBuffer buf = f.buffers[mem.slot];
        f.counters.bytes_stored += int64_t(sizeof(T)) * m.count;
        if (m.is_range() && is_consecutive(ix, m.lo, m.hi)) return store_contiguous(f, m, v, buf, ix[m.lo], mem.name);
        store_scattered(f, m, ix, v, buf, mem.name);
    }
};

// A store at base + lane * stride. A contiguous one may have its value node
// write the lanes straight into the buffer (no copy): the compiler allows it
// (AccessHints::in_place), the launch when the buffer overlaps no other; the
// span is checked first, so an out-of-bounds store takes the ordinary path
// and fails after its value is computed, as before.
template <class T>
struct AffineGlobalStore final : StmtNode {
    GlobalRef mem;
    AffineIndex index;
    int lanes;  // scratch: the index lanes
    ExprNode* value_node;
    int value;
    AccessHints hints;
    AffineGlobalStore(GlobalRef m, const AffineIndex& i, int l, ExprNode* vn, int v, AccessHints h)
        : mem(std::move(m)), index(i), lanes(l), value_node(vn), value(v), hints(h) {}

    void exec(Frame& f, const Mask& m) override {
        const auto [base, stride] = affine_parts<int64_t>(f, index);
        const BoundBuffer buf = f.buffers[mem.slot];
        const bool contiguous = m.is_range() && stride == 1;
        const int64_t first = first_index(base, m);
        f.counters.bytes_stored += int64_t(sizeof(T)) * m.count;
        const bool in_bounds = contiguous && span_in_bounds(first, m, buf.elements);
        if (in_bounds && hints.prefetch) prefetch_next_trip<T>(f, m, buf, first);
        if (in_bounds && hints.in_place && buf.write_in_place) {
            // A failure inside leaves the redirection behind, harmlessly: the
            // launch stops and the next one makes a fresh frame.
            T* dst = reinterpret_cast<T*>(buf.data) + first;
            value_node->eval_into(
                f, m, reinterpret_cast<std::byte*>(reinterpret_cast<uintptr_t>(dst) - uintptr_t(m.lo) * sizeof(T)));
            f.counters.sectors += contiguous_sectors(first, m.lo, m.hi, sizeof(T));
            return;
        }
        if (value_node) value_node->eval(f, m);
        const T* v = f.in<T>(value);
        if (contiguous) return store_contiguous(f, m, v, buf, first, mem.name);
        int64_t* ix = f.reg<int64_t>(lanes);
        affine_lanes(m, base, stride, ix);
        store_scattered(f, m, ix, v, buf, mem.name);
    }
};

template <class T>
struct SharedStore final : StmtNode {
    SharedRef mem;
    std::vector<ExprNode*> operands;
    int index, value;
    SharedStore(SharedRef m, std::vector<ExprNode*> ops, int i, int v)
        : mem(m), operands(std::move(ops)), index(i), value(v) {}

    void exec(Frame& f, const Mask& m) override {
        eval_all(operands, f, m);
        const SharedLayout& s = f.prog->shared[size_t(mem.index)];
        const int32_t* ix = f.in<int32_t>(index);
        const T* v = f.in<T>(value);
        T* base = reinterpret_cast<T*>(f.shared + s.offset);
        if (!f.prog->check && m.is_range() && is_consecutive(ix, m.lo, m.hi)) {
            check_span(f, "store to shared", s.name, ix[m.lo], m, s.size);
            std::memcpy(base + ix[m.lo], v + m.lo, sizeof(T) * size_t(m.count));
            return;
        }
        for_lanes(m, [&](int i) {
            const int32_t k = ix[i];
            if (k < 0 || k >= s.size) out_of_bounds(f, "store to shared", s.name, i, k, s.size);
            if (f.prog->check) track(f, s, k, i, Use::Write);
            base[k] = v[i];
        });
        f.counters.bank_conflicts += bank_conflicts(ix, m, sizeof(T));
    }
};

// ---------------------------------------------------------------- atomics
// The new value an atomic read-modify-write stores (CAS handled apart).
template <class T>
T combine(AtomicOp op, T old, T v) {
    switch (op) {
        case AtomicOp::Add:
            if constexpr (is_bool_v<T>) return T(old | v);
            else return ops::add(old, v);
        case AtomicOp::Min: return ops::min(old, v);
        case AtomicOp::Max: return ops::max(old, v);
        case AtomicOp::And:
            if constexpr (!is_fp_v<T>) return T(old & v);
            break;
        case AtomicOp::Or:
            if constexpr (!is_fp_v<T>) return T(old | v);
            break;
        case AtomicOp::Xor:
            if constexpr (!is_fp_v<T>) return T(old ^ v);
            break;
        case AtomicOp::Exch:
        case AtomicOp::CAS: break;
    }
    return v;
}

// A real atomic on global memory (other blocks run concurrently): native
// read-modify-write where C++ has one, a compare-and-swap loop otherwise
// (float add/min/max, integer min/max). CAS compares bit patterns, as
// CUDA's atomicCAS on the reinterpreted word does.
template <class T>
T global_atomic(AtomicOp op, T* p, T v, T cmp) {
    std::atomic_ref<T> r(*p);
    if constexpr (is_int_v<T>) {
        switch (op) {
            case AtomicOp::Add: return r.fetch_add(v);  // wraps: atomic arithmetic is modular
            case AtomicOp::And: return r.fetch_and(v);
            case AtomicOp::Or: return r.fetch_or(v);
            case AtomicOp::Xor: return r.fetch_xor(v);
            default: break;
        }
    }
    if (op == AtomicOp::Exch) return r.exchange(v);
    if (op == AtomicOp::CAS) {
        T expected = cmp;
        r.compare_exchange_strong(expected, v);
        return expected;  // the old value whether or not it swapped
    }
    T old = r.load(std::memory_order_relaxed);
    while (!r.compare_exchange_weak(old, combine(op, old, v))) {
    }
    return old;
}

// Shared memory belongs to one block, which one worker runs: lanes apply
// their updates one after another in lane order, no hardware atomics needed.
template <class T>
T shared_atomic(AtomicOp op, T* p, T v, T cmp) {
    const T old = *p;
    if (op == AtomicOp::CAS) {
        if (std::memcmp(&old, &cmp, sizeof(T)) == 0) *p = v;
    } else {
        *p = combine(op, old, v);
    }
    return old;
}

template <class T, bool Shared>
struct AtomicNode final : StmtNode {
    AtomicOp op;
    GlobalRef global;
    SharedRef shared;
    AtomicOperands a;

    AtomicNode(AtomicOp o, GlobalRef g, SharedRef s, AtomicOperands ops)
        : op(o), global(std::move(g)), shared(s), a(std::move(ops)) {}

    void exec(Frame& f, const Mask& m) override {
        eval_all(a.nodes, f, m);
        const T* v = f.in<T>(a.value);
        const T* cmp = a.compare >= 0 ? f.in<T>(a.compare) : v;
        T* result = a.result >= 0 ? f.reg<T>(a.result) : nullptr;
        f.counters.atomics += m.count;
        if constexpr (Shared) {
            const SharedLayout& s = f.prog->shared[size_t(shared.index)];
            const int32_t* ix = f.in<int32_t>(a.index);
            T* base = reinterpret_cast<T*>(f.shared + s.offset);
            for_lanes(m, [&](int i) {
                const int32_t k = ix[i];
                if (k < 0 || k >= s.size) out_of_bounds(f, "atomic on shared", s.name, i, k, s.size);
                if (f.prog->check) track(f, s, k, i, Use::Atomic);
                const T old = shared_atomic(op, base + k, v[i], cmp[i]);
                if (result) result[i] = old;
            });
        } else {
            const int64_t* ix = f.in<int64_t>(a.index);
            const BoundBuffer buf = f.buffers[global.slot];
            T* base = reinterpret_cast<T*>(buf.data);
            for_lanes(m, [&](int i) {
                const int64_t k = ix[i];
                if (uint64_t(k) >= uint64_t(buf.elements))
                    out_of_bounds(f, "atomic on global", global.name, i, k, buf.elements);
                const T old = global_atomic(op, base + k, v[i], cmp[i]);
                if (result) result[i] = old;
            });
        }
    }
};

template <class T>
bool atomic_supported(AtomicOp op) {
    const bool bitwise = op == AtomicOp::And || op == AtomicOp::Or || op == AtomicOp::Xor;
    return !(is_fp_v<T> && bitwise);
}

// ---------------------------------------------------------------- shuffles
constexpr int kWarp = 32;

// __shfl_*_sync(0xffffffff, v, b) (PTX shfl.sync with width 32): the source
// lane within the warp, or -1 for "keep the own value" (up/down past the
// warp's edge). Only the low 5 bits of b count.
inline int shuffle_source(ShuffleOp op, int lane, uint32_t b) {
    b &= 31;
    switch (op) {
        case ShuffleOp::Xor: return lane ^ int(b);
        case ShuffleOp::Up: return lane - int(b) >= 0 ? lane - int(b) : -1;
        case ShuffleOp::Down: return lane + int(b) < kWarp ? lane + int(b) : -1;
        case ShuffleOp::Idx: break;
    }
    return int(b);
}

template <class T>
struct Shuffle final : ExprNode {
    ShuffleOp op;
    int value, lane;
    Shuffle(ShuffleOp o, int v, int l) : op(o), value(v), lane(l) {}

    void compute(Frame& f, const Mask& m) override {
        const int bs = f.prog->block_size;
        uint32_t active[1024 / kWarp] = {};
        for_lanes(m, [&](int i) { active[i / kWarp] |= 1u << (i % kWarp); });
        if (f.prog->check) check_full_warps(f, active, bs);
        T* o = f.out<T>(out);
        const T* v = f.in<T>(value);
        const int32_t* b = f.in<int32_t>(lane);
        for_lanes(m, [&](int i) {
            const int src = shuffle_source(op, i % kWarp, uint32_t(b[i]));
            const int j = (i & ~(kWarp - 1)) + src;
            // An inactive or missing source lane is undefined on the GPU; keep the own value.
            const bool ok = src >= 0 && j < bs && (active[i / kWarp] >> src & 1u);
            o[i] = ok ? v[j] : v[i];
        });
    }

    // A shuffle names all 32 lanes: every existing lane of a warp taking part
    // must be active (no shuffle under divergent control).
    static void check_full_warps(const Frame& f, const uint32_t* active, int bs) {
        for (int w = 0; w * kWarp < bs; ++w) {
            const int lanes = std::min(kWarp, bs - w * kWarp);
            const uint32_t full = lanes == kWarp ? ~0u : (1u << lanes) - 1;
            if (active[w] != 0 && active[w] != full) {
                fail(f, "warp shuffle under divergent control: warp " + std::to_string(w) + " has " +
                            std::to_string(__builtin_popcount(active[w])) + " of " + std::to_string(lanes) +
                            " threads active (first inactive: thread " +
                            std::to_string(w * kWarp + __builtin_ctz(~active[w] & full)) + ") in block " +
                            std::to_string(f.block));
            }
        }
    }
};

}  // namespace

std::unique_ptr<ExprNode> make_load(ScalarType t, const GlobalRef& mem, int index, AccessHints hints) {
    return with_type(t, [&](auto tag) -> std::unique_ptr<ExprNode> {
        return std::make_unique<GlobalLoad<typename decltype(tag)::type>>(mem, index, hints);
    });
}

std::unique_ptr<ExprNode> make_load(ScalarType t, const GlobalRef& mem, const AffineIndex& index, int lanes,
                                    AccessHints hints) {
    return with_type(t, [&](auto tag) -> std::unique_ptr<ExprNode> {
        return std::make_unique<AffineGlobalLoad<typename decltype(tag)::type>>(mem, index, lanes, hints);
    });
}

std::unique_ptr<ExprNode> make_load(ScalarType t, const SharedRef& mem, int index) {
    return with_type(t, [&](auto tag) -> std::unique_ptr<ExprNode> {
        return std::make_unique<SharedLoad<typename decltype(tag)::type>>(mem, index);
    });
}

std::unique_ptr<StmtNode> make_store(ScalarType t, const GlobalRef& mem, ExprNode* index_node, int index,
                                     ExprNode* value_node, int value) {
    std::vector<ExprNode*> ops;
    for (ExprNode* n : {index_node, value_node}) if (n) ops.push_back(n);
    return with_type(t, [&](auto tag) -> std::unique_ptr<StmtNode> {
        return std::make_unique<GlobalStore<typename decltype(tag)::type>>(mem, ops, index, value);
    });
}

std::unique_ptr<StmtNode> make_store(ScalarType t, const GlobalRef& mem, const AffineIndex& index, int lanes,
                                     ExprNode* value_node, int value, AccessHints hints) {
    return with_type(t, [&](auto tag) -> std::unique_ptr<StmtNode> {
        return std::make_unique<AffineGlobalStore<typename decltype(tag)::type>>(mem, index, lanes, value_node, value,
                                                                                hints);
    });
}

std::unique_ptr<StmtNode> make_store(ScalarType t, const SharedRef& mem, ExprNode* index_node, int index,
                                     ExprNode* value_node, int value) {
    std::vector<ExprNode*> ops;
    for (ExprNode* n : {index_node, value_node}) if (n) ops.push_back(n);
    return with_type(t, [&](auto tag) -> std::unique_ptr<StmtNode> {
        return std::make_unique<SharedStore<typename decltype(tag)::type>>(mem, ops, index, value);
    });
}

std::unique_ptr<StmtNode> make_atomic(AtomicOp op, ScalarType t, const GlobalRef& mem, const AtomicOperands& a) {
    return with_type(t, [&](auto tag) -> std::unique_ptr<StmtNode> {
        using T = typename decltype(tag)::type;
        if (!atomic_supported<T>(op)) return nullptr;
        return std::make_unique<AtomicNode<T, false>>(op, mem, SharedRef{}, a);
    });
}

std::unique_ptr<StmtNode> make_atomic(AtomicOp op, ScalarType t, const SharedRef& mem, const AtomicOperands& a) {
    return with_type(t, [&](auto tag) -> std::unique_ptr<StmtNode> {
        using T = typename decltype(tag)::type;
        if (!atomic_supported<T>(op)) return nullptr;
        return std::make_unique<AtomicNode<T, true>>(op, GlobalRef{}, mem, a);
    });
}

std::unique_ptr<ExprNode> make_shuffle(ShuffleOp op, ScalarType t, int value, int lane) {
    return with_type(t, [&](auto tag) -> std::unique_ptr<ExprNode> {
        return std::make_unique<Shuffle<typename decltype(tag)::type>>(op, value, lane);
    });
}

}  // namespace shoal::cpu
