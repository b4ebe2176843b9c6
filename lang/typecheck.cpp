// Type inference for Shoal. See typecheck.h for the overall scheme.
//
// Structure: a Checker walks one statement, creating fresh variables and
// unifying; constraints that need more information (rank polymorphism,
// elementwise broadcasting) wait in `pending` and are retried after every
// application. At the end of a statement the remaining ones are defaulted
// (expression statements, value lets) or kept in the scheme (functions).
#include "typecheck.h"

#include "builtins.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace shoal {

namespace {

// Thrown by the structural unifier; converted into a user Error with context
// by whoever asked for the unification.
struct Mismatch {
    std::string detail;  // optional extra explanation ("no type is both integral and floating")
};

std::string class_description(unsigned classes) {
    if (classes & ClassFloating) return "a floating-point number";
    if (classes & ClassIntegral) return "an integer";
    if (classes & (ClassNum | ClassOrd)) return "a number";
    if (classes & (ClassEq | ClassNumOrBool)) return "a number or bool";
    return "a value";
}

bool prim_satisfies(Prim p, unsigned classes) {
    if ((classes & ClassFloating) && !is_floating(p)) return false;
    if ((classes & ClassIntegral) && !is_integral(p)) return false;
    if ((classes & (ClassNum | ClassOrd)) && !is_numeric(p)) return false;
    return true;
}

// Describes a (pruned) type for messages, in types a user can write: a
// literal whose type is still open says which types it could be ("float or
// double"), an array of them shows its rank in brackets ("[[float]] or
// [[double]]").
std::string describe(const Type& t) {
    Type p = prune(t);
    if (p->kind == TypeKind::Var && p->literal)
        return (p->classes & ClassFloating) ? "float or double (a decimal literal)"
                                            : "int, long, float or double (an integer literal)";
    if (p->kind == TypeKind::Var && p->classes) return class_description(p->classes);
    if (p->kind == TypeKind::Array) {
        Type e = prune(p->args[1]);
        Type r = prune(p->args[0]);
        const int rank = r->kind == TypeKind::Rank ? r->rank : 1;
        auto array_of = [rank](const std::string& elem) {
            return std::string(static_cast<size_t>(rank), '[') + elem + std::string(static_cast<size_t>(rank), ']');
        };
        if (e->kind == TypeKind::Var && (e->classes & ClassFloating))
            return array_of("float") + " or " + array_of("double");
        if (e->kind == TypeKind::Var && e->literal) return array_of("int");  // what an integer literal defaults to
        if (e->kind == TypeKind::Var && e->classes) {
            std::string one = class_description(e->classes);  // "a number", ...
            // The rank when it is known: `fwd [[1, 4], [9, 16]]` is wrong for its rank.
            const std::string what = r->kind != TypeKind::Rank ? "an array"
                                     : rank == 1                ? "a vector"
                                                                : "a " + std::to_string(rank) + "-d array";
            return what + " of " + one.substr(one.find(' ') + 1) + "s";
        }
    }
    return type_to_string(p);
}

std::string source_text(const Loc& loc);

// `int n`, or `int (a + b)` when the converted text is not a single word.
std::string conversion_text(const char* fn, const Loc& loc) {
    std::string text = source_text(loc);
    bool word = !text.empty() && text.find_first_of(" +-*/%()<>=!&|^~:,") == std::string::npos;
    return std::string(fn) + " " + (word ? text : "(" + text + ")");
}

// Where an array of one numeric element type is given for another (or for
// a literal's still open one): the elementwise conversion that fixes it.
std::string array_conversion_note(const Type& wanted, const Type& given, const Loc& given_loc) {
    Type w = prune(wanted), g = prune(given);
    if (w->kind != TypeKind::Array || g->kind != TypeKind::Array) return "";
    Type we = prune(w->args[1]), ge = prune(g->args[1]);
    if (ge->kind != TypeKind::Prim || !is_numeric(ge->prim)) return "";
    Prim target;
    if (we->kind == TypeKind::Prim && is_numeric(we->prim)) target = we->prim;
    else if (we->kind == TypeKind::Var && (we->classes & ClassFloating)) target = Prim::Float;
    else return "";
    if (target == ge->prim) return "";
    const char* fn = prim_name(target);
    return "Shoal does not convert implicitly; write `" + conversion_text(fn, given_loc) + "` (" + fn +
           " converts every element)";
}

std::string source_text(const Loc& loc) {
    if (!loc.valid()) return "";
    std::string_view line = loc.source->line(loc.line);
    if (loc.col - 1 >= static_cast<int>(line.size())) return "";
    return std::string(line.substr(loc.col - 1, loc.length));
}

// Types are DAGs (instantiation shares subterms): visit each node once, or
// `f f f ... f` would take exponential time.
bool occurs_in(const TypeNode* v, const Type& t, std::set<const TypeNode*>& seen) {
    Type p = prune(t);
    if (p.get() == v) return true;
    if (!seen.insert(p.get()).second) return false;
    for (const auto& a : p->args)
        if (occurs_in(v, a, seen)) return true;
    return false;
}

bool occurs(const TypeNode* v, const Type& t) {
    std::set<const TypeNode*> seen;
    return occurs_in(v, t, seen);
}

class Checker {
public:
    explicit Checker(const TypeEnvironment& env) : env_(env) {}

    // ------------------------------------------------------------ variables
    Type fresh(unsigned classes = 0) { return t_var(next_id_++, classes); }
    Type fresh_scalar(unsigned classes = 0) {
        Type v = fresh(classes);
        v->scalar_only = true;
        return v;
    }
    Type fresh_rank() {
        Type v = fresh();
        v->is_rank = true;
        return v;
    }
    Type fresh_array(Type elem) { return t_array(fresh_rank(), std::move(elem)); }

    // ------------------------------------------------------------ unification
    void unify(const Type& a, const Type& b) {
        Type x = prune(a), y = prune(b);
        if (x == y) return;
        if (x->kind == TypeKind::Var) return bind(x, y);
        if (y->kind == TypeKind::Var) return bind(y, x);
        if (x->kind == TypeKind::Array && y->kind == TypeKind::Tuple) return unify_array_tuple(x, y);
        if (y->kind == TypeKind::Array && x->kind == TypeKind::Tuple) return unify_array_tuple(y, x);
        if (x->kind == TypeKind::Array && y->kind == TypeKind::Array) {
            Type ex = prune(x->args[1]), ey = prune(y->args[1]);
            // An array whose element became a tuple is a tuple of arrays.
            if (ex->kind == TypeKind::Tuple && ey->kind != TypeKind::Tuple) return unify(expand(x), y);
            if (ey->kind == TypeKind::Tuple && ex->kind != TypeKind::Tuple) return unify(x, expand(y));
        }
        if (x->kind != y->kind) throw Mismatch{};
        switch (x->kind) {
            case TypeKind::Prim:
                if (x->prim != y->prim) throw Mismatch{};
                return;
            case TypeKind::Rank:
                if (x->rank != y->rank) throw Mismatch{};
                return;
            case TypeKind::String:
            case TypeKind::Unit: return;
            case TypeKind::Gen: throw Mismatch{};
            default:
                if (x->args.size() != y->args.size()) throw Mismatch{};
                for (size_t i = 0; i < x->args.size(); ++i) unify(x->args[i], y->args[i]);
        }
    }

    // [e] with e bound to a tuple -> tuple of arrays.
    static Type expand(const Type& arr) { return t_array(arr->args[0], arr->args[1]); }

    void unify_array_tuple(const Type& arr, const Type& tup) {
        Type elem = prune(arr->args[1]);
        if (elem->kind == TypeKind::Tuple) return unify(expand(arr), tup);
        if (elem->kind != TypeKind::Var || elem->scalar_only || elem->classes || tup->args.empty()) throw Mismatch{};
        if (occurs(elem.get(), tup)) throw Mismatch{"the type would be infinite"};
        std::vector<Type> parts;
        for (size_t i = 0; i < tup->args.size(); ++i) parts.push_back(fresh());
        bind(elem, t_tuple(parts));
        for (size_t i = 0; i < parts.size(); ++i) unify(t_array(arr->args[0], parts[i]), tup->args[i]);
    }

    void bind(const Type& v, const Type& t) {
        if (t->kind == TypeKind::Var) {
            if (v->is_rank != t->is_rank) throw Mismatch{};
            unsigned merged = v->classes | t->classes;
            if ((merged & ClassFloating) && (merged & ClassIntegral))
                throw Mismatch{"no type is both an integer and a floating-point number"};
            t->classes = merged;
            t->scalar_only = t->scalar_only || v->scalar_only;
            t->literal = t->literal || v->literal;
            v->bound = t;
            return;
        }
        if (v->is_rank != (t->kind == TypeKind::Rank)) throw Mismatch{};
        if (occurs(v.get(), t)) throw Mismatch{"the type would be infinite"};
        if (t->kind == TypeKind::Prim) {
            if (!prim_satisfies(t->prim, v->classes)) throw Mismatch{};
        } else if ((v->classes & ~ClassNoDefault) || v->scalar_only) {
            throw Mismatch{};
        }
        v->bound = t;
    }

    // Unifies and reports a mismatch as a type error at `loc`.
    void expect(const Type& actual, const Type& expected, const Loc& loc, const std::string& what) {
        try {
            unify(actual, expected);
        } catch (const Mismatch& m) {
            std::vector<std::string> notes;
            if (!m.detail.empty()) notes.push_back(m.detail);
            user_error(ErrorKind::Type, loc,
                       what + ": expected " + describe(expected) + ", found " + describe(actual), notes);
        }
    }

    // ------------------------------------------------------------ schemes
    Type instantiate(const Scheme& s, const Loc& loc, const std::string& name, std::vector<Type>* instance) {
        std::vector<Type> args;
        for (const auto& tmpl : s.vars) {
            Type v = fresh(tmpl->classes);
            v->scalar_only = tmpl->scalar_only;
            v->is_rank = tmpl->is_rank;
            v->literal = tmpl->literal;
            args.push_back(v);
        }
        for (const auto& c : s.constraints) {
            Constraint copy = c;
            for (auto& t : copy.types) t = substitute_gen(t, args);
            copy.loc = loc;
            if (copy.what.empty()) copy.what = name;
            pending_.push_back(std::move(copy));
        }
        if (instance) *instance = args;
        return substitute_gen(s.type, args);
    }

