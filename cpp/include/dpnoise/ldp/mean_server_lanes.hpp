// dpnoise/ldp/mean_server_lanes.hpp -- the mean oracles' server sums, exact, in 64-bit lanes.
//
// A batch of one coordinate's Piecewise or hybrid reports z (|z| <= Z < 2^48) is summed into
// MeanScratch: Σz (128-bit two's complement), Σz² (192-bit), the hybrid's Duchi users and ones.
// Every kernel below gives the same sums and the same verdict (a batch with one report out of
// range is refused whole, before its sums are used); they differ only in speed and are chosen
// at run time from what the CPU has: AVX-512 IFMA, AVX-512, AVX2, or the portable loop.
// tests/ldp/test_mean_server_kernels.py runs every kernel the CPU has against exact Python sums.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dpnoise/exact/wide_uint.hpp"
#include "dpnoise/simd.hpp"  // DPNOISE_X86_SIMD: the AVX2, AVX-512 and AVX-512 IFMA kernels

namespace dpnoise::ldp {

using exact::u128;
using i128 = __int128;

// A batch's sums (one coordinate), added to the state only once the whole batch is valid.
struct MeanScratch {
    int64_t users = 0, duchi_users = 0, duchi_ones = 0;
    u128 sum = 0;           // two's complement
    u128 sq_lo = 0;
    uint64_t sq_hi = 0;
    void add_z(int64_t z) {
        sum += static_cast<u128>(static_cast<i128>(z));
        const uint64_t a = static_cast<uint64_t>(z < 0 ? -z : z);
        const u128 s = static_cast<u128>(a) * a;
        sq_lo += s;
        sq_hi += sq_lo < s ? 1 : 0;
    }
};

// ---------------------------------------------------------------- exact sums in 64-bit lanes
// One coordinate, Piecewise or hybrid, Z < 2^48 (every ε >= 2^-30 or so; the mechanism's Z is at
// most 2^40 unless C~ > 2^32): the z of a block of kLaneBlock reports are summed in plain
// uint64 lanes, which the compiler vectorises (AVX-512 or AVX2 where the CPU has them, chosen
// at run time, SSE2 otherwise), and carried into the 128/192-bit totals once per block. With
// a = |z| = h 2^24 + l (h, l < 2^24): z^2 = h^2 2^48 + 2 h l 2^24 + l^2, and each of the
// lanes sum(z), sum(h^2), sum(h l), sum(l^2) stays below 2^63 over 2^15 reports (each term
// < 2^48). Unsigned arithmetic throughout: a report out of range (|z| > Z, or a hybrid Duchi
// value other than 0 or 1) sets `bad`, and the batch is refused before the sums are used.
struct LaneSums {
    uint64_t sum = 0, hh = 0, hl = 0, ll = 0, ones = 0, bad = 0;
};

inline constexpr size_t kLaneBlock = size_t{1} << 15;  // reports per carry
inline constexpr size_t kMaskBlock = 1024;             // hybrid: kinds unpacked this many at a time
inline constexpr uint64_t kLaneMaxZ = (uint64_t{1} << 48) - 1;

// mask[i] = all ones when report i is a Duchi report (hybrid kinds), else 0; mask null: Piecewise.
[[gnu::always_inline]] inline void lane_sums(const int64_t* v, const uint64_t* mask, size_t n, uint64_t Z,
                                             LaneSums& out) {
    uint64_t sum = 0, hh = 0, hl = 0, ll = 0, ones = 0, bad = 0;
    for (size_t i = 0; i < n; ++i) {
        const uint64_t z = static_cast<uint64_t>(v[i]);
        const uint64_t duchi = mask ? mask[i] : 0;
        const uint64_t a = v[i] < 0 ? uint64_t{0} - z : z;
        bad |= (~duchi & (a > Z ? ~uint64_t{0} : 0)) | (duchi & (z & ~uint64_t{1}));
        ones += duchi & z;
        const uint64_t ak = a & ~duchi;
        sum += z & ~duchi;
        const uint32_t h = static_cast<uint32_t>(ak >> 24), l = static_cast<uint32_t>(ak & 0xffffff);
        hh += static_cast<uint64_t>(h) * h;
        hl += static_cast<uint64_t>(h) * l;
        ll += static_cast<uint64_t>(l) * l;
    }
    out.sum += sum;
    out.hh += hh;
    out.hl += hl;
    out.ll += ll;
    out.ones += ones;
    out.bad |= bad;
}

// carry: a block's lanes into the exact totals (two's complement sum, 192-bit squares)
inline void carry_lanes(const LaneSums& lanes, MeanScratch& s) {
    s.sum += static_cast<u128>(static_cast<i128>(static_cast<int64_t>(lanes.sum)));
    const u128 sq = (static_cast<u128>(lanes.hh) << 48) + (static_cast<u128>(lanes.hl) << 25) + lanes.ll;
    const u128 before = s.sq_lo;
    s.sq_lo += sq;
    s.sq_hi += s.sq_lo < before ? 1 : 0;
    s.duchi_ones += static_cast<int64_t>(lanes.ones);
}

inline void count_users(const uint8_t* kinds, size_t n, MeanScratch& s) {
    s.users += static_cast<int64_t>(n);
    if (!kinds) return;
    int64_t duchi = 0;
    size_t i = 0;
    for (; i + 8 <= n / 8; i += 8) {
        uint64_t w;
        std::memcpy(&w, kinds + i, 8);
        duchi += __builtin_popcountll(w);
    }
    for (; i < n / 8; ++i) duchi += __builtin_popcount(kinds[i]);
    if (n % 8) duchi += __builtin_popcount(kinds[n / 8] & ((1u << (n % 8)) - 1));
    s.duchi_users += duchi;
}

// The whole batch, block by block, into s (users, duchi_users, duchi_ones, sum, squares); false
// when a report is out of range.
[[gnu::always_inline]] inline bool lane_batch(const int64_t* v, const uint8_t* kinds, size_t n, uint64_t Z,
                                              MeanScratch& s) {
    alignas(64) uint64_t mask[kMaskBlock];
    uint64_t bad = 0;
    for (size_t b = 0; b < n; b += kLaneBlock) {
        const size_t m = std::min(kLaneBlock, n - b);
        LaneSums lanes;
        if (!kinds) {
            lane_sums(v + b, nullptr, m, Z, lanes);
        } else {
            for (size_t c = 0; c < m; c += kMaskBlock) {  // b and c are multiples of 8
                const size_t w = std::min(kMaskBlock, m - c);
                const uint8_t* k8 = kinds + (b + c) / 8;
                for (size_t i = 0; i < w; ++i) mask[i] = uint64_t{0} - ((k8[i / 8] >> (i % 8)) & 1u);
                lane_sums(v + b + c, mask, w, Z, lanes);
            }
        }
        bad |= lanes.bad;
        carry_lanes(lanes, s);
    }
    count_users(kinds, n, s);
    return bad == 0;
}

#ifdef DPNOISE_X86_SIMD
// AVX-512: eight lanes, the hybrid's kinds byte used directly as the lane mask, and 32 x 32 ->
// 64-bit products (vpmuludq; the compiler's vectorisation of lane_sums picks the slower vpmullq).
#define DPNOISE_MEAN_AVX512 "avx512f,avx512vl,avx512dq,avx512bw"
template <bool Hybrid>
__attribute__((target(DPNOISE_MEAN_AVX512))) inline void lane_sums_avx512(const int64_t* v, const uint8_t* kinds,
                                                                          size_t n, uint64_t Z, LaneSums& out) {
    const __m512i zmax = _mm512_set1_epi64(static_cast<long long>(Z));
    const __m512i low24 = _mm512_set1_epi64(0xffffff);
    const __m512i not_one = _mm512_set1_epi64(~1LL);
    __m512i sum = _mm512_setzero_si512(), hh = sum, hl = sum, ll = sum, ones = sum;
    __mmask8 bad = 0;
    // the maskz forms with every lane selected: the plain intrinsics pass GCC 12 an undefined
    // vector that -Wmaybe-uninitialized reports (the same instructions)
    const __mmask8 all = 0xff;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        // 64 lines ahead: the hardware prefetcher alone left this loop at ~0.7 of NumPy's sum
        // (perf: the loads' stalls); with it, 0.98 -> ~0.4 ns a report (a hint: never faults)
        // (the addresses as integers: near the end they lie past the arrays, where a pointer
        // would be undefined)
        _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(v + i) + 4096), _MM_HINT_T0);
        if (Hybrid)
            _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(kinds + i / 8) + 512), _MM_HINT_T0);
        const __m512i z = _mm512_loadu_si512(v + i);
        const __m512i a = _mm512_maskz_abs_epi64(all, z);  // INT64_MIN stays 2^63 (unsigned): > Z
        const __mmask8 duchi = Hybrid ? static_cast<__mmask8>(kinds[i / 8]) : static_cast<__mmask8>(0);
        const __mmask8 pm = static_cast<__mmask8>(~duchi);
        bad = static_cast<__mmask8>(bad | _mm512_mask_cmpgt_epu64_mask(pm, a, zmax) |
                                    _mm512_mask_test_epi64_mask(duchi, z, not_one));
        ones = _mm512_mask_add_epi64(ones, duchi, ones, z);
        sum = _mm512_mask_add_epi64(sum, pm, sum, z);
        const __m512i ak = _mm512_maskz_mov_epi64(pm, a);
        const __m512i h = _mm512_maskz_srli_epi64(all, ak, 24), l = _mm512_and_si512(ak, low24);
        hh = _mm512_add_epi64(hh, _mm512_maskz_mul_epu32(all, h, h));
        hl = _mm512_add_epi64(hl, _mm512_maskz_mul_epu32(all, h, l));
        ll = _mm512_add_epi64(ll, _mm512_maskz_mul_epu32(all, l, l));
    }
    alignas(64) uint64_t lane[5][8];
    _mm512_store_si512(lane[0], sum);
    _mm512_store_si512(lane[1], hh);
    _mm512_store_si512(lane[2], hl);
    _mm512_store_si512(lane[3], ll);
    _mm512_store_si512(lane[4], ones);
    for (int j = 0; j < 8; ++j) {
        out.sum += lane[0][j];
        out.hh += lane[1][j];
        out.hl += lane[2][j];
        out.ll += lane[3][j];
        out.ones += lane[4][j];
    }
    out.bad |= bad ? 1 : 0;
    if (i < n) {  // the last n % 8 reports (only in the batch's last block)
        alignas(64) uint64_t mask[8];
        for (size_t j = i; j < n; ++j) mask[j - i] = kinds ? uint64_t{0} - ((kinds[i / 8] >> (j - i)) & 1u) : 0;
        lane_sums(v + i, mask, n - i, Z, out);
    }
}

