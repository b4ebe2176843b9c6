// Pure array algorithms of the reference evaluator (internal to lang/):
// elementwise operators with scalar broadcasting, indexing and slicing, row
// selection along the outermost axis, innermost-axis reductions and sorting.
// Nothing here calls user functions; builtins_eval.cpp combines these with
// function application.
//
// Every function dispatches on the element type once (with_prim) and then
// runs a typed loop; errors are Error(Runtime) at the given location.
#pragma once
#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "diagnostics.h"
#include "scalar_semantics.h"
#include "value.h"

namespace shoal::ops {

// ---------------------------------------------------------------- typed access
template <class T> constexpr Prim prim_v = Prim::Bool;
template <> inline constexpr Prim prim_v<int32_t> = Prim::Int;
template <> inline constexpr Prim prim_v<int64_t> = Prim::Long;
template <> inline constexpr Prim prim_v<float> = Prim::Float;
template <> inline constexpr Prim prim_v<double> = Prim::Double;

template <class T> T scalar_as(const Scalar& s);  // s.type must be prim_v<T>
template <> inline bool scalar_as<bool>(const Scalar& s) { return s.b; }
template <> inline int32_t scalar_as<int32_t>(const Scalar& s) { return s.i; }
template <> inline int64_t scalar_as<int64_t>(const Scalar& s) { return s.l; }
template <> inline float scalar_as<float>(const Scalar& s) { return s.f; }
template <> inline double scalar_as<double>(const Scalar& s) { return s.d; }

inline Scalar make_scalar(bool v) { return Scalar::of_bool(v); }
inline Scalar make_scalar(int32_t v) { return Scalar::of_int(v); }
inline Scalar make_scalar(int64_t v) { return Scalar::of_long(v); }
inline Scalar make_scalar(float v) { return Scalar::of_float(v); }
inline Scalar make_scalar(double v) { return Scalar::of_double(v); }

// Calls f(T{}) with T the C++ type of p: the one switch on Prim per operation.
template <class F>
decltype(auto) with_prim(Prim p, F&& f) {
    switch (p) {
        case Prim::Bool: return f(bool{});
        case Prim::Int: return f(int32_t{});
        case Prim::Long: return f(int64_t{});
        case Prim::Float: return f(float{});
        case Prim::Double: break;
    }
    return f(double{});
}

template <class T> concept Integral = std::same_as<T, int32_t> || std::same_as<T, int64_t>;
template <class T> concept Floating = std::same_as<T, float> || std::same_as<T, double>;
template <class T> concept Numeric = Integral<T> || Floating<T>;

template <class T>
bool is_nan(T x) {
    if constexpr (Floating<T>) return std::isnan(x);
    else return false;
}

// Ascending order with NaNs last: a strict weak order for std::stable_sort
// (sort's order; a sample sort over ranks splits by it too).
template <class T>
bool less_nan_last(T x, T y) {
    if (is_nan(x)) return false;
    if (is_nan(y)) return true;
    return x < y;
}

// ---------------------------------------------------------------- scalar operators
// The operators of the language on element types; the arithmetic is
// lang/scalar_semantics.h's (wrapping integers, division by zero gives 0, ...).

struct Add { template <Numeric T> T operator()(T x, T y) const { return scalar::add(x, y); } };
struct Sub { template <Numeric T> T operator()(T x, T y) const { return scalar::sub(x, y); } };
struct Mul { template <Numeric T> T operator()(T x, T y) const { return scalar::mul(x, y); } };
struct Div { template <Numeric T> T operator()(T x, T y) const { return scalar::div(x, y); } };
struct Mod { template <Numeric T> T operator()(T x, T y) const { return scalar::mod(x, y); } };
struct Pow { template <Numeric T> T operator()(T x, T y) const { return scalar::pow(x, y); } };
// Comparisons (NaN compares false, so != is true).
struct Eq { template <class T> bool operator()(T x, T y) const { return x == y; } };
struct Ne { template <class T> bool operator()(T x, T y) const { return x != y; } };
struct Lt { template <Numeric T> bool operator()(T x, T y) const { return x < y; } };
struct Le { template <Numeric T> bool operator()(T x, T y) const { return x <= y; } };
struct Gt { template <Numeric T> bool operator()(T x, T y) const { return x > y; } };
struct Ge { template <Numeric T> bool operator()(T x, T y) const { return x >= y; } };
template <class T> concept Boolean = std::same_as<T, bool>;
struct And { template <Boolean T> bool operator()(T x, T y) const { return x && y; } };
struct Or { template <Boolean T> bool operator()(T x, T y) const { return x || y; } };
struct Not { template <Boolean T> bool operator()(T x) const { return !x; } };
struct BitAnd { template <Integral T> T operator()(T x, T y) const { return x & y; } };
struct BitOr { template <Integral T> T operator()(T x, T y) const { return x | y; } };
struct BitXor { template <Integral T> T operator()(T x, T y) const { return x ^ y; } };
struct BitNot { template <Integral T> T operator()(T x) const { return ~x; } };
struct Shl { template <Integral T> T operator()(T x, T n) const { return scalar::shl(x, n); } };
struct Shr { template <Integral T> T operator()(T x, T n) const { return scalar::shr(x, n); } };
struct Min { template <Numeric T> T operator()(T x, T y) const { return scalar::min(x, y); } };
struct Max { template <Numeric T> T operator()(T x, T y) const { return scalar::max(x, y); } };
struct Atan2 { template <Floating T> T operator()(T y, T x) const { return std::atan2(y, x); } };
struct Neg { template <Numeric T> T operator()(T x) const { return scalar::neg(x); } };
struct Abs { template <Numeric T> T operator()(T x) const { return scalar::abs(x); } };
// A floating-point math function: F is called with float (the f-suffixed C
// function through <cmath>'s float overloads) or double.
template <auto F>
struct FloatFn {
    template <Floating T> T operator()(T x) const { return F(x); }
};
// floor / ceil / round: identity on integers.
// (Both overloads here: clang 14 hides a base's constrained overload that a
// using-declaration brings in.)
template <auto F>
struct RoundingFn {
    template <Floating T> T operator()(T x) const { return F(x); }
    template <Integral T> T operator()(T x) const { return x; }
};

// ---------------------------------------------------------------- elementwise
// Applies a scalar operator elementwise over scalars and arrays of any rank
// with NumPy's broadcasting (broadcast_shape); `name` appears in its errors.
// Both operands have one element type.
// The operator is a callable object whose operator() is constrained to the
// element types it supports.
template <class Op>
Value lift1(const Op& op, const Value& a);
template <class Op>
Value lift2(const Op& op, const Value& a, const Value& b, const char* name, const Loc& loc);

// Converts every element with Shoal's conversion rules (convert_scalar).
Value convert_value(const Value& a, Prim to);

// Throws `shape mismatch in <name>: (3) vs (4)` unless the shapes agree.
void require_same_shape(const Shape& a, const Shape& b, const char* name, const Loc& loc);

// A boolean mask selects rows: it has one flag per row of the indexed
// array, else NumPy's error ("boolean index did not match ...").
void require_mask_length(int64_t mask, int64_t rows, const Loc& loc);

// NumPy's broadcasting rule, the one definition every path follows: shapes
// are aligned at their last axis, a missing leading axis counts as extent 1,
// and on each axis the extents are equal or one of them is 1 (it stretches).
// The result's shape, or nullopt when they do not broadcast.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);
// broadcast_shapes, or the error "operands of + could not be broadcast
// together with shapes (1000, 64) (1000)" with the rule and the fix.
Shape require_broadcast(const Shape& a, const Shape& b, const char* name, const Loc& loc);
// Several operands' shapes broadcast together, left to right (at least one).
Shape require_broadcast(std::span<const Shape> shapes, const char* name, const Loc& loc);
// Whether `from` is stretched along axis k of `to` (its broadcast result):
// a leading axis it lacks, or an extent of 1 where the result's is not.
bool stretched_axis(const Shape& from, const Shape& to, size_t k);
// For each element of `to` in row-major order, the index of the element
// of `from` (broadcast to `to`) that it reads.
std::vector<int64_t> broadcast_index(const Shape& from, const Shape& to);

// While `:emit` traces a function its extents are placeholders, so a
// mismatch may only mean that two of them must be equal: inside a
// ShapeMismatchScope (on this thread) require_same_shape throws this
// instead, for the tracer to learn that and trace again.
struct ShapeMismatch {
    Shape a, b;
    std::string name;
    Loc loc;
};
class ShapeMismatchScope {
public:
    ShapeMismatchScope();
    ~ShapeMismatchScope();
    ShapeMismatchScope(const ShapeMismatchScope&) = delete;
    ShapeMismatchScope& operator=(const ShapeMismatchScope&) = delete;

private:
    bool saved_;
};

// ---------------------------------------------------------------- array-likes
// Applies f to every leaf Array of an array-like value (an Array, or a Tuple
// of array-likes: an array of tuples), keeping the tuple structure.
Value map_leaves(const Value& v, const std::function<ArrayPtr(const Array&)>& f);
// The same over two array-likes of one tuple structure.
Value zip_leaves(const Value& a, const Value& b, const std::function<ArrayPtr(const Array&, const Array&)>& f);

// A mutable array-like of a given static type and shape (an Array or a tuple
// of them), filled element by element with Scalars / Tuples of Scalars.
class ArrayLikeBuffer {
public:
    ArrayLikeBuffer(const Type& type, const Shape& shape);  // zero-filled
    explicit ArrayLikeBuffer(const Value& copy_of);         // a deep copy
    Value get(int64_t flat) const;
    void set(int64_t flat, const Value& element);
    Value finish() const;  // the value (shares storage: stop writing after)

private:
    ArrayPtr leaf_;                        // an array type
    std::vector<ArrayLikeBuffer> kids_;    // a tuple type
};

// ---------------------------------------------------------------- shapes
// The outermost extent and the shape below it.
int64_t outer_extent(const Value& array_like);
// A copy of a with shape `to` (same number of elements, else the reshape error).
ArrayPtr reshape_array(const Array& a, const Shape& to, const Loc& loc);
ArrayPtr transpose_array(const Array& a);
// The matrix product of a (n x k) and b (k x m), float or double: element
// (i, j) sums a[i, l] * b[l, j] for l = 0, 1, ... in order, from 0. Mismatched
// inner extents: "matmul: inner extents differ: (2, 3) @ (4, 5)".
// Ranks 1 and 2 (NumPy's matmul); vector @ vector is a rank-0 array of one element.
// `each_row` runs before every row of the result (the evaluator's Ctrl-C check:
// a 2000^3 product takes seconds in this loop).
ArrayPtr matmul_array(const Array& a, const Array& b, const Loc& loc, const std::function<void()>& each_row = {});  // rank 2: swap axes; rank 3: reverse them; rank 1: copy

// ---------------------------------------------------------------- indexing
// One axis of an index expression: a single position (the axis is dropped) or
// a slice of `count` positions start, start+step, ...
struct AxisSelect {
    bool drops = false;
    int64_t start = 0;
    int64_t step = 1;
    int64_t count = 0;
};
// A plain index, negative counting from the end (-n <= i < n), else
// "index 7 is out of bounds for axis 0 with extent 5".
AxisSelect select_index(int64_t index, int64_t extent, int axis, const Loc& loc);
// A shape argument (`iota 5`, `fill (2, 3) x`: an int, or a tuple of ints)
// read without raising: null when it is not one or an extent is negative
// (the builtin itself then says why).
std::optional<Shape> shape_argument(const Value& v);
// A Python slice; omitted parts are nullopt. A zero step is an error.
AxisSelect select_slice(std::optional<int64_t> lo, std::optional<int64_t> hi, std::optional<int64_t> step,
                        int64_t extent, const Loc& loc);
// The part of `a` selected by `sel` (fewer selections than the rank select
// leading axes): a Scalar when every axis is indexed, else an Array.
Value index_array(const Array& a, const std::vector<AxisSelect>& sel);
// A selection completed with whole-axis slices for the axes it leaves out.
std::vector<AxisSelect> full_selection(const Shape& shape, std::vector<AxisSelect> sel);
// The shape of the part a (full) selection selects.
Shape selected_shape(const std::vector<AxisSelect>& sel);
// `with`'s rule: the new part broadcasts to the selected part's shape
// (NumPy's rule, one way: the part keeps its shape), else
// "shape mismatch in with: ...".
void require_update_shape(const Shape& part, const Shape& value, const Loc& loc);
// A copy of `a` with the selected part replaced by `v` (a Scalar broadcast,
// or an Array of exactly the selected shape).
ArrayPtr update_array(const Array& a, const std::vector<AxisSelect>& sel, const Value& v, const Loc& loc);

// ---------------------------------------------------------------- rows
// Rows (outermost index) rows[0], rows[1], ... of a; each must be in range.
ArrayPtr select_rows(const Array& a, std::span<const int64_t> rows);
// Row i of a as a value: an element for rank 1, a sub-array otherwise.
Value row_of(const Value& array_like, int64_t i);
// a ++ b along the outermost axis (inner extents must agree).
ArrayPtr concat_rows(const Array& a, const Array& b, const Loc& loc);
// Copies row `from` of src into row `to` of dst (same inner shape).
void copy_row(Array& dst, int64_t to, const Array& src, int64_t from);

// ---------------------------------------------------------------- innermost axis
// Number of innermost rows and their length; a scalar result for rank 1.
struct InnerRows {
    int64_t count = 0;   // rows
    int64_t length = 0;  // elements per row
    Shape result_shape;  // shape of a per-row result (empty: a scalar)
};
InnerRows inner_rows(const Shape& s);

// Builds one result per innermost row: f(row_index) -> Scalar.
Value per_inner_row(const Shape& s, Prim result, const std::function<Scalar(int64_t row)>& f);

enum class Reduction { Sum, Product, Maximum, Minimum, All, Any };
Value reduce_inner(Reduction r, const Array& a);
// First index of the largest (smallest) element per innermost row; NaNs are
// ignored unless the row holds only NaNs (then 0). Empty rows are an error.
Value arg_extreme_inner(bool largest, const Array& a, const char* name, const Loc& loc);
// Checking mode (both evaluators raise exactly these errors, at loc): the
// sums of an int array's innermost rows in 64 bits, compared with the
// wrapped ones `sums` (a scalar or a vector); the error names the row of a
// matrix.
// Checking mode's error for an int fold that wrapped: `what` ("sum",
// "running product", ...) of row `row` (or -1) at element `at` (or -1);
// `exact` is nullopt beyond 64 bits; `fix` the note's advice.
[[noreturn]] void raise_int_overflow(const std::string& name, const std::string& what, int64_t row, int64_t at,
                                     std::optional<int64_t> exact, int64_t wrapped, const std::string& fix,
                                     const Loc& loc);
void check_int_sums(const Array& xs, const Value& sums, const std::string& name, const Loc& loc);
// Likewise for products (a row holding a 0 is exactly 0) ...
void check_int_products(const Array& xs, const Value& products, const std::string& name, const Loc& loc);
// ... and for running sums or products from z (scan (+) / (*), inclusive or
// exclusive), `got` being the wrapped scan of xs: the first element whose
// exact value left int's range is named.
void check_int_scan(const Array& xs, const Array& got, int64_t z, bool product, bool inclusive, const std::string& name,
                    const Loc& loc);

// Stable ascending sort of each innermost row, NaNs last.
ArrayPtr sort_inner(const Array& a);
// The stable permutation that sorts a rank-1 array ascending, NaNs last.
std::vector<int64_t> sort_permutation(const Array& keys);

// ---------------------------------------------------------------- templates
inline Prim prim_of_value(const Value& v) {
    return v.is_array() ? v.array()->elem : v.is_delayed() ? v.delayed()->elem() : v.scalar().type;
}

template <class Op>
Value lift1(const Op& op, const Value& a) {
    return with_prim(prim_of_value(a), [&]<class T>(T) -> Value {
        if constexpr (std::is_invocable_v<const Op&, T>) {
            using R = std::invoke_result_t<const Op&, T>;
            if (!a.is_array()) return Value(make_scalar(op(scalar_as<T>(a.scalar()))));
            const Array& x = *a.array();
            ArrayPtr out = std::make_shared<Array>(prim_v<R>, x.shape);
            const T* in = x.data<T>();
            R* o = out->data<R>();
            for (int64_t i = 0, n = x.size(); i < n; ++i) o[i] = op(in[i]);
            return Value(std::move(out));
        } else {
            internal_error(__FILE__, __LINE__, std::string("operator undefined on ") + prim_name(prim_v<T>));
        }
    });
}

template <class Op>
Value lift2(const Op& op, const Value& a, const Value& b, const char* name, const Loc& loc) {
    SHOAL_INTERNAL_ASSERT(prim_of_value(a) == prim_of_value(b), std::string("operands of ") + name + " differ in type");
    return with_prim(prim_of_value(a), [&]<class T>(T) -> Value {
        if constexpr (std::is_invocable_v<const Op&, T, T>) {
            using R = std::invoke_result_t<const Op&, T, T>;
            if (!a.is_array() && !b.is_array())
                return Value(make_scalar(op(scalar_as<T>(a.scalar()), scalar_as<T>(b.scalar()))));
            const Shape shape = a.is_array() && b.is_array()
                                    ? require_broadcast(a.array()->shape, b.array()->shape, name, loc)
                                    : (a.is_array() ? a.array()->shape : b.array()->shape);
            ArrayPtr out = std::make_shared<Array>(prim_v<R>, shape);
            R* o = out->data<R>();
            const int64_t n = out->size();
            if (a.is_array() && b.is_array() && a.array()->shape == b.array()->shape) {
                const T* x = a.array()->data<T>();
                const T* y = b.array()->data<T>();
                for (int64_t i = 0; i < n; ++i) o[i] = op(x[i], y[i]);
            } else if (a.is_array() && b.is_array()) {
                const T* x = a.array()->data<T>();
                const T* y = b.array()->data<T>();
                const std::vector<int64_t> ia = broadcast_index(a.array()->shape, shape);
                const std::vector<int64_t> ib = broadcast_index(b.array()->shape, shape);
                for (int64_t i = 0; i < n; ++i) o[i] = op(x[ia[static_cast<size_t>(i)]], y[ib[static_cast<size_t>(i)]]);
            } else if (a.is_array()) {
                const T* x = a.array()->data<T>();
                const T y = scalar_as<T>(b.scalar());
                for (int64_t i = 0; i < n; ++i) o[i] = op(x[i], y);
            } else {
                const T x = scalar_as<T>(a.scalar());
                const T* y = b.array()->data<T>();
                for (int64_t i = 0; i < n; ++i) o[i] = op(x, y[i]);
            }
            return Value(std::move(out));
        } else {
            internal_error(__FILE__, __LINE__, std::string(name) + " is undefined on " + prim_name(prim_v<T>));
        }
    });
}

}  // namespace shoal::ops
