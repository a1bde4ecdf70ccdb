// dpnoise/select/gap_coins.hpp -- the one random decision of the selection kernels:
// Bernoulli(exp(-gamma g)) for a rational gamma = a/b and an integer score gap g >= 0, exact.
//
// The coin compares a uniform real R with c = e^{-gamma g}: first R's leading 8 bits against
// 32-bit certified bounds [lo, hi] of c (R < c for sure when (r8 + 1) 2^24 <= lo, R >= c for sure
// when r8 2^24 >= hi), then R's next 24 bits, and only in the band where the bounds do not decide
// (probability about (hi - lo + 1) 2^-32) exactly, drawing more words of R while c is evaluated
// at increasing precision (exact/lazy_comparison.hpp). No floating point anywhere.
//
// Bounds of c come from two small certified tables, built once per call:
//   e^{-gamma j}       for j < 256            ("low"),
//   e^{-gamma 256 h}   for h <= H             ("high"),
// with c = high[g >> 8] low[g & 255], multiplied with outward rounding. H is the first h whose
// upper bound is at most 1 (c < 2^-32 from there on: the coin is then decided by "R >= 2^-32",
// refined exactly when R's first 32 bits are all zero), or kMaxHigh for tiny gamma, beyond which
// the bounds are computed for each g from the 32-bit fixed point of gamma g (exp_fixed_bounds.hpp).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/exp_fixed_bounds.hpp"
#include "dpnoise/exact/lazy_comparison.hpp"
#include "dpnoise/exact/rational.hpp"
#include "dpnoise/exact/refinement_policy.hpp"

namespace dpnoise::select {

using exact::u128;

// 32-bit bounds of a constant c in [0, 1]: lo / 2^32 <= c <= hi / 2^32 (hi <= 2^32).
struct CoinBounds {
    uint64_t lo = 0, hi = 0;
};

class GapCoins {
public:
    static constexpr uint64_t kLow = 256;
    static constexpr uint64_t kMaxHigh = 4096;

    GapCoins() = default;
    // gamma = a / b, a >= 1, b >= 1, both at most 2^62 (exact/rational.hpp).
    GapCoins(uint64_t a, uint64_t b) : a_(a), b_(b), tables_(&exact::ExpTables::get()) {
        exact::checked_rational(a, b, "gamma", /*allow_zero=*/false);
        // gamma 2^64 enclosed in [gamma_lo, gamma_hi] (gamma <= 2^62, so both fit 128 bits)
        const u128 scaled = static_cast<u128>(a) << 64;
        gamma_lo_ = scaled / b;
        gamma_hi_ = gamma_lo_ + (scaled % b != 0 ? 1 : 0);
        low_.resize(kLow);
        for (uint64_t j = 0; j < kLow; ++j) low_[j] = direct(j);
        for (uint64_t h = 0;; ++h) {
            const CoinBounds e = direct(h * kLow);
            high_.push_back(e);
            if (e.hi <= 1) { tail_ = true; break; }
            if (high_.size() > kMaxHigh) break;
        }
        // the least g (by bisection over the certified bounds) with upper bound <= 2^24; any g
        // with that bound serves, since e^{-gamma g} decreases in g
        uint64_t lo = 0, hi = UINT64_MAX;
        if (direct(hi).hi > (uint64_t{1} << 24)) {
            far_gap_ = UINT64_MAX;  // (only for gamma below about 2^-60)
        } else {
            while (hi - lo > 1) {
                const uint64_t mid = lo + (hi - lo) / 2;
                (direct(mid).hi <= (uint64_t{1} << 24) ? hi : lo) = mid;
            }
            far_gap_ = hi;
        }
    }

    uint64_t gamma_num() const { return a_; }
    // A gap from which on every coin has probability below 2^-8 (certified; huge for tiny
    // gamma): such a coin is decided "no" by any nonzero first byte of its uniform.
    uint64_t far_gap() const { return far_gap_; }
    uint64_t gamma_den() const { return b_; }

