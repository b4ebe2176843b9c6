// Random well-typed Shoal programs through the reference evaluator and the
// compiled backend (differential.h). Programs are built type-directed: pick a
// target type (element type, and for arrays the exact shape), then build an
// expression of it, so every program type-checks and every gather index,
// slice and zip is in range by construction. Seeds 1..350 every run, then 50
// fresh ones (SHOAL_RANDOM_SEED, or drawn and printed, so a failure can be
// replayed); a mismatch prints the program shrunk (differential.h) and whole.
//
// Float discipline (tolerance 1e-4 relative): elementwise float code is exact
// IEEE on both backends, but float reductions and scans combine in a different
// order, so their results are only printed (never compared, converted or fed
// to further arithmetic), sums see non-negative inputs (`abs`) to avoid
// cancellation, and products see inputs in [1, 1.001).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "differential.h"

namespace {

enum class El { Int, Float, Bool };

struct Scalar {
    std::string name;
    El e;
};
struct Vec {
    std::string name;
    El e;
    int64_t n;
};
struct Mat {
    std::string name;
    El e;
    int64_t r, c;
};

std::string par(const std::string& s) { return "(" + s + ")"; }
std::string num(int64_t v) { return v < 0 ? par(std::to_string(v)) : std::to_string(v); }

class Gen {
public:
    explicit Gen(uint32_t seed) : rng_(seed) {}

    std::string program() {
        scalars_.clear();
        vecs_.clear();
        mats_.clear();
        funcs_.clear();
        fresh_ = 0;
        std::string out;
        // Captured scalars: literals (lifted into kernels as parameters) and
        // exact integer reductions.
        for (int k = 0, m = pick(3); k < m; ++k) {
            const El e = coin(0.5) ? El::Int : El::Float;
            const std::string name = "s" + std::to_string(fresh_++);
            out += "let " + name + " = " + (e == El::Int ? num(small()) : float_lit()) + "\n";
            scalars_.push_back({name, e});
        }
        const int64_t base = size();
        for (int k = 0, m = pick(3); k < m; ++k) {
            const std::string name = "v" + std::to_string(fresh_++);
            const El e = elem();
            const int64_t n = coin(0.6) ? base : size();
            out += "let " + name + " = " + vec(e, n, 3) + "\n";
            vecs_.push_back({name, e, n});
        }
        if (coin(0.3)) {
            const std::string name = "m" + std::to_string(fresh_++);
            const El e = elem();
            const int64_t r = small_extent(), c = small_extent();
            out += "let " + name + " = " + mat(e, r, c, 2) + "\n";
            mats_.push_back({name, e, r, c});
        }
        if (coin(0.25)) {  // a map returning a pair: two arrays computed by one kernel
            const std::string a = "v" + std::to_string(fresh_++), b = "v" + std::to_string(fresh_++);
            const El in = elem(), ea = elem(), eb = elem();
            const int64_t n = coin(0.6) ? base : size();
            std::vector<Scalar> env{{"q", in}};
            out += "let (" + a + ", " + b + ") = map (\\q -> (" + scalar(ea, env, 2) + ", " + scalar(eb, env, 2) + ")) " +
                   par(vec(in, n, 2)) + "\n";
            vecs_.push_back({a, ea, n});
            vecs_.push_back({b, eb, n});
        }
        if (coin(0.3)) {  // a named function, inlined into the kernels that call it
            const std::string name = "f" + std::to_string(fresh_++);
            const El in = elem(), res = elem();
            std::vector<Scalar> env{{"p", in}};
            out += "let " + name + " p = " + scalar(res, env, 2) + "\n";
            funcs_.push_back({name, in, res});
        }
        if (coin(0.3)) {
            const std::string name = "s" + std::to_string(fresh_++);
            out += "let " + name + " = sum " + par(vec(El::Int, size(), 2)) + "\n";
            scalars_.push_back({name, El::Int});
        }
        for (int k = 0, m = 2 + pick(4); k < m; ++k) out += statement(coin(0.6) ? base : size()) + "\n";
        return out;
    }

private:
    std::mt19937 rng_;
    std::vector<Scalar> scalars_;
    std::vector<Vec> vecs_;
    std::vector<Mat> mats_;
    struct Func {
        std::string name;
        El in, out;
    };
    std::vector<Func> funcs_;
    int fresh_ = 0;

