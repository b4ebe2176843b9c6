#include "format.h"

#include <charconv>
#include <cmath>

#include "diagnostics.h"

namespace shoal {

namespace {

constexpr int64_t kEdgeItems = 3;  // entries kept at each end of a summarised axis

// to_chars writes the exponent as "e+38" / "e-05"; Shoal prints "e38" / "e-5".
std::string normalise_exponent(std::string text) {
    size_t e = text.find('e');
    if (e == std::string::npos) return text;
    std::string mantissa = text.substr(0, e);
    std::string exponent = text.substr(e + 1);
    bool negative = !exponent.empty() && exponent[0] == '-';
    if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) exponent.erase(0, 1);
    size_t nonzero = exponent.find_first_not_of('0');
    exponent = nonzero == std::string::npos ? "0" : exponent.substr(nonzero);
    return mantissa + "e" + (negative ? "-" : "") + exponent;
}

// Shortest round-trip text of a float or double (the overload picks the type,
// so 0.1f prints "0.1", not "0.10000000149011612"). Like Python and numpy,
// scientific notation is used only for decimal exponents below -4 or from 16
// on (from 8 for float, whose digits beyond that are not significant), so
// 100000.0 reads as such while 3.4028235e38, 1.2345679e8 and 1e-5 stay short.
template <class F>
std::string format_floating(F x) {
    if (std::isnan(x)) return "nan";  // the sign of a NaN is not meaningful (x86 0/0 sets it)
    if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
    char buf[400];
    auto [sci_end, sci_ec] = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
    SHOAL_INTERNAL_ASSERT(sci_ec == std::errc(), "to_chars failed");
    std::string sci(buf, sci_end);
    int exponent = std::stoi(sci.substr(sci.find('e') + 1));
    auto end = sci_end;
    const int fixed_limit = sizeof(F) == 4 ? 8 : 16;
    if (exponent >= -4 && exponent < fixed_limit) {
        auto [fixed_end, fixed_ec] = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed);
        SHOAL_INTERNAL_ASSERT(fixed_ec == std::errc(), "to_chars failed");
        end = fixed_end;
    }
    std::string text = normalise_exponent(std::string(buf, end));
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    return text;
}

std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

// Appends the sub-array of `a` along `axis` that starts at flat index `offset`.
void format_axis(const Array& a, size_t axis, int64_t offset, int threshold, bool& summarised,
                 std::string& out) {
    int64_t stride = 1;
    for (size_t k = axis + 1; k < a.shape.size(); ++k) stride *= a.shape[k];
    bool innermost = axis + 1 == a.shape.size();
    out += '[';
    bool first = true;
    for (int64_t k : shown_indices(a.shape[axis], threshold)) {
        if (!first) out += ", ";
        first = false;
        if (k < 0) {
            out += "...";
            summarised = true;
        } else if (innermost) {
            out += format_scalar(a.get(offset + k));
        } else {
            format_axis(a, axis + 1, offset + k * stride, threshold, summarised, out);
        }
    }
    out += ']';
}

// A distributed array's shown rows only (`rows`: those rows of an array of
// shape `whole`), printed as the whole array would print.
std::string format_shown_rows(const Array& rows, const Shape& whole, int threshold) {
    int64_t stride = 1;
    for (size_t k = 1; k < whole.size(); ++k) stride *= whole[k];
    std::string out = "[";
    bool summarised = false, first = true;
    int64_t at = 0;
    for (int64_t k : shown_indices(whole[0], threshold)) {
        if (!first) out += ", ";
        first = false;
        if (k < 0) {
            out += "...";
            summarised = true;
        } else if (whole.size() == 1) {
            out += format_scalar(rows.get(at++));
        } else {
            format_axis(rows, 1, at++ * stride, threshold, summarised, out);
        }
    }
    out += ']';
    if (summarised) out += " " + shape_to_string(whole);
    return out;
}

std::string format_array(const Array& a, int threshold) {
    if (a.shape.empty()) return format_scalar(a.get(0));  // rank 0 never occurs; be safe
    std::string out;
    bool summarised = false;
    format_axis(a, 0, 0, threshold, summarised, out);
    if (summarised) out += " " + shape_to_string(a.shape);
    return out;
}

}  // namespace

std::vector<int64_t> shown_indices(int64_t extent, int threshold) {
    std::vector<int64_t> idx;
    // Summarising an axis of 2*kEdgeItems or fewer would hide nothing.
    if (extent > threshold && extent > 2 * kEdgeItems) {
        for (int64_t k = 0; k < kEdgeItems; ++k) idx.push_back(k);
        idx.push_back(-1);
        for (int64_t k = extent - kEdgeItems; k < extent; ++k) idx.push_back(k);
    } else {
        for (int64_t k = 0; k < extent; ++k) idx.push_back(k);
    }
    return idx;
}

std::string format_scalar(const Scalar& s) {
    switch (s.type) {
        case Prim::Bool: return s.b ? "true" : "false";
        case Prim::Int: return std::to_string(s.i);
        case Prim::Long: return std::to_string(s.l);
        case Prim::Float: return format_floating(s.f);
        case Prim::Double: return format_floating(s.d);
    }
    return "?";
}

std::string format_value(const Value& v, int threshold) {
    switch (v.kind()) {
        case Value::Kind::Unit: return "";
        case Value::Kind::Scalar: return format_scalar(v.scalar());
        case Value::Kind::Array: return format_array(*v.array(), threshold);
        case Value::Kind::Function: return "<function>";
        case Value::Kind::String: return quote(v.str());
        case Value::Kind::Delayed: {
            const DelayedArray& d = *v.delayed();
            if (!d.distributed() || d.shape().empty()) return format_array(*d.force(), threshold);
            std::vector<int64_t> shown;
            for (int64_t k : shown_indices(d.shape()[0], threshold))
                if (k >= 0) shown.push_back(k);
            return format_shown_rows(*d.rows(shown), d.shape(), threshold);
        }
        case Value::Kind::Tuple: {
            // An array of tuples is stored as a tuple of arrays and prints as one.
            std::string out = "(";
            for (size_t k = 0; k < v.tuple().size(); ++k) {
                if (k) out += ", ";
                out += format_value(v.tuple()[k], threshold);
            }
            return out + ")";
        }
    }
    return "?";
}

}  // namespace shoal
