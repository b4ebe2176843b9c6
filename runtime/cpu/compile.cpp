// The compiler from kernel IR to the executor's vector nodes (program.h).
//
// Registers: every variable gets its own register; every constant leaf
// (literal, parameter, blockDim, gridDim) and threadIdx a register filled once
// per worker, so operators only ever read lane vectors. Inner expression
// results go to temporaries from a free list: a temporary is released once
// its consumer has its own output register, so a node never writes a
// register it reads from another lane (only Shuffle reads other lanes, and
// it never writes a register it reads). The root of a Let/Assign writes the
// variable directly (no copy): every other node is lane-wise. A node's
// operands are made (and settled) in the order they are evaluated: an
// operand made after a sibling could otherwise be given a temporary the
// sibling's subtree still writes when it runs.
//
// Levels keep work out of the per-block path. An expression of constants and
// threadIdx only (Invariant: `(long) threadIdx.x`, `(long) blockDim.x`) has
// the same lane vector in every block: it is evaluated once per worker
// (Program::setup). One of constants, blockIdx and BlockFor variables
// (Uniform: `blockIdx.x * blockDim.x`) is the same for all lanes: it is
// evaluated for lane 0 only, into a register of its own, and broadcast where
// a per-lane node reads it. An Affine one is base + lane * stride with
// uniform base and stride (`blockIdx.x * blockDim.x + threadIdx.x`, the
// grid-stride loop variable, `start + gid * step` of a slice): it is kept as
// those two scalars, so a load or store at it is known to be contiguous
// without looking at lanes, and a loop over it compares scalars.
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "codegen/ir_visitor.h"
#include "runtime/cpu/nodes.h"
#include "runtime/cpu/scalar_ops.h"

namespace shoal::cpu {

namespace {

using ir::ExprKind;
using ir::MemSpace;
using ir::ScalarType;
using ir::StmtKind;

Level join(Level a, Level b) {
    if (a == b || b == Level::Constant) return a;
    if (a == Level::Constant) return b;
    const bool scalar_and_affine =
        (a == Level::Affine && b == Level::Uniform) || (a == Level::Uniform && b == Level::Affine);
    return scalar_and_affine ? Level::Affine : Level::Varying;
}

// A lane-0 scalar: Constant (its register holds it in every lane) or Uniform.
bool is_scalar(Level l) { return l == Level::Constant || l == Level::Uniform; }

bool is_integer(ScalarType t) { return t != ScalarType::Bool && !ir::is_float(t); }

struct Operand {
    ExprNode* node = nullptr;  // null for a leaf (nothing to evaluate)
    int reg = -1;
    bool temp = false;         // reg is a temporary to release after use
    Level level = Level::Varying;
    // Level::Affine: lane i is base + i * stride, base computed by (node, reg)
    // and stride by (stride_node, stride_reg), both lane-0 scalars of levels
    // base_level and stride_level. The lanes exist once the operand is settled.
    Level base_level = Level::Constant, stride_level = Level::Constant;
    ExprNode* stride_node = nullptr;
    int stride_reg = -1;
};

struct VarInfo {
    int reg;
    ScalarType type;
    // Uniform: lane 0 of reg (BlockFor variables, lets of uniform values);
    // Affine: lane 0 of reg is the base, lane 0 of stride_reg the stride, of
    // level part_level (Constant: the registers of constants);
    // Constant/Invariant: reg is the constant's own register (a let of it).
    Level level = Level::Varying;
    int stride_reg = -1;
    Level part_level = Level::Uniform;
};

// The global buffers some Store or Atomic writes.
struct WrittenBuffers : ir::IRVisitor {
    std::set<std::string> names;
    void visit(const ir::StmtPtr& s) override {
        if ((s->kind == StmtKind::Store || s->kind == StmtKind::Atomic) && s->space == MemSpace::Global)
            names.insert(s->name);
        IRVisitor::visit(s);
    }
};

// Whether e or one of its subexpressions satisfies p.
template <class P>
bool any_subexpression(const ir::Expr& e, const P& p) {
    if (p(e)) return true;
    for (const auto& a : e.args)
        if (any_subexpression(*a, p)) return true;
    return false;
}

bool reads_variable(const ir::Expr& e, const std::string& name) {
    return any_subexpression(e, [&](const ir::Expr& x) { return x.kind == ExprKind::Var && x.name == name; });
}

bool reads_buffer(const ir::Expr& e, const std::string& name) {
    return any_subexpression(e, [&](const ir::Expr& x) {
        return x.kind == ExprKind::Load && x.space == MemSpace::Global && x.name == name;
    });
}

class Compiler {
public:
    // levels_seen: null, or where every compiled expression's level is recorded.
    Compiler(const ir::Kernel& k, Program& p, ExpressionLevels* levels_seen = nullptr)
        : k_(k), p_(p), levels_seen_(levels_seen) {}

    void run() {
        assigned_ = ir::assigned_variables(k_);
        declare_params();
        declare_shared();
        p_.block_idx_reg = new_reg(/*narrow=*/true);
        scopes_.emplace_back();
        p_.body = block_list(k_.body, /*top=*/true);
        lay_out_registers();
    }

private:
    const ir::Kernel& k_;
    Program& p_;
    std::map<std::string, VarInfo> params_;
    std::map<std::string, GlobalRef> buffers_;
    std::map<std::string, int> shared_;
    std::map<std::pair<ScalarType, uint64_t>, int> consts_;  // by type and bit pattern
    std::vector<std::map<std::string, VarInfo>> scopes_;
    std::vector<int> free_temps_;
    std::vector<bool> narrow_;       // by register: holds a lane-0 scalar only
    std::set<std::string> assigned_;  // variables some Assign or Atomic changes
    ExpressionLevels* levels_seen_;
    std::set<int> fixed_lets_;        // registers of lets never assigned: a load may leave them in place
    std::vector<std::string> affine_loops_;  // variables of the enclosing affine loops, innermost last
    // The lanes of affine values with constant parts, computed in the setup:
    // by type and the registers of base and stride.
    std::map<std::tuple<ScalarType, int, int>, int> invariant_lanes_;
    int tid_reg_ = -1;
    int phase_count_ = 0;

