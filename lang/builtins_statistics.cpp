// The composite builtins of the reference evaluator (BuiltinDef::composite):
// statistics, order statistics and construction written once by applying
// other builtins through the context, so that a backend computes each part
// and fuses what it can (`mean (exp m)` is one sum plan with exp fused in),
// and every executor agrees because every executor runs the same parts.
// Also `tally`, the counting primitive histogram and bincount are built on.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "array_ops.h"
#include "builtin_helpers.h"
#include "format.h"

namespace shoal::evalimpl {

namespace {

// ---------------------------------------------------------------- helpers
Value elem_value(double v, Prim p) { return Value(convert_scalar(Scalar::of_double(v), p)); }
Value long_value(int64_t n) { return Value(Scalar::of_long(n)); }
Value iota_of(const BuiltinCall& c, int64_t n) { return apply_named(c, "iota", {int_value(n)}); }
int64_t leading(const Value& v) { return array_like_shape(v)[0]; }
// `float x` or `double x`: x converted to element type p (a floating type).
Value to_elem(const BuiltinCall& c, const Value& x, Prim p) {
    return apply_named(c, p == Prim::Double ? "double" : "float", {x});
}
int64_t count_true(const BuiltinCall& c, const Value& mask) {
    return int_arg(apply_named(c, "sum", {apply_named(c, "int", {mask})}));
}
bool is_nan(const Scalar& s) { return is_floating(s.type) && std::isnan(s.as_double()); }
// A floating array holds a NaN (x != x only for NaN).
Value nan_mask(const BuiltinCall& c, const Value& xs) { return apply_named(c, "!=", {xs, xs}); }
// The descending-order key of xs: ascending on it is descending on xs with
// NaNs still last (negation for floats; ~x = -x - 1 for integers, which
// cannot overflow).
Value descending_key(const BuiltinCall& c, const Value& xs) {
    return apply_named(c, is_floating(ops::prim_of_value(xs)) ? "negate" : "~", {xs});
}
// The permutation sortByKey applies (stable).
Value sorting_permutation(const BuiltinCall& c, const Value& keys) {
    return apply_named(c, "sortByKey", {keys, iota_of(c, leading(keys))}).tuple()[1];
}

// ---------------------------------------------------------------- statistics
// Composites of other builtins (BuiltinDef::composite): applied through the
// context, so a backend computes each part and fuses what it can.

// mean xs = sum xs / n along the innermost axis (0 / 0: NaN for an empty row, as NumPy).
Value b_mean(const BuiltinCall& c, Args a) {
    const Shape s = array_like_shape(a[0]);
    const Prim elem = ops::prim_of_value(a[0]);
    return apply_named(c, "/", {apply_named(c, "sum", {a[0]}), Value(convert_scalar(Scalar::of_long(s.back()), elem))});
}

// var xs = mean ((xs - mean xs) ** 2), the mean of each row subtracted from it
// (broadcast along the innermost axis: the means as a column).
Value b_var(const BuiltinCall& c, Args a) {
    const Shape s = array_like_shape(a[0]);
    Value mu = apply_named(c, "mean", {a[0]});
    if (s.size() > 1) {
        Shape column = s;
        column.back() = 1;
        mu = apply_named(c, "reshape", {shape_value(column), mu});
    }
    const Value d = apply_named(c, "-", {a[0], mu});
    return apply_named(c, "mean", {apply_named(c, "*", {d, d})});
}

Value b_std(const BuiltinCall& c, Args a) { return apply_named(c, "sqrt", {b_var(c, a)}); }

// ---------------------------------------------------------------- construction, composed

// The indices 0 .. n-1 as elements of `p` (float or double).
Value float_iota(const BuiltinCall& c, int64_t n, Prim p) { return to_elem(c, iota_of(c, n), p); }

Value b_eye(const BuiltinCall& c, Args a) {
    const int64_t n = int_arg(a[0]);
    if (n < 0) fail(c, "negative extent " + std::to_string(n));
    const Value i = iota_of(c, n);
    return apply_named(c, "float", {apply_named(c, "==", {apply_named(c, "col", {i}), apply_named(c, "row", {i})})});
}

// NumPy's linspace: lo + i * step with step = (hi - lo) / (n - 1), the last exactly hi.
Value b_linspace(const BuiltinCall& c, Args a) {
    const int64_t n = int_arg(a[2]);
    if (n < 0) fail(c, "negative count " + std::to_string(n));
    const Prim p = a[0].scalar().type;
    const Value lo = a[0], hi = a[1];
    const Value span = apply_named(c, "-", {hi, lo});
    const Value step = n > 1 ? apply_named(c, "/", {span, Value(convert_scalar(Scalar::of_long(n - 1), p))}) : span;
    const Value y = apply_named(c, "+", {lo, apply_named(c, "*", {float_iota(c, n, p), step})});
    if (n < 2) return y;
    const Value last = apply_named(c, "==", {iota_of(c, n), int_value(n - 1)});
    return apply_named(c, "where", {last, hi, y});
}

// NumPy's arange with a float step: ceil((hi - lo) / step) values lo + i * step.
Value b_arange(const BuiltinCall& c, Args a) {
    const double lo = a[0].scalar().as_double(), hi = a[1].scalar().as_double(), step = a[2].scalar().as_double();
    if (step == 0 || step != step) fail(c, "the step must not be zero or NaN");
    const double count = std::ceil((hi - lo) / step);
    if (count > static_cast<double>(std::numeric_limits<int32_t>::max()))
        fail(c, "too many values: " + std::to_string(count));
    const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
    return apply_named(c, "+", {a[0], apply_named(c, "*", {float_iota(c, n, a[0].scalar().type), a[2]})});
}

// argsort xs: the permutation sortByKey applies to xs (stable).
Value b_argsort(const BuiltinCall& c, Args a) { return sorting_permutation(c, a[0]); }

Value b_dot(const BuiltinCall& c, Args a) { return apply_named(c, "sum", {apply_named(c, "*", {a[0], a[1]})}); }

Value b_norm(const BuiltinCall& c, Args a) {
    return apply_named(c, "sqrt", {apply_named(c, "sum", {apply_named(c, "*", {a[0], a[0]})})});
}

Value b_outer(const BuiltinCall& c, Args a) {
    return apply_named(c, "*", {apply_named(c, "col", {a[0]}), apply_named(c, "row", {a[1]})});
}

// cumsum / cumprod: scan with the operator section from its neutral element.
template <bool Sum>
Value b_cumulative(const BuiltinCall& c, Args a) {
    const Prim elem = ops::prim_of_value(a[0]);
    const Value op = apply_builtin(*find_builtin(Sum ? "+" : "*"), nullptr, {}, c.ctx, c.loc);  // the section (+)
    // scan's instantiated type (its result's type is what the reference builds)
    const Type array = func_param(c.type), e = array_elem(array);
    const Type scan = t_func({t_func({e, e}, e), e, array}, array);
    return apply_named(c, "scan", {op, Value(convert_scalar(Scalar::of_long(Sum ? 0 : 1), elem)), a[0]}, scan);
}


// ---------------------------------------------------------------- selection
// Selection by sampling (Floyd and Rivest): the elements at ascending
// positions `ks` of the sorted vector xs (stable, NaNs last), without sorting
// xs. A sorted sample of about n^(2/3) elements brackets the positions with a
// margin of 2 sqrt(sample) sample places (four standard deviations of a
// sample quantile's rank); one pass counts the elements below the bracket,
// one compresses those inside it, and only those are sorted (a few percent
// of n). A bracket the sample missed, short vectors and positions among
// the NaNs sort everything, which gives the same answer.
constexpr int64_t kSelectFrom = int64_t{1} << 15;

std::vector<Scalar> at_positions(const Value& sorted, const std::vector<int64_t>& ks) {
    const Value s = force(sorted);
    std::vector<Scalar> out;
    for (int64_t k : ks) out.push_back(array_arg(s).get(k));
    return out;
}

// The sorted sample: element i * P mod n for a prime P above every extent
// (distinct, and no stride of a periodic or sorted input lines up with it),
// about n^(2/3) of them (a host array).
Value sorted_sample(const BuiltinCall& c, const Value& xs, int64_t n) {
    const auto size = std::clamp<int64_t>(std::llround(std::pow(static_cast<double>(n), 2.0 / 3.0)), 4096, n / 8);
    constexpr int64_t kPrime = 2654435761;
    const Value at = apply_named(
        c, "int",
        {apply_named(c, "%", {apply_named(c, "*", {apply_named(c, "long", {iota_of(c, size)}), long_value(kPrime)}),
                              long_value(n)})});
    return force(apply_named(c, "sort", {apply_named(c, "gather", {at, xs})}));
}

// The margin around the sample position of quantile q: four standard
// deviations of the rank of a sample quantile, sqrt(size q (1 - q)), plus a
// few places (tight near the ends: topk's bound keeps a few hundred elements).
int64_t sample_margin(int64_t size, double q) {
    q = std::clamp(q, 0.0, 1.0);
    return static_cast<int64_t>(std::ceil(4.0 * std::sqrt(static_cast<double>(size) * q * (1.0 - q)))) + 4;
}

std::vector<Scalar> sorted_at(const BuiltinCall& c, const Value& xs, int64_t numbers, const std::vector<int64_t>& ks) {
    const int64_t n = leading(xs);
    const int64_t kmin = *std::min_element(ks.begin(), ks.end()), kmax = *std::max_element(ks.begin(), ks.end());
    auto everything = [&] { return at_positions(apply_named(c, "sort", {xs}), ks); };
    if (n < kSelectFrom || kmax >= numbers) return everything();
    const Value sample = sorted_sample(c, xs, n);
    const int64_t size = leading(sample);
    const double n_d = static_cast<double>(n);
    const int64_t lo_at = kmin * size / n - sample_margin(size, static_cast<double>(kmin) / n_d);
    const int64_t hi_at = kmax * size / n + sample_margin(size, static_cast<double>(kmax) / n_d) + 1;
    std::optional<Scalar> lo, hi;
    if (lo_at >= 0) lo = array_arg(sample).get(lo_at);
    if (hi_at < size && !is_nan(array_arg(sample).get(hi_at))) hi = array_arg(sample).get(hi_at);
    if ((!lo && !hi) || (lo && is_nan(*lo))) return everything();
    Value inside;
    if (lo) inside = apply_named(c, ">=", {xs, Value(*lo)});
    if (hi) {
        const Value below_hi = apply_named(c, "<=", {xs, Value(*hi)});
        inside = lo ? apply_named(c, "&&", {inside, below_hi}) : below_hi;
    }
    const int64_t below = lo ? count_true(c, apply_named(c, "<", {xs, Value(*lo)})) : 0;
    const Value candidates = apply_named(c, "compress", {inside, xs});
    if (below > kmin || kmax >= below + leading(candidates)) return everything();
    std::vector<int64_t> shifted;
    for (int64_t k : ks) shifted.push_back(k - below);
    return at_positions(apply_named(c, "sort", {candidates}), shifted);
}

// Column k of a matrix (each row's element k), as a vector.
Value column(const BuiltinCall& c, const Value& m, int64_t k) {
    const Shape s = array_like_shape(m);
    const Value at = apply_named(c, "+", {apply_named(c, "*", {iota_of(c, s[0]), int_value(s[1])}), int_value(k)});
    return apply_named(c, "gather", {at, apply_named(c, "flatten", {m})});
}

// median and quantile along the innermost axis: positions k0 <= k1 of each
// sorted row combined by `combine`; NaN for a row holding a NaN or empty
// (NumPy's median and quantile). Vectors select (sorted_at); a matrix's
// rows are sorted (`sort` is per row).
Value order_statistic(const BuiltinCall& c, const Value& xs, int64_t k0, int64_t k1,
                      const std::function<Value(const Value&, const Value&)>& combine) {
    const Shape s = array_like_shape(xs);
    const Prim p = ops::prim_of_value(xs);
    const Value nan = elem_value(std::numeric_limits<double>::quiet_NaN(), p);
    if (s.back() == 0) return s.size() == 1 ? nan : apply_named(c, "fill", {int_value(s[0]), nan});
    if (s.size() == 1) {
        if (apply_named(c, "any", {nan_mask(c, xs)}).scalar().b) return nan;
        const std::vector<Scalar> v = sorted_at(c, xs, s[0], {k0, k1});
        return combine(Value(v[0]), Value(v[1]));
    }
    const Value sorted = apply_named(c, "sort", {xs});
    const Value r = combine(column(c, sorted, k0), column(c, sorted, k1));
    return apply_named(c, "where", {apply_named(c, "any", {nan_mask(c, xs)}), nan, r});
}

// median xs: the middle element of each sorted row, the mean of the two
// middle ones for an even length, (a + b) / 2 in the element type as NumPy.
Value b_median(const BuiltinCall& c, Args a) {
    const int64_t n = array_like_shape(a[0]).back();
    const Prim p = ops::prim_of_value(a[0]);
    return order_statistic(c, a[0], (n - 1) / 2, n / 2, [&](const Value& lo, const Value& hi) {
        if (n % 2 == 1) return lo;
        return apply_named(c, "/", {apply_named(c, "+", {lo, hi}), elem_value(2, p)});
    });
}

// quantile q xs: NumPy's default (linear) method: the virtual index
// (n - 1) q between positions k0 and k0 + 1, interpolated as NumPy's _lerp
// (from the upper end when the fraction is at least 1/2, for monotonicity).
Value b_quantile(const BuiltinCall& c, Args a) {
    const double q = a[0].scalar().as_double();
    if (!(q >= 0 && q <= 1))
        fail(c, "q must be in [0, 1] (a fraction, not a percentage), got " + format_scalar(a[0].scalar()));
    const int64_t n = array_like_shape(a[1]).back();
    const Prim p = ops::prim_of_value(a[1]);
    const double at = static_cast<double>(std::max<int64_t>(n - 1, 0)) * q;
    const auto k0 = static_cast<int64_t>(std::floor(at));
    const int64_t k1 = std::min(k0 + 1, std::max<int64_t>(n - 1, 0));
    const double gamma = at - static_cast<double>(k0);
    return order_statistic(c, a[1], k0, k1, [&](const Value& lo, const Value& hi) {
        // The fractions are computed in double and rounded to the element
        // type, as NumPy does (bit for bit, tested).
        const Value diff = apply_named(c, "-", {hi, lo});
        if (gamma >= 0.5) return apply_named(c, "-", {hi, apply_named(c, "*", {diff, elem_value(1 - gamma, p)})});
        return apply_named(c, "+", {lo, apply_named(c, "*", {diff, elem_value(gamma, p)})});
    });
}

// topk k xs: the k largest elements of each row, largest first, with their
// indices; ties keep the lower index first, NaNs rank below every number.
// A matrix sorts each row by a stable sort on the values and then on the
// row.
Value b_topk(const BuiltinCall& c, Args a) {
    const int64_t k = int_arg(a[0]);
    const Value& xs = a[1];
    const Shape s = array_like_shape(xs);
    const int64_t n = s.back();
    if (k < 0 || k > n)
        fail(c, "k = " + std::to_string(k) + " is outside [0, " + std::to_string(n) + "]: a row has " +
                    std::to_string(n) + " elements");
    if (s.size() == 2) {
        const Value flat = apply_named(c, "flatten", {xs});
        const Value by_value = sorting_permutation(c, descending_key(c, flat));
        const Value row_of = apply_named(c, "/", {by_value, int_value(s[1])});
        const Value ranked = apply_named(c, "sortByKey", {row_of, by_value}).tuple()[1];
        const Value first_k = apply_named(
            c, "+", {apply_named(c, "*", {apply_named(c, "col", {iota_of(c, s[0])}), int_value(s[1])}),
                     apply_named(c, "row", {iota_of(c, k)})});
        const Value chosen = apply_named(c, "gather", {apply_named(c, "flatten", {first_k}), ranked});
        const Value shape = shape_value({s[0], k});
        return Value(std::vector<Value>{
            apply_named(c, "reshape", {shape, apply_named(c, "gather", {chosen, flat})}),
            apply_named(c, "reshape", {shape, apply_named(c, "%", {chosen, int_value(s[1])})})});
    }
    // A long vector and a few of its largest: the sorted sample's
    // (k / n + margin)-th largest number bounds them from below, one pass
    // keeps the elements at least it with their indices (a few percent),
    // and only those are sorted. Fewer than k kept (improbable; or fewer
    // than k numbers) sorts everything.
    if (n >= kSelectFrom && k > 0 && k <= n / 8) {
        const Value sample = sorted_sample(c, xs, n);
        const Array& drawn = array_arg(sample);
        int64_t numbers = drawn.size();  // its NaNs are last
        while (numbers > 0 && is_nan(drawn.get(numbers - 1))) --numbers;
        const int64_t bound_at =
            numbers - 1 - k * drawn.size() / n - sample_margin(drawn.size(), static_cast<double>(k) / static_cast<double>(n));
        if (bound_at >= 0) {
            const Value kept = apply_named(c, "compress", {apply_named(c, ">=", {xs, Value(drawn.get(bound_at))}),
                                                           apply_named(c, "zip", {iota_of(c, n), xs})});
            const Value &index = kept.tuple()[0], &value = kept.tuple()[1];
            if (leading(index) >= k) {
                const Value order = apply_named(c, "take", {int_value(k), sorting_permutation(c, descending_key(c, value))});
                return Value(std::vector<Value>{apply_named(c, "gather", {order, value}), apply_named(c, "gather", {order, index})});
            }
        }
    }
    const Value at = apply_named(c, "take", {int_value(k), sorting_permutation(c, descending_key(c, xs))});
    return Value(std::vector<Value>{apply_named(c, "gather", {at, xs}), at});
}

// ---------------------------------------------------------------- counting
// tally n xs: how many times each of 0 .. n-1 occurs in xs; other values
// are not counted (bincount with a fixed length: no pass to find it).
Value b_tally(const BuiltinCall& c, Args a) {
    const int64_t n = int_arg(a[0]);
    if (n < 0) fail(c, "negative count " + std::to_string(n));
    const Array& xs = array_arg(a[1]);
    auto out = std::make_shared<Array>(Prim::Int, Shape{n});
    int32_t* counts = out->data<int32_t>();
    std::fill(counts, counts + n, 0);
    for (int64_t i = 0; i < xs.size(); ++i) {
        const int64_t v = xs.get(i).as_long();
        if (v >= 0 && v < n) ++counts[v];
    }
    return Value(std::move(out));
}

// bincount xs: NumPy's, one count per value 0 .. maximum xs.
Value b_bincount(const BuiltinCall& c, Args a) {
    if (leading(a[0]) == 0) return apply_named(c, "tally", {int_value(0), a[0]});
    const int64_t lo = int_arg(apply_named(c, "minimum", {a[0]}));
    if (lo < 0) fail(c, "the values must not be negative, found " + std::to_string(lo) + " (they are bin numbers)");
    return apply_named(c, "tally", {int_value(int_arg(apply_named(c, "maximum", {a[0]})) + 1), a[0]});
}

// histogram bins lo hi xs: NumPy's histogram with range (lo, hi): bins equal
// bins between edges linspace lo hi (bins + 1) (computed in double, then in
// the element type), each [edge i, edge i+1) and the last also holding hi;
// values outside [lo, hi] and NaNs are not counted. lo == hi widens to
// [lo - 0.5, hi + 0.5]. The bin of x is estimated from (x - lo) / (hi - lo)
// and corrected against the edges as NumPy does, so it is exactly the
// edges' bin.
Value b_histogram(const BuiltinCall& c, Args a) {
    const int64_t bins = int_arg(a[0]);
    const Value& xs = a[3];
    const Prim p = ops::prim_of_value(xs);
    double first = a[1].scalar().as_double(), last = a[2].scalar().as_double();
    if (bins < 1) fail(c, "the number of bins must be at least 1, got " + std::to_string(bins));
    if (!std::isfinite(first) || !std::isfinite(last))
        fail(c, "the range [" + format_scalar(a[1].scalar()) + ", " + format_scalar(a[2].scalar()) + "] is not finite");
    if (first > last)
        fail(c, "lo must not be above hi, got lo = " + format_scalar(a[1].scalar()) + ", hi = " +
                    format_scalar(a[2].scalar()));
    if (first == last) first -= 0.5, last += 0.5;
    const double step = (last - first) / static_cast<double>(bins);
    const Value first_e = elem_value(first, p), last_e = elem_value(last, p);
    auto edge = [&](const Value& i) {  // edge i in the element type; edge bins is hi exactly
        const Value at = apply_named(c, "+", {apply_named(c, "*", {apply_named(c, "double", {i}), Value(Scalar::of_double(step))}),
                                              Value(Scalar::of_double(first))});
        return apply_named(c, "where", {apply_named(c, ">=", {i, int_value(bins)}), last_e, to_elem(c, at, p)});
    };
    const Value x = apply_named(c, "double", {xs});
    const Value f = apply_named(
        c, "*",
        {apply_named(c, "/", {apply_named(c, "-", {x, Value(Scalar::of_double(first))}), Value(Scalar::of_double(last - first))}),
         Value(Scalar::of_double(static_cast<double>(bins)))});
    Value i = apply_named(c, "min", {apply_named(c, "int", {f}), int_value(bins - 1)});
    const Value one = int_value(1);
    i = apply_named(c, "where", {apply_named(c, "<", {xs, edge(i)}), apply_named(c, "-", {i, one}), i});
    const Value up = apply_named(c, "&&", {apply_named(c, ">=", {xs, edge(apply_named(c, "+", {i, one}))}),
                                           apply_named(c, "!=", {i, int_value(bins - 1)})});
    i = apply_named(c, "where", {up, apply_named(c, "+", {i, one}), i});
    const Value keep = apply_named(c, "&&", {apply_named(c, ">=", {xs, first_e}), apply_named(c, "<=", {xs, last_e})});
    return apply_named(c, "tally", {int_value(bins), apply_named(c, "where", {keep, i, int_value(-1)})});
}

// unique xs: the distinct values in ascending order (NaNs as one, last: NumPy's equal_nan).
Value b_unique(const BuiltinCall& c, Args a) {
    const int64_t n = leading(a[0]);
    if (n == 0) return a[0];
    const Value sorted = apply_named(c, "sort", {a[0]});
    const Value before = apply_named(c, "max", {apply_named(c, "-", {iota_of(c, n), int_value(1)}), int_value(0)});
    const Value prev = apply_named(c, "gather", {before, sorted});
    Value differs = apply_named(c, "!=", {sorted, prev});
    if (is_floating(ops::prim_of_value(a[0])))
        differs = apply_named(c, "&&", {differs, apply_named(c, "!", {apply_named(c, "&&", {nan_mask(c, sorted), nan_mask(c, prev)})})});
    const Value first = apply_named(c, "==", {iota_of(c, n), int_value(0)});
    return apply_named(c, "compress", {apply_named(c, "||", {first, differs}), sorted});
}


const BuiltinDef kStatistics[] = {
    {"mean", 1, b_mean, false, true},
    {"var", 1, b_var, false, true},
    {"std", 1, b_std, false, true},
    {"median", 1, b_median, false, true},
    {"quantile", 2, b_quantile, false, true},
    {"dot", 2, b_dot, false, true},
    {"norm", 1, b_norm, false, true},
    {"outer", 2, b_outer, false, true},
    {"cumsum", 1, b_cumulative<true>, false, true},
    {"cumprod", 1, b_cumulative<false>, false, true},
    {"eye", 1, b_eye, false, true},
    {"linspace", 3, b_linspace, false, true},
    {"arange", 3, b_arange, false, true},
    {"argsort", 1, b_argsort, false, true},
    {"topk", 2, b_topk, false, true},
    {"unique", 1, b_unique, false, true},
    {"bincount", 1, b_bincount, false, true},
    {"histogram", 4, b_histogram, false, true},
    {"tally", 2, b_tally},
};

}  // namespace

std::span<const BuiltinDef> statistics_builtins() { return kStatistics; }

}  // namespace shoal::evalimpl
