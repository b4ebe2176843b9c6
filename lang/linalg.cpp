#include "linalg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "array_ops.h"
#include "diagnostics.h"
#include "format.h"

namespace shoal::ops {

void require_square(const Shape& a, const std::string& what, const Loc& loc) {
    if (a.size() != 2 || a[0] != a[1])
        user_error(ErrorKind::Runtime, loc,
                   what + ": the matrix must be square, got shape " + shape_to_string(a),
                   {"m equations in n unknowns with m != n have no unique solution: the least-squares one solves the "
                    "normal equations, `solve (transpose a @ a) (transpose a @ b)`"});
}

void require_rhs(const Shape& a, const Shape& b, const std::string& what, const Loc& loc) {
    if (b.empty() || b.size() > 2 || b[0] != a[0])
        user_error(ErrorKind::Runtime, loc,
                   what + ": a is " + std::to_string(a[0]) + " x " + std::to_string(a[1]) +
                       ", so b must have " + std::to_string(a[0]) + " rows (a vector, or one column per system), got shape " +
                       shape_to_string(b));
}

std::string singular_message(const std::string& what, const std::string& pivot, const std::string& n) {
    return what + ": the matrix is singular: pivot " + pivot + " of " + n +
           " of its LU factorisation is exactly zero (NumPy raises LinAlgError: Singular matrix)";
}

namespace {

// LU with partial pivoting in place (row-major n x n), as getrf: the pivot
// of column k is the first entry of largest magnitude on or below the
// diagonal; rows are exchanged whole. Returns the 1-based index of the
// first exactly zero pivot (0 if none) and the row exchanges.
template <class T>
int64_t lu_in_place(T* a, int64_t n, std::vector<int64_t>& swaps) {
    int64_t info = 0;
    swaps.assign(static_cast<size_t>(n), 0);
    for (int64_t k = 0; k < n; ++k) {
        int64_t p = k;
        for (int64_t i = k + 1; i < n; ++i)
            if (std::abs(a[i * n + k]) > std::abs(a[p * n + k])) p = i;
        swaps[static_cast<size_t>(k)] = p;
        if (p != k)
            for (int64_t j = 0; j < n; ++j) std::swap(a[k * n + j], a[p * n + j]);
        const T pivot = a[k * n + k];
        if (pivot == T(0)) {
            if (info == 0) info = k + 1;
            continue;  // as getrf: the factorisation goes on, U is singular
        }
        for (int64_t i = k + 1; i < n; ++i) {
            const T l = a[i * n + k] / pivot;
            a[i * n + k] = l;
            for (int64_t j = k + 1; j < n; ++j) a[i * n + j] -= l * a[k * n + j];
        }
    }
    return info;
}

}  // namespace

// The compiled backend hands LAPACK the row-major a as it is, which LAPACK
// reads as a's transpose (column-major): it factors t = transpose a and
// solves with t's transpose (getrs 'T'). The reference factors the same t,
// so both find the same pivots and report the same zero pivot.
template <class T>
std::vector<T> transposed(const T* a, int64_t n) {
    std::vector<T> t(static_cast<size_t>(n * n));
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) t[static_cast<size_t>(j * n + i)] = a[i * n + j];
    return t;
}