    [[noreturn]] void fail(const std::string& what) const { compile_fail(k_, what); }

    template <class N> N* own(std::unique_ptr<N> n, std::vector<std::unique_ptr<N>>& pool) {
        N* raw = n.get();
        pool.push_back(std::move(n));
        return raw;
    }
    ExprNode* own(std::unique_ptr<ExprNode> n) { return own(std::move(n), p_.expr_pool); }
    StmtNode* own(std::unique_ptr<StmtNode> n) { return own(std::move(n), p_.stmt_pool); }
    BlockNode* own(std::unique_ptr<BlockNode> n) { return own(std::move(n), p_.block_pool); }

    // ------------------------------------------------------------ registers
    int new_reg(bool narrow = false) {
        narrow_.push_back(narrow);
        return p_.num_regs++;
    }
    int temp() {
        if (free_temps_.empty()) return new_reg();
        const int r = free_temps_.back();
        free_temps_.pop_back();
        return r;
    }
    void release(const Operand& o) {
        if (o.temp) free_temps_.push_back(o.reg);
    }
    // A temporary free right now, for use inside one node's run only.
    int scratch() {
        const int r = temp();
        free_temps_.push_back(r);
        return r;
    }
    // The register of a constant (one per distinct value). Floats are keyed by
    // bits: NaN and -0.0 must not merge with other values.
    int value_reg(ScalarType t, int64_t i, double f) {
        uint64_t bits = uint64_t(i);
        if (ir::is_float(t)) std::memcpy(&bits, &f, sizeof bits);
        const auto key = std::make_pair(t, bits);
        auto it = consts_.find(key);
        if (it != consts_.end()) return it->second;
        const int r = new_reg();
        p_.inits.push_back(RegInit{r, t, RegInit::Value, i, f});
        consts_[key] = r;
        return r;
    }

    // Full registers first (64-byte aligned lane vectors), then the 8-byte
    // lane-0 scalars packed after them.
    void lay_out_registers() {
        const size_t wide = (size_t(p_.block_size) * 8 + 63) & ~size_t(63);
        size_t at = 0;
        p_.reg_offset.assign(size_t(p_.num_regs), 0);
        for (int pass = 0; pass < 2; ++pass)
            for (size_t r = 0; r < narrow_.size(); ++r)
                if (narrow_[r] == (pass == 1)) {
                    p_.reg_offset[r] = at;
                    at += narrow_[r] ? 8 : wide;
                }
        p_.reg_bytes = (at + 63) & ~size_t(63);
    }

    // ------------------------------------------------------------ declarations
    // Buffers get slots and scalars registers in parameter order: run_kernel
    // binds each launch's arguments to them (LaunchState), so the compiled
    // program does not depend on the arguments and can be cached.
    void declare_params() {
        WrittenBuffers written;
        written.visit_kernel(k_);
        int slot = 0;
        for (const auto& prm : k_.params) {
            if (prm.kind == ir::ParamKind::Buffer) {
                buffers_[prm.name] = GlobalRef{prm.name, slot++};
                p_.written.push_back(written.names.count(prm.name) > 0);
                continue;
            }
            const int r = new_reg();
            p_.scalar_regs.push_back(r);
            params_[prm.name] = VarInfo{r, prm.type, Level::Constant};
        }
    }

    void declare_shared() {
        size_t offset = 0, tracks = 0;
        for (size_t s = 0; s < k_.shared.size(); ++s) {
            const auto& a = k_.shared[s];
            if (a.size < 0) fail("shared array '" + a.name + "' has negative size");
            offset = (offset + 15) & ~size_t(15);
            p_.shared.push_back(SharedLayout{a.name, a.type, a.size, offset, tracks});
            offset += ir::scalar_size(a.type) * size_t(a.size);
            tracks += size_t(a.size);
            shared_[a.name] = int(s);
        }
        p_.shared_bytes = offset;
        p_.shared_elements = tracks;
    }

    const VarInfo* find_var(const std::string& name) const {
        for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
            auto it = s->find(name);
            if (it != s->end()) return &it->second;
        }
        return nullptr;
    }

    VarInfo lookup(const std::string& name) const {
        if (const VarInfo* v = find_var(name)) return *v;
        fail("use of undeclared variable '" + name + "'");
    }

    // ------------------------------------------------------------ levels
    static bool is_thread_index_cast(const ir::Expr& e) {
        return e.kind == ExprKind::Cast && is_integer(e.type) && e.args.size() == 1 &&
               e.args[0]->kind == ExprKind::ThreadIdx;
    }

    // Integer operations that keep base + lane * stride affine (wrapping
    // arithmetic is a ring: the parts compose exactly).
    static bool keeps_affine(const ir::Expr& e, const std::vector<Level>& args) {
        if (e.args.empty() || !is_integer(e.args[0]->type)) return false;
        if (e.kind == ExprKind::Cast)  // a reinterpretation or truncation, not an extension
            return is_integer(e.type) && ir::scalar_size(e.type) <= ir::scalar_size(e.args[0]->type);
        if (e.kind != ExprKind::Binary) return false;
        switch (e.binary_op) {
            case ir::BinaryOp::Add:
            case ir::BinaryOp::Sub: return true;
            case ir::BinaryOp::Mul: return args[0] != Level::Affine || args[1] != Level::Affine;
            default: return false;
        }
    }

