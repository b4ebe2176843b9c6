// The kernel IR: what every array primitive is lowered to, what the CUDA
// printer prints and what the CPU executor runs. In the spirit of Obsidian's
// Program type, a kernel is a grid of blocks; a block runs a sequence of
// PHASES separated by barriers; within a phase every thread runs sequential
// code. Barriers exist only between phases, and the only control flow around
// phases is a uniform BlockFor (every thread of a block takes the same trip
// count), so a barrier can never sit under divergent control. verify() checks
// that and the other invariants listed below.
//
//   Kernel
//     params   scalars (extents, lifted constants) and global buffers, typed
//     shared   shared-memory arrays of constant size
//     body     BlockStmt*:  Phase(Stmt)  |  BlockFor(var, lo, hi, step, BlockStmt*)
//   Stmt       thread code: Let, Assign, Store, If, For, While, Atomic, Error, Seq, Comment
//   Expr       Const, Var, Param, ThreadIdx, BlockIdx, BlockDim, GridDim, Load,
//              Unary, Binary, Select, Cast, Call, Shuffle
//
// Semantics shared by the executor and the printer:
// - Every Phase ends with a block-wide barrier (__syncthreads()), except the
//   last BlockStmt of the kernel.
// - A Let at the top level of a Phase declares a variable visible in all later
//   phases at the same BlockFor nesting (C++ scoping of one function body);
//   a Let nested in If/For/While/Seq is local to that statement.
// - Variables, params and shared arrays are named by strings unique within
//   the kernel; the names appear as written in the generated CUDA.
// - Integer arithmetic wraps (two's complement); integer / and % by zero give
//   0 (docs/semantics.md); shifts take the amount modulo the bit width.
// - Global indices are I64; shared-memory indices are I32.
// - An Error statement records a failed check (code, index, extent) in the
//   launch's error record and lets the thread continue. The launch reports
//   the lowest failing thread's (blockIdx * blockDim + threadIdx) first
//   failure, on every device; the runtime turns it into the same message the
//   reference evaluator gives.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lang/source.h"
#include "lang/types.h"

namespace shoal::ir {

// ---------------------------------------------------------------- scalar types
enum class ScalarType : uint8_t { Bool, I32, I64, U32, U64, F32, F64 };

const char* scalar_name(ScalarType t);       // "bool", "i32", ...
const char* cuda_scalar_name(ScalarType t);  // "bool", "int", "long long", "unsigned", ...
size_t scalar_size(ScalarType t);
bool is_float(ScalarType t);
bool is_signed_int(ScalarType t);
bool is_unsigned_int(ScalarType t);
ScalarType scalar_of(Prim p);                // the kernel type of a Shoal element type

// ---------------------------------------------------------------- expressions
enum class ExprKind : uint8_t {
    Const,      // a literal: value in i (integers, bool) or f (floats)
    Var,        // a thread-local variable or an enclosing loop variable: name
    Param,      // a scalar kernel parameter: name
    ThreadIdx,  // threadIdx.x (I32)
    BlockIdx,   // blockIdx.x (I64, so index arithmetic never overflows)
    BlockDim,   // blockDim.x (I32; equals Kernel::block_size)
    GridDim,    // gridDim.x (I64)
    Load,       // mem[index]: name is a buffer param (global) or a shared array
    Unary,      // op(a)
    Binary,     // a op b
    Select,     // c ? a : b (both sides evaluated; no side effects in Expr)
    Cast,       // (type) a  with Shoal's conversion rules (float->int truncates, NaN->0, saturates)
    Call,       // a math function: name in {sqrt exp log sin cos tan asin acos atan atan2 sinh cosh
                //   tanh abs floor ceil round min max pow erf fmod mulhi}, or bits: the bit pattern of
                //   an f32/f64 as the u32/u64 of its width (__float_as_uint; radix sort keys)
    Shuffle,    // warp shuffle over all 32 lanes of the warp: shuffle_op, a = value, b = lane/delta
};

enum class UnaryOp : uint8_t { Neg, Not /* bool */, BitNot };
enum class BinaryOp : uint8_t {
    Add, Sub, Mul, Div, Mod,           // integer Div/Mod by zero give 0; float Mod is fmod
    Min, Max,                          // floats: fmin/fmax (NaN loses)
    And, Or, Xor, Shl, Shr,            // bitwise (bool And/Or are logical, no short circuit)
    Eq, Ne, Lt, Le, Gt, Ge,            // result Bool
};
enum class ShuffleOp : uint8_t { Xor, Up, Down, Idx };  // __shfl_{xor,up,down,}_sync(0xffffffff, ...)
enum class MemSpace : uint8_t { Global, Shared };

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
    ExprKind kind;
    ScalarType type;
    std::string name;            // Var, Param, Load (memory), Call (function)
    int64_t i = 0;               // Const of integer or bool type
    double f = 0;                // Const of float type
    MemSpace space = MemSpace::Global;  // Load
    UnaryOp unary_op = UnaryOp::Neg;
    BinaryOp binary_op = BinaryOp::Add;
    ShuffleOp shuffle_op = ShuffleOp::Xor;
    std::vector<ExprPtr> args;   // Load {index}; Unary {a}; Binary {a, b}; Select {c, a, b};
                                 // Cast {a}; Call args; Shuffle {value, lane_or_delta}
};

