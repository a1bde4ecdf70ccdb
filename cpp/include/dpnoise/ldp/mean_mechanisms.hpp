// dpnoise/ldp/mean_mechanisms.hpp -- the randomizers of the numeric mean oracles, exact.
//
// Every user's value is first on the input grid t = m / 2^K (numeric_grid.hpp). Then:
//
// Duchi (Duchi, Jordan & Wainwright, JASA 2018, §4.2.3, one dimension; Wang et al., ICDE 2019,
// Alg. 1): the bit b = 1 (report +C) with probability 1/2 + t (e^ε − 1)/(2(e^ε + 1)), else
// b = 0 (report −C), C = (e^ε + 1)/(e^ε − 1). P(b | t)/P(b | t') <= (1 + κ)/(1 − κ) = e^ε with
// κ = tanh(ε/2). 1BitMean (Ding, Kulkarni & Yekhanin, NeurIPS 2017, §2.1) is the same bit:
// P(1) = 1/(e^ε + 1) + (x/m)(e^ε − 1)/(e^ε + 1) with x/m = (t + 1)/2.
// The decision "uniform R < c(m)" reads R's first 64-bit word against certified 64-bit bounds of
// c(m) = 1/2 + m κ / 2^(K+1) (from a certified enclosure of κ); in the band they do not decide
// (a few units of 2^-64) it is refined exactly with c = (S(2^K + m) + e(2^K − m)) /
// (2^(K+1)(S + e)), e an enclosure of e^{−γ} at scale S (lazy_comparison.hpp).
//
// Piecewise (Wang et al., ICDE 2019, Alg. 2) on a dyadic output grid, with C replaced by the
// dyadic C~ = Z / 2^G >= C = (e^{ε/2} + 1)/(e^{ε/2} − 1) (rounded up: more noise). The continuous
// mechanism: with probability (C~ + 1)/(2 C~) = (Z + 2^G)/(2Z), Y uniform on the window
// [ℓ, ℓ + C~ − 1], ℓ = (C~ + 1) t/2 − (C~ − 1)/2, else uniform on [−C~, C~] outside it. Its
// densities inside and outside differ by ((C~ + 1)/(C~ − 1))² <= e^ε (equality at C~ = C) and
// E[Y] = t. The report is Y rounded at random to the grid z / 2^G (up with probability equal to
// Y's fractional part): post-processing, so still ε-LDP, and unbiased. Every breakpoint lies on
// the fine grid 2^-(G+K+1), so Y is drawn as a uniform fine cell plus a uniform point in it,
// and the rounding coin has the dyadic probability (2 rem + 1)/2^(K+2): all integer draws.
// docs/ldp_numeric.md proves ε-LDP and unbiasedness of this grid version.
//
// Hybrid (Wang et al., ICDE 2019, §III-C): Piecewise with probability α, Duchi otherwise,
// α = 1 − e^{−ε/2} (above ε* ≈ 0.61) or 0; "R >= e^{−γ/2}" decided like the Duchi bit.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define DPNOISE_MEAN_X86 1
#include <immintrin.h>
#endif

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/lazy_comparison.hpp"
#include "dpnoise/exact/uniform.hpp"
#include "dpnoise/ldp/numeric_grid.hpp"
#include "dpnoise/random/stream_fill.hpp"

