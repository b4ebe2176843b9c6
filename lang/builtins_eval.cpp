// The builtin functions and operators of the reference evaluator: one table
// (name, arity, implementation) at the end of this file. Semantics and edge
// cases follow docs/semantics.md; pure array algorithms live in array_ops.
#include "builtins_eval.h"
#include "builtin_helpers.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "array_ops.h"
#include "format.h"
#include "io.h"
#include "random.h"

namespace shoal::evalimpl {

namespace {

constexpr size_t kMaxArity = 4;

// A shape argument: n, (r, c) or (p, r, c); negative extents are errors.
Shape shape_arg(const BuiltinCall& c, const Value& v) {
    Shape s;
    if (v.is_tuple())
        for (const Value& e : v.tuple()) s.push_back(int_arg(e));
    else
        s.push_back(int_arg(v));
    for (int64_t extent : s)
        if (extent < 0) fail(c, "negative extent " + std::to_string(extent) + " in shape " + shape_to_string(s));
    return s;
}

std::vector<int64_t> index_range(int64_t lo, int64_t hi) {
    std::vector<int64_t> r;
    for (int64_t i = lo; i < hi; ++i) r.push_back(i);
    return r;
}

Value take_rows(const Value& a, const std::vector<int64_t>& rows) {
    return ops::map_leaves(a, [&](const Array& x) { return ops::select_rows(x, rows); });
}

// Calls a function value from inside a builtin's loop (checking for Ctrl-C).
Value call(const BuiltinCall& c, const Callable& f, Args args) {
    check_cancel(c.ctx, c.loc);
    return f.apply(args, c.ctx, c.loc);
}

// ---------------------------------------------------------------- elementwise operators
template <class Op>
Value unary_op(const BuiltinCall&, Args a) { return ops::lift1(Op{}, a[0]); }

// Strings compare by their bytes (the type checker allows == != < <= > >=).
Value compare_strings(const BuiltinCall& c, Args a) {
    const int order = a[0].str().compare(a[1].str());
    const std::string_view op = c.def.name;
    const bool r = op == "==" ? order == 0 : op == "!=" ? order != 0 : op == "<" ? order < 0 : op == "<=" ? order <= 0
                 : op == ">"  ? order > 0  : order >= 0;
    return Value(Scalar::of_bool(r));
}

template <class Op>
Value binary_op(const BuiltinCall& c, Args a) {
    if (a[0].is_string()) return compare_strings(c, a);
    return ops::lift2(Op{}, a[0], a[1], c.def.name, c.loc);
}

template <Prim P>
Value convert_op(const BuiltinCall&, Args a) { return ops::convert_value(a[0], P); }

// where c x y: x's element where c holds, else y's; the three broadcast.
Value b_where(const BuiltinCall& c, Args a) {
    if (!a[0].is_array() && !a[1].is_array() && !a[2].is_array())
        return a[0].scalar().as_bool() ? a[1] : a[2];
    std::vector<Shape> shapes;
    for (const Value& v : a)
        if (v.is_array()) shapes.push_back(v.array()->shape);
    const Shape shape = ops::require_broadcast(shapes, "where", c.loc);
    auto out = std::make_shared<Array>(ops::prim_of_value(a[1]), shape);
    std::vector<std::vector<int64_t>> at(3);
    for (size_t k = 0; k < 3; ++k)
        if (a[k].is_array()) at[k] = ops::broadcast_index(a[k].array()->shape, shape);
    auto get = [&](size_t k, int64_t i) {
        return a[k].is_array() ? a[k].array()->get(at[k][static_cast<size_t>(i)]) : a[k].scalar();
    };
    for (int64_t i = 0, n = out->size(); i < n; ++i) out->set(i, get(0, i).as_bool() ? get(1, i) : get(2, i));
    return Value(std::move(out));
}

// ---------------------------------------------------------------- construction
Value b_iota(const BuiltinCall& c, Args a) {
    const Shape s = shape_arg(c, a[0]);
    auto out = std::make_shared<Array>(Prim::Int, s);
    int32_t* x = out->data<int32_t>();
    for (int64_t i = 0; i < s[0]; ++i) {
        check_cancel_every(c.ctx, c.loc, i);
        x[i] = static_cast<int32_t>(i);
    }
    return Value(std::move(out));
}

Value b_fill(const BuiltinCall& c, Args a) {
    const Shape s = shape_arg(c, a[0]);
    ops::ArrayLikeBuffer out(c.result_type(), s);
    for (int64_t i = 0, n = shape_size(s); i < n; ++i) {
        check_cancel_every(c.ctx, c.loc, i);
        out.set(i, a[1]);
    }
    return out.finish();
}

Value b_generate(const BuiltinCall& c, Args a) {
    const Shape s = shape_arg(c, a[0]);
    const Callable& f = as_callable(a[1]);
    ops::ArrayLikeBuffer out(c.result_type(), s);
    std::array<Value, 3> index;
    const size_t rank = s.size();
    for (int64_t i = 0, n = shape_size(s); i < n; ++i) {
        for (size_t k = rank, rest = static_cast<size_t>(i); k-- > 0;) {
            index[k] = int_value(static_cast<int64_t>(rest % static_cast<size_t>(s[k])));
            rest /= static_cast<size_t>(s[k]);
        }
        out.set(i, call(c, f, Args(index.data(), rank)));
    }
    return out.finish();
}

// One stream number per call; element i is random_uniform(seed, stream, i).
Value b_random(const BuiltinCall& c, Args a) {
    const Shape s = shape_arg(c, a[0]);
    const uint64_t stream = c.ctx.random_stream++;
    auto out = std::make_shared<Array>(Prim::Float, s);
    float* x = out->data<float>();
    for (int64_t i = 0, n = out->size(); i < n; ++i) {
        check_cancel_every(c.ctx, c.loc, i);
        x[i] = random_uniform(c.ctx.seed, stream, static_cast<uint64_t>(i));
    }
    return Value(std::move(out));
}

// ---------------------------------------------------------------- shape
Value b_length(const BuiltinCall&, Args a) { return int_value(ops::outer_extent(a[0])); }

Shape matrix_shape(const BuiltinCall& c, const Value& v) {
    Shape s = array_like_shape(v);
    if (s.size() != 2) fail(c, "expected a matrix (rank 2), got an array of shape " + shape_to_string(s));
    return s;
}
Value b_rows(const BuiltinCall& c, Args a) { return int_value(matrix_shape(c, a[0])[0]); }
Value b_cols(const BuiltinCall& c, Args a) { return int_value(matrix_shape(c, a[0])[1]); }

// An int for rank 1, a tuple of ints otherwise (the form `fill` accepts).
Value b_shape(const BuiltinCall&, Args a) {
    const Shape s = array_like_shape(a[0]);
    if (s.size() == 1) return int_value(s[0]);
    std::vector<Value> t;
    for (int64_t e : s) t.push_back(int_value(e));
    return Value(std::move(t));
}

Value b_reshape(const BuiltinCall& c, Args a) {
    const Shape to = shape_arg(c, a[0]);
    return ops::map_leaves(a[1], [&](const Array& x) { return ops::reshape_array(x, to, c.loc); });
}

Value b_flatten(const BuiltinCall& c, Args a) {
    return ops::map_leaves(a[0], [&](const Array& x) { return ops::reshape_array(x, {x.size()}, c.loc); });
}

Value b_transpose(const BuiltinCall&, Args a) { return ops::map_leaves(a[0], ops::transpose_array); }

// col v: shape (n, 1); row v: shape (1, n). Views for broadcasting.
template <bool Column>
Value b_col_row(const BuiltinCall& c, Args a) {
    return ops::map_leaves(a[0], [&](const Array& x) {
        return ops::reshape_array(x, Column ? Shape{x.size(), 1} : Shape{1, x.size()}, c.loc);
    });
}

Value b_matmul(const BuiltinCall& c, Args a) {
    ArrayPtr r = ops::matmul_array(*a[0].array(), *a[1].array(), c.loc, [&] { check_cancel(c.ctx, c.loc); });
    if (r->rank() == 0) return Value(r->get(0));  // vector @ vector: the dot product
    return Value(std::move(r));
}

// ---------------------------------------------------------------- elementwise functions
// result[i] = f arrays[0][i] arrays[1][i] ... over every element of any
// rank, the arrays broadcast together (NumPy's rule).
Value zip_apply(const BuiltinCall& c, const Value& fn, Args arrays) {
    std::vector<Shape> shapes;
    for (const Value& x : arrays) shapes.push_back(array_like_shape(x));
    const Shape s = ops::require_broadcast(shapes, c.def.name, c.loc);
    std::array<std::vector<int64_t>, 3> at;  // where a broadcast array's element is (empty: at i)
    for (size_t k = 0; k < arrays.size(); ++k)
        if (shapes[k] != s) at[k] = ops::broadcast_index(shapes[k], s);
    const Callable& f = as_callable(fn);
    ops::ArrayLikeBuffer out(c.result_type(), s);
    std::array<Value, 3> args;
    for (int64_t i = 0, n = shape_size(s); i < n; ++i) {
        for (size_t k = 0; k < arrays.size(); ++k)
            args[k] = array_like_get(arrays[k], at[k].empty() ? i : at[k][static_cast<size_t>(i)]);
        out.set(i, call(c, f, Args(args.data(), arrays.size())));
    }
    return out.finish();
}

Value b_map(const BuiltinCall& c, Args a) { return zip_apply(c, a[0], a.subspan(1)); }

// zip / zip3: an array of tuples is a tuple of arrays of one shape.
Value b_zip(const BuiltinCall& c, Args a) {
    for (const Value& x : a.subspan(1))
        ops::require_same_shape(array_like_shape(a[0]), array_like_shape(x), c.def.name, c.loc);
    return Value(std::vector<Value>(a.begin(), a.end()));
}

Value b_unzip(const BuiltinCall&, Args a) { return a[0]; }

// ---------------------------------------------------------------- reductions
// Folds every innermost row from z left to right: f (f (f z a0) a1) a2.
Value b_reduce(const BuiltinCall& c, Args a) {
    const Callable& f = as_callable(a[0]);
    const ops::InnerRows rows = ops::inner_rows(array_like_shape(a[2]));
    auto fold = [&](int64_t r) {
        Value acc = a[1];
        for (int64_t j = 0; j < rows.length; ++j) {
            const Value step[2] = {acc, array_like_get(a[2], r * rows.length + j)};
            acc = call(c, f, step);
        }
        return acc;
    };
    if (rows.result_shape.empty()) return fold(0);
    ops::ArrayLikeBuffer out(c.result_type(), rows.result_shape);
    for (int64_t r = 0; r < rows.count; ++r) out.set(r, fold(r));
    return out.finish();
}

template <ops::Reduction R>
Value reduction(const BuiltinCall& c, Args a) {
    Value r = ops::reduce_inner(R, array_arg(a[0]));
    if (R == ops::Reduction::Sum && c.ctx.check) ops::check_int_sums(array_arg(a[0]), r, c.def.name, c.loc);
    if (R == ops::Reduction::Product && c.ctx.check) ops::check_int_products(array_arg(a[0]), r, c.def.name, c.loc);
    return r;
}

Value b_count(const BuiltinCall& c, Args a) {
    const Callable& p = as_callable(a[0]);
    const Shape s = array_like_shape(a[1]);
    const int64_t length = s.back();
    return ops::per_inner_row(s, Prim::Int, [&](int64_t r) {
        int32_t n = 0;
        for (int64_t j = 0; j < length; ++j) {
            const Value x = array_like_get(a[1], r * length + j);
            if (call(c, p, Args(&x, 1)).scalar().b) ++n;
        }
        return Scalar::of_int(n);
    });
}

template <bool Largest>
Value arg_extreme(const BuiltinCall& c, Args a) {
    return ops::arg_extreme_inner(Largest, array_arg(a[0]), c.def.name, c.loc);
}

// ---------------------------------------------------------------- scans
// Scans every innermost row from z; with flags, restarts from z where a flag is set.
Value scan_rows(const BuiltinCall& c, const Value& fn, const Value& z, const Array* flags, const Value& xs,
                bool inclusive) {
    const Callable& f = as_callable(fn);
    const Shape s = array_like_shape(xs);
    if (flags) ops::require_same_shape(flags->shape, s, c.def.name, c.loc);
    const ops::InnerRows rows = ops::inner_rows(s);
    ops::ArrayLikeBuffer out(c.result_type(), s);
    for (int64_t r = 0; r < rows.count; ++r) {
        Value acc = z;
        for (int64_t j = 0; j < rows.length; ++j) {
            const int64_t i = r * rows.length + j;
            if (flags && flags->data<bool>()[i]) acc = z;
            if (!inclusive) out.set(i, acc);
            const Value step[2] = {acc, array_like_get(xs, i)};
            acc = call(c, f, step);
            if (inclusive) out.set(i, acc);
        }
    }
    Value result = out.finish();
    // Checking mode: a running int sum or product that wrapped is an error.
    const CallableView view = f.view();
    if (c.ctx.check && !flags && view.builtin && view.args.empty() && xs.is_array() && z.is_scalar() &&
        (std::string_view(view.builtin->name) == "+" || std::string_view(view.builtin->name) == "*"))
        ops::check_int_scan(*xs.array(), *result.array(), z.scalar().as_long(), view.builtin->name[0] == '*', inclusive,
                            c.def.name, c.loc);
    return result;
}

Value b_scan(const BuiltinCall& c, Args a) { return scan_rows(c, a[0], a[1], nullptr, a[2], true); }
Value b_scan_exclusive(const BuiltinCall& c, Args a) { return scan_rows(c, a[0], a[1], nullptr, a[2], false); }
Value b_segscan(const BuiltinCall& c, Args a) { return scan_rows(c, a[0], a[1], &array_arg(a[2]), a[3], true); }

// ---------------------------------------------------------------- permutations
// result[i] = a[idx[i]] (rows of a matrix); every index must be in [0, n):
// unlike a[i], gather does not count negative indices from the end.
Value b_gather(const BuiltinCall& c, Args a) {
    const Array& idx = array_arg(a[0]);
    const int64_t n = ops::outer_extent(a[1]);
    std::vector<int64_t> rows(static_cast<size_t>(idx.size()));
    for (int64_t k = 0; k < idx.size(); ++k) {
        rows[k] = idx.get(k).as_long();
        if (rows[k] < 0 || rows[k] >= n)
            fail(c, "index " + std::to_string(rows[k]) + " is out of bounds for axis 0 with extent " +
                        std::to_string(n));
    }
    return take_rows(a[1], rows);
}

// A copy of dest with row idx[k] replaced by row k of vals, in order (the
// last write wins); indices out of range are ignored.
Value b_scatter(const BuiltinCall& c, Args a) {
    const Array& idx = array_arg(a[1]);
    const int64_t n = ops::outer_extent(a[0]);
    if (ops::outer_extent(a[2]) != idx.size())
        fail(c, std::to_string(idx.size()) + " indices but " + std::to_string(ops::outer_extent(a[2])) + " values");
    return ops::zip_leaves(a[0], a[2], [&](const Array& dest, const Array& vals) {
        Shape row_shape(dest.shape.begin() + 1, dest.shape.end()), vals_row(vals.shape.begin() + 1, vals.shape.end());
        ops::require_same_shape(row_shape, vals_row, c.def.name, c.loc);
        auto out = std::make_shared<Array>(dest);
        for (int64_t k = 0; k < idx.size(); ++k) {
            const int64_t j = idx.get(k).as_long();
            if (j >= 0 && j < n) ops::copy_row(*out, j, vals, k);
        }
        return out;
    });
}

// For i in order: dest[j] = f dest[j] vals[i] with j = g i; a j out of range
// drops the element. A matrix's rows are the elements: row i of vals is
// combined elementwise, in order, into row g i of dest (the rows' shapes agree).
Value b_permute(const BuiltinCall& c, Args a) {
    const Callable& f = as_callable(a[0]);
    const Callable& g = as_callable(a[2]);
    const Shape ds = array_like_shape(a[1]), vs = array_like_shape(a[3]);
    if (Shape(ds.begin() + 1, ds.end()) != Shape(vs.begin() + 1, vs.end()))
        fail(c, "dest's rows have shape " + shape_to_string(Shape(ds.begin() + 1, ds.end())) + " but vals' rows " +
                    shape_to_string(Shape(vs.begin() + 1, vs.end())) + ": a row of vals is combined into a row of dest");
    const int64_t row = shape_size(Shape(ds.begin() + 1, ds.end()));
    ops::ArrayLikeBuffer out(a[1]);
    for (int64_t i = 0; i < vs[0]; ++i) {
        const Value iv = int_value(i);
        const int64_t j = call(c, g, Args(&iv, 1)).scalar().as_long();
        if (j < 0 || j >= ds[0]) continue;
        for (int64_t e = 0; e < row; ++e) {
            const Value step[2] = {out.get(j * row + e), array_like_get(a[3], i * row + e)};
            out.set(j * row + e, call(c, f, step));
        }
    }
    return out.finish();
}

Value b_reverse(const BuiltinCall&, Args a) {
    std::vector<int64_t> rows = index_range(0, ops::outer_extent(a[0]));
    std::reverse(rows.begin(), rows.end());
    return take_rows(a[0], rows);
}

// ---------------------------------------------------------------- structure
Value b_concat(const BuiltinCall& c, Args a) {
    if (a[0].is_string()) return Value::string(a[0].str() + a[1].str());
    return ops::zip_leaves(a[0], a[1], [&](const Array& x, const Array& y) { return ops::concat_rows(x, y, c.loc); });
}

Value b_interleave(const BuiltinCall& c, Args a) {
    ops::require_same_shape(array_like_shape(a[0]), array_like_shape(a[1]), c.def.name, c.loc);
    const int64_t n = ops::outer_extent(a[0]);
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < n; ++i) {
        rows.push_back(i);
        rows.push_back(n + i);
    }
    return take_rows(b_concat(c, a), rows);
}

int64_t clamped_count(const Value& n, const Value& a) {
    return std::clamp<int64_t>(int_arg(n), 0, ops::outer_extent(a));
}
Value b_take(const BuiltinCall&, Args a) { return take_rows(a[1], index_range(0, clamped_count(a[0], a[1]))); }
Value b_drop(const BuiltinCall&, Args a) {
    return take_rows(a[1], index_range(clamped_count(a[0], a[1]), ops::outer_extent(a[1])));
}

Value b_filter(const BuiltinCall& c, Args a) {
    const Callable& p = as_callable(a[0]);
    std::vector<int64_t> kept;
    for (int64_t i = 0, n = ops::outer_extent(a[1]); i < n; ++i) {
        const Value row = ops::row_of(a[1], i);
        if (call(c, p, Args(&row, 1)).scalar().b) kept.push_back(i);
    }
    return take_rows(a[1], kept);
}

// compress mask xs (xs[mask]): the rows where the mask holds, in order.
Value b_compress(const BuiltinCall& c, Args a) {
    const Array& mask = array_arg(a[0]);
    const int64_t n = ops::outer_extent(a[1]);
    ops::require_mask_length(mask.size(), n, c.loc);
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < n; ++i)
        if (mask.get(i).b) kept.push_back(i);
    return take_rows(a[1], kept);
}

