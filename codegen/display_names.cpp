#include "codegen/display_names.h"

#include <cctype>
#include <set>

#include "codegen/ir_visitor.h"

namespace shoal::ir {

namespace {

// Renames parameters and global buffers (the names the plan binds).
class RenameParams : public IRMutator {
public:
    explicit RenameParams(const std::map<std::string, std::string>& to) : to_(to) {}

    ExprPtr mutate(const ExprPtr& e) override {
        ExprPtr m = IRMutator::mutate(e);
        const bool bound = m->kind == ExprKind::Param || (m->kind == ExprKind::Load && m->space == MemSpace::Global);
        auto it = bound ? to_.find(m->name) : to_.end();
        if (it == to_.end()) return m;
        auto r = std::make_shared<Expr>(*m);
        r->name = it->second;
        return r;
    }

    StmtPtr mutate(const StmtPtr& s) override {
        StmtPtr m = IRMutator::mutate(s);
        const bool memory = m && (m->kind == StmtKind::Store || m->kind == StmtKind::Atomic) && m->space == MemSpace::Global;
        auto it = memory ? to_.find(m->name) : to_.end();
        if (it == to_.end()) return m;
        auto r = std::make_shared<Stmt>(*m);
        r->name = it->second;
        return r;
    }

private:
    const std::map<std::string, std::string>& to_;
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

    LaunchPlan out = plan;
    RenameParams rename(to);
    out.name = f.empty() ? plan.name : f;
    for (Kernel& k : out.kernels) {
        k = rename.mutate_kernel(k);
        for (Param& p : k.params) p.name = renamed(p.name, to);
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
    }
    return out;
}

}  // namespace shoal::ir
