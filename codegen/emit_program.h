// `:emit`: Shoal functions -> CUDA kernels with C++ wrappers (docs/emit.md).
//
// Each function is traced (emit_trace.h) into a TracedFunction: its
// parameters, the equalities its extents must satisfy, the plans it runs in
// order with every input scalar as a formula over the wrapper's variables,
// the values it reads back on the host and its results. emit_printer.cpp
// prints the unit: NAME.h (declarations), NAME.cu (kernels, shared between
// functions, and one wrapper per function walking its plans' host programs
// on the caller's stream) and shoal_runtime.h (share/emit/).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/emit_trace.h"
#include "lang/session.h"

namespace shoal::compiled {
class FusionEngine;
}

namespace shoal::emit {

struct EmitParam {
    std::string name;
    Prim elem = Prim::Float;
    int rank = 0;                      // 0: a scalar
    std::vector<std::string> extents;  // len_x, or len_x0, len_x1, ...
};

// len_y == len_x: the trace needed equal extents (a zipWith of both).
struct EmitConstraint {
    std::string extent;   // the parameter's extent variable
    ir::ExprPtr equals;   // a formula over other extents
    std::string where;    // the operation that needs it ("shape mismatch in -")
};

struct EmitResult {
    std::string name;  // result, or result0, result1, ... for a tuple
    Prim elem = Prim::Float;
    int rank = 0;  // 0: a scalar, written to *name on the host
    ir::ExprPtr value;                    // a scalar's formula
    std::vector<ir::ExprPtr> extents;     // an array's extents (formulas)
    // An array is a plan's Output buffer (written in place), or a copy of a
    // parameter or of an earlier result.
    int plan = -1;
    std::string buffer;
    std::string copy_of;  // a parameter's or earlier result's name
    // Its size depends on the data (a filter): the wrapper allocates it
    // (shoal::device_array) once it has read the size back.
    bool owned = false;
};

struct TracedFunction {
    EmitFunction request;
    std::vector<EmitParam> params;
    std::vector<EmitConstraint> constraints;
    std::vector<RecordedPlan> plans;
    std::vector<HostRead> host_reads;
    std::vector<EmitResult> results;
    bool checks = false;  // some kernel checks indices: the wrapper waits at its end for the status
};

// What an `:emit` request produces: its files, and the kernels its source
// defines in NAME::kernels (the IR they were printed from, under their
// printed names: what the simulated CUDA runtime runs for them).
struct EmittedUnit {
    std::vector<EmittedFile> files;
    std::vector<ir::Kernel> kernels;
};

// The unit of an `:emit` request (deterministic: traced twice with
// different probes, the texts must agree). Throws Error for a function that
// cannot be emitted, naming why.
EmittedUnit emit_unit(compiled::FusionEngine& session, const EmitRequest& request);

// Printing (emit_printer.cpp): the unit's header and source.
struct EmitTexts {
    std::string header;
    std::string source;
    std::vector<ir::Kernel> kernels;
};
EmitTexts print_unit(const EmitRequest& request, const std::vector<TracedFunction>& functions);

// `e` with every Param named in `values` replaced by its value (cast to the
// Param's type): plan scalars by their formulas, wrapper variables by C++ names.
ir::ExprPtr substitute_params(const ir::ExprPtr& e, const std::map<std::string, ir::ExprPtr>& values);

// Whether a formula reads a variable defined by a read-back (its value is
// known only once the device has computed it).
bool reads_back(const ir::ExprPtr& e, const std::set<std::string>& read_vars);

// The formulas of every scalar of a recorded plan, in wrapper terms: inputs
// as recorded, read-backs as their variables, derived ones substituted.
std::map<std::string, ir::ExprPtr> plan_formulas(const RecordedPlan& r);

// The suffix of each wrapper's workspace query: rmse_workspace_bytes.
inline constexpr const char* kWorkspaceQuery = "_workspace_bytes";

// shoal_runtime.h, as shipped in share/emit/ (embedded at build time).
const std::string& runtime_header();

// C++ keywords and names the emitted code uses itself: a function, unit or
// parameter named so is refused.
bool is_reserved_cpp_name(const std::string& name);

}  // namespace shoal::emit
