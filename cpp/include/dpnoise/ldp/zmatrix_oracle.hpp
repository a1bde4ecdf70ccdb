// dpnoise/ldp/zmatrix_oracle.hpp -- the frequency oracle over a public random matrix
// Z ∈ {−1,+1}^{d×W} (ldp/public_matrix.hpp): the client's randomizer, the aggregator's packed
// column state and the server's sweep over Z. Derivations: docs/ldp_zmatrix.md.
//
// Client (Bassily & Smith 2015, "Local, Private, Efficient Protocols for Succinct Histograms",
// STOC, the basic randomizer over a random ±1 matrix; binary randomized response, Warner 1965):
// a user with item x and public column c sends y = Z[x, c] with probability e^γ/(e^γ + 1), else
// −Z[x, c]. Exact: exact::RandomizedResponseKernel with k = 2, drawn from the secret stream
// family chunk by chunk (random::sample_into, chunk c from stream c).
//
// Aggregator state: per column c of Z the sum s_c of the reports y on it, in sign-magnitude bit
// planes: sign bit σ_c (word c/64 of `sign`) and |s_c| = Σ_b 2^b M_b[c] (plane b of `magnitude`),
// |s_c| ≤ 2^planes − 1. Reports on distinct columns use plane 0 only; a column used by several
// reports holds their sum, which is all the estimator needs (Σ_i y_i Z[x, c_i] = Σ_c s_c Z[x, c]).
//
// Server: S(x) = Σ_c s_c Z[x, c]. With t = σ ⊕ z (z the bits of Z's row, 1 for −1),
// s_c Z[x, c] = |s_c| (1 − 2 t_c), so over a 64-column word
//   Σ s_c Z[x, c] = Σ_b 2^b (popcount(M_b) − 2 popcount(M_b & (σ ⊕ z))),
// the first term a constant per block of words. O(d · W/64) word operations, O(W/8 · planes)
// state; the estimate is f̂(x) = (e^γ + 1)/(e^γ − 1) · S(x) (the caller scales).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/ldp/public_matrix.hpp"
#include "dpnoise/parallel.hpp"
#include "dpnoise/random/stream_fill.hpp"
#include "dpnoise/simd.hpp"  // DPNOISE_X86_SIMD: the popcnt and AVX-512 sweeps

namespace dpnoise::ldp {

// ----------------------------------------------------------------------------- the client
struct ZMatrixRandomizer {
    static constexpr size_t kOutputsPerStream = size_t{1} << 16;  // reproducibility unit
    // Below this many rows (or 4 per report) the client tabulates every row seed first.
    static constexpr uint64_t kSeedTableRows = uint64_t{1} << 16;
};

// The bits of Z[items[i], columns[i]] (1 for −1), from a table of all d row seeds
// (use_table) or one ChaCha20 block per report: two code paths for the same entries.
inline void zmatrix_entry_bits(const PublicSignMatrix& Z, uint64_t domain, const int64_t* items,
                               const uint64_t* columns, uint8_t* out, size_t n, bool use_table) {
    if (use_table) {
        std::vector<uint64_t> seeds(static_cast<size_t>(domain));
        Z.row_seeds(0, seeds.data(), seeds.size());
        for (size_t i = 0; i < n; ++i)
            out[i] = static_cast<uint8_t>(PublicSignMatrix::bit(seeds[static_cast<size_t>(items[i])], columns[i]));
    } else {
        for (size_t i = 0; i < n; ++i)
            out[i] = static_cast<uint8_t>(PublicSignMatrix::bit(Z.row_seed(static_cast<uint64_t>(items[i])), columns[i]));
    }
}

// out[i] = ±Z[items[i], columns[i]]: kept with probability e^γ/(e^γ + 1) (kernel.k == 2).
// The caller checks items in [0, domain). Public entries first (no randomness), then one exact
// keep decision per report from the secret family.
template <class Family>
void zmatrix_privatize(Family& family, const exact::RandomizedResponseKernel& kernel, const PublicSignMatrix& Z,
                       uint64_t domain, const int64_t* items, const uint64_t* columns, int8_t* out, size_t n,
                       unsigned threads) {
    if (kernel.k != 2) throw std::invalid_argument("the zmatrix randomizer is binary randomized response (k = 2)");
    std::vector<uint8_t> zbits(n);
    const bool table = domain <= std::max<uint64_t>(ZMatrixRandomizer::kSeedTableRows, 4 * static_cast<uint64_t>(n));
    zmatrix_entry_bits(Z, domain, items, columns, zbits.data(), n, table);
    const uint8_t* zp = zbits.data();
    random::sample_into<ZMatrixRandomizer::kOutputsPerStream>(family, out, n, threads, [&kernel, zp](auto& bits, size_t i) {
        const int8_t z = static_cast<int8_t>(1 - 2 * static_cast<int>(zp[i]));
        return kernel.keep(bits) ? z : static_cast<int8_t>(-z);
    });
}

// ------------------------------------------------------------------- the packed column sums
// A view of the aggregator's arrays: sign[nwords], magnitude[planes * nwords] (plane-major).
struct ColumnSums {
    uint64_t* sign;
    uint64_t* magnitude;
    unsigned planes;
    size_t nwords;