Value b_sort(const BuiltinCall&, Args a) { return Value(ops::sort_inner(array_arg(a[0]))); }

Value b_sort_by_key(const BuiltinCall& c, Args a) {
    const Array& keys = array_arg(a[0]);
    if (keys.rank() != 1) fail(c, "the keys must be a rank-1 array, got shape " + shape_to_string(keys.shape));
    if (ops::outer_extent(a[1]) != keys.size())
        fail(c, std::to_string(keys.size()) + " keys but " + std::to_string(ops::outer_extent(a[1])) + " values");
    const std::vector<int64_t> perm = ops::sort_permutation(keys);
    return Value(std::vector<Value>{take_rows(a[0], perm), take_rows(a[1], perm)});
}

// ---------------------------------------------------------------- text
// show x: the text Shoal prints for x (every element: no summary).
Value b_show(const BuiltinCall&, Args a) { return Value::string(format_value(a[0], std::numeric_limits<int>::max())); }

// ---------------------------------------------------------------- iteration
Value b_iterate(const BuiltinCall& c, Args a) {
    const Callable& f = as_callable(a[1]);
    return run_loop(int_arg(a[0]), a[2], c.ctx, /*counter_free=*/true, c.loc,
                    [&](int64_t, const Value& x) { return call(c, f, Args(&x, 1)); });
}