// ---------------------------------------------------------------- statements
enum class StmtKind : uint8_t {
    Let,      // type name = value;            (declares)
    Assign,   // name = value;
    Store,    // mem[index] = value;           name/space say which memory
    If,       // if (cond) then_body else else_body
    For,      // for (name = lo; name < hi; name += step) body   (sequential; step > 0)
    While,    // while (cond) body
    Atomic,   // [result =] atomicOp(&mem[index], value [, compare]); global or shared
    Error,    // record failed check `code` with (index, extent); the lowest thread's first is kept
    Seq,      // { body... }
    Comment,  // a comment in the generated code (the source expression)
};

enum class AtomicOp : uint8_t { Add, Min, Max, And, Or, Xor, Exch, CAS };

struct Stmt;
using StmtPtr = std::shared_ptr<const Stmt>;

struct Stmt {
    StmtKind kind;
    std::string name;            // Let/Assign/For: the variable; Store/Atomic: the memory; Comment: text
    ScalarType type = ScalarType::I32;  // Let/For: the variable's type; Atomic: element type
    MemSpace space = MemSpace::Global;  // Store, Atomic
    AtomicOp atomic_op = AtomicOp::Add;
    std::string result;          // Atomic: variable (already declared) receiving the old value, or empty
    int error_code = 0;          // Error: which check (an index into Kernel::checks)
    std::vector<ExprPtr> exprs;  // Let/Assign {value}; Store {index, value}; If {cond}; For {lo, hi, step};
                                 // While {cond}; Atomic {index, value[, compare]}; Error {index, extent}
    std::vector<StmtPtr> body;   // If: then; For/While/Seq: body
    std::vector<StmtPtr> else_body;  // If
};

// ---------------------------------------------------------------- block level
enum class BlockStmtKind : uint8_t { Phase, BlockFor };

struct BlockStmt;
using BlockStmtPtr = std::shared_ptr<const BlockStmt>;

struct BlockStmt {
    BlockStmtKind kind;
    StmtPtr phase;                    // Phase: the code every thread runs (usually a Seq)
    std::string var;                  // BlockFor: loop variable (I64, uniform)
    std::vector<ExprPtr> range;       // BlockFor {lo, hi, step}: uniform expressions
    std::vector<BlockStmtPtr> body;   // BlockFor
};

// ---------------------------------------------------------------- kernels
enum class ParamKind : uint8_t { Scalar, Buffer };
enum class Access : uint8_t { Read, Write, ReadWrite };

struct Param {
    std::string name;
    ParamKind kind = ParamKind::Scalar;
    ScalarType type = ScalarType::I64;  // Scalar: its type; Buffer: element type
    Access access = Access::Read;       // Buffer
};

struct SharedArray {
    std::string name;
    ScalarType type;
    int64_t size;  // elements, a compile-time constant
};

// What an Error statement with error_code = index in `checks` means, for the
// runtime's message ("index 7 is out of bounds for axis 0 with extent 5").
struct Check {
    std::string message;  // e.g. "index out of bounds" -- the runtime formats index and extent into it
    Loc loc;              // the source expression
};