namespace dpnoise::ldp {

// 64-bit bounds [lo, hi] (hi up to 2^64) of a constant c in [0, 1] from an enclosure at L = 2.
struct Bounds64 {
    uint64_t lo = 0;
    u128 hi = 0;
};

inline Bounds64 bounds64(const exact::Enclosure& e) {  // e at scale 2^128
    Bounds64 b;
    bool lost = false;
    const exact::BigUint lo = exact::shift_right(e.lo, 64);
    exact::BigUint hi = exact::shift_right(e.hi, 64, &lost);
    if (lost) hi = exact::add_small(hi, 1);
    b.lo = lo.limb.size() > 1 ? UINT64_MAX : (lo.is_zero() ? 0 : lo.limb[0]);
    b.hi = hi.limb.size() > 1 ? (static_cast<u128>(hi.limb[1]) << 64) | hi.limb[0] : (hi.is_zero() ? 0 : hi.limb[0]);
    if (b.hi > (static_cast<u128>(1) << 64)) b.hi = static_cast<u128>(1) << 64;
    return b;
}

// e^{−num/den} at precision L, with γ = 0 exact.
inline exact::Enclosure exp_minus(const exact::BigUint& num, const exact::BigUint& den, int L) {
    if (num.is_zero()) return {exact::scale_one(L), exact::scale_one(L)};
    return exact::exp_rational(num, den, true, L);
}

struct MeanMechanism {
    enum Method : int { kDuchi = 0, kPiecewise = 1, kHybrid = 2 };
    static constexpr unsigned K = InputGrid::kBits;
    // Reproducibility unit (reports per secret stream); a multiple of 8 (packed bits).
    static constexpr size_t kReportsPerStream = size_t{1} << 16;
    // Z <= 2^40 (C~ − C < 2^-G <= 2^-33 C~), or G = 8 for the largest C (ε < 2^-33): Z < 2^61.
    static constexpr int kZBits = 40;
    static constexpr int kMinG = 8;

    Method method;
    InputGrid grid;
    exact::BigUint gamma_num, gamma_den, half_den;  // γ = num/den; γ/2 = num/half_den
    Bounds64 kappa;                                  // κ 2^64 = tanh(γ/2) 2^64
    Bounds64 keep_duchi;                             // e^{−γ/2} 2^64 (hybrid: P(Duchi))
    bool hybrid_mixes = false;                       // hybrid with α > 0
    uint64_t kappa_gap = 0;                          // κhi − κlo (a few units)
    uint64_t Z = 0;                                  // piecewise: C~ = Z / 2^G
    unsigned G = 0;

    MeanMechanism(Method m, double low, double high, exact::BigUint num, exact::BigUint den, bool mix)
        : method(m), grid(low, high), gamma_num(std::move(num)), gamma_den(std::move(den)), hybrid_mixes(mix) {
        if (gamma_den.is_zero()) throw std::invalid_argument("gamma_den must be positive");
        if (gamma_num.is_zero()) throw std::invalid_argument("epsilon must be positive");
        if (exact::compare(gamma_num, exact::mul(gamma_den, exact::BigUint(static_cast<u128>(1000)))) > 0)
            throw std::invalid_argument("epsilon must be at most 1000");
        half_den = exact::add(gamma_den, gamma_den);
        // κ = (1 − e)/(1 + e), e = e^{−γ}: decreasing in e
        const exact::BigUint S = exact::scale_one(2);
        const exact::Enclosure e = exp_minus(gamma_num, gamma_den, 2);
        const exact::BigUint klo = exact::divmod(exact::shift_left(sat_sub(S, e.hi), 128), exact::add(S, e.hi)).first;
        const auto [khq, khr] = exact::divmod(exact::shift_left(sat_sub(S, e.lo), 128), exact::add(S, e.lo));
        kappa = bounds64({klo, khr.is_zero() ? khq : exact::add_small(khq, 1)});
        if (kappa.hi - kappa.lo >= (static_cast<u128>(1) << 30)) throw std::logic_error("kappa's bounds are too wide");
        kappa_gap = static_cast<uint64_t>(kappa.hi - kappa.lo);
        keep_duchi = bounds64(exp_minus(gamma_num, half_den, 2));
        piecewise_grid();
    }

    static exact::BigUint sat_sub(const exact::BigUint& a, const exact::BigUint& b) {
        return exact::compare(a, b) > 0 ? exact::sub(a, b) : exact::BigUint();
    }

