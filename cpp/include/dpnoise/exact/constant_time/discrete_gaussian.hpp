// dpnoise/exact/constant_time/discrete_gaussian.hpp -- the discrete Gaussian with rational
// variance V = a/b (P[Y = y] proportional to e^{-y^2 / (2V)}) in constant time, for V <= 2^40.
//
// Algorithm (proofs in docs/security.md, "Constant-time discrete Gaussian"):
// * Leaves (V <= 64): a cumulative table (CDT) of |Y| over [0, B] with 128-bit certified
//   thresholds S_y ~ P[|Y| > y] (y < B), B the least bound with P[|Y| > B] <= 2^-72 (the tail
//   is folded into B); one draw scans the whole table: |Y| = #{y < B : U < S_y} for a 128-bit
//   uniform U, then a uniform sign.
// * Inner nodes (V > 64): Y = Y1 + k Y2 with independent Y1 ~ N_Z(4 k^2), Y2 ~ N_Z(V/k^2 - 4),
//   k = floor(sqrt(sqrt(V)/2)) >= 2. Poisson summation (Micciancio & Regev 2007, Lemma 4.1's
//   argument; Peikert 2010, Lemma 2.5 for sums of discrete Gaussians) gives
//   P[Y1 + k Y2 = z] = C e^{-z^2/(2V)} rho_s(Z - mu_z), with rho_s(Z + c) in
//   s sqrt(2 pi) [1 - eps, 1 + eps], eps = 2 sum_{j>=1} e^{-2 pi^2 s^2 j^2}, s^2 = 4 V2 / (4 + V2);
//   we require V2 >= 12 (s^2 >= 3, eps < 2^-84), so the node's law is within total variation
//   2 eps < 2^-83 of N_Z(V), plus its children's distances.
// The tree is flattened into terms Y = sum_j c_j L_j over leaves L_j, so a draw scans every
// leaf's table once: the operations, random bits and memory accesses depend on V only.
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/constant_time/certified_thresholds.hpp"
#include "dpnoise/exact/constant_time/ct_ops.hpp"
#include "dpnoise/random/chacha20.hpp"  // cpu_has_avx2
#include "dpnoise/simd.hpp"             // DPNOISE_X86_SIMD: the AVX2 scan

namespace dpnoise::exact::ct {

inline constexpr uint64_t kMaxVarianceLog2 = 40;  // sigma <= 2^20

// The CDT of one leaf: thresholds of P[|Y| > y], y = 0..B-1, as separate word arrays (the scan
// reads them in order, every entry, every draw).
struct GaussianLeaf {
    std::vector<uint64_t> hi, lo;  // B entries each
    // the same thresholds with the top bit flipped (x ^ 2^63), so that a signed vector
    // comparison orders them as unsigned, padded with (0 ^ 2^63) to a multiple of 4 (a zero
    // threshold never counts)
    std::vector<uint64_t> hi_biased, lo_biased;
    u128 max_width = 0;            // certified threshold width (units of 2^-128)
    size_t bound() const { return hi.size(); }

