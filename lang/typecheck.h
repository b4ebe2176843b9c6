// Type inference: Hindley-Milner with let-polymorphism for top-level
// functions, numeric classes for literals, and a few deferred constraints for
// rank polymorphism and elementwise broadcasting (see docs/types.md).
//
// Only top-level bindings are generalised; local lets are monomorphic.
// At the end of a statement every remaining variable is defaulted:
// elementwise operands that are still unknown become scalars, unknown ranks
// become 1, numeric literals become int / float.
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ast.h"
#include "diagnostics.h"
#include "types.h"

namespace shoal {

// A constraint the unifier cannot express; solved as soon as its types are
// known enough, kept in a scheme when a generalised function leaves it open.
struct Constraint {
    enum class Kind : uint8_t {
        Lift,         // args/result are elems (scalars) or arrays of them with broadcasting
        ReduceInner,  // result = array with its innermost dimension removed (a scalar for rank 1)
        ShapeArg,     // a shape argument (int | (int, int) | (int, int, int)) for an array of rank r
        Generator,    // fn = int -> ... -> elem, one int per dimension of rank r
        IndexResult,  // result of indexing an array with n_indices plain indices among n_args
        Assign,       // `a with [...] = v`: v is the selected part or one element (broadcast)
        Matmul,       // {left, right, result} of `@`: NumPy's ranks (a vector is a row on the left, a column on the right)
        MaskOrIndex,  // {indexed array, result, index} of `xs[e]` with e's type open: a mask if an array, else an int
        BroadcastRank,  // {result rank, operand ranks...} of zipWith: the largest (NumPy's broadcasting)
        VmapParam,    // {xs, param} of `vmap f xs`: f takes one row of xs (an element of a vector)
        VmapResult,   // {f's result, vmap's result}: one more leading axis (a scalar becomes a vector)
    };
    Kind kind;
    std::vector<Type> types;  // layout per kind, see typecheck.cpp
    int n_indices = 0;        // IndexResult: how many plain indices
    int n_args = 0;           // IndexResult: how many index arguments in all
    Loc loc;                  // where it came from, for errors
    std::string what;         // the operation, for errors ("+", "sqrt", "generate")
    std::vector<Loc> arg_locs; // Lift from an operator: where each operand is (for suggestions)
};

// A generalised type: Gen(0..num_vars-1) are the quantified variables.
struct Scheme {
    // One Var per quantified variable, carrying its classes and flags;
    // instantiation copies them into fresh variables.
    std::vector<Type> vars;
    Type type;
    std::vector<Constraint> constraints;
    // A function whose calls draw random numbers or do file I/O (directly or
    // through other functions): a partial application of it is not
    // re-evaluated per instance (see check_let).
    bool effects = false;
    bool polymorphic() const { return !vars.empty(); }
};
using SchemePtr = std::shared_ptr<const Scheme>;

// Shows a scheme as the user sees it in :type and :env, e.g.
// "[float] -> [float] -> float" or "Num a => [a] -> [a]".
std::string scheme_to_string(const Scheme& s);
// Concrete instances of a polymorphic scheme a user could annotate it with
// (ranks 1, element types defaulted to int or float; for a function that is
// also elementwise over arrays, array instances), most natural first; a
// caller checks which one its use accepts.
std::vector<Type> example_instances(const Scheme& s);

// Reads the element type and rank of an array file named by a string literal
// (`load "x.npy"`), so that `let x = load "x.npy"` needs no annotation.
// Returns null when the path cannot be typed statically; throws Error for a
// missing or malformed file.
using LoadTyper = std::function<Type(const std::string& path, const Loc& loc)>;

struct TypeEnvironment {
    std::map<std::string, SchemePtr> globals;  // top-level bindings
    LoadTyper load_typer;
    // Ctrl-C: checked at every node, so a long check (a big pasted script,
    // types near their size cap) stops with ErrorKind::Interrupted.
    const std::atomic<bool>* cancel = nullptr;
};

// Checks an expression statement (or the argument of :type); fills every
// node's type and returns the expression's type, fully resolved.
Type check_expression(const ExprPtr& e, const TypeEnvironment& env);

// Checks the `let` statement `s`; fills node types and returns the names it
// binds with their schemes (generalised when the value is a function).
// A partial application (`let g = saxpy 2.0 x`) whose arguments have no
// effects is rewritten IN PLACE into the function it denotes
// (`\p -> saxpy 2.0 x p`), so that it is generalised like any function: its
// remaining parameters stay rank-polymorphic, as in `saxpy 2.0 x y`. The
// arguments are then evaluated per instance, which is why effects (random,
// file I/O) keep the binding a monomorphic value evaluated once.
std::vector<std::pair<std::string, SchemePtr>> check_let(const Stmt& s, const TypeEnvironment& env);

// The scheme `:type e` shows: generalised for a lambda, a section or a
// partial application, as check_let would bind it; else the expression's type.
SchemePtr check_expression_scheme(const ExprPtr& e, const TypeEnvironment& env);

// Type of every builtin (for :type, completion and docs).
const std::map<std::string, SchemePtr>& builtin_schemes();

}  // namespace shoal
