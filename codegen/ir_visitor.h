// Walking the kernel IR. IRVisitor visits every node and recurses into
// children by default; IRMutator rebuilds a tree, sharing every subtree it
// did not change. A pass overrides only the nodes it cares about (Halide's
// IRVisitor / IRMutator). A mutator deletes a statement or block statement by
// returning null from mutate(); the lists holding it drop it.
#pragma once
#include <set>
#include <string>

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
    // A statement list (If/For/While/Seq bodies, a phase's top level): the
    // default mutates each statement in order. Passes that insert statements
    // before others, or track what a list has declared so far, override it.
    virtual std::vector<StmtPtr> mutate_body(const std::vector<StmtPtr>& body, bool& changed);
};

// ---------------------------------------------------------------- queries passes share
// Whether e contains a warp shuffle: a collective that every lane of the warp
// must reach together, so passes never remove, duplicate or move one.
bool contains_shuffle(const ExprPtr& e);
// Variables whose value changes after their declaration: Assign targets and
// Atomic results. Every other variable is immutable, so its name stands for
// its Let's value wherever it is visible.
std::set<std::string> assigned_variables(const Kernel& k);
// Every name the kernel declares or uses (parameters, shared arrays,
// variables, loop variables): what a pass's fresh names must avoid.
std::set<std::string> names_in(const Kernel& k);

}  // namespace shoal::ir
