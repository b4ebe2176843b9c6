#include "codegen/plan_executor.h"

#include <algorithm>

#include "lang/diagnostics.h"

namespace shoal::ir {

namespace {
void replace_all(std::string& s, const std::string& what, const std::string& with) {
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + with.size()))
        s.replace(at, what.size(), with);
}
}  // namespace

std::string format_check(const std::string& message, int64_t index, int64_t extent) {
    // A message without placeholders is complete (an error hoisted out of
    // the kernel, raised where the kernel reaches it).
    std::string s = message;
    replace_all(s, "{index}", std::to_string(index));
    replace_all(s, "{extent}", std::to_string(extent));
    return s;
}

void raise_failed_check(const Kernel& k, int code, int64_t index, int64_t extent) {
    SHOAL_INTERNAL_ASSERT(code >= 0 && code < static_cast<int>(k.checks.size()),
                          "kernel " + k.name + " reported unknown check " + std::to_string(code));
    const Check& c = k.checks[static_cast<size_t>(code)];
    user_error(ErrorKind::Runtime, c.loc, format_check(c.message, index, extent));
}

// An infix operator's location is the operator alone, so its whole source
// line stands for it. Cut at a word boundary, never inside a word.
std::string source_comment(const Loc& loc) {
    if (!loc.valid()) return "";
    const std::string_view line = loc.source->line(loc.line);
    const size_t from = std::min(line.size(), static_cast<size_t>(std::max(loc.col - 1, 0)));
    std::string text(loc.length > 2 ? line.substr(from, loc.length) : line);
    text.erase(0, text.find_first_not_of(" \t"));
    // `:cuda x + y`: the expression, not the command and its options.
    while (!text.empty() && (text[0] == ':' || text.starts_with("--"))) {
        const size_t blank = text.find_first_of(" \t");
        text.erase(0, blank == std::string::npos ? text.size() : text.find_first_not_of(" \t", blank));
    }
    constexpr size_t kWidth = 72;
    if (text.size() > kWidth) {
        size_t cut = text.rfind(' ', kWidth);
        text = text.substr(0, cut == std::string::npos || cut == 0 ? kWidth : cut) + " ...";
    }
    return text + "   -- " + loc.position();
}

void store_element(ScalarType t, const HostValue& v, void* p) {
    switch (t) {
        case ScalarType::Bool: *static_cast<bool*>(p) = v.i != 0; break;
        case ScalarType::I32: *static_cast<int32_t*>(p) = static_cast<int32_t>(v.i); break;
        case ScalarType::U32: *static_cast<uint32_t*>(p) = static_cast<uint32_t>(v.i); break;
        case ScalarType::I64:
        case ScalarType::U64: *static_cast<int64_t*>(p) = v.i; break;
        case ScalarType::F32: *static_cast<float*>(p) = static_cast<float>(v.f); break;
        case ScalarType::F64: *static_cast<double*>(p) = v.f; break;
    }
}

HostValue host_value(const Scalar& s) {
    HostValue h;
    h.type = scalar_of(s.type);
    if (is_floating(s.type))
        h.f = s.as_double();
    else
        h.i = s.as_long();
    return h;
}

HostValue load_element(ScalarType t, const void* p) {
    HostValue v;
    v.type = t;
    switch (t) {
        case ScalarType::Bool: v.i = *static_cast<const bool*>(p); break;
        case ScalarType::I32: v.i = *static_cast<const int32_t*>(p); break;
        case ScalarType::U32: v.i = *static_cast<const uint32_t*>(p); break;
        case ScalarType::I64:
        case ScalarType::U64: v.i = *static_cast<const int64_t*>(p); break;
        case ScalarType::F32: v.f = *static_cast<const float*>(p); break;
        case ScalarType::F64: v.f = *static_cast<const double*>(p); break;
    }
    return v;
}

Prim buffer_prim(ScalarType t) {
    switch (t) {
        case ScalarType::Bool: return Prim::Bool;
        case ScalarType::I32:
        case ScalarType::U32: return Prim::Int;
        case ScalarType::I64:
        case ScalarType::U64: return Prim::Long;
        case ScalarType::F32: return Prim::Float;
        case ScalarType::F64: break;
    }
    return Prim::Double;
}

const DeviceArray* device_memory(const ArrayData& data) {
    if (data.device) return data.device.get();
    return data.host ? dynamic_cast<const DeviceArray*>(data.host->device_copy.get().get()) : nullptr;
}

ArrayPtr host_array(const ArrayData& data, Prim elem, const Shape& shape) {
    if (data.host) return data.host;
    SHOAL_INTERNAL_ASSERT(data.device && data.device->count() == shape_size(shape) &&
                              static_cast<size_t>(data.device->bytes()) ==
                                  static_cast<size_t>(shape_size(shape)) * prim_size(elem),
                          "host_array: the device memory does not hold an array of this shape");
    auto a = std::make_shared<Array>(elem, shape, Array::Uninitialised{});
    data.device->read(a->bytes.data());
    a->device_copy.set(data.device);  // a later kernel reads it where it is
    return a;
}

namespace {

CallCounters call_counters(const PlanStep& step, int64_t flops, int64_t elements, ScalarType elem,
                           std::string implementation) {
    CallCounters c;
    c.function = step.call.function;
    c.implementation = std::move(implementation);
    c.comment = step.comment;
    c.calls = 1;
    c.flops = flops;
    c.minimum_bytes = elements * static_cast<int64_t>(scalar_size(elem));
    return c;
}

}  // namespace

CallCounters gemm_counters(const PlanStep& step, const GemmShape& shape, ScalarType elem, std::string implementation) {
    return call_counters(step, shape.flops(), shape.elements(), elem, std::move(implementation));
}

CallCounters lu_counters(const PlanStep& step, const LuShape& shape, ScalarType elem, std::string implementation) {
    return call_counters(step, shape.flops(), shape.elements(), elem, std::move(implementation));
}

CallCounters svd_counters(const PlanStep& step, const SvdShape& shape, ScalarType elem, std::string implementation) {
    return call_counters(step, shape.flops(), shape.elements(), elem, std::move(implementation));
}

}  // namespace shoal::ir