    int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
    bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
    int64_t small() { return pick(15) - 5; }
    El elem() {
        const int k = pick(10);
        return k < 5 ? El::Int : k < 8 ? El::Float : El::Bool;
    }
    int64_t size() {
        static const int64_t sizes[] = {0, 1, 1, 2, 3, 5, 8, 13, 31, 64, 100, 257, 300, 1000, 1024, 2049};
        return sizes[pick(static_cast<int>(std::size(sizes)))];
    }
    int64_t small_extent() {
        static const int64_t sizes[] = {0, 1, 2, 3, 5, 17, 40};
        return sizes[pick(static_cast<int>(std::size(sizes)))];
    }
    std::string float_lit() {
        static const char* lits[] = {"0.5", "1.5", "2.0", "0.25", "3.0", "(-1.5)", "0.125", "10.0", "(-0.75)"};
        return lits[pick(static_cast<int>(std::size(lits)))];
    }
    std::string name() { return "x" + std::to_string(fresh_++); }

    // ---- scalar expressions (inside lambdas, or top-level broadcast operands)
    std::string scalar(El e, std::vector<Scalar>& env, int depth) {
        std::vector<const Scalar*> vars;
        for (const Scalar& s : env)
            if (s.e == e) vars.push_back(&s);
        for (const Scalar& s : scalars_)
            if (s.e == e) vars.push_back(&s);
        if (depth <= 0 || coin(0.3)) {
            if (!vars.empty() && coin(0.7)) return vars[pick(static_cast<int>(vars.size()))]->name;
            if (e == El::Int) {
                // Index a captured array.
                std::vector<const Vec*> arrs;
                for (const Vec& v : vecs_)
                    if (v.e == El::Int && v.n > 0) arrs.push_back(&v);
                if (!arrs.empty() && !env.empty() && coin(0.3)) {
                    const Vec& v = *arrs[pick(static_cast<int>(arrs.size()))];
                    return v.name + "[abs " + par(scalar(El::Int, env, 0)) + " % " + std::to_string(v.n) + "]";
                }
                return num(small());
            }
            if (e == El::Float) return float_lit();
            return coin(0.5) ? "true" : "false";
        }
        const int d = depth - 1;
        const int k = pick(10);
        if (k == 0) {  // let
            const El t = elem();
            const std::string v = name();
            std::string bound = scalar(t, env, d);
            env.push_back({v, t});
            std::string body = scalar(e, env, d);
            env.pop_back();
            return par("let " + v + " = " + bound + " in " + body);
        }
        if (k == 1) return par("if " + scalar(El::Bool, env, d) + " then " + scalar(e, env, d) + " else " + scalar(e, env, d));
        switch (e) {
            case El::Int: {
                static const char* ops[] = {"+", "-", "*", "/", "%", "&", "|", "^", "+", "-"};
                const int o = pick(14);
                if (o < 10) return par(scalar(e, env, d) + " " + ops[o] + " " + scalar(e, env, d));
                if (o == 10) return par((coin(0.5) ? "min " : "max ") + par(scalar(e, env, d)) + " " + par(scalar(e, env, d)));
                if (o == 11) return par(scalar(e, env, d) + (coin(0.5) ? " << " : " >> ") + std::to_string(pick(4)));
                if (o == 12) return par("int " + par(scalar(coin(0.7) ? El::Float : El::Bool, env, d)));
                if (coin(0.2)) return par(coin(0.5) ? "~" + par(scalar(e, env, d)) : par(scalar(e, env, d)) + " ** " + std::to_string(pick(4)));
                return par(coin(0.5) ? "abs " + par(scalar(e, env, d)) : "-" + par(scalar(e, env, d)));
            }
            case El::Float: {
                const int o = pick(11);
                static const char* ops[] = {"+", "-", "*", "+"};
                if (o < 4) return par(scalar(e, env, d) + " " + ops[o] + " " + scalar(e, env, d));
                if (o == 4) return par(scalar(e, env, d) + " / (abs " + par(scalar(e, env, d)) + " + 1.0)");
                if (o == 5) return par((coin(0.5) ? "min " : "max ") + par(scalar(e, env, d)) + " " + par(scalar(e, env, d)));
                if (o == 6) return par("sqrt (abs " + par(scalar(e, env, d)) + ")");
                if (o == 7) return par("floor " + par(scalar(e, env, d)));
                if (o == 8) return par("abs " + par(scalar(e, env, d)));
                return par("float " + par(scalar(coin(0.8) ? El::Int : El::Bool, env, d)));
            }
            case El::Bool: {
                static const char* cmps[] = {"<", "<=", ">", ">=", "==", "!="};
                const int o = pick(6);
                if (o < 3) {
                    const El t = coin(0.6) ? El::Int : El::Float;
                    return par(scalar(t, env, d) + " " + cmps[pick(6)] + " " + scalar(t, env, d));
                }
                if (o == 3) return par(scalar(e, env, d) + " && " + scalar(e, env, d));
                if (o == 4) return par(scalar(e, env, d) + " || " + scalar(e, env, d));
                return par("!" + par(scalar(e, env, d)));
            }
        }
        return "0";
    }