// ---------------------------------------------------------------- I/O
[[noreturn]] void io_fail(const BuiltinCall& c, const std::string& message) {
    user_error(ErrorKind::Io, c.loc, std::string(c.def.name) + ": " + message);
}

const Array& savable(const BuiltinCall& c, const Value& v) {
    if (!v.is_array()) io_fail(c, "only an array of numbers or booleans can be saved, not an array of tuples");
    return *v.array();
}

// The file's element type and rank must be the ones the program expects.
Value b_load(const BuiltinCall& c, Args a) {
    ArrayPtr arr = load_npy(a[0].str(), c.loc);
    const Type expected = c.result_type();
    if (arr->elem != prim_of(expected) || arr->rank() != array_rank(expected))
        io_fail(c, a[0].str() + " holds " + type_to_string(t_array(arr->rank(), t_prim(arr->elem))) + " of shape " +
                       shape_to_string(arr->shape) + " but the program expects " + type_to_string(expected));
    return Value(std::move(arr));
}

Value b_save(const BuiltinCall& c, Args a) {
    const Array& array = savable(c, a[1]);
    if (c.ctx.writes_files) save_npy(a[0].str(), array, c.loc);
    return Value();
}

Value b_load_csv(const BuiltinCall& c, Args a) { return Value(load_csv(a[0].str(), c.loc)); }
Value b_load_csv1(const BuiltinCall& c, Args a) { return Value(load_csv(a[0].str(), c.loc, true)); }