    // ------------------------------------------------------------ scopes
    void push_local(const std::string& name, const Type& t) { locals_.emplace_back(name, t); }
    const Type* find_local(const std::string& name) const {
        for (auto it = locals_.rbegin(); it != locals_.rend(); ++it)
            if (it->first == name) return &it->second;
        return nullptr;
    }
    bool is_global_builtin(const std::string& name) const {
        return !find_local(name) && !env_.globals.count(name) && builtin_schemes().count(name);
    }

    // Named type variables in annotations (`a`) mean the same variable
    // throughout one statement.
    Type resolve_annotation(const Type& t) {
        Type p = prune(t);
        if (p->kind == TypeKind::Var && p->id == -1) {
            auto it = annotation_vars_.find(p->name);
            if (it != annotation_vars_.end()) return it->second;
            return annotation_vars_[p->name] = fresh();
        }
        if (p->kind == TypeKind::Array) return t_array(p->args[0], resolve_annotation(p->args[1]));
        if (p->kind == TypeKind::Tuple) {
            std::vector<Type> e;
            for (const auto& a : p->args) e.push_back(resolve_annotation(a));
            return t_tuple(e);
        }
        if (p->kind == TypeKind::Func) return t_func(resolve_annotation(p->args[0]), resolve_annotation(p->args[1]));
        return p;
    }

    // ------------------------------------------------------------ patterns
    // Binds the names of `p` (pushed as locals) to the parts of `t`.
    void bind_pattern(const PatternPtr& p, const Type& t) {
        p->type = t;
        if (p->annotation) expect(t, resolve_annotation(p->annotation), p->loc, "type annotation");
        switch (p->kind) {
            case PatternKind::Var: push_local(p->name, t); break;
            case PatternKind::Wildcard: break;
            case PatternKind::Tuple: {
                if (p->elems.empty()) {
                    expect(t, t_unit(), p->loc, "pattern ()");
                    break;
                }
                std::vector<Type> parts;
                for (size_t i = 0; i < p->elems.size(); ++i) parts.push_back(fresh());
                Type actual = prune(t);
                if (actual->kind == TypeKind::Tuple && actual->args.size() != parts.size())
                    user_error(ErrorKind::Type, p->loc,
                               "this pattern has " + std::to_string(parts.size()) + " elements but the value is a " +
                                   std::to_string(actual->args.size()) + "-tuple " + type_to_string(actual));
                expect(t, t_tuple(parts), p->loc, "tuple pattern");
                for (size_t i = 0; i < parts.size(); ++i) bind_pattern(p->elems[i], parts[i]);
                break;
            }
        }
    }

    // ------------------------------------------------------------ expressions
    Type infer(const ExprPtr& e) {
        if (env_.cancel && env_.cancel->load(std::memory_order_relaxed))
            throw Error(ErrorKind::Interrupted, e->loc, "interrupted");
        Type t = infer_node(e);
        e->type = t;
        return t;
    }

    Type infer_node(const ExprPtr& e) {
        switch (e->kind) {
            case ExprKind::IntLit: {
                Type v = fresh(ClassNum);
                v->literal = true;
                return v;
            }
            case ExprKind::FloatLit: {
                Type v = fresh(ClassNum | ClassFloating);
                v->literal = true;
                return v;
            }
            case ExprKind::BoolLit: return t_prim(Prim::Bool);
            case ExprKind::StringLit: return t_string();
            case ExprKind::Var: return infer_var(e);
            case ExprKind::Lambda: return infer_lambda(e);
            case ExprKind::App: return infer_app(e);
            case ExprKind::Let: {
                const size_t defining = defining_.size();
                define(e->pattern, e->kids[0]);
                Type vt = infer(e->kids[0]);
                defining_.resize(defining);
                size_t mark = locals_.size();
                bind_pattern(e->pattern, vt);
                Type bt = infer(e->kids[1]);
                locals_.resize(mark);
                return bt;
            }
            case ExprKind::If: {
                Type ct = infer(e->kids[0]);
                solve();
                Type c = prune(ct);
                std::vector<std::string> notes;
                if (c->kind == TypeKind::Array)
                    notes.push_back("`if` needs one bool; use `all c` or `any c` to reduce an array of bools");
                try {
                    unify(ct, t_prim(Prim::Bool));
                } catch (const Mismatch&) {
                    user_error(ErrorKind::Type, e->kids[0]->loc,
                               "the condition of `if` must be bool, found " + describe(ct), notes);
                }
                Type a = infer(e->kids[1]);
                Type b = infer(e->kids[2]);
                try {
                    unify(a, b);
                } catch (const Mismatch&) {
                    user_error(ErrorKind::Type, e->kids[2]->loc,
                               "the branches of `if` have different types: " + describe(a) + " and " + describe(b));
                }
                return a;
            }
            case ExprKind::Tuple: {
                if (e->kids.empty()) return t_unit();  // `()`
                std::vector<Type> parts;
                for (const auto& k : e->kids) parts.push_back(infer(k));
                return t_tuple(parts);
            }
            case ExprKind::ArrayLit: return infer_array_literal(e);
            case ExprKind::Binary: return infer_operator(e, e->text, {e->kids[0], e->kids[1]});
            case ExprKind::Unary: return infer_operator(e, e->text, {e->kids[0]});
            case ExprKind::Index: return infer_index(e, nullptr);
            case ExprKind::With: {
                Type arr = infer(e->kids[0]);
                infer_index(e, &arr);
                return arr;
            }
            case ExprKind::LoopFor:
            case ExprKind::LoopWhile: return infer_loop(e);
            case ExprKind::Annot: {
                Type t = infer(e->kids[0]);
                expect(t, resolve_annotation(e->annotation), e->loc, "type annotation");
                return t;
            }
        }
        internal_error(__FILE__, __LINE__, "unknown expression kind");
    }

    Type infer_var(const ExprPtr& e) {
        if (const Type* local = find_local(e->text)) return *local;
        auto g = env_.globals.find(e->text);
        if (g != env_.globals.end()) {
            const Scheme& s = *g->second;
            if (!s.polymorphic()) return s.type;
            return instantiate(s, e->loc, e->text, &e->instance);
        }
        auto b = builtin_schemes().find(e->text);
        if (b != builtin_schemes().end()) return instantiate(*b->second, e->loc, e->text, nullptr);
        for (const auto& [name, function] : defining_) {
            if (name != e->text) continue;
            if (function)
                user_error(ErrorKind::Type, e->loc, "`" + name + "` cannot call itself: Shoal has no recursion",
                           {"a definition does not see its own name; repeat a step with `loop x = x0 for i < n do "
                            "step`, `loop x = x0 while cond do step` or `iterate n step x0`, and combine elements "
                            "with `reduce`, `scan` or `sum`"});
            user_error(ErrorKind::Type, e->loc, "`" + name + "` is used in its own definition",
                       {"a definition does not see its own name; to update a value step by step use `loop x = x0 for "
                        "i < n do step`"});
        }
        std::vector<std::string> notes;
        if (const std::string instead = habit_instead(e->text); !instead.empty()) notes.push_back(instead);
        else if (std::string near = nearest_name(e->text); !near.empty()) notes.push_back("did you mean `" + near + "`?");
        user_error(ErrorKind::Type, e->loc, "unknown name `" + e->text + "`", notes);
    }

    // Notes the names `p = value` defines while value is checked.
    void define(const PatternPtr& p, const ExprPtr& value) {
        if (p->kind == PatternKind::Var) defining_.emplace_back(p->name, value->kind == ExprKind::Lambda);
        for (const auto& q : p->elems) define(q, value);
    }

    // The names the lets being checked define (innermost last; whether each
    // is a function): using one in its own definition is recursion, which
    // Shoal does not have.
    std::vector<std::pair<std::string, bool>> defining_;