    int64_t max_abs() const { return (int64_t{1} << planes) - 1; }

    int64_t get(uint64_t c) const {
        const size_t w = static_cast<size_t>(c / 64);
        const unsigned j = static_cast<unsigned>(c % 64);
        int64_t m = 0;
        for (unsigned b = 0; b < planes; ++b) m |= static_cast<int64_t>((magnitude[b * nwords + w] >> j) & 1u) << b;
        return ((sign[w] >> j) & 1u) ? -m : m;
    }

    // Zero is stored with sign 0, so equal sums give equal bytes.
    void set(uint64_t c, int64_t v) {
        const size_t w = static_cast<size_t>(c / 64);
        const uint64_t bit = uint64_t{1} << (c % 64);
        const uint64_t m = static_cast<uint64_t>(v < 0 ? -v : v);
        sign[w] = v < 0 ? (sign[w] | bit) : (sign[w] & ~bit);
        for (unsigned b = 0; b < planes; ++b) {
            uint64_t& word = magnitude[b * nwords + w];
            word = ((m >> b) & 1u) ? (word | bit) : (word & ~bit);
        }
    }

    void add(uint64_t c, int64_t delta) {
        const int64_t v = get(c) + delta;
        if (v > max_abs() || v < -max_abs())
            throw std::overflow_error("a column's sum of reports would exceed 2^planes - 1 in magnitude; use more "
                                      "'planes' (or fewer reports per column)");
        set(c, v);
    }
};

// Adds reports (column, y ∈ {−1, +1}) to the sums. Throws (the state half-updated: callers work
// on a copy) for a column outside [0, 64 nwords) or a sum beyond the planes.
inline void zmatrix_accumulate(ColumnSums s, const uint64_t* columns, const int8_t* y, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        if (columns[i] >= 64 * static_cast<uint64_t>(s.nwords)) throw std::invalid_argument("columns must be in [0, columns)");
        if (y[i] != 1 && y[i] != -1) throw std::invalid_argument("report values y must be -1 or +1");
        s.add(columns[i], y[i]);
    }
}

// s += other (same shape). Throws like zmatrix_accumulate (callers work on a copy).
inline void zmatrix_merge(ColumnSums s, const ColumnSums& other) {
    if (s.planes != other.planes || s.nwords != other.nwords) throw std::invalid_argument("column sums of different shapes");
    for (size_t w = 0; w < s.nwords; ++w) {
        uint64_t any = 0;
        for (unsigned b = 0; b < other.planes; ++b) any |= other.magnitude[b * other.nwords + w];
        while (any) {
            const uint64_t c = 64 * static_cast<uint64_t>(w) + static_cast<uint64_t>(__builtin_ctzll(any));
            any &= any - 1;
            s.add(c, other.get(c));
        }
    }
}

// ------------------------------------------------------------------------------- the sweep
struct ZMatrixSweep {
    static constexpr size_t kBlockWords = 2048;  // sign + plane 0: 32 KiB, an L1 data cache
    static constexpr size_t kRowsPerTask = 512;
};