Value b_save_csv(const BuiltinCall& c, Args a) {
    const Array& array = savable(c, a[1]);
    if (c.ctx.writes_files) save_csv(a[0].str(), array, c.loc);
    return Value();
}

// ---------------------------------------------------------------- the table
template <auto F> using Math = ops::FloatFn<F>;
template <auto F> using Rounding = ops::RoundingFn<F>;

const BuiltinDef kBuiltins[] = {
    // operators (Binary / Unary nodes and operator values)
    {"+", 2, binary_op<ops::Add>},
    {"-", 2, binary_op<ops::Sub>},
    {"*", 2, binary_op<ops::Mul>},
    {"/", 2, binary_op<ops::Div>},
    {"%", 2, binary_op<ops::Mod>},
    {"**", 2, binary_op<ops::Pow>},
    {"==", 2, binary_op<ops::Eq>},
    {"!=", 2, binary_op<ops::Ne>},
    {"<", 2, binary_op<ops::Lt>},
    {"<=", 2, binary_op<ops::Le>},
    {">", 2, binary_op<ops::Gt>},
    {">=", 2, binary_op<ops::Ge>},
    {"&&", 2, binary_op<ops::And>},
    {"||", 2, binary_op<ops::Or>},
    {"&", 2, binary_op<ops::BitAnd>},
    {"|", 2, binary_op<ops::BitOr>},
    {"^", 2, binary_op<ops::BitXor>},
    {"<<", 2, binary_op<ops::Shl>},
    {">>", 2, binary_op<ops::Shr>},
    {"++", 2, b_concat},
    {"negate", 1, unary_op<ops::Neg>},
    {"!", 1, unary_op<ops::Not>},
    {"~", 1, unary_op<ops::BitNot>},
    // math functions (elementwise)
    {"sqrt", 1, unary_op<Math<[](auto x) { return std::sqrt(x); }>>},
    {"exp", 1, unary_op<Math<[](auto x) { return scalar::exp(x); }>>},
    {"log", 1, unary_op<Math<[](auto x) { return scalar::log(x); }>>},
    {"sin", 1, unary_op<Math<[](auto x) { return std::sin(x); }>>},
    {"cos", 1, unary_op<Math<[](auto x) { return std::cos(x); }>>},
    {"tan", 1, unary_op<Math<[](auto x) { return std::tan(x); }>>},
    {"asin", 1, unary_op<Math<[](auto x) { return std::asin(x); }>>},
    {"acos", 1, unary_op<Math<[](auto x) { return std::acos(x); }>>},
    {"atan", 1, unary_op<Math<[](auto x) { return std::atan(x); }>>},
    {"sinh", 1, unary_op<Math<[](auto x) { return std::sinh(x); }>>},
    {"cosh", 1, unary_op<Math<[](auto x) { return std::cosh(x); }>>},
    {"tanh", 1, unary_op<Math<[](auto x) { return std::tanh(x); }>>},
    {"erf", 1, unary_op<Math<[](auto x) { return std::erf(x); }>>},
    {"floor", 1, unary_op<Rounding<[](auto x) { return std::floor(x); }>>},
    {"ceil", 1, unary_op<Rounding<[](auto x) { return std::ceil(x); }>>},
    {"round", 1, unary_op<Rounding<[](auto x) { return std::round(x); }>>},
    {"abs", 1, unary_op<ops::Abs>},
    {"atan2", 2, binary_op<ops::Atan2>},
    {"pow", 2, binary_op<ops::Pow>},
    {"min", 2, binary_op<ops::Min>},
    {"max", 2, binary_op<ops::Max>},
    {"where", 3, b_where},
    // conversions
    {"int", 1, convert_op<Prim::Int>},
    {"long", 1, convert_op<Prim::Long>},
    {"float", 1, convert_op<Prim::Float>},
    {"double", 1, convert_op<Prim::Double>},
    // construction
    {"iota", 1, b_iota},
    {"fill", 2, b_fill},
    {"generate", 2, b_generate},
    {"random", 1, b_random},
    // shape
    {"length", 1, b_length},
    {"rows", 1, b_rows},
    {"cols", 1, b_cols},
    {"shape", 1, b_shape},
    {"reshape", 2, b_reshape},
    {"flatten", 1, b_flatten},
    {"col", 1, b_col_row<true>},
    {"row", 1, b_col_row<false>},
    {"transpose", 1, b_transpose},
    {"matmul", 2, b_matmul},
    {"@", 2, b_matmul},
    // elementwise functions
    {"map", 2, b_map},
    {"zipWith", 3, b_map},
    {"zipWith3", 4, b_map},
    {"zip", 2, b_zip},
    {"zip3", 3, b_zip},
    {"unzip", 1, b_unzip},
    // reductions (innermost dimension)
    {"reduce", 3, b_reduce},
    {"sum", 1, reduction<ops::Reduction::Sum>},
    {"product", 1, reduction<ops::Reduction::Product>},
    {"maximum", 1, reduction<ops::Reduction::Maximum>},
    {"minimum", 1, reduction<ops::Reduction::Minimum>},
    {"all", 1, reduction<ops::Reduction::All>},
    {"any", 1, reduction<ops::Reduction::Any>},
    {"count", 2, b_count},
    {"argmax", 1, arg_extreme<true>},
    {"argmin", 1, arg_extreme<false>},
    // scans (innermost dimension)
    {"scan", 3, b_scan},
    {"scanExclusive", 3, b_scan_exclusive},
    {"segscan", 4, b_segscan},
    // permutations (outermost dimension)
    {"gather", 2, b_gather},
    {"scatter", 3, b_scatter},
    {"permute", 4, b_permute},
    {"reverse", 1, b_reverse},
    // structure
    {"interleave", 2, b_interleave},
    {"take", 2, b_take},
    {"drop", 2, b_drop},
    {"filter", 2, b_filter},
    {"compress", 2, b_compress},
    {"sort", 1, b_sort},
    {"sortByKey", 2, b_sort_by_key},
    // iteration
    {"iterate", 3, b_iterate},
    // text
    {"show", 1, b_show},
    // I/O
    {"load", 1, b_load, true},
    {"save", 2, b_save, true},
    {"loadCsv", 1, b_load_csv, true},
    {"loadCsv1", 1, b_load_csv1, true},
    {"saveCsv", 2, b_save_csv, true},
};