    std::string nearest_name(const std::string& name) const {
        auto distance = [](const std::string& a, const std::string& b) {
            std::vector<size_t> row(b.size() + 1);
            for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
            for (size_t i = 1; i <= a.size(); ++i) {
                size_t prev = row[0];
                row[0] = i;
                for (size_t j = 1; j <= b.size(); ++j) {
                    size_t cur = row[j];
                    row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] != b[j - 1])});
                    prev = cur;
                }
            }
            return row[b.size()];
        };
        std::string best;
        size_t best_d = name.size() <= 3 ? 1 : 2;
        auto consider = [&](const std::string& cand) {
            size_t d = distance(name, cand);
            if (d <= best_d && (best.empty() || d < distance(name, best))) best = cand;
        };
        for (const auto& l : locals_) consider(l.first);
        for (const auto& g : env_.globals) consider(g.first);
        for (const auto& b : builtin_schemes())
            if (std::isalpha(static_cast<unsigned char>(b.first[0]))) consider(b.first);
        return best;
    }

    // `expected`: the function type the context wants (null: none); its
    // parameter types are given to the lambda's parameters before the body
    // is checked, so the body's errors are found where they are.
    Type infer_lambda(const ExprPtr& e, const Type& expected = nullptr) {
        size_t mark = locals_.size();
        std::vector<Type> params;
        Type want = expected ? prune(expected) : nullptr;
        for (const auto& p : e->params) {
            Type t = fresh();
            if (want && want->kind == TypeKind::Func) {
                unify(t, want->args[0]);  // a fresh variable: cannot fail
                want = prune(want->args[1]);
            } else {
                want = nullptr;
            }
            bind_pattern(p, t);
            params.push_back(t);
        }
        Type body = infer(e->kids[0]);
        if (e->annotation) expect(body, resolve_annotation(e->annotation), e->kids[0]->loc, "declared result type");
        if (want) {
            // The result the context wants: a mismatch is the body's.
            try {
                unify(body, want);
                solve();
            } catch (const Mismatch&) {
                user_error(ErrorKind::Type, e->kids[0]->loc,
                           "this function gives " + describe(body) + ", but " + describe(want) + " is needed here");
            }
        }
        locals_.resize(mark);
        return t_func(params, body);
    }

    // Application spine f a1 .. an: checks argument by argument so errors
    // name the function and the argument position.
    Type infer_app(const ExprPtr& e) {
        std::vector<ExprPtr> spine;
        ExprPtr head = e;
        while (head->kind == ExprKind::App) {
            spine.push_back(head);
            head = head->kids[0];
        }
        std::reverse(spine.begin(), spine.end());
        Type ft = infer(head);
        std::string fname = head->kind == ExprKind::Var ? "`" + head->text + "`" : "this function";
        if (Type r = infer_data_first(spine, ft, fname, head)) {
            type_load_literal(head, spine, r);
            return r;
        }
        for (size_t i = 0; i < spine.size(); ++i) {
            const ExprPtr& app = spine[i];
            const ExprPtr& arg = app->kids[1];
            Type at = infer(arg);
            Type f = prune(ft);
            // A number, bool, string, array or tuple (or a variable that can only be a number).
            const bool constrained = f->kind == TypeKind::Var && (f->classes || f->scalar_only || f->is_rank);
            if (i == 0 && (constrained || (f->kind != TypeKind::Var && f->kind != TypeKind::Func))) {
                user_error(ErrorKind::Type, head->loc,
                           (head->kind == ExprKind::Var ? fname : "this") + " is not a function, it is " +
                               describe(f) + "; it cannot be applied to an argument");
            } else if (constrained) {
                user_error(ErrorKind::Type, arg->loc,
                           fname + " takes " + std::to_string(i) + " argument" + (i == 1 ? "" : "s") +
                               " but is given " + std::to_string(spine.size()));
            } else if (f->kind == TypeKind::Var) {
                Type r = fresh();
                expect(f, t_func(at, r), app->loc, "applied value");
                ft = r;
            } else if (f->kind == TypeKind::Func) {
                unify_argument(f->args[0], at, arg, i, fname, head);
                ft = f->args[1];
            } else {
                user_error(ErrorKind::Type, arg->loc,
                           fname + " takes " + std::to_string(i) + " argument" + (i == 1 ? "" : "s") +
                               " but is given " + std::to_string(spine.size()) + " (its type is " +
                               type_to_string(head->type) + ")");
            }
            app->type = ft;
            solve();
        }
        type_load_literal(head, spine, ft);
        return ft;
    }

    // Mistakes that unification would only report later, as an array of
    // functions or of arrays: a function of too many parameters
    // (`map (\a b -> a) xs`), an array where a fold's initial value goes
    // (`reduce (+) xs`). Says what the builtin takes instead.
    void check_builtin_argument(const std::string& name, const Type& param, const Type& at, const ExprPtr& arg,
                                size_t i) {
        auto arity = [](Type t) {
            int n = 0;
            for (t = prune(t); t->kind == TypeKind::Func; t = prune(t->args[1])) ++n;
            return n;
        };
        // iterate's value may itself be a function, which its function then returns.
        const int wanted = arity(param), given = arity(at);
        if (wanted > 0 && given > wanted && name != "iterate") {
            static const char* const kCounts[] = {"", "one argument", "two arguments", "three arguments"};
            user_error(ErrorKind::Type, arg->loc,
                       "`" + name + "` applies its function to " +
                           (wanted < 4 ? std::string(kCounts[wanted]) : std::to_string(wanted) + " arguments") +
                           ", but this function takes " + std::to_string(given));
        }
        static const std::map<std::string, std::string> kFolds = {
            {"reduce", "an initial value and an array: reduce (+) 0 xs"},
            {"scan", "an initial value and an array: scan (+) 0 xs"},
            {"scanExclusive", "an initial value and an array: scanExclusive (+) 0 xs"},
            {"segscan", "an initial value, the flags and an array: segscan (+) 0 flags xs"},
        };
        if (auto fold = kFolds.find(name); fold != kFolds.end() && i == 1 && prune(at)->kind == TypeKind::Array)
            user_error(ErrorKind::Type, arg->loc,
                       "argument 2 of `" + name + "` should be its initial value (an element), found " + describe(at),
                       {"`" + name + "` takes an operator, " + fold->second});
    }

    // Unifies argument i (0-based) of fname, of type `at`, with the
    // parameter type `param`; a mismatch names both, blamed on the argument.
    void unify_argument(const Type& param, const Type& at, const ExprPtr& arg, size_t i, const std::string& fname,
                        const ExprPtr& head = nullptr) {
        if (head && head->kind == ExprKind::Var && is_global_builtin(head->text))
            check_builtin_argument(head->text, param, at, arg, i);
        try {
            unify(param, at);
        } catch (const Mismatch& m) {
            std::vector<std::string> notes;
            if (!m.detail.empty()) notes.push_back(m.detail);
            if (std::string c = array_conversion_note(param, at, arg->loc); !c.empty()) notes.push_back(c);
            if (std::string v = fixed_value_note(head); !v.empty()) notes.push_back(v);
            user_error(ErrorKind::Type, arg->loc,
                       "argument " + std::to_string(i + 1) + " of " + fname + " should be " + describe(param) +
                           ", found " + describe(at),
                       notes);
        }
    }

    // `let r = saxpy 2.0 (random 4)` binds a value (check_let): why its
    // parameter types are fixed, and how to keep them polymorphic.
    std::string fixed_value_note(const ExprPtr& head) const {
        if (!head || head->kind != ExprKind::Var || find_local(head->text)) return "";
        auto g = env_.globals.find(head->text);
        if (g == env_.globals.end() || g->second->polymorphic() || !g->second->effects) return "";
        return "`" + head->text + "` is a value computed once (its definition draws random numbers or uses a file), "
               "so its parameter types were fixed when it was bound; bind that array first (`let rs = random 4`, "
               "then `let " + head->text + " = ... rs`) to keep them polymorphic";
    }

    // `map (\x -> if x then 1 else 0) xs`: when a lambda argument comes
    // before data arguments of a function whose parameters are known, the
    // data are checked first and the lambda against the parameter types they
    // fixed, so an error inside the lambda is reported where it is (`if x`,
    // x being float), with the argument that made it so as a note. Null when
    // the application does not have that shape (then arguments go in order).
    Type infer_data_first(const std::vector<ExprPtr>& spine, const Type& ft, const std::string& fname,
                          const ExprPtr& head) {
        std::vector<Type> params, rests;
        Type f = prune(ft);
        for (size_t i = 0; i < spine.size(); ++i, f = prune(f->args[1])) {
            if (f->kind != TypeKind::Func) return nullptr;
            params.push_back(f->args[0]);
            rests.push_back(f->args[1]);
        }
        auto is_lambda = [&](size_t i) { return spine[i]->kids[1]->kind == ExprKind::Lambda; };
        bool lambda_before_data = false;
        for (size_t i = 0; i + 1 < spine.size(); ++i)
            if (is_lambda(i))
                for (size_t j = i + 1; j < spine.size(); ++j) lambda_before_data = lambda_before_data || !is_lambda(j);
        if (!lambda_before_data) return nullptr;
        auto check = [&](size_t i, const Type& at) {
            unify_argument(params[i], at, spine[i]->kids[1], i, fname, head);
        };
        std::string data;  // "argument 2 of `map` is [float]", for the lambdas' errors
        for (size_t i = 0; i < spine.size(); ++i) {
            if (is_lambda(i)) continue;
            check(i, infer(spine[i]->kids[1]));
            solve();
            data += (data.empty() ? "argument " + std::to_string(i + 1) + " of " + fname
                                  : "; argument " + std::to_string(i + 1)) +
                    " is " + type_to_string(prune(spine[i]->kids[1]->type));
        }
        for (size_t i = 0; i < spine.size(); ++i) {
            if (!is_lambda(i)) continue;
            try {
                const ExprPtr& lambda = spine[i]->kids[1];
                lambda->type = infer_lambda(lambda, params[i]);
                check(i, lambda->type);
            } catch (Error& e) {
                if (e.kind == ErrorKind::Type && e.loc.valid() && spine[i]->kids[1]->loc.valid() &&
                    e.loc.line == spine[i]->kids[1]->loc.line && e.loc.col >= spine[i]->kids[1]->loc.col)
                    e.notes.push_back("the function's parameters have the types " + fname + " gives them: " + data);
                throw;
            }
            solve();
        }
        for (size_t i = 0; i < spine.size(); ++i) spine[i]->type = rests[i];
        return rests.back();
    }

    // `load "x.npy"`: the file's header says the element type and rank.
    void type_load_literal(const ExprPtr& head, const std::vector<ExprPtr>& spine, const Type& result) {
        if (head->kind != ExprKind::Var || head->text != "load" || spine.size() != 1 || !env_.load_typer) return;
        if (!is_global_builtin("load")) return;
        const ExprPtr& arg = spine[0]->kids[1];
        if (arg->kind != ExprKind::StringLit) return;
        Type file_type = env_.load_typer(arg->text, arg->loc);
        if (!file_type) return;
        try {
            unify(result, file_type);
        } catch (const Mismatch&) {
            user_error(ErrorKind::Type, spine[0]->loc,
                       "'" + arg->text + "' holds " + type_to_string(file_type) + " but " + describe(result) +
                           " is needed here");
        }
    }

    Type infer_array_literal(const ExprPtr& e) {
        if (e->kids.empty()) return fresh_array(fresh());
        Type elem = infer(e->kids[0]);
        for (size_t i = 1; i < e->kids.size(); ++i) {
            Type t = infer(e->kids[i]);
            try {
                unify(elem, t);
            } catch (const Mismatch&) {
                user_error(ErrorKind::Type, e->kids[i]->loc,
                           "array elements must all have one type: the first is " + describe(elem) + ", this is " +
                               describe(t));
            }
        }
        solve();
        Type p = prune(elem);
        if (p->kind == TypeKind::Array) {
            Type r = prune(p->args[0]);
            if (r->kind != TypeKind::Rank)
                user_error(ErrorKind::Type, e->loc, "cannot tell the rank of the rows of this array literal");
            if (r->rank >= 3) user_error(ErrorKind::Type, e->loc, "arrays have at most 3 dimensions");
            return t_array(r->rank + 1, p->args[1]);
        }
        if (p->kind == TypeKind::Func) user_error(ErrorKind::Type, e->loc, "arrays cannot hold functions");
        return t_array(1, elem);
    }

    // Operators are builtins: `a + b` checks like `(+) a b`, with messages
    // that name the operator and suggest conversions.
    Type infer_operator(const ExprPtr& e, const std::string& op, const std::vector<ExprPtr>& operands) {
        std::vector<Type> types;
        for (const auto& o : operands) types.push_back(infer(o));
        // Strings: `++` joins two, `==` `!=` `<` ... compare them (by their bytes).
        static const std::set<std::string> string_ops = {"++", "==", "!=", "<", "<=", ">", ">="};
        if (operands.size() == 2 && string_ops.count(op) &&
            (prune(types[0])->kind == TypeKind::String || prune(types[1])->kind == TypeKind::String)) {
            for (size_t i = 0; i < 2; ++i)
                expect(types[i], t_string(), operands[i]->loc, "operand of `" + op + "` with a string");
            return op == "++" ? t_string() : t_prim(Prim::Bool);
        }
        const Scheme& s = *builtin_schemes().at(op);
        size_t first_new = pending_.size();
        Type ft = instantiate(s, e->loc, op, nullptr);
        std::vector<Loc> locs;
        for (const auto& o : operands) locs.push_back(o->loc);
        for (size_t i = first_new; i < pending_.size(); ++i) pending_[i].arg_locs = locs;
        for (size_t i = 0; i < operands.size(); ++i) {
            const Type& at = types[i];
            Type f = prune(ft);
            try {
                unify(f->args[0], at);
            } catch (const Mismatch&) {
                std::vector<std::string> notes;
                if (std::string c = array_conversion_note(f->args[0], at, operands[i]->loc); !c.empty())
                    notes.push_back(c);
                user_error(ErrorKind::Type, operands[i]->loc,
                           "operand of `" + display_op(op) + "` should be " + describe(f->args[0]) + ", found " +
                               describe(at),
                           notes);
            }
            ft = f->args[1];
        }
        solve();
        return ft;
    }

    static std::string display_op(const std::string& op) { return op == "negate" ? "-" : op; }

    // xs[mask] is compress mask xs: the indexed array's type. In an update
    // the value is a scalar, or (a matrix's rows selected) a row that every
    // selected row gets.
    Type infer_mask(const ExprPtr& e, const Type& shaped, const Type& elem, const Type& mask, bool update) {
        const ExprPtr& m = e->indices[0].index;
        // An array of ints gathers the rows it names (NumPy's integer array
        // index: `xs[argsort xs]`); any other array is a mask of bools.
        const Type flags = prune(mask)->kind == TypeKind::Array ? prune(prune(mask)->args[1]) : nullptr;
        const bool int_literals =  // `xs[[2, 0]]`: integer literals are indices
            flags && flags->kind == TypeKind::Var && flags->literal && !(flags->classes & ClassFloating);
        if (!update && flags && (int_literals || (flags->kind == TypeKind::Prim && flags->prim == Prim::Int))) {
            expect(mask, t_array(1, t_prim(Prim::Int)), m->loc, "array of indices");
            return shaped;
        }
        try {
            unify(mask, t_array(1, t_prim(Prim::Bool)));
        } catch (const Mismatch&) {
            std::vector<std::string> notes = {"index with an int, with a mask (`xs[xs > 0.5]` keeps the elements where it "
                                              "holds) or with indices (`xs[argsort xs]`)"};
            const Type r = prune(mask)->kind == TypeKind::Array ? prune(prune(mask)->args[0]) : nullptr;
            if (r && r->kind == TypeKind::Rank && r->rank == 2)  // NumPy's m[m > 2.0] on a matrix
                notes.push_back(update ? "a mask shaped like the matrix updates elements: `where mask v m`"
                                       : "a mask is one flag per row; NumPy's m[mask] with a mask shaped like m keeps "
                                         "elements: `compress (flatten mask) (flatten m)` (or `where mask m 0.0` keeps "
                                         "the shape)");
            user_error(ErrorKind::Type, m->loc,
                       "an array index must be a mask of bools" + std::string(update ? "" : " or a vector of ints") +
                           ", found " + describe(mask),
                       std::move(notes));
        }
        if (!update) return shaped;
        const Type value = infer(e->kids[1]);
        const Type v = prune(value);
        if (v->kind == TypeKind::Array) {
            const Type rank = prune(prune(shaped)->args[0]);
            if (rank->kind == TypeKind::Rank && rank->rank == 2) {
                expect(value, t_array(1, elem), e->kids[1]->loc, "value assigned to the rows a mask selects");
                return shaped;
            }
            user_error(ErrorKind::Type, e->kids[1]->loc,
                       "a mask update takes a scalar (or, for a matrix's rows, a row), found " + describe(value),
                       {"to take new values from an array of the same shape, write `where mask new xs`"});
        }
        expect(value, elem, e->kids[1]->loc, "value assigned with `with`");
        return shaped;
    }

    Type infer_index(const ExprPtr& e, const Type* updated) {
        Type arr = updated ? *updated : infer(e->kids[0]);
        Type elem = fresh();
        Type ap = prune(arr);
        if (ap->kind != TypeKind::Var && ap->kind != TypeKind::Array && ap->kind != TypeKind::Tuple)
            user_error(ErrorKind::Type, e->kids[0]->loc, "cannot index a value of type " + describe(arr));
        Type shaped = fresh_array(elem);
        expect(arr, shaped, e->kids[0]->loc, "indexed value");
        Type single;  // the type of a single index, inferred first: a mask?
        if (e->indices.size() == 1 && !e->indices[0].is_slice) {
            // A boolean mask (NumPy's boolean index): `xs[xs > 0.5]` keeps
            // the rows where it holds, `xs with [mask] = v` updates them.
            single = infer(e->indices[0].index);
            if (prune(single)->kind == TypeKind::Array) return infer_mask(e, shaped, elem, single, updated != nullptr);
            if (operand_shape(single) < 0 && !updated) {
                // Not known yet (`xs[xs < float i]` with i's type open):
                // decided when it is, an int index by default.
                Type result = fresh();
                Constraint c;
                c.kind = Constraint::Kind::MaskOrIndex;
                c.types = {shaped, result, single};
                c.loc = e->indices[0].index->loc;
                c.what = "index";
                pending_.push_back(c);
                solve();
                return result;
            }
        }
        int n_indices = 0;
        for (const auto& ix : e->indices) {
            auto check_int = [&](const ExprPtr& x, const char* what) {
                if (!x) return;
                Type t = single && x == e->indices[0].index ? single : infer(x);
                try {
                    unify(t, t_prim(Prim::Int));
                } catch (const Mismatch&) {
                    user_error(ErrorKind::Type, x->loc,
                               std::string(what) + " must be int, found " + describe(t),
                               {"convert with `" + conversion_text("int", x->loc) + "`"});
                }
            };
            if (ix.is_slice) {
                check_int(ix.lo, "a slice bound");
                check_int(ix.hi, "a slice bound");
                check_int(ix.step, "a slice step");
            } else {
                check_int(ix.index, "an array index");
                ++n_indices;
            }
        }
        Type result = fresh();
        Constraint c;
        c.kind = Constraint::Kind::IndexResult;
        c.types = {shaped, result};
        c.n_indices = n_indices;
        c.n_args = static_cast<int>(e->indices.size());
        c.loc = e->loc;
        c.what = updated ? "with" : "index";
        pending_.push_back(c);
        if (updated) {
            Type vt = infer(e->kids[1]);
            Constraint a;
            a.kind = Constraint::Kind::Assign;
            a.types = {result, vt, elem};
            a.loc = e->kids[1]->loc;
            a.what = "with";
            pending_.push_back(a);
        }
        solve();
        return result;
    }

    Type infer_loop(const ExprPtr& e) {
        Type init = infer(e->kids[0]);
        size_t mark = locals_.size();
        bind_pattern(e->pattern, init);
        if (e->kind == ExprKind::LoopFor) {
            // The count is evaluated outside the loop: it cannot see x or i.
            locals_.resize(mark);
            Type count = infer(e->kids[1]);
            expect(count, t_prim(Prim::Int), e->kids[1]->loc, "loop count");
            bind_pattern(e->pattern, init);
            push_local(e->counter, t_prim(Prim::Int));
        } else {
            Type cond = infer(e->kids[1]);
            expect(cond, t_prim(Prim::Bool), e->kids[1]->loc, "loop condition");
        }
        Type body = infer(e->kids[2]);
        try {
            unify(body, init);
        } catch (const Mismatch&) {
            user_error(ErrorKind::Type, e->kids[2]->loc,
                       "the loop body has type " + describe(body) + " but the loop variable has type " +
                           describe(init));
        }
        locals_.resize(mark);
        return init;
    }

    // ------------------------------------------------------------ constraints
    // Retries pending constraints until none makes progress.
    void solve() {
        bool progress = true;
        while (progress) {
            progress = false;
            for (size_t i = 0; i < pending_.size();) {
                Constraint c = pending_[i];
                if (solve_reporting(c, false)) {
                    pending_.erase(pending_.begin() + static_cast<long>(i));
                    progress = true;
                } else {
                    ++i;
                }
            }
        }
    }

    // For printing a scheme: settles every constraint the way scheme_to_string
    // explains; `lifts` says whether an elementwise operand stayed open.
    // lifts: some elementwise operands were left scalars (the function also
    // lifts over arrays); broadcasts: some were shown as arrays like the
    // array they combine with, though a scalar fits there too.
    void settle_for_display(bool& lifts, bool& broadcasts) {
        solve();
        while (!pending_.empty()) {
            auto it = std::find_if(pending_.begin(), pending_.end(),
                                   [](const Constraint& k) { return k.kind != Constraint::Kind::Lift; });
            if (it == pending_.end()) {
                it = pending_.begin();
                // An operand of unknown shape beside one known to be an array
                // (operands at 2, 4, ...): `saxpy 2.0 x` takes y or [y].
                bool unknown = false, array = false;
                for (size_t i = 2; i < it->types.size(); i += 2) {
                    unknown |= operand_shape(it->types[i]) < 0;
                    array |= operand_shape(it->types[i]) == 1;
                }
                if (!lift_unknowns_like_arrays(*it)) lifts = true;
                else if (unknown && array) broadcasts = true;
            }
            Constraint k = *it;
            pending_.erase(it);
            try_solve(k, true);
            solve();
        }
    }

    // `x - y` with x : [a] and y unknown reads best as y : [a].
    // Returns false when no operand is an array (the unknowns become scalars).
    bool lift_unknowns_like_arrays(const Constraint& c) {
        Type array;
        for (size_t i = 2; i < c.types.size(); i += 2)
            if (operand_shape(c.types[i]) == 1) array = prune(c.types[i]);
        if (!array && operand_shape(c.types[0]) == 1) array = prune(c.types[0]);
        if (!array) return false;
        for (size_t i = 2; i < c.types.size(); i += 2)
            if (operand_shape(c.types[i]) < 0) unify(c.types[i], t_array(array->args[0], c.types[i + 1]));
        return true;
    }

    // Defaulting: forces the first stuck constraint, then solves again.
    void solve_with_defaults() {
        solve();
        while (!pending_.empty()) {
            // Elementwise operators first: their default (an unknown operand
            // is a scalar, or has the known operands' rank) decides the
            // ranks that a reduction or an index of the result would
            // otherwise default to 1 (`\v -> sum (m - v)`).
            auto first = std::find_if(pending_.begin(), pending_.end(),
                                      [](const Constraint& p) { return p.kind == Constraint::Kind::Lift; });
            if (first == pending_.end()) first = pending_.begin();
            Constraint c = *first;
            pending_.erase(first);
            if (!solve_reporting(c, true))
                internal_error(__FILE__, __LINE__, "constraint not solved by defaulting: " + c.what);
            solve();
        }
    }

    // Is the operand's shape known? 0 = scalar, 1 = array, -1 = unknown.
    static int operand_shape(const Type& t) {
        Type p = prune(t);
        if (p->kind == TypeKind::Prim) return 0;
        if (p->kind == TypeKind::Array) return 1;
        if (p->kind == TypeKind::Var) return (p->scalar_only || (p->classes & ~ClassNoDefault)) ? 0 : -1;
        return 2;  // tuple, function, ...: an error
    }

    // try_solve, with a structural mismatch inside it reported as a type error.
    bool solve_reporting(const Constraint& c, bool force) {
        try {
            return try_solve(c, force);
        } catch (const Mismatch& m) {
            std::vector<std::string> notes;
            if (!m.detail.empty()) notes.push_back(m.detail);
            std::string what = c.kind == Constraint::Kind::IndexResult || c.kind == Constraint::Kind::Assign
                                   ? "this index or slice does not fit the indexed array's type"
                                   : "`" + display_op(c.what) + "` cannot be applied to arguments of these types";
            user_error(ErrorKind::Type, c.loc, what, notes);
        }
    }

    // An index's result (types[1]) is an element or a part of an array, never
    // a function: applied to an argument (`\i -> xs[i] 5`, before i's type is
    // known) it is an error where it is written, not at each call.
    void not_applied(const Constraint& c) {
        const Type result = prune(c.types[1]);
        if (result->kind == TypeKind::Func)
            user_error(ErrorKind::Type, c.loc,
                       "an indexed value is an element or a part of an array, not a function; it cannot be applied "
                       "to an argument");
    }

    bool try_solve(const Constraint& c, bool force) {
        switch (c.kind) {
            case Constraint::Kind::Lift: return solve_lift(c, force);
            case Constraint::Kind::ReduceInner: {
                Type arr = prune(c.types[0]);
                Type rank = prune(arr->args[0]);
                if (rank->kind != TypeKind::Rank) {
                    if (!force) return false;
                    unify(rank, t_rank(1));
                    rank = prune(rank);
                }
                Type res = rank->rank == 1 ? arr->args[1] : t_array(rank->rank - 1, arr->args[1]);
                expect(c.types[1], res, c.loc, "result of `" + c.what + "`");
                return true;
            }
            case Constraint::Kind::ShapeArg: return solve_shape_arg(c, force);
            case Constraint::Kind::Matmul: return solve_matmul(c, force);
            case Constraint::Kind::BroadcastRank: {
                const std::optional<Type> r =
                    broadcast_rank(std::vector<Type>(c.types.begin() + 1, c.types.end()), force);
                if (!r) return false;
                unify(c.types[0], *r);
                return true;
            }
            case Constraint::Kind::VmapParam: return solve_vmap_param(c, force);
            case Constraint::Kind::VmapResult: {
                const std::optional<Type> r = batched(c.types[0], c, force);
                if (!r) return false;
                expect(c.types[1], *r, c.loc, "result of `vmap`");
                return true;
            }
            case Constraint::Kind::Generator: {
                Type rank = prune(c.types[0]);
                if (rank->kind != TypeKind::Rank) {
                    if (!force) return false;
                    unify(rank, t_rank(1));
                    rank = prune(rank);
                }
                std::vector<Type> ints(static_cast<size_t>(rank->rank), t_prim(Prim::Int));
                Type want = t_func(ints, c.types[2]);
                Type actual = prune(c.types[1]);
                if (actual->kind == TypeKind::Func) {
                    // Count the parameters for a clearer message than a unifier failure.
                    int params = 0;
                    for (Type f = actual; f->kind == TypeKind::Func; f = prune(f->args[1])) ++params;
                    // More parameters than indices would make the elements functions.
                    if (params != rank->rank && (params > rank->rank || prune(c.types[2])->kind != TypeKind::Var))
                        user_error(ErrorKind::Type, c.loc,
                                   "`" + c.what + "` of rank " + std::to_string(rank->rank) + " needs a function of " +
                                       std::to_string(rank->rank) + " int index" + (rank->rank > 1 ? "es" : "") +
                                       ", found " + type_to_string(actual));
                }
                expect(c.types[1], want, c.loc, "function given to `" + c.what + "`");
                return true;
            }
            case Constraint::Kind::IndexResult: {
                not_applied(c);
                Type arr = prune(c.types[0]);
                Type rank = prune(arr->args[0]);
                if (rank->kind != TypeKind::Rank) {
                    if (!force) return false;
                    unify(rank, t_rank(std::min(c.n_args, 3)));
                    rank = prune(rank);
                }
                if (c.n_args > rank->rank)
                    user_error(ErrorKind::Type, c.loc,
                               "too many indices: " + std::to_string(c.n_args) + " for an array of rank " +
                                   std::to_string(rank->rank) + " (" + type_to_string(arr) + ")");
                int left = rank->rank - c.n_indices;
                Type res = left == 0 ? arr->args[1] : t_array(left, arr->args[1]);
                unify(c.types[1], res);
                return true;
            }
            case Constraint::Kind::MaskOrIndex: {
                not_applied(c);
                const Type index = prune(c.types[2]);
                if (index->kind == TypeKind::Var && !force) return false;
                if (index->kind == TypeKind::Array) {
                    expect(c.types[2], t_array(1, t_prim(Prim::Bool)), c.loc, "mask");
                    unify(c.types[1], c.types[0]);
                    return true;
                }
                expect(c.types[2], t_prim(Prim::Int), c.loc, "array index");
                Constraint r;
                r.kind = Constraint::Kind::IndexResult;
                r.types = {c.types[0], c.types[1]};
                r.n_indices = r.n_args = 1;
                r.loc = c.loc;
                r.what = "index";
                if (!try_solve(r, force)) pending_.push_back(r);
                return true;
            }
            case Constraint::Kind::Assign: {
                // types: {selected part, value, element}: a scalar value is
                // broadcast, and so is an array of a rank up to the part's
                // (NumPy's rule; the extents are checked when it runs).
                int shape = operand_shape(c.types[1]);
                if (shape < 0 && !force) return false;
                if (shape == 1) {
                    const Type part = prune(c.types[0]), value = prune(c.types[1]);
                    if (part->kind == TypeKind::Array) {
                        const Type pr = prune(part->args[0]), vr = prune(value->args[0]);
                        const bool known = pr->kind == TypeKind::Rank && vr->kind == TypeKind::Rank;
                        if (!known && !force) return false;
                        if (known && vr->rank < pr->rank) {
                            expect(value->args[1], part->args[1], c.loc, "element of the value assigned with `with`");
                            return true;
                        }
                    }
                }
                expect(c.types[1], shape == 1 ? c.types[0] : c.types[2], c.loc, "value assigned with `with`");
                return true;
            }
        }
        return false;
    }

    // Broadcasting on ranks (elementwise operators, zipWith): the result has
    // the largest rank of the array operands'. A rank not known yet waits
    // (nullopt) unless it is the only one (one array operand, or `x + x`);
    // defaulting gives it the largest known rank, the rule from before
    // broadcasting (operands of one rank), so a program that typed then
    // types the same now.
    std::optional<Type> broadcast_rank(const std::vector<Type>& ranks, bool force) {
        int known = 0;
        std::vector<Type> unknown;
        for (const Type& t : ranks) {
            const Type& r = prune(t);
            if (r->kind == TypeKind::Rank) known = std::max(known, r->rank);
            else if (std::find(unknown.begin(), unknown.end(), r) == unknown.end()) unknown.push_back(r);
        }
        if (unknown.empty()) return t_rank(known);
        if (unknown.size() == 1 && known == 0) return unknown[0];
        if (!force) return std::nullopt;
        const Type to = known ? t_rank(known) : unknown[0];
        for (const Type& r : unknown) unify(r, to);
        return prune(to);
    }

    // Lift types: {result, result_elem, arg0, arg0_elem, arg1, arg1_elem, ...}
    bool solve_lift(const Constraint& c, bool force) {
        size_t nargs = (c.types.size() - 2) / 2;
        std::vector<int> shapes(nargs);
        Type rank;  // the result's rank (null: a scalar)
        bool unknown = false;
        for (size_t i = 0; i < nargs; ++i) {
            const Type& arg = c.types[2 + 2 * i];
            shapes[i] = operand_shape(arg);
            if (shapes[i] == 2)
                user_error(ErrorKind::Type, arg_loc(c, i),
                           "`" + display_op(c.what) + "` works on numbers and arrays of numbers, not on " +
                               describe(arg));
            if (shapes[i] < 0) unknown = true;
        }
        // A scalar result means scalar operands.
        int result_shape = operand_shape(c.types[0]);
        if (unknown && result_shape == 0) {
            for (size_t i = 0; i < nargs; ++i)
                if (shapes[i] < 0) shapes[i] = 0, unknown = false;
        }
        // An array result with no array operand known: the unknown operand is
        // an array (the only one, or -- when defaulting -- all of them).
        if (unknown && result_shape == 1 && std::none_of(shapes.begin(), shapes.end(), [](int s) { return s == 1; })) {
            size_t n_unknown = static_cast<size_t>(std::count(shapes.begin(), shapes.end(), -1));
            if (n_unknown == 1 || force) {
                Type res = prune(c.types[0]);
                for (size_t i = 0; i < nargs; ++i)
                    if (shapes[i] < 0) {
                        unify(c.types[2 + 2 * i], t_array(res->args[0], c.types[3 + 2 * i]));
                        shapes[i] = 1;
                    }
                unknown = false;
            }
        }
        if (unknown && force)
            for (auto& s : shapes)
                if (s < 0) s = 0;  // defaulting: an unknown operand is a scalar
        // Unify every operand whose shape is known with its element now.
        std::vector<Type> ranks;  // the array operands'
        for (size_t i = 0; i < nargs; ++i) {
            const Type& arg = c.types[2 + 2 * i];
            const Type& elem = c.types[3 + 2 * i];
            if (shapes[i] == 0) {
                lift_unify_elem(c, i, arg, elem);
            } else if (shapes[i] == 1) {
                Type a = prune(arg);
                lift_unify_elem(c, i, a->args[1], elem);
                ranks.push_back(a->args[0]);
            }
        }
        if (std::any_of(shapes.begin(), shapes.end(), [](int s) { return s < 0; })) return false;
        if (!ranks.empty()) {
            const std::optional<Type> r = broadcast_rank(ranks, force);
            if (!r) return false;
            rank = *r;
        }
        Type result = rank ? t_array(rank, c.types[1]) : c.types[1];
        Type needed = prune(c.types[0]);
        try {
            unify(needed, result);
        } catch (const Mismatch&) {
            user_error(ErrorKind::Type, c.loc,
                       "`" + display_op(c.what) + "` gives " + describe(result) + " here, but " + describe(needed) +
                           " is needed");
        }
        return true;
    }

    Loc arg_loc(const Constraint& c, size_t i) const { return i < c.arg_locs.size() ? c.arg_locs[i] : c.loc; }

    void lift_unify_elem(const Constraint& c, size_t i, const Type& actual, const Type& elem) {
        Type before = prune(elem);
        try {
            unify(actual, elem);
        } catch (const Mismatch& m) {
            lift_mismatch(c, i, actual, before, m);
        }
    }

    // `1.5 + n` with n : int: say so, and suggest the conversion.
    [[noreturn]] void lift_mismatch(const Constraint& c, size_t i, const Type& actual, const Type& expected,
                                    const Mismatch& m) {
        std::string op = display_op(c.what);
        std::vector<std::string> notes;
        if (!m.detail.empty()) notes.push_back(m.detail);
        if (c.arg_locs.size() != 2)
            user_error(ErrorKind::Type, arg_loc(c, i), "`" + op + "` needs " + describe(expected) + ", found " +
                                                           describe(actual), notes);
        // Operand i failed against the element type the other operand fixed.
        Type left = prune(i == 0 ? actual : expected), right = prune(i == 0 ? expected : actual);
        if (auto note = conversion_note(left, right, c.arg_locs[0], c.arg_locs[1]); !note.empty())
            notes.push_back(note);
        user_error(ErrorKind::Type, c.loc,
                   "mismatched types in `" + op + "`: " + describe(left) + " and " + describe(right), notes);
    }

    // The scalar type a side stands for: its Prim, or float for a decimal literal.
    static std::optional<Prim> side_prim(const Type& t) {
        if (t->kind == TypeKind::Prim) return t->prim;
        if (t->kind == TypeKind::Var && (t->classes & ClassFloating)) return Prim::Float;
        return std::nullopt;
    }

    // Suggests converting the narrower operand (int -> long, integer -> floating).
    static std::string conversion_note(const Type& left, const Type& right, const Loc& left_loc, const Loc& right_loc) {
        auto lp = side_prim(left), rp = side_prim(right);
        if (!lp || !rp || *lp == Prim::Bool || *rp == Prim::Bool || *lp == *rp) return "";
        auto rank = [](Prim p) { return (is_floating(p) ? 10 : 0) + static_cast<int>(prim_size(p)); };
        bool convert_left = rank(*lp) < rank(*rp);
        // A literal adapts by itself: convert the other operand to the literal's kind.
        if (left->kind == TypeKind::Var) convert_left = false;
        if (right->kind == TypeKind::Var) convert_left = true;
        Prim target = convert_left ? *rp : *lp;
        std::string text = source_text(convert_left ? left_loc : right_loc);
        if (text.empty()) return "";
        bool simple = text.find_first_of(" +-*/()") == std::string::npos;
        return "Shoal does not convert implicitly; write `" + std::string(prim_name(target)) + " " +
               (simple ? text : "(" + text + ")") + "` to convert it to " + prim_name(target);
    }

    // Matmul types: {left array, right array, result}. A matrix times a
    // matrix is a matrix; a vector on either side drops that axis (NumPy's
    // matmul): matrix @ vector and vector @ matrix are vectors, vector @
    // vector a scalar. Unknown ranks are matrices.
    bool solve_matmul(const Constraint& c, bool force) {
        Type left = prune(c.types[0]), right = prune(c.types[1]);
        Type lr = prune(left->args[0]), rr = prune(right->args[0]);
        if (lr->kind != TypeKind::Rank || rr->kind != TypeKind::Rank) {
            if (!force) return false;
            if (lr->kind != TypeKind::Rank) unify(lr, t_rank(2));
            if (rr->kind != TypeKind::Rank) unify(rr, t_rank(2));
            lr = prune(lr);
            rr = prune(rr);
        }
        for (const auto& [rank, side] : {std::pair{lr, "left"}, std::pair{rr, "right"}})
            if (rank->rank > 2)
                user_error(ErrorKind::Type, c.loc,
                           "`" + c.what + "` multiplies matrices and vectors (rank 2 or 1); its " + side +
                               " operand has rank " + std::to_string(rank->rank),
                           {"for a product per leading index, map over it: `map (\\i -> a[i] @ b) (iota (rows a))`"});
        const int rank = (lr->rank == 2) + (rr->rank == 2);
        const Type elem = left->args[1];
        expect(c.types[2], rank == 0 ? elem : t_array(rank, elem), c.loc, "result of `" + c.what + "`");
        return true;
    }

    // VmapParam types: {xs, param}: f of `vmap f xs` takes one row of xs
    // (rank r - 1), or one element of a vector. An unknown rank defaults to 2
    // (a matrix's rows), as a product's operands default to matrices.
    bool solve_vmap_param(const Constraint& c, bool force) {
        Type xs = prune(c.types[0]);
        if (xs->kind == TypeKind::Var && operand_shape(xs) < 0) {
            if (!force) return false;
            unify(xs, t_array(2, fresh()));
            xs = prune(xs);
        }
        if (xs->kind != TypeKind::Array && xs->kind != TypeKind::Tuple)
            user_error(ErrorKind::Type, c.loc, "`vmap f xs` maps f over the rows of an array; xs is " + describe(xs),
                       {"for one value, apply f to it: `f x`"});
        if (xs->kind == TypeKind::Tuple)
            user_error(ErrorKind::Type, c.loc,
                       "`vmap` maps over one array; xs is " + describe(xs) + " (an array of tuples, or a tuple)",
                       {"map over the rows of each, or over indices: `vmap (\\i -> f a[i] b[i]) (iota (rows a))`"});
        Type rank = prune(xs->args[0]);
        if (rank->kind != TypeKind::Rank) {
            if (!force) return false;
            unify(rank, t_rank(2));
            rank = prune(rank);
        }
        const Type row = rank->rank == 1 ? xs->args[1] : t_array(rank->rank - 1, xs->args[1]);
        expect(c.types[1], row, c.loc, "parameter of the function given to `vmap` (one row of xs)");
        return true;
    }

    // The type of `vmap`'s result for f's result t: each array gets a leading
    // axis (a scalar becomes a vector, a tuple its components); nullopt
    // while t is open.
    std::optional<Type> batched(const Type& t0, const Constraint& c, bool force) {
        Type t = prune(t0);
        switch (t->kind) {
            case TypeKind::Prim: return t_array(1, t);
            case TypeKind::Array: {
                Type rank = prune(t->args[0]);
                if (rank->kind != TypeKind::Rank) {
                    if (!force) return std::nullopt;
                    unify(rank, t_rank(1));
                    rank = prune(rank);
                }
                if (rank->rank >= 3)
                    user_error(ErrorKind::Type, c.loc,
                               "`vmap`'s function returns " + describe(t) + ": with the mapped axis that is rank " +
                                   std::to_string(rank->rank + 1) + ", and arrays have at most rank 3");
                return t_array(rank->rank + 1, t->args[1]);
            }
            case TypeKind::Tuple: {
                std::vector<Type> parts;
                for (const Type& e : t->args) {
                    std::optional<Type> b = batched(e, c, force);
                    if (!b) return std::nullopt;
                    parts.push_back(*b);
                }
                return t_tuple(std::move(parts));
            }
            case TypeKind::Var:
                if (!force) return std::nullopt;
                if (t->is_rank) return std::nullopt;
                // Still open after defaulting: a scalar (a numeric literal's type).
                {
                    Type s = fresh_scalar(t->classes);
                    unify(t, s);
                }
                return t_array(1, prune(t));
            default:
                user_error(ErrorKind::Type, c.loc,
                           "`vmap`'s function must return a scalar, an array or a tuple of them; it returns " +
                               describe(t));
        }
    }

    // ShapeArg types: {shape, rank}
    bool solve_shape_arg(const Constraint& c, bool force) {
        Type s = prune(c.types[0]);
        Type rank = prune(c.types[1]);
        int shape = operand_shape(s);
        auto bad = [&]() {
            user_error(ErrorKind::Type, c.loc,
                       "`" + c.what + "` needs a shape: an int, or a tuple of 2 or 3 ints; found " + describe(s));
        };
        if (s->kind == TypeKind::Tuple) {
            if (s->args.size() < 2 || s->args.size() > 3) bad();
            for (const auto& x : s->args) expect(x, t_prim(Prim::Int), c.loc, "shape of `" + c.what + "`");
            unify(rank, t_rank(static_cast<int>(s->args.size())));
            return true;
        }
        if (shape == 0) {
            expect(s, t_prim(Prim::Int), c.loc, "shape of `" + c.what + "`");
            expect(rank, t_rank(1), c.loc, "rank of `" + c.what + "`");
            return true;
        }
        if (shape >= 1) bad();  // an array, a string, a function, ()
        if (rank->kind == TypeKind::Rank) {
            std::vector<Type> ints(static_cast<size_t>(rank->rank), t_prim(Prim::Int));
            unify(s, rank->rank == 1 ? t_prim(Prim::Int) : t_tuple(ints));
            return true;
        }
        if (!force) return false;
        unify(s, t_prim(Prim::Int));
        unify(rank, t_rank(1));
        return true;
    }

    // ------------------------------------------------------------ finishing
    // Collects every type mentioned by the statement's nodes.
    void collect_types(const ExprPtr& e, std::vector<Type>& out) {
        if (!e) return;
        if (e->type) out.push_back(e->type);
        for (const auto& t : e->instance) out.push_back(t);
        for (const auto& p : e->params) collect_pattern(p, out);
        if (e->pattern) collect_pattern(e->pattern, out);
        for (const auto& k : e->kids) collect_types(k, out);
        for (const auto& ix : e->indices) {
            collect_types(ix.index, out);
            collect_types(ix.lo, out);
            collect_types(ix.hi, out);
            collect_types(ix.step, out);
        }
    }
    void collect_pattern(const PatternPtr& p, std::vector<Type>& out) {
        if (p->type) out.push_back(p->type);
        for (const auto& q : p->elems) collect_pattern(q, out);
    }

    static void free_vars(const Type& t, std::vector<Type>& out, std::set<const TypeNode*>& seen) {
        Type p = prune(t);
        if (!seen.insert(p.get()).second) return;  // a shared subterm: already visited
        if (p->kind == TypeKind::Var) {
            out.push_back(p);
            return;
        }
        for (const auto& a : p->args) free_vars(a, out, seen);
    }

    // Binds every free variable to its default type.
    void default_variables(const std::vector<Type>& roots, const Loc& loc) {
        std::vector<Type> vars;
        std::set<const TypeNode*> seen;
        for (const auto& t : roots) free_vars(t, vars, seen);
        for (const auto& v : vars) {
            if (prune(v)->kind != TypeKind::Var) continue;
            if (v->is_rank) {
                v->bound = t_rank(1);
            } else if (v->classes & ClassNoDefault) {
                user_error(ErrorKind::Type, loc,
                           "cannot tell the element type of the array `load` reads here: its path is not a literal",
                           {"annotate it, e.g. `(" + source_text(loc) + " : [float])` (or the file's type), or load from "
                            "a string literal, whose file's header Shoal reads while checking"});
            } else {
                v->bound = t_prim((v->classes & ClassFloating) ? Prim::Float : Prim::Int);
            }
        }
    }

    // Rebuilds resolved types (normalising arrays of tuples); `gen` maps
    // generalised variables to Gen indices.
    // Resolved types are trees; a DAG that unfolds into a huge tree (HM's
    // exponential worst case, `f f f ... f`) is reported instead of built.
    static constexpr int64_t kMaxTypeNodes = 200000;

    Type zonk(const Type& t, const std::unordered_map<const TypeNode*, int>* gen = nullptr) {
        if (++zonked_nodes_ > kMaxTypeNodes)
            user_error(ErrorKind::Type, Loc{}, "this expression's type is too large (more than " +
                                                   std::to_string(kMaxTypeNodes) + " parts)");
        Type p = prune(t);
        switch (p->kind) {
            case TypeKind::Var: {
                if (gen) {
                    auto it = gen->find(p.get());
                    if (it != gen->end()) return t_gen(it->second, p->is_rank);
                }
                return p;
            }
            case TypeKind::Array: return t_array(zonk(p->args[0], gen), zonk(p->args[1], gen));
            case TypeKind::Tuple: {
                std::vector<Type> e;
                for (const auto& a : p->args) e.push_back(zonk(a, gen));
                return t_tuple(e);
            }
            case TypeKind::Func: return t_func(zonk(p->args[0], gen), zonk(p->args[1], gen));
            default: return p;
        }
    }

    void zonk_tree(const ExprPtr& e, const std::unordered_map<const TypeNode*, int>* gen) {
        if (!e) return;
        if (e->type) e->type = zonk(e->type, gen);
        for (auto& t : e->instance) t = zonk(t, gen);
        for (const auto& p : e->params) zonk_pattern(p, gen);
        if (e->pattern) zonk_pattern(e->pattern, gen);
        if (e->kind == ExprKind::Unary && e->text == "negate" && e->kids[0]->kind == ExprKind::IntLit)
            negated_literals_.insert(e->kids[0].get());
        for (const auto& k : e->kids) zonk_tree(k, gen);
        for (const auto& ix : e->indices) {
            zonk_tree(ix.index, gen);
            zonk_tree(ix.lo, gen);
            zonk_tree(ix.hi, gen);
            zonk_tree(ix.step, gen);
        }
        if (!gen) {
            check_array_elements(e);
            if (e->kind == ExprKind::IntLit) check_int_literal(e, negated_literals_.count(e.get()) > 0);
        }
        // A float literal's type may be fixed even in a generalised function (`\(x : float) -> x + 1e39`).
        if (e->kind == ExprKind::FloatLit) check_float_literal(e);
    }

    // Arrays hold scalars (an array of tuples is a tuple of arrays); a
    // builtin like `fill 2 [1, 2]` would otherwise build an array of arrays.
    void check_array_elements(const ExprPtr& e) {
        std::function<void(const Type&)> walk = [&](const Type& t) {
            Type p = prune(t);
            if (p->kind == TypeKind::Array) {
                Type elem = prune(p->args[1]);
                if (elem->kind == TypeKind::Array || elem->kind == TypeKind::Func || elem->kind == TypeKind::String ||
                    elem->kind == TypeKind::Unit)
                    user_error(ErrorKind::Type, e->loc,
                               "an array cannot hold " + describe(elem) +
                                   " elements; arrays hold numbers and bools (for more dimensions use [[a]], "
                                   "[[[a]]])");
            }
            for (const auto& a : p->args) walk(a);
        };
        walk(e->type);
    }
    void zonk_pattern(const PatternPtr& p, const std::unordered_map<const TypeNode*, int>* gen) {
        if (p->type) p->type = zonk(p->type, gen);
        for (const auto& q : p->elems) zonk_pattern(q, gen);
    }

    // `negated`: the literal is the operand of a unary minus, so -2147483648 fits.
    static void check_int_literal(const ExprPtr& e, bool negated) {
        Type t = prune(e->type);
        if (t->kind != TypeKind::Prim) return;
        bool fits = true;
        if (t->prim == Prim::Int) fits = e->int_value <= static_cast<int64_t>(INT32_MAX) + (negated ? 1 : 0);
        if (!fits)
            user_error(ErrorKind::Type, e->loc, "integer literal " + e->text + " does not fit in int",
                       {"write `(" + e->text + " : long)` for a 64-bit integer"});
    }

    // 1e39 is a double but no float: as a float it would silently be inf.
    static void check_float_literal(const ExprPtr& e) {
        Type t = prune(e->type);
        if (t->kind == TypeKind::Prim && t->prim == Prim::Float && std::isinf(float_literal_value32(*e)))
            user_error(ErrorKind::Type, e->loc, "decimal literal " + e->text + " does not fit in float",
                       {"write `(" + e->text + " : double)` for a 64-bit float"});
    }

    // Finishes an expression statement or value binding: default and resolve.
    void finish_monomorphic(const ExprPtr& e, const PatternPtr& pattern) {
        solve_with_defaults();
        std::vector<Type> roots;
        collect_types(e, roots);
        if (pattern) collect_pattern(pattern, roots);
        default_variables(roots, e->loc);
        zonk_tree(e, nullptr);
        if (pattern) zonk_pattern(pattern, nullptr);
    }

    // Finishes a function definition: every free variable is quantified.
    SchemePtr finish_generalised(const ExprPtr& e, const Type& type) {
        solve();
        // `x[i]` in a function says how many dimensions x has: default its
        // rank now so the function reads [a] -> a rather than rank-polymorphic.
        for (size_t i = 0; i < pending_.size();) {
            if (pending_[i].kind == Constraint::Kind::IndexResult) {
                Constraint c = pending_[i];
                pending_.erase(pending_.begin() + static_cast<long>(i));
                try_solve(c, true);
                solve();
                i = 0;
            } else {
                ++i;
            }
        }
        std::vector<Type> roots{type};
        collect_types(e, roots);
        for (const auto& c : pending_)
            for (const auto& t : c.types) roots.push_back(t);
        std::vector<Type> vars;
        std::set<const TypeNode*> seen;
        for (const auto& t : roots) free_vars(t, vars, seen);
        std::unordered_map<const TypeNode*, int> gen;
        auto scheme = std::make_shared<Scheme>();
        for (const auto& v : vars) {
            gen[v.get()] = static_cast<int>(scheme->vars.size());
            auto tmpl = t_var(static_cast<int>(scheme->vars.size()), v->classes);
            tmpl->scalar_only = v->scalar_only;
            tmpl->is_rank = v->is_rank;
            tmpl->literal = v->literal;
            scheme->vars.push_back(tmpl);
        }
        scheme->type = zonk(type, &gen);
        for (const auto& c : pending_) {
            Constraint k = c;
            for (auto& t : k.types) t = zonk(t, &gen);
            k.arg_locs.clear();
            scheme->constraints.push_back(std::move(k));
        }
        pending_.clear();
        zonk_tree(e, &gen);
        return scheme;
    }

    const TypeEnvironment& env_;
    int next_id_ = 0;
    std::vector<std::pair<std::string, Type>> locals_;
    std::vector<Constraint> pending_;
    std::map<std::string, Type> annotation_vars_;
    std::set<const Expr*> negated_literals_;  // checked with their minus sign
    int64_t zonked_nodes_ = 0;
};

