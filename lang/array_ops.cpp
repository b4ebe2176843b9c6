#include "array_ops.h"

#include <algorithm>
#include <optional>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>

namespace shoal::ops {

namespace {

[[noreturn]] void runtime_error(const Loc& loc, std::string message) {
    user_error(ErrorKind::Runtime, loc, std::move(message));
}

int64_t width(const Array& a) { return static_cast<int64_t>(prim_size(a.elem)); }
const uint8_t* element_ptr(const Array& a, int64_t flat) { return a.bytes.data() + flat * width(a); }
uint8_t* element_ptr(Array& a, int64_t flat) { return a.bytes.data() + flat * width(a); }

Shape inner_shape(const Shape& s) { return Shape(s.begin() + 1, s.end()); }

// Elements per outermost row.
int64_t row_elements(const Array& a) { return shape_size(inner_shape(a.shape)); }

// Row-major strides in elements.
std::vector<int64_t> strides_of(const Shape& s) {
    std::vector<int64_t> st(s.size(), 1);
    for (size_t k = s.size(); k-- > 1;) st[k - 1] = st[k] * s[k];
    return st;
}

// Calls f(source flat index) for every selected element, in row-major order
// of the result.
template <class F>
void walk_selection(const std::vector<AxisSelect>& sel, const std::vector<int64_t>& strides, size_t axis,
                    int64_t offset, F& f) {
    if (axis == sel.size()) {
        f(offset);
        return;
    }
    const AxisSelect& a = sel[axis];
    for (int64_t k = 0; k < a.count; ++k)
        walk_selection(sel, strides, axis + 1, offset + (a.start + k * a.step) * strides[axis], f);
}

template <class F>
void for_each_selected(const Array& a, const std::vector<AxisSelect>& sel, F f) {
    walk_selection(sel, strides_of(a.shape), 0, 0, f);
}


template <class T>
T lowest() {
    if constexpr (Floating<T>) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
}
template <class T>
T highest() {
    if constexpr (Floating<T>) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
}

// Folds each innermost row from `init` left to right with op.
template <class T, class Op>
Value fold_inner(const Array& a, T init, Op op) {
    InnerRows rows = inner_rows(a.shape);
    const T* x = a.data<T>();
    return per_inner_row(a.shape, prim_v<T>, [&](int64_t r) {
        T acc = init;
        for (int64_t j = 0; j < rows.length; ++j) acc = op(acc, x[r * rows.length + j]);
        return make_scalar(acc);
    });
}

}  // namespace

// ---------------------------------------------------------------- selections
std::vector<AxisSelect> full_selection(const Shape& shape, std::vector<AxisSelect> sel) {
    for (size_t k = sel.size(); k < shape.size(); ++k) sel.push_back(AxisSelect{false, 0, 1, shape[k]});
    return sel;
}

Shape selected_shape(const std::vector<AxisSelect>& sel) {
    Shape s;
    for (const AxisSelect& a : sel)
        if (!a.drops) s.push_back(a.count);
    return s;
}

void require_update_shape(const Shape& part, const Shape& value, const Loc& loc) {
    if (value == part || broadcast_shapes(part, value) == part) return;
    runtime_error(loc, "shape mismatch in with: the selected part has shape " + shape_to_string(part) +
                           " and the value's shape " + shape_to_string(value) + " does not broadcast to it");
}

// ---------------------------------------------------------------- elementwise
namespace {
thread_local bool t_shape_mismatch_as_exception = false;
}  // namespace

ShapeMismatchScope::ShapeMismatchScope() : saved_(std::exchange(t_shape_mismatch_as_exception, true)) {}
ShapeMismatchScope::~ShapeMismatchScope() { t_shape_mismatch_as_exception = saved_; }

void require_same_shape(const Shape& a, const Shape& b, const char* name, const Loc& loc) {
    if (a == b) return;
    if (t_shape_mismatch_as_exception) throw ShapeMismatch{a, b, name, loc};
    runtime_error(loc, std::string("shape mismatch in ") + name + ": " + shape_to_string(a) + " vs " +
                           shape_to_string(b));
}

void require_mask_length(int64_t mask, int64_t rows, const Loc& loc) {
    if (mask == rows) return;
    user_error(ErrorKind::Runtime, loc,
               "boolean index did not match indexed array along axis 0; size of axis is " + std::to_string(rows) +
                   " but size of corresponding boolean axis is " + std::to_string(mask),
               {"a mask has one flag per row: build it from the array it selects from (`xs[xs > 0.5]`)"});
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
    const size_t rank = std::max(a.size(), b.size());
    Shape out(rank);
    for (size_t k = 0; k < rank; ++k) {
        // Axis k of the result is axis k - (rank - size) of an operand.
        const int64_t x = k + a.size() >= rank ? a[k + a.size() - rank] : 1;
        const int64_t y = k + b.size() >= rank ? b[k + b.size() - rank] : 1;
        if (x != y && x != 1 && y != 1) return std::nullopt;
        out[k] = x == 1 ? y : x;
    }
    return out;
}

Shape require_broadcast(const Shape& a, const Shape& b, const char* name, const Loc& loc) {
    if (a == b) return a;
    if (std::optional<Shape> s = broadcast_shapes(a, b)) return *s;
    if (t_shape_mismatch_as_exception) throw ShapeMismatch{a, b, name, loc};
    std::vector<std::string> notes = {
        "NumPy's rule: shapes are aligned at their last axis, and on each axis the extents must be equal or "
        "one of them 1 (it stretches); a missing leading axis counts as 1"};
    // One value per row of a matrix, combined with the matrix: the vector
    // lines up with the rows' axis only as a column.
    const Shape& v = a.size() == 1 ? a : b;
    const Shape& m = a.size() == 1 ? b : a;
    if (v.size() == 1 && m.size() == 2 && v[0] == m[0])
        notes.push_back("to combine one value per row with every column, make the vector a column: `col v` has shape (" +
                        std::to_string(v[0]) + ", 1)");
    user_error(ErrorKind::Runtime, loc,
                  std::string("operands of `") + name + "` could not be broadcast together with shapes " +
                      shape_to_string(a) + " " + shape_to_string(b),
                  notes);
}

Shape require_broadcast(std::span<const Shape> shapes, const char* name, const Loc& loc) {
    SHOAL_INTERNAL_ASSERT(!shapes.empty(), "require_broadcast of no shapes");
    Shape out = shapes[0];
    for (const Shape& s : shapes.subspan(1)) out = require_broadcast(out, s, name, loc);
    return out;
}

bool stretched_axis(const Shape& from, const Shape& to, size_t k) {
    const size_t lead = to.size() - from.size();
    return k < lead || (from[k - lead] == 1 && to[k] != 1);
}

std::vector<int64_t> broadcast_index(const Shape& from, const Shape& to) {
    // Strides of `from` laid along `to`'s axes, 0 where it is stretched.
    const size_t rank = to.size(), lead = rank - from.size();
    std::vector<int64_t> stride(rank, 0);
    for (size_t k = rank, s = 1; k-- > lead;) {
        if (!stretched_axis(from, to, k)) stride[k] = static_cast<int64_t>(s);
        s *= static_cast<size_t>(from[k - lead]);
    }
    std::vector<int64_t> out(static_cast<size_t>(shape_size(to)));
    std::vector<int64_t> at(rank, 0);
    int64_t j = 0;
    for (int64_t& o : out) {
        o = j;
        for (size_t k = rank; k-- > 0;) {  // the odometer: the next element of `to`
            j += stride[k];
            if (++at[k] < to[k]) break;
            j -= stride[k] * at[k];
            at[k] = 0;
        }
    }
    return out;
}

// One definition of the conversion rules (convert_scalar), applied per element.
Value convert_value(const Value& a, Prim to) {
    if (!a.is_array()) return Value(convert_scalar(a.scalar(), to));
    const Array& x = *a.array();
    auto out = std::make_shared<Array>(to, x.shape);
    for (int64_t i = 0, n = x.size(); i < n; ++i) out->set(i, convert_scalar(x.get(i), to));
    return Value(std::move(out));
}

// ---------------------------------------------------------------- array-likes
Value map_leaves(const Value& v, const std::function<ArrayPtr(const Array&)>& f) {
    if (v.is_array()) return Value(f(*v.array()));
    SHOAL_INTERNAL_ASSERT(v.is_tuple(), "map_leaves: not an array-like value");
    std::vector<Value> out;
    out.reserve(v.tuple().size());
    for (const Value& e : v.tuple()) out.push_back(map_leaves(e, f));
    return Value(std::move(out));
}

Value zip_leaves(const Value& a, const Value& b, const std::function<ArrayPtr(const Array&, const Array&)>& f) {
    if (a.is_array() && b.is_array()) return Value(f(*a.array(), *b.array()));
    SHOAL_INTERNAL_ASSERT(a.is_tuple() && b.is_tuple() && a.tuple().size() == b.tuple().size(),
                          "zip_leaves: array-likes of different structure");
    std::vector<Value> out;
    out.reserve(a.tuple().size());
    for (size_t k = 0; k < a.tuple().size(); ++k) out.push_back(zip_leaves(a.tuple()[k], b.tuple()[k], f));
    return Value(std::move(out));
}

ArrayLikeBuffer::ArrayLikeBuffer(const Type& type, const Shape& shape) {
    Type t = prune(type);
    if (t->kind == TypeKind::Tuple) {
        for (const Type& e : t->args) kids_.emplace_back(e, shape);
        return;
    }
    SHOAL_INTERNAL_ASSERT(t->kind == TypeKind::Array, "ArrayLikeBuffer: not an array type: " + type_to_string(t));
    leaf_ = std::make_shared<Array>(prim_of(t), shape);
}

ArrayLikeBuffer::ArrayLikeBuffer(const Value& copy_of) {
    if (copy_of.is_array()) {
        leaf_ = std::make_shared<Array>(*copy_of.array());
        return;
    }
    SHOAL_INTERNAL_ASSERT(copy_of.is_tuple(), "ArrayLikeBuffer: not an array-like value");
    for (const Value& e : copy_of.tuple()) kids_.emplace_back(e);
}

Value ArrayLikeBuffer::get(int64_t flat) const {
    if (leaf_) return Value(leaf_->get(flat));
    std::vector<Value> out;
    out.reserve(kids_.size());
    for (const ArrayLikeBuffer& k : kids_) out.push_back(k.get(flat));
    return Value(std::move(out));
}

void ArrayLikeBuffer::set(int64_t flat, const Value& element) {
    if (leaf_) {
        SHOAL_INTERNAL_ASSERT(element.is_scalar(), "ArrayLikeBuffer::set: element is not a scalar");
        leaf_->set(flat, element.scalar());
        return;
    }
    SHOAL_INTERNAL_ASSERT(element.is_tuple() && element.tuple().size() == kids_.size(),
                          "ArrayLikeBuffer::set: element does not match the tuple type");
    for (size_t k = 0; k < kids_.size(); ++k) kids_[k].set(flat, element.tuple()[k]);
}

Value ArrayLikeBuffer::finish() const {
    if (leaf_) return Value(leaf_);
    std::vector<Value> out;
    out.reserve(kids_.size());
    for (const ArrayLikeBuffer& k : kids_) out.push_back(k.finish());
    return Value(std::move(out));
}

// ---------------------------------------------------------------- shapes
int64_t outer_extent(const Value& array_like) { return array_like_shape(array_like).front(); }

ArrayPtr reshape_array(const Array& a, const Shape& to, const Loc& loc) {
    if (shape_size(to) != a.size())
        runtime_error(loc, "reshape: cannot reshape " + shape_to_string(a.shape) + " into " + shape_to_string(to));
    check_array_size(a.elem, to);  // (0) into (2147483647, 0): no more elements, but rows
    auto out = std::make_shared<Array>(a);
    out->shape = to;
    return out;
}

ArrayPtr transpose_array(const Array& a) {
    Shape to(a.shape.rbegin(), a.shape.rend());
    auto out = std::make_shared<Array>(a.elem, to);
    const std::vector<int64_t> src_strides = strides_of(a.shape);
    // Walk the result in row-major order reading the source with reversed strides.
    std::vector<AxisSelect> sel;
    for (int64_t extent : to) sel.push_back(AxisSelect{false, 0, 1, extent});
    std::vector<int64_t> strides(src_strides.rbegin(), src_strides.rend());
    const int64_t w = width(a);
    int64_t dst = 0;
    auto copy = [&](int64_t src) { std::memcpy(element_ptr(*out, dst++), element_ptr(a, src), w); };
    walk_selection(sel, strides, 0, 0, copy);
    return out;
}

ArrayPtr matmul_array(const Array& a, const Array& b, const Loc& loc, const std::function<void()>& each_row) {
    const bool ranks = a.rank() >= 1 && a.rank() <= 2 && b.rank() >= 1 && b.rank() <= 2;
    if (!ranks || a.shape.back() != b.shape.front())
        runtime_error(loc, "matmul: inner extents differ: " + shape_to_string(a.shape) + " @ " + shape_to_string(b.shape));
    // A vector is a 1 x k row on the left, a k x 1 column on the right; that axis is dropped (NumPy).
    const int64_t n = a.rank() == 2 ? a.shape[0] : 1, k = b.shape.front(), m = b.rank() == 2 ? b.shape[1] : 1;
    Shape shape;
    if (a.rank() == 2) shape.push_back(n);
    if (b.rank() == 2) shape.push_back(m);
    auto out = std::make_shared<Array>(a.elem, shape);
    with_prim(a.elem, [&]<class T>(T) {
        if constexpr (Floating<T>) {
            const T* x = a.data<T>();
            const T* y = b.data<T>();
            T* z = out->data<T>();
            for (int64_t i = 0; i < n; ++i) {
                if (each_row) each_row();
                for (int64_t j = 0; j < m; ++j) {
                    T acc = 0;
                    for (int64_t l = 0; l < k; ++l) acc = scalar::add(acc, scalar::mul(x[i * k + l], y[l * m + j]));
                    z[i * m + j] = acc;
                }
            }
        }
    });
    return out;
}

// ---------------------------------------------------------------- indexing
std::optional<Shape> shape_argument(const Value& v) {
    auto extent = [](const Value& x) -> std::optional<int64_t> {
        if (!x.is_scalar() || (x.scalar().type != Prim::Int && x.scalar().type != Prim::Long)) return std::nullopt;
        const int64_t n = x.scalar().as_long();
        return n < 0 ? std::nullopt : std::optional<int64_t>(n);
    };
    Shape s;
    for (const Value& x : v.is_tuple() ? v.tuple() : std::vector<Value>{v})
        if (std::optional<int64_t> n = extent(x)) s.push_back(*n);
        else return std::nullopt;
    return s;
}

AxisSelect select_index(int64_t index, int64_t extent, int axis, const Loc& loc) {
    if (index < -extent || index >= extent)
        runtime_error(loc, "index " + std::to_string(index) + " is out of bounds for axis " + std::to_string(axis) +
                               " with extent " + std::to_string(extent));
    return AxisSelect{true, index < 0 ? index + extent : index, 1, 1};
}

// Python's slice.indices(): negative bounds count from the end, then clamp
// to [0, n] for a positive step and [-1, n-1] for a negative one.
AxisSelect select_slice(std::optional<int64_t> lo, std::optional<int64_t> hi, std::optional<int64_t> step,
                        int64_t n, const Loc& loc) {
    const int64_t st = step.value_or(1);
    if (st == 0) runtime_error(loc, "slice step cannot be zero");
    const int64_t lower = st > 0 ? 0 : -1, upper = st > 0 ? n : n - 1;
    auto adjust = [&](std::optional<int64_t> x, int64_t fallback) {
        if (!x) return fallback;
        int64_t v = *x;
        if (v < 0) v = std::max(v + n, lower);
        return std::min(v, upper);
    };
    const int64_t start = adjust(lo, st > 0 ? lower : upper);
    const int64_t stop = adjust(hi, st > 0 ? upper : lower);
    // |step| in unsigned arithmetic: -INT64_MIN does not fit in int64_t.
    const uint64_t magnitude = st > 0 ? static_cast<uint64_t>(st) : uint64_t{0} - static_cast<uint64_t>(st);
    int64_t count = 0;
    if (st > 0 && stop > start) count = static_cast<int64_t>(static_cast<uint64_t>(stop - start - 1) / magnitude + 1);
    if (st < 0 && start > stop) count = static_cast<int64_t>(static_cast<uint64_t>(start - stop - 1) / magnitude + 1);
    return AxisSelect{false, start, st, count};
}

Value index_array(const Array& a, const std::vector<AxisSelect>& selection) {
    const std::vector<AxisSelect> sel = full_selection(a.shape, selection);
    const Shape shape = selected_shape(sel);
    if (shape.empty()) {
        Scalar s;
        for_each_selected(a, sel, [&](int64_t src) { s = a.get(src); });
        return Value(s);
    }
    auto out = std::make_shared<Array>(a.elem, shape);
    const int64_t w = width(a);
    int64_t dst = 0;
    for_each_selected(a, sel, [&](int64_t src) { std::memcpy(element_ptr(*out, dst++), element_ptr(a, src), w); });
    return Value(std::move(out));
}

ArrayPtr update_array(const Array& a, const std::vector<AxisSelect>& selection, const Value& v, const Loc& loc) {
    const std::vector<AxisSelect> sel = full_selection(a.shape, selection);
    auto out = std::make_shared<Array>(a);
    if (v.is_scalar()) {
        for_each_selected(a, sel, [&](int64_t dst) { out->set(dst, v.scalar()); });
        return out;
    }
    SHOAL_INTERNAL_ASSERT(v.is_array() && v.array()->elem == a.elem, "with: value is not an array of the element type");
    const Array& src = *v.array();
    const Shape part = selected_shape(sel);
    require_update_shape(part, src.shape, loc);
    const int64_t w = width(a);
    // A value broadcast to the part reads its elements through the index map.
    const std::vector<int64_t> at = src.shape == part ? std::vector<int64_t>{} : broadcast_index(src.shape, part);
    int64_t from = 0;
    for_each_selected(a, sel, [&](int64_t dst) {
        const int64_t k = at.empty() ? from : at[static_cast<size_t>(from)];
        std::memcpy(element_ptr(*out, dst), element_ptr(src, k), w);
        ++from;
    });
    return out;
}

// ---------------------------------------------------------------- rows
ArrayPtr select_rows(const Array& a, std::span<const int64_t> rows) {
    Shape shape = a.shape;
    shape[0] = static_cast<int64_t>(rows.size());
    auto out = std::make_shared<Array>(a.elem, shape);
    for (size_t k = 0; k < rows.size(); ++k) copy_row(*out, static_cast<int64_t>(k), a, rows[k]);
    return out;
}

Value row_of(const Value& array_like, int64_t i) {
    if (array_like_shape(array_like).size() == 1) return array_like_get(array_like, i);
    return map_leaves(array_like, [i](const Array& a) {
        auto out = std::make_shared<Array>(a.elem, inner_shape(a.shape));
        const int64_t bytes = row_elements(a) * width(a);
        if (bytes) std::memcpy(out->bytes.data(), a.bytes.data() + i * bytes, bytes);
        return out;
    });
}

ArrayPtr concat_rows(const Array& a, const Array& b, const Loc& loc) {
    if (inner_shape(a.shape) != inner_shape(b.shape)) require_same_shape(a.shape, b.shape, "++", loc);
    Shape shape = a.shape;
    shape[0] += b.shape[0];
    auto out = std::make_shared<Array>(a.elem, shape);
    if (!a.bytes.empty()) std::memcpy(out->bytes.data(), a.bytes.data(), a.bytes.size());
    if (!b.bytes.empty()) std::memcpy(out->bytes.data() + a.bytes.size(), b.bytes.data(), b.bytes.size());
    return out;
}

void copy_row(Array& dst, int64_t to, const Array& src, int64_t from) {
    SHOAL_INTERNAL_ASSERT(dst.elem == src.elem && inner_shape(dst.shape) == inner_shape(src.shape),
                          "copy_row: rows of different shape");
    SHOAL_INTERNAL_ASSERT(to >= 0 && to < dst.shape[0] && from >= 0 && from < src.shape[0], "copy_row: row range");
    const int64_t bytes = row_elements(src) * width(src);
    if (bytes) std::memcpy(dst.bytes.data() + to * bytes, src.bytes.data() + from * bytes, bytes);
}

// ---------------------------------------------------------------- innermost axis
InnerRows inner_rows(const Shape& s) {
    InnerRows r;
    r.length = s.back();
    r.result_shape.assign(s.begin(), s.end() - 1);
    r.count = shape_size(r.result_shape);
    return r;
}

Value per_inner_row(const Shape& s, Prim result, const std::function<Scalar(int64_t row)>& f) {
    InnerRows rows = inner_rows(s);
    if (rows.result_shape.empty()) return Value(f(0));
    auto out = std::make_shared<Array>(result, rows.result_shape);
    for (int64_t r = 0; r < rows.count; ++r) out->set(r, f(r));
    return Value(std::move(out));
}

Value reduce_inner(Reduction r, const Array& a) {
    return with_prim(a.elem, [&]<class T>(T) -> Value {
        if constexpr (Numeric<T>) {
            switch (r) {
                case Reduction::Sum: return fold_inner<T>(a, T(0), Add{});
                case Reduction::Product: return fold_inner<T>(a, T(1), Mul{});
                case Reduction::Maximum: return fold_inner<T>(a, lowest<T>(), Max{});
                case Reduction::Minimum: return fold_inner<T>(a, highest<T>(), Min{});
                default: break;
            }
        } else {
            if (r == Reduction::All) return fold_inner<T>(a, true, And{});
            if (r == Reduction::Any) return fold_inner<T>(a, false, Or{});
        }
        internal_error(__FILE__, __LINE__, std::string("reduction undefined on ") + prim_name(a.elem));
    });
}

Value arg_extreme_inner(bool largest, const Array& a, const char* name, const Loc& loc) {
    InnerRows rows = inner_rows(a.shape);
    if (rows.length == 0 && rows.count > 0) runtime_error(loc, std::string(name) + " of an empty array");
    return with_prim(a.elem, [&]<class T>(T) -> Value {
        const T* data = a.data<T>();
        auto better = [largest](T x, T current) {
            if (is_nan(x)) return false;
            if (is_nan(current)) return true;
            return largest ? current < x : x < current;
        };
        return per_inner_row(a.shape, Prim::Int, [&](int64_t r) {
            const T* row = data + r * rows.length;
            int64_t best = 0;
            for (int64_t j = 1; j < rows.length; ++j)
                if (better(row[j], row[best])) best = j;
            return Scalar::of_int(static_cast<int32_t>(best));
        });
    });
}

// Checking mode's error for an int fold that wrapped: `what` ("sum",
// "running product", ...) of row `row` (or -1) at element `at` (or -1);
// `exact` is nullopt beyond 64 bits.
[[noreturn]] void raise_int_overflow(const std::string& name, const std::string& what, int64_t row, int64_t at,
                                     std::optional<int64_t> exact, int64_t wrapped, const std::string& fix, const Loc& loc) {
    user_error(ErrorKind::Runtime, loc,
               name + ": the int " + what + (row >= 0 ? " of row " + std::to_string(row) : std::string()) +
                   (at >= 0 ? " at element " + std::to_string(at) : std::string()) + " overflows: it is " +
                   (exact ? std::to_string(*exact) : std::string("beyond 64 bits")) +
                   ", outside int's [-2147483648, 2147483647] (it wrapped to " + std::to_string(wrapped) + ")",
               {fix + "; without :set check, ints wrap silently (docs/semantics.md)"});
}

namespace {

// The exact sum or product of each innermost row of an int array in 64 bits,
// compared with the wrapped one in `folded` (a scalar or a vector).
void check_int_folds(const Array& xs, const Value& folded, bool product, const std::string& name, const Loc& loc) {
    if (xs.elem != Prim::Int) return;
    const InnerRows rows = inner_rows(xs.shape);
    const int32_t* x = xs.data<int32_t>();
    for (int64_t r = 0; r < rows.count; ++r) {
        int64_t exact = product ? 1 : 0;
        bool zero = false, beyond = false;
        for (int64_t j = 0; j < rows.length; ++j) {
            const int64_t v = x[r * rows.length + j];
            if (!product) {
                exact += v;  // 2^31 elements of at most 2^31 fit 64 bits
                continue;
            }
            zero = zero || v == 0;
            beyond = beyond || __builtin_mul_overflow(exact, v, &exact);
        }
        if (zero) continue;  // exactly 0, as the wrapped product
        const int64_t got = (folded.is_scalar() ? folded.scalar() : folded.array()->get(r)).as_long();
        if (beyond || exact != got)
            raise_int_overflow(name, product ? "product" : "sum", xs.rank() > 1 ? r : -1, -1,
                               beyond ? std::nullopt : std::optional(exact), got,
                               product ? "multiply in 64 bits with `product (long xs)`" : "sum in 64 bits with `sum (long xs)`",
                               loc);
    }
}

}  // namespace

void check_int_sums(const Array& xs, const Value& sums, const std::string& name, const Loc& loc) {
    check_int_folds(xs, sums, false, name, loc);
}

void check_int_products(const Array& xs, const Value& products, const std::string& name, const Loc& loc) {
    check_int_folds(xs, products, true, name, loc);
}

void check_int_scan(const Array& xs, const Array& got, int64_t z, bool product, bool inclusive, const std::string& name,
                    const Loc& loc) {
    if (xs.elem != Prim::Int || got.elem != Prim::Int) return;
    const InnerRows rows = inner_rows(xs.shape);
    const int32_t* x = xs.data<int32_t>();
    const int32_t* out = got.data<int32_t>();
    const char* what = product ? "running product" : "running sum";
    const std::string fix = std::string(product ? "multiply" : "add") + " in 64 bits: scan of `long xs`";
    for (int64_t r = 0; r < rows.count; ++r) {
        int64_t acc = z;
        bool beyond = false;
        auto check = [&](int64_t j) {
            const int64_t i = r * rows.length + j;
            if (product && acc == 0 && !beyond) return;
            if (beyond || acc != int64_t{out[i]})
                raise_int_overflow(name, what, xs.rank() > 1 ? r : -1, j, beyond ? std::nullopt : std::optional(acc),
                                   out[i], fix, loc);
        };
        for (int64_t j = 0; j < rows.length; ++j) {
            if (!inclusive) check(j);
            const int64_t v = x[r * rows.length + j];
            if (product) {
                if (v == 0) acc = 0, beyond = false;  // exactly 0 from here on
                else if (acc != 0 && !beyond) beyond = __builtin_mul_overflow(acc, v, &acc);
            } else {
                acc += v;
            }
            if (inclusive) check(j);
        }
    }
}

ArrayPtr sort_inner(const Array& a) {
    auto out = std::make_shared<Array>(a);
    InnerRows rows = inner_rows(a.shape);
    with_prim(a.elem, [&]<class T>(T) {
        T* x = out->data<T>();
        for (int64_t r = 0; r < rows.count; ++r)
            std::stable_sort(x + r * rows.length, x + (r + 1) * rows.length, less_nan_last<T>);
    });
    return out;
}

std::vector<int64_t> sort_permutation(const Array& keys) {
    std::vector<int64_t> perm(static_cast<size_t>(keys.size()));
    std::iota(perm.begin(), perm.end(), int64_t{0});
    with_prim(keys.elem, [&]<class T>(T) {
        const T* k = keys.data<T>();
        std::stable_sort(perm.begin(), perm.end(), [k](int64_t i, int64_t j) { return less_nan_last(k[i], k[j]); });
    });
    return perm;
}

}  // namespace shoal::ops
