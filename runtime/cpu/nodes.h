// Factories of the executor's vector nodes (program.h), used by the compiler
// (compile.cpp). A factory returns a node with its operand registers set;
// the compiler sets `out` and `inputs` and owns the node.
#pragma once
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/cpu/program.h"

namespace shoal::cpu {

// A value `node` computes into register `reg` (node is null for a leaf or a
// constant of the setup: nothing to evaluate).
struct ValueRef {
    ExprNode* node = nullptr;
    int reg = -1;
};

// An affine lane vector base + lane * stride of lane-0 scalars (compile.cpp):
// the consumer evaluates the two parts for lane 0 and works with scalars.
struct AffineIndex {
    ExprNode* base_node = nullptr;
    int base = -1;
    ExprNode* stride_node = nullptr;
    int stride = -1;
};

// The lane-0 scalars (base, stride) of an affine operand, its parts evaluated.
template <class T>
std::pair<T, T> affine_parts(Frame& f, const AffineIndex& a) {
    if (a.base_node) a.base_node->eval_lane0(f);
    if (a.stride_node) a.stride_node->eval_lane0(f);
    return {f.in<T>(a.base)[0], f.in<T>(a.stride)[0]};
}

// o[i] = base + i * stride for the lanes of m, wrapping like the per-lane
// arithmetic the affine form stands for.
template <class T>
void affine_lanes(const Mask& m, T base, T stride, T* o) {
    using U = std::make_unsigned_t<T>;
    for_lanes(m, [&](int i) { o[i] = T(U(base) + U(i) * U(stride)); });
}

// ---------------------------------------------------------------- arithmetic (arith_nodes.cpp)
// Each returns null when the operation is not defined on the type.
std::unique_ptr<ExprNode> make_unary(ir::UnaryOp op, ir::ScalarType t, int a);
std::unique_ptr<ExprNode> make_binary(ir::BinaryOp op, ir::ScalarType operand, int a, int b);
// With one operand the same in every lane: `scalar` (lane 0), on the left of
// op when scalar_left; its node, if any, is evaluated for lane 0 by this one.
std::unique_ptr<ExprNode> make_binary(ir::BinaryOp op, ir::ScalarType operand, int lanes, ValueRef scalar,
                                      bool scalar_left);
std::unique_ptr<ExprNode> make_select(ir::ScalarType t, int c, int a, int b);
std::unique_ptr<ExprNode> make_cast(ir::ScalarType from, ir::ScalarType to, int a);
std::unique_ptr<ExprNode> make_call(const std::string& fn, ir::ScalarType operand, const std::vector<int>& args);
std::unique_ptr<ExprNode> make_copy(ir::ScalarType t, int a);
// Evaluates a block-uniform expression for lane 0 only (src may be null for a
// leaf) and copies that value to the active lanes.
std::unique_ptr<ExprNode> make_broadcast(ir::ScalarType t, ExprNode* src, int src_reg);
// Computes the lanes base + lane * stride (wrapping) of an affine operand.
std::unique_ptr<ExprNode> make_affine_lanes(ir::ScalarType t, ExprNode* base_node, int base, ExprNode* stride_node,
                                            int stride);
// Fills lanes of register `reg` with one value (constants and parameters).
void broadcast(Frame& f, int reg, ir::ScalarType t, int64_t i, double d);

// ---------------------------------------------------------------- memory (memory_nodes.cpp)
// A global buffer parameter: its memory is Frame::buffers[slot], bound per
// launch (the program itself is cached across launches, see program.h).
struct GlobalRef {
    std::string name;
    int slot = 0;
};
// A shared array: Program::shared[index].
struct SharedRef {
    int index = 0;
};

// What the compiler allows a contiguous global access; the launch has its
// say too (BoundBuffer).
struct AccessHints {
    // A load may leave its register reading the buffer (the kernel does not
    // write it, and the register is read only while that holds: see
    // compile.cpp); a store may have its value's node write into the buffer
    // (the value reads nothing of it).
    bool in_place = false;
    // The index moves with the innermost affine loop's variable: the elements
    // of the loop's next trip are fetched into the cache ahead (a grid-stride
    // loop's trips lie far apart, beyond the hardware prefetcher's reach).
    bool prefetch = false;
};

std::unique_ptr<ExprNode> make_load(ir::ScalarType t, const GlobalRef& mem, int index, AccessHints hints);
// At an affine index; `lanes` is a scratch register for the index lanes of
// an access that is not contiguous.
std::unique_ptr<ExprNode> make_load(ir::ScalarType t, const GlobalRef& mem, const AffineIndex& index, int lanes,
                                    AccessHints hints);
std::unique_ptr<ExprNode> make_load(ir::ScalarType t, const SharedRef& mem, int index);
std::unique_ptr<StmtNode> make_store(ir::ScalarType t, const GlobalRef& mem, ExprNode* index_node, int index,
                                     ExprNode* value_node, int value);
// At an affine index.
std::unique_ptr<StmtNode> make_store(ir::ScalarType t, const GlobalRef& mem, const AffineIndex& index, int lanes,
                                     ExprNode* value_node, int value, AccessHints hints);
std::unique_ptr<StmtNode> make_store(ir::ScalarType t, const SharedRef& mem, ExprNode* index_node, int index,
                                     ExprNode* value_node, int value);
// Operand nodes (may be null for leaves) are evaluated by the statement;
// result < 0: no result variable; compare < 0: not a CAS.
struct AtomicOperands {
    std::vector<ExprNode*> nodes;  // non-leaf operands, in order
    int index = -1, value = -1, compare = -1, result = -1;
};
std::unique_ptr<StmtNode> make_atomic(ir::AtomicOp op, ir::ScalarType t, const GlobalRef& mem,
                                      const AtomicOperands& a);
std::unique_ptr<StmtNode> make_atomic(ir::AtomicOp op, ir::ScalarType t, const SharedRef& mem,
                                      const AtomicOperands& a);
std::unique_ptr<ExprNode> make_shuffle(ir::ShuffleOp op, ir::ScalarType t, int value, int lane);

// ---------------------------------------------------------------- control (control_nodes.cpp)
std::unique_ptr<StmtNode> make_eval(ExprNode* e);  // Let/Assign: e writes the variable
std::unique_ptr<StmtNode> make_seq(std::vector<StmtNode*> body);
std::unique_ptr<StmtNode> make_if(ExprNode* cond_node, int cond, StmtNode* then_s, StmtNode* else_s,
                                  int mask_slot);
// `lhs OP rhs` of an integer type, lhs affine and rhs a lane-0 scalar.
struct AffineCondition {
    ir::BinaryOp op = ir::BinaryOp::Lt;  // Lt, Le, Gt, Ge, Eq or Ne
    ir::ScalarType type = ir::ScalarType::I64;
    AffineIndex lhs;
    ValueRef rhs;
};
// An If on an affine condition; cond_node/cond compute it per lane, for when
// the scalars cannot tell (values that wrap around).
std::unique_ptr<StmtNode> make_affine_if(const AffineCondition& c, ExprNode* cond_node, int cond, StmtNode* then_s,
                                         StmtNode* else_s, int mask_slot);
// for (var = lo; var < hi; var += step): lo_node writes var directly; cond
// is a Bool scratch register.
std::unique_ptr<StmtNode> make_for(ir::ScalarType t, int var, ExprNode* lo_node, ExprNode* hi_node, int hi,
                                   ExprNode* step_node, int step, StmtNode* body, int mask_slot, int cond);
// for (var = lo; var < hi; var += step) with lo affine (or uniform: stride 0),
// step uniform and var never assigned: var stays affine in every active lane.
struct AffineLoop {
    int var = -1;         // lane 0 holds the base; lanes are computed there only for a per-lane compare
    int var_stride = -1;  // lane 0 holds the stride
    AffineIndex lo;
    ValueRef hi;          // lane 0 when hi_uniform, else lanes
    bool hi_uniform = false;
    ValueRef step;        // lane 0
    StmtNode* body = nullptr;
    int slot = -1;
    int cond = -1;        // Bool scratch register for a per-lane compare
};
std::unique_ptr<StmtNode> make_affine_for(ir::ScalarType t, const AffineLoop& loop);
std::unique_ptr<StmtNode> make_while(ExprNode* cond_node, int cond, StmtNode* body, int mask_slot);
// Evaluates each part for lane 0 and copies lane 0 to regs[k] (lets of
// uniform and affine values).
std::unique_ptr<StmtNode> make_set_scalars(std::vector<ValueRef> parts, std::vector<int> regs);
std::unique_ptr<StmtNode> make_error(int code, ExprNode* index_node, int index, ExprNode* extent_node,
                                     int extent);
// barrier: whether a barrier follows (every Phase but the kernel's last BlockStmt).
std::unique_ptr<BlockNode> make_phase(StmtNode* code, int index, bool barrier);
// range: lo, hi, step as I64; lane0[k]: block-uniform by construction, so
// evaluated for lane 0 only (else for all lanes, compared in check mode).
std::unique_ptr<BlockNode> make_block_for(int var, const ValueRef range[3], const bool lane0[3],
                                          std::vector<BlockNode*> body, std::string var_name);

}  // namespace shoal::cpu
