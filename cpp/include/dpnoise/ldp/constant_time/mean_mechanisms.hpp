// dpnoise/ldp/constant_time/mean_mechanisms.hpp -- the numeric mean oracles' randomizers
// (ldp/mean_mechanisms.hpp: Duchi / 1BitMean, Piecewise, hybrid; one sampled coordinate of a
// vector) in constant time: a fixed number of random words per report, every decision a
// branch-free comparison of uniform words against thresholds, every selection by masks.
//
// Proof and law: docs/security.md, "Constant-time mean oracles". In short, per report:
//  * input grid: v clamped by minsd/maxsd, split into sign, exponent and mantissa by integer
//    operations, shifted (by a secret amount, with masks) into X = v 2^F on a public fixed-point
//    grid (F = 93 - E, |low|, |high| < 2^E) with randomized rounding of the bits below it (coin:
//    a 64-bit word against the 64 bits below the unit); then m = 2 q - 2^32 with
//    q = floor((X - Lo) 2^32 / W) (a public reciprocal, two masked corrections) plus a coin
//    [floor(U W / 2^128) < r] (U 128-bit) of probability ceil(r 2^128 / W) / 2^128 for
//    r / W. Both roundings are unbiased up to 2^-64 units of 2^-F (bias < 2^-100 of the range).
//  * Duchi's bit: [U < T(m)], T(m) = 2^127 + m kappa 2^95 from a 192-bit certified kappa: within
//    2 units of 2^-128 of 1/2 + m kappa / 2^33 (Duchi et al. 2018, §4.2.3).
//  * Piecewise (Wang et al. ICDE 2019, Alg. 2, on ldp::MeanMechanism's dyadic grid): the inside
//    coin [U < T_in] (T_in certified for (Z + 2^G) / (2Z), width <= 1), the cell index from one
//    192-bit word triple by multiply-shift (Lemire 2019 without rejection: TV < 2^-130 from
//    uniform), the position within the cell from one word, the rounding coin from the (K+2)
//    low bits of one word against r0 + r1: the same construction as MeanMechanism::piecewise,
//    with its branches replaced by masks.
//  * hybrid: both reports computed, selected by the coin [U < T_d], T_d certified for e^{-γ/2}.
//  * vector: the coordinate j by multiply-shift over k, its value selected by a scan of all k.
// Total variation to the exact randomizer's law, per report < 2^-118 (sum of the above); the
// privacy statement counts 2^-64 per report (_release/constant_time.py).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "dpnoise/exact/constant_time/certified_thresholds.hpp"
#include "dpnoise/exact/constant_time/ct_ops.hpp"
#include "dpnoise/exact/constant_time/randomized_response.hpp"
#include "dpnoise/ldp/mean_mechanisms.hpp"
#include "dpnoise/random/stream_fill.hpp"
#include "dpnoise/simd.hpp"  // DPNOISE_X86_SIMD: minsd/maxsd (SSE2, baseline x86-64)

