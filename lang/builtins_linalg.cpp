// The linear algebra builtins of the reference evaluator (solve, inv, det, lstsq)
// on lang/linalg's LU factorisation; the compiled backend calls LAPACK or
// cuSOLVER for them (codegen/consumers_linalg.cpp).
#include "builtin_helpers.h"
#include "linalg.h"

namespace shoal::evalimpl {

namespace {

Value b_solve(const BuiltinCall& c, Args a) { return Value(ops::solve(array_arg(a[0]), array_arg(a[1]), "solve", c.loc)); }
Value b_inv(const BuiltinCall& c, Args a) { return Value(ops::inverse(array_arg(a[0]), c.loc)); }
Value b_det(const BuiltinCall& c, Args a) { return Value(ops::determinant(array_arg(a[0]), c.loc)); }
Value b_lstsq(const BuiltinCall& c, Args a) { return Value(ops::lstsq(array_arg(a[0]), array_arg(a[1]), c.loc)); }

const BuiltinDef kLinalg[] = {
    {"solve", 2, b_solve},
    {"inv", 1, b_inv},
    {"det", 1, b_det},
    {"lstsq", 2, b_lstsq},
};

}  // namespace

std::span<const BuiltinDef> linalg_builtins() { return kLinalg; }

}  // namespace shoal::evalimpl
