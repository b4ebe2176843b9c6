// A kernel compiled for the CPU executor: the IR tree turned into a tree of
// vector nodes with every name resolved (variables to register numbers,
// buffers to slots, shared arrays to offsets), so the hot path never looks up
// a string. A Program depends on the kernel and the check flag only, never on
// a launch's arguments: run_kernel caches it across launches and binds the
// arguments (buffer pointers, scalar values, grid size) per launch into the
// LaunchState.
//
// A node runs for all active lanes of a block at once: an expression node
// computes one lane vector (a "register": block_size slots of 8 bytes, used as
// a contiguous array of the node's C++ lane type) from its operands'
// registers; a statement node runs under a Mask. Per-node dispatch is one
// virtual call per block and phase (or loop iteration), never per lane.
//
// Registers are read and written through per-frame pointers (Frame::in,
// Frame::out), normally the register's own storage. Two redirections save
// the copies of contiguous memory traffic: a load from a buffer the launch
// does not write leaves its register reading the buffer in place, and a
// coalesced store lets its value's node write straight into the buffer. A
// register that only ever holds a block-uniform value (lane 0) is 8 bytes.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/ir.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/lanes.h"

namespace shoal::cpu {

struct Program;

// Per-address record of the current phase's accesses to shared memory, for
// race detection in check mode. Lane -1: none; -2: several lanes.
struct SharedTrack {
    uint32_t epoch = 0;
    int16_t writer = -1, reader = -1, atomic = -1;
};

// A global buffer argument of one launch (Frame::buffers[GlobalRef::slot]).
struct BoundBuffer {
    std::byte* data = nullptr;
    int64_t elements = 0;
    // The kernel never writes it and it overlaps no buffer the kernel
    // writes: its memory is constant during the launch, so a contiguous load
    // may be read in place instead of copied.
    bool read_in_place = false;
    // It overlaps no other buffer of the launch: a coalesced store may have
    // its value computed straight into it.
    bool write_in_place = false;
};

// A register filled once per worker (constants, parameters, thread/block dims).
struct RegInit {
    int reg;
    ir::ScalarType type;
    enum Kind : uint8_t { Value, ThreadIdx } kind;
    int64_t i = 0;   // Value: integer/bool bits
    double f = 0;    // Value: float
};

// What one launch shares between its workers: its arguments, the error
// record and counters.
struct LaunchState {
    int64_t grid = 0;
    const std::atomic<bool>* cancel = nullptr;  // ExecOptions::cancel
    std::vector<BoundBuffer> buffers;  // by buffer slot (buffer parameters in order)
    std::vector<RegInit> inits;        // scalar parameters and gridDim, after Program::inits


    std::atomic<uint64_t> error_key{UINT64_MAX};  // (block, lane) of the recorded error
    std::mutex error_mutex;
    KernelError error;

    std::atomic<int64_t> bytes_loaded{0}, bytes_stored{0}, sectors{0}, bank_conflicts{0}, atomics{0},
        barriers{0}, flops{0};

    void record_error(uint64_t key, int code, int64_t index, int64_t extent);
};

// Counters of one worker, merged into the LaunchState after each block.
struct LocalCounters {
    int64_t bytes_loaded = 0, bytes_stored = 0, sectors = 0, bank_conflicts = 0, atomics = 0, barriers = 0, flops = 0;
};

// The per-worker state of the block being run: registers, mask lists,
// shared memory, race tracking. Workers run whole blocks; a Frame is reused
// for every block a worker runs.
struct Frame {
    const Program* prog = nullptr;
    LaunchState* launch = nullptr;
    const BoundBuffer* buffers = nullptr;  // launch->buffers.data(), one hop less per access
    std::byte* regs = nullptr;        // the register file (Program::reg_offset)
    const size_t* reg_offset = nullptr;
    // Per register: where its lanes are read and where a node writes them
    // (the register's own storage unless redirected, see the top of the file).
    std::byte** read_at = nullptr;
    std::byte** write_at = nullptr;
    uint16_t* masks = nullptr;        // num_mask_slots lists of block_size lanes
    std::byte* shared = nullptr;      // the block's shared memory
    SharedTrack* tracks = nullptr;    // check mode: one per shared element
    int64_t block = 0;
    int phase = 0;                    // index of the running Phase (for messages)
    int64_t prefetch_ahead = 0;       // elements the innermost affine loop's index moves per trip, 0: none
    uint32_t epoch = 0;               // bumped at every phase start (race detection)
    LocalCounters counters;

    // The register's own storage (statements writing variables, lane-0 scalars).
    template <class T> T* reg(int r) const { return reinterpret_cast<T*>(regs + reg_offset[r]); }
    // Operand lanes, wherever they are.
    template <class T> const T* in(int r) const { return reinterpret_cast<const T*>(read_at[r]); }
    // Where an expression node writes its result lanes.
    template <class T> T* out(int r) const { return reinterpret_cast<T*>(write_at[r]); }
    bool writes_own(int r) const { return write_at[r] == regs + reg_offset[r]; }
    uint16_t* mask_buf(int slot) const;
};

// ---------------------------------------------------------------- nodes
struct ExprNode {
    std::vector<ExprNode*> inputs;  // non-leaf operands, evaluated in order first
    int out = -1;                   // result register