    std::string lambda(const std::vector<El>& params, El out, int depth) {
        std::vector<Scalar> env;
        std::string head = "\\";
        for (El p : params) {
            const std::string v = name();
            env.push_back({v, p});
            head += v + " ";
        }
        return par(head + "-> " + scalar(out, env, depth));
    }

    // Broadcast operand at the top level: a literal or a captured scalar.
    std::string top_scalar(El e) {
        std::vector<Scalar> env;
        return par(scalar(e, env, coin(0.3) ? 1 : 0));
    }

    std::string literal(El e, int64_t n) {
        std::string s = "[";
        for (int64_t k = 0; k < n; ++k) {
            if (k) s += ", ";
            s += e == El::Int ? std::to_string(small()) : e == El::Float ? float_lit() : (coin(0.5) ? "true" : "false");
        }
        return s + "]";
    }

    const char* scan_op(El e) {
        static const char* ints[] = {"(+)", "(*)", "min", "max", "(+)"};
        static const char* bools[] = {"(&&)", "(||)"};
        return e == El::Bool ? bools[pick(2)] : ints[pick(5)];
    }
    std::string seed(El e) { return e == El::Bool ? (coin(0.5) ? "true" : "false") : num(small()); }

    // A source of `n` in-range indices into an extent m > 0 (or none when n == 0).
    std::string indices(int64_t n, int64_t m, int depth) {
        if (m == 0) return "(iota 0)";
        if (coin(0.5)) return par("(iota " + std::to_string(n) + " * " + std::to_string(1 + pick(7)) + " + " + std::to_string(pick(5)) + ") % " + std::to_string(m));
        const std::string v = name();
        return par("map (\\" + v + " -> abs " + v + " % " + std::to_string(m) + ") " + par(vec(El::Int, n, depth)));
    }

    // A slice of exactly n elements from a vector (rank 1) or the rows of a matrix.
    // Returns {source extent, slice text}.
    std::pair<int64_t, std::string> slice_of(int64_t n) {
        const int64_t k = 1 + pick(3);
        if (coin(0.5)) {
            const int64_t lo = pick(4);
            const bool explicit_hi = n > 0 && coin(0.3);  // then the source may be longer
            const int64_t m = lo + (n > 0 ? (n - 1) * k + 1 + pick(static_cast<int>(k)) : 0) + (explicit_hi ? pick(3) : 0);
            const std::string lo_s = coin(0.3) && lo < m ? std::to_string(lo - m) : std::to_string(lo);
            if (explicit_hi) return {m, lo_s + ":" + std::to_string(lo + (n - 1) * k + 1) + ":" + std::to_string(k)};
            return {m, lo_s + "::" + std::to_string(k)};
        }
        if (n == 0) {
            const int64_t m = pick(4);
            return {m, std::to_string(m > 0 ? m - 1 : 0) + ":" + (m > 0 ? std::to_string(m - 1) : "") + ":-" + std::to_string(k)};
        }
        const int64_t hi = (n - 1) * k + pick(static_cast<int>(k));
        const int64_t m = hi + 1 + pick(3);
        const std::string hi_s = coin(0.3) ? std::to_string(hi - m) : std::to_string(hi);
        if (coin(0.3) && hi - (n - 1) * k - 1 >= 0) return {m, hi_s + ":" + std::to_string(hi - (n - 1) * k - 1) + ":-" + std::to_string(k)};
        if (hi == m - 1 && coin(0.5)) return {m, "::-" + std::to_string(k)};
        return {m, hi_s + "::-" + std::to_string(k)};
    }

