// Compiling Shoal functions to kernel IR (docs/compiler.md, "Compiling
// functions"): a closure's body is walked with IR expressions for its
// parameters and emits the code computing its result into the kernel being
// built. Literals and captured scalars become kernel scalar parameters
// (lambda lifting: the kernel text never depends on their values, so
// `saxpy 2.0 x y` and `saxpy 3.0 x y` share one kernel); captured host arrays
// become buffer parameters. Nested array expressions that do not depend on
// the function's parameters are hoisted: computed once on the host before the
// kernel (Barracuda's addSum); those that do become sequential loops in the
// thread (nested data parallelism, flattened by hand: ndp). Anything outside
// the compiled subset throws Decline, and the caller leaves the whole
// expression to the reference evaluator.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "codegen/kernel_builder.h"
#include "codegen/launch_plan.h"
#include "codegen/lower_primitives.h"
#include "codegen/plan_executor.h"
#include "lang/builtins_eval.h"

namespace shoal::compiled {

// Thrown when an expression is outside the compiled subset.
struct Decline {
    std::string why;
};

// The host side of one launch plan being built: the values of the scalar
// parameters it lifts and the host arrays it reads. Parameter names come from
// counters in the order the graph is walked, so one structure always gives
// one kernel text.
class FuseContext {
public:
    explicit FuseContext(EvalContext ctx) : ctx_(ctx) {}

    // A lifted scalar; `key` (a literal or variable node plus the value's
    // bits) makes re-emitting the same function reuse the parameter.
    // `shown_as`: the variable it came from, the name `:cuda` shows for it.
    // `symbol`: the value's symbol during `:emit`'s trace (lang/value.h).
    ir::ExprPtr lift(ir::KernelBuilder& kb, const Scalar& s, const void* key = nullptr,
                     const std::string& shown_as = "", SymbolPtr symbol = nullptr);
    // An I64 extent parameter holding n.
    ir::ExprPtr extent(int64_t n);
    // An array read by the plan (in host or device memory): its buffer name,
    // one per array. `identity`: the value the user's binding holds (an
    // Array or a Delayed node), which names it in `:cuda`.
    struct Input {
        std::string buffer;
        std::vector<ir::ExprPtr> extents;
        ir::ScalarType elem;
    };
    const Input& input(const ir::ArrayData& a, Prim elem, const Shape& shape, const void* identity);
    // Gives each input buffer the plan reads its size (the product of its
    // extents), so that the plan's entry signature states it.
    void size_inputs(ir::PlanBuilder& pb) const;
    // What a lowering may ask of this plan (lower_primitives.h): the values
    // of its integer scalars and the sizes of the buffers it reads. None
    // during :emit's trace, whose values stand for any argument.
    ir::LoweringFacts facts(const ir::PlanBuilder& pb) const;

    EvalContext& eval_context() { return ctx_; }
    // Whether loop-invariant nested array expressions are hoisted out of
    // kernels (`:set hoist`; the backend's setting).
    bool hoisting() const;
    // Loop-invariant expressions hoisted out of the kernel, computed once per
    // plan: key (expression, closure) -> value.
    const Value* hoisted(const void* expr, const void* closure) const {
        auto it = hoisted_.find({expr, closure});
        return it == hoisted_.end() ? nullptr : &it->second;
    }
    void remember_hoisted(const void* expr, const void* closure, Value v) { hoisted_[{expr, closure}] = std::move(v); }
    // A delayed node's pull array, made once per plan: a node read several
    // times (`where (x < e i) (i - 1) i` reads i three times) then lifts its
    // scalars once, so its copies are the same code and CSE computes it once.
    // The node is held, so its address is not reused while the plan is built.
    const ir::PullArray* pulled(const DelayedPtr& node) const {
        auto it = pulled_.find(node.get());
        return it == pulled_.end() ? nullptr : &it->second.second;
    }
    const ir::PullArray& remember_pulled(const DelayedPtr& node, ir::PullArray p) {
        return pulled_.insert_or_assign(node.get(), std::make_pair(node, std::move(p))).first->second.second;
    }
    const std::map<std::string, Scalar>& scalars() const { return scalars_; }
    const std::map<std::string, SymbolPtr>& symbols() const { return symbols_; }
    const std::map<std::string, ir::ArrayData>& buffers() const { return buffers_; }
    // The user's names for the plan's parameters, for `:cuda` (codegen/display_names.h):
    // input buffers after the bindings (EvalContext::parameter_names), their
    // extents len_<name>, lifted scalars after their variables.
    const std::map<std::string, std::string>& shown_names() const { return shown_names_; }