namespace dpnoise::exact::ct {

using i128 = __int128;

inline uint64_t hi64(u128 x) { return static_cast<uint64_t>(x >> 64); }
inline uint64_t lo64(u128 x) { return static_cast<uint64_t>(x); }
inline u128 mask128(uint64_t bit) {
    const uint64_t m = mask_of(bit);
    return (static_cast<u128>(m) << 64) | m;
}
inline uint64_t lt_u128(u128 a, u128 b) { return lt128(hi64(a), lo64(a), hi64(b), lo64(b)); }
inline uint64_t lt_i128(i128 a, i128 b) {  // signed: flip the top bits
    const u128 top = static_cast<u128>(1) << 127;
    return lt_u128(static_cast<u128>(a) ^ top, static_cast<u128>(b) ^ top);
}
inline i128 select_i128(uint64_t bit, i128 a, i128 b) {  // bit ? a : b
    const u128 m = mask128(bit);
    return static_cast<i128>((static_cast<u128>(a) & m) | (static_cast<u128>(b) & ~m));
}
inline u128 read128(uint64_t h, uint64_t l) { return (static_cast<u128>(h) << 64) | l; }

// floor(U W / 2^128) for 128-bit U and W: the high half of the 256-bit product (four 64x64
// multiplications and carries, no branch).
inline u128 mul_high128(u128 U, u128 W) {
    const u128 ll = static_cast<u128>(lo64(U)) * lo64(W), lh = static_cast<u128>(lo64(U)) * hi64(W);
    const u128 hl = static_cast<u128>(hi64(U)) * lo64(W), hh = static_cast<u128>(hi64(U)) * hi64(W);
    const u128 mid = (ll >> 64) + lo64(lh) + lo64(hl);  // < 3 2^64
    return hh + (lh >> 64) + (hl >> 64) + (mid >> 64);
}

// min/max of doubles by minsd/maxsd (no branch; NaN is excluded by the caller's check).
inline double clamp_double_ct(double v, double low, double high) {
#ifdef DPNOISE_X86_SIMD
    __m128d s = _mm_max_sd(_mm_set_sd(v), _mm_set_sd(low));
    s = _mm_min_sd(s, _mm_set_sd(high));
    return _mm_cvtsd_f64(s);
#else
    // maxsd/minsd's own rule (the second operand unless the first is greater / less), so that the
    // result is the same bits on every CPU (std::fmin/fmax give -0.0 for (-0.0, +0.0) on aarch64,
    // fminnm, where minsd gives +0.0): the compare as a 0/1 word through the value barrier, then
    // a select by masks, so no branch. No constant-time claim off x86-64 (docs/security.md).
    const auto select = [](uint64_t bit, double a, double b) {  // bit ? a : b
        uint64_t x, y;
        std::memcpy(&x, &a, sizeof x);
        std::memcpy(&y, &b, sizeof y);
        const uint64_t m = mask_of(value_barrier(bit)), r = (x & m) | (y & ~m);
        double out;
        std::memcpy(&out, &r, sizeof out);
        return out;
    };
    const double s = select(static_cast<uint64_t>(v > low), v, low);
    return select(static_cast<uint64_t>(s < high), s, high);
#endif
}

// The input grid (numeric_grid.hpp's law up to the bias stated above), branch-free.
struct InputGridCT {
    double low = 0, high = 1;
    int F = 0;     // X = v 2^F on the fixed-point grid
    i128 Lo = 0;   // low 2^F (exact)
    u128 W = 0;    // (high - low) 2^F < 2^94
    unsigned shift = 0;  // bitlen(W) - 1
    uint64_t R = 0;      // floor(2^(bitlen(W) + 33) / W), in (2^33, 2^34]

    InputGridCT() = default;
    InputGridCT(double low_, double high_) : low(low_), high(high_) {
        const ldp::InputGrid check(low_, high_);  // finite, low < high, finite width
        int E = 0;
        (void)std::frexp(std::fmax(std::fabs(low), std::fabs(high)), &E);  // max |bound| < 2^E
        F = 93 - E;
        const i128 hi = fixed(high);
        Lo = fixed(low);
        W = static_cast<u128>(hi - Lo);
        const unsigned bits = 128u - static_cast<unsigned>(hi64(W) ? __builtin_clzll(hi64(W)) : 64 + __builtin_clzll(lo64(W)));
        shift = bits - 1;
        R = static_cast<uint64_t>((static_cast<u128>(1) << (bits + 33)) / W);
    }

    // q = floor(N / W) and r = N - q W for N = A 2^32, A in [0, W] (so q <= 2^32), without a
    // division on the secret: the estimate ((N >> shift) R) >> 34 lies in [q - 2, q] (Granlund &
    // Montgomery 1994's reciprocal multiplication; bounds in docs/security.md), then two masked
    // corrections.
    void divide(u128 A, u128& q, u128& r) const {
        const u128 N = A << 32;  // < 2^126
        q = (static_cast<u128>(static_cast<uint64_t>(N >> shift)) * R) >> 34;
        r = N - q * W;  // in [0, 3W)
        for (int i = 0; i < 2; ++i) {  // (r, W < 2^96: r - W has its top bit set exactly when r < W)
            const uint64_t ge = 1u ^ value_barrier(hi64(r - W) >> 63);
            r -= W & mask128(ge);
            q += ge;
        }
    }

    // a bound times 2^F, which must be an integer (public: refused otherwise)
    i128 fixed(double b) const {
        const ldp::DyadicDouble d = ldp::split_double(b);
        if (!d.mantissa) return 0;
        if (d.exponent + F < 0)
            throw std::invalid_argument(
                "constant_time=True needs bounds whose binary digits lie within 93 bits below the larger bound's "
                "magnitude (e.g. not (1e-30, 1)); shift or round the bounds, or use constant_time=False");
        const i128 mag = static_cast<i128>(static_cast<u128>(d.mantissa) << (d.exponent + F));
        return d.negative ? -mag : mag;
    }

