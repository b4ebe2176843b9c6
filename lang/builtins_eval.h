// Internal to the reference evaluator: callable values and the table of
// builtin implementations (eval.cpp evaluates the syntax, builtins_eval.cpp
// implements every builtin function and operator).
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "eval.h"

namespace shoal::evalimpl {

struct BuiltinDef;

// What the array compiler sees of a function value (codegen/compile_function.h).
struct CallableView {
    // A closure: its Lambda node; parameters [0, bound) are already applied
    // and live in its environment (reach them with Callable::resolve).
    ExprPtr lambda;
    size_t bound = 0;
    // A (partially applied) builtin: which, its instantiated type, the arguments so far.
    const BuiltinDef* builtin = nullptr;
    Type type;
    std::vector<Value> args;
};

// Every Function value the evaluator creates: a closure or a (partially
// applied) builtin.
class Callable : public Function {
public:
    virtual CallableView view() const = 0;
    // A closure's free variable `var` (a Var node of its body not bound
    // inside the body): its value from the captured environment or the
    // globals (a generalised global specialised as the evaluator would);
    // nullopt when it names a builtin. Always nullopt for builtins.
    virtual std::optional<Value> resolve(const Expr& var, EvalContext& ctx) const = 0;
    // Evaluates `sub`, a subexpression of a closure's body whose free
    // variables are all bound in the closure's environment (the compiler
    // hoists such loop-invariant expressions out of kernels). Builtins have
    // no body: an internal error.
    virtual Value evaluate_inside(const Expr& sub, EvalContext& ctx) const = 0;
    // Evaluates `sub`, a subexpression of a closure's body, in the closure's
    // environment extended with `locals` (outermost first): `vmap` evaluates
    // the parts of a body that do not differ per row this way. Builtins have
    // no body: an internal error.
    virtual Value evaluate_with(const Expr& sub, std::span<const std::pair<std::string, Value>> locals,
                                EvalContext& ctx) const;

    // Applies the function to one or more arguments (more than it takes: the
    // result is applied to the rest). `loc` is the call site, for errors.
    virtual Value apply(std::span<const Value> args, EvalContext& ctx, const Loc& loc) const = 0;
};

const Callable& as_callable(const Value& f);
// Stacks values of one shape (scalars, arrays, tuples componentwise) into an
// array of type `type` one rank higher (an array literal's rows; `vmap`'s results).
Value stack_values(const std::vector<Value>& elems, const Type& type, const Loc& loc);
Value apply_value(const Value& f, std::span<const Value> args, EvalContext& ctx, const Loc& loc);

// Throws ErrorKind::Interrupted when ctx.cancel has been set.
void check_cancel(const EvalContext& ctx, const Loc& loc);
// The same once every 2^16 iterations of a long element loop (`fill`,
// `random` of a gigabyte): Ctrl-C within a second, an atomic load per 64 K elements.
inline void check_cancel_every(const EvalContext& ctx, const Loc& loc, int64_t i) {
    if ((i & 0xffff) == 0) check_cancel(ctx, loc);
}

// What a builtin implementation sees besides its arguments.
struct BuiltinCall {
    const BuiltinDef& def;
    EvalContext& ctx;
    const Loc& loc;    // the call site
    const Type& type;  // the builtin's instantiated (concrete) type; null for operator nodes
    // The type of the builtin's result (its type with `arity` parameters removed).
    Type result_type() const;
};

using BuiltinImpl = Value (*)(const BuiltinCall& call, std::span<const Value> args);

struct BuiltinDef {
    const char* name;
    int arity;
    BuiltinImpl impl;
    bool effect = false;  // reads or writes files: a loop step applying it is not replayed
    // Its implementation applies other builtins (through the context's
    // backend): its arguments reach it as they are, unforced, and a backend
    // computes its parts (`mean (exp m)` is a sum plan with exp fused in).
    bool composite = false;
};

// The builtin named `name` (a function, an operator such as "+", or the
// unary operators "negate", "!", "~"); null if there is none.
const BuiltinDef* find_builtin(std::string_view name);
std::vector<std::string> builtin_names();

// Applies a builtin of instantiated type `type` to `args` (any number:
// fewer than its arity gives a partial application).
Value apply_builtin(const BuiltinDef& def, const Type& type, std::span<const Value> args, EvalContext& ctx,
                    const Loc& loc);
// An error that builtin `inner` raised (its message starts "inner: ") told
// as `outer`'s, the builtin the user called (linspace is built on iota,
// whose errors then say linspace).
void rename_builtin_error(Error& e, std::string_view inner, std::string_view outer);

// Applies a builtin to exactly its arity of scalars giving a scalar (an
// operator, a math function, a conversion) without asking the backend,
// which has nothing to compile for it: host scalar code at interpreter speed.
// Not while `:emit` traces (its tracer sees every builtin's result).
Value apply_scalar_builtin(const BuiltinDef& def, const Type& type, std::span<const Value> args, EvalContext& ctx,
                           const Loc& loc);

}  // namespace shoal::evalimpl
