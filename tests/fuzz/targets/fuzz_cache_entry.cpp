// libFuzzer target: the kernel cache's entry decoder. Any bytes are rejected
// with a reason or decoded; a decoded entry encodes back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "runtime/cache/kernel_cache_entry.h"

using namespace shoal;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    cache::Sha256Digest key{};
    for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i);  // the seeds' key
    for (cache::ImageKind kind : {cache::ImageKind::Cubin, cache::ImageKind::Ptx, cache::ImageKind::NativeObject}) {
        std::string problem;
        const auto kernel = cache::decode_entry(bytes, key, kind, &problem);
        if (!kernel && problem.empty()) fuzz::finding("cache entry", "rejected without a reason");
        if (kernel && cache::encode_entry(key, *kernel) != bytes)
            fuzz::finding("cache entry", "a decoded entry does not encode back to its bytes");
    }
    return 0;
}
