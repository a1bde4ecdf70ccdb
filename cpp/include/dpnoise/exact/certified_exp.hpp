// dpnoise/exact/certified_exp.hpp -- certified enclosures of e^{-x} and e^{+x} for rational x,
// at any precision, in integer arithmetic only.
//
// A value v is represented at precision L (64-bit limbs) by integers [lo, hi] with
//   lo / 2^(64L) <= v <= hi / 2^(64L).
// Every operation rounds outward (lower ends down, upper ends up), so the enclosure is always
// valid; its width shrinks as L grows. These enclosures let the table samplers decide a
// comparison "uniform real R < e^{-x}" from R's leading bits in the common case and, in the rare
// undecided case, refine R and the constant together until the comparison is decided -- an
// exact Bernoulli(e^{-x}) with no floating point anywhere (lazy_comparison.hpp).
//
// e^{-x}: write x = q + r/D (q integer, 0 <= r < D); e^{-r/D} by its alternating Taylor series
// (terms decrease because r/D < 1, so the truncation error is at most the first omitted term),
// e^{-q} = (e^{-1})^q by repeated squaring of the enclosure of e^{-1}.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "dpnoise/exact/wide_uint.hpp"

namespace dpnoise::exact {

// ---------------------------------------------------------------- arbitrary-size unsigned ints
// Little-endian 64-bit limbs, no leading zero limbs (zero is the empty vector).
struct BigUint {
    std::vector<uint64_t> limb;

