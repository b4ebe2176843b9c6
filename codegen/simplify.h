// simplify: the first optimisation pass (codegen/pipeline.h).
//
// - Constant folding with exactly the IR's semantics (ir.h): integers wrap,
//   integer / and % by zero give 0, shift amounts are taken modulo the width,
//   f32 arithmetic is done in f32, casts follow Shoal's conversion rules. The
//   operations are lang/scalar_semantics.h's, which the executor runs too, so
//   a folded kernel computes what the unfolded one did. Calls are folded only
//   where the result is exact (min, max, abs, mulhi); sqrt, exp and the other
//   math functions are left to the device's library.
// - Identities that hold for every value: integer x + 0, x - 0, x * 1, x / 1,
//   x * 0 (x has no shuffle), x | 0, x ^ 0, x & ~0, x & 0, shifts by a
//   multiple of the width; float x - 0.0, x + -0.0, x * 1.0, x / 1.0 (x + 0.0
//   is not one: -0.0 + 0.0 is +0.0); bool x && true, x || false and their
//   absorbing forms; the same variable on both sides (integer x - x, x ^ x,
//   x % x, x == x, x < x, ...; min and max also for floats); double
//   negation; casts to the operand's own type; selects with a constant
//   condition.
// - Let-propagation: an immutable variable bound to a constant, a parameter
//   or another immutable variable is replaced by that value where it is
//   visible, and its Let disappears.
// - Statements: an `if` with a constant condition becomes the taken branch
//   (spliced into the enclosing list unless it declares variables, then kept
//   as a scope), a `for` whose constant bounds give no trip and a `while
//   (false)` disappear.
#pragma once
#include "codegen/ir.h"

namespace shoal::ir {

Kernel simplify(const Kernel& k);

}  // namespace shoal::ir
