// A launch plan: what a forced array expression becomes. It is the kernels
// plus the host program that runs them, as explicit ordered steps that every
// executor walks the same way (runtime/cpu/run_plan.cpp; the CUDA executor)
// and the `:emit` printer will print as C++:
//
//   entry: the inputs (scalars, then buffers) and outputs, in order, with
//          element types and their extents as plan scalars
//   steps: compute a host scalar, allocate a buffer, launch a kernel, check
//          its error record, call a library function (a vendor BLAS'
//          product: codegen/library_calls.h), read a scalar back from
//          device memory, free
//
// There is no second interpretation of a plan anywhere: a host never
// allocates on first use or evaluates a scalar lazily; PlanBuilder::finish
// schedules every allocation and host scalar before its first use and frees
// each temporary after its last.
//
// Binding is BY NAME: a kernel's Scalar params are plan scalars and its
// Buffer params are plan buffers of the same name and element type; a launch
// passes them in the kernel's parameter order.
//
// Host expressions reuse ir::Expr restricted to Const, Param (a plan
// scalar), Unary(Neg), Binary (arithmetic and comparisons), Select, Cast and
// Call(min, max); eval_host evaluates them with the kernels' scalar semantics
// (lang/scalar_semantics.h: integer division by zero gives 0, ...).
//
// Zero-sized launches: a launch whose grid evaluates to <= 0 is skipped (a
// CUDA launch with an empty grid is an error), so every lowering makes sure
// that the launches writing results for empty inputs (a reduction's neutral
// element) have a grid of at least 1.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/ir.h"

namespace shoal {
class Error;
}

namespace shoal::ir {

enum class ScalarSource : uint8_t {
    Input,     // bound by the caller (an extent, a lifted constant)
    Derived,   // computed on the host from earlier scalars: `value`
    ReadBack,  // set by a ReadBack step from device memory
};

struct PlanScalar {
    std::string name;
    ScalarType type = ScalarType::I64;
    ScalarSource source = ScalarSource::Input;
    ExprPtr value;  // Derived: computed by a Compute step
};

enum class BufferRole : uint8_t {
    Input,   // memory the caller provides
    Output,  // allocated by the runner, handed back to the caller
    Temp,    // allocated by the runner for the plan's lifetime
};

struct PlanBuffer {
    std::string name;
    ScalarType elem = ScalarType::F32;
    BufferRole role = BufferRole::Temp;
    // Element count as a host expression over plan scalars (it may use a
    // ReadBack scalar: the Alloc step comes after that read-back). For an
    // Input, the product of its extents (null only in hand-built plans).
    ExprPtr count;
};

enum class StepKind : uint8_t {
    Compute,   // scalar := value of the Derived plan scalar `scalar`
    Alloc,     // memory for `buffer` (a Temp, or an Output the caller did not bind)
    Launch,    // kernels[kernel]<<<grid, block_size, shared bytes>>>(its params, in order)
    Check,     // raise the failed check recorded by the last launch of kernels[kernel], if any
    ReadBack,  // scalar := buffer[index] (copies one element to the host; synchronises)
    Free,      // `buffer` (a Temp) is no longer used
    Call,      // call.function(call.args..., call.reads..., call.writes...) where `grid` (a condition) holds
};

// A call of a library function in the host program (codegen/library_calls.h
// lists the functions and what their arguments mean): every executor
// implements each function with its device's library (the CPU's BLAS,
// cuBLAS), on its stream, in order with the launches around it. Operands
// are plan buffers and host expressions over plan scalars, as a launch's.
struct LibraryCall {
    std::string function;             // "gemm"
    std::vector<ExprPtr> args;        // host expressions (extents, flags), in the function's order
    std::vector<std::string> reads;   // buffers read
    std::vector<std::string> writes;  // buffers written

    std::vector<std::string> buffers() const;  // reads, then writes
};

struct PlanStep {
    StepKind kind = StepKind::Launch;
    int kernel = -1;            // Launch, Check
    ExprPtr grid;               // Launch: number of blocks (host expression); Call: whether it runs (Bool, null: always)
    LibraryCall call;           // Call
    std::string scalar;         // Compute, ReadBack: the plan scalar it defines
    std::string buffer;         // Alloc, ReadBack, Free
    ExprPtr index;              // ReadBack: host expression
    std::string comment;        // why this step exists ("pass 2: combine the block partials")
};

// The plan's signature, as a host function would take it: every Input
// scalar (extents and lifted constants), every Input buffer, every Output
// buffer, each in the order the lowering declared it.
struct PlanEntry {
    std::vector<std::string> scalars;
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
};

struct LaunchPlan {
    std::string name;
    std::vector<Kernel> kernels;
    std::vector<PlanScalar> scalars;
    std::vector<PlanBuffer> buffers;
    PlanEntry entry;
    std::vector<PlanStep> steps;
    // A copy with other check positions (plan_cache.h, plan_memo.h) names the
    // plan it was copied from: the same code, so executors share what they
    // built for it (native code reads positions from the running plan).
    std::shared_ptr<const LaunchPlan> relocated_from;

