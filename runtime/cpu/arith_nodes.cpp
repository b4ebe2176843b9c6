// Arithmetic vector nodes: Unary, Binary, Select, Cast, Call, copies. Each
// node is a template over the lane type and the scalar function (scalar_ops.h)
// so its lane loop is a tight, inlinable, vectorisable loop.
#include <cstring>

#include "runtime/cpu/nodes.h"
#include "runtime/cpu/scalar_ops.h"

namespace shoal::cpu {

namespace {

using ir::BinaryOp;
using ir::ScalarType;
using ir::UnaryOp;

template <class T, class R, R (*F)(T)>
struct Unary final : ExprNode {
    int a;
    explicit Unary(int a_) : a(a_) {}
    void compute(Frame& f, const Mask& m) override {
        R* o = f.reg<R>(out);
        const T* x = f.reg<T>(a);
        for_lanes(m, [&](int i) { o[i] = F(x[i]); });
    }
};

template <class T, class R, R (*F)(T, T)>
struct Binary final : ExprNode {
    int a, b;
    Binary(int a_, int b_) : a(a_), b(b_) {}
    void compute(Frame& f, const Mask& m) override {
        R* o = f.reg<R>(out);
        const T* x = f.reg<T>(a);
        const T* y = f.reg<T>(b);
        for_lanes(m, [&](int i) { o[i] = F(x[i], y[i]); });
    }
};

template <class T>
struct Select final : ExprNode {
    int c, a, b;
    Select(int c_, int a_, int b_) : c(c_), a(a_), b(b_) {}
    void compute(Frame& f, const Mask& m) override {
        T* o = f.reg<T>(out);
        const uint8_t* cv = f.reg<uint8_t>(c);
        const T* x = f.reg<T>(a);
        const T* y = f.reg<T>(b);
        for_lanes(m, [&](int i) { o[i] = cv[i] ? x[i] : y[i]; });
    }
};

template <class T>
struct Copy final : ExprNode {
    int a;
    explicit Copy(int a_) : a(a_) {}
    void compute(Frame& f, const Mask& m) override {
        T* o = f.reg<T>(out);
        const T* x = f.reg<T>(a);
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
        if (src) src->eval(f, Mask::range(0, 1));
        const T v = f.reg<T>(src_reg)[0];
        T* o = f.reg<T>(out);
        for_lanes(m, [&](int i) { o[i] = v; });
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
template <class T, class R, R (*F)(T, T)> std::unique_ptr<ExprNode> binary_node(int a, int b) {
    return std::make_unique<Binary<T, R, F>>(a, b);
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

template <class T> std::unique_ptr<ExprNode> comparison(BinaryOp op, int a, int b) {
    switch (op) {
        case BinaryOp::Eq: return binary_node<T, uint8_t, eq<T>>(a, b);
        case BinaryOp::Ne: return binary_node<T, uint8_t, ne<T>>(a, b);
        case BinaryOp::Lt: return binary_node<T, uint8_t, lt<T>>(a, b);
        case BinaryOp::Le: return binary_node<T, uint8_t, le<T>>(a, b);
        case BinaryOp::Gt: return binary_node<T, uint8_t, gt<T>>(a, b);
        case BinaryOp::Ge: return binary_node<T, uint8_t, ge<T>>(a, b);
        default: return nullptr;
    }
}

template <class T> std::unique_ptr<ExprNode> binary_typed(BinaryOp op, int a, int b) {
    if (auto c = comparison<T>(op, a, b)) return c;
    switch (op) {
        case BinaryOp::Min: return binary_node<T, T, ops::min<T>>(a, b);
        case BinaryOp::Max: return binary_node<T, T, ops::max<T>>(a, b);
        default: break;
    }
    if constexpr (!is_fp_v<T>) {  // bool And/Or/Xor on 0/1 bytes are the logical ones
        switch (op) {
            case BinaryOp::And: return binary_node<T, T, bit_and<T>>(a, b);
            case BinaryOp::Or: return binary_node<T, T, bit_or<T>>(a, b);
            case BinaryOp::Xor: return binary_node<T, T, bit_xor<T>>(a, b);
            default: break;
        }
    }
    if constexpr (is_int_v<T>) {
        switch (op) {
            case BinaryOp::Shl: return binary_node<T, T, ops::shl<T>>(a, b);
            case BinaryOp::Shr: return binary_node<T, T, ops::shr<T>>(a, b);
            default: break;
        }
    }
    if constexpr (!is_bool_v<T>) {
        switch (op) {
            case BinaryOp::Add: return binary_node<T, T, ops::add<T>>(a, b);
            case BinaryOp::Sub: return binary_node<T, T, ops::sub<T>>(a, b);
            case BinaryOp::Mul: return binary_node<T, T, ops::mul<T>>(a, b);
            case BinaryOp::Div: return binary_node<T, T, ops::div<T>>(a, b);
            case BinaryOp::Mod: return binary_node<T, T, ops::mod<T>>(a, b);
            default: break;
        }
    }
    return nullptr;
}

// ---------------------------------------------------------------- math calls
template <class T> T f_sqrt(T x) { return std::sqrt(x); }
template <class T> T f_exp(T x) { return std::exp(x); }
template <class T> T f_log(T x) { return std::log(x); }
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

template <class T> std::unique_ptr<ExprNode> float_unary_call(const std::string& fn, int a) {
    struct Entry { const char* name; T (*f)(T); };
    static const Entry table[] = {
        {"sqrt", f_sqrt<T>}, {"exp", f_exp<T>},   {"log", f_log<T>},     {"sin", f_sin<T>},
        {"cos", f_cos<T>},   {"tan", f_tan<T>},   {"asin", f_asin<T>},   {"acos", f_acos<T>},
        {"atan", f_atan<T>}, {"sinh", f_sinh<T>}, {"cosh", f_cosh<T>},   {"tanh", f_tanh<T>},
        {"erf", f_erf<T>},
    };
    // These run once per lane; a function pointer call costs little next to the
    // libm call itself, so one node type serves all of them.
    for (const auto& e : table) {
        if (fn == e.name) {
            struct Node final : ExprNode {
                int a;
                T (*f)(T);
                Node(int a_, T (*f_)(T)) : a(a_), f(f_) {}
                void compute(Frame& fr, const Mask& m) override {
                    T* o = fr.reg<T>(out);
                    const T* x = fr.reg<T>(a);
                    for_lanes(m, [&](int i) { o[i] = f(x[i]); });
                }
            };
            return std::make_unique<Node>(a, e.f);
        }
    }
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
    if (fn == "min") return binary_node<T, T, ops::min<T>>(a[0], a[1]);
    if (fn == "max") return binary_node<T, T, ops::max<T>>(a[0], a[1]);
    if (fn == "pow") return binary_node<T, T, ops::pow<T>>(a[0], a[1]);
    if (fn == "fmod") return binary_node<T, T, ops::mod<T>>(a[0], a[1]);
    if constexpr (is_fp_v<T>) {
        if (fn == "atan2") return binary_node<T, T, f_atan2<T>>(a[0], a[1]);
    } else {
        if (fn == "mulhi") return binary_node<T, T, ops::mulhi<T>>(a[0], a[1]);
    }
    return nullptr;
}

}  // namespace

std::unique_ptr<ExprNode> make_unary(UnaryOp op, ScalarType t, int a) {
    return with_type(t, [&](auto tag) { return unary_typed<typename decltype(tag)::type>(op, a); });
}

std::unique_ptr<ExprNode> make_binary(BinaryOp op, ScalarType operand, int a, int b) {
    return with_type(operand, [&](auto tag) { return binary_typed<typename decltype(tag)::type>(op, a, b); });
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

std::unique_ptr<ExprNode> make_call(const std::string& fn, ScalarType operand, const std::vector<int>& args) {
    if (operand == ScalarType::Bool) return nullptr;
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

void broadcast(Frame& f, int reg, ScalarType t, int64_t i, double d) {
    with_type(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T v = is_fp_v<T> ? ops::convert<T>(d) : ops::convert<T>(i);
        if constexpr (is_bool_v<T>) v = i != 0;
        T* o = f.reg<T>(reg);
        for (int k = 0; k < f.prog->block_size; ++k) o[k] = v;
    });
}

}  // namespace shoal::cpu