    // ---- rank-1 arrays of exactly n elements, with exact (order-independent) values.
    std::string vec(El e, int64_t n, int depth) {
        const std::string ns = std::to_string(n);
        if (depth <= 0 || coin(0.15)) {
            std::vector<const Vec*> named;
            for (const Vec& v : vecs_)
                if (v.e == e && v.n == n) named.push_back(&v);
            if (!named.empty() && coin(0.6)) return named[pick(static_cast<int>(named.size()))]->name;
            const int k = pick(4);
            if (k == 0 && n <= 6 && n > 0) return literal(e, n);
            if (k == 1 || e == El::Bool) return "fill " + ns + " " + top_scalar(e);
            if (e == El::Int) return "iota " + ns;
            return "map float (iota " + ns + ")";
        }
        const int d = depth - 1;
        switch (pick(17)) {
            case 16:
                return vmap_rows(e, n, d);
            case 0:
                return "generate " + ns + " " + lambda({El::Int}, e, 2 + pick(2));
            case 1: {
                const El t = elem();
                return "map " + lambda({t}, e, 1 + pick(3)) + " " + par(vec(t, n, d));
            }
            case 2: {
                const El a = elem(), b = elem();
                if (coin(0.25)) {
                    const El c = elem();
                    return "zipWith3 " + lambda({a, b, c}, e, 1 + pick(2)) + " " + par(vec(a, n, d)) + " " + par(vec(b, n, d)) +
                           " " + par(vec(c, n, d));
                }
                return "zipWith " + lambda({a, b}, e, 1 + pick(3)) + " " + par(vec(a, n, d)) + " " + par(vec(b, n, d));
            }
            case 3:
            case 4:
                return elementwise(e, n, d);
            case 5:
                return "reverse " + par(vec(e, n, d));
            case 6: {
                const int64_t extra = pick(5);
                if (coin(0.2)) return "take " + std::to_string(n + extra) + " " + par(vec(e, n, d));
                return coin(0.5) ? "take " + ns + " " + par(vec(e, n + extra, d))
                                 : "drop " + std::to_string(extra) + " " + par(vec(e, n + extra, d));
            }
            case 7: {
                auto [m, s] = slice_of(n);
                return par(vec(e, m, d)) + "[" + s + "]";
            }
            case 8: {
                const int64_t m = n == 0 ? pick(3) : 1 + pick(20);
                return "gather " + indices(n, m, d) + " " + par(vec(e, m, d));
            }
            case 9: {
                const int64_t n1 = n == 0 ? 0 : pick(static_cast<int>(n + 1));
                return par(vec(e, n1, d)) + " ++ " + par(vec(e, n - n1, d));
            }
            case 10:
                if (n % 2 == 0) return "interleave " + par(vec(e, n / 2, d)) + " " + par(vec(e, n / 2, d));
                return "reverse " + par(vec(e, n, d));
            case 11:
                if (e != El::Float) {
                    const int s = pick(3);
                    if (s == 0) return "scan " + std::string(scan_op(e)) + " " + seed(e) + " " + par(vec(e, n, d));
                    if (s == 1) return "scanExclusive " + std::string(scan_op(e)) + " " + seed(e) + " " + par(vec(e, n, d));
                    return "segscan " + std::string(scan_op(e)) + " " + seed(e) + " " + par(vec(El::Bool, n, d)) + " " + par(vec(e, n, d));
                }
                return "map float " + par(vec(El::Int, n, d));
            case 12: {  // a row or a column of a matrix
                const int64_t other = small_extent();
                if (other > 0 && coin(0.5)) {
                    const int64_t i = pick(static_cast<int>(other));
                    return par(mat(e, other, n, d)) + "[" + std::to_string(coin(0.3) ? i - other : i) + "]";
                }
                if (other > 0) return par(mat(e, n, other, d)) + "[:, " + std::to_string(pick(static_cast<int>(other))) + "]";
                return "reverse " + par(vec(e, n, d));
            }
            case 13:  // an innermost reduction of a matrix: exact for ints, bools and max/min
                if (e == El::Int) {
                    static const char* reds[] = {"sum", "product", "maximum", "minimum"};
                    return std::string(reds[pick(4)]) + " " + par(mat(e, n, small_extent(), d));
                }
                if (e == El::Float) return std::string(coin(0.5) ? "maximum " : "minimum ") + par(mat(e, n, small_extent(), d));
                return std::string(coin(0.5) ? "all " : "any ") + par(mat(e, n, small_extent(), d));
            case 14:
                if (e == El::Float) return "float " + par(vec(coin(0.8) ? El::Int : El::Bool, n, d));
                if (e == El::Int) return "int " + par(vec(coin(0.7) ? El::Float : El::Bool, n, d));
                return "map " + lambda({El::Int}, El::Bool, 2) + " " + par(vec(El::Int, n, d));
            default:
                for (const Func& f : funcs_)
                    if (f.out == e && coin(0.5)) return "map " + f.name + " " + par(vec(f.in, n, d));
                if (e == El::Int && coin(0.3)) return par(vec(e, n, d)) + " |> map (+ " + std::to_string(pick(5)) + ")";
                return "map " + lambda({e}, e, 1 + pick(2)) + " " + par(vec(e, n, d));
        }
    }