    // `:profile`'s fusion decisions: the delayed arrays fused into this plan
    // ("`map` at <stdin>:1:9") and the arrays it reads from memory, each
    // with why it is there rather than fused ("" for a host array).
    void note_fused(const std::string& what);
    void note_materialised(const std::string& buffer, const std::string& what, const std::string& why);
    // Whether the fusion decisions are noted: only what shows them
    // (`:profile`, `:cuda`, `:compile`, `:emit`) asks, and building their
    // text cost every plan a few thousand instructions.
    bool notes_decisions();
    const std::vector<std::string>& fused() const { return fused_; }
    const std::vector<std::string>& materialised() const { return materialised_; }

    // The integer facts asked of facts() since the last take, with the
    // answers (a memoised plan holds while they stay the same, plan_memo.h).
    std::vector<std::pair<std::string, std::optional<int64_t>>> take_fact_queries() {
        return std::exchange(fact_queries_, {});
    }
    // The value of an integer plan scalar bound here (nullopt: none, or not
    // an integer): what facts() answers, without recording the question.
    std::optional<int64_t> integer_value(const std::string& name) const;
    // How many parameters and buffers are bound (a lowering that adds some
    // after the probe is not memoised).
    size_t bound() const { return scalars_.size() + buffers_.size(); }

    // Advice found while compiling (sequential nesting); the backend passes
    // it on to the statement only once the plan is built, so a function that
    // declines (the reference evaluator computes it) warns of nothing.
    std::vector<Warning> warnings;

private:
    EvalContext ctx_;
    std::map<std::string, Scalar> scalars_;
    std::map<std::string, SymbolPtr> symbols_;
    std::map<std::string, ir::ArrayData> buffers_;
    std::vector<std::string> fused_, materialised_;
    std::optional<bool> notes_decisions_;
    std::map<std::string, std::string> shown_names_;
    std::map<std::tuple<const void*, Prim, int64_t>, std::string> lifted_;
    std::map<const void*, Input> inputs_;
    std::map<std::pair<const void*, const void*>, Value> hoisted_;
    std::map<const void*, std::pair<DelayedPtr, ir::PullArray>> pulled_;
    mutable std::vector<std::pair<std::string, std::optional<int64_t>>> fact_queries_;
    int counter_ = 0;
};

ir::ExprPtr zero_of(ir::ScalarType t);

// A builtin operator or scalar function (`+`, `sqrt`, `float`, ...) applied
// to IR operands (their type is the operand type); throws Decline for the
// others. Most are one expression; integer ** emits a loop into kb.
// Semantics follow lang/array_ops.h (wrapping integers, division by zero
// gives 0, fmin/fmax) -- the IR defines the same.
ir::ExprPtr emit_builtin(ir::KernelBuilder& kb, const std::string& name, const std::vector<ir::ExprPtr>& args);
// The result type of a builtin on operands of these types (Decline if none).
ir::ScalarType builtin_result(const std::string& name, const std::vector<ir::ScalarType>& operands);

// Emits `fn` (a closure or a partially applied builtin) applied to scalar
// arguments; returns the leaves of its result (one per tuple component).
std::vector<ir::ExprPtr> compile_call(FuseContext& fc, ir::KernelBuilder& kb, const Value& fn,
                                      const std::vector<ir::ExprPtr>& args);
// The same with arguments that may be tuples: `leaves` holds the scalar
// leaves of every argument in order, `types` each argument's Shoal type.
std::vector<ir::ExprPtr> compile_call(FuseContext& fc, ir::KernelBuilder& kb, const Value& fn,
                                      const std::vector<ir::ExprPtr>& leaves, const std::vector<Type>& types);

}  // namespace shoal::compiled