__attribute__((target(DPNOISE_MEAN_AVX512))) inline bool lane_batch_avx512(const int64_t* v, const uint8_t* kinds,
                                                                           size_t n, uint64_t Z, MeanScratch& s) {
    uint64_t bad = 0;
    for (size_t b = 0; b < n; b += kLaneBlock) {
        LaneSums lanes;
        const size_t m = std::min(kLaneBlock, n - b);
        if (kinds)
            lane_sums_avx512<true>(v + b, kinds + b / 8, m, Z, lanes);
        else
            lane_sums_avx512<false>(v + b, nullptr, m, Z, lanes);
        bad |= lanes.bad;
        carry_lanes(lanes, s);
    }
    count_users(kinds, n, s);
    return bad == 0;
}
__attribute__((target("avx2"))) inline bool lane_batch_avx2(const int64_t* v, const uint8_t* kinds, size_t n,
                                                             uint64_t Z, MeanScratch& s) {
    return lane_batch(v, kinds, n, Z, s);
}

// AVX-512 IFMA: vpmadd52luq / vpmadd52huq add to a 64-bit lane the low / the high 52 bits of the
// 104-bit product of two lanes' low 52 bits (Intel SDM vol. 2, VPMADD52LUQ, VPMADD52HUQ). With
// a = |z| < 2^52, a^2 = lo + hi 2^52: two instructions per 8 reports instead of the 24-bit split
// and three 32 x 32-bit products. A lane adds at most kIfmaBlock / 8 = 2^11 terms below 2^52
// (below 2^63) and is carried once per block. The hybrid's Duchi reports run through the same
// unmasked sums and are taken out once per block: in a valid batch their z is 0 or 1, so z^2 = z,
// and Σ_pm z = Σ z − ones, Σ_pm z^2 = Σ z^2 − ones with ones = Σ_duchi z, the one masked sum.
// The checks, exactly "every report in range": the largest |z| over every lane <= Z (a valid
// Duchi report has |z| <= 1 <= Z; Z = 0 runs the AVX-512 kernel) and the OR of the Duchi
// reports' z within bit 0. Per 8 reports: 5 vector operations (Piecewise), 7 (hybrid), no
// per-lane mask for Piecewise reports. (An invalid batch's sums are garbage and never used.)
#define DPNOISE_MEAN_IFMA "avx512f,avx512vl,avx512dq,avx512bw,avx512ifma"
inline constexpr size_t kIfmaBlock = size_t{1} << 14;  // reports per carry

