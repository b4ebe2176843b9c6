// Checked statements by their text. A REPL session runs the same statement
// again and again (a notebook cell re-run, `let w = w - 0.1 * grad w` typed
// again, a line recalled from history, `:time` in a benchmark); parsing and
// type checking it cost 10-60 us each time, more than a small statement's
// kernels. A statement that was checked before is reused when its text is
// the same and every name it reads has the same type scheme as then (the
// type checker looked at nothing else: the builtins are fixed, and a `load`
// whose type came from a file is never kept), still a binding where it was
// one and a builtin where it was one. A name rebound since (to a value of
// the same type) is pinned to its new binding. The statement's locations
// are moved to where it is now, so errors and warnings name the line being
// run.
//
// Only values that cannot hold the syntax tree are kept: a statement whose
// result holds a function (a closure keeps its lambda, whose locations a
// later reuse would move) or that binds a generic function is checked anew.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lru_map.h"
#include "lang/ast.h"
#include "lang/eval.h"
#include "lang/typecheck.h"

namespace shoal {

// A statement after the front end: parsed, type checked, its free names
// pinned to binding keys.
struct CheckedStatement {
    StmtPtr stmt;
    std::vector<std::pair<std::string, SchemePtr>> names;  // a let's bindings (check_let)
    Type type;                                               // an expression statement's type
    std::set<std::string> used;                              // the binding keys it reads
};

class FrontEndCache {
public:
    // What a name means now: its binding and that binding's key (null and
    // empty for a builtin).
    using Resolve = std::function<std::pair<BindingPtr, std::string>(const std::string& name)>;
    // A name the statement read: the scheme of the binding it meant (null:
    // a builtin) and the variables that name it, pinned to that binding's key.
    struct Read {
        std::string name;
        SchemePtr scheme;
        std::weak_ptr<Binding> binding;
        std::vector<Expr*> vars;
    };

    // The statement checked before from `text`, its locations moved to `at`
    // (where the text starts now), or null.
    std::shared_ptr<const CheckedStatement> find(const std::string& text, const Loc& at, const Resolve& resolve);
    // `checked` from `text` at `at`, which read `reads`.
    void store(std::string text, const Loc& at, std::shared_ptr<CheckedStatement> checked, std::vector<Read> reads);

    // True when a statement of this type can be kept (no function inside).
    static bool keepable(const Type& t);

    uint64_t reuses() const { return reuses_; }
    size_t size() const { return entries_.size(); }
    size_t capacity() const { return entries_.capacity(); }

private:
    struct Entry {
        std::shared_ptr<CheckedStatement> checked;
        std::vector<Read> reads;
        Loc at;  // where its locations point
    };
    // Bounded: a script of many distinct statements forgets the oldest.
    static constexpr size_t kEntries = 512;
    LruMap<std::string, Entry> entries_{kEntries};
    uint64_t reuses_ = 0;
};

}  // namespace shoal
