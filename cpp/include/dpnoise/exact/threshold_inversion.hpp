// dpnoise/exact/threshold_inversion.hpp -- inversion of a law on {0, 1, 2, ...} over its
// certified tail thresholds, with a guide table on R's first bits (Thresholds, invert()).
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "dpnoise/exact/lazy_comparison.hpp"
#include "dpnoise/exact/refinement_policy.hpp"

namespace dpnoise::exact {

// ---------------------------------------------------------------- inversion over thresholds
// Thresholds 1 > S_1 >= S_2 >= ... >= S_m > 0 with 32-bit bounds; invert() returns
// D = #{d >= 1 : R < S_d} for one uniform R (d <= m, or unbounded when `tail` is set, in which
// case thresholds beyond m are compared exactly). Since the S_d decrease, {d : R < S_d} is a
// prefix: the first 32 bits of R settle D unless they fall in the uncertain band of S_{D+1}.
// Usually fewer do: R's first guide_bits bits name a bucket, and in most buckets (all but a few
// percent of the mass) every R gives the same D, which the guide table then holds. R's further
// bits are drawn only when needed (they are independent, so drawing them later is exact).
struct Thresholds {
    static constexpr unsigned kGuideBits = 13;  // at most; finish() picks fewer for small scales
    unsigned guide_bits = kGuideBits;
    std::vector<uint32_t> lo;     // lo[d-1] for S_d, non-increasing
    std::vector<uint32_t> hi_m1;  // hi[d-1] - 1 (hi >= 1 always; hi = 2^32 is stored as 2^32 - 1)
    bool tail = false;          // thresholds continue beyond m (compared exactly)
    // guide[b] = 2 c + settled, c = #{i : lo[i] > w} at the largest w whose top guide_bits are
    // b: a lower bound for every w in that bucket, from which a short forward scan finds the
    // count (Chen & Asau 1974's indexed search). `settled` marks buckets in which every w
    // already decides D = c (no lower bound inside the bucket, and the whole bucket at or
    // above S_{c+1}'s upper bound): there one load answers.
    std::vector<uint16_t> guide;  // 16 bits: every table here has m < 2^15 thresholds

    void push(const struct Bounds32& b);
    void finish(uint64_t scale = 0);  // scale: about 1/(1 - S_1); sizes the guide
};

inline void Thresholds::push(const Bounds32& b) {
    lo.push_back(b.lo);
    hi_m1.push_back(static_cast<uint32_t>(std::max<uint64_t>(b.hi, 1) - 1));
}

inline void Thresholds::finish(uint64_t scale) {
    // lo must be non-increasing for the prefix property; enforce it (lowering a lower bound
    // keeps it valid)
    for (size_t i = 1; i < lo.size(); ++i) lo[i] = std::min(lo[i], lo[i - 1]);
    // about 256 buckets per threshold spacing near R = 1, where the mass is (at most 2^13
    // buckets, 16 KiB): the unsettled buckets then carry a few percent of the mass
    guide_bits = kGuideBits;
    if (scale) {
        unsigned g = 6;
        while (g < kGuideBits && (uint64_t{1} << g) < 256 * scale) ++g;
        guide_bits = g;
    }
    guide.resize(size_t{1} << guide_bits);
    const size_t m = hi_m1.size();
    if (2 * m + 1 > UINT16_MAX) throw std::logic_error("too many thresholds for a 16-bit guide");
    // #{i : lo[i] > w} is the length of a prefix (lo is non-increasing) and shrinks as w grows:
    // one sweep over the buckets in increasing w finds it at each bucket's ends
    size_t at_min = m;
    for (size_t b = 0; b < guide.size(); ++b) {
        const uint32_t wmin = static_cast<uint32_t>(static_cast<uint64_t>(b) << (32 - guide_bits));
        const uint32_t wmax = static_cast<uint32_t>(((static_cast<uint64_t>(b) + 1) << (32 - guide_bits)) - 1);
        while (at_min > 0 && lo[at_min - 1] <= wmin) --at_min;
        size_t c = at_min;
        while (c > 0 && lo[c - 1] <= wmax) --c;
        const bool settled = c < m && at_min == c && wmin > hi_m1[c];
        guide[b] = static_cast<uint16_t>(2 * c + (settled ? 1 : 0));
        at_min = c;  // the next bucket starts above this one's wmax
    }
    // sentinels: lo[m] = lo[m+1] = 0 is never > w, so the scan below needs no bounds check
    lo.push_back(0);
    lo.push_back(0);
}


// The rare end of invert(): the first 32 bits w of R left D undecided between k and more.
template <class Bits, class Exact>
[[gnu::noinline]] uint64_t invert_refine(Bits& bits, const Thresholds& th, uint32_t w, uint64_t k, Exact& less_exact) {
    const size_t m = th.hi_m1.size();
    if (k == m && !th.tail) return m;
    // compare R exactly with S_{k+1}, S_{k+2}, ... (R's first word completed lazily)
    std::vector<uint64_t> words{(static_cast<uint64_t>(w) << 32) | bits.bits(32)};
    uint64_t d = k;
    while ((d < m || th.tail) && less_exact(bits, words, d + 1)) ++d;
    return d;
}

// invert_bucket() for a bucket that its guide entry does not settle: R's next 32 - guide_bits
// bits complete w, then the scan.
template <class Bits, class Exact, class Policy = NeverForceRefinement>
[[gnu::noinline]] uint64_t invert_scan(Bits& bits, const Thresholds& th, uint32_t bucket, Exact& less_exact) {
    const size_t m = th.hi_m1.size();  // lo carries two zero sentinels beyond m
    const unsigned rest = 32 - th.guide_bits;
    const uint32_t w = (bucket << rest) | static_cast<uint32_t>(bits.bits(rest));
    size_t k = th.guide[bucket] >> 1;
    k += th.lo[k] > w ? 1 : 0;  // two branch-free steps settle almost every unsettled bucket
    k += th.lo[k] > w ? 1 : 0;
    while (th.lo[k] > w) ++k;  // R < S_d for sure for d <= k (stops at a sentinel)
    if constexpr (!Policy::kForce) {
        if (k < m && w > th.hi_m1[k]) return k;  // w >= hi: R >= S_{k+1} for sure
    }
    return invert_refine(bits, th, w, k, less_exact);
}

// D for a uniform R whose first guide_bits bits are `bucket` (already drawn); R's later bits
// are drawn from `bits` only when the bucket does not settle D.
template <class Bits, class Exact, class Policy = NeverForceRefinement>
inline uint64_t invert_bucket(Bits& bits, const Thresholds& th, uint32_t bucket, Exact&& less_exact) {
    const uint32_t g = th.guide[bucket];
    if ((g & 1) && !Policy::kForce) return g >> 1;
    return invert_scan<Bits, std::remove_reference_t<Exact>, Policy>(bits, th, bucket, less_exact);
}

template <class Bits, class Exact, class Policy = NeverForceRefinement>
inline uint64_t invert(Bits& bits, const Thresholds& th, Exact&& less_exact) {
    return invert_bucket<Bits, Exact&, Policy>(bits, th, static_cast<uint32_t>(bits.bits(th.guide_bits)), less_exact);
}

}  // namespace dpnoise::exact