// ---------------------------------------------------------------- printing schemes
std::string class_name(unsigned classes) {
    if (classes & ClassFloating) return "Floating";
    if (classes & ClassIntegral) return "Integral";
    if (classes & ClassNum) return "Num";
    if (classes & ClassOrd) return "Ord";
    if (classes & ClassNumOrBool) return "NumOrBool";
    if (classes & ClassEq) return "Eq";
    return "";
}

}  // namespace

// The instance of a scheme a user would think of (see scheme_to_string),
// with its free variables in `vars`; `settled` is false for a scheme only
// some instances satisfy, `lifts` true for one also elementwise over arrays.
struct DisplayInstance {
    Type type;
    std::vector<Type> vars;
    bool settled = true, lifts = false, broadcasts = false;
};

DisplayInstance display_instance(const Scheme& s) {
    static const TypeEnvironment no_globals;
    Checker c(no_globals);
    DisplayInstance d;
    d.type = c.instantiate(s, Loc{}, "", nullptr);
    try {
        c.settle_for_display(d.lifts, d.broadcasts);
    } catch (const Error&) {
        d.settled = false;
    } catch (const Mismatch&) {  // a constraint no instance satisfies (found by fuzz_typecheck)
        d.settled = false;
    }
    std::set<const TypeNode*> seen;
    Checker::free_vars(d.type, d.vars, seen);
    return d;
}

