// Control vector nodes: statements under a lane mask (SIMT divergence) and
// the block-level phases and uniform loops.
//
// Divergence: If splits the active lanes by the condition and runs each
// branch with its lanes (a branch without lanes is skipped); For and While
// run while any active lane continues, narrowing the mask as lanes finish, so
// every lane gets its own trip count and the body's nodes still run once per
// iteration for all continuing lanes.
#include <algorithm>
#include <limits>
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

void eval_lane0_opt(ExprNode* n, Frame& f) {
    if (n) n->eval_lane0(f);
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
        split_mask(m, f.in<uint8_t>(cond), f.mask_buf(slot), else_s ? f.mask_buf(slot + 1) : nullptr, yes,
                   else_s ? &no : nullptr);
        if (!yes.empty()) then_s->exec(f, yes);
        if (else_s && !no.empty()) else_s->exec(f, no);
    }
};

// c[i] = v[i] < h[i] for the lanes of m; returns how many are true.
template <class T>
int compare_lanes(const Mask& m, const T* v, const T* h, uint8_t* c) {
    int live = 0;
    for_lanes(m, [&](int i) {
        c[i] = v[i] < h[i];
        live += c[i];
    });
    return live;
}

// The lanes of cur that continue, given c and its count `live`: cur itself
// when all do (no second pass), else a list in the loop's mask slot.
Mask continuing(Frame& f, const Mask& cur, const uint8_t* c, int live, int slot) {
    if (live == cur.count) return cur;
    Mask next;
    split_mask(cur, c, f.mask_buf(slot), nullptr, next, nullptr);
    return next;
}

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
            // Compare and count in one pass: in a grid-stride loop every lane
            // usually continues (all but the last trip), and then the mask is
            // kept as is without split_mask's second pass over c.
            const int live = compare_lanes(cur, v, f.in<T>(hi), c);
            if (live == 0) return;
            cur = continuing(f, cur, c, live, slot);
            check_cancel(*f.launch);
            body->exec(f, cur);
            eval_opt(step_node, f, cur);
            const T* s = f.in<T>(step);
            for_lanes(cur, [&](int i) { v[i] = ops::add(v[i], s[i]); });
        }
    }
};

// ---------------------------------------------------------------- affine lanes
// An affine lane value base + i * stride seen from scalars: over the active
// lanes first..last its values are exact (no lane wraps around) and rise
// with i (stride >= 0), or `exact` is false and the lanes must be looked at.
struct AffineRange {
    using Wide = __int128;  // every 64-bit value, signed or not, and their sums and products by a lane
    Wide base = 0, stride = 0;
    bool exact = false;

    template <class T>
    AffineRange(T b, T s, int first, int last) : base(b), stride(s) {
        const Wide lo = base + Wide(first) * stride, hi = base + Wide(last) * stride;
        exact = stride >= 0 && lo >= Wide(std::numeric_limits<T>::min()) && hi <= Wide(std::numeric_limits<T>::max());
    }

    static constexpr int kPastLanes = 1 << 16;  // blocks have at most 1024 lanes

    // The first lane index whose value is >= bound: lanes below it are < bound.
    int first_reaching(Wide bound) const {
        if (bound <= base) return 0;
        if (stride == 0) return kPastLanes;
        return int(std::min(Wide(kPastLanes), (bound - base + stride - 1) / stride));
    }
};

// The lanes of m with index in [a, b) (a run of m's lanes, no copy) and the
// others: listed in out_buf when they lie on both sides of [a, b).
void split_interval(const Mask& m, int a, int b, uint16_t* out_buf, Mask& in, Mask& out) {
    const uint16_t* lanes = m.idx;
    int count = m.count, i0, i1;  // m's lanes [i0, i1) (by position) are inside
    if (m.is_range()) {
        i0 = std::clamp(a, m.lo, m.hi) - m.lo;
        i1 = std::clamp(b, m.lo, m.hi) - m.lo;
    } else {
        i0 = int(std::lower_bound(lanes, lanes + count, a) - lanes);
        i1 = int(std::lower_bound(lanes, lanes + count, b) - lanes);
    }
    i1 = std::max(i0, i1);
    auto piece = [&](int from, int to) {  // m's lanes at positions [from, to)
        return m.is_range() ? Mask::range(m.lo + from, m.lo + to) : list_mask(lanes + from, to - from);
    };
    in = piece(i0, i1);
    if (i0 == 0 || i1 == count) {
        out = i0 == 0 ? piece(i1, count) : piece(0, i0);
        return;
    }
    int n = 0;
    for_lanes(m, [&](int i) {
        out_buf[n] = uint16_t(i);
        n += i < a || i >= b;
    });
    out = list_mask(out_buf, n);
}

