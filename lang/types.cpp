#include "types.h"

#include <cstdint>
#include <map>

#include "diagnostics.h"

namespace shoal {

const char* prim_name(Prim p) {
    switch (p) {
        case Prim::Bool: return "bool";
        case Prim::Int: return "int";
        case Prim::Long: return "long";
        case Prim::Float: return "float";
        case Prim::Double: return "double";
    }
    return "?";
}

size_t prim_size(Prim p) {
    switch (p) {
        case Prim::Bool: return 1;
        case Prim::Int: return 4;
        case Prim::Long: return 8;
        case Prim::Float: return 4;
        case Prim::Double: return 8;
    }
    return 0;
}

static Type make(TypeKind k) {
    auto t = std::make_shared<TypeNode>();
    t->kind = k;
    return t;
}

Type t_prim(Prim p) {
    // Shared instances: scalar types are immutable.
    static const Type cache[] = {
        [] { auto t = make(TypeKind::Prim); t->prim = Prim::Bool; return t; }(),
        [] { auto t = make(TypeKind::Prim); t->prim = Prim::Int; return t; }(),
        [] { auto t = make(TypeKind::Prim); t->prim = Prim::Long; return t; }(),
        [] { auto t = make(TypeKind::Prim); t->prim = Prim::Float; return t; }(),
        [] { auto t = make(TypeKind::Prim); t->prim = Prim::Double; return t; }(),
    };
    return cache[static_cast<int>(p)];
}

Type t_rank(int r) {
    auto t = make(TypeKind::Rank);
    t->rank = r;
    return t;
}

Type t_array(Type rank, Type elem) {
    Type e = prune(elem);
    if (e->kind == TypeKind::Tuple) {
        // [(a, b)] is ([a], [b]): arrays of tuples are stored as tuples of arrays.
        std::vector<Type> parts;
        for (const auto& x : e->args) parts.push_back(t_array(rank, x));
        return t_tuple(std::move(parts));
    }
    auto t = make(TypeKind::Array);
    t->args = {std::move(rank), std::move(elem)};
    return t;
}

Type t_array(int rank, Type elem) { return t_array(t_rank(rank), std::move(elem)); }

Type t_tuple(std::vector<Type> elems) {
    auto t = make(TypeKind::Tuple);
    t->args = std::move(elems);
    return t;
}

Type t_func(Type param, Type result) {
    auto t = make(TypeKind::Func);
    t->args = {std::move(param), std::move(result)};
    return t;
}

Type t_func(std::vector<Type> params, Type result) {
    for (auto it = params.rbegin(); it != params.rend(); ++it) result = t_func(*it, result);
    return result;
}

Type t_string() {
    static const Type t = make(TypeKind::String);
    return t;
}

Type t_unit() {
    static const Type t = make(TypeKind::Unit);
    return t;
}

Type t_gen(int index, bool is_rank) {
    auto t = make(TypeKind::Gen);
    t->id = index;
    t->is_rank = is_rank;
    return t;
}

Type t_var(int id, unsigned classes) {
    auto t = make(TypeKind::Var);
    t->id = id;
    t->classes = classes;
    return t;
}

const Type& prune(const Type& t) {
    // Most types are not bound variables: no reference counts change.
    if (!t || t->kind != TypeKind::Var || !t->bound) return t;
    const Type* rep = &t->bound;
    while ((*rep)->kind == TypeKind::Var && (*rep)->bound) rep = &(*rep)->bound;
    // Full path compression: a 40000-element array literal binds a chain of
    // 40000 variables, which must not be walked again and again. Each
    // variable of the chain is then bound to the representative directly.
    if (rep != &t->bound) {
        const Type target = *rep;
        Type held;  // the variable being rebound, alive until it is
        for (TypeNode* v = t.get(); v != target.get() && v->kind == TypeKind::Var && v->bound;) {
            Type next = std::move(v->bound);
            v->bound = target;
            held = std::move(next);
            v = held.get();
        }
    }
    return t->bound;
}

bool is_prim(const Type& t) { return prune(t)->kind == TypeKind::Prim; }
bool is_array(const Type& t) { return prune(t)->kind == TypeKind::Array; }
bool is_tuple(const Type& t) { return prune(t)->kind == TypeKind::Tuple; }
bool is_func(const Type& t) { return prune(t)->kind == TypeKind::Func; }

Prim prim_of(const Type& t) {
    Type p = prune(t);
    if (p->kind == TypeKind::Array) p = prune(p->args[1]);
    SHOAL_INTERNAL_ASSERT(p->kind == TypeKind::Prim, "prim_of: not a scalar type: " + type_to_string(t));
    return p->prim;
}

bool mentions_array(const Type& t) {
    const Type p = prune(t);
    if (is_array(p)) return true;
    if (!is_tuple(p)) return false;
    for (const Type& k : p->args)
        if (mentions_array(k)) return true;
    return false;
}

bool mentions_function(const Type& t) {
    const Type p = prune(t);
    if (p->kind == TypeKind::Func) return true;
    if (!is_tuple(p)) return false;
    for (const Type& k : p->args)
        if (mentions_function(k)) return true;
    return false;
}

int array_rank(const Type& t) {
    Type p = prune(t);
    if (p->kind != TypeKind::Array) return 0;
    Type r = prune(p->args[0]);
    SHOAL_INTERNAL_ASSERT(r->kind == TypeKind::Rank, "array_rank: unresolved rank in " + type_to_string(t));
    return r->rank;
}

Type array_elem(const Type& t) {
    Type p = prune(t);
    SHOAL_INTERNAL_ASSERT(p->kind == TypeKind::Array, "array_elem: not an array");
    return prune(p->args[1]);
}

const std::vector<Type>& tuple_elems(const Type& t) {
    Type p = prune(t);
    SHOAL_INTERNAL_ASSERT(p->kind == TypeKind::Tuple, "tuple_elems: not a tuple");
    return p->args;
}

Type func_param(const Type& t) {
    Type p = prune(t);
    SHOAL_INTERNAL_ASSERT(p->kind == TypeKind::Func, "func_param: not a function");
    return p->args[0];
}

Type func_result(const Type& t) {
    Type p = prune(t);
    SHOAL_INTERNAL_ASSERT(p->kind == TypeKind::Func, "func_result: not a function");
    return p->args[1];
}

bool is_concrete(const Type& t) {
    Type p = prune(t);
    if (p->kind == TypeKind::Var || p->kind == TypeKind::Gen) return false;
    for (const auto& a : p->args)
        if (!is_concrete(a)) return false;
    return true;
}

Type substitute_gen(const Type& t, const std::vector<Type>& args) {
    Type p = prune(t);
    switch (p->kind) {
        case TypeKind::Gen:
            SHOAL_INTERNAL_ASSERT(p->id >= 0 && p->id < static_cast<int>(args.size()), "substitute_gen: index");
            return args[p->id];
        case TypeKind::Array: return t_array(substitute_gen(p->args[0], args), substitute_gen(p->args[1], args));
        case TypeKind::Tuple: {
            std::vector<Type> e;
            for (const auto& a : p->args) e.push_back(substitute_gen(a, args));
            return t_tuple(std::move(e));
        }
        case TypeKind::Func: return t_func(substitute_gen(p->args[0], args), substitute_gen(p->args[1], args));
        default: return p;
    }
}

bool same_type(const Type& a, const Type& b) {
    Type x = prune(a), y = prune(b);
    if (x == y) return true;
    if (x->kind != y->kind) return false;
    switch (x->kind) {
        case TypeKind::Prim: return x->prim == y->prim;
        case TypeKind::Rank: return x->rank == y->rank;
        case TypeKind::Var:
        case TypeKind::Gen: return x->id == y->id && x->name == y->name;
        case TypeKind::String:
        case TypeKind::Unit: return true;
        default:
            if (x->args.size() != y->args.size()) return false;
            for (size_t i = 0; i < x->args.size(); ++i)
                if (!same_type(x->args[i], y->args[i])) return false;
            return true;
    }
}

namespace {

// Names type variables a, b, c, ... and rank variables r, s, t, ... in order
// of first appearance. A Gen is named by its index (every mention of Gen(i)
// is the same variable), a Var by its identity.
struct TypePrinter {
    std::map<std::string, std::string> names;
    int types = 0, ranks = 0;

