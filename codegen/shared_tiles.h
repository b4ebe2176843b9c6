// Automatic shared memory for overlapping reads (Barracuda §3.4.7; the
// DAMP'11 paper §5). A map whose element code reads one array at several
// constant offsets from the element's own index -- `x[1:] - x[:-1]`, a
// 15-point moving average written with shifted slices, the 2-D Jacobi update
// `g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:]` -- would load
// every element of that array once per offset. Instead each block loads its
// tile of the array plus the halo the offsets reach into shared memory once,
// coalesced, synchronises, and serves every such read from there.
//
// The analysis runs on the element code after fusion (the kernel IR a map's
// producers emitted), so reads that reach the kernel through fused
// producers and through functions count alike. A global load is a candidate
// when its index is affine in the element's index with unit stride along the
// innermost axis:
//   rank 1   x[i + c]
//   rank 2   x[(i + a) * S + (j + b)]   (S: the array's row length, any value)
// where c, a, b are fixed when the plan is built (slice starts are plan
// scalars whose values the lowering knows) and bake into the kernel as
// constants. The overlap rules (docs/optimisations.md has examples):
//   - one array read at two or more distinct offsets forms a group (the same
//     array twice, an array and a slice of it, two slices of it);
//   - the offsets of a group must span at most half the tile in every
//     dimension, so neighbouring reads overlap by at least half a block;
//   - offsets or strides not fixed at plan time (a symbolic argument during
//     :emit's trace), non-unit inner strides, and gathers stay global reads;
//   - element code with run-time checks (an index that may be out of bounds)
//     keeps its grid-stride kernel, whose error is the reference's.
// The constants make the kernel text -- and so the plan cache key -- say
// exactly which reads the tile serves: a plan found in the cache under that
// key was analysed to the same result.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_builder.h"
#include "codegen/launch_plan.h"

namespace shoal::ir {

struct LoweringOptions;

// A map's element code, built once with named index variables, before it is
// placed in a kernel: a grid-stride loop or a tiled kernel.
struct MapBody {
    std::string gid;                // the flat element index (I64 variable the body reads)
    std::vector<ExprPtr> index;     // the element's index, outermost first (Vars; rank 1: gid itself)
    std::vector<ExprPtr> shape;     // the map's shape (I64 expressions over params)
    ExprPtr count;                  // the number of elements
    std::vector<StmtPtr> body;      // computes the element and stores it
};

// Emits the map as a tiled kernel with shared memory for its overlapping
// reads and launches it; false, emitting nothing, when no array is read at
// overlapping offsets (or the options switch shared memory off).
bool lower_map_shared_tiles(PlanBuilder& pb, KernelBuilder& kb, const MapBody& map, const LoweringOptions& opt);

}  // namespace shoal::ir