const std::unordered_map<std::string_view, const BuiltinDef*>& builtin_table() {
    static const auto table = [] {
        std::unordered_map<std::string_view, const BuiltinDef*> t;
        auto add = [&t](std::span<const BuiltinDef> defs) {
            for (const BuiltinDef& d : defs) {
                SHOAL_INTERNAL_ASSERT(static_cast<size_t>(d.arity) <= kMaxArity, "builtin arity too large");
                t.emplace(d.name, &d);
            }
        };
        add(kBuiltins);
        add(statistics_builtins());
        add(linalg_builtins());
        add(vmap_builtins());
        return t;
    }();
    return table;
}

// ---------------------------------------------------------------- partial application
class PartialBuiltin final : public Callable {
public:
    PartialBuiltin(const BuiltinDef& def, Type type, Args args)
        : def_(def), type_(std::move(type)), args_(args.begin(), args.end()) {}

    Value apply(Args more, EvalContext& ctx, const Loc& loc) const override {
        // Collect the arguments without a heap allocation per call.
        std::array<Value, kMaxArity> all;
        const size_t have = args_.size();
        const size_t used = std::min(more.size(), static_cast<size_t>(def_.arity) - have);
        std::copy(args_.begin(), args_.end(), all.begin());
        std::copy_n(more.begin(), used, all.begin() + static_cast<std::ptrdiff_t>(have));
        Value r = apply_builtin(def_, type_, Args(all.data(), have + used), ctx, loc);
        return used < more.size() ? apply_value(r, more.subspan(used), ctx, loc) : r;
    }

