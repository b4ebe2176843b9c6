#include "runtime/cache/sha256.h"

#include <openssl/evp.h>

#include "lang/diagnostics.h"

namespace shoal::cache {

// libcrypto fails here only without memory or with a broken installation.
#define SHOAL_EVP_CHECK(call) SHOAL_INTERNAL_ASSERT((call) == 1, "OpenSSL: " #call " failed")

Sha256::Sha256() : context_(EVP_MD_CTX_new()) {
    SHOAL_INTERNAL_ASSERT(context_ != nullptr, "OpenSSL: EVP_MD_CTX_new failed");
    SHOAL_EVP_CHECK(EVP_DigestInit_ex(context_, EVP_sha256(), nullptr));
}

Sha256::~Sha256() { EVP_MD_CTX_free(context_); }

Sha256& Sha256::bytes(std::string_view data) {
    SHOAL_EVP_CHECK(EVP_DigestUpdate(context_, data.data(), data.size()));
    return *this;
}

Sha256& Sha256::u64(uint64_t value) {
    char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<char>(value >> (8 * i));
    return bytes(std::string_view(le, 8));
}

Sha256Digest Sha256::finish() {
    Sha256Digest digest{};
    unsigned int size = 0;
    SHOAL_EVP_CHECK(EVP_DigestFinal_ex(context_, digest.data(), &size));
    SHOAL_INTERNAL_ASSERT(size == digest.size(), "OpenSSL: SHA-256 digest of unexpected size");
    return digest;
}

Sha256Digest sha256(std::string_view data) { return Sha256().bytes(data).finish(); }

std::string to_hex(const Sha256Digest& digest) {
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned char b : digest) {
        out += hex[b >> 4];
        out += hex[b & 15];
    }
    return out;
}

}  // namespace shoal::cache