    virtual ~ExprNode() = default;
    // compute() writes Frame::out(out); a load may then point the register's
    // reads elsewhere (in place).
    void eval(Frame& f, const Mask& m) {
        for (ExprNode* in : inputs) in->eval(f, m);
        f.read_at[out] = f.write_at[out];
        compute(f, m);
    }
    // The same, this node's lanes written to dest (lane i at dest + i) instead
    // of its register. Only this node's: the inputs may share the register
    // number (temporaries are reused), so they run before the redirection.
    void eval_into(Frame& f, const Mask& m, std::byte* dest) {
        for (ExprNode* in : inputs) in->eval(f, m);
        std::byte* own = f.write_at[out];
        f.read_at[out] = f.write_at[out] = dest;
        compute(f, m);
        f.write_at[out] = own;
    }
    // Lane 0 only: a block-uniform value (compile.cpp), on the scalar path
    // of nodes that have one.
    void eval_lane0(Frame& f) {
        for (ExprNode* in : inputs) in->eval_lane0(f);
        f.read_at[out] = f.write_at[out];
        compute_lane0(f);
    }
    virtual void compute(Frame& f, const Mask& m) = 0;
    virtual void compute_lane0(Frame& f) { compute(f, Mask::range(0, 1)); }
};

struct StmtNode {
    virtual ~StmtNode() = default;
    virtual void exec(Frame& f, const Mask& m) = 0;
};

struct BlockNode {
    virtual ~BlockNode() = default;
    virtual void exec(Frame& f) = 0;
};

// ---------------------------------------------------------------- program

struct SharedLayout {
    std::string name;
    ir::ScalarType type;
    int64_t size;         // elements
    size_t offset;        // bytes from the start of the block's shared memory
    size_t track_base;    // first SharedTrack of this array
};

struct Program {
    std::string kernel_name;  // a copy: a cached Program outlives the Kernel it was compiled from
    int block_size = 0;
    bool check = false;
    // Registers bound per launch (LaunchState::inits): one per scalar
    // parameter in parameter order, and gridDim's (-1 when unused).
    std::vector<int> scalar_regs;
    int grid_reg = -1;
    int num_regs = 0;
    std::vector<size_t> reg_offset;  // bytes from the start of the register file
    size_t reg_bytes = 0;            // the register file's size
    std::vector<bool> written;       // by buffer slot: some Store or Atomic writes it
    int num_mask_slots = 0;
    size_t shared_bytes = 0;
    size_t shared_elements = 0;
    std::vector<SharedLayout> shared;
    std::vector<RegInit> inits;
    int block_idx_reg = -1;  // lane 0 set per block (read through Broadcast nodes)
    // Expressions of constants and threadIdx only: the same in every block,
    // so evaluated once per worker (after `inits`), for all lanes.
    std::vector<ExprNode*> setup;
    std::vector<BlockNode*> body;

    std::vector<std::unique_ptr<ExprNode>> expr_pool;
    std::vector<std::unique_ptr<StmtNode>> stmt_pool;
    std::vector<std::unique_ptr<BlockNode>> block_pool;
};

inline uint16_t* Frame::mask_buf(int slot) const { return masks + size_t(slot) * size_t(prog->block_size); }

// How an expression's value varies over a block's lanes (compile.cpp):
// Constant (literals, parameters, blockDim, gridDim), Invariant (of threadIdx
// and constants only: the same lanes in every block), Uniform (the same in
// every lane: blockIdx, BlockFor variables), Affine (base + lane * stride,
// both uniform), Varying.
enum class Level : uint8_t { Constant, Invariant, Uniform, Affine, Varying };

// Every expression the compiler compiled for k with the level it gave it (a
// test compares them with codegen/thread_levels.h, the native printer's view).
using ExpressionLevels = std::vector<std::pair<const ir::Expr*, Level>>;
ExpressionLevels interpreter_levels(const ir::Kernel& k);

// Compiles k (buffer parameters get slots in parameter order). Throws
// Error(Internal) for IR the executor cannot run (unknown names, unsupported
// operation/type pairs). Arguments are checked by run_kernel when binding.
std::unique_ptr<Program> compile(const ir::Kernel& k, const ExecOptions& options);

// Throws Error(Interrupted) once the launch's cancel flag is set (loops call
// it every trip, the scheduler before every block).
void check_cancel(const LaunchState& s);

// A check-mode violation or broken invariant: Error(Internal) naming the
// kernel, the phase and `what`.
[[noreturn]] void fail(const Frame& f, const std::string& what);
[[noreturn]] void compile_fail(const ir::Kernel& k, const std::string& what);

}  // namespace shoal::cpu