    CallableView view() const override { return CallableView{nullptr, 0, &def_, type_, args_}; }
    std::optional<Value> resolve(const Expr&, EvalContext&) const override { return std::nullopt; }
    Value evaluate_inside(const Expr& sub, EvalContext&) const override {
        user_error(ErrorKind::Internal, sub.loc, "a builtin has no body to evaluate inside");
    }

private:
    const BuiltinDef& def_;
    Type type_;
    std::vector<Value> args_;
};

}  // namespace

// ---------------------------------------------------------------- interface
const Callable& as_callable(const Value& f) {
    SHOAL_INTERNAL_ASSERT(f.is_function(), "applying a value that is not a function");
    const auto* c = dynamic_cast<const Callable*>(f.function().get());
    SHOAL_INTERNAL_ASSERT(c != nullptr, "a function value the evaluator did not create");
    return *c;
}

Value Callable::evaluate_with(const Expr& sub, std::span<const std::pair<std::string, Value>>, EvalContext&) const {
    user_error(ErrorKind::Internal, sub.loc, "a builtin has no body to evaluate inside");
}

Value apply_value(const Value& f, std::span<const Value> args, EvalContext& ctx, const Loc& loc) {
    return as_callable(f).apply(args, ctx, loc);
}

void check_cancel(const EvalContext& ctx, const Loc& loc) {
    if (ctx.cancel && ctx.cancel->load(std::memory_order_relaxed))
        throw Error(ErrorKind::Interrupted, loc, "interrupted");
}

