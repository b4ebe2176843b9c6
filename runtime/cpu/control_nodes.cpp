// Control vector nodes: statements under a lane mask (SIMT divergence) and
// the block-level phases and uniform loops.
//
// Divergence: If splits the active lanes by the condition and runs each
// branch with its lanes (a branch without lanes is skipped); For and While
// run while any active lane continues, narrowing the mask as lanes finish, so
// every lane gets its own trip count and the body's nodes still run once per
// iteration for all continuing lanes.
#include <string>

#include "runtime/cpu/nodes.h"
#include "runtime/cpu/scalar_ops.h"

namespace shoal::cpu {

namespace {

struct Eval final : StmtNode {
    ExprNode* e;
    explicit Eval(ExprNode* e_) : e(e_) {}
    void exec(Frame& f, const Mask& m) override { e->eval(f, m); }
};

struct Seq final : StmtNode {
    std::vector<StmtNode*> body;
    explicit Seq(std::vector<StmtNode*> b) : body(std::move(b)) {}
    void exec(Frame& f, const Mask& m) override {
        for (StmtNode* s : body) s->exec(f, m);
    }
};

void eval_opt(ExprNode* n, Frame& f, const Mask& m) {
    if (n) n->eval(f, m);
}

struct If final : StmtNode {
    ExprNode* cond_node;
    int cond;
    StmtNode* then_s;
    StmtNode* else_s;  // may be null
    int slot;          // mask lists slot (then) and slot + 1 (else)
    If(ExprNode* cn, int c, StmtNode* t, StmtNode* e, int s) : cond_node(cn), cond(c), then_s(t), else_s(e), slot(s) {}

    void exec(Frame& f, const Mask& m) override {
        eval_opt(cond_node, f, m);
        Mask yes, no;
        split_mask(m, f.reg<uint8_t>(cond), f.mask_buf(slot), else_s ? f.mask_buf(slot + 1) : nullptr, yes,
                   else_s ? &no : nullptr);
        if (!yes.empty()) then_s->exec(f, yes);
        if (else_s && !no.empty()) else_s->exec(f, no);
    }
};

template <class T>
struct For final : StmtNode {
    int var;
    ExprNode* lo_node;  // writes var
    ExprNode* hi_node;
    int hi;
    ExprNode* step_node;
    int step;
    StmtNode* body;
    int slot;
    int cond;  // Bool scratch register
    For(int v, ExprNode* l, ExprNode* hn, int h, ExprNode* sn, int s, StmtNode* b, int sl, int c)
        : var(v), lo_node(l), hi_node(hn), hi(h), step_node(sn), step(s), body(b), slot(sl), cond(c) {}

    // for (var = lo; var < hi; var += step), hi and step re-evaluated every
    // iteration as in the C loop the CUDA printer emits.
    void exec(Frame& f, const Mask& m) override {
        lo_node->eval(f, m);
        T* v = f.reg<T>(var);
        uint8_t* c = f.reg<uint8_t>(cond);
        Mask cur = m;
        for (;;) {
            eval_opt(hi_node, f, cur);
            const T* h = f.reg<T>(hi);
            // Compare and count in one pass: in a grid-stride loop every lane
            // usually continues (all but the last trip), and then the mask is
            // kept as is without split_mask's second pass over c.
            int live = 0;
            for_lanes(cur, [&](int i) {
                c[i] = v[i] < h[i];
                live += c[i];
            });
            if (live == 0) return;
            if (live != cur.count) {
                Mask next;
                split_mask(cur, c, f.mask_buf(slot), nullptr, next, nullptr);
                cur = next;
            }
            body->exec(f, cur);
            eval_opt(step_node, f, cur);
            const T* s = f.reg<T>(step);
            for_lanes(cur, [&](int i) { v[i] = ops::add(v[i], s[i]); });
        }
    }
};

struct While final : StmtNode {
    ExprNode* cond_node;
    int cond;
    StmtNode* body;
    int slot;
    While(ExprNode* cn, int c, StmtNode* b, int s) : cond_node(cn), cond(c), body(b), slot(s) {}

    void exec(Frame& f, const Mask& m) override {
        Mask cur = m;
        for (;;) {
            eval_opt(cond_node, f, cur);
            Mask next;
            split_mask(cur, f.reg<uint8_t>(cond), f.mask_buf(slot), nullptr, next, nullptr);
            if (next.empty()) return;
            cur = next;
            body->exec(f, cur);
        }
    }
};

// Records (code, index, extent) for every active lane; the launch keeps the
// record of the lowest (block, thread), the first in program order for that
// thread, so the reported error does not depend on worker scheduling.
struct ErrorStmt final : StmtNode {
    int code;
    ExprNode* index_node;
    int index;
    ExprNode* extent_node;
    int extent;
    ErrorStmt(int c, ExprNode* in, int i, ExprNode* en, int e)
        : code(c), index_node(in), index(i), extent_node(en), extent(e) {}

