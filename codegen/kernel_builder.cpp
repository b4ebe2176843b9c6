#include "codegen/kernel_builder.h"

#include "codegen/ir_visitor.h"

#include "lang/diagnostics.h"

namespace shoal::ir {

KernelBuilder::KernelBuilder(std::string name, int block_size) {
    kernel_.name = std::move(name);
    kernel_.block_size = block_size;
    blocks_.emplace_back();
    open_.emplace_back();
}

// Declaring a parameter twice with the same kind and type is allowed: pull
// arrays declare the inputs they read in whichever kernel reads them.
std::string KernelBuilder::scalar_param(const std::string& name, ScalarType t) {
    for (const auto& p : kernel_.params)
        if (p.name == name) {
            SHOAL_INTERNAL_ASSERT(p.kind == ParamKind::Scalar && p.type == t, "parameter " + name + " redeclared");
            return name;
        }
    kernel_.params.push_back(Param{name, ParamKind::Scalar, t, Access::Read});
    return name;
}

std::string KernelBuilder::buffer_param(const std::string& name, ScalarType elem, Access access) {
    for (auto& p : kernel_.params)
        if (p.name == name) {
            SHOAL_INTERNAL_ASSERT(p.kind == ParamKind::Buffer && p.type == elem, "parameter " + name + " redeclared");
            if (p.access != access) p.access = Access::ReadWrite;
            return name;
        }
    kernel_.params.push_back(Param{name, ParamKind::Buffer, elem, access});
    return name;
}

std::string KernelBuilder::shared_array(const std::string& name, ScalarType t, int64_t size) {
    kernel_.shared.push_back(SharedArray{name, t, size});
    return name;
}

int KernelBuilder::add_check(const std::string& message, const Loc& loc) {
    kernel_.checks.push_back(Check{message, loc});
    return static_cast<int>(kernel_.checks.size()) - 1;
}

std::string KernelBuilder::fresh(const std::string& prefix) {
    // Skip names already taken by parameters or shared arrays (declared lazily by pull arrays).
    auto taken = [&](const std::string& name) {
        for (const auto& p : kernel_.params)
            if (p.name == name) return true;
        for (const auto& a : kernel_.shared)
            if (a.name == name) return true;
        return false;
    };
    for (;;) {
        int n = counters_[prefix]++;
        std::string name = n == 0 ? prefix : prefix + std::to_string(n);
        if (!taken(name)) {
            local_names_.insert(name);
            return name;
        }
    }
}

void KernelBuilder::emit(StmtPtr s) { open_.back().push_back(std::move(s)); }

ExprPtr KernelBuilder::bind(const std::string& prefix, ExprPtr value) {
    std::string name = fresh(prefix);
    ScalarType t = value->type;
    emit(let(name, std::move(value)));
    return var(name, t);
}

std::string KernelBuilder::extent_class(const std::string& name) const {
    std::string at = name;
    for (auto it = same_extent_.find(at); it != same_extent_.end(); it = same_extent_.find(at)) at = it->second;
    return at;
}

// The same variable, parameter (or one known equal) or constant: index
// variables and extents are these.
bool KernelBuilder::same_leaf(const ExprPtr& a, const ExprPtr& b) const {
    if (a == b) return true;
    if (a->kind != b->kind || a->type != b->type) return false;
    if (a->kind == ExprKind::Var) return a->name == b->name;
    if (a->kind == ExprKind::Param) return a->name == b->name || extent_class(a->name) == extent_class(b->name);
    return a->kind == ExprKind::Const && a->i == b->i && a->f == b->f;
}

void KernelBuilder::note_same_extents(const std::vector<ExprPtr>& a, const std::vector<ExprPtr>& b) {
    for (size_t k = 0; k < a.size() && k < b.size(); ++k)
        if (a[k]->kind == ExprKind::Param && b[k]->kind == ExprKind::Param) {
            const std::string x = extent_class(a[k]->name), y = extent_class(b[k]->name);
            if (x != y) same_extent_[x] = y;
        }
}

void KernelBuilder::note_unflattened(std::vector<ExprPtr> index, std::vector<ExprPtr> shape, ExprPtr flat) {
    if (index.size() >= 2) unflattened_.push_back(Unflattened{std::move(index), std::move(shape), std::move(flat)});
}

ExprPtr KernelBuilder::flat_of(const std::vector<ExprPtr>& index, const std::vector<ExprPtr>& shape) const {
    for (const Unflattened& u : unflattened_) {
        if (u.index.size() != index.size() || u.shape.size() != shape.size()) continue;
        bool same = true;
        for (size_t k = 0; k < index.size() && same; ++k)
            same = same_leaf(u.index[k], index[k]) && (k == 0 || same_leaf(u.shape[k], shape[k]));
        if (same) return u.flat;
    }
    return nullptr;
}

void KernelBuilder::open() { open_.emplace_back(); }

std::vector<StmtPtr> KernelBuilder::close() {
    SHOAL_INTERNAL_ASSERT(open_.size() > 1, "KernelBuilder::close without open");
    auto body = std::move(open_.back());
    open_.pop_back();
    return body;
}

void KernelBuilder::end_phase() {
    SHOAL_INTERNAL_ASSERT(open_.size() == 1, "end_phase inside an open statement");
    if (!open_.back().empty()) blocks_.back().push_back(phase(seq(std::move(open_.back()))));
    open_.back().clear();
}

void KernelBuilder::block_loop(const std::string& v, ExprPtr lo, ExprPtr hi, ExprPtr step,
                               const std::function<void()>& body) {
    end_phase();
    blocks_.emplace_back();
    body();
    end_phase();
    auto inner = std::move(blocks_.back());
    blocks_.pop_back();
    blocks_.back().push_back(block_for(v, std::move(lo), std::move(hi), std::move(step), std::move(inner)));
}

namespace {

// Renames local variables (Let/Assign/For/Atomic results, BlockFor variables
// and the Vars reading them); parameters are Param nodes and stay.
class RenameLocals : public IRMutator {
public:
    explicit RenameLocals(std::map<std::string, std::string> to) : to_(std::move(to)) {}