namespace detail {

template <unsigned P>
[[gnu::always_inline]] inline uint64_t zmatrix_row_block_planes(const uint64_t* sign, const uint64_t* magnitude,
                                                                size_t nwords, size_t w0, size_t w1, uint64_t ctr) {
    uint64_t acc[P] = {};
    for (size_t w = w0; w < w1; ++w, ctr += random::PublicSplitMix::kGamma) {
        const uint64_t t = sign[w] ^ random::PublicSplitMix::mix(ctr);
        for (unsigned b = 0; b < P; ++b) acc[b] += static_cast<uint64_t>(__builtin_popcountll(magnitude[b * nwords + w] & t));
    }
    uint64_t total = 0;
    for (unsigned b = 0; b < P; ++b) total += acc[b] << b;
    return total;
}

// Σ_b 2^b popcount(M_b[w] & (σ[w] ⊕ z_w)) over words [w0, w1) of the row with seed `seed`.
[[gnu::always_inline]] inline uint64_t zmatrix_row_block(const uint64_t* sign, const uint64_t* magnitude, size_t nwords,
                                                         unsigned planes, size_t w0, size_t w1, uint64_t seed) {
    using random::PublicSplitMix;
    uint64_t ctr = seed + (static_cast<uint64_t>(w0) + 1) * PublicSplitMix::kGamma;
    uint64_t acc = 0;
    if (planes == 1) {
        // two accumulators: the popcounts of neighbouring words overlap
        uint64_t acc2 = 0;
        size_t w = w0;
        for (; w + 2 <= w1; w += 2) {
            const uint64_t z0 = PublicSplitMix::mix(ctr);
            const uint64_t z1 = PublicSplitMix::mix(ctr + PublicSplitMix::kGamma);
            ctr += 2 * PublicSplitMix::kGamma;
            acc += static_cast<uint64_t>(__builtin_popcountll(magnitude[w] & (sign[w] ^ z0)));
            acc2 += static_cast<uint64_t>(__builtin_popcountll(magnitude[w + 1] & (sign[w + 1] ^ z1)));
        }
        if (w < w1) acc += static_cast<uint64_t>(__builtin_popcountll(magnitude[w] & (sign[w] ^ PublicSplitMix::mix(ctr))));
        return acc + acc2;
    }
    switch (planes) {  // the common plane counts unrolled
        case 2: return zmatrix_row_block_planes<2>(sign, magnitude, nwords, w0, w1, ctr);
        case 3: return zmatrix_row_block_planes<3>(sign, magnitude, nwords, w0, w1, ctr);
        case 4: return zmatrix_row_block_planes<4>(sign, magnitude, nwords, w0, w1, ctr);
        default: break;
    }
    for (size_t w = w0; w < w1; ++w, ctr += PublicSplitMix::kGamma) {
        const uint64_t t = sign[w] ^ PublicSplitMix::mix(ctr);
        for (unsigned b = 0; b < planes; ++b)
            acc += static_cast<uint64_t>(__builtin_popcountll(magnitude[b * nwords + w] & t)) << b;
    }
    return acc;
}

struct SweepBlock {
    size_t w0, w1;
    unsigned planes;  // planes with a bit set in the block
    int64_t constant; // Σ_w Σ_b 2^b popcount(M_b[w])
};

[[gnu::always_inline]] inline void zmatrix_sweep_rows(const uint64_t* seeds, size_t nrows, const uint64_t* sign,
                                                      const uint64_t* magnitude, size_t nwords,
                                                      const std::vector<SweepBlock>& blocks, int64_t* sums) {
    for (size_t r = 0; r < nrows; ++r) sums[r] = 0;
    for (const SweepBlock& blk : blocks)
        for (size_t r = 0; r < nrows; ++r)
            sums[r] += blk.constant - 2 * static_cast<int64_t>(zmatrix_row_block(sign, magnitude, nwords, blk.planes,
                                                                                  blk.w0, blk.w1, seeds[r]));
}

#ifdef DPNOISE_X86_SIMD
__attribute__((target("popcnt"))) inline void zmatrix_sweep_rows_popcnt(
    const uint64_t* seeds, size_t nrows, const uint64_t* sign, const uint64_t* magnitude, size_t nwords,
    const std::vector<SweepBlock>& blocks, int64_t* sums) {
    zmatrix_sweep_rows(seeds, nrows, sign, magnitude, nwords, blocks, sums);
}
inline bool cpu_has_popcnt() {
    static const bool has = __builtin_cpu_supports("popcnt");
    return has;
}

// AVX-512 (F, BW, DQ): eight words at once; Mix13 with vpmullq, popcounts per byte by a nibble
// table (vpshufb), summed per 64-bit lane by vpsadbw every 31 steps (a byte counts at most
// 8 per step). The same sums as the scalar loop, exactly.
#define DPNOISE_ZMATRIX_AVX512_TARGET "avx512f,avx512bw,avx512dq,popcnt"
template <unsigned P>
__attribute__((target(DPNOISE_ZMATRIX_AVX512_TARGET))) inline uint64_t zmatrix_row_block_avx512(
    const uint64_t* sign, const uint64_t* magnitude, size_t nwords, size_t w0, size_t w1, uint64_t seed) {
    using random::PublicSplitMix;
    const __m512i step = _mm512_set1_epi64(static_cast<long long>(8 * PublicSplitMix::kGamma));
    const __m512i m1 = _mm512_set1_epi64(static_cast<long long>(0xbf58476d1ce4e5b9ULL));
    const __m512i m2 = _mm512_set1_epi64(static_cast<long long>(0x94d049bb133111ebULL));
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i lut = _mm512_set4_epi32(0x04030302, 0x03020201, 0x03020201, 0x02010100);
    const __m512i zero = _mm512_setzero_si512();
    alignas(64) uint64_t first[8];
    for (unsigned i = 0; i < 8; ++i) first[i] = seed + (static_cast<uint64_t>(w0) + 1 + i) * PublicSplitMix::kGamma;
    __m512i ctr = _mm512_load_si512(first);
    __m512i acc[P], cnt[P];
    for (unsigned b = 0; b < P; ++b) acc[b] = cnt[b] = zero;
    size_t w = w0;
    unsigned steps = 0;
    for (; w + 8 <= w1; w += 8) {
        __m512i x = _mm512_xor_si512(ctr, _mm512_srli_epi64(ctr, 30));
        x = _mm512_mullo_epi64(x, m1);
        x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 27));
        x = _mm512_mullo_epi64(x, m2);
        x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
        ctr = _mm512_add_epi64(ctr, step);
        const __m512i t = _mm512_xor_si512(_mm512_loadu_si512(sign + w), x);
        for (unsigned b = 0; b < P; ++b) {
            const __m512i v = _mm512_and_si512(_mm512_loadu_si512(magnitude + b * nwords + w), t);
            const __m512i lo = _mm512_and_si512(v, low4);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi64(v, 4), low4);
            cnt[b] = _mm512_add_epi8(cnt[b], _mm512_add_epi8(_mm512_shuffle_epi8(lut, lo), _mm512_shuffle_epi8(lut, hi)));
        }
        if (++steps == 31) {
            for (unsigned b = 0; b < P; ++b) {
                acc[b] = _mm512_add_epi64(acc[b], _mm512_sad_epu8(cnt[b], zero));
                cnt[b] = zero;
            }
            steps = 0;
        }
    }
    uint64_t total = 0;
    for (unsigned b = 0; b < P; ++b)
        total += static_cast<uint64_t>(_mm512_reduce_add_epi64(_mm512_add_epi64(acc[b], _mm512_sad_epu8(cnt[b], zero)))) << b;
    uint64_t c = seed + (static_cast<uint64_t>(w) + 1) * PublicSplitMix::kGamma;
    for (; w < w1; ++w, c += PublicSplitMix::kGamma) {
        const uint64_t t = sign[w] ^ PublicSplitMix::mix(c);
        for (unsigned b = 0; b < P; ++b)
            total += static_cast<uint64_t>(__builtin_popcountll(magnitude[b * nwords + w] & t)) << b;
    }
    return total;
}

