// The CPU dialect of the C-like printer family (c_printer.h): kernel IR ->
// one C++ translation unit for the system compiler, which the CPU executor's
// native tier (runtime/cpu/native_tier.h) builds into a shared object.
//
// How a block becomes CPU loops (docs/architecture.md, "Three ways a plan
// runs"): one OS thread runs a chunk of consecutive blocks, one block at a
// time. A block's phases run in order; a phase is a loop over the block's
// threads and a barrier is the end of that loop. A BlockFor is an ordinary
// loop (the IR guarantees it is uniform). A variable declared in one phase
// and used in another lives in a per-thread array (`acc[shoal_tid]`); shared
// memory is an array local to the block. Global atomics use the compiler's
// __atomic builtins; shared-memory atomics are plain read-modify-writes (no
// other OS thread sees the block's memory). The result of every operation is
// the interpreter's, bit for bit: integer arithmetic through the same
// wrapping helpers, floats in IEEE order with no contraction (compile with
// -ffp-contract=off), math through the same libm functions.
//
// Entry contract (what the native tier calls), per kernel K:
//   extern "C" int shoal_native_K(void* const* args, const long long* extents, long long first_block,
//                                 long long end_block, long long grid, ShoalError* error,
//                                 const unsigned char* cancel);
// - args[i] is Kernel::params[i]: a Buffer's data pointer, or the address of
//   a Scalar's value held in the parameter's exact C type; extents[i] is a
//   Buffer's number of elements (read only by checked code, below);
// - runs blocks [first_block, end_block) of a grid of `grid` blocks;
// - `error` is the caller's record for this chunk {key, code, lock, index,
//   extent} set to {~0ull, -1, 0, 0, 0}: a failed check of a lower global
//   thread (block * block_size + thread) than the recorded one replaces it,
//   so the caller keeps the lowest over its chunks, as on a GPU;
// - `cancel` is read (relaxed) before every block and in every while loop;
//   when it is non-zero the function returns 1 at once (the launch is
//   abandoned), else 0 after the last block.
#pragma once
#include <string>
#include <vector>

#include "codegen/c_printer.h"

namespace shoal::ir {

// Why the CPU printer cannot print `k` yet ("warp shuffles"), or "".
std::string cpu_unsupported_reason(const Kernel& k);

// The kernels as one C++ unit with the entry contract above (every kernel
// verified first; cpu_unsupported_reason must be empty for each).
// `checked`: every global load, store and atomic checks its index against
// the buffer's extent and stops the process with a message naming the
// kernel, the buffer, the index and the extent (native code has no bounds
// checks otherwise: a lowering bug would corrupt memory; SHOAL_NATIVE_CHECKED).
std::string print_cpu(const std::vector<Kernel>& kernels, bool checked = false);

// The entry point's symbol for a kernel named `kernel`.
std::string cpu_entry_symbol(const std::string& kernel);

}  // namespace shoal::ir