    ExprPtr mutate(const ExprPtr& e) override {
        ExprPtr r = IRMutator::mutate(e);
        if (r->kind != ExprKind::Var || !to_.count(r->name)) return r;
        auto c = std::make_shared<Expr>(*r);
        c->name = to_.at(r->name);
        return c;
    }
    StmtPtr mutate(const StmtPtr& s) override {
        StmtPtr r = IRMutator::mutate(s);
        const bool names_var = r && (r->kind == StmtKind::Let || r->kind == StmtKind::Assign || r->kind == StmtKind::For);
        const bool renamed = (names_var && to_.count(r->name)) || (r && to_.count(r->result));
        if (!renamed) return r;
        auto c = std::make_shared<Stmt>(*r);
        if (names_var && to_.count(c->name)) c->name = to_.at(c->name);
        if (to_.count(c->result)) c->result = to_.at(c->result);
        return c;
    }
    BlockStmtPtr mutate(const BlockStmtPtr& b) override {
        BlockStmtPtr r = IRMutator::mutate(b);
        if (!r || r->kind != BlockStmtKind::BlockFor || !to_.count(r->var)) return r;
        auto c = std::make_shared<BlockStmt>(*r);
        c->var = to_.at(c->var);
        return c;
    }

private:
    std::map<std::string, std::string> to_;
};

}  // namespace

Kernel KernelBuilder::finish(bool verify_it) {
    end_phase();
    SHOAL_INTERNAL_ASSERT(blocks_.size() == 1, "KernelBuilder::finish inside a block loop");
    kernel_.body = blocks_.back();
    // A parameter declared lazily (a lifted literal, an extent: pull arrays
    // declare what they read as they are built) may take a name fresh()
    // already gave a local variable. The locals give way.
    std::map<std::string, std::string> clashes;
    for (const Param& p : kernel_.params)
        if (local_names_.count(p.name)) clashes[p.name] = fresh(p.name + "_");
    if (!clashes.empty()) kernel_ = RenameLocals(std::move(clashes)).mutate_kernel(kernel_);
    if (verify_it) verify(kernel_);
    return std::move(kernel_);  // the builder is spent: every plan's probe builds one
}

bool element_code_checks(const PullArray& arr, const KernelBuilder* also_watch) {
    KernelBuilder probe("probe");
    const size_t watched = also_watch ? also_watch->kernel().checks.size() : 0;
    arr.at(probe, std::vector<ExprPtr>(arr.shape.size(), const_int(0)));
    return !probe.kernel().checks.empty() || (also_watch && also_watch->kernel().checks.size() != watched);
}

}  // namespace shoal::ir
