// The memory-traffic model of the counters (the coalescing and bank-conflict
// rules of NVIDIA GPUs), computed per warp access:
// - global: the number of distinct 32-byte sectors touched by the active
//   lanes of a warp, addresses taken relative to the buffer's start (device
//   allocations are 256-byte aligned, so this is what a GPU would see);
// - shared: 32 banks of 4-byte words; an access needs as many wavefronts as
//   the largest number of distinct words falling into one bank (lanes reading
//   one word share it: a broadcast); the conflicts are the wavefronts beyond
//   the first. 8-byte accesses are served per half-warp (each lane touching two
//   consecutive words), as the hardware does, so stride-1 doubles conflict-free.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "runtime/cpu/lanes.h"

namespace shoal::cpu {

// Number of distinct values in v[0..n) (n <= 64); reorders v.
int count_distinct(uint64_t* v, int n);

// Sectors touched by a warp access whose lanes read elements first.. of
// `elem_size` bytes contiguously, lanes [lo, hi) of the block.
int64_t contiguous_sectors(int64_t first, int lo, int hi, size_t elem_size);
// Sectors touched by the lanes of m reading index[i] (element indices).
int64_t scattered_sectors(const int64_t* index, const Mask& m, size_t elem_size);

// Bank conflicts of the lanes of m accessing shared elements index[i].
int64_t bank_conflicts(const int32_t* index, const Mask& m, size_t elem_size);

// Whether index[lo..hi) is first, first+1, ... (the coalesced fast path).
template <class I>
inline bool is_consecutive(const I* index, int lo, int hi) {
    using U = std::make_unsigned_t<I>;
    const U first = U(index[lo]) - U(lo);
    U diff = 0;
    // No early exit and no compare: subtract and OR, which vectorises even
    // where the ISA has no 64-bit vector compare (SSE2).
    for (int i = lo; i < hi; ++i) diff |= U(index[i]) - (first + U(i));
    return diff == 0;
}

}  // namespace shoal::cpu
