// Arithmetic vector nodes: Unary, Binary, Select, Cast, Call, copies. Each
// node is a template over the lane type and the scalar function (scalar_ops.h)
// so its lane loop is a tight, inlinable, vectorisable loop; the loops are
// SHOAL_LANE_LOOP functions (lanes.h), also compiled for AVX2.
#include <bit>
#include <cstring>
#include <type_traits>

#include "runtime/cpu/nodes.h"
#include "runtime/cpu/scalar_ops.h"

namespace shoal::cpu {

namespace {

using ir::BinaryOp;
using ir::ScalarType;
using ir::UnaryOp;

// ---------------------------------------------------------------- lane loops
template <class T, class R, R (*F)(T)>
SHOAL_LANE_LOOP void unary_lanes(const Mask& m, R* o, const T* x) {
    for_lanes(m, [&](int i) { o[i] = F(x[i]); });
}

template <class T, class R, R (*F)(T, T)>
SHOAL_LANE_LOOP void binary_lanes(const Mask& m, R* o, const T* x, const T* y) {
    for_lanes(m, [&](int i) { o[i] = F(x[i], y[i]); });
}

// One operand the same in every lane: s (on the left or the right of F).
template <class T, class R, R (*F)(T, T), bool ScalarLeft>
SHOAL_LANE_LOOP void binary_scalar_lanes(const Mask& m, R* o, T s, const T* x) {
    for_lanes(m, [&](int i) { o[i] = ScalarLeft ? F(s, x[i]) : F(x[i], s); });
}

template <class T>
SHOAL_LANE_LOOP void select_lanes(const Mask& m, T* o, const uint8_t* c, const T* x, const T* y) {
    for_lanes(m, [&](int i) { o[i] = c[i] ? x[i] : y[i]; });
}

template <class T>
SHOAL_LANE_LOOP void fill_lanes(const Mask& m, T* o, T v) {
    for_lanes(m, [&](int i) { o[i] = v; });
}

// ---------------------------------------------------------------- nodes
// Floating-point operations, for the roofline estimate of `:profile`: one
// per active lane of every node computing on float or double lanes
// (arithmetic, comparisons, math functions), one for a uniform value.
template <class T> inline void count_flops(Frame& f, int lanes) {
    if constexpr (std::is_floating_point_v<T>) f.counters.flops += lanes;
}

// compute_lane0: the scalar path of a block-uniform value (one lane).
template <class T, class R, R (*F)(T)>
struct Unary final : ExprNode {
    int a;
    explicit Unary(int a_) : a(a_) {}
    void compute(Frame& f, const Mask& m) override {
        count_flops<T>(f, m.count);
        unary_lanes<T, R, F>(m, f.out<R>(out), f.in<T>(a));
    }
    void compute_lane0(Frame& f) override {
        count_flops<T>(f, 1);
        f.out<R>(out)[0] = F(f.in<T>(a)[0]);
    }
};

template <class T, class R, R (*F)(T, T)>
struct Binary final : ExprNode {
    int a, b;
    Binary(int a_, int b_) : a(a_), b(b_) {}
    void compute(Frame& f, const Mask& m) override {
        count_flops<T>(f, m.count);
        binary_lanes<T, R, F>(m, f.out<R>(out), f.in<T>(a), f.in<T>(b));
    }
    void compute_lane0(Frame& f) override {
        count_flops<T>(f, 1);
        f.out<R>(out)[0] = F(f.in<T>(a)[0], f.in<T>(b)[0]);
    }
};

// A binary operation with a block-uniform operand, read once from lane 0 (a
// constant's register, or a uniform node evaluated for lane 0 here): no
// broadcast pass, one lane vector less to stream.
template <class T, class R, R (*F)(T, T), bool ScalarLeft>
struct BinaryScalar final : ExprNode {
    int lanes;
    ValueRef scalar;
    BinaryScalar(int l, ValueRef s) : lanes(l), scalar(s) {}
    void compute(Frame& f, const Mask& m) override {
        if (scalar.node) scalar.node->eval_lane0(f);
        count_flops<T>(f, m.count);
        binary_scalar_lanes<T, R, F, ScalarLeft>(m, f.out<R>(out), f.in<T>(scalar.reg)[0], f.in<T>(lanes));
    }
};

template <class T>
struct Select final : ExprNode {
    int c, a, b;
    Select(int c_, int a_, int b_) : c(c_), a(a_), b(b_) {}
    void compute(Frame& f, const Mask& m) override {
        select_lanes(m, f.out<T>(out), f.in<uint8_t>(c), f.in<T>(a), f.in<T>(b));
    }
    void compute_lane0(Frame& f) override {
        f.out<T>(out)[0] = f.in<uint8_t>(c)[0] ? f.in<T>(a)[0] : f.in<T>(b)[0];
    }
};

template <class T>
struct Copy final : ExprNode {
    int a;
    explicit Copy(int a_) : a(a_) {}
    void compute(Frame& f, const Mask& m) override {
        T* o = f.out<T>(out);
        const T* x = f.in<T>(a);
        if (m.is_range()) std::memmove(o + m.lo, x + m.lo, sizeof(T) * size_t(m.count));
        else for_lanes(m, [&](int i) { o[i] = x[i]; });
    }
};

template <class T>
struct Broadcast final : ExprNode {
    ExprNode* src;
    int src_reg;
    Broadcast(ExprNode* s, int r) : src(s), src_reg(r) {}
    void compute(Frame& f, const Mask& m) override {
        if (src) src->eval_lane0(f);
        fill_lanes(m, f.out<T>(out), f.in<T>(src_reg)[0]);
    }
};

template <class T>
struct AffineLanes final : ExprNode {
    AffineIndex a;
    explicit AffineLanes(const AffineIndex& a_) : a(a_) {}
    void compute(Frame& f, const Mask& m) override {
        const auto [base, stride] = affine_parts<T>(f, a);
        affine_lanes(m, base, stride, f.out<T>(out));
    }
};

// ---------------------------------------------------------------- scalar functions
// 64-bit integer comparisons in arithmetic form: baseline x86-64 (SSE2) has
// no 64-bit vector compare, so `a < b` would stay scalar; subtract, xor and
// shift vectorise (Hacker's Delight 2-12).
template <class T> constexpr bool wide_int_v = is_int_v<T> && sizeof(T) == 8;
template <class T> uint8_t lt(T a, T b) {
    if constexpr (wide_int_v<T>) {
        const uint64_t x = uint64_t(a), y = uint64_t(b), d = x - y;
        if constexpr (std::is_signed_v<T>) return uint8_t((d ^ ((x ^ y) & (d ^ x))) >> 63);  // sign, overflow-corrected
        else return uint8_t(((~x & y) | ((~x | y) & d)) >> 63);                            // borrow out
    } else {
        return a < b;
    }
}
template <class T> uint8_t ne(T a, T b) {
    if constexpr (wide_int_v<T>) {
        const uint64_t z = uint64_t(a) ^ uint64_t(b);
        return uint8_t((z | (0 - z)) >> 63);
    } else {
        return a != b;
    }
}
template <class T> uint8_t eq(T a, T b) {
    if constexpr (wide_int_v<T>) return uint8_t(1 - ne(a, b));
    else return a == b;
}
template <class T> uint8_t gt(T a, T b) { return lt(b, a); }
// Not !(b < a) for floats: NaN compares false both ways.
template <class T> uint8_t le(T a, T b) {
    if constexpr (wide_int_v<T>) return uint8_t(1 - lt(b, a));
    else return a <= b;
}
template <class T> uint8_t ge(T a, T b) { return le(b, a); }
template <class T> T bit_and(T a, T b) { return T(a & b); }
template <class T> T bit_or(T a, T b) { return T(a | b); }
template <class T> T bit_xor(T a, T b) { return T(a ^ b); }
template <class T> T bit_not(T a) { return T(~a); }
inline uint8_t logical_not(uint8_t a) { return uint8_t(a ^ 1); }

template <class To, class From> To convert_fn(From x) { return ops::convert<To>(x); }
template <class T> T identity(T x) { return x; }

template <class T, T (*F)(T)> std::unique_ptr<ExprNode> unary_node(int a) {
    return std::make_unique<Unary<T, T, F>>(a);
}

// The operands of a binary node: two lane vectors, or one and a scalar.
struct BinaryOperands {
    int a = -1, b = -1;  // registers; the scalar's when scalar_side names it
    int scalar_side = -1;  // 0: a is the scalar, 1: b is, -1: neither
    ExprNode* scalar_node = nullptr;
};

template <class T, class R, R (*F)(T, T)> std::unique_ptr<ExprNode> binary_node(const BinaryOperands& o) {
    if (o.scalar_side == 0) return std::make_unique<BinaryScalar<T, R, F, true>>(o.b, ValueRef{o.scalar_node, o.a});
    if (o.scalar_side == 1) return std::make_unique<BinaryScalar<T, R, F, false>>(o.a, ValueRef{o.scalar_node, o.b});
    return std::make_unique<Binary<T, R, F>>(o.a, o.b);
}

template <class T> std::unique_ptr<ExprNode> unary_typed(UnaryOp op, int a) {
    switch (op) {
        case UnaryOp::Neg:
            if constexpr (!is_bool_v<T>) return unary_node<T, ops::neg<T>>(a);
            break;
        case UnaryOp::Not:
            if constexpr (is_bool_v<T>) return unary_node<uint8_t, logical_not>(a);
            break;
        case UnaryOp::BitNot:
            if constexpr (is_int_v<T>) return unary_node<T, bit_not<T>>(a);
            break;
    }
    return nullptr;
}

template <class T> std::unique_ptr<ExprNode> comparison(BinaryOp op, const BinaryOperands& a) {
    switch (op) {
        case BinaryOp::Eq: return binary_node<T, uint8_t, eq<T>>(a);
        case BinaryOp::Ne: return binary_node<T, uint8_t, ne<T>>(a);
        case BinaryOp::Lt: return binary_node<T, uint8_t, lt<T>>(a);
        case BinaryOp::Le: return binary_node<T, uint8_t, le<T>>(a);
        case BinaryOp::Gt: return binary_node<T, uint8_t, gt<T>>(a);
        case BinaryOp::Ge: return binary_node<T, uint8_t, ge<T>>(a);
        default: return nullptr;
    }
}

template <class T> std::unique_ptr<ExprNode> binary_typed(BinaryOp op, const BinaryOperands& a) {
    if (auto c = comparison<T>(op, a)) return c;
    switch (op) {
        case BinaryOp::Min: return binary_node<T, T, ops::min<T>>(a);
        case BinaryOp::Max: return binary_node<T, T, ops::max<T>>(a);
        default: break;
    }
    if constexpr (!is_fp_v<T>) {  // bool And/Or/Xor on 0/1 bytes are the logical ones
        switch (op) {
            case BinaryOp::And: return binary_node<T, T, bit_and<T>>(a);
            case BinaryOp::Or: return binary_node<T, T, bit_or<T>>(a);
            case BinaryOp::Xor: return binary_node<T, T, bit_xor<T>>(a);
            default: break;
        }
    }
    if constexpr (is_int_v<T>) {
        switch (op) {
            case BinaryOp::Shl: return binary_node<T, T, ops::shl<T>>(a);
            case BinaryOp::Shr: return binary_node<T, T, ops::shr<T>>(a);
            default: break;
        }
    }
    if constexpr (!is_bool_v<T>) {
        switch (op) {
            case BinaryOp::Add: return binary_node<T, T, ops::add<T>>(a);
            case BinaryOp::Sub: return binary_node<T, T, ops::sub<T>>(a);
            case BinaryOp::Mul: return binary_node<T, T, ops::mul<T>>(a);
            case BinaryOp::Div: return binary_node<T, T, ops::div<T>>(a);
            case BinaryOp::Mod: return binary_node<T, T, ops::mod<T>>(a);
            default: break;
        }
    }
    return nullptr;
}

// ---------------------------------------------------------------- math calls
template <class T> T f_sqrt(T x) { return std::sqrt(x); }
template <class T> T f_exp(T x) { return scalar::exp(x); }
template <class T> T f_log(T x) { return scalar::log(x); }
template <class T> T f_sin(T x) { return std::sin(x); }
template <class T> T f_cos(T x) { return std::cos(x); }
template <class T> T f_tan(T x) { return std::tan(x); }
template <class T> T f_asin(T x) { return std::asin(x); }
template <class T> T f_acos(T x) { return std::acos(x); }
template <class T> T f_atan(T x) { return std::atan(x); }
template <class T> T f_sinh(T x) { return std::sinh(x); }
template <class T> T f_cosh(T x) { return std::cosh(x); }
template <class T> T f_tanh(T x) { return std::tanh(x); }
template <class T> T f_erf(T x) { return std::erf(x); }
template <class T> T f_floor(T x) { return std::floor(x); }
template <class T> T f_ceil(T x) { return std::ceil(x); }
template <class T> T f_round(T x) { return std::round(x); }  // halves away from zero, as CUDA's roundf
template <class T> T f_atan2(T y, T x) { return std::atan2(y, x); }

// A node type per function: the loop calls it directly (and vectorises sqrt).
template <class T> std::unique_ptr<ExprNode> float_unary_call(const std::string& fn, int a) {
    using Make = std::unique_ptr<ExprNode> (*)(int);
    struct Entry { const char* name; Make make; };
    static const Entry table[] = {
        {"sqrt", unary_node<T, f_sqrt<T>>}, {"exp", unary_node<T, f_exp<T>>},   {"log", unary_node<T, f_log<T>>},
        {"sin", unary_node<T, f_sin<T>>},   {"cos", unary_node<T, f_cos<T>>},   {"tan", unary_node<T, f_tan<T>>},
        {"asin", unary_node<T, f_asin<T>>}, {"acos", unary_node<T, f_acos<T>>}, {"atan", unary_node<T, f_atan<T>>},
        {"sinh", unary_node<T, f_sinh<T>>}, {"cosh", unary_node<T, f_cosh<T>>}, {"tanh", unary_node<T, f_tanh<T>>},
        {"erf", unary_node<T, f_erf<T>>},
    };
    for (const auto& e : table)
        if (fn == e.name) return e.make(a);
    return nullptr;
}

template <class T> std::unique_ptr<ExprNode> call_typed(const std::string& fn, const std::vector<int>& a) {
    if (a.size() == 1) {
        if (fn == "abs") return unary_node<T, ops::abs<T>>(a[0]);
        if constexpr (is_fp_v<T>) {
            if (fn == "floor") return unary_node<T, f_floor<T>>(a[0]);
            if (fn == "ceil") return unary_node<T, f_ceil<T>>(a[0]);
            if (fn == "round") return unary_node<T, f_round<T>>(a[0]);
            return float_unary_call<T>(fn, a[0]);
        } else {
            if (fn == "floor" || fn == "ceil" || fn == "round") return unary_node<T, identity<T>>(a[0]);
        }
        return nullptr;
    }
    if (a.size() != 2) return nullptr;
    const BinaryOperands ab{a[0], a[1]};
    if (fn == "min") return binary_node<T, T, ops::min<T>>(ab);
    if (fn == "max") return binary_node<T, T, ops::max<T>>(ab);
    if (fn == "pow") return binary_node<T, T, ops::pow<T>>(ab);
    if (fn == "fmod") return binary_node<T, T, ops::mod<T>>(ab);
    if constexpr (is_fp_v<T>) {
        if (fn == "atan2") return binary_node<T, T, f_atan2<T>>(ab);
    } else {
        if (fn == "mulhi") return binary_node<T, T, ops::mulhi<T>>(ab);
    }
    return nullptr;
}

}  // namespace

std::unique_ptr<ExprNode> make_unary(UnaryOp op, ScalarType t, int a) {
    return with_type(t, [&](auto tag) { return unary_typed<typename decltype(tag)::type>(op, a); });
}

std::unique_ptr<ExprNode> make_binary(BinaryOp op, ScalarType operand, int a, int b) {
    const BinaryOperands ab{a, b};
    return with_type(operand, [&](auto tag) { return binary_typed<typename decltype(tag)::type>(op, ab); });
}

std::unique_ptr<ExprNode> make_binary(BinaryOp op, ScalarType operand, int lanes, ValueRef scalar, bool scalar_left) {
    const BinaryOperands o = scalar_left ? BinaryOperands{scalar.reg, lanes, 0, scalar.node}
                                         : BinaryOperands{lanes, scalar.reg, 1, scalar.node};
    return with_type(operand, [&](auto tag) { return binary_typed<typename decltype(tag)::type>(op, o); });
}

std::unique_ptr<ExprNode> make_select(ScalarType t, int c, int a, int b) {
    return with_type(t, [&](auto tag) -> std::unique_ptr<ExprNode> {
        return std::make_unique<Select<typename decltype(tag)::type>>(c, a, b);
    });
}

std::unique_ptr<ExprNode> make_cast(ScalarType from, ScalarType to, int a) {
    return with_type(from, [&](auto ft) {
        return with_type(to, [&](auto tt) -> std::unique_ptr<ExprNode> {
            using F = typename decltype(ft)::type;
            using T = typename decltype(tt)::type;
            return std::make_unique<Unary<F, T, convert_fn<T, F>>>(a);
        });
    });
}

template <class U, class F> U bits_of(F x) { return std::bit_cast<U>(x); }

std::unique_ptr<ExprNode> make_call(const std::string& fn, ScalarType operand, const std::vector<int>& args) {
    if (operand == ScalarType::Bool) return nullptr;
    // The one call whose result type differs from its operand's (f32 -> u32, f64 -> u64).
    if (fn == "bits") {
        if (operand == ScalarType::F32) return std::make_unique<Unary<float, uint32_t, bits_of<uint32_t, float>>>(args[0]);
        if (operand == ScalarType::F64) return std::make_unique<Unary<double, uint64_t, bits_of<uint64_t, double>>>(args[0]);
        return nullptr;
    }
    return with_type(operand, [&](auto tag) -> std::unique_ptr<ExprNode> {
        using T = typename decltype(tag)::type;
        if constexpr (is_bool_v<T>) return nullptr;
        else return call_typed<T>(fn, args);
    });
}

std::unique_ptr<ExprNode> make_copy(ScalarType t, int a) {
    return with_type(t, [&](auto tag) -> std::unique_ptr<ExprNode> {
        return std::make_unique<Copy<typename decltype(tag)::type>>(a);
    });
}

std::unique_ptr<ExprNode> make_broadcast(ScalarType t, ExprNode* src, int src_reg) {
    return with_type(t, [&](auto tag) -> std::unique_ptr<ExprNode> {
        return std::make_unique<Broadcast<typename decltype(tag)::type>>(src, src_reg);
    });
}

std::unique_ptr<ExprNode> make_affine_lanes(ScalarType t, ExprNode* base_node, int base, ExprNode* stride_node,
                                            int stride) {
    const AffineIndex a{base_node, base, stride_node, stride};
    return with_type(t, [&](auto tag) -> std::unique_ptr<ExprNode> {
        using T = typename decltype(tag)::type;
        if constexpr (is_int_v<T>) return std::make_unique<AffineLanes<T>>(a);
        else return nullptr;
    });
}

void broadcast(Frame& f, int reg, ScalarType t, int64_t i, double d) {
    with_type(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T v = is_fp_v<T> ? ops::convert<T>(d) : ops::convert<T>(i);
        if constexpr (is_bool_v<T>) v = i != 0;
        fill_lanes(Mask::range(0, f.prog->block_size), f.reg<T>(reg), v);
    });
}

}  // namespace shoal::cpu
