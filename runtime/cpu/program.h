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
    std::vector<BoundBuffer> buffers;  // by buffer slot (buffer parameters in order)
    std::vector<RegInit> inits;        // scalar parameters and gridDim, after Program::inits


    std::atomic<uint64_t> error_key{UINT64_MAX};  // (block, lane) of the recorded error
    std::mutex error_mutex;
    KernelError error;

    std::atomic<int64_t> bytes_loaded{0}, bytes_stored{0}, sectors{0}, bank_conflicts{0}, atomics{0},
        barriers{0};

    void record_error(uint64_t key, int code, int64_t index, int64_t extent);
};

// Counters of one worker, merged into the LaunchState after each block.
struct LocalCounters {
    int64_t bytes_loaded = 0, bytes_stored = 0, sectors = 0, bank_conflicts = 0, atomics = 0, barriers = 0;
};

// The per-worker state of the block being run: registers, mask lists,
// shared memory, race tracking. Workers run whole blocks; a Frame is reused
// for every block a worker runs.
struct Frame {
    const Program* prog = nullptr;
    LaunchState* launch = nullptr;
    const BoundBuffer* buffers = nullptr;  // launch->buffers.data(), one hop less per access
    std::byte* regs = nullptr;        // num_regs registers of reg_stride bytes
    size_t reg_stride = 0;
    uint16_t* masks = nullptr;        // num_mask_slots lists of block_size lanes
    std::byte* shared = nullptr;      // the block's shared memory
    SharedTrack* tracks = nullptr;    // check mode: one per shared element
    int64_t block = 0;
    int phase = 0;                    // index of the running Phase (for messages)
    uint32_t epoch = 0;               // bumped at every phase start (race detection)
    LocalCounters counters;

    template <class T> T* reg(int r) const { return reinterpret_cast<T*>(regs + size_t(r) * reg_stride); }
    uint16_t* mask_buf(int slot) const;
};

// ---------------------------------------------------------------- nodes
struct ExprNode {
    std::vector<ExprNode*> inputs;  // non-leaf operands, evaluated in order first
    int out = -1;                   // result register

    virtual ~ExprNode() = default;
    void eval(Frame& f, const Mask& m) {
        for (ExprNode* in : inputs) in->eval(f, m);
        compute(f, m);
    }
    virtual void compute(Frame& f, const Mask& m) = 0;
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

// Compiles k (buffer parameters get slots in parameter order). Throws
// Error(Internal) for IR the executor cannot run (unknown names, unsupported
// operation/type pairs). Arguments are checked by run_kernel when binding.
std::unique_ptr<Program> compile(const ir::Kernel& k, const ExecOptions& options);

// A check-mode violation or broken invariant: Error(Internal) naming the
// kernel, the phase and `what`.
[[noreturn]] void fail(const Frame& f, const std::string& what);
[[noreturn]] void compile_fail(const ir::Kernel& k, const std::string& what);

}  // namespace shoal::cpu