std::vector<Type> example_instances(const Scheme& s) {
    DisplayInstance d = display_instance(s);
    if (!d.settled) return {};
    Type t = d.type;
    const bool lifts = d.lifts;
    for (const auto& v : d.vars) {
        if (v->bound) continue;
        // Ranks read as 1; element types default as literals do (int for
        // integral classes, float otherwise).
        v->bound = v->is_rank ? t_rank(1) : t_prim((v->classes & ClassIntegral) ? Prim::Int : Prim::Float);
    }
    t = prune(t);
    if (!lifts) return {t};
    // Elementwise over arrays: the parameters may be arrays too. The first
    // scalar and the rest arrays (saxpy's a x y), then all arrays.
    std::vector<Type> params;
    Type r = t;
    for (; is_func(r); r = func_result(r)) params.push_back(func_param(r));
    auto arrays_from = [&](size_t first) {
        std::vector<Type> ps;
        for (size_t k = 0; k < params.size(); ++k)
            ps.push_back(k >= first && is_prim(params[k]) ? t_array(1, params[k]) : params[k]);
        return t_func(ps, is_prim(r) ? t_array(1, r) : r);
    };
    std::vector<Type> out;
    if (params.size() > 1) out.push_back(arrays_from(1));
    out.push_back(arrays_from(0));
    return out;
}

