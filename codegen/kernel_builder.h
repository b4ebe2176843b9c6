// Building kernels: the interface between fusion (which describes arrays as
// pull arrays: a shape and a function from an index to the element, emitting
// IR) and the lowering of each primitive (which decides threads, blocks,
// phases and shared memory).
//
// A PullArray never allocates: reading element i emits the code that
// computes it, in the kernel being built (Barracuda's guaranteed fusion,
// Obsidian's pull arrays).
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/ir.h"
#include "codegen/shared_function.h"

namespace shoal::ir {

class KernelBuilder {
public:
    explicit KernelBuilder(std::string name, int block_size = 256);

    // Declares a parameter and returns its name; declaring the same name
    // again with the same kind and type is a no-op (a buffer read and written becomes ReadWrite).
    std::string scalar_param(const std::string& name, ScalarType t);
    std::string buffer_param(const std::string& name, ScalarType elem, Access access);
    std::string shared_array(const std::string& name, ScalarType t, int64_t size);
    int add_check(const std::string& message, const Loc& loc);

    // A fresh variable name with the given prefix ("i", "acc", "x3", ...).
    std::string fresh(const std::string& prefix);

    // Statements go to the innermost open statement list.
    void emit(StmtPtr s);
    // let name = value; returns Var(name). Use for sharing a value (Barracuda's slet).
    ExprPtr bind(const std::string& prefix, ExprPtr value);

    // Opens a nested statement list (the body of an If/For/...); close() returns it.
    void open();
    std::vector<StmtPtr> close();

    // Ends the current phase (a barrier follows) and starts a new one.
    void end_phase();
    // Wraps the phases emitted by `body` in a uniform BlockFor.
    void block_loop(const std::string& v, ExprPtr lo, ExprPtr hi, ExprPtr step, const std::function<void()>& body);

    // unflatten's record (lower_elementwise.cpp): the multi-index it made of
    // the row-major position `flat`. Linearising that index again with the
    // same inner extents gives `flat` back (nonzero inner extents; with a
    // zero one the array has no element to read), so a read of a row-major
    // array at it (a buffer, a reshape) needs no division or product.
    void note_unflattened(std::vector<ExprPtr> index, std::vector<ExprPtr> shape, ExprPtr flat);
    // The position `index` was unflattened from with these extents, or null.
    ExprPtr flat_of(const std::vector<ExprPtr>& index, const std::vector<ExprPtr>& shape) const;
    // Extents known equal wherever this kernel reads them (the operands of
    // an elementwise operator, whose shapes the engine checked equal).
    void note_same_extents(const std::vector<ExprPtr>& a, const std::vector<ExprPtr>& b);

    const Kernel& kernel() const { return kernel_; }
    // Finishes the last phase, verifies and returns the kernel. Lowerings
    // pass verify = false: PlanBuilder::add_kernel verifies in the pass
    // pipeline, and a plan found in a kernel cache is not verified again.
    // The kernel is moved out: the builder is done with.
    Kernel finish(bool verify = true);

private:
    Kernel kernel_;
    std::map<std::string, int> counters_;
    std::set<std::string> local_names_;                // every name fresh() gave out
    std::vector<std::vector<StmtPtr>> open_;           // statement lists being built
    std::vector<std::vector<BlockStmtPtr>> blocks_;    // block-level lists being built
    struct Unflattened {
        std::vector<ExprPtr> index, shape;
        ExprPtr flat;
    };
    std::vector<Unflattened> unflattened_;
    std::map<std::string, std::string> same_extent_;  // parameter -> one known equal (a union-find forest)
    std::string extent_class(const std::string& name) const;
    bool same_leaf(const ExprPtr& a, const ExprPtr& b) const;
};

// A delayed array: its shape (outermost first, each an I64 expression over
// kernel parameters) and how to compute the element at a (multi-)index.
struct PullArray {
    std::vector<ExprPtr> shape;
    ScalarType elem = ScalarType::F32;
    SharedFunction<ExprPtr(KernelBuilder&, const std::vector<ExprPtr>& index)> at;

    int rank() const { return static_cast<int>(shape.size()); }
};

// Whether computing an element of `arr` can raise an error: its code, built
// once into a scratch builder, holds a check (a gather's bounds, an index).
// `also_watch`: a builder whose new checks count too (a nested function's
// element code is built into its kernel's builder, whatever it is given).
bool element_code_checks(const PullArray& arr, const KernelBuilder* also_watch = nullptr);

}  // namespace shoal::ir
