#include "runtime/cache/kernel_cache_entry.h"

#include <cstring>

namespace shoal::cache {

const char* image_kind_name(ImageKind kind) {
    switch (kind) {
        case ImageKind::Cubin: return "cubin";
        case ImageKind::Ptx: return "ptx";
        case ImageKind::NativeObject: return "shared object";
    }
    return "?";
}

namespace {

constexpr char kMagic[8] = {'S', 'H', 'O', 'A', 'L', 'K', 'C', 0x1a};
constexpr size_t kChecksumOffset = 64;

void put(std::string& out, uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out += static_cast<char>(value >> (8 * i));
}

uint64_t get(std::string_view in, size_t offset, int bytes) {
    uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value |= uint64_t(static_cast<unsigned char>(in[offset + i])) << (8 * i);
    return value;
}

Sha256Digest checksum(std::string_view head, std::string_view image, std::string_view log) {
    return Sha256().bytes(head.substr(0, kChecksumOffset)).bytes(image).bytes(log).finish();
}

std::optional<CachedKernel> reject(std::string* problem, std::string why) {
    if (problem) *problem = std::move(why);
    return std::nullopt;
}

}  // namespace

std::string encode_entry(const Sha256Digest& key, const CachedKernel& kernel) {
    std::string out(kMagic, sizeof kMagic);
    put(out, kEntryFormatVersion, 4);
    put(out, static_cast<uint32_t>(kernel.kind), 4);
    out.append(reinterpret_cast<const char*>(key.data()), key.size());
    put(out, kernel.image.size(), 8);
    put(out, kernel.log.size(), 8);
    const Sha256Digest sum = checksum(out, kernel.image, kernel.log);
    out.append(reinterpret_cast<const char*>(sum.data()), sum.size());
    out += kernel.image;
    out += kernel.log;
    return out;
}

std::optional<CachedKernel> decode_entry(std::string_view bytes, const Sha256Digest& key, ImageKind kind,
                                         std::string* problem) {
    if (bytes.size() < kEntryHeaderBytes)
        return reject(problem, "truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the header");
    if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        return reject(problem, "not a Shoal kernel cache entry (wrong magic number)");
    if (uint64_t version = get(bytes, 8, 4); version != kEntryFormatVersion)
        return reject(problem, "format version " + std::to_string(version) + ", expected " +
                                   std::to_string(kEntryFormatVersion));
    const uint64_t image_size = get(bytes, 48, 8), log_size = get(bytes, 56, 8);
    const uint64_t room = bytes.size() - kEntryHeaderBytes;
    if (image_size > room || log_size != room - image_size)
        return reject(problem, "truncated or padded: " + std::to_string(bytes.size()) + " bytes, the header says " +
                                   std::to_string(kEntryHeaderBytes) + " + " + std::to_string(image_size) + " + " +
                                   std::to_string(log_size));
    const std::string_view image = bytes.substr(kEntryHeaderBytes, image_size);
    const std::string_view log = bytes.substr(kEntryHeaderBytes + image_size);
    const Sha256Digest sum = checksum(bytes, image, log);
    if (std::memcmp(bytes.data() + kChecksumOffset, sum.data(), sum.size()) != 0)
        return reject(problem, "checksum mismatch (corrupt)");
    if (std::memcmp(bytes.data() + 16, key.data(), key.size()) != 0) return reject(problem, "an entry for another key");
    if (get(bytes, 12, 4) != static_cast<uint32_t>(kind))
        return reject(problem, std::string("not a ") + image_kind_name(kind) + " image");
    return CachedKernel{kind, std::string(image), std::string(log)};
}

}  // namespace shoal::cache
