#include "linalg.h"

#include <cmath>
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

}  // namespace shoal::ops