struct Kernel {
    std::string name;                 // a C identifier, e.g. "rmse_reduce"
    std::string comment;              // the source expression and location, printed above the kernel
    std::vector<Param> params;
    std::vector<SharedArray> shared;
    int block_size = 256;             // threads per block (a lowering parameter)
    std::vector<BlockStmtPtr> body;
    std::vector<Check> checks;        // referenced by Error statements
};

// ---------------------------------------------------------------- constructors
// Concise builders for lowering code. Types of Binary/Unary/Select results
// follow their operands; comparison results are Bool.
ExprPtr const_int(int64_t v, ScalarType t = ScalarType::I64);
ExprPtr const_float(double v, ScalarType t = ScalarType::F32);
ExprPtr const_bool(bool v);
ExprPtr var(const std::string& name, ScalarType t);
ExprPtr param(const std::string& name, ScalarType t);
ExprPtr thread_idx();
ExprPtr block_idx();
ExprPtr block_dim();
ExprPtr grid_dim();
ExprPtr load(const std::string& mem, ExprPtr index, ScalarType t, MemSpace space = MemSpace::Global);
ExprPtr unary(UnaryOp op, ExprPtr a);
ExprPtr binary(BinaryOp op, ExprPtr a, ExprPtr b);
ExprPtr select(ExprPtr c, ExprPtr a, ExprPtr b);
ExprPtr cast(ScalarType t, ExprPtr a);
ExprPtr call(const std::string& fn, std::vector<ExprPtr> args, ScalarType result);
ExprPtr shuffle(ShuffleOp op, ExprPtr value, ExprPtr lane_or_delta);

StmtPtr let(const std::string& name, ExprPtr value);  // type from value
StmtPtr assign(const std::string& name, ExprPtr value);
StmtPtr store(const std::string& mem, ExprPtr index, ExprPtr value, MemSpace space = MemSpace::Global);
StmtPtr if_then(ExprPtr cond, std::vector<StmtPtr> then_body, std::vector<StmtPtr> else_body = {});
StmtPtr for_loop(const std::string& v, ExprPtr lo, ExprPtr hi, ExprPtr step, std::vector<StmtPtr> body);
StmtPtr while_loop(ExprPtr cond, std::vector<StmtPtr> body);
StmtPtr atomic(AtomicOp op, const std::string& mem, ExprPtr index, ExprPtr value, ScalarType t,
               const std::string& result = "", ExprPtr compare = nullptr, MemSpace space = MemSpace::Global);
StmtPtr error(int code, ExprPtr index, ExprPtr extent);
StmtPtr seq(std::vector<StmtPtr> body);
StmtPtr comment(const std::string& text);

BlockStmtPtr phase(StmtPtr code);
BlockStmtPtr block_for(const std::string& v, ExprPtr lo, ExprPtr hi, ExprPtr step, std::vector<BlockStmtPtr> body);

// ---------------------------------------------------------------- checking and printing
// Throws Error(Internal) naming the kernel and the broken invariant:
// names declared before use and not redeclared in one scope; operand types
// agree; loads/stores name a declared buffer or shared array of the right
// element type; stores only to Write/ReadWrite buffers; BlockFor ranges are
// uniform (no ThreadIdx, thread locals or loads); Shuffle only under
// warp-uniform control (every lane of a warp takes the same path, e.g.
// `if (threadIdx / 32 == 0)`); Error codes index `checks`. Also: names are C
// identifiers that are not CUDA keywords or math functions and do not start
// with `shoal_`; no shadowing; one type per name; loop variables and params
// are never assigned; Write buffers are never loaded (use ReadWrite); no
// atomics on bool; block size 1..1024 (a multiple of 32 with shuffles);
// at most 48 KiB of shared memory.
void verify(const Kernel& k);
// Whether verify accepts `name` for a kernel, parameter, shared array or variable.
bool is_valid_name(const std::string& name);

// A readable text form for `:ir` and SHOAL_DUMP_IR.
std::string to_string(const Kernel& k);
// The same without the source positions of its checks: what keys the plan
// cache (codegen/plan_cache.h).
std::string to_string_without_positions(const Kernel& k);
std::string to_string(const ExprPtr& e);
// "+", "<=", "min", ...: how the text forms write a binary operator.
const char* binary_op_symbol(BinaryOp op);

}  // namespace shoal::ir