    std::string elementwise(El e, int64_t n, int d) {
        // A scalar, a vector of n, or (broadcast, NumPy's rule) a vector of
        // one element; the second operand has n elements unless the first has.
        bool full = false;
        auto arr_or_scalar = [&](El t, bool& used_arr) {
            if (coin(0.35)) return top_scalar(t);
            used_arr = true;
            if (full && coin(0.2)) return par(vec(t, 1, d));
            full = true;
            return par(vec(t, n, d));
        };
        bool used = false;
        std::string a, b;
        switch (e) {
            case El::Int: {
                static const char* ops[] = {"+", "-", "*", "/", "%", "&", "|", "^", "+", "*"};
                const int o = pick(13);
                if (o < 10) {
                    a = arr_or_scalar(e, used);
                    b = used ? arr_or_scalar(e, used) : par(vec(e, n, d));
                    return a + " " + ops[o] + " " + b;
                }
                if (o == 10) return std::string(coin(0.5) ? "min " : "max ") + par(vec(e, n, d)) + " " + top_scalar(e);
                if (o == 11) return par(vec(e, n, d)) + (coin(0.5) ? " << " : " >> ") + std::to_string(pick(4));
                return coin(0.5) ? "-" + par(vec(e, n, d)) : "abs " + par(vec(e, n, d));
            }
            case El::Float: {
                static const char* ops[] = {"+", "-", "*", "+"};
                const int o = pick(9);
                if (o < 4) {
                    a = arr_or_scalar(e, used);
                    b = used ? arr_or_scalar(e, used) : par(vec(e, n, d));
                    return a + " " + ops[o] + " " + b;
                }
                if (o == 4) return par(vec(e, n, d)) + " / " + (coin(0.5) ? "4.0" : "(abs " + par(vec(e, n, d)) + " + 1.0)");
                if (o == 5) return std::string(coin(0.5) ? "min " : "max ") + par(vec(e, n, d)) + " " + (coin(0.5) ? top_scalar(e) : par(vec(e, n, d)));
                if (o == 6) return "sqrt (abs " + par(vec(e, n, d)) + ")";
                if (o == 7) return "floor " + par(vec(e, n, d));
                return "-" + par(vec(e, n, d));
            }
            case El::Bool: {
                static const char* cmps[] = {"<", "<=", ">", ">=", "==", "!="};
                const int o = pick(5);
                if (o < 2) {
                    const El t = coin(0.6) ? El::Int : El::Float;
                    a = arr_or_scalar(t, used);
                    b = used ? arr_or_scalar(t, used) : par(vec(t, n, d));
                    return a + " " + cmps[pick(6)] + " " + b;
                }
                if (o == 2) return par(vec(e, n, d)) + " && " + (coin(0.7) ? par(vec(e, n, d)) : top_scalar(e));
                if (o == 3) return par(vec(e, n, d)) + " || " + par(vec(e, n, d));
                return "!" + par(vec(e, n, d));
            }
        }
        return "";
    }

