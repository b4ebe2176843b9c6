// The compiler from kernel IR to the executor's vector nodes (program.h).
//
// Registers: every variable gets its own register; every constant leaf
// (literal, parameter, blockDim, gridDim) and threadIdx a register filled once
// per worker, so operators only ever read lane vectors. Inner expression
// results go to temporaries from a free list: a temporary is released once
// its consumer has its own output register, so a node never writes a
// register it reads from another lane (only Shuffle reads other lanes, and
// it never writes a register it reads). The root of a Let/Assign writes the
// variable directly (no copy): every other node is lane-wise.
//
// Levels keep work out of the per-block path. An expression of constants and
// threadIdx only (Invariant: `(long) threadIdx.x`, `(long) blockDim.x`) has
// the same lane vector in every block: it is evaluated once per worker
// (Program::setup). One of constants, blockIdx and BlockFor variables
// (Uniform: `blockIdx.x * blockDim.x`) is the same for all lanes: it is
// evaluated for lane 0 only and broadcast where a per-lane node reads it.
#include <cstring>
#include <map>

#include "runtime/cpu/nodes.h"
#include "runtime/cpu/scalar_ops.h"

namespace shoal::cpu {

namespace {

using ir::ExprKind;
using ir::MemSpace;
using ir::ScalarType;
using ir::StmtKind;

// How an expression's value varies (see the top of the file).
enum class Level : uint8_t { Constant, Invariant, Uniform, Varying };

Level join(Level a, Level b) {
    if (a == b || b == Level::Constant) return a;
    if (a == Level::Constant) return b;
    return Level::Varying;  // Invariant with Uniform, or anything with Varying
}

struct Operand {
    ExprNode* node = nullptr;  // null for a leaf (nothing to evaluate)
    int reg = -1;
    bool temp = false;         // reg is a temporary to release after use
    Level level = Level::Varying;
};

struct VarInfo {
    int reg;
    ScalarType type;
    bool uniform = false;  // a BlockFor variable (lane 0 holds it)
};

class Compiler {
public:
    Compiler(const ir::Kernel& k, Program& p) : k_(k), p_(p) {}

