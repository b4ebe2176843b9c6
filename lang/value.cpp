#include "value.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <unistd.h>

#include "array_ops.h"
#include "diagnostics.h"
#include "memory_limit.h"
#include "scalar_semantics.h"

namespace shoal {

// Every conversion is scalar::convert (docs/semantics.md: float -> integer
// truncates toward zero, NaN -> 0, out of range saturates).
double Scalar::as_double() const {
    return ops::with_prim(type, [&]<class T>(T) { return scalar::convert<double>(ops::scalar_as<T>(*this)); });
}

int64_t Scalar::as_long() const {
    return ops::with_prim(type, [&]<class T>(T) { return scalar::convert<int64_t>(ops::scalar_as<T>(*this)); });
}

Scalar convert_scalar(const Scalar& s, Prim to) {
    return ops::with_prim(s.type, [&]<class From>(From) {
        const From x = ops::scalar_as<From>(s);
        return ops::with_prim(to, [&]<class To>(To) { return ops::make_scalar(scalar::convert<To>(x)); });
    });
}

int64_t shape_size(const Shape& s) {
    int64_t n = 1;
    for (int64_t extent : s) {
        SHOAL_INTERNAL_ASSERT(extent >= 0, "negative extent in shape " + shape_to_string(s));
        if (extent != 0 && n > std::numeric_limits<int64_t>::max() / extent)
            user_error(ErrorKind::Runtime, Loc{}, "array of shape " + shape_to_string(s) + " is too large");
        n *= extent;
    }
    return n;
}

std::string shape_to_string(const Shape& s) {
    std::string out = "(";
    for (size_t k = 0; k < s.size(); ++k) {
        if (k) out += ", ";
        out += std::to_string(s[k]);
    }
    return out + ")";
}

std::string human_bytes(int64_t b) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(b);
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        ++u;
    }
    char buf[64];
    if (u == 0) std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(b));
    else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
    return buf;
}

void check_array_size(Prim elem, const Shape& shape, const MemoryRoomQuery& room) {
    check_array_fits(static_cast<int64_t>(prim_size(elem)), shape, room);
}

Array::Array(Prim e, Shape sh) : elem(e), shape(std::move(sh)) {
    check_array_size(elem, shape);
    bytes.assign(static_cast<size_t>(shape_size(shape) * static_cast<int64_t>(prim_size(elem))), 0);
}

Array::Array(Prim e, Shape sh, Uninitialised) : elem(e), shape(std::move(sh)) {
    check_array_size(elem, shape);
    bytes.resize(static_cast<size_t>(shape_size(shape) * static_cast<int64_t>(prim_size(elem))));
}

// Elements are copied with memcpy: the byte buffer carries no C++ objects.
ArrayPtr rows_of_array(const Array& a, const std::vector<int64_t>& which) {
    Shape s = a.shape;
    s[0] = static_cast<int64_t>(which.size());
    auto out = std::make_shared<Array>(a.elem, s, Array::Uninitialised{});
    const size_t row = a.shape[0] ? a.bytes.size() / static_cast<size_t>(a.shape[0]) : 0;
    for (size_t k = 0; k < which.size(); ++k)
        std::memcpy(out->bytes.data() + k * row, a.bytes.data() + static_cast<size_t>(which[k]) * row, row);
    return out;
}

bool distributed(const Value& v) {
    if (v.is_delayed()) return v.delayed()->distributed();
    if (!v.is_tuple()) return false;
    for (const Value& x : v.tuple())
        if (distributed(x)) return true;
    return false;
}

ArrayPtr DelayedArray::rows(const std::vector<int64_t>& which) const { return rows_of_array(*force(), which); }

Scalar Array::get(int64_t flat) const {
    SHOAL_INTERNAL_ASSERT(flat >= 0 && flat < size(), "flat index out of range in Array::get");
    const uint8_t* p = bytes.data() + flat * static_cast<int64_t>(prim_size(elem));
    Scalar s;
    s.type = elem;
    switch (elem) {
        case Prim::Bool: s.b = *p != 0; break;
        case Prim::Int: std::memcpy(&s.i, p, sizeof s.i); break;
        case Prim::Long: std::memcpy(&s.l, p, sizeof s.l); break;
        case Prim::Float: std::memcpy(&s.f, p, sizeof s.f); break;
        case Prim::Double: std::memcpy(&s.d, p, sizeof s.d); break;
    }
    return s;
}

void Array::set(int64_t flat, const Scalar& v) {
    SHOAL_INTERNAL_ASSERT(flat >= 0 && flat < size(), "flat index out of range in Array::set");
    SHOAL_INTERNAL_ASSERT(v.type == elem, std::string("Array::set: ") + prim_name(v.type) + " into [" +
                                              prim_name(elem) + "]");
    uint8_t* p = bytes.data() + flat * static_cast<int64_t>(prim_size(elem));
    switch (elem) {
        case Prim::Bool: *p = v.b ? 1 : 0; break;
        case Prim::Int: std::memcpy(p, &v.i, sizeof v.i); break;
        case Prim::Long: std::memcpy(p, &v.l, sizeof v.l); break;
        case Prim::Float: std::memcpy(p, &v.f, sizeof v.f); break;
        case Prim::Double: std::memcpy(p, &v.d, sizeof v.d); break;
    }
}

bool is_array_like(const Value& v) {
    if (v.is_array()) return true;
    if (!v.is_tuple() || v.tuple().empty()) return false;
    for (const Value& e : v.tuple())
        if (!is_array_like(e)) return false;
    Shape first = array_like_shape(v.tuple().front());
    for (const Value& e : v.tuple())
        if (array_like_shape(e) != first) return false;
    return true;
}

Shape array_like_shape(const Value& v) {
    if (v.is_array()) return v.array()->shape;
    if (v.is_delayed()) return v.delayed()->shape();
    SHOAL_INTERNAL_ASSERT(v.is_tuple() && !v.tuple().empty(), "array_like_shape of a non-array value");
    return array_like_shape(v.tuple().front());
}

Value array_like_get(const Value& v, int64_t flat) {
    if (v.is_array()) return Value(v.array()->get(flat));
    SHOAL_INTERNAL_ASSERT(v.is_tuple(), "array_like_get of a non-array value");
    std::vector<Value> elems;
    elems.reserve(v.tuple().size());
    for (const Value& e : v.tuple()) elems.push_back(array_like_get(e, flat));
    return Value(std::move(elems));
}

}  // namespace shoal
