// How a kernel expression's value varies over the threads of a block: the
// analysis that lets a CPU loop nest run a block's threads innermost and
// contiguous (codegen/cpu_printer.cpp), in the spirit of the interpreter's
// levels (runtime/cpu/compile.cpp) and of PoCL's "uniform" analysis.
//
//   Constant   a literal
//   Uniform    the same for every thread of a block: parameters, blockIdx,
//              blockDim, gridDim, BlockFor variables, and lets of uniform
//              values that are never reassigned
//   Affine     base + stride * threadIdx with a uniform base and a constant
//              stride (`blockIdx.x * blockDim.x + threadIdx.x`)
//   Varying    anything else (loads, reassigned variables, shuffles)
//
// Loads are Varying even at a uniform index: another thread may store to
// the same address within the phase.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "codegen/ir.h"

namespace shoal::ir {

enum class ThreadLevel : uint8_t { Constant, Uniform, Affine, Varying };

// e = base + stride * threadIdx, base uniform.
struct AffineForm {
    ExprPtr base;  // of e's type
    int64_t stride = 0;
};

class ThreadLevels {
public:
    explicit ThreadLevels(const Kernel& k);

    ThreadLevel level(const ExprPtr& e) const;
    bool uniform(const ExprPtr& e) const { return level(e) <= ThreadLevel::Uniform; }
    // e in affine form (a uniform e has stride 0), or nothing.
    std::optional<AffineForm> affine(const ExprPtr& e) const;
    // A uniform expression with every let variable replaced by its value, so
    // that it can be evaluated outside any thread's scope (only parameters,
    // block indices and BlockFor variables remain).
    ExprPtr inline_lets(const ExprPtr& e) const;
    // Whether a variable's level is known: a BlockFor variable, or one Let never
    // reassigned (every other variable is Varying).
    bool tracked(const std::string& var) const { return lets_.count(var) || block_vars_.count(var); }
    // The value of a tracked let variable, or null.
    ExprPtr let_value(const std::string& var) const;

private:
    std::map<std::string, ExprPtr> lets_;  // variables with one Let, never reassigned: their value
    std::set<std::string> block_vars_;     // BlockFor variables
    // Each expression's level and affine form, computed once: level and
    // affine ask each other about the operands, and a let's value is reached
    // from every use, which without these is exponential in an expression's
    // depth. Keyed by node; each entry holds its node, so that an address is
    // never reused by another expression while it is a key.
    ThreadLevel compute_level(const ExprPtr& e) const;
    std::optional<AffineForm> compute_affine(const ExprPtr& e) const;
    mutable std::unordered_map<const Expr*, std::pair<ExprPtr, ThreadLevel>> levels_;
    mutable std::unordered_map<const Expr*, std::pair<ExprPtr, std::optional<AffineForm>>> affine_forms_;
};

// Ctrl-C must be able to stop a kernel inside its long loops: a while loop,
// or a for loop whose bound or step depends on data (a bound read from
// memory); loops over a block's share of an array end soon enough. The CPU
// printer reads the cancel flag at such a loop's every trip, the CUDA printer
// at every 1024th (docs/cuda-backend.md, "Stopping a long kernel").
bool is_cancel_point(const Stmt& s, const ThreadLevels& levels);
// Whether a kernel has one: its CUDA form then takes the cancel flag as its
// last parameter (codegen/cuda_printer.cpp's launch contract).
bool has_cancel_points(const Kernel& k);
bool has_cancel_points(const Kernel& k, const ThreadLevels& levels);  // with the kernel's levels in hand

}  // namespace shoal::ir
