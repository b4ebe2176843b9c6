// The CUDA built-ins as host C++, so that the printed CUDA text of a kernel
// (exactly what NVRTC is given) compiles with the system C++ compiler and
// runs on the CPU: issue 24, docs/cuda-backend.md "The printed CUDA, run".
// The simulated device puts this text before the printed units of a batch
// (printed_kernels.cpp) and calls `shoal_sim_launch` of the shared object.
//
// Every CUDA thread of a block is a fiber with its own stack; the fibers of
// a block run on the launching thread, one at a time, and switch only where
// CUDA threads meet or race: at __syncthreads, at every shuffle and after
// every atomic. The rules a GPU would enforce, or leave undefined, are
// failures naming the kernel and the source line:
//   - __syncthreads: every thread that has not returned waits at the same
//     call site (line) before any goes on;
//   - __shfl*_sync: the mask names the calling lane, every named lane calls
//     the same shuffle at the same line, and the lane read from is named;
//     out-of-range source lanes behave as PTX defines (the own value for
//     up/down/xor past the segment, the lane modulo width for idx);
//   - a block whose threads all wait with none able to go on (a barrier
//     some never reach, a shuffle a named lane never calls), or that runs
//     longer than the watchdog allows, fails instead of hanging.
// Shared memory (`__shared__` arrays: static storage in one section) is
// filled with 0xff bytes (NaN floats, -1 integers) before every block, so a
// read before a write shows. Device memory is reachable at its device
// addresses only while a launch runs (the simulated device maps it).
//
// Only what the CUDA printer (codegen/cuda_printer.cpp) uses is here, with
// CUDA 13's overload sets: a printed call CUDA lacks fails to compile here
// as it does in NVRTC.
#pragma once

// No header: the C library's headers cost most of a unit's compile time
// (0.11 of 0.15 s), so the few functions used are declared here, as glibc
// has them.
using size_t = decltype(sizeof 0);
struct timespec {
    long tv_sec, tv_nsec;
};
extern "C" {
void* memset(void*, int, size_t) noexcept;
void* memcpy(void*, const void*, size_t) noexcept;
int strcmp(const char*, const char*) noexcept;
int snprintf(char*, size_t, const char*, ...) noexcept;
void* malloc(size_t) noexcept;
void free(void*) noexcept;
int clock_gettime(int, timespec*) noexcept;
}
// The math functions the printer calls, in float and double.
#define SHOAL_SIM_LIBM1(name) extern "C" double name(double) noexcept; extern "C" float name##f(float) noexcept;
#define SHOAL_SIM_LIBM2(name) extern "C" double name(double, double) noexcept; extern "C" float name##f(float, float) noexcept;
// Float exp and log are Shoal's own (printed_kernels.cpp adds them after
// this text, from lang/math_kernels.inc), as on every CPU executor.
extern "C" double exp(double) noexcept;
extern "C" double log(double) noexcept;
SHOAL_SIM_LIBM1(sqrt) SHOAL_SIM_LIBM1(sin) SHOAL_SIM_LIBM1(cos)
SHOAL_SIM_LIBM1(tan) SHOAL_SIM_LIBM1(asin) SHOAL_SIM_LIBM1(acos) SHOAL_SIM_LIBM1(atan) SHOAL_SIM_LIBM1(sinh)
SHOAL_SIM_LIBM1(cosh) SHOAL_SIM_LIBM1(tanh) SHOAL_SIM_LIBM1(erf) SHOAL_SIM_LIBM1(floor) SHOAL_SIM_LIBM1(ceil)
SHOAL_SIM_LIBM1(round) SHOAL_SIM_LIBM1(fabs) SHOAL_SIM_LIBM1(trunc)
SHOAL_SIM_LIBM2(fmin) SHOAL_SIM_LIBM2(fmax) SHOAL_SIM_LIBM2(fmod) SHOAL_SIM_LIBM2(pow) SHOAL_SIM_LIBM2(atan2)
#undef SHOAL_SIM_LIBM1
#undef SHOAL_SIM_LIBM2

#pragma GCC visibility push(hidden)

// ---------------------------------------------------------------- keywords
#define __device__
#define __host__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline __attribute__((always_inline))
#define __global__
#define __launch_bounds__(...)
#define __shared__ __attribute__((section("shoal_shared"))) static

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};