    void exec(Frame& f, const Mask& m) override {
        eval_opt(index_node, f, m);
        eval_opt(extent_node, f, m);
        const int64_t* ix = f.reg<int64_t>(index);
        const int64_t* ex = f.reg<int64_t>(extent);
        for_lanes(m, [&](int i) {
            const uint64_t key = uint64_t(f.block) * 1024 + uint64_t(i);
            if (key < f.launch->error_key.load(std::memory_order_relaxed))
                f.launch->record_error(key, code, ix[i], ex[i]);
        });
    }
};

struct Phase final : BlockNode {
    StmtNode* code;
    int index;
    bool barrier;
    Phase(StmtNode* c, int i, bool b) : code(c), index(i), barrier(b) {}

    void exec(Frame& f) override {
        f.phase = index;
        ++f.epoch;  // a new phase: accesses before the barrier cannot race with these
        code->exec(f, Mask::range(0, f.prog->block_size));
        if (barrier) ++f.counters.barriers;
    }
};

struct BlockFor final : BlockNode {
    int var;
    UniformExpr lo, hi, step;
    std::vector<BlockNode*> body;
    std::string var_name;
    BlockFor(int v, UniformExpr l, UniformExpr h, UniformExpr s, std::vector<BlockNode*> b, std::string n)
        : var(v), lo(l), hi(h), step(s), body(std::move(b)), var_name(std::move(n)) {}

    // A uniform I64 bound: evaluated for lane 0. A bound the compiler could
    // not prove uniform is, in check mode, evaluated for all lanes with a
    // check that they agree (a barrier inside the loop would otherwise be
    // reached a different number of times by different threads).
    int64_t uniform(Frame& f, const UniformExpr& e, const char* what) const {
        const int bs = f.prog->block_size;
        const Mask m = f.prog->check && !e.lane0 ? Mask::range(0, bs) : Mask::range(0, 1);
        eval_opt(e.node, f, m);
        const int64_t* v = f.reg<int64_t>(e.reg);
        for (int i = 1; i < m.hi; ++i) {
            if (v[i] != v[0])
                fail(f, "barrier divergence: the " + std::string(what) + " of block loop '" + var_name +
                            "' is " + std::to_string(v[0]) + " in thread 0 but " + std::to_string(v[i]) +
                            " in thread " + std::to_string(i) + " of block " + std::to_string(f.block));
        }
        return v[0];
    }

    void exec(Frame& f) override {
        const int64_t l = uniform(f, lo, "start"), h = uniform(f, hi, "end"), s = uniform(f, step, "step");
        if (s <= 0) fail(f, "block loop '" + var_name + "' has step " + std::to_string(s) + " (must be positive)");
        for (int64_t v = l; v < h; v += s) {
            f.reg<int64_t>(var)[0] = v;  // uniform: lane 0 only (read through Broadcast nodes)
            for (BlockNode* b : body) b->exec(f);
        }
    }
};

}  // namespace

std::unique_ptr<StmtNode> make_eval(ExprNode* e) { return std::make_unique<Eval>(e); }

std::unique_ptr<StmtNode> make_seq(std::vector<StmtNode*> body) { return std::make_unique<Seq>(std::move(body)); }

std::unique_ptr<StmtNode> make_if(ExprNode* cond_node, int cond, StmtNode* then_s, StmtNode* else_s, int mask_slot) {
    return std::make_unique<If>(cond_node, cond, then_s, else_s, mask_slot);
}

std::unique_ptr<StmtNode> make_for(ir::ScalarType t, int var, ExprNode* lo_node, ExprNode* hi_node, int hi,
                                   ExprNode* step_node, int step, StmtNode* body, int mask_slot, int cond) {
    return with_type(t, [&](auto tag) -> std::unique_ptr<StmtNode> {
        using T = typename decltype(tag)::type;
        if constexpr (is_bool_v<T>) return nullptr;
        else return std::make_unique<For<T>>(var, lo_node, hi_node, hi, step_node, step, body, mask_slot, cond);
    });
}

std::unique_ptr<StmtNode> make_while(ExprNode* cond_node, int cond, StmtNode* body, int mask_slot) {
    return std::make_unique<While>(cond_node, cond, body, mask_slot);
}

std::unique_ptr<StmtNode> make_error(int code, ExprNode* index_node, int index, ExprNode* extent_node, int extent) {
    return std::make_unique<ErrorStmt>(code, index_node, index, extent_node, extent);
}

std::unique_ptr<BlockNode> make_phase(StmtNode* code, int index, bool barrier) {
    return std::make_unique<Phase>(code, index, barrier);
}

std::unique_ptr<BlockNode> make_block_for(int var, UniformExpr lo, UniformExpr hi, UniformExpr step,
                                          std::vector<BlockNode*> body, std::string var_name) {
    return std::make_unique<BlockFor>(var, lo, hi, step, std::move(body), std::move(var_name));
}

}  // namespace shoal::cpu