ArrayPtr solve(const Array& a, const Array& b, const std::string& what, const Loc& loc) {
    require_square(a.shape, what, loc);
    require_rhs(a.shape, b.shape, what, loc);
    const int64_t n = a.shape[0], k = b.shape.size() == 2 ? b.shape[1] : 1;
    auto x = std::make_shared<Array>(b);
    with_prim(a.elem, [&]<class T>(T) {
        if constexpr (std::is_floating_point_v<T>) {
            std::vector<T> t = transposed(a.data<T>(), n);
            T* m = t.data();
            T* r = x->data<T>();
            std::vector<int64_t> swaps;
            if (const int64_t info = lu_in_place(m, n, swaps))
                user_error(ErrorKind::Runtime, loc, singular_message(what, std::to_string(info), std::to_string(n)));
            // s t = l u with s the row exchanges, so a = transpose t = u' l' s:
            // solve u' z = b (forward), l' w = z (backward), then x = s' w.
            for (int64_t c = 0; c < k; ++c) {
                for (int64_t i = 0; i < n; ++i) {
                    for (int64_t j = 0; j < i; ++j) r[i * k + c] -= m[j * n + i] * r[j * k + c];
                    r[i * k + c] /= m[i * n + i];
                }
                for (int64_t i = n - 1; i >= 0; --i)
                    for (int64_t j = i + 1; j < n; ++j) r[i * k + c] -= m[j * n + i] * r[j * k + c];
            }
            for (int64_t i = n - 1; i >= 0; --i)
                if (swaps[static_cast<size_t>(i)] != i)
                    for (int64_t c = 0; c < k; ++c) std::swap(r[i * k + c], r[swaps[static_cast<size_t>(i)] * k + c]);
        }
    });
    return x;
}

ArrayPtr inverse(const Array& a, const Loc& loc) {
    require_square(a.shape, "inv", loc);
    const int64_t n = a.shape[0];
    Array identity(a.elem, {n, n});
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) identity.set(i * n + j, convert_scalar(Scalar::of_long(i == j), a.elem));
    return solve(a, identity, "inv", loc);
}

Scalar determinant(const Array& a, const Loc& loc) {
    require_square(a.shape, "det", loc);
    const int64_t n = a.shape[0];
    return with_prim(a.elem, [&]<class T>(T) -> Scalar {
        if constexpr (std::is_floating_point_v<T>) {
            std::vector<T> t = transposed(a.data<T>(), n);  // det t = det a; the pivots are the compiled backend's
            T* m = t.data();
            std::vector<int64_t> swaps;
            if (lu_in_place(m, n, swaps)) return convert_scalar(Scalar::of_double(0.0), a.elem);  // +0.0, as NumPy
            T det = 1;
            for (int64_t i = 0; i < n; ++i) {
                det *= m[i * n + i];
                if (swaps[static_cast<size_t>(i)] != i) det = -det;
            }
            return convert_scalar(Scalar::of_double(static_cast<double>(det)), a.elem);
        } else {
            return Scalar{};
        }
    });
}

namespace {

// One-sided Jacobi SVD (Hestenes) of w (r x c, row-major, r >= c, in place,
// double): plane rotations of column pairs until every pair is orthogonal
// to rounding, accumulated into v (c x c). Afterwards w = u diag(s) with
// s_j = |w column j|, and the input is w v'. Slow (c^2 r per sweep) but
// simple and accurate: the definition the LAPACK / cuSOLVER SVD is checked against.
void jacobi_svd(std::vector<double>& w, int64_t r, int64_t c, std::vector<double>& v) {
    v.assign(static_cast<size_t>(c * c), 0.0);
    for (int64_t i = 0; i < c; ++i) v[static_cast<size_t>(i * c + i)] = 1.0;
    auto at = [&](int64_t i, int64_t j) -> double& { return w[static_cast<size_t>(i * c + j)]; };
    const double eps = std::numeric_limits<double>::epsilon();
    for (int sweep = 0; sweep < 60; ++sweep) {
        bool rotated = false;
        for (int64_t p = 0; p < c; ++p)
            for (int64_t q = p + 1; q < c; ++q) {
                double alpha = 0, beta = 0, gamma = 0;
                for (int64_t i = 0; i < r; ++i) {
                    alpha += at(i, p) * at(i, p);
                    beta += at(i, q) * at(i, q);
                    gamma += at(i, p) * at(i, q);
                }
                if (gamma == 0 || std::abs(gamma) <= eps * std::sqrt(alpha * beta)) continue;
                rotated = true;
                const double zeta = (beta - alpha) / (2 * gamma);
                const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
                const double cs = 1 / std::sqrt(1 + t * t), sn = cs * t;
                for (int64_t i = 0; i < r; ++i) {
                    const double x = at(i, p), y = at(i, q);
                    at(i, p) = cs * x - sn * y;
                    at(i, q) = sn * x + cs * y;
                }
                for (int64_t i = 0; i < c; ++i) {
                    double& x = v[static_cast<size_t>(i * c + p)];
                    double& y = v[static_cast<size_t>(i * c + q)];
                    const double vx = x, vy = y;
                    x = cs * vx - sn * vy;
                    y = sn * vx + cs * vy;
                }
            }
        if (!rotated) return;
    }
}

}  // namespace