    // ---- rank-2 arrays of exactly r x c elements.
    std::string mat(El e, int64_t r, int64_t c, int depth) {
        const std::string shape = "(" + std::to_string(r) + ", " + std::to_string(c) + ")";
        if (depth <= 0 || coin(0.15)) {
            for (const Mat& m : mats_)
                if (m.e == e && m.r == r && m.c == c && coin(0.7)) return m.name;
            if (coin(0.5)) return "fill " + shape + " " + top_scalar(e);
            return "generate " + shape + " " + lambda({El::Int, El::Int}, e, 1);
        }
        const int d = depth - 1;
        switch (pick(11)) {
            case 10: {  // each row computed by vmap from a row of another matrix
                const auto [row, t, c0] = vmap_row(e);
                const std::string body = vec(e, c, d);
                vecs_.pop_back();
                return "vmap (\\" + row + " -> " + body + ") " + par(mat(t, r, c0, d));
            }
            case 9:
                return broadcast(e, r, c, d);
            case 0:
                return "generate " + shape + " " + lambda({El::Int, El::Int}, e, 2 + pick(2));
            case 1: {
                const El t = elem();
                return "map " + lambda({t}, e, 1 + pick(2)) + " " + par(mat(t, r, c, d));
            }
            case 2:
                return "transpose " + par(mat(e, c, r, d));
            case 3:
                return "reverse " + par(mat(e, r, c, d));
            case 4: {
                const int64_t extra = pick(3);
                return coin(0.5) ? "take " + std::to_string(r) + " " + par(mat(e, r + extra, c, d))
                                 : "drop " + std::to_string(extra) + " " + par(mat(e, r + extra, c, d));
            }
            case 5: {
                const int64_t r1 = r == 0 ? 0 : pick(static_cast<int>(r + 1));
                return par(mat(e, r1, c, d)) + " ++ " + par(mat(e, r - r1, c, d));
            }
            case 6: {
                auto [mr, sr] = slice_of(r);
                auto [mc, sc] = slice_of(c);
                return par(mat(e, mr, mc, d)) + "[" + sr + ", " + sc + "]";
            }
            case 7:
                if (e == El::Int) return par(mat(e, r, c, d)) + " " + (coin(0.5) ? "+ " : "* ") + par(mat(e, r, c, d));
                if (e == El::Float) return par(mat(e, r, c, d)) + " * " + top_scalar(e);
                return "!" + par(mat(e, r, c, d));
            default:
                if (e != El::Float) return "scan " + std::string(scan_op(e)) + " " + seed(e) + " " + par(mat(e, r, c, d));
                return "float " + par(mat(El::Int, r, c, d));
        }
    }

    // vmap's row: a vector named for the body to read (popped by the caller).
    std::tuple<std::string, El, int64_t> vmap_row(El prefer) {
        const std::string row = "r" + std::to_string(fresh_++);
        const El t = coin(0.6) ? prefer : elem();
        const int64_t c = small_extent();
        vecs_.push_back({row, t, c});
        return {row, t, c};
    }

    // A vector of one exact reduction per row of a matrix, by vmap.
    std::string vmap_rows(El e, int64_t n, int d) {
        const auto [row, t, c] = vmap_row(e);
        std::string body;
        // maximum / minimum only for ints: an int sum or product that wraps is an
        // error in checking mode, worded per row of the matrix when batched
        // and per vector row by row (the reference).
        if (e == El::Int) {
            body = std::string(coin(0.5) ? "maximum " : "minimum ") + par(vec(e, c, d));
        } else if (e == El::Float) {
            body = std::string(coin(0.5) ? "maximum " : "minimum ") + par(vec(e, c, d));
        } else {
            body = std::string(coin(0.5) ? "all " : "any ") + par(vec(e, c, d));
        }
        vecs_.pop_back();
        return "vmap (\\" + row + " -> " + body + ") " + par(mat(t, n, c, d));
    }