    GaussianLeaf() = default;
    GaussianLeaf(const BigUint& a, const BigUint& b) {
        if (a.is_zero()) return;  // V = 0: B = 0, |Y| = 0
        for (int L = 3; L <= 6; ++L)
            if (build(a, b, L)) return;
        throw std::logic_error("constant-time discrete Gaussian: leaf thresholds did not converge");
    }

private:
    bool build(const BigUint& a, const BigUint& b, int L) {
        hi.clear();
        lo.clear();
        const BigUint S = scale_one(L);
        const BigUint two_a = shift_left(a, 1);
        // rho(x) = e^{-x^2 b / (2a)} for x = 0..X; X the first x >= 1 with (2x+1) b >= 2a (then
        // rho(y+1)/rho(y) <= e^{-1} < 1/2 for y >= x, so sum_{y > X} rho(y) <= rho(X)) and
        // rho(X) <= 2^-140.
        std::vector<Enclosure> rho;
        const BigUint tiny = shift_left(BigUint(1), static_cast<size_t>(64 * L - 140));
        for (uint64_t x = 0;; ++x) {
            const BigUint xx = mul(BigUint(static_cast<u128>(x)), BigUint(static_cast<u128>(x)));
            rho.push_back(x == 0 ? Enclosure{S, S} : exp_rational(mul(xx, b), two_a, true, L));
            if (x >= 1 && compare(mul(BigUint(static_cast<u128>(2 * x + 1)), b), two_a) >= 0 &&
                compare(rho.back().hi, tiny) <= 0)
                break;
            if (x > 4096) throw std::logic_error("constant-time discrete Gaussian: leaf variance too large");
        }
        const size_t X = rho.size() - 1;
        // weights w_0 = rho(0), w_x = 2 rho(x); suffix sums tail_y = sum_{y < x <= X} w_x, plus
        // 2 rho(X) >= the two-sided mass beyond X in the upper bound
        std::vector<BigUint> tail_lo(X + 1), tail_hi(X + 1);
        BigUint sl, sh = shift_left(rho[X].hi, 1);
        for (size_t y = X + 1; y-- > 0;) {
            tail_lo[y] = sl;
            tail_hi[y] = sh;
            const BigUint wl = y == 0 ? rho[0].lo : shift_left(rho[y].lo, 1);
            const BigUint wh = y == 0 ? rho[0].hi : shift_left(rho[y].hi, 1);
            sl = add(sl, wl);
            sh = add(sh, wh);
        }
        const BigUint z_lo = sl, z_hi = sh;  // Z = sum_x w_x (all x) in [z_lo, z_hi]
        // B: the least y with P[|Y| > y] <= tail_hi / z_lo <= 2^-72
        size_t B = 0;
        while (B < X && compare(shift_left(tail_hi[B], 72), z_lo) > 0) ++B;
        if (B == X) throw std::logic_error("constant-time discrete Gaussian: tail bound not reached");
        max_width = 0;
        for (size_t y = 0; y < B; ++y) {
            const CertifiedThreshold t = certify(tail_lo[y], z_hi, tail_hi[y], z_lo);
            hi.push_back(static_cast<uint64_t>(t.value >> 64));
            lo.push_back(static_cast<uint64_t>(t.value));
            if (t.width > max_width) max_width = t.width;
        }
        constexpr uint64_t kBias = uint64_t{1} << 63;
        hi_biased.clear();
        lo_biased.clear();
        for (size_t y = 0; y < (B + 3) / 4 * 4; ++y) {
            hi_biased.push_back((y < B ? hi[y] : 0) ^ kBias);
            lo_biased.push_back((y < B ? lo[y] : 0) ^ kBias);
        }
        return max_width <= kMaxWidth;
    }
};

// #{y : (uh, ul) < (hi[y], lo[y])} over every entry: the portable scan and an AVX2 one (four
// entries per step: u < T iff uh < th, or uh == th and ul < tl; signed 64-bit comparisons on
// biased words order them as unsigned). Which one runs depends on the CPU only.
inline uint64_t count_below_portable(uint64_t uh, uint64_t ul, const GaussianLeaf& leaf) {
    const uint64_t* h = leaf.hi.data();
    const uint64_t* l = leaf.lo.data();
    const size_t B = leaf.bound();
    uint64_t count = 0;
    for (size_t y = 0; y < B; ++y) count += lt128(uh, ul, h[y], l[y]);
    return count;
}

#ifdef DPNOISE_X86_SIMD
__attribute__((target("avx2"))) inline uint64_t count_below_avx2(uint64_t uh, uint64_t ul, const GaussianLeaf& leaf) {
    constexpr uint64_t kBias = uint64_t{1} << 63;
    const __m256i UH = _mm256_set1_epi64x(static_cast<long long>(uh ^ kBias));
    const __m256i UL = _mm256_set1_epi64x(static_cast<long long>(ul ^ kBias));
    const uint64_t* h = leaf.hi_biased.data();
    const uint64_t* l = leaf.lo_biased.data();
    const size_t n = leaf.hi_biased.size();
    __m256i acc = _mm256_setzero_si256();
    for (size_t y = 0; y < n; y += 4) {
        const __m256i H = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + y));
        const __m256i L = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(l + y));
        const __m256i below_hi = _mm256_cmpgt_epi64(H, UH);
        const __m256i tie = _mm256_and_si256(_mm256_cmpeq_epi64(H, UH), _mm256_cmpgt_epi64(L, UL));
        acc = _mm256_sub_epi64(acc, _mm256_or_si256(below_hi, tie));  // -(-1) per entry below
    }
    const __m128i s = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    return static_cast<uint64_t>(_mm_cvtsi128_si64(s)) + static_cast<uint64_t>(_mm_extract_epi64(s, 1));
}
#endif

inline uint64_t count_below(uint64_t uh, uint64_t ul, const GaussianLeaf& leaf) {
#ifdef DPNOISE_X86_SIMD
    if (random::detail::cpu_has_avx2()) return count_below_avx2(uh, ul, leaf);
#endif
    return count_below_portable(uh, ul, leaf);
}

// |Y| by a full scan, then a uniform sign: 2 words and one bit, B comparisons.
template <class Bits>
inline int64_t draw_leaf(Bits& bits, const GaussianLeaf& leaf) {
    const uint64_t uh = bits.word(), ul = bits.word();
    const uint64_t count = count_below(uh, ul, leaf);
    return conditional_negate(count, static_cast<uint64_t>(bits.bit()));
}

struct DiscreteGaussianTable {
    static constexpr uint64_t kLeafMaxVariance = 64;
    struct Term {
        int64_t coefficient;
        const GaussianLeaf* leaf;
    };
    uint64_t a = 0, b = 1;
    std::vector<Term> terms;
    std::map<std::pair<std::vector<uint64_t>, std::vector<uint64_t>>, std::unique_ptr<GaussianLeaf>> leaves;
    size_t inner_nodes = 0;
    uint64_t max_abs = 0;  // |Y| <= sum_j |c_j| B_j (every output), checked <= 2^40 at build
    // A certified upper bound on the total-variation distance to N_Z(a/b), as log2 (double, for
    // reports; the bound itself is the sum in docs/security.md).
    double tv_bound_log2 = -INFINITY;