    // The level raw(e) gives e, without compiling anything (so that operands
    // can be settled as they are made). Unknown names are Varying here;
    // compiling them reports the error.
    Level level_of(const ir::Expr& e) const {
        switch (e.kind) {
            case ExprKind::Const:
            case ExprKind::Param:
            case ExprKind::BlockDim:
            case ExprKind::GridDim: return Level::Constant;
            case ExprKind::ThreadIdx: return Level::Invariant;
            case ExprKind::BlockIdx: return Level::Uniform;
            case ExprKind::Var: {
                const VarInfo* v = find_var(e.name);
                return v ? v->level : Level::Varying;
            }
            case ExprKind::Load:
            case ExprKind::Shuffle: return Level::Varying;
            default: break;
        }
        if (is_thread_index_cast(e)) return Level::Affine;
        std::vector<Level> args;
        Level level = Level::Constant;
        for (const auto& a : e.args) {
            args.push_back(level_of(*a));
            level = join(level, args.back());
        }
        if (level != Level::Affine || keeps_affine(e, args)) return level;
        // Per-lane operands: the affine ones get their lanes computed.
        level = Level::Constant;
        for (const auto& a : e.args) level = join(level, lanes_level(*a));
        return level;
    }

    // The level of a settled operand (see settle): an Affine one whose parts
    // are constants (no blockIdx or uniform variable) is Invariant.
    Level lanes_level(const ir::Expr& e) const {
        const Level l = level_of(e);
        return l == Level::Affine ? (uniform_free(e) ? Level::Invariant : Level::Varying) : l;
    }

    bool uniform_free(const ir::Expr& e) const {
        if (e.kind == ExprKind::BlockIdx) return false;
        if (e.kind == ExprKind::Var) {
            const VarInfo* v = find_var(e.name);
            if (!v) return true;
            if (v->level == Level::Affine) return v->part_level == Level::Constant;
            return v->level != Level::Uniform;
        }
        for (const auto& a : e.args)
            if (!uniform_free(*a)) return false;
        return true;
    }

    // The operand of a per-lane binary operation that is the same in every
    // lane (read from lane 0 by the node: no broadcast), or -1.
    int scalar_side(const ir::Expr& e) const {
        for (int k = 0; k < 2; ++k)
            if (is_scalar(level_of(*e.args[size_t(k)])) && !is_scalar(level_of(*e.args[size_t(1 - k)]))) return k;
        return -1;
    }

    // Whether an operand of level `of` is used as it is by a node of level
    // `level` (else it is settled first).
    static bool keeps(Level level, Level of) {
        return level == of || (level == Level::Invariant && of == Level::Constant) ||
               (level == Level::Affine && of == Level::Uniform);
    }

    // ------------------------------------------------------------ expressions
    Operand leaf(const ir::Expr& e) {
        switch (e.kind) {
            case ExprKind::Const: return {nullptr, value_reg(e.type, e.i, e.f), false, Level::Constant};
            case ExprKind::Var: {
                const VarInfo v = lookup(e.name);
                if (v.type != e.type) fail("variable '" + e.name + "' read with the wrong type");
                Operand o{nullptr, v.reg, false, v.level};
                if (v.level == Level::Affine) {
                    o.base_level = o.stride_level = v.part_level;
                    o.stride_reg = v.stride_reg;
                }
                return o;
            }
            case ExprKind::Param: {
                auto it = params_.find(e.name);
                if (it == params_.end()) fail("unknown scalar parameter '" + e.name + "'");
                return {nullptr, it->second.reg, false, Level::Constant};
            }
            case ExprKind::ThreadIdx:
                if (tid_reg_ < 0) {
                    tid_reg_ = new_reg();
                    p_.inits.push_back(RegInit{tid_reg_, ScalarType::I32, RegInit::ThreadIdx, 0, 0});
                }
                return {nullptr, tid_reg_, false, Level::Invariant};
            case ExprKind::BlockIdx: return {nullptr, p_.block_idx_reg, false, Level::Uniform};
            case ExprKind::BlockDim:
                return {nullptr, value_reg(ScalarType::I32, k_.block_size, 0), false, Level::Constant};
            case ExprKind::GridDim:
                // Its own register, bound per launch (not a shared constant).
                if (p_.grid_reg < 0) p_.grid_reg = new_reg();
                return {nullptr, p_.grid_reg, false, Level::Constant};
            default: return {};
        }
    }

    // Makes o readable by a per-lane consumer, as register dest when dest >= 0:
    // Constant/Invariant nodes move to the per-worker setup, Uniform values
    // are broadcast from lane 0, Affine ones get their lanes computed.
    Operand settle(Operand o, ScalarType t, int dest = -1) {
        switch (o.level) {
            case Level::Constant:
            case Level::Invariant:
                if (o.node) p_.setup.push_back(o.node);
                o.node = nullptr;
                break;
            case Level::Uniform: return finish(make_broadcast(t, o.node, o.reg), {}, dest, "broadcast");
            case Level::Affine: {
                if (o.base_level == Level::Uniform || o.stride_level == Level::Uniform)
                    return finish(make_affine_lanes(t, o.node, o.reg, o.stride_node, o.stride_reg), {}, dest,
                                  "affine lanes");
                // Constant parts (`(long) threadIdx.x`): the same lanes in every block.
                auto [it, fresh] = invariant_lanes_.try_emplace({t, o.reg, o.stride_reg}, -1);
                if (fresh) {
                    const Operand lanes = finish(make_affine_lanes(t, nullptr, o.reg, nullptr, o.stride_reg), {}, -1,
                                                 "affine lanes", Level::Invariant);
                    p_.setup.push_back(lanes.node);
                    it->second = lanes.reg;
                }
                o = Operand{nullptr, it->second, false, Level::Invariant};
                break;
            }
            case Level::Varying: break;
        }
        if (dest < 0 || o.reg == dest) return o;
        return finish(make_copy(t, o.reg), {o}, dest, "copy");
    }