    const PlanScalar* find_scalar(const std::string& name) const;
    const PlanBuffer* find_buffer(const std::string& name) const;
};

// A copy of `plan` whose checks the caller moves to other positions.
std::shared_ptr<LaunchPlan> relocatable_copy(const std::shared_ptr<const LaunchPlan>& plan);

// Where a plan's checks are moved to (plan_memo.h): a plan found for a
// statement on another line runs unchanged, and only a failed check, whose
// error names one of these positions, is moved (null: none moved).
using CheckMoves = std::shared_ptr<const std::vector<std::pair<Loc, Loc>>>;
bool same_position(const Loc& a, const Loc& b);
// The error of a failed check, at the position `moves` moves its own to.
void move_check_error(Error& e, const CheckMoves& moves);
// `plan` with its checks at the positions `moves` gives (a copy if any moves).
std::shared_ptr<const LaunchPlan> with_moved_checks(const std::shared_ptr<const LaunchPlan>& plan,
                                                    const CheckMoves& moves);

// Shared memory of a kernel in bytes (its static shared arrays).
int64_t shared_bytes(const Kernel& k);

// Building a plan. Kernels added with add_kernel have their parameters
// registered: a Scalar param not yet in the plan becomes an Input scalar, a
// Buffer param not yet in the plan an Input buffer (what fused producers
// read). Names are unique per plan; declaring an existing name again with
// the same type is a no-op, so lowerings compose.
class PlanBuilder {
public:
    explicit PlanBuilder(std::string name);

    std::string input_scalar(const std::string& name, ScalarType t);
    // A host-computed scalar; its Params must already be plan scalars.
    std::string derived(const std::string& name, ExprPtr value);
    std::string input_buffer(const std::string& name, ScalarType elem, ExprPtr count = nullptr);
    std::string output_buffer(const std::string& name, ScalarType elem, ExprPtr count);
    std::string temp_buffer(const std::string& name, ScalarType elem, ExprPtr count);
    void set_role(const std::string& buffer, BufferRole role);

    // A name not used yet in this plan (for temporaries and derived scalars).
    std::string fresh(const std::string& prefix);

    // Adds k as lowered; codegen/pipeline.h's optimize() runs the passes on
    // the finished plan (the plan cache does, on a miss).
    int add_kernel(Kernel k);
    void launch(int kernel, ExprPtr grid, std::string comment = "");
    // While a guard is set, the launches added run only where `cond` (a host
    // Bool over plan scalars) holds at run time (their grid is 0 otherwise)
    // and the buffers declared get no memory otherwise: one plan holding two
    // lowerings of a primitive that a run-time size chooses between (permute's
    // bins or sort when the lowering cannot know the number of targets).
    // Null clears it; read-backs are not allowed under a guard.
    void set_guard(ExprPtr cond);

    // A library call (under the guard, if one is set). Its buffers must be
    // declared: inputs, temporaries written by earlier launches, outputs.
    void call(LibraryCall c, std::string comment = "");

    // Defines the ReadBack scalar `scalar` (type: the buffer's element type).
    std::string read_back(const std::string& scalar, const std::string& buffer, ExprPtr index,
                          std::string comment = "");

    // The plan so far: kernels, scalars, buffers, launches and read-backs in
    // order (no host program yet).
    const LaunchPlan& plan() const { return plan_; }
    // The plan with its entry signature and its host program scheduled.
    LaunchPlan finish() const;

private:
    void register_params(const Kernel& k);
    void register_host_params(const ExprPtr& e);
    std::string add_buffer(const std::string& name, ScalarType elem, BufferRole role, ExprPtr count);

    LaunchPlan plan_;
    std::map<std::string, int> counters_;
    ExprPtr guard_;
};

// Checks the host program's invariants (an internal error names the first
// broken one): every scalar is defined (input, computed or read back) before
// a step uses it; every buffer is an input or allocated before its use and
// not used after it is freed; only temporaries are freed, each once; every
// launch of a kernel with checks is followed by its Check; every output is
// allocated.
void verify_host_program(const LaunchPlan& plan);

// ---------------------------------------------------------------- host expressions
// Builders for host formulas (they also work inside kernels).
ExprPtr ceil_div(ExprPtr a, ExprPtr b);       // (a + b - 1) / b for a >= 0, b > 0
ExprPtr min_expr(ExprPtr a, ExprPtr b);
ExprPtr max_expr(ExprPtr a, ExprPtr b);
ExprPtr i64(int64_t v);                       // an I64 constant
ExprPtr product(const std::vector<ExprPtr>& xs);  // I64 product, 1 for none

// A host value: integers (and bools) in i, floats in f.
struct HostValue {
    ScalarType type = ScalarType::I64;
    int64_t i = 0;
    double f = 0;
};

// Evaluates a host expression; `lookup` gives a plan scalar's value.
// Throws Error(Internal) for a node not allowed in host expressions.
HostValue eval_host(const ExprPtr& e, const std::function<HostValue(const std::string&)>& lookup);
int64_t eval_host_int(const ExprPtr& e, const std::function<HostValue(const std::string&)>& lookup);

// A host expression in C syntax: "min((n + 2047) / 2048, 1024)".
std::string host_expr_string(const ExprPtr& e);

// A host expression as C++ that computes exactly what eval_host does, with
// the CUDA prelude's helpers (cuda_printer.h cuda_full_prelude): integer /
// and % through shoal_div / shoal_mod, float -> integer casts through
// shoal_to_i32 ..., other casts as static_cast, float constants that read
// back exactly. Plan scalars are variables of their own name. For `:emit`:
// "std::min(shoal_div(shoal_sub(shoal_add(n, 2048LL), 1LL), 2048LL), 1024LL)".
std::string host_expr_cpp(const ExprPtr& e);

// The `:cuda` launch-plan view: the entry signature, then each step of the
// host program in order (launches with their grid and block, shared memory
// and the buffers they read and write).
std::string to_string(const LaunchPlan& plan);

}  // namespace shoal::ir
