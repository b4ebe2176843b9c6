// Shoal's static types, shared by the type checker (which creates and unifies
// them) and every later stage (which only reads fully resolved types).
//
//   scalar   bool int long float double
//   array    [e] [[e]] [[[e]]]      rank 1..3, element e a scalar
//   tuple    (t1, t2, ...)
//   function a -> b
//   string   only as the argument of I/O builtins
//   unit     ()  the result of save
//
// Arrays of tuples are tuples of arrays: [(a, b)] is the same type as
// ([a], [b]) (structure of arrays, as Accelerate stores them). t_array()
// normalises, so no resolved type ever has a tuple as an array element.
//
// During inference a type may contain variables (Var) that are bound in place
// by unification; prune() follows bindings. Type schemes of let-bound functions
// replace their quantified variables by Gen(i).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace shoal {

enum class Prim : uint8_t { Bool, Int, Long, Float, Double };

const char* prim_name(Prim p);  // "bool", "int", ...
size_t prim_size(Prim p);       // bytes of one element in memory (bool: 1)
inline bool is_floating(Prim p) { return p == Prim::Float || p == Prim::Double; }
inline bool is_integral(Prim p) { return p == Prim::Int || p == Prim::Long; }
inline bool is_numeric(Prim p) { return p != Prim::Bool; }

enum class TypeKind : uint8_t { Var, Gen, Prim, Rank, Array, Tuple, Func, String, Unit };

// Class constraints carried by a type variable (a bit set).
enum TypeClass : unsigned {
    ClassNum = 1u << 0,       // int long float double
    ClassIntegral = 1u << 1,  // int long
    ClassFloating = 1u << 2,  // float double
    ClassOrd = 1u << 3,       // numbers (ordered)
    ClassEq = 1u << 4,        // numbers and bool
    ClassNumOrBool = 1u << 5, // numbers and bool (conversions accept bool)
    ClassNoDefault = 1u << 6, // must be inferred, never defaulted (element type of `load p`)
};

struct TypeNode;
using Type = std::shared_ptr<TypeNode>;

struct TypeNode {
    TypeKind kind;
    Prim prim = Prim::Int;   // Prim
    int rank = 0;            // Rank: 1..3
    int id = 0;              // Var, Gen: identity (Gen: index into the scheme's variables)
    unsigned classes = 0;    // Var: TypeClass bits
    bool scalar_only = false;  // Var: may only become a scalar (an element of an elementwise op)
    bool is_rank = false;      // Var: stands for a rank, not a type
    bool literal = false;      // Var: type of a numeric literal (defaults to int / float)
    Type bound;              // Var: what unification bound it to (null while free)
    std::string name;        // Var with id -1: a type variable named in an annotation (`a`)
    std::vector<Type> args;  // Array: {rank, elem}; Tuple: elements; Func: {param, result}
};

// Constructors. t_array normalises arrays of tuples into tuples of arrays.
Type t_prim(Prim p);
Type t_rank(int r);
Type t_array(Type rank, Type elem);
Type t_array(int rank, Type elem);
Type t_tuple(std::vector<Type> elems);
Type t_func(Type param, Type result);
Type t_func(std::vector<Type> params, Type result);  // curried a -> b -> ... -> result
Type t_string();
Type t_unit();
Type t_gen(int index, bool is_rank = false);
Type t_var(int id, unsigned classes = 0);

// Follows variable bindings to the representative type (never null for
// non-null input). The reference is `t` itself or the binding inside it:
// copy it before unifying anything it could be bound to.
const Type& prune(const Type& t);

// Readers for resolved types (they prune first).
bool is_prim(const Type& t);
bool is_array(const Type& t);
bool is_tuple(const Type& t);
bool mentions_array(const Type& t);  // an array, or a tuple holding one
bool mentions_function(const Type& t);  // a function, or a tuple holding one
bool is_func(const Type& t);
Prim prim_of(const Type& t);       // a scalar type, or an array's element type
int array_rank(const Type& t);     // 0 for non-arrays
Type array_elem(const Type& t);
const std::vector<Type>& tuple_elems(const Type& t);
Type func_param(const Type& t);
Type func_result(const Type& t);

// True when t contains no free variables (Gen counts as not concrete).
bool is_concrete(const Type& t);

// Replaces Gen(i) by args[i] everywhere (re-normalising arrays of tuples).
Type substitute_gen(const Type& t, const std::vector<Type>& args);

// Structural equality of resolved types.
bool same_type(const Type& a, const Type& b);

// Prints a type as the user writes it: "[float] -> [float] -> float".
// Free variables print as a, b, c ... consistently within one call.
std::string type_to_string(const Type& t);
// Several types printed with one consistent naming of variables.
std::vector<std::string> types_to_strings(const std::vector<Type>& ts);

}  // namespace shoal