template <bool Hybrid>
__attribute__((target(DPNOISE_MEAN_IFMA))) inline bool lane_batch_ifma_t(const int64_t* v, const uint8_t* kinds,
                                                                         size_t n, uint64_t Z, MeanScratch& s) {
    const __mmask8 all = 0xff;  // the maskz forms: see lane_sums_avx512
    __m512i top = _mm512_setzero_si512(), duchi_or = top;
    const size_t body = n & ~size_t{7};
    for (size_t b = 0; b < body; b += kIfmaBlock) {
        const size_t end = std::min(body, b + kIfmaBlock);
        __m512i sum = _mm512_setzero_si512(), lo = sum, hi = sum, ones = sum;
        for (size_t i = b; i < end; i += 8) {
            // 16 KiB ahead into L2 (T1): 4-9% faster than the AVX-512 kernel's 4 KiB into L1 (T0) in
            // A/B runs in the benchmark's conditions (docs/performance.md); the address as an
            // integer: near the end it lies past the array, where a pointer would be undefined
            _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(v + i) + 16384), _MM_HINT_T1);
            const __m512i z = _mm512_loadu_si512(v + i);
            const __m512i a = _mm512_maskz_abs_epi64(all, z);  // INT64_MIN stays 2^63 (unsigned): > Z
            top = _mm512_maskz_max_epu64(all, top, a);
            sum = _mm512_add_epi64(sum, z);
            lo = _mm512_madd52lo_epu64(lo, a, a);
            hi = _mm512_madd52hi_epu64(hi, a, a);
            if (Hybrid) {
                const __mmask8 duchi = static_cast<__mmask8>(kinds[i / 8]);
                duchi_or = _mm512_mask_or_epi64(duchi_or, duchi, duchi_or, z);
                ones = _mm512_mask_add_epi64(ones, duchi, ones, z);
            }
        }
        alignas(64) uint64_t lane[4][8];
        _mm512_store_si512(lane[0], sum);
        _mm512_store_si512(lane[1], lo);
        _mm512_store_si512(lane[2], hi);
        _mm512_store_si512(lane[3], ones);
        uint64_t sum_all = 0, hi_all = 0, ones_all = 0;  // |Σz| < 2^62, Σhi < 2^58 (valid batch)
        u128 lo_all = 0;
        for (int j = 0; j < 8; ++j) {
            sum_all += lane[0][j];
            lo_all += lane[1][j];
            hi_all += lane[2][j];
            ones_all += lane[3][j];
        }
        s.sum += static_cast<u128>(static_cast<i128>(static_cast<int64_t>(sum_all - ones_all)));
        const u128 sq = lo_all + (static_cast<u128>(hi_all) << 52) - ones_all;  // < 2^110
        const u128 before = s.sq_lo;
        s.sq_lo += sq;
        s.sq_hi += s.sq_lo < before ? 1 : 0;
        s.duchi_ones += static_cast<int64_t>(ones_all);
    }
    const __mmask8 out_of_range = _mm512_cmpgt_epu64_mask(top, _mm512_set1_epi64(static_cast<long long>(Z)));
    const __mmask8 not_a_bit = _mm512_test_epi64_mask(duchi_or, _mm512_set1_epi64(~1LL));
    uint64_t bad = (out_of_range | not_a_bit) ? 1 : 0;
    if (body < n) {  // the last n % 8 reports
        alignas(64) uint64_t mask[8] = {};
        for (size_t j = body; j < n; ++j) mask[j - body] = kinds ? uint64_t{0} - ((kinds[body / 8] >> (j - body)) & 1u) : 0;
        LaneSums tail;
        lane_sums(v + body, mask, n - body, Z, tail);
        bad |= tail.bad;
        carry_lanes(tail, s);
    }
    count_users(kinds, n, s);
    return bad == 0;
}