    // Gives node its output (dest, or a temporary), its inputs, and releases
    // ops. A node of any level but Varying gets a register of its own: it
    // holds a constant for the whole run (setup), or a lane-0 scalar that a
    // consumer may evaluate after other nodes ran (a temporary could have
    // been reused by then).
    Operand finish(std::unique_ptr<ExprNode> node, const std::vector<Operand>& ops, int dest, const char* what,
                   Level level = Level::Varying) {
        if (!node) fail(std::string("unsupported ") + what);
        for (const auto& o : ops)
            if (o.node) node->inputs.push_back(o.node);
        const bool to_temp = dest < 0 && level == Level::Varying;
        node->out = level != Level::Varying ? new_reg(level == Level::Uniform) : to_temp ? temp() : dest;
        for (const auto& o : ops) release(o);
        ExprNode* n = own(std::move(node));
        return {n, n->out, to_temp, level};
    }

    // An operand converted to type `to`, readable per lane (index and lane operands).
    Operand expr_as(const ir::ExprPtr& e, ScalarType to) {
        if (e->type == to) return expr(e);
        Operand o = raw(e);
        if (o.level == Level::Affine) o = settle(o, e->type);
        if (o.level == Level::Varying) return finish(make_cast(e->type, to, o.reg), {o}, -1, "conversion");
        return settle(finish(make_cast(e->type, to, o.reg), {o}, -1, "conversion", o.level), to);
    }

    // A global index: kept Affine when it is, else readable per lane.
    Operand global_index(const ir::ExprPtr& e) {
        if (e->type == ScalarType::I64 && level_of(*e) == Level::Affine) return raw(e);
        return expr_as(e, ScalarType::I64);
    }

    void expect_args(const ir::Expr& e, size_t n) const {
        if (e.args.size() != n)
            fail("malformed expression: " + std::to_string(e.args.size()) + " operands where " + std::to_string(n) +
                 " belong");
    }

    // Compiles e for per-lane use; with dest >= 0 the result is written to register dest.
    Operand expr(const ir::ExprPtr& e, int dest = -1) { return settle(raw(e, dest), e->type, dest); }

    // Compiles e at its level: the operands of a Varying node are settled,
    // those of a Uniform node are kept for lane 0 (constant subtrees hoisted),
    // those of a Constant/Invariant node stay inputs of the hoisted subtree,
    // those of an Affine one give its base and stride.
    Operand raw(const ir::ExprPtr& ep, int dest = -1) {
        Operand o = raw_operand(ep, dest);
        if (levels_seen_) levels_seen_->push_back({ep.get(), o.level});
        return o;
    }
    Operand raw_operand(const ir::ExprPtr& ep, int dest) {
        const ir::Expr& e = *ep;
        Operand l = leaf(e);
        if (l.reg >= 0) return l;
        switch (e.kind) {
            case ExprKind::Load: return load(e, dest);
            case ExprKind::Shuffle: return shuffle(e, dest);
            case ExprKind::Unary: expect_args(e, 1); break;
            case ExprKind::Binary:
                expect_args(e, 2);
                if (e.args[0]->type != e.args[1]->type) fail("binary operands of different types");
                break;
            case ExprKind::Select: expect_args(e, 3); break;
            case ExprKind::Cast: expect_args(e, 1); break;
            case ExprKind::Call:
                if (e.args.empty()) fail("call of " + e.name + " without arguments");
                break;
            default: fail("unknown expression kind");
        }
        if (is_thread_index_cast(e)) return thread_index(e.type);
        const Level level = level_of(e);
        const int scalar = level == Level::Varying && e.kind == ExprKind::Binary ? scalar_side(e) : -1;
        std::vector<Operand> ops;
        Level made = Level::Constant;  // what the operands turned out to be: level_of must have foreseen it
        for (size_t k = 0; k < e.args.size(); ++k) {
            Operand o = raw(e.args[k]);
            const bool keep = int(k) == scalar ? o.level == Level::Uniform : keeps(level, o.level);
            if (!keep) o = settle(o, e.args[k]->type);
            ops.push_back(o);
            made = join(made, o.level);
        }
        if (made != level) fail("internal error: an operation of level " + std::to_string(int(level)) +
                                " has operands of level " + std::to_string(int(made)));
        if (level == Level::Affine) return affine_operation(e, ops);
        if (scalar >= 0) {
            const Operand &s = ops[size_t(scalar)], &v = ops[size_t(1 - scalar)];
            return finish(make_binary(e.binary_op, e.args[0]->type, v.reg, ValueRef{s.node, s.reg}, scalar == 0), {v},
                          dest, "operation");
        }
        std::vector<int> regs;
        for (const auto& o : ops) regs.push_back(o.reg);
        const int out = level == Level::Varying ? dest : -1;  // other levels are settled into dest later
        return finish(arith_node(e, regs), ops, out, "operation", level);
    }

    // ------------------------------------------------------------ affine operands
    static Operand affine(const Operand& base, const Operand& stride) {
        Operand o{base.node, base.reg, false, Level::Affine};
        o.base_level = base.level;
        o.stride_level = stride.level;
        o.stride_node = stride.node;
        o.stride_reg = stride.reg;
        return o;
    }
    // threadIdx.x (its lanes 0..blockDim-1, exact in every integer type) as
    // the affine 0 + lane * 1 of type t.
    Operand thread_index(ScalarType t) {
        return affine({nullptr, value_reg(t, 0, 0), false, Level::Constant},
                      {nullptr, value_reg(t, 1, 0), false, Level::Constant});
    }
    static Operand base_of(const Operand& o) {
        return o.level == Level::Affine ? Operand{o.node, o.reg, false, o.base_level} : o;
    }
    Operand stride_of(const Operand& o, ScalarType t) {
        if (o.level == Level::Affine) return {o.stride_node, o.stride_reg, false, o.stride_level};
        return {nullptr, value_reg(t, 0, 0), false, Level::Constant};  // a uniform operand
    }

