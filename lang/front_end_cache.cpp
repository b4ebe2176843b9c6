#include "lang/front_end_cache.h"

namespace shoal {

namespace {

// Moves the locations of one statement from `from` to `to` (same text):
// every line shifts by the same amount, and columns only on its first line.
struct Relocation {
    const Loc& from;
    const Loc& to;

    void loc(Loc& l) const {
        if (!l.valid()) return;
        if (l.line == from.line) l.col += to.col - from.col;
        l.line += to.line - from.line;
        l.source = to.source;
    }
    void pattern(const PatternPtr& p) const {
        if (!p) return;
        loc(p->loc);
        for (const PatternPtr& e : p->elems) pattern(e);
    }
    void expr(const ExprPtr& e) const {
        if (!e) return;
        loc(e->loc);
        loc(e->counter_loc);
        pattern(e->pattern);
        for (const PatternPtr& p : e->params) pattern(p);
        for (const ExprPtr& k : e->kids) expr(k);
        for (IndexArg& ix : e->indices) {
            loc(ix.loc);
            expr(ix.index);
            expr(ix.lo);
            expr(ix.hi);
            expr(ix.step);
        }
    }
};

}  // namespace

bool FrontEndCache::keepable(const Type& t) { return !t || (is_concrete(t) && !mentions_function(t)); }

namespace {

bool same_scheme(const Scheme& a, const Scheme& b) {
    return &a == &b || (a.effects == b.effects && scheme_to_string(a) == scheme_to_string(b));
}

}  // namespace

std::shared_ptr<const CheckedStatement> FrontEndCache::find(const std::string& text, const Loc& at, const Resolve& resolve) {
    Entry* found = entries_.find(text);
    if (!found) return nullptr;
    Entry& e = *found;
    bool repin = false;
    for (const Read& r : e.reads) {
        const BindingPtr now = resolve(r.name).first;
        const bool same = !r.scheme ? now == nullptr
                                    : now && (now == r.binding.lock() || same_scheme(*now->scheme, *r.scheme));
        if (!same) {
            entries_.erase(text);
            return nullptr;
        }
        repin = repin || (r.scheme && now != r.binding.lock());
    }
    if (repin) {  // a name rebound to a value of the same type: read the new binding
        e.checked->used.clear();
        for (Read& r : e.reads) {
            if (!r.scheme) continue;
            auto [now, key] = resolve(r.name);
            for (Expr* v : r.vars) v->text = key;
            r.binding = now;
            e.checked->used.insert(key);
        }
    }
    if (e.at.source != at.source || e.at.line != at.line || e.at.col != at.col) {
        const Relocation move{e.at, at};
        move.loc(e.checked->stmt->loc);
        move.pattern(e.checked->stmt->pattern);
        move.expr(e.checked->stmt->expr);
        e.at = at;
    }
    ++reuses_;
    return e.checked;
}

void FrontEndCache::store(std::string text, const Loc& at, std::shared_ptr<CheckedStatement> checked,
                          std::vector<Read> reads) {
    entries_.insert(text, Entry{std::move(checked), std::move(reads), at});
}

}  // namespace shoal
