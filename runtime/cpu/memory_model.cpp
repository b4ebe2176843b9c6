#include "runtime/cpu/memory_model.h"

#include <algorithm>

namespace shoal::cpu {

namespace {

constexpr int kWarp = 32;
constexpr int kBanks = 32;

// Calls f(lanes, n) for each warp's active lanes (ascending) of m.
template <class F>
void for_each_warp(const Mask& m, F&& f) {
    int lanes[kWarp];
    int n = 0, warp = -1;
    for_lanes(m, [&](int i) {
        if ((i >> 5) != warp) {
            if (n) f(lanes, n);
            n = 0;
            warp = i >> 5;
        }
        lanes[n++] = i;
    });
    if (n) f(lanes, n);
}

// Wavefronts beyond the first for one access touching words w[0..n).
int wavefront_conflicts(uint64_t* w, int n) {
    if (n == 0) return 0;
    std::sort(w, w + n);
    uint8_t per_bank[kBanks] = {};
    int worst = 0;
    for (int k = 0; k < n; ++k) {
        if (k > 0 && w[k] == w[k - 1]) continue;  // same word: broadcast
        worst = std::max(worst, int(++per_bank[w[k] % kBanks]));
    }
    return worst - 1;
}

}  // namespace

int count_distinct(uint64_t* v, int n) {
    if (n == 0) return 0;
    if (!std::is_sorted(v, v + n)) std::sort(v, v + n);
    int distinct = 1;
    for (int k = 1; k < n; ++k) distinct += v[k] != v[k - 1];
    return distinct;
}

// The sectors the whole span touches, plus one per warp boundary inside it
// that falls within a sector (that sector is touched by both warps). All
// boundaries are alike: they are whole warps apart, a multiple of 32 bytes.
int64_t contiguous_sectors(int64_t first, int lo, int hi, size_t elem_size) {
    if (hi <= lo) return 0;
    const auto size = int64_t(elem_size);
    const int64_t begin = first * size, end = (first + (hi - lo)) * size;  // bytes, end exclusive
    const int64_t spanned = (end - 1) / 32 - begin / 32 + 1;
    const int64_t boundaries = (hi - 1) / kWarp - lo / kWarp;
    const bool inside_sector = ((first - lo) * size) % 32 != 0;
    return spanned + (inside_sector ? boundaries : 0);
}

int64_t scattered_sectors(const int64_t* index, const Mask& m, size_t elem_size) {
    int64_t total = 0;
    for_each_warp(m, [&](const int* lanes, int n) {
        uint64_t sectors[kWarp];
        for (int k = 0; k < n; ++k) sectors[k] = uint64_t(index[lanes[k]]) * elem_size / 32;
        total += count_distinct(sectors, n);
    });
    return total;
}

int64_t bank_conflicts(const int32_t* index, const Mask& m, size_t elem_size) {
    int64_t total = 0;
    for_each_warp(m, [&](const int* lanes, int n) {
        uint64_t words[2 * kWarp];
        if (elem_size <= 4) {
            for (int k = 0; k < n; ++k) words[k] = uint64_t(index[lanes[k]]) * elem_size / 4;
            total += wavefront_conflicts(words, n);
            return;
        }
        // 8-byte elements: each half-warp is its own access of two words per lane.
        for (int half = 0; half < 2; ++half) {
            int nw = 0;
            for (int k = 0; k < n; ++k) {
                if (((lanes[k] >> 4) & 1) != half) continue;
                const uint64_t w = uint64_t(index[lanes[k]]) * 2;
                words[nw++] = w;
                words[nw++] = w + 1;
            }
            total += wavefront_conflicts(words, nw);
        }
    });
    return total;
}

}  // namespace shoal::cpu
