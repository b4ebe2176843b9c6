// Lane masks: which threads of a block are active at a point of the program.
// A mask is either a contiguous range of lanes (the common case: all lanes,
// or a prefix/suffix after `if (i < n)`), or a sorted list of lane indices.
// Vector nodes loop over a mask with for_lanes, so each node has two tight
// loops (range and list) and no per-lane test of activity.
#pragma once
#include <cstdint>

// A lane loop function worth vectorising wider than baseline x86-64 (SSE2):
// compiled a second time for AVX2, and the dynamic loader picks the version
// the CPU runs (GNU ifunc, hence glibc; GCC only: clang clones no templates).
// Elsewhere one baseline version.
#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__)
#define SHOAL_LANE_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define SHOAL_LANE_LOOP
#endif

namespace shoal::cpu {

struct Mask {
    int lo = 0, hi = 0;              // range [lo, hi) when idx is null
    const uint16_t* idx = nullptr;   // else idx[0..count) ascending
    int count = 0;                   // active lanes (hi - lo for a range)

    static Mask range(int lo, int hi) { return Mask{lo, hi, nullptr, hi > lo ? hi - lo : 0}; }
    bool empty() const { return count == 0; }
    bool is_range() const { return idx == nullptr; }
    int first() const { return idx ? idx[0] : lo; }
    int last() const { return idx ? idx[count - 1] : hi - 1; }
};

// The bounds are copied to locals first: f usually stores through a byte
// pointer, which may alias the Mask and would force a reload per lane (and
// block vectorisation).
template <class F>
inline void for_lanes(const Mask& m, F&& f) {
    if (m.idx == nullptr) {
        const int lo = m.lo, hi = m.hi;
        for (int i = lo; i < hi; ++i) f(i);
    } else {
        const uint16_t* idx = m.idx;
        const int n = m.count;
        for (int k = 0; k < n; ++k) f(int(idx[k]));
    }
}

// Number of lanes of m where c is true (c holds 0/1).
inline int count_true(const Mask& m, const uint8_t* c) {
    int n = 0;
    for_lanes(m, [&](int i) { n += c[i]; });
    return n;
}

// A list mask over buf[0..n) of ascending lanes, turned back into a range
// when the lanes are contiguous (so later nodes run their range loop).
inline Mask list_mask(const uint16_t* buf, int n) {
    if (n == 0) return Mask{};
    if (buf[n - 1] - buf[0] + 1 == n) return Mask::range(buf[0], buf[n - 1] + 1);
    return Mask{0, 0, buf, n};
}

// Splits m by a Bool lane vector: lanes with c true go to `yes`, the others
// to `no`. When all lanes agree the parent mask is returned unchanged (no
// copy). yes_buf/no_buf hold block_size entries; no_buf may be null when the
// caller does not need `no` (loops). yes_buf may be m's own list (a loop
// narrowing its mask in place: lanes are only ever written behind the read).
inline void split_mask(const Mask& m, const uint8_t* c, uint16_t* yes_buf, uint16_t* no_buf, Mask& yes,
                       Mask* no) {
    // Uniform conditions are the common case (a tail guard `i < n` true for
    // every lane of all but the last block): a counting pass, no lists.
    const int t = count_true(m, c);
    if (t == m.count || t == 0) {
        yes = t ? m : Mask{};
        if (no) *no = t ? Mask{} : m;
        return;
    }
    int ny = 0, nn = 0;
    if (no_buf) {
        for_lanes(m, [&](int i) {
            // Branch-free partition: write to both lists, advance one.
            yes_buf[ny] = uint16_t(i);
            no_buf[nn] = uint16_t(i);
            ny += c[i];
            nn += 1 - c[i];
        });
    } else {
        for_lanes(m, [&](int i) {
            yes_buf[ny] = uint16_t(i);
            ny += c[i];
        });
    }
    yes = list_mask(yes_buf, ny);
    if (no) *no = list_mask(no_buf, nn);
}

}  // namespace shoal::cpu