std::string scheme_to_string(const Scheme& s) {
    // A scheme's constraints are precise but unreadable, so show the instance
    // a user would think of: unknown ranks are 1, an operand combined with an
    // array is an array of the same rank, other elementwise operands are
    // scalars -- and say when the function also lifts over arrays.
    // A scheme that only some instances satisfy shows its raw form.
    DisplayInstance d = display_instance(s);
    const Type t = d.type;
    const bool lifts = d.lifts;
    const std::vector<Type>& vars = d.vars;
    for (const auto& v : vars)
        if (v->is_rank && !v->bound) v->bound = t_rank(1);  // rank-polymorphic reads as rank 1
    std::vector<Type> all{t};
    std::vector<std::string> classes;
    for (const auto& v : vars) {
        std::string cls = class_name(v->classes & ~ClassNoDefault);
        if (cls.empty()) continue;
        all.push_back(v);
        classes.push_back(cls);
    }
    std::vector<std::string> printed = types_to_strings(all);
    std::string context;
    for (size_t i = 0; i < classes.size(); ++i)
        context += (i ? ", " : "") + classes[i] + " " + printed[i + 1];
    if (classes.size() > 1) context = "(" + context + ")";
    std::string out = (context.empty() ? "" : context + " => ") + printed[0];
    if (lifts) out += "  (also elementwise over arrays)";
    else if (d.broadcasts) out += "  (a scalar also fits where an array combines elementwise)";
    return out;
}