std::string lstsq_rhs_message(const Shape& a, const Shape& b) {
    return "lstsq: a is " + std::to_string(a[0]) + " x " + std::to_string(a[1]) + ", so b must have " +
           std::to_string(a[0]) + " rows (a vector, or one column per right-hand side), got shape " + shape_to_string(b);
}

ArrayPtr lstsq(const Array& a, const Array& b, const Loc& loc) {
    if (b.shape.empty() || b.shape.size() > 2 || b.shape[0] != a.shape[0])
        user_error(ErrorKind::Runtime, loc, lstsq_rhs_message(a.shape, b.shape));
    const int64_t m = a.shape[0], n = a.shape[1], k = b.shape.size() == 2 ? b.shape[1] : 1;
    Shape xs{n};
    if (b.shape.size() == 2) xs.push_back(k);
    auto x = std::make_shared<Array>(b.elem, xs);
    // The SVD of a (m >= n) or of its transpose: w v' with w = u diag(s).
    const bool tall = m >= n;
    const int64_t r = tall ? m : n, c = tall ? n : m;
    std::vector<double> w(static_cast<size_t>(r * c)), v;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
            w[static_cast<size_t>(tall ? i * n + j : j * m + i)] = a.get(i * n + j).as_double();
    jacobi_svd(w, r, c, v);
    std::vector<double> s(static_cast<size_t>(c));
    for (int64_t j = 0; j < c; ++j) {
        double sum = 0;
        for (int64_t i = 0; i < r; ++i) sum += w[static_cast<size_t>(i * c + j)] * w[static_cast<size_t>(i * c + j)];
        s[static_cast<size_t>(j)] = std::sqrt(sum);
    }
    // NumPy's default cutoff: singular values at most eps * max(m, n) * the
    // largest count as zero (the minimum-norm solution of a rank-deficient a).
    const double element_eps = a.elem == Prim::Float ? std::numeric_limits<float>::epsilon()
                                                     : std::numeric_limits<double>::epsilon();
    const double cutoff = element_eps * static_cast<double>(std::max(m, n)) *
                          (s.empty() ? 0.0 : *std::max_element(s.begin(), s.end()));
    // x = pinv(a) b: tall, a = u s v', pinv = v s^-1 u' = sum_j v_j (w_j . b) / s_j^2;
    // wide, a' = u s v' (a = v s u'), pinv = u s^-1 v' = sum_j w_j (v_j . b) / s_j^2.
    for (int64_t col = 0; col < k; ++col) {
        std::vector<double> out(static_cast<size_t>(n), 0.0);
        for (int64_t j = 0; j < c; ++j) {
            const double sj = s[static_cast<size_t>(j)];
            if (!(sj > cutoff)) continue;
            double dot = 0;
            for (int64_t i = 0; i < m; ++i)
                dot += (tall ? w[static_cast<size_t>(i * c + j)] : v[static_cast<size_t>(i * c + j)]) *
                       b.get(i * k + col).as_double();
            const double f = dot / (sj * sj);
            for (int64_t i = 0; i < n; ++i)
                out[static_cast<size_t>(i)] += f * (tall ? v[static_cast<size_t>(i * c + j)] : w[static_cast<size_t>(i * c + j)]);
        }
        for (int64_t i = 0; i < n; ++i) x->set(i * k + col, convert_scalar(Scalar::of_double(out[static_cast<size_t>(i)]), b.elem));
    }
    return x;
}

}  // namespace shoal::ops
