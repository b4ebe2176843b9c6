#include "codegen/display_names.h"

#include <cctype>
#include <set>

#include "codegen/ir_visitor.h"

namespace shoal::ir {

namespace {

// Renames parameters and global buffers (the names the plan binds), the
// shared tiles named after them (shared_tiles.h) and both in comments.
class RenameParams : public IRMutator {
public:
    RenameParams(const std::map<std::string, std::string>& to, const std::map<std::string, std::string>& shared)
        : to_(to), shared_(shared) {}

    ExprPtr mutate(const ExprPtr& e) override {
        ExprPtr m = IRMutator::mutate(e);
        const bool bound = m->kind == ExprKind::Param || m->kind == ExprKind::Load;
        const auto& names = m->kind == ExprKind::Load && m->space == MemSpace::Shared ? shared_ : to_;
        auto it = bound ? names.find(m->name) : names.end();
        if (it == names.end()) return m;
        auto r = std::make_shared<Expr>(*m);
        r->name = it->second;
        return r;
    }

    StmtPtr mutate(const StmtPtr& s) override {
        StmtPtr m = IRMutator::mutate(s);
        if (m && m->kind == StmtKind::Comment) {
            auto r = std::make_shared<Stmt>(*m);
            r->name = renamed_words(m->name);
            return r;
        }
        const bool memory = m && (m->kind == StmtKind::Store || m->kind == StmtKind::Atomic);
        const auto& names = memory && m->space == MemSpace::Shared ? shared_ : to_;
        auto it = memory ? names.find(m->name) : names.end();
        if (it == names.end()) return m;
        auto r = std::make_shared<Stmt>(*m);
        r->name = it->second;
        return r;
    }

    // A comment with every identifier the plan renames renamed.
    std::string renamed_words(const std::string& text) const {
        std::string out, word;
        auto flush = [&] {
            if (auto a = to_.find(word); a != to_.end()) out += a->second;
            else if (auto b = shared_.find(word); b != shared_.end()) out += b->second;
            else out += word;
            word.clear();
        };
        for (char c : text) {
            if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
                word += c;
                continue;
            }
            flush();
            out += c;
        }
        flush();
        return out;
    }

private:
    const std::map<std::string, std::string>& to_;
    const std::map<std::string, std::string>& shared_;
};

ExprPtr renamed(const ExprPtr& e, RenameParams& r) { return e ? r.mutate(e) : e; }
std::string renamed(const std::string& n, const std::map<std::string, std::string>& to) {
    auto it = to.find(n);
    return it == to.end() ? n : it->second;
}

// A C identifier for a user's name (Shoal names may contain primes).
std::string identifier(const std::string& wanted) {
    std::string s;
    for (char c : wanted) s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v_" + s;
    return s;
}

// `wanted` if it is free and valid, else wanted_1, wanted_2, ...
std::string unused(const std::string& wanted, std::set<std::string>& used) {
    std::string name = wanted;
    for (int k = 1; used.count(name) || !is_valid_name(name); ++k) name = wanted + "_" + std::to_string(k);
    used.insert(name);
    return name;
}

}  // namespace

std::string extent_name(const std::string& array, size_t rank, size_t axis) {
    return "len_" + array + (rank > 1 ? std::to_string(axis) : "");
}

LaunchPlan for_display(const LaunchPlan& plan, const DisplayNames& names) {
    std::set<std::string> used;
    for (const Kernel& k : plan.kernels) {
        const std::set<std::string> in_kernel = names_in(k);
        used.insert(in_kernel.begin(), in_kernel.end());
        used.insert(k.name);
    }
    for (const PlanScalar& s : plan.scalars) used.insert(s.name);
    for (const PlanBuffer& b : plan.buffers) used.insert(b.name);

    std::map<std::string, std::string> to;  // only the plan's own scalars and buffers are renamed
    for (const auto& [canonical, wanted] : names.wanted) {
        if (!plan.find_scalar(canonical) && !plan.find_buffer(canonical)) continue;
        used.erase(canonical);  // a name may keep itself
        to[canonical] = unused(identifier(wanted), used);
    }
    std::map<std::string, std::string> kernel_names;
    const std::string f = names.function.empty() ? "" : identifier(names.function);
    if (!f.empty()) {
        for (const Kernel& k : plan.kernels) {
            used.erase(k.name);
            kernel_names[k.name] = unused(k.name == "map" ? f : f + "_" + k.name, used);
        }
    }

    // Shared tiles are named after the buffer they hold (tile_in0: tile_x).
    std::map<std::string, std::string> shared_to;
    for (const Kernel& k : plan.kernels)
        for (const SharedArray& a : k.shared)
            if (a.name.rfind("tile_", 0) == 0)
                if (auto it = to.find(a.name.substr(5)); it != to.end() && !shared_to.count(a.name)) {
                    used.erase(a.name);
                    shared_to[a.name] = unused("tile_" + it->second, used);
                }

    LaunchPlan out = plan;
    RenameParams rename(to, shared_to);
    out.name = f.empty() ? plan.name : f;
    for (Kernel& k : out.kernels) {
        k = rename.mutate_kernel(k);
        for (Param& p : k.params) p.name = renamed(p.name, to);
        for (SharedArray& a : k.shared) a.name = renamed(a.name, shared_to);
        k.name = renamed(k.name, kernel_names);
        if (!names.source.empty()) k.comment = names.source;
    }
    for (PlanScalar& s : out.scalars) {
        s.name = renamed(s.name, to);
        s.value = renamed(s.value, rename);
    }
    for (PlanBuffer& b : out.buffers) {
        b.name = renamed(b.name, to);
        b.count = renamed(b.count, rename);
    }
    for (auto* list : {&out.entry.scalars, &out.entry.inputs, &out.entry.outputs})
        for (std::string& n : *list) n = renamed(n, to);
    for (PlanStep& s : out.steps) {
        s.scalar = renamed(s.scalar, to);
        s.buffer = renamed(s.buffer, to);
        s.grid = renamed(s.grid, rename);
        s.index = renamed(s.index, rename);
        for (ExprPtr& a : s.call.args) a = renamed(a, rename);
        for (auto* names : {&s.call.reads, &s.call.writes})
            for (std::string& b : *names) b = renamed(b, to);
    }
    return out;
}

}  // namespace shoal::ir