    // An r x c matrix from two operands that broadcast to it (NumPy's rule):
    // a column and a row, or an r x c matrix and one of (1, c), (r, 1), a
    // vector of c, `col` of r elements, `row` of c, another r x c.
    std::string broadcast(El e, int64_t r, int64_t c, int d) {
        const El t = e == El::Bool ? (coin(0.5) ? El::Int : El::Float) : e;
        std::string a, b;
        if (coin(0.2)) {
            a = par("col " + par(vec(t, r, d)));
            b = coin(0.5) ? par("row " + par(vec(t, c, d))) : par(vec(t, c, d));
        } else {
            a = par(mat(t, r, c, d));
            switch (pick(6)) {
                case 0: b = par(mat(t, 1, c, d)); break;
                case 1: b = par(mat(t, r, 1, d)); break;
                case 2: b = par(vec(t, c, d)); break;
                case 3: b = par("col " + par(vec(t, r, d))); break;
                case 4: b = par("row " + par(vec(t, c, d))); break;
                default: b = par(mat(t, r, c, d));
            }
        }
        if (coin(0.5)) std::swap(a, b);
        static const char* int_ops[] = {"+", "-", "*", "max", "min"};
        static const char* float_ops[] = {"+", "-", "*", "max"};
        static const char* cmps[] = {"<", "<=", ">", ">=", "==", "!="};
        if (e == El::Bool) return a + " " + cmps[pick(6)] + " " + b;
        const std::string op = e == El::Int ? int_ops[pick(5)] : float_ops[pick(4)];
        if (op == "max" || op == "min") return op + " " + a + " " + b;
        return a + " " + op + " " + b;
    }

    // ---- top-level statements: consumers whose (possibly inexact) results are only printed.
    std::string statement(int64_t n) {
        const El e = elem();
        const std::string a = par(vec(e, n, 3));
        switch (pick(10)) {
            case 0:
            case 1:
                return vec(e, n, 3);
            case 2:  // reductions
                if (e == El::Int) {
                    static const char* reds[] = {"sum", "product", "maximum", "minimum"};
                    if (coin(0.2)) return "reduce " + std::string(scan_op(e)) + " " + seed(e) + " " + a;
                    if (coin(0.1)) return "reduce (\\p q -> p + q) 0 " + a;
                    return std::string(reds[pick(4)]) + " " + a;
                }
                if (e == El::Bool) return std::string(coin(0.5) ? "all " : "any ") + a;
                switch (pick(4)) {
                    case 0: return "sum (abs " + a + ")";
                    case 1: return "product (map (\\p -> 1.0 + (abs p % 1.0) * 0.001) " + a + ")";
                    case 2: return "reduce (+) " + float_lit() + " (abs " + a + ")";
                    default: return std::string(coin(0.5) ? "maximum " : "minimum ") + a;
                }
            case 3: {  // scans
                const char* kind = coin(0.5) ? "scan" : "scanExclusive";
                if (e != El::Float) {
                    if (coin(0.3)) return "segscan " + std::string(scan_op(e)) + " " + seed(e) + " " + par(vec(El::Bool, n, 2)) + " " + a;
                    return std::string(kind) + " " + scan_op(e) + " " + seed(e) + " " + a;
                }
                switch (pick(4)) {
                    case 0: return std::string(kind) + " (+) 0.0 (abs " + a + ")";
                    case 1: return std::string(kind) + " (*) 1.0 (map (\\p -> 1.0 + (abs p % 1.0) * 0.001) " + a + ")";
                    case 2: return "segscan (+) 0.5 " + par(vec(El::Bool, n, 2)) + " (abs " + a + ")";
                    default: return std::string(kind) + (coin(0.5) ? " max " : " min ") + float_lit() + " " + a;
                }
            }
            case 4: {  // filter
                const std::string f = "filter " + lambda({e}, El::Bool, 2) + " " + a;
                const int k = pick(3);
                if (k == 0) return f;
                if (k == 1) return "length " + par(f);
                if (e == El::Int) return "sum " + par(f);
                if (e == El::Float) return "sum (abs " + par(f) + ")";
                return "any " + par(f);
            }
            case 5: {  // matrices
                const int64_t r = small_extent(), c = small_extent();
                const std::string m = par(mat(e, r, c, 3));
                if (coin(0.5)) return m.substr(1, m.size() - 2);
                if (e == El::Int) return std::string(coin(0.5) ? "sum " : "scan (+) 0 ") + m;
                if (e == El::Float) return coin(0.5) ? "sum (abs " + m + ")" : "transpose " + m;
                return "any " + m;
            }
            case 6: {  // element access
                if (n == 0) return "length " + a;
                const int64_t i = pick(static_cast<int>(n));
                return a + "[" + std::to_string(coin(0.3) ? i - n : i) + "]";
            }
            case 7: {  // transcendental functions and double precision: only printed
                const std::string f = par(vec(El::Float, n, 3));
                static const char* fns[] = {"sin", "cos", "exp", "tanh", "atan"};
                switch (pick(4)) {
                    case 0: return std::string(fns[pick(5)]) + " (" + f + " * 0.01)";
                    case 1: return "log (abs " + f + " + 1.0)";
                    case 2: return "double " + f + " * (0.1 : double)";
                    default: return "sum (abs (double " + f + "))";
                }
            }
            default:
                return vec(e, n, 4);
        }
    }
};

}  // namespace

