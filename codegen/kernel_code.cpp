// Kernel-code helpers (kernel_code.h).
#include "codegen/kernel_code.h"

namespace shoal::compiled {

std::vector<ir::ExprPtr> variables(ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& values) {
    std::vector<ir::ExprPtr> out;
    for (const ir::ExprPtr& v : values) {
        const std::string name = kb.fresh("m");
        kb.emit(ir::let(name, v));
        out.push_back(ir::var(name, v->type));
    }
    return out;
}

void assign_if(ir::KernelBuilder& kb, const ir::ExprPtr& cond, const std::vector<ir::ExprPtr>& vars,
               const std::function<std::vector<ir::ExprPtr>()>& body) {
    kb.open();
    const std::vector<ir::ExprPtr> r = body();
    for (size_t k = 0; k < vars.size(); ++k) kb.emit(ir::assign(vars[k]->name, r[k]));
    kb.emit(ir::if_then(cond, kb.close()));
}


ir::Combine optional_combine(const UserOp& f, const std::vector<ir::ScalarType>& types) {
    ir::Combine c;
    c.types.push_back(ir::ScalarType::Bool);
    c.neutral.push_back(ir::const_bool(false));
    for (ir::ScalarType t : types) {
        c.types.push_back(t);
        c.neutral.push_back(compiled::zero_of(t));
    }
    c.fn = [f](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& a, const std::vector<ir::ExprPtr>& b) {
        const std::vector<ir::ExprPtr> av(a.begin() + 1, a.end()), bv(b.begin() + 1, b.end());
        std::vector<ir::ExprPtr> picked;
        for (size_t k = 0; k < av.size(); ++k) picked.push_back(ir::select(a[0], av[k], bv[k]));
        std::vector<ir::ExprPtr> vars = variables(kb, picked);
        assign_if(kb, ir::binary(ir::BinaryOp::And, a[0], b[0]), vars, [&] { return f(kb, av, bv); });
        vars.insert(vars.begin(), kb.bind("ok", ir::binary(ir::BinaryOp::Or, a[0], b[0])));
        return vars;
    };
    return c;  // not commutative: f is combined in order
}

std::vector<ir::ExprPtr> lift_all(FuseContext& fc, ir::KernelBuilder& kb, const std::vector<Scalar>& zs) {
    std::vector<ir::ExprPtr> out;
    for (const Scalar& z : zs) out.push_back(fc.lift(kb, z, &z));  // the address keys the parameter
    return out;
}

std::vector<ir::ExprPtr> column_zero(const std::vector<ir::ExprPtr>& i) {
    return {ir::binary(ir::BinaryOp::Eq, i.back(), ir::const_int(0))};
}


ir::PullTuple seed_input_tuple(const std::vector<PullArray>& xs, bool with_valid) {
    ir::PullTuple t{xs[0].shape, {}, nullptr};
    if (with_valid) t.elems.push_back(ir::ScalarType::Bool);
    for (const PullArray& x : xs) t.elems.push_back(x.elem);
    return t;
}

ir::PullTuple folded_input(FuseContext& fc, SeedStep step, std::shared_ptr<const std::vector<Scalar>> zs,
                           const std::vector<PullArray>& xs,
                           std::function<ir::ExprPtr(ir::KernelBuilder&, const std::vector<ir::ExprPtr>&)> is_start,
                           bool with_valid) {
    ir::PullTuple t = seed_input_tuple(xs, with_valid);
    t.at = [&fc, step, zs, xs, is_start, with_valid](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
        std::vector<ir::ExprPtr> vals = variables(kb, element_at(kb, xs, i));
        assign_if(kb, kb.bind("start", is_start(kb, i)), vals, [&] { return step(kb, lift_all(fc, kb, *zs), vals); });
        if (with_valid) vals.insert(vals.begin(), ir::const_bool(true));
        return vals;
    };
    return t;
}

ir::PullTuple shifted_input(FuseContext& fc, std::shared_ptr<const std::vector<Scalar>> zs,
                            const std::vector<PullArray>& xs, bool with_valid) {
    ir::PullTuple t = seed_input_tuple(xs, with_valid);
    t.at = [&fc, zs, xs, with_valid](ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i) {
        std::vector<ir::ExprPtr> vals = variables(kb, lift_all(fc, kb, *zs));
        std::vector<ir::ExprPtr> prev = i;
        prev.back() = ir::binary(ir::BinaryOp::Sub, i.back(), ir::const_int(1));
        assign_if(kb, ir::binary(ir::BinaryOp::Gt, i.back(), ir::const_int(0)), vals,
                  [&] { return element_at(kb, xs, prev); });
        if (with_valid) vals.insert(vals.begin(), ir::const_bool(true));
        return vals;
    };
    return t;
}

ir::ExprPtr linear_index(ir::KernelBuilder& kb, const std::vector<ir::ExprPtr>& i, const std::vector<ir::ExprPtr>& shape) {
    ir::ExprPtr flat = ir::const_int(0);
    for (size_t k = 0; k < i.size(); ++k)
        flat = ir::binary(ir::BinaryOp::Add, ir::binary(ir::BinaryOp::Mul, flat, use(kb, shape[k])), i[k]);
    return kb.bind("flat", flat);
}

ir::ExprPtr philox_uniform(ir::KernelBuilder& kb, const ir::ExprPtr& seed, const ir::ExprPtr& stream,
                           const ir::ExprPtr& index) {
    using ir::BinaryOp;
    const ir::ScalarType u32 = ir::ScalarType::U32, u64 = ir::ScalarType::U64;
    auto word = [&](const ir::ExprPtr& x, int shift) {  // bits [shift, shift + 32) of a 64-bit value
        const ir::ExprPtr w = ir::cast(u64, x);
        return kb.bind("w", ir::cast(u32, shift ? ir::binary(BinaryOp::Shr, w, ir::const_int(shift, u64)) : w));
    };
    std::vector<ir::ExprPtr> c = {word(index, 0), word(index, 32), word(stream, 0), word(stream, 32)};
    std::vector<ir::ExprPtr> k = {word(seed, 0), word(seed, 32)};
    auto mulhilo = [&](uint32_t m, const ir::ExprPtr& x) {
        const ir::ExprPtr p = kb.bind("p", ir::binary(BinaryOp::Mul, ir::const_int(m, u64), ir::cast(u64, x)));
        return std::pair{kb.bind("hi", ir::cast(u32, ir::binary(BinaryOp::Shr, p, ir::const_int(32, u64)))),
                         kb.bind("lo", ir::cast(u32, p))};
    };
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {  // the key schedule bumps the key before every round but the first
            k[0] = kb.bind("k", ir::binary(BinaryOp::Add, k[0], ir::const_int(0x9E3779B9, u32)));
            k[1] = kb.bind("k", ir::binary(BinaryOp::Add, k[1], ir::const_int(0xBB67AE85, u32)));
        }
        const auto [hi0, lo0] = mulhilo(0xD2511F53, c[0]);
        const auto [hi1, lo1] = mulhilo(0xCD9E8D57, c[2]);
        c = {kb.bind("c", ir::binary(BinaryOp::Xor, ir::binary(BinaryOp::Xor, hi1, c[1]), k[0])), lo1,
             kb.bind("c", ir::binary(BinaryOp::Xor, ir::binary(BinaryOp::Xor, hi0, c[3]), k[1])), lo0};
    }
    // 24 bits fill a float's mantissa exactly, so the result is < 1 and exact.
    const ir::ExprPtr bits = ir::binary(BinaryOp::Shr, c[0], ir::const_int(8, u32));
    return ir::binary(BinaryOp::Mul, ir::cast(ir::ScalarType::F32, bits), ir::const_float(0x1p-24, ir::ScalarType::F32));
}

}  // namespace shoal::compiled
