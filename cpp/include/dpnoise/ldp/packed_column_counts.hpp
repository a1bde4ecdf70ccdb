// dpnoise/ldp/packed_column_counts.hpp -- how many rows have each bit set, over a matrix of
// bit-packed rows (n rows of W uint64 words; bit b of word j is column 64 j + b), without
// unpacking a bit per row.
//
// Sixteen rows at a time are reduced column-wise by a tree of carry-save adders (Harley &
// Seal's popcount, used position-wise as in Muła, Kurz & Lemire, "Faster Population Counts
// Using AVX2 Instructions", 2018, and Klarqvist, Muła & Lemire, "Efficient computation of
// positional population counts using SIMD instructions", 2021): bit b of the words ones, twos,
// fours, eights holds that column's count modulo 16 in binary, and each group of 16 rows
// carries one "sixteens" word into bit-sliced vertical counters (bit s of column b's count of
// sixteens in slice s). The slices are added to the int64 counts every 63 groups (before they
// can overflow) and at the end. Every step is a word operation over W words in a row, which
// the compiler vectorises; cost about 6 word operations per word of input.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dpnoise/parallel.hpp"

namespace dpnoise::ldp {

class PackedColumnCounter {
public:
    static constexpr unsigned kSlices = 6;                          // sixteens counted to 63
    static constexpr unsigned kGroupsPerFlush = (1u << kSlices) - 1;

    explicit PackedColumnCounter(size_t words) : W_(words), state_((4 + kSlices) * words, 0) {}

    // counts[64 j + b] += #{rows r in [0, n) : bit b of rows[r W + j]}
    void add(const uint64_t* rows, size_t n, int64_t* counts) {
        size_t r = 0;
        for (; r + 16 <= n; r += 16) {
            add16(rows + r * W_);
            if (++groups_ == kGroupsPerFlush) flush(counts, false);
        }
        flush(counts, true);
        for (; r < n; ++r)  // fewer than 16 rows: set bit by set bit
            for (size_t j = 0; j < W_; ++j)
                for (uint64_t w = rows[r * W_ + j]; w; w &= w - 1) ++counts[64 * j + static_cast<unsigned>(__builtin_ctzll(w))];
    }

private:
    size_t W_;
    unsigned groups_ = 0;
    std::vector<uint64_t> state_;  // ones, twos, fours, eights, slice 0..kSlices-1 (W words each)

    static inline void csa(uint64_t& h, uint64_t& l, uint64_t a, uint64_t b, uint64_t c) {
        const uint64_t u = a ^ b;
        h = (a & b) | (u & c);
        l = u ^ c;
    }
    // Rows x[0], x[W], x[2W], x[3W] added into ones o and twos t: returns the fours carry.
    static inline uint64_t add4(uint64_t& o, uint64_t& t, const uint64_t* x, size_t W) {
        uint64_t tA, tB, fours;
        csa(tA, o, o, x[0], x[W]);
        csa(tB, o, o, x[2 * W], x[3 * W]);
        csa(fours, t, t, tA, tB);
        return fours;
    }
    // Rows x[0], ..., x[7W] added into o, t and fours f (two add4): returns the eights carry.
    static inline uint64_t add8(uint64_t& o, uint64_t& t, uint64_t& f, const uint64_t* x, size_t W) {
        const uint64_t fA = add4(o, t, x, W);
        const uint64_t fB = add4(o, t, x + 4 * W, W);
        uint64_t eights;
        csa(eights, f, f, fA, fB);
        return eights;
    }

    void add16(const uint64_t* block) {
        const size_t W = W_;
        uint64_t* __restrict ones = state_.data();
        uint64_t* __restrict twos = ones + W;
        uint64_t* __restrict fours = twos + W;
        uint64_t* __restrict eights = fours + W;
        uint64_t* __restrict slices = eights + W;
        for (size_t j = 0; j < W; ++j) {
            const uint64_t* x = block + j;
            uint64_t o = ones[j], t = twos[j], f = fours[j], e = eights[j];
            const uint64_t eA = add8(o, t, f, x, W);
            const uint64_t eB = add8(o, t, f, x + 8 * W, W);
            uint64_t sixteens;
            csa(sixteens, e, e, eA, eB);
            ones[j] = o; twos[j] = t; fours[j] = f; eights[j] = e;
            uint64_t carry = sixteens;  // ripple into the vertical counter (at most 63: no overflow)
            for (unsigned s = 0; s < kSlices; ++s) {
                uint64_t& v = slices[s * W + j];
                const uint64_t c = v & carry;
                v ^= carry;
                carry = c;
            }
        }
    }

    // add the vertical counters (and, at the end, the partial counts) to counts and clear them
    void flush(int64_t* counts, bool all) {
        const size_t W = W_;
        uint64_t* slices = state_.data() + 4 * W;
        for (size_t j = 0; j < W; ++j) {
            int64_t* c = counts + 64 * j;
            for (unsigned s = 0; s < kSlices; ++s) {
                uint64_t& v = slices[s * W + j];
                for (uint64_t w = v; w; w &= w - 1) c[__builtin_ctzll(w)] += int64_t{16} << s;
                v = 0;
            }
            if (all) {
                for (unsigned k = 0; k < 4; ++k) {
                    uint64_t& v = state_[k * W + j];
                    for (uint64_t w = v; w; w &= w - 1) c[__builtin_ctzll(w)] += int64_t{1} << k;
                    v = 0;
                }
            }
        }
        groups_ = 0;
    }
};

// counts[64 j + b] += the rows with bit b of word j set, over n rows of W words; rows split
// into up to `threads` contiguous ranges, each with its own counter and counts (memory
// O(threads W)), summed at the end (integer sums: the result does not depend on threads).
inline void add_packed_column_counts(const uint64_t* rows, size_t n, size_t W, int64_t* counts, unsigned threads) {
    const size_t min_rows = 4096;
    const size_t ntasks = std::max<size_t>(1, std::min<size_t>(threads, n / min_rows));
    if (ntasks == 1) {
        PackedColumnCounter(W).add(rows, n, counts);
        return;
    }
    std::vector<std::vector<int64_t>> partial(ntasks, std::vector<int64_t>(64 * W, 0));
    const size_t per = (n + ntasks - 1) / ntasks;
    parallel_tasks(ntasks, threads, [&](size_t t) {
        const size_t begin = std::min(n, t * per), end = std::min(n, begin + per);
        PackedColumnCounter(W).add(rows + begin * W, end - begin, partial[t].data());
    });
    for (const auto& p : partial)
        for (size_t i = 0; i < 64 * W; ++i) counts[i] += p[i];
}

// true when no row has a bit set at a column >= d (the padding of the last word)
inline bool packed_padding_clear(const uint64_t* rows, size_t n, size_t W, uint64_t d) {
    if (d % 64 == 0) return true;
    const uint64_t pad = ~((uint64_t{1} << (d % 64)) - 1);
    uint64_t any = 0;
    for (size_t r = 0; r < n; ++r) any |= rows[r * W + W - 1] & pad;
    return any == 0;
}

}  // namespace dpnoise::ldp