    // Certified 32-bit bounds of e^{-gamma g}.
    CoinBounds bounds(uint64_t g) const {
        if (g < kLow) return low_[g];
        const uint64_t h = g / kLow;
        if (h >= high_.size() - 1) {
            if (tail_) return {0, high_.back().hi};  // e^{-gamma g} <= e^{-gamma 256 H}
            return direct(g);
        }
        const CoinBounds& x = high_[h];
        const CoinBounds& y = low_[g % kLow];
        // products of lower bounds rounded down, of upper bounds rounded up (each <= 2^32)
        const uint64_t lo = (x.lo * y.lo) >> 32;
        const uint64_t p = x.hi * y.hi;
        // x.hi, y.hi <= 2^32: the product fits unless both are 2^32, i.e. the value is 1
        const uint64_t hi = (x.hi == (uint64_t{1} << 32) && y.hi == (uint64_t{1} << 32)) ? (uint64_t{1} << 32)
                                                                                     : (p >> 32) + ((p & 0xffffffffu) != 0);
        return {lo, hi};
    }

    // Bernoulli(e^{-gamma g}), exact.
    template <class Bits, class Policy = exact::NeverForceRefinement>
    bool accept(Bits& bits, uint64_t g) const {
        if (g == 0 && !Policy::kForce) return true;
        return accept_with<Bits, Policy>(bits, g, bits.bits(8));
    }

    // The same, given the uniform's first 8 bits r8 (drawn by the caller, fresh for this coin).
    template <class Bits, class Policy = exact::NeverForceRefinement>
    bool accept_with(Bits& bits, uint64_t g, uint64_t r8) const {
        const CoinBounds c = bounds(g);
        if (!Policy::kForce) {
            if (((r8 + 1) << 24) <= c.lo) return true;
            if ((r8 << 24) >= c.hi) return false;
        }
        return accept_slow<Bits, Policy>(bits, g, r8, c);
    }

private:
    // 32-bit bounds of e^{-gamma g} from gamma g in 32-bit fixed point: [flo, fhi] encloses
    // gamma g 2^32 (g < 2^64 times gamma 2^64 in 192 bits, shifted right by 32, saturated).
    CoinBounds direct(uint64_t g) const {
        if (g == 0) return {UINT32_MAX, uint64_t{1} << 32};  // c = 1: R < 1 unless its 32 bits say otherwise
        auto fixed = [g](u128 gamma) {
            const u128 lo = static_cast<u128>(g) * static_cast<uint64_t>(gamma);
            const u128 hi = static_cast<u128>(g) * static_cast<uint64_t>(gamma >> 64);
            const u128 mid = (lo >> 64) + static_cast<uint64_t>(hi);
            return exact::shr192_saturated(static_cast<uint64_t>(hi >> 64) + static_cast<uint64_t>(mid >> 64),
                                           static_cast<uint64_t>(mid), static_cast<uint64_t>(lo), 32);
        };
        const u128 flo = fixed(gamma_lo_);
        const u128 fhi = fixed(gamma_hi_) + 1;
        return {exact::exp_lower32_fixed(*tables_, fhi), exact::exp_upper32_fixed(*tables_, flo)};
    }

    template <class Bits, class Policy>
    [[gnu::noinline]] bool accept_slow(Bits& bits, uint64_t g, uint64_t r8, const CoinBounds& c) const {
        const uint64_t w = (r8 << 24) | bits.bits(24);
        if (!Policy::kForce) {
            if (w < c.lo) return true;
            if (w >= c.hi) return false;
        }
        std::vector<uint64_t> words{(w << 32) | bits.bits(32)};
        const exact::BigUint num(static_cast<u128>(a_) * g), den(static_cast<u128>(b_));
        return exact::lazy_less(bits, words, [&](int L) { return exact::exp_rational(num, den, true, L); });
    }

    uint64_t a_ = 1, b_ = 1;
    u128 gamma_lo_ = 0, gamma_hi_ = 0;
    const exact::ExpTables* tables_ = nullptr;
    std::vector<CoinBounds> low_, high_;
    bool tail_ = false;
    uint64_t far_gap_ = UINT64_MAX;
};

}  // namespace dpnoise::select