    // m in [-2^32, 2^32]: 3 words.
    template <class Bits>
    int64_t map(Bits& bits, double value) const {
        const double v = clamp_double_ct(value, low, high);
        uint64_t b;
        std::memcpy(&b, &v, sizeof b);
        const uint64_t neg = b >> 63, eb = (b >> 52) & 0x7ff;
        const uint64_t normal = 1u ^ eq64(eb, 0);
        const uint64_t M = (b & ((uint64_t{1} << 52) - 1)) | (normal << 52);
        // v = M 2^(max(eb, 1) - 1075); M's bit 0 sits at bit t of a 192-bit register whose top
        // 128 bits hold floor(|v| 2^F) and whose low word the next 64 bits (t + 53 <= 157)
        const int64_t t = static_cast<int64_t>(eb | (1u ^ normal)) - 1075 + F + 64;
        const uint64_t in = 1u ^ lt_signed(t, 0);  // t < 0: |v| < 2^-(F+64), contributes 0
        const uint64_t tc = static_cast<uint64_t>(t) & mask_of(in), Mi = M & mask_of(in);
        const uint64_t s = tc & 63, q = tc >> 6;
        const uint64_t lo = Mi << s, hi = (Mi >> 1) >> (63 - s);
        const uint64_t q0 = mask_of(eq64(q, 0)), q1 = mask_of(eq64(q, 1)), q2 = mask_of(eq64(q, 2));
        const uint64_t w0 = lo & q0, w1 = (hi & q0) | (lo & q1), w2 = (hi & q1) | (lo & q2);
        const uint64_t up = lt64(bits.word(), w0);  // P = w0 / 2^64: randomized rounding of |v| 2^F
        const u128 X = read128(w2, w1) + up;
        const u128 nm = mask128(neg);
        const i128 Xs = static_cast<i128>((X ^ nm) + (nm & 1));  // -X when negative
        u128 quotient, rem;
        divide(static_cast<u128>(Xs - Lo), quotient, rem);  // A = X - Lo in [0, W]
        const uint64_t uh = bits.word(), ul = bits.word();
        const uint64_t round = lt_u128(mul_high128(read128(uh, ul), W), rem);  // P = ceil(r 2^128 / W) / 2^128
        return static_cast<int64_t>(2 * (static_cast<uint64_t>(quotient) + round)) - ldp::InputGrid::kOne;
    }
};

// The tables of one mean configuration: ldp::MeanMechanism's public parameters as thresholds.
struct MeanMechanismCT {
    static constexpr unsigned K = ldp::InputGrid::kBits;
    int method = 0;
    bool mixes = false;
    InputGridCT grid;
    uint64_t kappa[3] = {0, 0, 0};  // floor(kappa_lo 2^192), little-endian words
    Threshold128 inside, duchi;     // P(inside) = (Z + 2^G)/(2Z); hybrid: P(Duchi) = e^{-γ/2}
    uint64_t Z = 0, P = 0, Q = 0;   // Piecewise: C~ = Z / 2^G, P = Z + 2^G, Q = Z - 2^G
    unsigned G = 0;

    explicit MeanMechanismCT(const ldp::MeanMechanism& mm)
        : method(mm.method), mixes(mm.hybrid_mixes), grid(mm.grid.low, mm.grid.high), Z(mm.Z), G(mm.G) {
        P = Z + (uint64_t{1} << G);
        Q = Z - (uint64_t{1} << G);
        // kappa = (S - e)/(S + e), e = e^{-γ} at scale S = 2^(64L): decreasing in e; its 192-bit
        // lower bound, certified within 2^64 units (the threshold then within 2 units of 2^-128)
        for (int L = 4;; ++L) {
            const BigUint S = scale_one(L);
            const Enclosure e = ldp::exp_minus(mm.gamma_num, mm.gamma_den, L);
            const BigUint lo = divmod(shift_left(ldp::MeanMechanism::sat_sub(S, e.hi), 192), add(S, e.hi)).first;
            const BigUint hi = divmod(shift_left(ldp::MeanMechanism::sat_sub(S, e.lo), 192), add(S, e.lo)).first;
            if (compare(sub(add_small(hi, 1), lo), shift_left(BigUint(1), 64)) <= 0) {
                for (size_t i = 0; i < 3 && i < lo.limb.size(); ++i) kappa[i] = lo.limb[i];
                break;
            }
            if (L > 12) throw std::logic_error("constant-time mean: kappa did not converge");
        }
        if (method != ldp::MeanMechanism::kDuchi) {
            const CertifiedThreshold t = certify(BigUint(P), BigUint(static_cast<u128>(2) * Z), BigUint(P),
                                                 BigUint(static_cast<u128>(2) * Z));
            if (t.width > kMaxWidth) throw std::logic_error("constant-time mean: inside threshold");
            inside = split(t.value);
        }
        if (mixes) {
            for (int L = 3;; ++L) {
                const Enclosure e = ldp::exp_minus(mm.gamma_num, mm.half_den, L);
                const BigUint S = scale_one(L);
                const CertifiedThreshold t = certify(e.lo, S, e.hi, S);
                duchi = split(t.value);
                if (t.width <= kMaxWidth) break;
                if (L > 8) throw std::logic_error("constant-time mean: hybrid threshold did not converge");
            }
        }
    }

