// Walking the kernel IR. IRVisitor visits every node and recurses into
// children by default; IRMutator rebuilds a tree, sharing every subtree it
// did not change. A pass overrides only the nodes it cares about (Halide's
// IRVisitor / IRMutator).
#pragma once
#include "codegen/ir.h"

namespace shoal::ir {

class IRVisitor {
public:
    virtual ~IRVisitor() = default;
    virtual void visit(const ExprPtr& e);
    virtual void visit(const StmtPtr& s);
    virtual void visit(const BlockStmtPtr& b);
    void visit_kernel(const Kernel& k);
};

class IRMutator {
public:
    virtual ~IRMutator() = default;
    virtual ExprPtr mutate(const ExprPtr& e);
    virtual StmtPtr mutate(const StmtPtr& s);
    virtual BlockStmtPtr mutate(const BlockStmtPtr& b);
    Kernel mutate_kernel(const Kernel& k);

protected:
    std::vector<ExprPtr> mutate_all(const std::vector<ExprPtr>& es, bool& changed);
    std::vector<StmtPtr> mutate_all(const std::vector<StmtPtr>& ss, bool& changed);
    std::vector<BlockStmtPtr> mutate_all(const std::vector<BlockStmtPtr>& bs, bool& changed);
};

}  // namespace shoal::ir
