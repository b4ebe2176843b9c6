// Dead-code elimination, the last optimisation pass (codegen/pipeline.h).
//
// Removes the Lets and assignments of variables nothing reads (a variable
// read only by its own assignments, `acc = acc + x`, counts as unread), and
// with them what only they read, transitively: the code of a fused tuple's
// unused components disappears. Then statements left with nothing to do:
// `if`s with both branches empty, `for` loops with an empty body, empty
// scopes, empty phases (their barrier goes too: a barrier after no code
// orders nothing that the previous barrier did not) and empty block loops.
// Repeats until nothing changes (an `if` removed may leave its condition's
// variables unread).
//
// Never removed: stores, atomics (an unread result is dropped, the update
// stays), error checks, `while` loops (one may wait for another thread),
// comments, anything containing a shuffle (a collective), and kernel
// parameters (they are the launch plan's interface).
#pragma once
#include "codegen/ir.h"

namespace shoal::ir {

Kernel eliminate_dead_code(const Kernel& k);

}  // namespace shoal::ir