    // 1 with probability 1/2 + m kappa / 2^(K+1) (within 2^-127): 2 words.
    template <class Bits>
    uint64_t duchi_bit(Bits& bits, int64_t m) const {
        const uint64_t neg = static_cast<uint64_t>(m) >> 63;
        const uint64_t am = static_cast<uint64_t>((m ^ -static_cast<int64_t>(neg)) + static_cast<int64_t>(neg));
        // |m| kappa_192 (<= 2^225: 4 words), then D = that >> 97 = |m| kappa 2^95 (< 2^127)
        const u128 p0 = static_cast<u128>(kappa[0]) * am, p1 = static_cast<u128>(kappa[1]) * am,
                   p2 = static_cast<u128>(kappa[2]) * am;
        const u128 s1 = (p0 >> 64) + lo64(p1);
        const u128 s2 = (p1 >> 64) + lo64(p2) + (s1 >> 64);
        const uint64_t w1 = lo64(s1), w2 = lo64(s2), w3 = hi64(p2) + hi64(s2);
        const u128 D = (read128(w3, w2) << 31) | (w1 >> 33);  // bits [97, 225)
        const u128 half = static_cast<u128>(1) << 127;
        const u128 T = half + ((D ^ mask128(neg)) + neg);  // 2^127 + D, or 2^127 - D
        const uint64_t uh = bits.word(), ul = bits.word();
        return lt_u128(read128(uh, ul), T);
    }

    // floor(W n / 2^192) for a 192-bit uniform W: 3 words (multiply-shift, TV n / 2^192).
    template <class Bits>
    static uint64_t uniform_below(Bits& bits, uint64_t n) {
        const uint64_t w2 = bits.word(), w1 = bits.word(), w0 = bits.word();
        return RandomizedResponseTable::scaled(w2, w1, w0, n);
    }

    // Piecewise's report z in [-Z, Z] for the input m: 7 words (MeanMechanism::piecewise with
    // masks for its branches; the cell index of both regions from one word triple, one of
    // which is selected).
    template <class Bits>
    int64_t piecewise(Bits& bits, int64_t m) const {
        constexpr unsigned fine = K + 1;
        constexpr i128 cell = i128{1} << fine;
        const i128 Pw = static_cast<i128>(P), Qw = static_cast<i128>(Q);
        const i128 left = Pw * m - Qw * (i128{1} << K);  // window start, fine units
        const i128 right = left + Qw * cell;
        const i128 low_end = -static_cast<i128>(Z) * cell;
        const i128 left_cell = left >> fine;
        const uint64_t left_lo = static_cast<uint64_t>(left - left_cell * cell);
        const uint64_t uh = bits.word(), ul = bits.word();
        const uint64_t in = below(uh, ul, inside);
        const uint64_t w2 = bits.word(), w1 = bits.word(), w0 = bits.word();
        const uint64_t lo = bits.word() & ((uint64_t{1} << fine) - 1);  // position within the cell
        // inside: cell left_cell + hi (+1 when left_lo + lo carries), hi uniform below Q
        const i128 hi_in = static_cast<i128>(RandomizedResponseTable::scaled(w2, w1, w0, Q));
        const uint64_t carry = 1u ^ lt64(lo + left_lo, uint64_t{1} << fine);
        const i128 c_in = left_cell + hi_in + static_cast<i128>(carry);
        // outside: F = hi 2^(K+1) + lo uniform below P 2^(K+1); below the window if F < before
        const i128 hi_out = static_cast<i128>(RandomizedResponseTable::scaled(w2, w1, w0, P));
        const i128 before = left - low_end;
        const uint64_t after = 1u ^ lt_i128(hi_out * cell + static_cast<i128>(lo), before);
        const i128 c_out = hi_out - static_cast<i128>(Z) + select_i128(after, Qw, 0);
        const i128 c = select_i128(in, c_in, c_out);
        // the covered fine range [r0, r1) of cell c within the chosen region (the range's ends
        // are whole cells: only the window's edges cut a cell)
        const i128 c0 = c * cell, c1 = c0 + cell;
        const i128 r0_in = select_i128(lt_i128(c0, left), left - c0, 0);
        const i128 r1_in = select_i128(lt_i128(right, c1), right - c0, cell);
        const uint64_t cuts_left = lt_i128(c0, left) & lt_i128(left, c1), cuts_right = lt_i128(c0, right) & lt_i128(right, c1);
        const i128 r1_out = select_i128(cuts_left, left - c0, cell), r0_out = select_i128(cuts_right, right - c0, 0);
        const i128 sum = select_i128(in, r0_in + r1_in, r0_out + r1_out);  // in [0, 2^(K+2)]
        const uint64_t up = lt64(bits.word() & ((uint64_t{1} << (fine + 1)) - 1), static_cast<uint64_t>(sum));
        return static_cast<int64_t>(c) + static_cast<int64_t>(up);
    }

