// SHA-256 (OpenSSL's libcrypto) for the kernel cache: its keys and the
// checksums of its entries.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of this header

namespace shoal::cache {

using Sha256Digest = std::array<unsigned char, 32>;

class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    Sha256& bytes(std::string_view data);
    Sha256& u64(uint64_t value);  // 8 bytes, little-endian
    // The length (u64) then the bytes: a sequence of fields hashes
    // differently from any other sequence with the same concatenation.
    Sha256& field(std::string_view data) { return u64(data.size()).bytes(data); }
    Sha256Digest finish();  // once

private:
    evp_md_ctx_st* context_;
};

Sha256Digest sha256(std::string_view data);
std::string to_hex(const Sha256Digest& digest);

}  // namespace shoal::cache