    void run() {
        declare_params();
        declare_shared();
        p_.block_idx_reg = new_reg();
        scopes_.emplace_back();
        p_.body = block_list(k_.body, /*top=*/true);
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
    int new_reg() { return p_.num_regs++; }
    int temp() {
        if (free_temps_.empty()) return new_reg();
        const int r = free_temps_.back();
        free_temps_.pop_back();
        return r;
    }
    void release(const Operand& o) {
        if (o.temp) free_temps_.push_back(o.reg);
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

    // ------------------------------------------------------------ declarations
    // Buffers get slots and scalars registers in parameter order: run_kernel
    // binds each launch's arguments to them (LaunchState), so the compiled
    // program does not depend on the arguments and can be cached.
    void declare_params() {
        int slot = 0;
        for (const auto& prm : k_.params) {
            if (prm.kind == ir::ParamKind::Buffer) {
                buffers_[prm.name] = GlobalRef{prm.name, slot++};
                continue;
            }
            const int r = new_reg();
            p_.scalar_regs.push_back(r);
            params_[prm.name] = VarInfo{r, prm.type};
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

    VarInfo lookup(const std::string& name) const {
        for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
            auto it = s->find(name);
            if (it != s->end()) return it->second;
        }
        fail("use of undeclared variable '" + name + "'");
    }

    // ------------------------------------------------------------ expressions
    Operand leaf(const ir::Expr& e) {
        switch (e.kind) {
            case ExprKind::Const: return {nullptr, value_reg(e.type, e.i, e.f), false, Level::Constant};
            case ExprKind::Var: {
                const VarInfo v = lookup(e.name);
                if (v.type != e.type) fail("variable '" + e.name + "' read with the wrong type");
                return {nullptr, v.reg, false, v.uniform ? Level::Uniform : Level::Varying};
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
    // are broadcast from lane 0.
    Operand settle(Operand o, ScalarType t, int dest = -1) {
        switch (o.level) {
            case Level::Constant:
            case Level::Invariant:
                if (o.node) p_.setup.push_back(o.node);
                o.node = nullptr;
                break;
            case Level::Uniform: {
                Operand b = finish(make_broadcast(t, o.node, o.reg), {}, dest, "broadcast");
                release(o);
                return b;
            }
            case Level::Varying: break;
        }
        if (dest < 0 || o.reg == dest) return o;
        return finish(make_copy(t, o.reg), {o}, dest, "copy");
    }

    // Gives node its output (dest, or a temporary), its inputs, and releases ops.
    Operand finish(std::unique_ptr<ExprNode> node, const std::vector<Operand>& ops, int dest, const char* what,
                   Level level = Level::Varying) {
        if (!node) fail(std::string("unsupported ") + what);
        for (const auto& o : ops)
            if (o.node) node->inputs.push_back(o.node);
        // Setup results must outlive the setup: never temporaries.
        const bool hoisted = level == Level::Constant || level == Level::Invariant;
        const bool to_temp = dest < 0 && !hoisted;
        node->out = hoisted ? new_reg() : to_temp ? temp() : dest;
        for (const auto& o : ops) release(o);
        ExprNode* n = own(std::move(node));
        return {n, n->out, to_temp, level};
    }

    // An operand converted to type `to`, readable per lane (index and lane operands).
    Operand expr_as(const ir::ExprPtr& e, ScalarType to) {
        if (e->type == to) return expr(e);
        Operand o = raw(e);
        if (o.level == Level::Varying) return finish(make_cast(e->type, to, o.reg), {o}, -1, "conversion");
        return settle(finish(make_cast(e->type, to, o.reg), {o}, -1, "conversion", o.level), to);
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
    // those of a Constant/Invariant node stay inputs of the hoisted subtree.
    Operand raw(const ir::ExprPtr& ep, int dest = -1) {
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
        std::vector<Operand> ops;
        Level level = Level::Constant;
        for (const auto& a : e.args) {
            ops.push_back(raw(a));
            level = join(level, ops.back().level);
        }
        for (size_t k = 0; k < ops.size(); ++k) {
            const bool keep = level == ops[k].level || (level == Level::Invariant && ops[k].level == Level::Constant);
            if (!keep) ops[k] = settle(ops[k], e.args[k]->type);
        }
        std::vector<int> regs;
        for (const auto& o : ops) regs.push_back(o.reg);
        const int out = level == Level::Varying ? dest : -1;  // other levels are settled into dest later
        return finish(arith_node(e, regs), ops, out, "operation", level);
    }

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

    Operand load(const ir::Expr& e, int dest) {
        expect_args(e, 1);
        if (e.space == MemSpace::Global) {
            auto it = buffers_.find(e.name);
            if (it == buffers_.end()) fail("load from unknown buffer '" + e.name + "'");
            std::vector<Operand> ops{expr_as(e.args[0], ScalarType::I64)};
            return finish(make_load(e.type, it->second, ops[0].reg), ops, dest, "load");
        }
        std::vector<Operand> ops{expr_as(e.args[0], ScalarType::I32)};
        return finish(make_load(e.type, SharedRef{shared_index(e.name, e.type)}, ops[0].reg), ops, dest, "load");
    }

    // A shuffle reads other lanes' values, so it never writes a register in
    // place: to a temporary, then copied into dest.
    Operand shuffle(const ir::Expr& e, int dest) {
        expect_args(e, 2);
        std::vector<Operand> ops{expr(e.args[0]), expr_as(e.args[1], ScalarType::I32)};
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

    StmtNode* let(const ir::Stmt& s) {
        if (s.exprs.size() != 1) fail("malformed let of '" + s.name + "'");
        if (scopes_.back().count(s.name)) fail("variable '" + s.name + "' declared twice in one scope");
        const int reg = new_reg();
        const ScalarType t = s.exprs[0]->type;
        Operand v = expr(s.exprs[0], reg);  // the value may read an outer variable of the same name
        scopes_.back()[s.name] = VarInfo{reg, t};
        return own(make_eval(v.node));
    }

    StmtNode* assign(const ir::Stmt& s) {
        if (s.exprs.size() != 1) fail("malformed assignment to '" + s.name + "'");
        const VarInfo v = lookup(s.name);
        if (v.type != s.exprs[0]->type) fail("assignment to '" + s.name + "' of a value of another type");
        return own(make_eval(expr(s.exprs[0], v.reg).node));
    }

    StmtNode* store(const ir::Stmt& s) {
        if (s.exprs.size() != 2) fail("malformed store to '" + s.name + "'");
        const ScalarType t = s.exprs[1]->type;
        const bool global = s.space == MemSpace::Global;
        Operand ix = expr_as(s.exprs[0], global ? ScalarType::I64 : ScalarType::I32);
        Operand v = expr(s.exprs[1]);
        release(ix);
        release(v);
        if (!global) return own(make_store(t, SharedRef{shared_index(s.name, t)}, ix.node, ix.reg, v.node, v.reg));
        return own(make_store(t, buffer(s.name), ix.node, ix.reg, v.node, v.reg));
    }

    StmtNode* if_stmt(const ir::Stmt& s) {
        if (s.exprs.size() != 1 || s.exprs[0]->type != ScalarType::Bool) fail("if without a bool condition");
        Operand c = expr(s.exprs[0]);
        release(c);  // the masks are made before either branch runs
        const int slot = p_.num_mask_slots;
        p_.num_mask_slots += 2;
        StmtNode* then_s = scoped_seq(s.body);
        StmtNode* else_s = s.else_body.empty() ? nullptr : scoped_seq(s.else_body);
        return own(make_if(c.node, c.reg, then_s, else_s, slot));
    }

    StmtNode* for_stmt(const ir::Stmt& s) {
        if (s.exprs.size() != 3) fail("malformed for loop over '" + s.name + "'");
        const ScalarType t = s.exprs[0]->type;
        if (s.exprs[1]->type != t || s.exprs[2]->type != t) fail("for loop bounds of different types");
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
        std::vector<Operand> ops{expr_as(s.exprs[0], global ? ScalarType::I64 : ScalarType::I32),
                                 expr_as(s.exprs[1], s.type)};
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
        if (e->type != ScalarType::I64) {
            const Level level = o.level;
            o = finish(make_cast(e->type, ScalarType::I64, o.reg), {o}, -1, "conversion", level);
        }
        lane0 = o.level == Level::Uniform || o.level == Level::Constant;
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
        UniformExpr range[3];
        for (int k = 0; k < 3; ++k) {
            bool lane0 = false;
            Operand o = uniform_operand(b.range[size_t(k)], lane0);
            release(o);  // read right after evaluation
            range[k] = UniformExpr{o.node, o.reg, lane0};
        }
        const int var = new_reg();
        scopes_.emplace_back();
        scopes_.back()[b.var] = VarInfo{var, ScalarType::I64, true};
        auto body = block_list(b.body, false);
        scopes_.pop_back();
        return own(make_block_for(var, range[0], range[1], range[2], std::move(body), b.var));
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

}  // namespace shoal::cpu