    // hybrid: 1 (Duchi) with probability e^{-γ/2}, or always 1 when it does not mix: 2 words.
    template <class Bits>
    uint64_t uses_duchi(Bits& bits) const {
        if (!mixes) return 1;  // public
        const uint64_t uh = bits.word(), ul = bits.word();
        return below(uh, ul, duchi);
    }
};

// The value of coordinate j of row `row` (k doubles) by a scan of all k: no address depends on j.
inline double select_coordinate(const double* row, uint64_t k, uint64_t j) {
    uint64_t out = 0;
    for (uint64_t i = 0; i < k; ++i) {
        uint64_t b;
        std::memcpy(&b, row + i, sizeof b);
        out |= b & mask_of(eq64(i, j));
    }
    double v;
    std::memcpy(&v, &out, sizeof v);
    return v;
}

// One report (the outputs of ldp::mean_chunk_of for user u): its coordinate, its bit (Duchi's;
// hybrid: the kind) and its integer (Piecewise's z; hybrid: z or Duchi's bit).
struct MeanReportCT {
    int64_t coord = 0;
    uint64_t bit = 0;
    int64_t value = 0;
};

template <class Bits>
MeanReportCT mean_report_ct(const MeanMechanismCT& mm, Bits& bits, const double* row, uint64_t k) {
    MeanReportCT r;
    double v = row[0];
    if (k > 1) {  // k is public
        const uint64_t j = MeanMechanismCT::uniform_below(bits, k);
        r.coord = static_cast<int64_t>(j);
        v = select_coordinate(row, k, j);
    }
    const int64_t m = mm.grid.map(bits, v);
    if (mm.method == ldp::MeanMechanism::kDuchi) {  // the method is public
        r.bit = mm.duchi_bit(bits, m);
    } else if (mm.method == ldp::MeanMechanism::kPiecewise) {
        r.value = mm.piecewise(bits, m);
    } else {
        const uint64_t kind = mm.uses_duchi(bits);
        const uint64_t b = mm.duchi_bit(bits, m);
        const int64_t z = mm.piecewise(bits, m);
        r.bit = kind;
        r.value = static_cast<int64_t>((static_cast<uint64_t>(z) & ~mask_of(kind)) | (b & mask_of(kind)));
    }
    return r;
}

// The constant-time client loop (outputs as ldp::mean_privatize; chunk c reads stream c).
template <class Family>
void mean_privatize_constant_time(Family& family, const MeanMechanismCT& mm, const double* values, size_t n,
                                  uint64_t k, int64_t* coords, uint8_t* packed, int64_t* ints, unsigned threads) {
    ldp::check_finite(values, n * k);  // before any randomness (a public exception, as the default path)
    random::for_each_chunk<ldp::MeanMechanism::kReportsPerStream>(
        family, n, threads, [&mm, values, k, coords, packed, ints](auto& bits, size_t begin, size_t end) {
            for (size_t i = begin; i < end; i += 8) {
                const size_t stop = std::min<size_t>(end - i, 8);
                uint64_t byte = 0;
                for (size_t b = 0; b < stop; ++b) {
                    const MeanReportCT r = mean_report_ct(mm, bits, values + (i + b) * k, k);
                    if (coords) coords[i + b] = r.coord;
                    if (ints) ints[i + b] = r.value;
                    byte |= r.bit << b;
                }
                if (packed) packed[i / 8] = static_cast<uint8_t>(byte);
            }
        });
}

}  // namespace dpnoise::exact::ct
