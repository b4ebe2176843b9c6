// Binding the functions of a library Shoal opens at its first use (OpenBLAS,
// cuBLAS, cuSOLVER: a machine without them still runs Shoal).
#pragma once
#include <dlfcn.h>

namespace shoal {

// slot = the function `name` of a dlopen'ed library; false when it is missing.
template <class F>
bool bind_symbol(void* library, F& slot, const char* name) {
    slot = reinterpret_cast<F>(dlsym(library, name));
    return slot != nullptr;
}

}  // namespace shoal