    static std::string key_of(const TypeNode* v) {
        return v->kind == TypeKind::Gen ? "g" + std::to_string(v->id) : "v" + std::to_string(reinterpret_cast<uintptr_t>(v));
    }

    std::string name_of(const TypeNode* v, bool is_rank) {
        std::string key = key_of(v);
        auto it = names.find(key);
        if (it != names.end()) return it->second;
        if (!v->name.empty()) return names[key] = v->name;
        int n = is_rank ? ranks++ : types++;
        const char* alphabet = is_rank ? "rstuvw" : "abcdefghijklmnopq";
        int size = is_rank ? 6 : 17;
        std::string s(1, alphabet[n % size]);
        if (n >= size) s += std::to_string(n / size);
        return names[key] = s;
    }

    std::string print(const Type& t, bool in_func_param = false) {
        Type p = prune(t);
        switch (p->kind) {
            case TypeKind::Prim: return prim_name(p->prim);
            case TypeKind::Rank: return std::to_string(p->rank);
            case TypeKind::Var:
            case TypeKind::Gen: return name_of(p.get(), p->is_rank);
            case TypeKind::String: return "string";
            case TypeKind::Unit: return "()";
            case TypeKind::Array: {
                Type r = prune(p->args[0]);
                std::string elem = print(p->args[1]);
                // An array of unknown rank prints as rank 1, the rank it defaults to.
                if (r->kind != TypeKind::Rank) return "[" + elem + "]";
                std::string s = elem;
                for (int i = 0; i < r->rank; ++i) s = "[" + s + "]";
                return s;
            }
            case TypeKind::Tuple: {
                std::string s = "(";
                for (size_t i = 0; i < p->args.size(); ++i) s += (i ? ", " : "") + print(p->args[i]);
                return s + ")";
            }
            case TypeKind::Func: {
                // Parameter first: printing names variables as it meets them
                // (in one expression the order would be the compiler's).
                const std::string from = print(p->args[0], true);
                std::string s = from + " -> " + print(p->args[1]);
                return in_func_param ? "(" + s + ")" : s;
            }
        }
        return "?";
    }
};

}  // namespace

std::string type_to_string(const Type& t) {
    TypePrinter p;
    return p.print(t);
}

std::vector<std::string> types_to_strings(const std::vector<Type>& ts) {
    TypePrinter p;
    std::vector<std::string> out;
    for (const auto& t : ts) out.push_back(p.print(t));
    return out;
}

}  // namespace shoal