namespace shoal_sim {

// ---------------------------------------------------------------- context switch
// A fiber's context and the switch between two. On x86-64 our own: the
// callee-saved registers, MXCSR and the x87 control word are pushed on the
// old stack, the stack pointer is swapped, and the other context's are
// popped; a new fiber's stack starts with a frame whose return address is
// shoal_sim_start, which calls r13(r12). Elsewhere ucontext (slower: a
// system call per switch). Under AddressSanitizer every switch is announced
// to it (its fiber annotations), so that it knows which stack is live.
}  // namespace shoal_sim
#pragma GCC visibility push(default)  // the C library's and the sanitizer's, not ours
#if !defined(__x86_64__) || defined(SHOAL_SIM_UCONTEXT)
#define SHOAL_SIM_USE_UCONTEXT 1
#include <ucontext.h>
#endif
#ifdef __SANITIZE_ADDRESS__
extern "C" void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old, size_t* size_old);
#endif
#pragma GCC visibility pop
namespace shoal_sim {

#ifndef SHOAL_SIM_USE_UCONTEXT
extern "C" void shoal_sim_swap(void** from_sp, void* to_sp);
extern "C" void shoal_sim_start();
asm(R"(
    .text
    .p2align 4
    .hidden shoal_sim_swap
    .type shoal_sim_swap, @function
shoal_sim_swap:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size shoal_sim_swap, .-shoal_sim_swap
    .p2align 4
    .hidden shoal_sim_start
    .type shoal_sim_start, @function
shoal_sim_start:
    movq %r12, %rdi
    callq *%r13
    ud2
    .size shoal_sim_start, .-shoal_sim_start
)");

struct Context {
    void* sp = nullptr;
    const void* bottom = nullptr;  // its stack, for AddressSanitizer
    size_t size = 0;
};

// A context that calls fn(nullptr) on the `bytes` of stack below `top`.
inline void make_context(Context& c, unsigned char* top, size_t bytes, void (*fn)(void*)) {
    // The frame shoal_sim_swap pops first: MXCSR and the x87 control word,
    // r15, r14, r13 (the function), r12 (its argument), rbx, rbp and the
    // return address, shoal_sim_start, which then calls with the stack
    // 16-byte aligned.
    auto* frame = reinterpret_cast<unsigned long long*>(top - 16) - 8;
    unsigned mxcsr = 0;
    unsigned short fpu = 0;
    asm volatile("stmxcsr %0" : "=m"(mxcsr));
    asm volatile("fnstcw %0" : "=m"(fpu));
    frame[0] = (static_cast<unsigned long long>(fpu) << 32) | mxcsr;
    frame[1] = frame[2] = 0;
    frame[3] = reinterpret_cast<unsigned long long>(fn);
    frame[4] = frame[5] = frame[6] = 0;
    frame[7] = reinterpret_cast<unsigned long long>(&shoal_sim_start);
    c.sp = frame;
    c.bottom = top - bytes;
    c.size = bytes;
}
inline void raw_switch(Context& from, Context& to) { shoal_sim_swap(&from.sp, to.sp); }
#else
struct Context {
    ucontext_t uc;
    const void* bottom = nullptr;  // its stack, for AddressSanitizer
    size_t size = 0;
};

inline void (*fiber_function)(void*) = nullptr;
inline void fiber_trampoline() { fiber_function(nullptr); }

inline void make_context(Context& c, unsigned char* top, size_t bytes, void (*fn)(void*)) {
    getcontext(&c.uc);
    c.uc.uc_stack.ss_sp = top - bytes;
    c.uc.uc_stack.ss_size = bytes;
    c.uc.uc_link = nullptr;
    c.bottom = top - bytes;
    c.size = bytes;
    fiber_function = fn;
    makecontext(&c.uc, fiber_trampoline, 0);
}
inline void raw_switch(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

inline void switch_context(Context& from, Context& to) {
#ifdef __SANITIZE_ADDRESS__
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, to.bottom, to.size);
    raw_switch(from, to);
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
    raw_switch(from, to);
#endif
}
// A fiber's first moments: AddressSanitizer tells it the stack it came from
// (the scheduler's, which its switches back go to).
inline void entered_fiber(Context& scheduler) {
#ifdef __SANITIZE_ADDRESS__
    __sanitizer_finish_switch_fiber(nullptr, &scheduler.bottom, &scheduler.size);
#else
    (void)scheduler;
#endif
}

// ---------------------------------------------------------------- state
enum class Wait : unsigned char { Run, Barrier, Shuffle, Done };

struct Fiber {
    Context context;
    uint3 thread_idx{0, 0, 0};
    Wait wait = Wait::Done;
    int line = 0;  // where it waits
};

// One warp's shuffle in progress: lanes deposit their values until every
// lane of the mask has, then each reads the one it names.
struct Exchange {
    bool reading = false;
    unsigned mask = 0, arrived = 0, read = 0;
    int line = 0, kind = 0, width = 32;
    unsigned long long values[32];
};

struct Options {
    int order = 0;                  // threads and blocks: 0 forward, 1 reverse, 2 seeded random
    unsigned long long seed = 0;
    double watchdog_seconds = 120;  // a block running longer fails
    unsigned char* stacks = nullptr;  // block size x kStackBytes, the host's
};

struct Block {
    const char* kernel = "";
    uint3 block_idx{0, 0, 0};
    dim3 block_dim, grid_dim;
    Fiber* fibers = nullptr;
    unsigned count = 0;
    Exchange warps[32];
    Context scheduler;
    bool progress = false;  // since the scheduler last looked
    bool failed = false;
    char* error = nullptr;
    size_t error_size = 0;
    void (*entry)(void*) = nullptr;
    void* entry_arg = nullptr;
    timespec started{};
    unsigned long long switches = 0;
};

inline thread_local Fiber* current = nullptr;
inline thread_local Block* block = nullptr;

inline void yield() { switch_context(current->context, block->scheduler); }

// A rule broken: the block stops here (its fibers are never resumed).
[[noreturn]] inline void fail(int line, const char* what) {
    if (!block->failed) {
        block->failed = true;
        snprintf(block->error, block->error_size, "%s (block %u, thread %u, line %d of the printed unit): %s",
                 block->kernel, block->block_idx.x, current->thread_idx.x, line, what);
    }
    current->wait = Wait::Done;
    for (;;) yield();
}

inline void fiber_main(void*) {
    entered_fiber(block->scheduler);
    block->entry(block->entry_arg);
    current->wait = Wait::Done;
    block->progress = true;
    for (;;) yield();
}

// ---------------------------------------------------------------- barriers
inline void syncthreads(int line) {
    current->wait = Wait::Barrier;
    current->line = line;
    block->progress = true;
    yield();
}

// ---------------------------------------------------------------- shuffles
enum { kIdx = 0, kUp = 1, kDown = 2, kXor = 3 };

template <class T> T shuffle(int kind, unsigned mask, T v, int arg, int width, int line) {
    static_assert(sizeof(T) <= 8, "a shuffle moves at most 64 bits");
    const unsigned lane = current->thread_idx.x % 32;
    Exchange& x = block->warps[current->thread_idx.x / 32];
    if (!(mask & (1u << lane))) fail(line, "a shuffle whose mask does not name the calling lane");
    if (width < 1 || width > 32 || (width & (width - 1))) fail(line, "a shuffle width that is not a power of two up to 32");
    auto wait = [line] {
        current->wait = Wait::Shuffle;
        current->line = line;
        yield();
    };
    while (x.reading) wait();  // the previous exchange of this warp is still being read
    if (x.arrived == 0) {
        x.mask = mask;
        x.line = line;
        x.kind = kind;
        x.width = width;
    } else if (x.mask != mask || x.line != line || x.kind != kind || x.width != width) {
        fail(line, "the lanes of a warp call different shuffles (another mask, call site or kind): divergent shuffle");
    }
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof(T));
    x.values[lane] = bits;
    x.arrived |= 1u << lane;
    block->progress = true;
    if (x.arrived == mask) x.reading = true;
    while (!x.reading) wait();
    current->wait = Wait::Run;
    const unsigned start = lane & ~unsigned(width - 1), end = start + unsigned(width);
    unsigned src = lane;
    switch (kind) {
        case kIdx: src = start + unsigned(arg) % unsigned(width); break;
        case kUp: src = arg < 0 || lane < start + unsigned(arg) ? lane : lane - unsigned(arg); break;
        case kDown: src = arg < 0 || lane + unsigned(arg) >= end ? lane : lane + unsigned(arg); break;
        default: {
            const unsigned to = lane ^ unsigned(arg);
            src = to < 32 && to < end ? to : lane;  // a later segment: the own value (CUDA's documentation)
        }
    }
    if (!(mask & (1u << src))) fail(line, "a shuffle reads a lane its mask does not name (undefined on a GPU)");
    T out;
    memcpy(&out, &x.values[src], sizeof(T));
    x.read |= 1u << lane;
    if (x.read == mask) {
        x.reading = false;
        x.arrived = x.read = 0;
    }
    block->progress = true;
    return out;
}

