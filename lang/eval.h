// The reference evaluator: evaluates a type-checked expression directly on
// host memory. Written for clarity, not speed; it defines what every
// optimised path must compute.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "array_ops.h"
#include "ast.h"
#include "typecheck.h"
#include "value.h"

namespace shoal {

// A top-level binding. A generalised function keeps its definition (node
// types mention Gen(i)) and is specialised per instance on first use.
struct Binding {
    SchemePtr scheme;
    Value value;            // monomorphic bindings
    ExprPtr generic;        // polymorphic functions: the Lambda with Gen types
    std::map<std::string, Value> specialisations;  // key: types_to_strings(instance) joined
};
using BindingPtr = std::shared_ptr<Binding>;
using Globals = std::map<std::string, BindingPtr>;

// Default random seed (documented in docs/language.md).
constexpr uint64_t kDefaultSeed = 42;

struct EvalContext;

// A loop whose steps the backend records and then replays (docs/compiler.md,
// "Replayed loop steps"): a step of a long loop is mostly host work (the
// evaluator walking the body, plans looked up), while what it computes is a
// fixed sequence of plans. Two steps are recorded; when they ran the same
// plans on operands of the same origin (the state, an earlier plan's result,
// an array from outside the loop) with the same scalars, and nothing was read
// or done on the host, the remaining steps run those plans directly.
class LoopReplay {
public:
    virtual ~LoopReplay() = default;
    // Before a recorded step: the state, watched so that a host read of its
    // elements is seen.
    virtual Value begin(const Value& state) = 0;
    // After it, with its settled result (`host_effect`: what the step did
    // on the host that rules replaying out, or null): false when the step
    // cannot be replayed (the loop goes on evaluating its body).
    virtual bool end(const Value& result, const char* host_effect) = 0;
    // The loop is not replayed for this reason (`:time` and `:profile` say it).
    virtual void refuse(const std::string& why) = 0;
    // Two recorded steps agreed: step() now stands for evaluating the body.
    virtual bool ready() const = 0;
    virtual Value step(const Value& state) = 0;
};

// An array backend other than the reference evaluator (the compiled backend,
// codegen/ and runtime/cpu/compiled_backend.h). The evaluator consults it
// whenever a builtin is applied to all its arguments: it returns the result
// (often a Delayed array) or declines with nullopt, and then the reference
// implementation runs on forced arguments. Arguments may be Delayed.
class ArrayBackend {
public:
    virtual ~ArrayBackend() = default;
    // `type` is the builtin's instantiated type; null for operator nodes.
    virtual std::optional<Value> apply_builtin(std::string_view name, const Type& type, std::span<const Value> args,
                                               EvalContext& ctx, const Loc& loc) = 0;
    // a[s0, s1, ...] with at least one slice (each axis resolved as in
    // ops::select_slice / select_index: a plain index drops its axis; axes
    // past the selection are kept whole); nullopt declines.
    virtual std::optional<Value> slice(const Value& a, std::span<const ops::AxisSelect> sel, const Loc& loc) = 0;
    // a with [s0, s1, ...] = v (an array of the selected part's shape, or a
    // scalar), selections as for slice; a is settled (computed, see eval_with);
    // nullopt declines (the host copies).
    virtual std::optional<Value> update(const Value& a, std::span<const ops::AxisSelect> sel, const Value& v,
                                        const Loc& loc) {
        (void)a, (void)sel, (void)v, (void)loc;
        return std::nullopt;
    }
    // random's numbers for elements [first, first + its size) of an array
    // whose element i is random_uniform(seed, stream, i), shaped `shape`: a
    // sharded array's block, the same numbers for any number of ranks;
    // nullopt declines (made on the host).
    virtual std::optional<Value> random_block(const Shape& shape, uint64_t seed, uint64_t stream, int64_t first,
                                              EvalContext& ctx) {
        (void)shape, (void)seed, (void)stream, (void)first, (void)ctx;
        return std::nullopt;
    }
    // Plans run so far (a loop step that ran one settles its state, `carried`).
    virtual int64_t plans_run() const { return 0; }
    // A recorder for a loop's steps (LoopReplay), or null (none now: a loop
    // inside a recorded step, `:cuda`, `:emit`).
    virtual std::unique_ptr<LoopReplay> replay_loop(const EvalContext& ctx) {
        (void)ctx;
        return nullptr;
    }
};

// The value with every Delayed array (also inside tuples) forced to host
// memory. The choke points that need host data call it: reference builtins'
// arguments, indexing, array literals, printing, top-level bindings.
Value force(const Value& v);
// The value with every Delayed array (also inside tuples) computed: one with
// a host array becomes that array, one kept in device memory stays Delayed
// until a choke point forces it. Bindings are settled.
Value settle(const Value& v);
// A loop's (or `iterate`'s) state after a step: settled with a backend
// outside `:emit`'s trace when the step ran plans (`plans_before`: the
// backend's plans_run() when the step began), so that steps do not fuse
// into each other.
Value carried(Value x, const EvalContext& ctx, int64_t plans_before);
// The backend's plans_run(), 0 without one.
int64_t plans_run(const EvalContext& ctx);
// `n` steps of a loop (`loop ... for`, `iterate`) from `x`: step(i, x) is the
// state after step i, carried. With a backend the steps are recorded and
// replayed when they can be (LoopReplay); `counter_free`: the step does not
// read its index i (a replayed step has none).
Value run_loop(int64_t n, Value x, EvalContext& ctx, bool counter_free, const Loc& loc,
               const std::function<Value(int64_t i, const Value& x)>& step);

// `:emit` traces a function through the evaluator (codegen/emit_trace.h):
// its parameters are placeholders whose scalars carry symbols. The evaluator
// tells the tracer what it computes from them and asks it before deciding
// anything on a value, so that the trace is valid for every argument or
// stops with an error that says why not.
class Tracer {
public:
    virtual ~Tracer() = default;
    // A builtin applied to `args` gave `result`: the result with its symbol.
    virtual Value builtin_result(std::string_view name, std::span<const Value> args, Value result,
                                 const Loc& loc) = 0;
    // The evaluator is about to branch on (or index with, or bake into an
    // array) `v`; `what` says which ("the condition of `if`").
    virtual void decide(const Value& v, std::string_view what, const Loc& loc) = 0;
    // A slice lo:hi:step (null parts omitted) of an axis of extent n
    // resolved to start, step, count (ops::select_slice).
    virtual void slice(const Value* lo, const Value* hi, const Value* step, int64_t n, int64_t start,
                       int64_t step_taken, int64_t count, const Loc& loc) = 0;
};

// Advice found while evaluating (the compiler's sequential nesting): the
// session reports each once, as a warning, after the statement.
struct Warning {
    Loc loc;
    std::string message;
    std::vector<std::string> notes;
};

struct EvalContext {
    Globals* globals = nullptr;
    const std::atomic<bool>* cancel = nullptr;  // set asynchronously by Ctrl-C
    uint64_t seed = kDefaultSeed;
    uint64_t random_stream = 0;  // advanced by every call of `random`
    ArrayBackend* backend = nullptr;  // null: the reference evaluator alone
    std::vector<Warning>* warnings = nullptr;  // null: advice is dropped
    // `:cuda`/`:ir`: arrays by address with the names the generated code
    // should show: the session's bindings, and for `:cuda f` the placeholder
    // arrays standing for f's parameters.
    const std::map<const void*, std::string>* parameter_names = nullptr;
    Tracer* tracer = nullptr;  // `:emit`'s trace; null otherwise
    uint64_t effects = 0;      // builtins with effects applied (save, load): such a loop step is not replayed
    bool check = false;        // `:set check on`: an int sum that wraps is an error (both evaluators)
    // False on the ranks other than 0 of a session on several (docs/scale-out.md):
    // rank 0 writes the files (save, saveCsv) every rank computed.
    bool writes_files = true;
};

// Whether an Index (or With) node is `xs[mask]`, NumPy's boolean index, or
// `xs[idx]`, its integer array index: a single index of array type (the type
// checker allows a rank-1 mask of bools, and for an Index a vector of ints).
bool is_mask_index(const Expr& e);

// Evaluates `e` (whose node types are concrete). Throws Error on runtime
// errors and ErrorKind::Interrupted when ctx.cancel becomes true.
Value evaluate(const ExprPtr& e, EvalContext& ctx);

// Binds `value` to `pattern` (a Let statement's pattern) into name -> value pairs.
std::vector<std::pair<std::string, Value>> bind_pattern(const PatternPtr& pattern, const Value& value);

}  // namespace shoal