    // A scalar node on lane-0 operands (base or stride parts): constant ones
    // go to the setup, uniform ones are evaluated by the affine consumer.
    Operand scalar_part(std::unique_ptr<ExprNode> node, std::vector<Operand> ops, ScalarType t) {
        Level level = Level::Constant;
        for (const auto& o : ops) level = join(level, o.level);
        for (auto& o : ops)
            if (o.level != level) o = settle(o, t);
        Operand r = finish(std::move(node), ops, -1, "operation", level);
        return level == Level::Constant ? settle(r, t) : r;
    }
    Operand scalar_binary(ir::BinaryOp op, ScalarType t, const Operand& a, const Operand& b) {
        return scalar_part(make_binary(op, t, a.reg, b.reg), {a, b}, t);
    }

    // Add, Sub, Mul or Cast with an Affine operand and scalar others.
    Operand affine_operation(const ir::Expr& e, const std::vector<Operand>& ops) {
        const ScalarType t = e.args[0]->type;
        if (e.kind == ExprKind::Cast) {
            const Operand base = scalar_part(make_cast(t, e.type, ops[0].reg), {base_of(ops[0])}, t);
            const Operand s = stride_of(ops[0], t);
            return affine(base, scalar_part(make_cast(t, e.type, s.reg), {s}, t));
        }
        const Operand &a = ops[0], &b = ops[1];
        const Operand base = scalar_binary(e.binary_op, t, base_of(a), base_of(b));
        if (e.binary_op == ir::BinaryOp::Mul) {  // one side is scalar: it scales the stride
            const bool a_affine = a.level == Level::Affine;
            return affine(base, scalar_binary(ir::BinaryOp::Mul, t, stride_of(a_affine ? a : b, t), a_affine ? b : a));
        }
        return affine(base, scalar_binary(e.binary_op, t, stride_of(a, t), stride_of(b, t)));
    }

    // ------------------------------------------------------------ arithmetic
    std::unique_ptr<ExprNode> arith_node(const ir::Expr& e, const std::vector<int>& r) {
        std::unique_ptr<ExprNode> n;
        switch (e.kind) {
            case ExprKind::Unary: n = make_unary(e.unary_op, e.args[0]->type, r[0]); break;
            case ExprKind::Binary: n = make_binary(e.binary_op, e.args[0]->type, r[0], r[1]); break;
            case ExprKind::Select: n = make_select(e.type, r[0], r[1], r[2]); break;
            case ExprKind::Cast: n = make_cast(e.args[0]->type, e.type, r[0]); break;
            default: n = make_call(e.name, e.args[0]->type, r); break;
        }
        if (!n) fail("unsupported " + describe(e));
        return n;
    }

    static std::string describe(const ir::Expr& e) {
        const std::string t = ir::scalar_name(e.args.empty() ? e.type : e.args[0]->type);
        switch (e.kind) {
            case ExprKind::Unary: return "unary operation " + std::to_string(int(e.unary_op)) + " on " + t;
            case ExprKind::Binary: return "binary operation " + std::to_string(int(e.binary_op)) + " on " + t;
            case ExprKind::Call: return "call of " + e.name + " on " + t;
            default: return "expression on " + t;
        }
    }

    // ------------------------------------------------------------ memory
    // Whether a global index reads the innermost affine loop's variable (then
    // it moves with it: AccessHints::prefetch; a guess at worst).
    bool moves_with_loop(const ir::Expr& index) const {
        return !affine_loops_.empty() && reads_variable(index, affine_loops_.back());
    }

    static AffineIndex affine_index(const Operand& ix) {
        return AffineIndex{ix.node, ix.reg, ix.stride_node, ix.stride_reg};
    }

    Operand load(const ir::Expr& e, int dest) {
        expect_args(e, 1);
        if (e.space == MemSpace::Global) {
            auto it = buffers_.find(e.name);
            if (it == buffers_.end()) fail("load from unknown buffer '" + e.name + "'");
            const GlobalRef& mem = it->second;
            // In place: the buffer does not change during the launch, and the
            // register is read only until the value's consumer runs (a
            // temporary) or the let's scope ends (a let never assigned).
            AccessHints hints;
            hints.in_place = !p_.written[size_t(mem.slot)] && (dest < 0 || fixed_lets_.count(dest));
            Operand ix = global_index(e.args[0]);
            if (ix.level != Level::Affine) return finish(make_load(e.type, mem, ix.reg, hints), {ix}, dest, "load");
            hints.prefetch = moves_with_loop(*e.args[0]);
            const int lanes = temp();  // the index lanes of a scattered access; held until the load's own is taken
            Operand o = finish(make_load(e.type, mem, affine_index(ix), lanes, hints), {}, dest, "load");
            free_temps_.push_back(lanes);
            return o;
        }
        std::vector<Operand> ops{expr_as(e.args[0], ScalarType::I32)};
        return finish(make_load(e.type, SharedRef{shared_index(e.name, e.type)}, ops[0].reg), ops, dest, "load");
    }

    // A shuffle reads other lanes' values, so it never writes a register in
    // place: to a temporary, then copied into dest.
    Operand shuffle(const ir::Expr& e, int dest) {
        expect_args(e, 2);
        std::vector<Operand> ops{expr(e.args[0])};
        ops.push_back(expr_as(e.args[1], ScalarType::I32));
        Operand s = finish(make_shuffle(e.shuffle_op, e.type, ops[0].reg, ops[1].reg), ops, -1, "shuffle");
        if (dest < 0) return s;
        return finish(make_copy(e.type, s.reg), {s}, dest, "copy");
    }

