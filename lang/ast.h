// The abstract syntax of Shoal, produced by the parser and annotated by the
// type checker (every Expr's `type` is filled in; after type checking a
// top-level statement it is fully resolved, except inside generalised
// functions where it may contain Gen(i) variables).
//
// Sugar the parser removes:  `x |> f` is App(f, x); `let f a b = e` binds a
// Lambda; a section `(+ 1)` is a Lambda; a negative literal stays a Unary.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "source.h"
#include "types.h"

namespace shoal {

// ---------------------------------------------------------------- patterns
enum class PatternKind : uint8_t { Var, Tuple, Wildcard };

struct Pattern;
using PatternPtr = std::shared_ptr<Pattern>;

// A binding pattern: x, (a, b), _ ; each may carry a type annotation.
struct Pattern {
    PatternKind kind;
    Loc loc;
    std::string name;                 // Var
    std::vector<PatternPtr> elems;    // Tuple
    Type annotation;                  // optional, from `(x : [float])`
    Type type;                        // filled by the type checker
};

// ---------------------------------------------------------------- expressions
enum class ExprKind : uint8_t {
    IntLit,    // 42            (value; type: any numeric, default int)
    FloatLit,  // 3.14, 1e-3    (value; type: float or double, default float)
    BoolLit,   // true, false
    StringLit, // "a.npy"
    Var,       // x, sum, +     (operators as values are Vars named by the operator)
    Lambda,    // \x (a, b) -> body
    App,       // f x           (curried: one argument per node)
    Let,       // let p = value in body
    If,        // if c then a else b
    Tuple,     // (a, b, c)
    ArrayLit,  // [a, b, c]
    Binary,    // a + b         (op names the operator; same meaning as App(App(Var op, a), b))
    Unary,     // -x, !b, ~n    (op is "negate", "!" or "~")
    Index,     // a[i, 1:n:2]
    With,      // a with [i, j:k] = v
    LoopFor,   // loop p = init for i < count do body
    LoopWhile, // loop p = init while cond do body
    Annot,     // (e : t)
};

struct Expr;
using ExprPtr = std::shared_ptr<Expr>;

// One component of an index list: a plain index, or a slice lo:hi:step whose
// parts are each optional (Python semantics).
struct IndexArg {
    bool is_slice = false;
    ExprPtr index;               // !is_slice
    ExprPtr lo, hi, step;        // is_slice; null when omitted
    Loc loc;
};

struct Expr {
    ExprKind kind;
    Loc loc;
    Type type;  // filled by the type checker

    // Literals
    int64_t int_value = 0;     // IntLit (magnitude as written; range checked against the type)
    double float_value = 0;    // FloatLit
    float float_value32 = 0;   // FloatLit: the text read as a float (rounded once, as C reads a literal)
    bool bool_value = false;   // BoolLit
    std::string text;          // literal as written / StringLit contents / Var name / operator name

    // Var: set by the type checker when the variable names a generalised
    // (polymorphic) top-level binding: the types its scheme was instantiated at.
    std::vector<Type> instance;

    std::vector<PatternPtr> params;  // Lambda parameters
    PatternPtr pattern;              // Let, LoopFor, LoopWhile: the bound pattern
    std::string counter;             // LoopFor: the counter name (`i`)
    Loc counter_loc;
    std::vector<ExprPtr> kids;       // children, see below
    std::vector<IndexArg> indices;   // Index, With

    // kids layout by kind:
    //   Lambda   {body}
    //   App      {fn, arg}
    //   Let      {value, body}
    //   If       {cond, then, else}
    //   Tuple    elements;  ArrayLit elements
    //   Binary   {lhs, rhs}; Unary {operand}
    //   Index    {array};   With {array, value}
    //   LoopFor  {init, count, body};  LoopWhile {init, cond, body}
    //   Annot    {expr}  (the annotation is in `annotation`)
    Type annotation;  // Annot; Lambda: optional declared result type

    // Binary, Unary: the builtin the operator names, looked up on its first
    // evaluation (lang/eval.cpp; an evalimpl::BuiltinDef, opaque here).
    mutable const void* operator_builtin = nullptr;
    // Var with an instance: the instance's text, the key of the binding's
    // specialisation (made on the first evaluation; a loop calls it each step).
    mutable std::string instance_key;
};

// A decimal literal as a float: the text read as a float, so that it is
// rounded once (as the literal written in C would be). It is infinite when
// the literal does not fit in a float (1e39), which is an error.
float float_literal_value32(const Expr& e);

ExprPtr make_expr(ExprKind kind, Loc loc);
PatternPtr make_pattern(PatternKind kind, Loc loc);

// A deep copy (types and instances are copied by reference; the caller
// replaces them when specialising).
ExprPtr clone_expr(const ExprPtr& e);
PatternPtr clone_pattern(const PatternPtr& p);

// ---------------------------------------------------------------- statements
enum class StmtKind : uint8_t { Let, Expr, Command };

struct Stmt {
    StmtKind kind;
    Loc loc;
    PatternPtr pattern;     // Let: `x`, `(a, b)`; a function definition binds a Var pattern to a Lambda
    ExprPtr expr;           // Let: the value; Expr: the expression
    std::string command;    // Command: name without the colon ("type", "load", ...)
    std::string argument;   // Command: the rest of the statement, trimmed
    Loc argument_loc;       // Command: where the argument starts (for `:type e` errors)
};
using StmtPtr = std::shared_ptr<Stmt>;

// Calls `visit` with every free variable of `e` (a Var no enclosing lambda,
// let or loop binds); `locals` holds the names bound around `e`.
void for_each_free_variable(Expr& e, std::vector<std::string>& locals, const std::function<void(Expr&)>& visit);

}  // namespace shoal