namespace {

// Builtins whose result is not a function of their arguments alone.
bool effectful_builtin(const std::string& name) {
    static const std::set<std::string> names = {"random", "load", "save", "loadCsv", "loadCsv1", "saveCsv"};
    return names.count(name) > 0;
}

// Whether f holds for some direct subexpression of e (children, index parts).
bool any_subexpression(const Expr& e, const std::function<bool(const ExprPtr&)>& f) {
    for (const auto& k : e.kids)
        if (k && f(k)) return true;
    for (const auto& ix : e.indices)
        for (const ExprPtr* part : {&ix.index, &ix.lo, &ix.hi, &ix.step})
            if (*part && f(*part)) return true;
    return false;
}

// Does evaluating e (or calling what it gives) draw random numbers or do
// file I/O? Conservative: a local named like an effectful builtin counts.
bool has_effects(const ExprPtr& e, const TypeEnvironment& env) {
    if (e->kind == ExprKind::Var) {
        auto g = env.globals.find(e->text);
        return g != env.globals.end() ? g->second->effects : effectful_builtin(e->text);
    }
    return any_subexpression(*e, [&](const ExprPtr& k) { return has_effects(k, env); });
}

// Every variable name e mentions (for parameter names that capture none).
void mentioned_names(const ExprPtr& e, std::set<std::string>& out) {
    if (e->kind == ExprKind::Var) out.insert(e->text);
    any_subexpression(*e, [&](const ExprPtr& k) {
        mentioned_names(k, out);
        return false;
    });
}

// Whether e, an application of a global or builtin to all the parameters its
// scheme shows, certainly gives no function (so eta_expansion need not check
// it twice: every `let x = f a b` statement was type checked twice).
bool applies_fully(const ExprPtr& e, const TypeEnvironment& env) {
    int args = 0;
    const Expr* head = e.get();
    for (; head->kind == ExprKind::App; head = head->kids[0].get()) ++args;
    if (head->kind != ExprKind::Var || args == 0) return false;
    SchemePtr scheme;
    bool builtin = false;
    if (auto g = env.globals.find(head->text); g != env.globals.end()) scheme = g->second;
    else if (auto b = builtin_schemes().find(head->text); b != builtin_schemes().end()) scheme = b->second, builtin = true;
    if (!scheme) return false;
    Type t = prune(scheme->type);
    for (int k = 0; k < args; ++k) {
        if (t->kind != TypeKind::Func) return false;
        t = prune(t->args[1]);
    }
    // A builtin given all its parameters gives data (arrays hold no
    // functions; iterate's state could be one). Else only a result whose
    // shape is known: a type variable could be a function.
    if (builtin && t->kind != TypeKind::Func) return head->text != "iterate";
    return t->kind == TypeKind::Prim || t->kind == TypeKind::Array || t->kind == TypeKind::Tuple ||
           t->kind == TypeKind::String || t->kind == TypeKind::Unit;
}

// `\p1 .. pk -> e p1 .. pk` for an application (or a global function's
// name) e that still takes k >= 1 parameters and has no effects; else null.
ExprPtr eta_expansion(const ExprPtr& e, const TypeEnvironment& env) {
    if ((e->kind != ExprKind::App && e->kind != ExprKind::Var) || applies_fully(e, env) || has_effects(e, env))
        return nullptr;
    int arity = 0;
    try {
        Checker trial(env);
        Type t = prune(trial.infer(clone_expr(e)));
        while (t->kind == TypeKind::Func) ++arity, t = prune(t->args[1]);
    } catch (const Error&) {
        return nullptr;  // the real check reports it
    }
    if (arity == 0) return nullptr;
    std::set<std::string> taken;
    mentioned_names(e, taken);
    auto lambda = make_expr(ExprKind::Lambda, e->loc);
    ExprPtr body = std::make_shared<Expr>(*e);
    for (int k = 1, suffix = 1; k <= arity; ++k) {
        std::string name;
        do name = "arg" + std::to_string(suffix++);
        while (taken.count(name));
        auto p = make_pattern(PatternKind::Var, e->loc);
        p->name = name;
        lambda->params.push_back(p);
        auto v = make_expr(ExprKind::Var, e->loc);
        v->text = name;
        auto app = make_expr(ExprKind::App, e->loc);
        app->kids = {body, v};
        body = app;
    }
    lambda->kids = {body};
    return lambda;
}

SchemePtr with_effects(SchemePtr s, bool effects) {
    if (!effects) return s;
    auto m = std::make_shared<Scheme>(*s);
    m->effects = true;
    return m;
}

}  // namespace

