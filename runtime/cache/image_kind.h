// What a kernel cache entry (kernel_cache_entry.h) holds.
#pragma once

namespace shoal::cache {

// CUBIN: NVRTC's machine code for one real GPU architecture; PTX: NVRTC's
// code for a virtual one (compiled by the driver when loaded); NativeObject:
// a shared object the system C++ compiler built for this CPU (the CPU
// executor's native tier, runtime/native/native_compiler.h).
enum class ImageKind : unsigned char { Cubin = 1, Ptx = 2, NativeObject = 3 };
const char* image_kind_name(ImageKind kind);  // "cubin", "ptx", "shared object"

}  // namespace shoal::cache