    // Z = ceil(C_hi 2^G) with C_hi >= C = (1 + e)/(1 − e), e = e^{−γ/2} (increasing in e: use
    // e.hi), and G the largest with Z <= 2^40 (at least kMinG).
    void piecewise_grid() {
        const int L = 4;
        const exact::BigUint S = exact::scale_one(L);
        const exact::Enclosure e = exp_minus(gamma_num, half_den, L);
        if (exact::compare(e.hi, S) >= 0) throw std::invalid_argument("epsilon too small for the piecewise grid");
        const exact::BigUint num = exact::add(S, e.hi), den = exact::sub(S, e.hi);
        const exact::BigUint c_floor = exact::divmod(num, den).first;  // >= 1
        const int b = static_cast<int>(c_floor.bit_length());
        if (b + kMinG > 61) throw std::invalid_argument("epsilon too small for the piecewise grid");
        G = static_cast<unsigned>(std::max(kZBits - b, kMinG));
        const auto [q, r] = exact::divmod(exact::shift_left(num, G), den);
        const exact::BigUint z = r.is_zero() ? q : exact::add_small(q, 1);
        Z = z.limb[0];
    }

    // ---------------------------------------------------------------- Duchi's bit
    // "R < 1/2 + m κ / 2^(K+1)" exactly.
    template <class Bits>
    bool duchi_bit(Bits& bits, int64_t m) const {
        const bool neg = m < 0;
        const u128 am = static_cast<u128>(neg ? -m : m);
        const u128 half = static_cast<u128>(1) << 63;
        const u128 dlo = (am * kappa.lo) >> (K + 1);
        const u128 prod_hi = am * kappa.hi;
        const u128 dhi = (prod_hi >> (K + 1)) + ((prod_hi & ((static_cast<u128>(1) << (K + 1)) - 1)) ? 1 : 0);
        const u128 lo = neg ? half - dhi : half + dlo;  // lo <= c 2^64 <= hi
        const u128 hi = neg ? half - dlo : half + dhi;
        return decide64(bits, lo, hi, [&](Bits& b, uint64_t w) { return duchi_refine(b, w, m); });
    }

    // duchi_bit with the hot loop's reader copy `local`: the same bits and the same answer, the
    // first comparison without a branch on the random bits; the rare rest on `owner` (lend).
    // duchi_bit's bounds lo <= c(m) 2^64 <= hi, with one 64 x 64 product: am κhi = am κlo +
    // am (κhi − κlo), the difference a few units (kappa_gap, set in the constructor)
    // Without a branch on m's sign (a coin flip for values spread around the midpoint): with
    // s = all ones when m < 0, |m| = (m ^ s) − s, and lo = half ± (dhi or dlo) by the same mask.
    void duchi_bounds(int64_t m, u128& lo, u128& hi) const {
        const uint64_t s64 = static_cast<uint64_t>(m >> 63);
        const uint64_t am = (static_cast<uint64_t>(m) ^ s64) - s64;  // <= 2^K
        const u128 s = static_cast<u128>(static_cast<i128>(m >> 63));
        const u128 half = static_cast<u128>(1) << 63;
        const u128 prod_lo = static_cast<u128>(am) * kappa.lo;
        const u128 dlo = prod_lo >> (K + 1);
        const u128 dhi = (prod_lo + am * kappa_gap + ((static_cast<u128>(1) << (K + 1)) - 1)) >> (K + 1);
        const u128 x = (dhi & s) | (dlo & ~s), y = (dlo & s) | (dhi & ~s);  // m < 0: (dhi, dlo)
        lo = half + ((x ^ s) - s);  // m < 0: half − dhi; else half + dlo
        hi = half + ((y ^ s) - s);
    }

    template <class Bits>
    bool duchi_bit_fast(Bits& local, Bits& owner, int64_t m) const {
        u128 lo, hi;
        duchi_bounds(m, lo, hi);
        const uint64_t w32 = local.bits(32);
        const bool yes = (static_cast<u128>(w32) + 1) << 32 <= lo, no = static_cast<u128>(w32) << 32 >= hi;
        if (__builtin_expect(!(yes | no), 0))
            return local.lend(owner, [&](Bits& b) { return decide64_after32(b, w32, lo, hi, [&](Bits& bb, uint64_t w) {
                return duchi_refine(bb, w, m);
            }); });
        return yes;
    }

