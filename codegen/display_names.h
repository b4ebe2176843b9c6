// Launch plans as a user reads them (`:cuda`, `:ir`, and the names `:emit`
// will print). The plan cache keeps plans with canonical names (buffers in0,
// extents n1, lifted constants c2, the forcing kernel `map`) so that one
// structure is one plan however the data is called; for display, a copy is
// renamed after the user's bindings and function, and every kernel gets the
// source expression it came from as its comment. Names stay valid, unique
// C++ identifiers: a wanted name that is reserved or already used in the
// plan gets a numbered suffix (`out` -> `out_1`).
#pragma once
#include <map>
#include <string>

#include "codegen/launch_plan.h"

namespace shoal::ir {

struct DisplayNames {
    // The function or statement the plan computes ("saxpy", "rmse"): the
    // forcing kernel `map` takes this name, every other kernel K becomes
    // <function>_K (rmse_sum). Empty: kernel names stay.
    std::string function;
    // Canonical plan name -> the user's name ("in0" -> "x", "n1" -> "len_x").
    std::map<std::string, std::string> wanted;
    // The source expression and its location ("sum x  (<stdin>:1:1)").
    std::string source;
};

LaunchPlan for_display(const LaunchPlan& plan, const DisplayNames& names);

// The name of an array's extent along `axis`: len_x for a vector, len_x0,
// len_x1 for a matrix (`:cuda` shows these; `:emit`'s wrappers declare them).
std::string extent_name(const std::string& array, size_t rank, size_t axis);

}  // namespace shoal::ir