// ---------------------------------------------------------------- atomics
// Other threads run between an atomic and the next statement, as they may on a GPU.
template <class T, class F> T atomic_update(T* p, F f) {
    // GCC's atomic built-ins (what std::atomic_ref is made of; <atomic> costs
    // more to compile than a batch of kernels). Floats compare as bits.
    T old;
    __atomic_load(p, &old, __ATOMIC_SEQ_CST);
    for (;;) {
        T next = f(old);
        if (__atomic_compare_exchange(p, &old, &next, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) break;
    }
    block->progress = true;
    yield();
    return old;
}

// ---------------------------------------------------------------- the scheduler
constexpr int kMonotonic = 1;  // CLOCK_MONOTONIC

inline double seconds_since(const timespec& t0) {
    timespec t;
    clock_gettime(kMonotonic, &t);
    return double(t.tv_sec - t0.tv_sec) + 1e-9 * double(t.tv_nsec - t0.tv_nsec);
}

// The fibers' stacks: memory the host passes to every launch (one pool
// for all units: a pool per loaded unit would hold megabytes each).
constexpr size_t kStackBytes = 64 * 1024;
struct Stacks {
    unsigned char* memory;
    unsigned char* top(unsigned i) const { return memory + (size_t(i) + 1) * kStackBytes; }
};

// The order in which threads and blocks run: forward, reverse or seeded random.
inline void order_of(unsigned n, const Options& o, unsigned long long salt, unsigned* out) {
    for (unsigned i = 0; i < n; ++i) out[i] = o.order == 1 ? n - 1 - i : i;
    if (o.order == 2) {  // Fisher-Yates with splitmix64
        unsigned long long state = o.seed * 0x9e3779b97f4a7c15ull + salt;
        for (unsigned i = n; i > 1; --i) {
            unsigned long long z = (state += 0x9e3779b97f4a7c15ull);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            const unsigned j = unsigned((z ^ (z >> 31)) % i);
            const unsigned t = out[i - 1];
            out[i - 1] = out[j];
            out[j] = t;
        }
    }
}

inline const char* wait_name(Wait w) { return w == Wait::Barrier ? "__syncthreads" : "a shuffle"; }

// Runs one block to its end; false (with the reason in b.error) on a broken rule.
inline bool run_block(Block& b, const Stacks& stacks, const Options& o, unsigned* order) {
    block = &b;
    for (unsigned i = 0; i < b.count; ++i) {
        Fiber& f = b.fibers[i];
        f.thread_idx = uint3{i, 0, 0};
        f.wait = Wait::Run;
        f.line = 0;
        make_context(f.context, stacks.top(i), kStackBytes, &fiber_main);
    }
    for (Exchange& x : b.warps) x = Exchange{};
    order_of(b.count, o, (static_cast<unsigned long long>(b.block_idx.x) << 1) | 1, order);
    clock_gettime(kMonotonic, &b.started);
    for (;;) {
        b.progress = false;
        bool any = false;
        for (unsigned k = 0; k < b.count && !b.failed; ++k) {
            Fiber& f = b.fibers[order[k]];
            if (f.wait == Wait::Done || f.wait == Wait::Barrier) continue;
            any = true;
            current = &f;
            switch_context(b.scheduler, f.context);
            if ((++b.switches & 0xffff) == 0 && seconds_since(b.started) > o.watchdog_seconds) {
                snprintf(b.error, b.error_size, "%s (block %u): still running after %.0f s: a hang", b.kernel, b.block_idx.x,
                         o.watchdog_seconds);
                b.failed = true;
            }
        }
        if (b.failed) return false;
        if (any && b.progress) continue;
        // Nobody runnable made progress: release a barrier, or report why not.
        const Fiber* first = nullptr;
        bool all_done = true, same = true, shuffle_wait = false;
        for (unsigned i = 0; i < b.count; ++i) {
            const Fiber& f = b.fibers[i];
            if (f.wait == Wait::Done) continue;
            all_done = false;
            if (f.wait == Wait::Shuffle) shuffle_wait = true;
            if (!first) first = &f;
            else if (f.wait != first->wait || f.line != first->line) same = false;
        }
        if (all_done) return true;
        if (!shuffle_wait && same) {
            for (unsigned i = 0; i < b.count; ++i)
                if (b.fibers[i].wait == Wait::Barrier) b.fibers[i].wait = Wait::Run;
            continue;
        }
        if (any && !shuffle_wait) continue;  // threads still running towards the barrier
        // A deadlock: name two threads that wait at different places.
        const Fiber* other = nullptr;
        for (unsigned i = 0; i < b.count && !other; ++i) {
            const Fiber& f = b.fibers[i];
            if (f.wait != Wait::Done && (f.wait != first->wait || f.line != first->line)) other = &f;
        }
        if (other)
            snprintf(b.error, b.error_size,
                     "%s (block %u): thread %u waits at %s on line %d, thread %u at %s on line %d: divergent %s",
                     b.kernel, b.block_idx.x, first->thread_idx.x, wait_name(first->wait), first->line, other->thread_idx.x,
                     wait_name(other->wait), other->line, first->wait == Wait::Barrier ? "barrier" : "shuffle");
        else
            snprintf(b.error, b.error_size, "%s (block %u): thread %u waits at %s on line %d for lanes that never come",
                     b.kernel, b.block_idx.x, first->thread_idx.x, wait_name(first->wait), first->line);
        return false;
    }
}

template <size_t... I> struct Indices {};
template <size_t N, size_t... I> struct MakeIndices : MakeIndices<N - 1, N - 1, I...> {};
template <size_t... I> struct MakeIndices<0, I...> {
    using type = Indices<I...>;
};
template <class... P, size_t... I> void call_with(void (*k)(P...), void** args, Indices<I...>) {
    k(*static_cast<P*>(args[I])...);
}

// The kernel called as the CUDA driver would: each parameter read from
// args[i] with the size and type of the printed signature.
template <class... P> struct Launch {
    void (*kernel)(P...);
    void** args;
    static void run(void* self) {
        auto* l = static_cast<Launch*>(self);
        call_with(l->kernel, l->args, typename MakeIndices<sizeof...(P)>::type{});
    }
};

extern "C" char __start_shoal_shared[] __attribute__((weak));
extern "C" char __stop_shoal_shared[] __attribute__((weak));

// A launch's own memory, kept where the host can free it when a fault ends
// the launch: the host then jumps out of it, past launch's frees
// (printed_kernels.cpp), and calls shoal_sim_release.
struct LaunchMemory {
    Fiber* fibers = nullptr;
    unsigned* order = nullptr;
    unsigned* blocks = nullptr;
    Block* block = nullptr;
};
inline thread_local LaunchMemory launch_memory;
inline void release_launch_memory() {
    free(launch_memory.block);
    free(launch_memory.blocks);
    free(launch_memory.order);
    free(launch_memory.fibers);
    launch_memory = LaunchMemory{};
}

template <class... P>
int launch(const char* name, void (*kernel)(P...), unsigned grid, unsigned threads, void** args, const Options& o,
           char* error, size_t error_size) {
    Launch<P...> l{kernel, args};
    const Stacks stacks{o.stacks};
    release_launch_memory();  // what a launch a fault ended left
    LaunchMemory& m = launch_memory;
    Fiber* fibers = m.fibers = static_cast<Fiber*>(malloc(sizeof(Fiber) * threads));
    unsigned* order = m.order = static_cast<unsigned*>(malloc(sizeof(unsigned) * threads));
    unsigned* blocks = m.blocks = static_cast<unsigned*>(malloc(sizeof(unsigned) * grid));
    order_of(grid, o, 0, blocks);
    Block* b = m.block = static_cast<Block*>(malloc(sizeof(Block)));
    *b = Block{};
    b->kernel = name;
    b->block_dim = dim3{threads, 1, 1};
    b->grid_dim = dim3{grid, 1, 1};
    b->fibers = fibers;
    b->count = threads;
    b->error = error;
    b->error_size = error_size;
    b->entry = &Launch<P...>::run;
    b->entry_arg = &l;
    int status = 0;
    for (unsigned k = 0; k < grid && status == 0; ++k) {
        b->block_idx = uint3{blocks[k], 0, 0};
        if (__start_shoal_shared != __stop_shoal_shared)
            memset(__start_shoal_shared, 0xff, size_t(__stop_shoal_shared - __start_shoal_shared));
        if (!run_block(*b, stacks, o, order)) status = 1;
    }
    current = nullptr;
    block = nullptr;
    release_launch_memory();
    return status;
}

}  // namespace shoal_sim