// make_affine_if (nodes.h): the lanes where `affine OP scalar` holds are an
// interval of lane indices (the values rise with the lane), found from
// scalars; the per-lane condition is computed only when the values may
// wrap around.
template <class T>
struct AffineIf final : StmtNode {
    AffineCondition c;
    ExprNode* cond_node;
    int cond;
    StmtNode* then_s;
    StmtNode* else_s;  // may be null
    int slot;          // mask lists slot (then) and slot + 1 (else)
    AffineIf(const AffineCondition& ac, ExprNode* cn, int co, StmtNode* t, StmtNode* e, int s)
        : c(ac), cond_node(cn), cond(co), then_s(t), else_s(e), slot(s) {}

    void exec(Frame& f, const Mask& m) override {
        const auto [base, stride] = affine_parts<T>(f, c.lhs);
        const AffineRange r(base, stride, m.first(), m.last());
        Mask yes, no;
        if (r.exact) {
            eval_lane0_opt(c.rhs.node, f);
            const AffineRange::Wide h = f.in<T>(c.rhs.reg)[0];
            int a = 0, b = AffineRange::kPastLanes;  // the lanes where the comparison holds, or (Ne) fails
            switch (c.op) {
                case ir::BinaryOp::Lt: b = r.first_reaching(h); break;
                case ir::BinaryOp::Le: b = r.first_reaching(h + 1); break;
                case ir::BinaryOp::Ge: a = r.first_reaching(h); break;
                case ir::BinaryOp::Gt: a = r.first_reaching(h + 1); break;
                default: a = r.first_reaching(h), b = r.first_reaching(h + 1); break;  // Eq, Ne
            }
            const bool holds_inside = c.op != ir::BinaryOp::Ne;
            Mask inside, outside;
            split_interval(m, a, b, f.mask_buf(holds_inside ? slot + 1 : slot), inside, outside);
            yes = holds_inside ? inside : outside;
            no = holds_inside ? outside : inside;
        } else {
            eval_opt(cond_node, f, m);
            split_mask(m, f.in<uint8_t>(cond), f.mask_buf(slot), f.mask_buf(slot + 1), yes, &no);
        }
        if (!yes.empty()) then_s->exec(f, yes);
        if (else_s && !no.empty()) else_s->exec(f, no);
    }
};

// make_affine_for (nodes.h). Every active lane's variable is base + lane *
// stride, so the loop keeps the two scalars (lane 0 of var and var_stride)
// and steps the base; a uniform bound gives the continuing lanes (a prefix:
// the values rise with the lane) without a per-lane compare. Lanes of the
// variable are computed only for a per-lane compare, into var itself (its
// lane 0 is then the base again).
template <class T>
struct AffineFor final : StmtNode {
    AffineLoop loop;
    explicit AffineFor(const AffineLoop& l) : loop(l) {}

    void exec(Frame& f, const Mask& m) override {
        T* v = f.reg<T>(loop.var);
        const auto [base, stride] = affine_parts<T>(f, loop.lo);
        v[0] = base;
        f.reg<T>(loop.var_stride)[0] = stride;
        // With one element per lane (stride 1), an index moving with the
        // variable moves by the step each trip (AccessHints::prefetch).
        const int64_t outer_ahead = f.prefetch_ahead;
        eval_lane0_opt(loop.step.node, f);
        f.prefetch_ahead = stride == 1 ? int64_t(f.in<T>(loop.step.reg)[0]) : 0;
        for (Mask cur = next_lanes(f, m, stride); !cur.empty(); cur = next_lanes(f, cur, stride)) {
            check_cancel(*f.launch);
            loop.body->exec(f, cur);
            eval_lane0_opt(loop.step.node, f);
            v[0] = ops::add(v[0], f.in<T>(loop.step.reg)[0]);
        }
        f.prefetch_ahead = outer_ahead;
    }

    // The lanes of cur whose variable is still below hi.
    Mask next_lanes(Frame& f, const Mask& cur, T stride) const {
        T* v = f.reg<T>(loop.var);
        uint8_t* c = f.reg<uint8_t>(loop.cond);
        if (loop.hi_uniform) {
            eval_lane0_opt(loop.hi.node, f);
            const T h = f.in<T>(loop.hi.reg)[0];
            const AffineRange r(v[0], stride, cur.first(), cur.last());
            if (r.exact) {
                Mask below, rest;
                split_interval(cur, 0, r.first_reaching(h), nullptr, below, rest);  // rest: one run, no list
                return below;
            }
            affine_lanes(cur, v[0], stride, v);
            int live = 0;
            for_lanes(cur, [&](int i) {
                c[i] = v[i] < h;
                live += c[i];
            });
            return live ? continuing(f, cur, c, live, loop.slot) : Mask{};
        }
        eval_opt(loop.hi.node, f, cur);
        affine_lanes(cur, v[0], stride, v);
        const int live = compare_lanes(cur, v, f.in<T>(loop.hi.reg), c);
        return live ? continuing(f, cur, c, live, loop.slot) : Mask{};
    }
};