    DiscreteGaussianTable() = default;
    DiscreteGaussianTable(const DiscreteGaussianTable&) = delete;
    DiscreteGaussianTable(DiscreteGaussianTable&&) = default;
    DiscreteGaussianTable(uint64_t a_, uint64_t b_) : a(a_), b(b_) {
        check_range(a, b);
        if (a == 0) return;
        expand(BigUint(static_cast<u128>(a)), BigUint(static_cast<u128>(b)), 1);
        u128 m = 0;
        for (const Term& t : terms) m += static_cast<u128>(t.coefficient) * t.leaf->bound();
        if (m > (static_cast<u128>(1) << 40)) throw std::logic_error("constant-time discrete Gaussian: output bound beyond 2^40");
        max_abs = static_cast<uint64_t>(m);
        // leaves: 2^-72 (truncation) + B width 2^-128 each; inner nodes: 2 eps < 2^-83 each
        double tv = 0;
        for (const Term& t : terms)
            tv += std::ldexp(1.0, -72) + static_cast<double>(t.leaf->bound()) * static_cast<double>(t.leaf->max_width) *
                                             std::ldexp(1.0, -128);
        tv += static_cast<double>(inner_nodes) * std::ldexp(1.0, -83);
        tv_bound_log2 = std::log2(tv);
    }

    static void check_range(uint64_t a, uint64_t b) {
        if (b == 0) throw std::invalid_argument("variance: denominator must be positive");
        if (static_cast<u128>(a) > (static_cast<u128>(b) << kMaxVarianceLog2))
            throw std::invalid_argument(
                "constant_time=True supports sigma in [0, 2^20] (variance up to 2^40); got variance " +
                std::to_string(a) + "/" + std::to_string(b) + " above it (no variable-time fallback)");
    }

    size_t total_entries() const {
        size_t n = 0;
        for (const Term& t : terms) n += t.leaf->bound();
        return n;
    }

private:
    const GaussianLeaf* leaf_for(const BigUint& va, const BigUint& vb) {
        // reduce the fraction so equal variances share a leaf
        auto key = std::make_pair(va.limb, vb.limb);
        auto it = leaves.find(key);
        if (it != leaves.end()) return it->second.get();
        auto leaf = std::make_unique<GaussianLeaf>(va, vb);
        const GaussianLeaf* p = leaf.get();
        leaves.emplace(std::move(key), std::move(leaf));
        return p;
    }

    // Adds the terms of coefficient * Y, Y ~ N_Z(va / vb).
    void expand(const BigUint& va, const BigUint& vb, int64_t coefficient) {
        if (compare(va, mul(vb, BigUint(kLeafMaxVariance))) <= 0) {
            terms.push_back({coefficient, leaf_for(va, vb)});
            return;
        }
        // k = floor(sqrt(floor(sqrt(V)) / 2)), V = va / vb > 64
        const BigUint v_int = divmod(va, vb).first;
        const uint64_t sigma_floor = isqrt_big(v_int);
        uint64_t k = isqrt64(sigma_floor / 2);
        const BigUint kk(static_cast<u128>(k) * k);
        // V2 = V / k^2 - 4 = (va - 4 k^2 vb) / (vb k^2); require V2 >= 12 (s^2 >= 3)
        const BigUint four_kk_vb = mul(shift_left(kk, 2), vb);
        if (k < 2 || compare(va, shift_left(four_kk_vb, 2)) < 0)  // va >= 16 k^2 vb
            throw std::logic_error("constant-time discrete Gaussian: decomposition condition failed");
        ++inner_nodes;
        expand(shift_left(kk, 2), BigUint(1), coefficient);  // Y1 ~ N_Z(4 k^2)
        expand(sub(va, four_kk_vb), mul(vb, kk), coefficient * static_cast<int64_t>(k));
    }

    static uint64_t isqrt64(uint64_t n) {
        uint64_t r = static_cast<uint64_t>(std::sqrt(static_cast<double>(n)));
        while (r > 0 && static_cast<u128>(r) * r > n) --r;
        while (static_cast<u128>(r + 1) * (r + 1) <= n) ++r;
        return r;
    }
    static uint64_t isqrt_big(const BigUint& n) {
        if (n.limb.size() > 1) throw std::logic_error("constant-time discrete Gaussian: variance too large");
        return isqrt64(n.is_zero() ? 0 : n.limb[0]);
    }
};

// One draw: every leaf's table scanned once.
template <class Bits>
inline int64_t discrete_gaussian(Bits& bits, const DiscreteGaussianTable& g) {
    int64_t y = 0;
    for (const auto& t : g.terms) y += t.coefficient * draw_leaf(bits, *t.leaf);
    return y;
}

}  // namespace dpnoise::exact::ct