    int shared_index(const std::string& name, ScalarType t) const {
        auto it = shared_.find(name);
        if (it == shared_.end()) fail("access to unknown shared array '" + name + "'");
        if (p_.shared[size_t(it->second)].type != t) fail("shared array '" + name + "' accessed with the wrong type");
        return it->second;
    }

    const GlobalRef& buffer(const std::string& name) const {
        auto it = buffers_.find(name);
        if (it == buffers_.end()) fail("access to unknown buffer '" + name + "'");
        return it->second;
    }

    // ------------------------------------------------------------ statements
    std::vector<StmtNode*> stmt_list(const std::vector<ir::StmtPtr>& body) {
        std::vector<StmtNode*> out;
        for (const auto& s : body)
            if (StmtNode* n = stmt(*s)) out.push_back(n);
        return out;
    }

    StmtNode* scoped_seq(const std::vector<ir::StmtPtr>& body) {
        scopes_.emplace_back();
        StmtNode* n = own(make_seq(stmt_list(body)));
        scopes_.pop_back();
        return n;
    }

    StmtNode* stmt(const ir::Stmt& s) {
        switch (s.kind) {
            case StmtKind::Let: return let(s);
            case StmtKind::Assign: return assign(s);
            case StmtKind::Store: return store(s);
            case StmtKind::If: return if_stmt(s);
            case StmtKind::For: return for_stmt(s);
            case StmtKind::While: return while_stmt(s);
            case StmtKind::Atomic: return atomic(s);
            case StmtKind::Error: return error(s);
            case StmtKind::Seq: return scoped_seq(s.body);
            case StmtKind::Comment: return nullptr;
        }
        fail("unknown statement kind");
    }

    // A let never assigned keeps its value's level: a constant one names the
    // constant's register (nothing to run), a uniform or affine one keeps its
    // lane-0 scalars in registers of its own.
    StmtNode* let(const ir::Stmt& s) {
        if (s.exprs.size() != 1) fail("malformed let of '" + s.name + "'");
        if (scopes_.back().count(s.name)) fail("variable '" + s.name + "' declared twice in one scope");
        const ScalarType t = s.exprs[0]->type;
        const bool fixed = !assigned_.count(s.name);
        const Level level = fixed ? level_of(*s.exprs[0]) : Level::Varying;
        if (level == Level::Constant || level == Level::Invariant) {
            const Operand v = settle(raw(s.exprs[0]), t);  // the value may read an outer variable of the same name
            scopes_.back()[s.name] = VarInfo{v.reg, t, level};
            return nullptr;
        }
        if (level == Level::Affine && lanes_level(*s.exprs[0]) == Level::Invariant) {
            // Constant parts: the variable names their registers (nothing to run).
            const Operand v = raw(s.exprs[0]);
            scopes_.back()[s.name] = VarInfo{v.reg, t, level, v.stride_reg, Level::Constant};
            return nullptr;
        }
        if (level == Level::Uniform || level == Level::Affine) {
            const Operand v = raw(s.exprs[0]);
            VarInfo var{new_reg(true), t, level};
            std::vector<ValueRef> parts{ValueRef{v.node, v.reg}};
            std::vector<int> regs{var.reg};
            if (level == Level::Affine) {
                var.stride_reg = new_reg(true);
                parts.push_back(ValueRef{v.stride_node, v.stride_reg});
                regs.push_back(var.stride_reg);
            }
            scopes_.back()[s.name] = var;
            return own(make_set_scalars(std::move(parts), std::move(regs)));
        }
        const int reg = new_reg();
        if (fixed) fixed_lets_.insert(reg);
        Operand v = expr(s.exprs[0], reg);
        scopes_.back()[s.name] = VarInfo{reg, t};
        return own(make_eval(v.node));
    }

    StmtNode* assign(const ir::Stmt& s) {
        if (s.exprs.size() != 1) fail("malformed assignment to '" + s.name + "'");
        const VarInfo v = lookup(s.name);
        if (v.type != s.exprs[0]->type) fail("assignment to '" + s.name + "' of a value of another type");
        ExprNode* value = expr(s.exprs[0], v.reg).node;
        // `a = a`: the value is already in a's register; nothing to evaluate.
        return own(value ? make_eval(value) : make_seq({}));
    }

    StmtNode* store(const ir::Stmt& s) {
        if (s.exprs.size() != 2) fail("malformed store to '" + s.name + "'");
        const ScalarType t = s.exprs[1]->type;
        if (s.space != MemSpace::Global) {
            Operand ix = expr_as(s.exprs[0], ScalarType::I32);
            Operand v = expr(s.exprs[1]);
            release(ix);
            release(v);
            return own(make_store(t, SharedRef{shared_index(s.name, t)}, ix.node, ix.reg, v.node, v.reg));
        }
        Operand ix = global_index(s.exprs[0]);
        Operand v = expr(s.exprs[1]);
        if (ix.level != Level::Affine) {
            release(ix);
            release(v);
            return own(make_store(t, buffer(s.name), ix.node, ix.reg, v.node, v.reg));
        }
        // The value's node may write straight into the buffer when nothing
        // it reads is in that buffer.
        AccessHints hints;
        hints.in_place = v.temp && !reads_buffer(*s.exprs[1], s.name);
        hints.prefetch = moves_with_loop(*s.exprs[0]);
        const int lanes = scratch();  // taken while v is held: a register v does not use
        release(v);
        return own(make_store(t, buffer(s.name), affine_index(ix), lanes, v.node, v.reg, hints));
    }

