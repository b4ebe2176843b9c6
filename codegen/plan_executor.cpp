#include "codegen/plan_executor.h"

#include "lang/diagnostics.h"

namespace shoal::ir {

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

}  // namespace shoal::ir