// Which kernel, block and thread run now ("" outside a launch): the host
// asks after a fault ended the launch (printed_kernels.cpp).
extern "C" __attribute__((visibility("default"))) void shoal_sim_where(char* out, unsigned long size) {
    out[0] = 0;
    if (::shoal_sim::block && ::shoal_sim::current)
        snprintf(out, size, "%s (block %u, thread %u)", ::shoal_sim::block->kernel, ::shoal_sim::block->block_idx.x,
                 ::shoal_sim::current->thread_idx.x);
}

// Frees the memory of a launch a fault ended (the host calls it then).
extern "C" __attribute__((visibility("default"))) void shoal_sim_release() {
    ::shoal_sim::current = nullptr;
    ::shoal_sim::block = nullptr;
    ::shoal_sim::release_launch_memory();
}

// ---------------------------------------------------------------- indices
#define threadIdx (::shoal_sim::current->thread_idx)
#define blockIdx (::shoal_sim::block->block_idx)
#define blockDim (::shoal_sim::block->block_dim)
#define gridDim (::shoal_sim::block->grid_dim)
#define warpSize 32
#define __syncthreads() ::shoal_sim::syncthreads(__LINE__)

// ---------------------------------------------------------------- shuffles
// CUDA's four, each overloaded for the 32- and 64-bit types; the macros pass
// the call site's line to the exchange (lanes must meet at one).
#define SHOAL_SIM_SHUFFLE(name, kind, arg_type)                                                                   \
    inline int name(int l, unsigned m, int v, arg_type a, int w = 32) { return ::shoal_sim::shuffle(kind, m, v, int(a), w, l); } \
    inline unsigned name(int l, unsigned m, unsigned v, arg_type a, int w = 32) { return ::shoal_sim::shuffle(kind, m, v, int(a), w, l); } \
    inline long long name(int l, unsigned m, long long v, arg_type a, int w = 32) { return ::shoal_sim::shuffle(kind, m, v, int(a), w, l); } \
    inline unsigned long long name(int l, unsigned m, unsigned long long v, arg_type a, int w = 32) { return ::shoal_sim::shuffle(kind, m, v, int(a), w, l); } \
    inline float name(int l, unsigned m, float v, arg_type a, int w = 32) { return ::shoal_sim::shuffle(kind, m, v, int(a), w, l); } \
    inline double name(int l, unsigned m, double v, arg_type a, int w = 32) { return ::shoal_sim::shuffle(kind, m, v, int(a), w, l); }