SchemePtr check_expression_scheme(const ExprPtr& e, const TypeEnvironment& env) {
    // A lambda or section (`:type (+ 1)`) is shown as `let f = (+ 1)` would bind it.
    ExprPtr lambda = e->kind == ExprKind::Lambda ? e : eta_expansion(e, env);
    if (lambda) {
        Checker c(env);
        Type t = c.infer(lambda);
        return c.finish_generalised(lambda, t);
    }
    auto s = std::make_shared<Scheme>();
    s->type = check_expression(e, env);
    return s;
}

Type check_expression(const ExprPtr& e, const TypeEnvironment& env) {
    Checker c(env);
    c.infer(e);
    c.finish_monomorphic(e, nullptr);
    return e->type;
}

std::vector<std::pair<std::string, SchemePtr>> check_let(const Stmt& s, const TypeEnvironment& env) {
    if (s.pattern->kind == PatternKind::Var)
        if (ExprPtr lambda = eta_expansion(s.expr, env)) *s.expr = std::move(*lambda);
    Checker c(env);
    std::vector<std::pair<std::string, SchemePtr>> out;
    const bool is_function = s.pattern->kind == PatternKind::Var && s.expr->kind == ExprKind::Lambda;
    const bool effects = has_effects(s.expr, env);
    c.define(s.pattern, s.expr);
    Type t = c.infer(s.expr);
    c.defining_.clear();
    if (is_function) {
        if (s.pattern->annotation) c.expect(t, c.resolve_annotation(s.pattern->annotation), s.pattern->loc,
                                            "type annotation");
        s.pattern->type = t;
        out.emplace_back(s.pattern->name, with_effects(c.finish_generalised(s.expr, t), effects));
        return out;
    }
    c.bind_pattern(s.pattern, t);
    c.finish_monomorphic(s.expr, s.pattern);
    std::function<void(const PatternPtr&)> collect = [&](const PatternPtr& p) {
        if (p->kind == PatternKind::Var) {
            auto scheme = std::make_shared<Scheme>();
            scheme->type = p->type;
            scheme->effects = effects && prune(p->type)->kind == TypeKind::Func;
            out.emplace_back(p->name, scheme);
        }
        for (const auto& q : p->elems) collect(q);
    };
    collect(s.pattern);
    return out;
}

}  // namespace shoal
