// Factories of the executor's vector nodes (program.h), used by the compiler
// (compile.cpp). A factory returns a node with its operand registers set;
// the compiler sets `out` and `inputs` and owns the node.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/cpu/program.h"

namespace shoal::cpu {

// ---------------------------------------------------------------- arithmetic (arith_nodes.cpp)
// Each returns null when the operation is not defined on the type.
std::unique_ptr<ExprNode> make_unary(ir::UnaryOp op, ir::ScalarType t, int a);
std::unique_ptr<ExprNode> make_binary(ir::BinaryOp op, ir::ScalarType operand, int a, int b);
std::unique_ptr<ExprNode> make_select(ir::ScalarType t, int c, int a, int b);
std::unique_ptr<ExprNode> make_cast(ir::ScalarType from, ir::ScalarType to, int a);
std::unique_ptr<ExprNode> make_call(const std::string& fn, ir::ScalarType operand, const std::vector<int>& args);
std::unique_ptr<ExprNode> make_copy(ir::ScalarType t, int a);
// Evaluates a block-uniform expression for lane 0 only (src may be null for a
// leaf) and copies that value to the active lanes.
std::unique_ptr<ExprNode> make_broadcast(ir::ScalarType t, ExprNode* src, int src_reg);
// Fills lanes of register `reg` with one value (BlockFor variables, blockIdx).
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

std::unique_ptr<ExprNode> make_load(ir::ScalarType t, const GlobalRef& mem, int index);
std::unique_ptr<ExprNode> make_load(ir::ScalarType t, const SharedRef& mem, int index);
std::unique_ptr<StmtNode> make_store(ir::ScalarType t, const GlobalRef& mem, ExprNode* index_node, int index,
                                     ExprNode* value_node, int value);
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
// for (var = lo; var < hi; var += step): lo_node writes var directly; cond
// is a Bool scratch register.
std::unique_ptr<StmtNode> make_for(ir::ScalarType t, int var, ExprNode* lo_node, ExprNode* hi_node, int hi,
                                   ExprNode* step_node, int step, StmtNode* body, int mask_slot, int cond);
std::unique_ptr<StmtNode> make_while(ExprNode* cond_node, int cond, StmtNode* body, int mask_slot);
std::unique_ptr<StmtNode> make_error(int code, ExprNode* index_node, int index, ExprNode* extent_node,
                                     int extent);
// barrier: whether a barrier follows (every Phase but the kernel's last BlockStmt).
std::unique_ptr<BlockNode> make_phase(StmtNode* code, int index, bool barrier);
struct UniformExpr {
    ExprNode* node = nullptr;  // null for a leaf
    int reg = -1;
    bool lane0 = true;         // block-uniform by construction: evaluated for lane 0 only
};
std::unique_ptr<BlockNode> make_block_for(int var, UniformExpr lo, UniformExpr hi, UniformExpr step,
                                          std::vector<BlockNode*> body, std::string var_name);

}  // namespace shoal::cpu
