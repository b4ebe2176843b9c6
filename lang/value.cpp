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

namespace {

constexpr int64_t kDefaultMaxArrayBytes = int64_t{4} << 30;  // 4 GiB
std::atomic<int64_t> g_max_array_bytes{0};                   // 0: not decided yet

int64_t default_max_array_bytes() {
    if (const char* env = std::getenv("SHOAL_MAX_ARRAY_BYTES")) {
        char* end = nullptr;
        long long v = std::strtoll(env, &end, 10);
        if (end != env && *end == '\0' && v > 0) return v;
    }
    return kDefaultMaxArrayBytes;
}

// Memory the system can still give us (Linux MemAvailable), or -1 if unknown.
int64_t available_memory_bytes() {
    if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        long long kb = -1;
        while (std::fgets(line, sizeof line, f))
            if (std::sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
        std::fclose(f);
        if (kb >= 0) return static_cast<int64_t>(kb) * 1024;
    }
    long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) return static_cast<int64_t>(pages) * page;
    return -1;
}


[[noreturn]] void too_large(const Shape& shape, const std::string& why) {
    user_error(ErrorKind::Runtime, Loc{}, "array of shape " + shape_to_string(shape) + " is too large: " + why);
}

}  // namespace

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

int64_t max_array_bytes() {
    int64_t v = g_max_array_bytes.load(std::memory_order_relaxed);
    if (v == 0) {
        v = default_max_array_bytes();
        g_max_array_bytes.store(v, std::memory_order_relaxed);
    }
    return v;
}

void set_max_array_bytes(int64_t bytes) {
    g_max_array_bytes.store(bytes > 0 ? bytes : default_max_array_bytes(), std::memory_order_relaxed);
}

void check_array_size(Prim elem, const Shape& shape) {
    for (int64_t extent : shape)
        if (extent > std::numeric_limits<int32_t>::max())
            too_large(shape, "an extent is larger than " + std::to_string(std::numeric_limits<int32_t>::max()));
    const int64_t n = shape_size(shape);
    const auto width = static_cast<int64_t>(prim_size(elem));
    if (n > std::numeric_limits<int64_t>::max() / width) too_large(shape, "its size overflows");
    const int64_t bytes = n * width;
    const int64_t limit = max_array_bytes();
    if (bytes > limit)
        too_large(shape, "it needs " + human_bytes(bytes) + ", more than the limit of " + human_bytes(limit) +
                             " (set SHOAL_MAX_ARRAY_BYTES to change it)");
    // Row operations (reverse, take, filter, gather, ...) keep one 64-bit
    // index per outermost row: count them too, or an array with no elements
    // but 2^31 rows, such as fill (2147483647, 0) 1, would be free to create
    // and then exhaust the memory.
    const int64_t row_bytes = shape.empty() ? 0 : shape[0] * int64_t{8};
    if (row_bytes > limit)
        too_large(shape, "its " + std::to_string(shape[0]) + " rows need " + human_bytes(row_bytes) +
                             " of row indices, more than the limit of " + human_bytes(limit) +
                             " (set SHOAL_MAX_ARRAY_BYTES to change it)");
    // Only large arrays ask the system how much memory is left.
    if (bytes >= (int64_t{256} << 20)) {
        const int64_t avail = available_memory_bytes();
        if (avail >= 0 && bytes > avail / 10 * 9)
            too_large(shape, "it needs " + human_bytes(bytes) + " but only " + human_bytes(avail) +
                                 " of memory is available");
    }
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
