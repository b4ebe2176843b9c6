// The reference evaluator: evaluates a type-checked expression directly on
// host memory. Written for clarity, not speed; it defines what every
// optimised path must compute.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

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

struct EvalContext {
    Globals* globals = nullptr;
    const std::atomic<bool>* cancel = nullptr;  // set asynchronously by Ctrl-C
    uint64_t seed = kDefaultSeed;
    uint64_t random_stream = 0;  // advanced by every call of `random`
};

// Evaluates `e` (whose node types are concrete). Throws Error on runtime
// errors and ErrorKind::Interrupted when ctx.cancel becomes true.
Value evaluate(const ExprPtr& e, EvalContext& ctx);

// Binds `value` to `pattern` (a Let statement's pattern) into name -> value pairs.
std::vector<std::pair<std::string, Value>> bind_pattern(const PatternPtr& pattern, const Value& value);

}  // namespace shoal