__attribute__((target(DPNOISE_ZMATRIX_AVX512_TARGET))) inline void zmatrix_sweep_rows_avx512(
    const uint64_t* seeds, size_t nrows, const uint64_t* sign, const uint64_t* magnitude, size_t nwords,
    const std::vector<SweepBlock>& blocks, int64_t* sums) {
    for (size_t r = 0; r < nrows; ++r) sums[r] = 0;
    for (const SweepBlock& blk : blocks)
        for (size_t r = 0; r < nrows; ++r) {
            uint64_t s;
            switch (blk.planes) {
                case 1: s = zmatrix_row_block_avx512<1>(sign, magnitude, nwords, blk.w0, blk.w1, seeds[r]); break;
                case 2: s = zmatrix_row_block_avx512<2>(sign, magnitude, nwords, blk.w0, blk.w1, seeds[r]); break;
                case 3: s = zmatrix_row_block_avx512<3>(sign, magnitude, nwords, blk.w0, blk.w1, seeds[r]); break;
                case 4: s = zmatrix_row_block_avx512<4>(sign, magnitude, nwords, blk.w0, blk.w1, seeds[r]); break;
                default: s = zmatrix_row_block(sign, magnitude, nwords, blk.planes, blk.w0, blk.w1, seeds[r]);
            }
            sums[r] += blk.constant - 2 * static_cast<int64_t>(s);
        }
}

inline bool cpu_has_avx512_bw_dq() {
    static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("popcnt");
    return has;
}
#endif  // DPNOISE_X86_SIMD