Type BuiltinCall::result_type() const {
    SHOAL_INTERNAL_ASSERT(type != nullptr, std::string("no type for builtin ") + def.name);
    Type t = type;
    for (int k = 0; k < def.arity; ++k) t = func_result(t);
    return prune(t);
}

const BuiltinDef* find_builtin(std::string_view name) {
    auto it = builtin_table().find(name);
    return it == builtin_table().end() ? nullptr : it->second;
}

std::vector<std::string> builtin_names() {
    std::vector<std::string> names;
    for (const BuiltinDef& d : kBuiltins) names.emplace_back(d.name);
    for (const BuiltinDef& d : statistics_builtins()) names.emplace_back(d.name);
    for (const BuiltinDef& d : linalg_builtins()) names.emplace_back(d.name);
    for (const BuiltinDef& d : vmap_builtins()) names.emplace_back(d.name);
    return names;
}

namespace {

// A builtin applied to exactly its arity: the backend first, else the
// reference implementation on forced arguments (a Delayed argument is forced
// here, the choke point for every reference builtin).
Value apply_full(const BuiltinDef& def, const Type& type, Args args, EvalContext& ctx, const Loc& loc) {
    ctx.effects += def.effect;
    const size_t warned = ctx.warnings ? ctx.warnings->size() : 0;
    if (ctx.backend)
        if (std::optional<Value> r = ctx.backend->apply_builtin(def.name, type, args, ctx, loc)) return *r;
    if (def.composite) return def.impl(BuiltinCall{def, ctx, loc, type}, args);
    const size_t declined = ctx.warnings ? ctx.warnings->size() : 0;
    std::array<Value, kMaxArity> forced;
    try {
        for (size_t k = 0; k < args.size(); ++k) forced[k] = force(args[k]);
        return def.impl(BuiltinCall{def, ctx, loc, type}, Args(forced.data(), args.size()));
    } catch (const Error&) {
        // The backend declined because the call is an error (a negative
        // count, an argument that cannot be computed): its warning that the
        // reference computes it is moot.
        if (ctx.warnings && declined > warned)
            ctx.warnings->erase(ctx.warnings->begin() + static_cast<std::ptrdiff_t>(warned),
                                ctx.warnings->begin() + static_cast<std::ptrdiff_t>(declined));
        throw;
    }
}

}  // namespace