    template <class Bits>
    bool hybrid_uses_duchi_fast(Bits& local, Bits& owner) const {
        if (!hybrid_mixes) return true;
        const uint64_t w32 = local.bits(32);
        const bool yes = (static_cast<u128>(w32) + 1) << 32 <= keep_duchi.lo;
        const bool no = static_cast<u128>(w32) << 32 >= keep_duchi.hi;
        if (__builtin_expect(!(yes | no), 0))
            return local.lend(owner, [&](Bits& b) {
                return decide64_after32(b, w32, keep_duchi.lo, keep_duchi.hi, [this](Bits& bb, uint64_t w) {
                    std::vector<uint64_t> words{w};
                    return exact::lazy_less(bb, words, [this](int L) { return exp_minus(gamma_num, half_den, L); });
                });
            });
        return yes;
    }

    // decide64 after its first 32 bits w32 left the question open.
    template <class Bits, class Refine>
    [[gnu::noinline]] static bool decide64_after32(Bits& bits, uint64_t w32, u128 lo, u128 hi, Refine&& refine) {
        const uint64_t w = (w32 << 32) | bits.bits(32);
        if (static_cast<u128>(w) + 1 <= lo) return true;
        if (static_cast<u128>(w) >= hi) return false;
        return refine(bits, w);
    }

    // "R < c" given 64-bit bounds lo <= c 2^64 <= hi: R's first 32 bits decide unless they fall
    // in the band [lo, hi) / 2^32 (probability about 2^-31); then its first 64 bits, then refine.
    template <class Bits, class Refine>
    static bool decide64(Bits& bits, u128 lo, u128 hi, Refine&& refine) {
        const uint64_t w32 = bits.bits(32);
        if ((static_cast<u128>(w32) + 1) << 32 <= lo) return true;  // R < (w32 + 1)/2^32 <= c
        if (static_cast<u128>(w32) << 32 >= hi) return false;       // R >= w32/2^32 >= c
        const uint64_t w = (w32 << 32) | bits.bits(32);
        if (static_cast<u128>(w) + 1 <= lo) return true;  // R < (w + 1)/2^64 <= c
        if (static_cast<u128>(w) >= hi) return false;      // R >= w/2^64 >= c
        return refine(bits, w);
    }

    template <class Bits>
    [[gnu::noinline]] bool duchi_refine(Bits& bits, uint64_t w, int64_t m) const {
        std::vector<uint64_t> words{w};
        const exact::BigUint plus(static_cast<u128>(InputGrid::kOne + m)), minus(static_cast<u128>(InputGrid::kOne - m));
        const exact::BigUint two_one(static_cast<u128>(2 * InputGrid::kOne));
        return exact::lazy_less_ratio(bits, words, [&](int L) {
            const exact::BigUint S = exact::scale_one(L);
            const exact::Enclosure e = exp_minus(gamma_num, gamma_den, L);
            const exact::BigUint base = exact::mul(S, plus);
            return exact::RatioEnclosure{
                exact::Enclosure{exact::add(base, exact::mul(e.lo, minus)), exact::add(base, exact::mul(e.hi, minus))},
                exact::Enclosure{exact::mul(two_one, exact::add(S, e.lo)), exact::mul(two_one, exact::add(S, e.hi))}};
        });
    }

    // ---------------------------------------------------------------- hybrid's choice
    // true (report with Duchi) with probability e^{−γ/2}; false (Piecewise) with 1 − e^{−γ/2}.
    template <class Bits>
    bool hybrid_uses_duchi(Bits& bits) const {
        if (!hybrid_mixes) return true;
        return decide64(bits, keep_duchi.lo, keep_duchi.hi, [this](Bits& b, uint64_t w) {
            std::vector<uint64_t> words{w};
            return exact::lazy_less(b, words, [this](int L) { return exp_minus(gamma_num, half_den, L); });
        });
    }