__attribute__((target(DPNOISE_MEAN_IFMA))) inline bool lane_batch_ifma(const int64_t* v, const uint8_t* kinds, size_t n,
                                                                       uint64_t Z, MeanScratch& s) {
    if (Z == 0) return lane_batch_avx512(v, kinds, n, Z, s);
    return kinds ? lane_batch_ifma_t<true>(v, kinds, n, Z, s) : lane_batch_ifma_t<false>(v, kinds, n, Z, s);
}
#endif  // DPNOISE_X86_SIMD

inline bool lane_batch_portable(const int64_t* v, const uint8_t* kinds, size_t n, uint64_t Z, MeanScratch& s) {
    return lane_batch(v, kinds, n, Z, s);
}

// The kernels by name (tests and benchmarks compare them; lane_batch_dispatch picks the best).
enum class LaneKernel : int { kPortable, kAvx2, kAvx512, kAvx512Ifma, kCount };
inline const char* const kLaneKernelNames[] = {"portable", "avx2", "avx512", "avx512ifma"};

inline bool lane_kernel_supported(LaneKernel k) {
#ifndef DPNOISE_X86_SIMD
    return k == LaneKernel::kPortable;
#else
    static const bool avx2 = __builtin_cpu_supports("avx2");
    static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
    static const bool ifma = avx512 && __builtin_cpu_supports("avx512ifma");
    switch (k) {
        case LaneKernel::kPortable: return true;
        case LaneKernel::kAvx2: return avx2;
        case LaneKernel::kAvx512: return avx512;
        case LaneKernel::kAvx512Ifma: return ifma;
        default: return false;
    }
#endif
}

