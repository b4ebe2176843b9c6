// Counter-based random numbers: a pure function of (seed, stream, index), so
// the CPU and every GPU backend produce the same numbers in any order.
// Philox-4x32-10 keyed by the seed, counter = (index, stream).
#pragma once
#include <cstdint>

namespace shoal {

// Four 32-bit random words for one counter value.
void philox4x32_10(uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

// A float uniform in [0, 1) for element `index` of random stream `stream`:
// the top 24 bits of word 0 of philox(counter = {index lo, index hi, stream lo, stream hi}, key = seed) times 2^-24.
float random_uniform(uint64_t seed, uint64_t stream, uint64_t index);

}  // namespace shoal