SHOAL_SIM_SHUFFLE(shoal_sim_shfl, ::shoal_sim::kIdx, int)
SHOAL_SIM_SHUFFLE(shoal_sim_shfl_up, ::shoal_sim::kUp, unsigned)
SHOAL_SIM_SHUFFLE(shoal_sim_shfl_down, ::shoal_sim::kDown, unsigned)
SHOAL_SIM_SHUFFLE(shoal_sim_shfl_xor, ::shoal_sim::kXor, int)
#undef SHOAL_SIM_SHUFFLE
#define __shfl_sync(...) shoal_sim_shfl(__LINE__, __VA_ARGS__)
#define __shfl_up_sync(...) shoal_sim_shfl_up(__LINE__, __VA_ARGS__)
#define __shfl_down_sync(...) shoal_sim_shfl_down(__LINE__, __VA_ARGS__)
#define __shfl_xor_sync(...) shoal_sim_shfl_xor(__LINE__, __VA_ARGS__)

// ---------------------------------------------------------------- atomics (CUDA 13's overloads)
#define SHOAL_SIM_ATOMIC(name, type, expr) \
    inline type name(type* p, type v) { return ::shoal_sim::atomic_update(p, [v](type old) -> type { return expr; }); }
SHOAL_SIM_ATOMIC(atomicAdd, int, (int)((unsigned)old + (unsigned)v))
SHOAL_SIM_ATOMIC(atomicAdd, unsigned, old + v)
SHOAL_SIM_ATOMIC(atomicAdd, unsigned long long, old + v)
SHOAL_SIM_ATOMIC(atomicAdd, float, old + v)
SHOAL_SIM_ATOMIC(atomicAdd, double, old + v)
SHOAL_SIM_ATOMIC(atomicSub, int, (int)((unsigned)old - (unsigned)v))
SHOAL_SIM_ATOMIC(atomicSub, unsigned, old - v)
SHOAL_SIM_ATOMIC(atomicExch, int, v)
SHOAL_SIM_ATOMIC(atomicExch, unsigned, v)
SHOAL_SIM_ATOMIC(atomicExch, unsigned long long, v)
SHOAL_SIM_ATOMIC(atomicExch, float, v)
SHOAL_SIM_ATOMIC(atomicMin, int, v < old ? v : old)
SHOAL_SIM_ATOMIC(atomicMin, unsigned, v < old ? v : old)
SHOAL_SIM_ATOMIC(atomicMin, long long, v < old ? v : old)
SHOAL_SIM_ATOMIC(atomicMin, unsigned long long, v < old ? v : old)
SHOAL_SIM_ATOMIC(atomicMax, int, v > old ? v : old)
SHOAL_SIM_ATOMIC(atomicMax, unsigned, v > old ? v : old)
SHOAL_SIM_ATOMIC(atomicMax, long long, v > old ? v : old)
SHOAL_SIM_ATOMIC(atomicMax, unsigned long long, v > old ? v : old)
SHOAL_SIM_ATOMIC(atomicAnd, int, old & v)
SHOAL_SIM_ATOMIC(atomicAnd, unsigned, old & v)
SHOAL_SIM_ATOMIC(atomicAnd, long long, old & v)
SHOAL_SIM_ATOMIC(atomicAnd, unsigned long long, old & v)
SHOAL_SIM_ATOMIC(atomicOr, int, old | v)
SHOAL_SIM_ATOMIC(atomicOr, unsigned, old | v)
SHOAL_SIM_ATOMIC(atomicOr, long long, old | v)
SHOAL_SIM_ATOMIC(atomicOr, unsigned long long, old | v)
SHOAL_SIM_ATOMIC(atomicXor, int, old ^ v)
SHOAL_SIM_ATOMIC(atomicXor, unsigned, old ^ v)
SHOAL_SIM_ATOMIC(atomicXor, long long, old ^ v)
SHOAL_SIM_ATOMIC(atomicXor, unsigned long long, old ^ v)
SHOAL_SIM_ATOMIC(atomicInc, unsigned, old >= v ? 0u : old + 1)
SHOAL_SIM_ATOMIC(atomicDec, unsigned, (old == 0 || old > v) ? v : old - 1)
#undef SHOAL_SIM_ATOMIC
#define SHOAL_SIM_CAS(type)                                                                                \
    inline type atomicCAS(type* p, type compare, type v) {                                                  \
        return ::shoal_sim::atomic_update(p, [compare, v](type old) -> type { return old == compare ? v : old; }); \
    }
SHOAL_SIM_CAS(int)
SHOAL_SIM_CAS(unsigned)
SHOAL_SIM_CAS(unsigned long long)
#undef SHOAL_SIM_CAS

inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// ---------------------------------------------------------------- integer and bit built-ins
inline int min(int a, int b) { return a < b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline int __mulhi(int a, int b) { return int((long long)a * (long long)b >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned((unsigned long long)a * b >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)((__int128)a * b >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)((unsigned __int128)a * b >> 64);
}
template <class To, class From> inline To shoal_sim_bits(From v) {
    static_assert(sizeof(To) == sizeof(From));
    To t;
    memcpy(&t, &v, sizeof t);
    return t;
}
inline int __float_as_int(float v) { return shoal_sim_bits<int>(v); }
inline unsigned __float_as_uint(float v) { return shoal_sim_bits<unsigned>(v); }
inline float __int_as_float(int v) { return shoal_sim_bits<float>(v); }
inline float __uint_as_float(unsigned v) { return shoal_sim_bits<float>(v); }
inline long long __double_as_longlong(double v) { return shoal_sim_bits<long long>(v); }
inline double __longlong_as_double(long long v) { return shoal_sim_bits<double>(v); }

#pragma GCC visibility pop