namespace {

// An error raised without a location (an array too large to create) points
// at the call that raised it.
[[noreturn]] void rethrow_at(const BuiltinDef& def, const Error& e, const Loc& loc) {
    if (e.loc.valid() || !loc.valid()) throw e;
    const bool named = e.kind == ErrorKind::Runtime && def.name[0] >= 'a' && def.name[0] <= 'z';
    throw Error(e.kind, loc, named ? std::string(def.name) + ": " + e.message : e.message, e.notes);
}

}  // namespace

void rename_builtin_error(Error& e, std::string_view inner, std::string_view outer) {
    const std::string prefix = std::string(inner) + ": ";
    if (e.message.starts_with(prefix))
        e.message = std::string(outer) + ": " + e.message.substr(prefix.size());
}

Value apply_scalar_builtin(const BuiltinDef& def, const Type& type, std::span<const Value> args, EvalContext& ctx,
                           const Loc& loc) {
    try {
        return def.impl(BuiltinCall{def, ctx, loc, type}, args);
    } catch (const Error& e) {
        rethrow_at(def, e, loc);
    }
}

Value apply_builtin(const BuiltinDef& def, const Type& type, std::span<const Value> args, EvalContext& ctx,
                    const Loc& loc) {
    const auto arity = static_cast<size_t>(def.arity);
    if (args.size() < arity) return Value(std::make_shared<const PartialBuiltin>(def, type, args));
    Value r;
    try {
        r = apply_full(def, type, args.first(arity), ctx, loc);
    } catch (const Error& e) {
        rethrow_at(def, e, loc);
    }
    if (ctx.tracer) r = ctx.tracer->builtin_result(def.name, args.first(arity), std::move(r), loc);
    return args.size() > arity ? apply_value(r, args.subspan(arity), ctx, loc) : r;
}

}  // namespace shoal::evalimpl