struct SetScalars final : StmtNode {
    std::vector<ValueRef> parts;
    std::vector<int> regs;
    SetScalars(std::vector<ValueRef> p, std::vector<int> r) : parts(std::move(p)), regs(std::move(r)) {}

    void exec(Frame& f, const Mask&) override {
        for (size_t k = 0; k < parts.size(); ++k) {
            eval_lane0_opt(parts[k].node, f);
            f.reg<uint64_t>(regs[k])[0] = f.in<uint64_t>(parts[k].reg)[0];  // all 8 bytes of the lane, whatever the type
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
            split_mask(cur, f.in<uint8_t>(cond), f.mask_buf(slot), nullptr, next, nullptr);
            if (next.empty()) return;
            cur = next;
            check_cancel(*f.launch);
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
        const int64_t* ix = f.in<int64_t>(index);
        const int64_t* ex = f.in<int64_t>(extent);
        for_lanes(m, [&](int i) {
            // Ordered as the global thread block * blockDim + i is (blockDim <= 1024).
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
    ValueRef range[3];  // lo, hi, step
    bool lane0[3];
    std::vector<BlockNode*> body;
    std::string var_name;
    BlockFor(int v, const ValueRef r[3], const bool l0[3], std::vector<BlockNode*> b, std::string n)
        : var(v), range{r[0], r[1], r[2]}, lane0{l0[0], l0[1], l0[2]}, body(std::move(b)), var_name(std::move(n)) {}

    // A uniform I64 bound: evaluated for lane 0. A bound the compiler could
    // not prove uniform is, in check mode, evaluated for all lanes with a
    // check that they agree (a barrier inside the loop would otherwise be
    // reached a different number of times by different threads).
    int64_t uniform(Frame& f, int k, const char* what) const {
        const int bs = f.prog->block_size;
        const Mask m = f.prog->check && !lane0[k] ? Mask::range(0, bs) : Mask::range(0, 1);
        if (lane0[k]) eval_lane0_opt(range[k].node, f);
        else eval_opt(range[k].node, f, m);
        const int64_t* v = f.in<int64_t>(range[k].reg);
        for (int i = 1; i < m.hi; ++i) {
            if (v[i] != v[0])
                fail(f, "barrier divergence: the " + std::string(what) + " of block loop '" + var_name +
                            "' is " + std::to_string(v[0]) + " in thread 0 but " + std::to_string(v[i]) +
                            " in thread " + std::to_string(i) + " of block " + std::to_string(f.block));
        }
        return v[0];
    }

    void exec(Frame& f) override {
        const int64_t l = uniform(f, 0, "start"), h = uniform(f, 1, "end"), s = uniform(f, 2, "step");
        if (s <= 0) fail(f, "block loop '" + var_name + "' has step " + std::to_string(s) + " (must be positive)");
        for (int64_t v = l; v < h; v += s) {
            check_cancel(*f.launch);
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

std::unique_ptr<StmtNode> make_affine_if(const AffineCondition& c, ExprNode* cond_node, int cond, StmtNode* then_s,
                                         StmtNode* else_s, int mask_slot) {
    return with_type(c.type, [&](auto tag) -> std::unique_ptr<StmtNode> {
        using T = typename decltype(tag)::type;
        if constexpr (is_int_v<T>) return std::make_unique<AffineIf<T>>(c, cond_node, cond, then_s, else_s, mask_slot);
        else return nullptr;
    });
}

std::unique_ptr<StmtNode> make_affine_for(ir::ScalarType t, const AffineLoop& loop) {
    return with_type(t, [&](auto tag) -> std::unique_ptr<StmtNode> {
        using T = typename decltype(tag)::type;
        if constexpr (is_int_v<T>) return std::make_unique<AffineFor<T>>(loop);
        else return nullptr;
    });
}

std::unique_ptr<StmtNode> make_set_scalars(std::vector<ValueRef> parts, std::vector<int> regs) {
    return std::make_unique<SetScalars>(std::move(parts), std::move(regs));
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

std::unique_ptr<BlockNode> make_block_for(int var, const ValueRef range[3], const bool lane0[3],
                                          std::vector<BlockNode*> body, std::string var_name) {
    return std::make_unique<BlockFor>(var, range, lane0, std::move(body), std::move(var_name));
}

}  // namespace shoal::cpu
