// Kernel-code helpers the producers and consumers share: kernel variables
// and guarded assignments, a user's combining function as a monoid, the
// seeding of folds and scans with their start value, flat indices and
// Philox random numbers.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "codegen/array_graph.h"

namespace shoal::compiled {

// The user's combining function f (of type et -> et -> et) applied in kernel code.
struct UserOp {
    FuseContext* fc;
    Value f;
    Type et;
    std::vector<ir::ExprPtr> operator()(ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& a,
                                        const std::vector<ir::ExprPtr>& b) const {
        std::vector<ir::ExprPtr> args = a;
        args.insert(args.end(), b.begin(), b.end());
        return compiled::compile_call(*fc, kb, f, args, {et, et});
    }
};

// The scans' and folds' seed z is usually not the operator's neutral element
// (`scan max 0`), while the lowerings start from the neutral element; these
// index maps fold z into the input instead, so any z costs one operation per
// element. `with_valid` prepends the optional monoid's flag (always true: a
// real element) for user functions; operator sections need none.
using SeedStep = std::function<std::vector<ir::ExprPtr>(ir::KernelBuilder&, const std::vector<ir::ExprPtr>& z,
                                                        const std::vector<ir::ExprPtr>& x)>;

// Mutable kernel variables initialised to values.
std::vector<ir::ExprPtr> variables(ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& values);

// if (cond) vars = body(): an If, never a Select, so that a user function
// runs only where the reference evaluator would run it (it may raise errors).
void assign_if(ir::KernelBuilder& kb, const ir::ExprPtr& cond, const std::vector<ir::ExprPtr>& vars,
               const std::function<std::vector<ir::ExprPtr>()>& body);

// Any associative user function as a monoid: the carrier (valid, value...)
// with the neutral element (false, ...), since the lowerings pad and seed with
// a neutral element and a user function has no known one:
//   (va, a) + (vb, b) = va && vb ? (true, f a b) : va ? (true, a) : (vb, b).
ir::Combine optional_combine(const UserOp& f, const std::vector<ir::ScalarType>& types);

// The start values as lifted kernel parameters (their addresses key them).
std::vector<ir::ExprPtr> lift_all(FuseContext& fc, ir::KernelBuilder& kb, const std::vector<Scalar>& zs);

// Whether multi-index i is the first element of its row.
std::vector<ir::ExprPtr> column_zero(const std::vector<ir::ExprPtr>& i);

// The shape and element types of a seeded input (the flag first with_valid).
ir::PullTuple seed_input_tuple(const std::vector<PullArray>& xs, bool with_valid);

// x, except at the starts (`is_start`: each row's first element, or a
// segment head) where it is step z x.
ir::PullTuple folded_input(FuseContext& fc, SeedStep step, std::shared_ptr<const std::vector<Scalar>> zs,
                           const std::vector<PullArray>& xs,
                           std::function<ir::ExprPtr(ir::KernelBuilder&, const std::vector<ir::ExprPtr>&)> is_start,
                           bool with_valid);

// The input of an exclusive scan from z: each row shifted right by one with z
// in front, so that its inclusive scan is the exclusive scan. An If, not a
// Select: column -1 must never be read (an index map there may raise an error).
ir::PullTuple shifted_input(FuseContext& fc, std::shared_ptr<const std::vector<Scalar>> zs,
                            const std::vector<PullArray>& xs, bool with_valid);

// The row-major flat index of multi-index i in shape.
ir::ExprPtr linear_index(ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i, const std::vector<ir::ExprPtr>& shape);

// Philox-4x32-10 in kernel code, bit for bit lang/random.cpp: element i of
// the stream is random_uniform(seed, stream, i).
ir::ExprPtr philox_uniform(ir::KernelBuilder& kb, const ir::ExprPtr& seed, const ir::ExprPtr& stream,
                           const ir::ExprPtr& index);

}  // namespace shoal::compiled