    BigUint() = default;
    explicit BigUint(u128 x) {
        while (x) { limb.push_back(static_cast<uint64_t>(x)); x >>= 64; }
    }
    bool is_zero() const { return limb.empty(); }
    void trim() { while (!limb.empty() && limb.back() == 0) limb.pop_back(); }
    size_t bit_length() const {
        if (limb.empty()) return 0;
        return 64 * (limb.size() - 1) + (64 - static_cast<size_t>(__builtin_clzll(limb.back())));
    }
    bool bit(size_t i) const {
        const size_t w = i / 64;
        return w < limb.size() && ((limb[w] >> (i % 64)) & 1u);
    }
};

inline int compare(const BigUint& a, const BigUint& b) {
    if (a.limb.size() != b.limb.size()) return a.limb.size() < b.limb.size() ? -1 : 1;
    for (size_t i = a.limb.size(); i-- > 0;)
        if (a.limb[i] != b.limb[i]) return a.limb[i] < b.limb[i] ? -1 : 1;
    return 0;
}

inline BigUint add(const BigUint& a, const BigUint& b) {
    BigUint r;
    const size_t n = std::max(a.limb.size(), b.limb.size());
    r.limb.resize(n + 1, 0);
    uint64_t carry = 0;
    for (size_t i = 0; i < n; ++i) {
        const u128 s = static_cast<u128>(i < a.limb.size() ? a.limb[i] : 0) + (i < b.limb.size() ? b.limb[i] : 0) + carry;
        r.limb[i] = static_cast<uint64_t>(s);
        carry = static_cast<uint64_t>(s >> 64);
    }
    r.limb[n] = carry;
    r.trim();
    return r;
}

inline BigUint add_small(const BigUint& a, uint64_t k) { return add(a, BigUint(static_cast<u128>(k))); }

// a - b, requires a >= b.
inline BigUint sub(const BigUint& a, const BigUint& b) {
    if (compare(a, b) < 0) throw std::logic_error("BigUint subtraction would be negative");
    BigUint r;
    r.limb.resize(a.limb.size(), 0);
    uint64_t borrow = 0;
    for (size_t i = 0; i < a.limb.size(); ++i) {
        const uint64_t bi = i < b.limb.size() ? b.limb[i] : 0;
        const u128 d = static_cast<u128>(a.limb[i]) - bi - borrow;
        r.limb[i] = static_cast<uint64_t>(d);
        borrow = static_cast<uint64_t>(d >> 64) ? 1 : 0;
    }
    r.trim();
    return r;
}

inline BigUint mul(const BigUint& a, const BigUint& b) {
    if (a.is_zero() || b.is_zero()) return BigUint();
    BigUint r;
    r.limb.assign(a.limb.size() + b.limb.size(), 0);
    for (size_t i = 0; i < a.limb.size(); ++i) {
        uint64_t carry = 0;
        for (size_t j = 0; j < b.limb.size(); ++j) {
            const u128 t = static_cast<u128>(a.limb[i]) * b.limb[j] + r.limb[i + j] + carry;
            r.limb[i + j] = static_cast<uint64_t>(t);
            carry = static_cast<uint64_t>(t >> 64);
        }
        size_t k = i + b.limb.size();
        while (carry) {
            const u128 t = static_cast<u128>(r.limb[k]) + carry;
            r.limb[k] = static_cast<uint64_t>(t);
            carry = static_cast<uint64_t>(t >> 64);
            ++k;
        }
    }
    r.trim();
    return r;
}

inline BigUint shift_left(const BigUint& a, size_t bits) {
    if (a.is_zero()) return a;
    BigUint r;
    const size_t w = bits / 64, s = bits % 64;
    r.limb.assign(a.limb.size() + w + 1, 0);
    for (size_t i = 0; i < a.limb.size(); ++i) {
        r.limb[i + w] |= a.limb[i] << s;
        if (s) r.limb[i + w + 1] |= a.limb[i] >> (64 - s);
    }
    r.trim();
    return r;
}

// floor(a / 2^bits); *lost is set when nonzero bits were dropped.
inline BigUint shift_right(const BigUint& a, size_t bits, bool* lost = nullptr) {
    const size_t w = bits / 64, s = bits % 64;
    bool dropped = false;
    for (size_t i = 0; i < std::min(w, a.limb.size()); ++i) dropped = dropped || a.limb[i] != 0;
    if (w < a.limb.size() && s) dropped = dropped || (a.limb[w] & ((uint64_t{1} << s) - 1)) != 0;
    BigUint r;
    if (w < a.limb.size()) {
        r.limb.assign(a.limb.size() - w, 0);
        for (size_t i = w; i < a.limb.size(); ++i) {
            r.limb[i - w] = a.limb[i] >> s;
            if (s && i + 1 < a.limb.size()) r.limb[i - w] |= a.limb[i + 1] << (64 - s);
        }
        r.trim();
    }
    if (lost) *lost = dropped;
    return r;
}

// (quotient, remainder) of a / d for a single-limb divisor d > 0.
inline std::pair<BigUint, uint64_t> divmod_small(const BigUint& a, uint64_t d) {
    if (d == 0) throw std::domain_error("division by zero");
    BigUint q;
    q.limb.assign(a.limb.size(), 0);
    u128 rem = 0;
    for (size_t i = a.limb.size(); i-- > 0;) {
        const u128 cur = (rem << 64) | a.limb[i];
        q.limb[i] = static_cast<uint64_t>(cur / d);
        rem = cur % d;
    }
    q.trim();
    return {q, static_cast<uint64_t>(rem)};
}

// (quotient, remainder) of a / b for any b > 0 (shift-and-subtract; used off the hot path).
inline std::pair<BigUint, BigUint> divmod(const BigUint& a, const BigUint& b) {
    if (b.is_zero()) throw std::domain_error("division by zero");
    if (b.limb.size() == 1) {
        auto [q, r] = divmod_small(a, b.limb[0]);
        return {q, BigUint(static_cast<u128>(r))};
    }
    BigUint q, r;
    const size_t n = a.bit_length();
    q.limb.assign((n + 63) / 64 + 1, 0);
    for (size_t i = n; i-- > 0;) {
        r = shift_left(r, 1);
        if (a.bit(i)) r = add_small(r, 1);
        if (compare(r, b) >= 0) {
            r = sub(r, b);
            q.limb[i / 64] |= uint64_t{1} << (i % 64);
        }
    }
    q.trim();
    return {q, r};
}

// ---------------------------------------------------------------- enclosures at scale 2^(64L)
struct Enclosure {
    BigUint lo, hi;  // lo / 2^(64L) <= value <= hi / 2^(64L)
};

inline BigUint scale_one(int L) { return shift_left(BigUint(1), static_cast<size_t>(64 * L)); }

// [floor(a.lo b.lo / S), ceil(a.hi b.hi / S)] for non-negative enclosures.
inline Enclosure enclosure_mul(const Enclosure& a, const Enclosure& b, int L) {
    Enclosure r;
    r.lo = shift_right(mul(a.lo, b.lo), static_cast<size_t>(64 * L));
    bool lost = false;
    r.hi = shift_right(mul(a.hi, b.hi), static_cast<size_t>(64 * L), &lost);
    if (lost) r.hi = add_small(r.hi, 1);
    return r;
}

inline Enclosure enclosure_pow(Enclosure base, u128 e, int L) {
    Enclosure result{scale_one(L), scale_one(L)};
    while (e) {
        if (e & 1) result = enclosure_mul(result, base, L);
        e >>= 1;
        if (e) base = enclosure_mul(base, base, L);
    }
    return result;
}

// e^{-p} (negative) or e^{+p} for a point p = x / S in [0, 1], by Taylor series.
inline Enclosure exp_point(const BigUint& x, bool negative, int L) {
    const BigUint S = scale_one(L);
    // terms T_k = p^k / k!, enclosed in [tlo, thi] (scaled by S)
    BigUint tlo = S, thi = S;
    BigUint pos_lo = S, pos_hi = S, neg_lo, neg_hi;  // sums of even (pos) and odd (neg) terms
    for (uint64_t k = 1;; ++k) {
        // T_k = T_{k-1} * p / k
        tlo = divmod_small(shift_right(mul(tlo, x), static_cast<size_t>(64 * L)), k).first;
        bool lost = false;
        BigUint prod = shift_right(mul(thi, x), static_cast<size_t>(64 * L), &lost);
        if (lost) prod = add_small(prod, 1);
        auto [qh, rh] = divmod_small(prod, k);
        thi = rh ? add_small(qh, 1) : qh;
        if (thi.limb.size() <= 1 && (thi.is_zero() || thi.limb[0] <= 1)) {
            // remaining terms sum to at most 2 T_k <= 2 units; widen both ends by that.
            Enclosure r;
            const BigUint two(2);
            if (negative) {
                // value in [pos_lo - neg_hi - 2, pos_hi - neg_lo + 2]
                const BigUint low_sub = add(neg_hi, two);
                r.lo = compare(pos_lo, low_sub) > 0 ? sub(pos_lo, low_sub) : BigUint();
                r.hi = add(sub(pos_hi, neg_lo), two);
            } else {
                r.lo = pos_lo;
                r.hi = add(pos_hi, two);
            }
            return r;
        }
        if (!negative || (k % 2 == 0)) {
            pos_lo = add(pos_lo, tlo);
            pos_hi = add(pos_hi, thi);
        } else {
            neg_lo = add(neg_lo, tlo);
            neg_hi = add(neg_hi, thi);
        }
    }
}

// Enclosure of e^{-N/D} (negative = true) or e^{+N/D} at precision L limbs.
inline Enclosure exp_rational(const BigUint& N, const BigUint& D, bool negative, int L) {
    if (D.is_zero()) throw std::domain_error("exp_rational: zero denominator");
    auto [q, r] = divmod(N, D);
    const BigUint S = scale_one(L);
    // p = r / D in [0, 1): enclose by floor and ceil of r S / D, evaluate at both ends
    auto [plo, prem] = divmod(mul(r, S), D);
    const BigUint phi = prem.is_zero() ? plo : add_small(plo, 1);
    const Enclosure at_lo = exp_point(plo, negative, L);
    const Enclosure at_hi = exp_point(phi, negative, L);
    // e^{-p} decreases in p, e^{+p} increases
    Enclosure frac = negative ? Enclosure{at_hi.lo, at_lo.hi} : Enclosure{at_lo.lo, at_hi.hi};
    if (q.is_zero()) return frac;
    if (q.limb.size() > 2) throw std::overflow_error("exp_rational: integer part beyond 2^128");
    const u128 qi = q.limb.size() == 1 ? q.limb[0] : (static_cast<u128>(q.limb[1]) << 64) | q.limb[0];
    if (!negative && qi > 100000) throw std::overflow_error("exp_rational: e^{+x} too large");
    const Enclosure e1 = exp_point(S, negative, L);  // e^{-1} or e^{+1}
    return enclosure_mul(frac, enclosure_pow(e1, qi, L), L);
}

}  // namespace dpnoise::exact
