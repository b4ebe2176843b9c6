// Common-subexpression elimination, the second optimisation pass
// (codegen/pipeline.h).
//
// A value-numbering walk in program order: every compound subexpression is
// looked up among the values already computed and still valid where it
// occurs; found, it becomes that variable; not found, it is bound to a new
// Let right before its statement. Afterwards the new Lets used only once are
// put back in place, so what remains are exactly the values used twice or
// more, computed once (`x * x` over a fused load loads x once). A Let whose
// value was already computed becomes a second name for it and disappears (a
// fused tuple's code emitted twice keeps one copy).
//
// Safety rules:
// - Only immutable variables (never assigned, never an atomic's result)
//   stand for their Let's value; an assignment invalidates every value that
//   reads the variable.
// - Loads from Read buffers are constant for the whole kernel. Loads from
//   memory the kernel writes (Write/ReadWrite buffers, shared arrays) are
//   reused only in straight-line code: a store or atomic to that memory, a
//   barrier (the end of a phase) and every loop boundary invalidate them
//   (another thread may write the location while a loop waits for it).
// - A value computed before a loop is reused inside it only if the loop
//   assigns none of its variables and writes none of its memory; loop
//   bounds that are evaluated again on every trip are rewritten under the
//   same rule, and `while` conditions are left alone.
// - Values are bound where their statement runs, never earlier: code inside
//   an `if` stays inside it (the condition may guard an out-of-bounds load),
//   and a value first computed in one branch is not visible in the other.
// - Shuffles are never bound (collectives), nor are leaves and casts of
//   leaves (cheap, and `(i64)threadIdx` stays visible to the verifier's
//   warp-uniformity patterns); BlockFor bounds are not touched.
// - Readability: one operation on leaves (`threadIdx - 1`) reuses a Let
//   that holds it but gets no new variable; loads and calls always may.
#pragma once
#include "codegen/ir.h"

namespace shoal::ir {

Kernel eliminate_common_subexpressions(const Kernel& k);

}  // namespace shoal::ir