// Precondition: lane_kernel_supported(k).
inline bool lane_batch_with(LaneKernel k, const int64_t* v, const uint8_t* kinds, size_t n, uint64_t Z,
                            MeanScratch& s) {
#ifdef DPNOISE_X86_SIMD
    switch (k) {
        case LaneKernel::kAvx2: return lane_batch_avx2(v, kinds, n, Z, s);
        case LaneKernel::kAvx512: return lane_batch_avx512(v, kinds, n, Z, s);
        case LaneKernel::kAvx512Ifma: return lane_batch_ifma(v, kinds, n, Z, s);
        default: break;
    }
#else
    (void)k;
#endif
    return lane_batch_portable(v, kinds, n, Z, s);
}

// The fastest kernel the CPU has, chosen once.
inline LaneKernel lane_kernel_best() {
    static const LaneKernel best = lane_kernel_supported(LaneKernel::kAvx512Ifma) ? LaneKernel::kAvx512Ifma
                                   : lane_kernel_supported(LaneKernel::kAvx512)   ? LaneKernel::kAvx512
                                   : lane_kernel_supported(LaneKernel::kAvx2)     ? LaneKernel::kAvx2
                                                                                  : LaneKernel::kPortable;
    return best;
}

inline bool lane_batch_dispatch(const int64_t* v, const uint8_t* kinds, size_t n, uint64_t Z, MeanScratch& s) {
    return lane_batch_with(lane_kernel_best(), v, kinds, n, Z, s);
}

}  // namespace dpnoise::ldp