inline void zmatrix_sweep_rows_dispatch(const uint64_t* seeds, size_t nrows, const uint64_t* sign,
                                        const uint64_t* magnitude, size_t nwords,
                                        const std::vector<SweepBlock>& blocks, int64_t* sums, bool allow_simd) {
#ifdef DPNOISE_X86_SIMD
    if (allow_simd && cpu_has_avx512_bw_dq())
        return zmatrix_sweep_rows_avx512(seeds, nrows, sign, magnitude, nwords, blocks, sums);
    if (cpu_has_popcnt()) return zmatrix_sweep_rows_popcnt(seeds, nrows, sign, magnitude, nwords, blocks, sums);
#endif
    (void)allow_simd;
    zmatrix_sweep_rows(seeds, nrows, sign, magnitude, nwords, blocks, sums);
}

}  // namespace detail

namespace detail {

// The blocks of kBlockWords words that hold a report, each with the planes it uses and its
// constant term; words past a block's last non-empty one are cut off.
inline std::vector<SweepBlock> zmatrix_sweep_blocks(const ColumnSums& s) {
    std::vector<SweepBlock> blocks;
    for (size_t w0 = 0; w0 < s.nwords; w0 += ZMatrixSweep::kBlockWords) {
        const size_t w1 = std::min(s.nwords, w0 + ZMatrixSweep::kBlockWords);
        SweepBlock blk{w0, w1, 0, 0};
        size_t last = w0;  // one past the last non-empty word of the block
        for (unsigned b = 0; b < s.planes; ++b)
            for (size_t w = w0; w < w1; ++w) {
                const uint64_t m = s.magnitude[b * s.nwords + w];
                if (m) {
                    blk.planes = b + 1;
                    blk.constant += static_cast<int64_t>(__builtin_popcountll(m)) << b;
                    last = std::max(last, w + 1);
                }
            }
        blk.w1 = last;
        if (blk.planes) blocks.push_back(blk);
    }
    return blocks;
}

// sums[r] for rows r in [0, nrows) in tasks of kRowsPerTask rows over `threads`;
// row_seeds(r0, seeds, n) writes the Z-row seeds of rows r0 .. r0 + n − 1.
template <class RowSeeds>
void zmatrix_sweep_tasks(const ColumnSums& s, uint64_t nrows, int64_t* sums, unsigned threads, bool allow_simd,
                         RowSeeds&& row_seeds) {
    const std::vector<SweepBlock> blocks = zmatrix_sweep_blocks(s);
    const size_t ntasks = static_cast<size_t>((nrows + ZMatrixSweep::kRowsPerTask - 1) / ZMatrixSweep::kRowsPerTask);
    parallel_tasks(ntasks, threads, [&](size_t task) {
        const uint64_t r0 = static_cast<uint64_t>(task) * ZMatrixSweep::kRowsPerTask;
        const size_t n = static_cast<size_t>(std::min<uint64_t>(ZMatrixSweep::kRowsPerTask, nrows - r0));
        uint64_t seeds[ZMatrixSweep::kRowsPerTask];
        row_seeds(r0, seeds, n);
        zmatrix_sweep_rows_dispatch(seeds, n, s.sign, s.magnitude, s.nwords, blocks, sums + static_cast<size_t>(r0),
                                    allow_simd);
    });
}

}  // namespace detail

// sums[x] = Σ_c s_c Z[x, c] for x in [0, domain). Words past the last non-empty one and blocks
// without a report are skipped; each block is swept with only the planes it uses. Rows are
// split over `threads` (the result does not depend on it).
inline void zmatrix_sweep(const PublicSignMatrix& Z, const ColumnSums& s, uint64_t domain, int64_t* sums,
                          unsigned threads, bool allow_simd = true) {
    detail::zmatrix_sweep_tasks(s, domain, sums, threads, allow_simd,
                                [&Z](uint64_t r0, uint64_t* seeds, size_t n) { Z.row_seeds(r0, seeds, n); });
}

// sums[i] = Σ_c s_c Z[items[i], c] for the given rows only (the caller checks items < d): one
// row seed (one ChaCha20 block) per item, then the same sweep: O(m W/64) word operations,
// independent of the domain, so d = 2^40 with a list of candidates works.
inline void zmatrix_sweep_items(const PublicSignMatrix& Z, const ColumnSums& s, const uint64_t* items, size_t m,
                                int64_t* sums, unsigned threads, bool allow_simd = true) {
    detail::zmatrix_sweep_tasks(s, m, sums, threads, allow_simd, [&Z, items](uint64_t r0, uint64_t* seeds, size_t n) {
        for (size_t r = 0; r < n; ++r) seeds[r] = Z.row_seed(items[static_cast<size_t>(r0) + r]);
    });
}

}  // namespace dpnoise::ldp
