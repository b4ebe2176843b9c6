// Internal to the reference evaluator's builtin files (builtins_eval.cpp,
// builtins_statistics.cpp): argument access, errors, and applying another
// builtin from a composite's implementation.
#pragma once
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "builtins_eval.h"

namespace shoal::evalimpl {

using Args = std::span<const Value>;

[[noreturn]] inline void fail(const BuiltinCall& c, const std::string& message) {
    user_error(ErrorKind::Runtime, c.loc, std::string(c.def.name) + ": " + message);
}

inline int64_t int_arg(const Value& v) { return v.scalar().as_long(); }

inline const Array& array_arg(const Value& v) {
    SHOAL_INTERNAL_ASSERT(v.is_array(), "builtin argument is not an array");
    return *v.array();
}

inline Value int_value(int64_t n) { return Value(Scalar::of_int(static_cast<int32_t>(n))); }

// A shape as `reshape` and `fill` take it: an int for a vector, else a tuple of ints.
inline Value shape_value(const Shape& s) {
    if (s.size() == 1) return int_value(s[0]);
    std::vector<Value> extents;
    for (int64_t e : s) extents.push_back(int_value(e));
    return Value(std::move(extents));
}

// Applies builtin `name` through the context (its backend computes it, fusing
// what it can): how a composite (BuiltinDef::composite) is written.
// Its errors name the composite, the builtin the user called.
inline Value apply_named(const BuiltinCall& c, const char* name, std::initializer_list<Value> args,
                         const Type& type = nullptr) {
    try {
        return apply_builtin(*find_builtin(name), type, std::span<const Value>(args.begin(), args.size()), c.ctx,
                             c.loc);
    } catch (Error& e) {
        rename_builtin_error(e, name, c.def.name);
        throw;
    }
}

// The composite builtins (builtins_statistics.cpp): statistics, order and
// construction written with other builtins.
std::span<const BuiltinDef> statistics_builtins();
// solve, inv, det (builtins_linalg.cpp).
std::span<const BuiltinDef> linalg_builtins();
// vmap (vmap.cpp).
std::span<const BuiltinDef> vmap_builtins();

}  // namespace shoal::evalimpl