TEST_CASE("compiled backend: random well-typed programs agree with the reference evaluator") {
    const auto start = std::chrono::steady_clock::now();
    int programs = 0, failures = 0;
    // SHOAL_RANDOM_PROGRAMS=N runs seeds 1..N instead (a longer search),
    // SHOAL_RANDOM_PROGRAMS=F-N seeds F..N (one shard of a parallel run).
    const char* count = std::getenv("SHOAL_RANDOM_PROGRAMS");
    char* rest = nullptr;
    // SHOAL_RANDOM_FIXED: how many fixed seeds precede the fresh ones (350;
    // fewer in the sanitized build, where a program runs about 3x slower).
    const char* fixed = std::getenv("SHOAL_RANDOM_FIXED");
    uint32_t first = 1, last = count ? static_cast<uint32_t>(std::strtoul(count, &rest, 10))
                                     : fixed ? static_cast<uint32_t>(std::strtoul(fixed, nullptr, 10)) : 350;
    if (rest && *rest == '-') first = std::exchange(last, static_cast<uint32_t>(std::strtoul(rest + 1, nullptr, 10)));
    std::vector<uint32_t> seeds;
    for (uint32_t seed = first; seed <= last; ++seed) seeds.push_back(seed);
    if (!count) {  // fresh seeds, above the fixed ones
        const char* given = std::getenv("SHOAL_RANDOM_SEED");
        const uint32_t base = given ? static_cast<uint32_t>(std::strtoul(given, nullptr, 10))
                                    : 1000 + std::random_device{}() % 1000000000u;
        for (uint32_t k = 0; k < 50; ++k) seeds.push_back(base + k);
        MESSAGE("fresh random programs: seeds " << base << ".." << base + 49 << " (replay: SHOAL_RANDOM_PROGRAMS="
                                                << base << "-" << base + 49 << ")");
    }
    const size_t fixed_seeds = count ? seeds.size() : seeds.size() - 50;
    for (size_t k = 0; k < seeds.size(); ++k) {
        const uint32_t seed = seeds[k];
        Gen g(seed);
        const std::string p = g.program();
        INFO("seed " << seed);
        if (k < fixed_seeds) {
            if (!shoal::testing::differential(p)) ++failures;
        } else if (!shoal::testing::backends_agree(p, "")) {
            // A fresh seed's mismatch fails, shrunk, with the command that replays it.
            ++failures;
            FAIL_CHECK("MISMATCH on fresh seed " << seed << " (replay: SHOAL_RANDOM_PROGRAMS=" << seed << "-" << seed
                                                 << "); shrunk:\n" << shoal::testing::shrink(p));
        }
        if (const char* dump = std::getenv("SHOAL_RANDOM_PROGRAMS_DUMP")) {  // to inspect what is generated
            std::ofstream(dump, std::ios::app) << "-- seed " << seed << "\n" << p << "-- reference:\n"
                                               << shoal::testing::run(p, false) << "\n";
        }
        ++programs;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE(programs << " random programs, " << failures << " mismatches, " << secs << " s");
    CHECK(programs >= (count ? 1 : fixed ? 50 : 200));
}

TEST_CASE("the differential shrinker keeps only the lines a mismatch needs") {
    // `:set` prints the backend: the one line on which the two runs differ.
    const std::string program = "let a = 1\nlet b = map (\\x -> x + a) (iota 4)\n:set\nsum b\n";
    CHECK_FALSE(shoal::testing::backends_agree(program, ""));
    CHECK(shoal::testing::shrink(program) == ":set\n");
}