    // ---------------------------------------------------------------- Piecewise on the grid
    // The report z in [−Z, Z] (value z / 2^G in [−C~, C~]). In fine units (2^-(K+1) of z) the
    // window is [left, left + Q 2^(K+1)) and the range [−Z 2^(K+1), Z 2^(K+1)); unit cells of z
    // are 2^(K+1) fine units. A uniform fine position F over the chosen region (inside: the window;
    // outside: the rest, whose two pieces are separated by a whole number of cells) is drawn as
    // F = hi 2^(K+1) + lo, hi uniform below the region's cell count, and of lo only what decides
    // the cell (a carry across a cell edge, or which side of the window edge). Given the cell,
    // the position is uniform over the cell's covered fine range [r0, r1), so rounding up has
    // probability E[(2 rem + 1)/2^(K+2)] = (r0 + r1)/2^(K+2): one fair bit for a fully covered
    // cell, an exact dyadic coin for the (at most four) partially covered ones.
    template <class Bits>
    int64_t piecewise(Bits& bits, int64_t m) const {
        constexpr unsigned fine = K + 1;
        constexpr i128 cell = i128{1} << fine;
        const i128 P = static_cast<i128>(Z) + (i128{1} << G), Q = static_cast<i128>(Z) - (i128{1} << G);
        const i128 left = P * m - Q * (i128{1} << K);  // window start, fine units
        const i128 right = left + Q * cell;             // window end
        const i128 low_end = -static_cast<i128>(Z) * cell, high_end = -low_end;
        const i128 left_cell = left >> fine;                       // floor
        const uint64_t left_lo = static_cast<uint64_t>(left - left_cell * cell);  // in [0, 2^(K+1))
        // inside with probability (Z + 2^G)/(2Z), exactly (16 random bits at a time)
        const bool inside = exact::bernoulli_rational<Bits, uint64_t>(bits, static_cast<uint64_t>(P), 2 * Z);
        i128 c;  // the cell (z0 = floor of the fine position / 2^(K+1))
        if (inside) {
            // X = left + hi 2^(K+1) + lo: cell left_cell + hi, plus 1 when left_lo + lo >= 2^(K+1)
            const i128 hi = static_cast<i128>(exact::uniform_below(bits, static_cast<uint64_t>(Q)));
            const bool carry = left_lo && exact::bernoulli_rational<Bits, uint64_t>(bits, left_lo, uint64_t{1} << fine);
            c = left_cell + hi + (carry ? 1 : 0);
        } else {
            // F in [0, P 2^(K+1)): X = low_end + F below the window (F < before), else
            // X = low_end + F + Q 2^(K+1) (the window skipped: a whole number of cells)
            const i128 hi = static_cast<i128>(exact::uniform_below(bits, static_cast<uint64_t>(P)));
            const i128 before = left - low_end;
            const i128 before_cell = before >> fine;
            const uint64_t before_lo = static_cast<uint64_t>(before - before_cell * cell);
            bool after;
            if (hi != before_cell) {
                after = hi > before_cell;
            } else {  // F < before iff lo < before_lo: probability before_lo / 2^(K+1)
                after = !(before_lo && exact::bernoulli_rational<Bits, uint64_t>(bits, before_lo, uint64_t{1} << fine));
            }
            c = hi - static_cast<i128>(Z) + (after ? Q : 0);
        }
        // the covered fine range [r0, r1) of cell c within the chosen region
        const i128 c0 = c * cell, c1 = c0 + cell;
        i128 r0 = 0, r1 = cell;
        if (inside) {
            if (left > c0) r0 = left - c0;
            if (right < c1) r1 = right - c0;
        } else {
            if (c0 < left && left < c1) r1 = left - c0;      // the piece below the window ends here
            if (c0 < right && right < c1) r0 = right - c0;   // the piece above it starts here
            if (low_end > c0) r0 = low_end - c0;
            if (high_end < c1) r1 = high_end - c0;
        }
        bool up;
        if (r0 == 0 && r1 == cell) {
            up = bits.bit();
        } else {
            up = bits.bits(fine + 1) < static_cast<uint64_t>(r0 + r1);  // P = (r0 + r1)/2^(K+2)
        }
        return static_cast<int64_t>(c) + (up ? 1 : 0);
    }
};

// ---------------------------------------------------------------- the client loop
// values: n k doubles (row-major, finite: checked by the caller); k >= 1. Outputs (each may be
// null when the method does not use it): coords (n, when k > 1), bits (ceil(n/8) packed:
// Duchi's bit; hybrid: the report's kind, 1 = Duchi), ints (n: Piecewise's z; hybrid: z, or
// Duchi's bit). Chunk c reads secret stream c: the output does not depend on `threads`.
template <int M, bool Multi, class Bits>
[[gnu::flatten]] void mean_chunk_of(const MeanMechanism& mm, Bits& bits, const double* values, uint64_t k,
                                    int64_t* coords, uint8_t* packed, int64_t* ints, size_t begin, size_t end) {
    Bits local = bits;  // in registers; the rare steps run on `bits` (BitReader::lend)
    for (size_t i = begin; i < end; i += 8) {
        const size_t stop = std::min<size_t>(end - i, 8);
        unsigned byte = 0;
        for (size_t b = 0; b < stop; ++b) {
            const size_t u = i + b;
            uint64_t j = 0;
            if constexpr (Multi) {
                j = exact::uniform_below(local, k);
                coords[u] = static_cast<int64_t>(j);
            }
            const int64_t m = mm.grid.map_fast(local, bits, values[u * k + j]);
            if constexpr (M == MeanMechanism::kDuchi) {
                byte |= (mm.duchi_bit_fast(local, bits, m) ? 1u : 0u) << b;
            } else if constexpr (M == MeanMechanism::kPiecewise) {
                ints[u] = mm.piecewise(local, m);
            } else {
                if (mm.hybrid_uses_duchi_fast(local, bits)) {
                    byte |= 1u << b;
                    ints[u] = mm.duchi_bit_fast(local, bits, m) ? 1 : 0;
                } else {
                    ints[u] = mm.piecewise(local, m);
                }
            }
        }
        if constexpr (M != MeanMechanism::kPiecewise) packed[i / 8] = static_cast<uint8_t>(byte);
    }
    bits = local;
}

// The client loop as it was before the fast grid (grid.map, duchi_bit, hybrid_uses_duchi on the
// shared reader): the reference the tests compare mean_chunk's reports with, bit for bit.
template <class Bits>
void mean_chunk_reference(const MeanMechanism& mm, Bits& bits, const double* values, uint64_t k, int64_t* coords,
                          uint8_t* packed, int64_t* ints, size_t begin, size_t end) {
    for (size_t i = begin; i < end; i += 8) {
        const size_t stop = std::min<size_t>(end - i, 8);
        unsigned byte = 0;
        for (size_t b = 0; b < stop; ++b) {
            const size_t u = i + b;
            uint64_t j = 0;
            if (k > 1) {
                j = exact::uniform_below(bits, k);
                coords[u] = static_cast<int64_t>(j);
            }
            const int64_t m = mm.grid.map(bits, values[u * k + j]);
            if (mm.method == MeanMechanism::kDuchi) {
                byte |= (mm.duchi_bit(bits, m) ? 1u : 0u) << b;
            } else if (mm.method == MeanMechanism::kPiecewise) {
                ints[u] = mm.piecewise(bits, m);
            } else if (mm.hybrid_uses_duchi(bits)) {
                byte |= 1u << b;
                ints[u] = mm.duchi_bit(bits, m) ? 1 : 0;
            } else {
                ints[u] = mm.piecewise(bits, m);
            }
        }
        if (mm.method != MeanMechanism::kPiecewise) packed[i / 8] = static_cast<uint8_t>(byte);
    }
}

template <class Bits>
void mean_chunk(const MeanMechanism& mm, Bits& bits, const double* values, uint64_t k, int64_t* coords,
                uint8_t* packed, int64_t* ints, size_t begin, size_t end) {
    const bool multi = k > 1;
    switch (mm.method) {
        case MeanMechanism::kDuchi:
            return multi ? mean_chunk_of<MeanMechanism::kDuchi, true>(mm, bits, values, k, coords, packed, ints, begin, end)
                         : mean_chunk_of<MeanMechanism::kDuchi, false>(mm, bits, values, k, coords, packed, ints, begin, end);
        case MeanMechanism::kPiecewise:
            return multi ? mean_chunk_of<MeanMechanism::kPiecewise, true>(mm, bits, values, k, coords, packed, ints, begin, end)
                         : mean_chunk_of<MeanMechanism::kPiecewise, false>(mm, bits, values, k, coords, packed, ints, begin, end);
        case MeanMechanism::kHybrid:
            return multi ? mean_chunk_of<MeanMechanism::kHybrid, true>(mm, bits, values, k, coords, packed, ints, begin, end)
                         : mean_chunk_of<MeanMechanism::kHybrid, false>(mm, bits, values, k, coords, packed, ints, begin, end);
    }
}

inline void check_finite(const double* values, size_t count) {
    bool ok = true;
    for (size_t i = 0; i < count; ++i) ok &= std::isfinite(values[i]);
    if (!ok) throw std::invalid_argument("values must be finite: NaN and infinity are refused");
}

template <class Family>
void mean_privatize(Family& family, const MeanMechanism& mm, const double* values, size_t n, uint64_t k,
                    int64_t* coords, uint8_t* packed, int64_t* ints, unsigned threads, bool reference = false) {
    check_finite(values, n * k);  // before any randomness
    random::for_each_chunk<MeanMechanism::kReportsPerStream>(
        family, n, threads, [&mm, values, k, coords, packed, ints, reference](auto& bits, size_t begin, size_t end) {
            if (reference)
                mean_chunk_reference(mm, bits, values, k, coords, packed, ints, begin, end);
            else
                mean_chunk(mm, bits, values, k, coords, packed, ints, begin, end);
        });
}

// ---------------------------------------------------------------- the server
// A batch's exact sums (MeanScratch) and the kernels that add them in 64-bit lanes live in
// mean_server_lanes.hpp, included here at namespace scope (it includes only what it needs).
}  // namespace dpnoise::ldp
#include "dpnoise/ldp/mean_server_lanes.hpp"
namespace dpnoise::ldp {

// Per coordinate: users, duchi_users, duchi_ones (int64), pm_sum (128-bit two's complement, 2
// uint64 limbs little-endian), pm_sum_squares (192-bit, 3 limbs). A batch is checked whole and
// summed into scratch first; the state changes only when the batch is valid.
struct MeanState {
    int64_t* users;
    int64_t* duchi_users;
    int64_t* duchi_ones;
    uint64_t* pm_sum;          // k x 2
    uint64_t* pm_sum_squares;  // k x 3
    uint64_t k;
};

inline void add_limbs(uint64_t* dst, const uint64_t* src, int limbs) {
    unsigned carry = 0;
    for (int i = 0; i < limbs; ++i) {
        const u128 t = static_cast<u128>(dst[i]) + src[i] + carry;
        dst[i] = static_cast<uint64_t>(t);
        carry = static_cast<unsigned>(t >> 64);
    }
}

inline void commit(const MeanState& st, uint64_t j, const MeanScratch& s) {
    st.users[j] += s.users;
    st.duchi_users[j] += s.duchi_users;
    st.duchi_ones[j] += s.duchi_ones;
    const uint64_t sum[2] = {static_cast<uint64_t>(s.sum), static_cast<uint64_t>(s.sum >> 64)};
    add_limbs(st.pm_sum + 2 * j, sum, 2);
    const uint64_t sq[3] = {static_cast<uint64_t>(s.sq_lo), static_cast<uint64_t>(s.sq_lo >> 64), s.sq_hi};
    add_limbs(st.pm_sum_squares + 3 * j, sq, 3);
}

// One pass over a batch into per-coordinate scratch sums, specialised by method and by whether
// there are coordinates; `ok` collects every check (the caller commits only when it holds).
template <int M, bool Multi>
inline void mean_sum(MeanScratch* scratch, uint64_t k, int64_t Z, const int64_t* coords, const uint8_t* packed,
                     const int64_t* ints, size_t n, bool& coords_ok, bool& values_ok) {
    bool cok = true, vok = true;
    if constexpr (M == MeanMechanism::kDuchi && !Multi) {
        int64_t ones = 0;
        const size_t bytes = (n + 7) / 8;
        size_t i = 0;
        for (; i + 8 <= bytes; i += 8) {
            uint64_t w;
            std::memcpy(&w, packed + i, 8);
            ones += __builtin_popcountll(w);
        }
        for (; i < bytes; ++i) ones += __builtin_popcount(packed[i]);
        scratch[0].users += static_cast<int64_t>(n);
        scratch[0].duchi_users += static_cast<int64_t>(n);
        scratch[0].duchi_ones += ones;
        return;
    } else {
        if constexpr (!Multi && M != MeanMechanism::kDuchi) {
            if (static_cast<uint64_t>(Z) <= kLaneMaxZ) {
                MeanScratch local;
                values_ok = lane_batch_dispatch(ints, M == MeanMechanism::kHybrid ? packed : nullptr, n,
                                                static_cast<uint64_t>(Z), local);
                scratch[0] = local;
                return;
            }
        }
        MeanScratch local;
        for (size_t i = 0; i < n; ++i) {
            MeanScratch* s = &local;
            if constexpr (Multi) {
                const int64_t c = coords[i];
                const bool in = c >= 0 && static_cast<uint64_t>(c) < k;
                cok &= in;
                s = scratch + (in ? c : 0);
            }
            ++s->users;
            const unsigned bit = M != MeanMechanism::kPiecewise ? (packed[i / 8] >> (i % 8)) & 1u : 0u;
            if (M == MeanMechanism::kDuchi) {
                ++s->duchi_users;
                s->duchi_ones += bit;
            } else if (M == MeanMechanism::kHybrid) {  // branch-free: the kind is a coin flip
                const int64_t v = ints[i];
                const int64_t duchi = bit;
                const bool z_in = v >= -Z && v <= Z;
                vok &= duchi ? (v & ~int64_t{1}) == 0 : z_in;
                s->duchi_users += duchi;
                s->duchi_ones += duchi & v;
                s->add_z((duchi || !z_in) ? 0 : v);
            } else {
                const int64_t z = ints[i];
                const bool in = z >= -Z && z <= Z;
                vok &= in;
                s->add_z(in ? z : 0);
            }
        }
        if constexpr (!Multi) {
            scratch[0] = local;
        }
    }
    coords_ok = cok;
    values_ok = vok;
}

// coords: n int64 in [0, k) or null (k = 1); packed: ceil(n/8) bytes or null; ints: n or null.
inline void mean_accumulate(const MeanState& st, MeanMechanism::Method method, int64_t Z, const int64_t* coords,
                            const uint8_t* packed, const int64_t* ints, size_t n) {
    const uint64_t k = st.k;
    if (k > 1 && !coords) throw std::invalid_argument("mean reports: 'coordinates' missing");
    if (method != MeanMechanism::kPiecewise && !packed) throw std::invalid_argument("mean reports: bits missing");
    if (method != MeanMechanism::kDuchi && !ints) throw std::invalid_argument("mean reports: 'values' missing");
    if (packed && n % 8 && (packed[n / 8] >> (n % 8)) != 0)
        throw std::invalid_argument("mean reports: padding bits after the last report must be 0");
    std::vector<MeanScratch> scratch(k);
    bool coords_ok = true, values_ok = true;
    auto run = [&](auto m_tag) {
        constexpr int M = decltype(m_tag)::value;
        if (k > 1)
            mean_sum<M, true>(scratch.data(), k, Z, coords, packed, ints, n, coords_ok, values_ok);
        else
            mean_sum<M, false>(scratch.data(), k, Z, coords, packed, ints, n, coords_ok, values_ok);
    };
    switch (method) {
        case MeanMechanism::kDuchi: run(std::integral_constant<int, MeanMechanism::kDuchi>{}); break;
        case MeanMechanism::kPiecewise: run(std::integral_constant<int, MeanMechanism::kPiecewise>{}); break;
        case MeanMechanism::kHybrid: run(std::integral_constant<int, MeanMechanism::kHybrid>{}); break;
    }
    if (!coords_ok) throw std::invalid_argument("mean reports: 'coordinates' must be in [0, dimensions)");
    if (!values_ok) throw std::invalid_argument("mean reports: 'values' out of the report range");
    for (uint64_t j = 0; j < k; ++j) commit(st, j, scratch[j]);
}

}  // namespace dpnoise::ldp