    StmtNode* if_stmt(const ir::Stmt& s) {
        if (s.exprs.size() != 1 || s.exprs[0]->type != ScalarType::Bool) fail("if without a bool condition");
        const std::optional<AffineCondition> affine = affine_condition(*s.exprs[0]);
        Operand c = expr(s.exprs[0]);
        release(c);  // the masks are made before either branch runs
        const int slot = p_.num_mask_slots;
        p_.num_mask_slots += 2;
        StmtNode* then_s = scoped_seq(s.body);
        StmtNode* else_s = s.else_body.empty() ? nullptr : scoped_seq(s.else_body);
        if (affine) return own(make_affine_if(*affine, c.node, c.reg, then_s, else_s, slot));
        return own(make_if(c.node, c.reg, then_s, else_s, slot));
    }

    // threadIdx itself is affine (0 + lane * 1) for a comparison.
    bool affine_side(const ir::Expr& e) const {
        return e.kind == ExprKind::ThreadIdx || level_of(e) == Level::Affine;
    }

    // A comparison of an affine integer value with a scalar, in either order
    // (`gid < n`, `threadIdx.x < 128`, `threadIdx.x == 0`).
    std::optional<AffineCondition> affine_condition(const ir::Expr& e) {
        using ir::BinaryOp;
        if (e.kind != ExprKind::Binary || e.args.size() != 2 || !is_integer(e.args[0]->type)) return std::nullopt;
        BinaryOp op = e.binary_op;
        static const std::map<BinaryOp, BinaryOp> mirrored = {{BinaryOp::Lt, BinaryOp::Gt}, {BinaryOp::Le, BinaryOp::Ge},
                                                              {BinaryOp::Gt, BinaryOp::Lt}, {BinaryOp::Ge, BinaryOp::Le},
                                                              {BinaryOp::Eq, BinaryOp::Eq}, {BinaryOp::Ne, BinaryOp::Ne}};
        auto m = mirrored.find(op);
        if (m == mirrored.end()) return std::nullopt;
        const int side = affine_side(*e.args[0]) ? 0 : affine_side(*e.args[1]) ? 1 : -1;
        if (side < 0 || !is_scalar(level_of(*e.args[size_t(1 - side)]))) return std::nullopt;
        if (side == 1) op = m->second;  // b OP a is a OP' b
        const ir::ExprPtr& a = e.args[size_t(side)];
        const Operand lhs = a->kind == ExprKind::ThreadIdx ? thread_index(a->type) : raw(a);
        return AffineCondition{op, a->type, affine_index(lhs), scalar_operand(e.args[size_t(1 - side)])};
    }

    StmtNode* for_stmt(const ir::Stmt& s) {
        if (s.exprs.size() != 3) fail("malformed for loop over '" + s.name + "'");
        const ScalarType t = s.exprs[0]->type;
        if (s.exprs[1]->type != t || s.exprs[2]->type != t) fail("for loop bounds of different types");
        if (is_integer(t) && !assigned_.count(s.name)) {
            const Level lo = level_of(*s.exprs[0]);
            if (lo == Level::Affine || is_scalar(lo)) {
                scopes_.emplace_back();
                scopes_.back()[s.name] = VarInfo{-1, t, Level::Affine};  // what the step sees if it reads the variable
                const bool uniform_step = is_scalar(level_of(*s.exprs[2]));
                scopes_.pop_back();
                if (uniform_step) return affine_for(s);
            }
        }
        const int var = new_reg();
        Operand lo = expr(s.exprs[0], var);
        scopes_.emplace_back();
        scopes_.back()[s.name] = VarInfo{var, t};
        // hi and step are re-evaluated every iteration and used at once, so
        // their temporaries may be reused by the body.
        Operand hi = expr(s.exprs[1]);
        Operand step = expr(s.exprs[2]);
        const int cond = temp();  // taken while hi is held: the compare reads hi, writes cond
        free_temps_.push_back(cond);
        release(hi);
        release(step);
        const int slot = p_.num_mask_slots++;
        StmtNode* body = own(make_seq(stmt_list(s.body)));
        scopes_.pop_back();
        auto node = make_for(t, var, lo.node, hi.node, hi.reg, step.node, step.reg, body, slot, cond);
        if (!node) fail("for loop over a bool");
        return own(std::move(node));
    }

    // A lane-0 scalar operand of a uniform level: constants go to the setup.
    ValueRef scalar_operand(const ir::ExprPtr& e) {
        Operand o = raw(e);
        if (o.level == Level::Constant) o = settle(o, e->type);
        return ValueRef{o.node, o.reg};
    }

    // A loop whose variable starts affine (or uniform: stride 0) and steps
    // by a uniform amount: the variable stays affine in every active lane.
    StmtNode* affine_for(const ir::Stmt& s) {
        const ScalarType t = s.exprs[0]->type;
        Operand lo = raw(s.exprs[0]);
        if (lo.level == Level::Constant) lo = settle(lo, t);
        AffineLoop loop;
        loop.var = new_reg();  // full lanes: a per-lane compare computes them there
        loop.var_stride = new_reg(true);
        loop.lo = AffineIndex{lo.node, lo.reg, nullptr, value_reg(t, 0, 0)};
        if (lo.level == Level::Affine) {
            loop.lo.stride_node = lo.stride_node;
            loop.lo.stride = lo.stride_reg;
        }
        scopes_.emplace_back();
        scopes_.back()[s.name] = VarInfo{loop.var, t, Level::Affine, loop.var_stride};
        affine_loops_.push_back(s.name);
        if (is_scalar(level_of(*s.exprs[1]))) {
            loop.hi = scalar_operand(s.exprs[1]);
            loop.hi_uniform = true;
        } else {
            const Operand hi = expr(s.exprs[1]);
            loop.hi = ValueRef{hi.node, hi.reg};
            loop.cond = temp();  // taken while hi is held: the compare reads hi, writes cond
            free_temps_.push_back(loop.cond);
            release(hi);
        }
        if (loop.cond < 0) loop.cond = scratch();
        loop.step = scalar_operand(s.exprs[2]);
        loop.slot = p_.num_mask_slots++;
        loop.body = own(make_seq(stmt_list(s.body)));
        affine_loops_.pop_back();
        scopes_.pop_back();
        return own(make_affine_for(t, loop));
    }

