#include "random.h"

namespace shoal {

namespace {

// Random123's Philox-4x32 constants (Salmon et al., SC'11).
constexpr uint32_t kMul0 = 0xD2511F53;
constexpr uint32_t kMul1 = 0xCD9E8D57;
constexpr uint32_t kWeyl0 = 0x9E3779B9;  // golden ratio
constexpr uint32_t kWeyl1 = 0xBB67AE85;  // sqrt(3) - 1
constexpr int kRounds = 10;

void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
    uint64_t p = static_cast<uint64_t>(a) * b;
    hi = static_cast<uint32_t>(p >> 32);
    lo = static_cast<uint32_t>(p);
}

void philox_round(uint32_t c[4], const uint32_t k[2]) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c[0], hi0, lo0);
    mulhilo(kMul1, c[2], hi1, lo1);
    uint32_t next[4] = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    for (int w = 0; w < 4; ++w) c[w] = next[w];
}

}  // namespace

void philox4x32_10(uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c[4] = {counter[0], counter[1], counter[2], counter[3]};
    uint32_t k[2] = {key[0], key[1]};
    for (int r = 0; r < kRounds; ++r) {
        if (r > 0) {  // the key schedule bumps the key before every round but the first
            k[0] += kWeyl0;
            k[1] += kWeyl1;
        }
        philox_round(c, k);
    }
    for (int w = 0; w < 4; ++w) out[w] = c[w];
}

float random_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
    uint32_t counter[4] = {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                           static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)};
    const uint32_t key[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
    uint32_t out[4];
    philox4x32_10(counter, key, out);
    // 24 bits fill a float's mantissa exactly, so the result is < 1 and exact.
    return static_cast<float>(out[0] >> 8) * 0x1p-24f;
}

}  // namespace shoal
