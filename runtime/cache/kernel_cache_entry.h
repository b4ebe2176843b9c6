// The bytes of one kernel cache entry (kernel_cache.h), all integers
// little-endian:
//   0  magic "SHOALKC" 0x1a          8 bytes
//   8  format version                u32 (kEntryFormatVersion)
//  12  image kind                    u32 (image_kind.h: 1 cubin, 2 ptx, 3 shared object)
//  16  the entry's key               32 bytes (SHA-256, kernel_cache_key)
//  48  image length                  u64
//  56  log length                    u64
//  64  checksum                      32 bytes: SHA-256 of bytes 0-63, the image and the log
//  96  the image, then NVRTC's log (its ptxas report, shown again on a hit)
// An entry is trusted only when every field checks out: a file that is
// truncated, padded, from another program, of another format version, for
// another key or kind, or with any byte flipped is rejected with the reason.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "runtime/cache/image_kind.h"
#include "runtime/cache/sha256.h"

namespace shoal::cache {

inline constexpr uint32_t kEntryFormatVersion = 1;
inline constexpr size_t kEntryHeaderBytes = 96;

// What the cache holds for one kernel.
struct CachedKernel {
    ImageKind kind = ImageKind::Cubin;
    std::string image;
    std::string log;  // NVRTC's log when it compiled the image
};

std::string encode_entry(const Sha256Digest& key, const CachedKernel& kernel);

// The kernel in `bytes` when it is a valid entry for `key` of `kind`;
// otherwise nothing, and *problem says what is wrong ("checksum mismatch").
std::optional<CachedKernel> decode_entry(std::string_view bytes, const Sha256Digest& key, ImageKind kind,
                                         std::string* problem);

}  // namespace shoal::cache