    StmtNode* while_stmt(const ir::Stmt& s) {
        if (s.exprs.size() != 1 || s.exprs[0]->type != ScalarType::Bool) fail("while without a bool condition");
        Operand c = expr(s.exprs[0]);
        release(c);
        const int slot = p_.num_mask_slots++;
        return own(make_while(c.node, c.reg, scoped_seq(s.body), slot));
    }

    StmtNode* atomic(const ir::Stmt& s) {
        if (s.exprs.size() < 2 || s.exprs.size() > 3) fail("malformed atomic on '" + s.name + "'");
        const bool global = s.space == MemSpace::Global;
        std::vector<Operand> ops{expr_as(s.exprs[0], global ? ScalarType::I64 : ScalarType::I32)};
        ops.push_back(expr_as(s.exprs[1], s.type));
        if (s.exprs.size() == 3) ops.push_back(expr_as(s.exprs[2], s.type));
        if ((s.atomic_op == ir::AtomicOp::CAS) != (s.exprs.size() == 3)) fail("atomic CAS needs exactly a compare value");
        AtomicOperands a;
        for (const auto& o : ops) {
            if (o.node) a.nodes.push_back(o.node);
            release(o);
        }
        a.index = ops[0].reg;
        a.value = ops[1].reg;
        if (ops.size() == 3) a.compare = ops[2].reg;
        if (!s.result.empty()) {
            const VarInfo r = lookup(s.result);
            if (r.type != s.type) fail("atomic result variable '" + s.result + "' of the wrong type");
            a.result = r.reg;
        }
        std::unique_ptr<StmtNode> n = global ? make_atomic(s.atomic_op, s.type, buffer(s.name), a)
                                             : make_atomic(s.atomic_op, s.type, SharedRef{shared_index(s.name, s.type)}, a);
        if (!n) fail("unsupported atomic operation on " + std::string(ir::scalar_name(s.type)));
        return own(std::move(n));
    }

    StmtNode* error(const ir::Stmt& s) {
        if (s.exprs.size() != 2) fail("malformed error statement");
        if (s.error_code < 0 || size_t(s.error_code) >= k_.checks.size())
            fail("error code " + std::to_string(s.error_code) + " is not a check of the kernel");
        Operand ix = expr_as(s.exprs[0], ScalarType::I64);
        Operand ex = expr_as(s.exprs[1], ScalarType::I64);
        release(ix);
        release(ex);
        return own(make_error(s.error_code, ix.node, ix.reg, ex.node, ex.reg));
    }

    // ------------------------------------------------------------ block level
    // A BlockFor bound as I64: a Uniform one is evaluated for lane 0 only; any
    // other (verify rejects them) for all lanes, so check mode can compare.
    Operand uniform_operand(const ir::ExprPtr& e, bool& lane0) {
        Operand o = raw(e);
        if (o.level == Level::Affine) o = settle(o, e->type);
        if (e->type != ScalarType::I64) {
            const Level level = o.level;
            o = finish(make_cast(e->type, ScalarType::I64, o.reg), {o}, -1, "conversion", level);
        }
        lane0 = is_scalar(o.level);
        return o.level == Level::Uniform ? o : settle(o, ScalarType::I64);
    }

    std::vector<BlockNode*> block_list(const std::vector<ir::BlockStmtPtr>& list, bool top) {
        std::vector<BlockNode*> out;
        for (size_t i = 0; i < list.size(); ++i) {
            const bool last = top && i + 1 == list.size();
            out.push_back(block_stmt(*list[i], last));
        }
        return out;
    }

    BlockNode* block_stmt(const ir::BlockStmt& b, bool last) {
        if (b.kind == ir::BlockStmtKind::Phase) {
            if (!b.phase) fail("phase without code");
            // Top-level Lets of a phase live in the enclosing block-level scope
            // (visible to later phases), so its Seq opens no scope.
            std::vector<StmtNode*> code =
                b.phase->kind == StmtKind::Seq ? stmt_list(b.phase->body) : stmt_list({b.phase});
            return own(make_phase(own(make_seq(std::move(code))), phase_count_++, !last));
        }
        if (b.range.size() != 3) fail("malformed block loop over '" + b.var + "'");
        ValueRef range[3];
        bool lane0[3] = {};
        for (int k = 0; k < 3; ++k) {
            Operand o = uniform_operand(b.range[size_t(k)], lane0[k]);
            release(o);  // read right after evaluation
            range[k] = ValueRef{o.node, o.reg};
        }
        // Full lanes: an assignment (which verify rejects) would write them all.
        const int var = new_reg();
        scopes_.emplace_back();
        scopes_.back()[b.var] = VarInfo{var, ScalarType::I64, Level::Uniform};
        auto body = block_list(b.body, false);
        scopes_.pop_back();
        return own(make_block_for(var, range, lane0, std::move(body), b.var));
    }
};

}  // namespace

std::unique_ptr<Program> compile(const ir::Kernel& k, const ExecOptions& options) {
    auto p = std::make_unique<Program>();
    p->kernel_name = k.name;
    p->block_size = k.block_size;
    p->check = options.check;
    Compiler(k, *p).run();
    return p;
}

ExpressionLevels interpreter_levels(const ir::Kernel& k) {
    Program p;
    p.kernel_name = k.name;
    p.block_size = k.block_size;
    ExpressionLevels seen;
    Compiler(k, p, &seen).run();
    return seen;
}

}  // namespace shoal::cpu
