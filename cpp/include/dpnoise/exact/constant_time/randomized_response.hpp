// dpnoise/exact/constant_time/randomized_response.hpp -- k-ary randomized response (Warner
// 1965; Kairouz, Oh & Viswanath 2016) in constant time: the keep/flip decision and the other
// category from a fixed number of random words, selected by masks.
//
// Law (proof in docs/security.md, "Constant-time randomized response"): for a true category x
// (clamped to [0, k) by masks), keep x with probability p = 1 / (1 + (k - 1) e^{-gamma}), else
// report one of the k - 1 others uniformly.
//   keep  = [U < T], U a 128-bit uniform, T a certified 128-bit threshold with
//           |p - T / 2^128| <= 2^-120 (certified_thresholds.hpp, from the exact kernel's
//           enclosure of p: exact/randomized_response.hpp);
//   other = u + [u >= x], u = floor(W m / 2^192) for a 192-bit uniform W and m = k - 1: each u
//           in [0, m) has floor(2^192 / m) or that + 1 preimages, so u is within total variation
//           m / 2^192 < 2^-130 of uniform (Lemire 2019's multiply-shift, without its rejection).
// Total variation to the exact law, per record: < 2^-120 + 2^-130 < 2^-119. Every call reads
// 2 words (k = 2) or 5 words (k > 2) and runs the same instructions; k and gamma are public.
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "dpnoise/exact/constant_time/certified_thresholds.hpp"
#include "dpnoise/exact/constant_time/ct_ops.hpp"
#include "dpnoise/exact/randomized_response.hpp"

namespace dpnoise::exact::ct {

struct RandomizedResponseTable {
    uint64_t k = 2;
    Threshold128 keep;  // T: P[keep] = T / 2^128
    u128 width = 0;     // certified |p 2^128 - T| <= width

    RandomizedResponseTable() = default;
    explicit RandomizedResponseTable(const RandomizedResponseKernel& exact) : k(exact.k) {
        for (int L = 3; L <= 8; ++L) {
            const RatioEnclosure p = exact.keep_probability(L);  // p in [num.lo / den.hi, num.hi / den.lo]
            const CertifiedThreshold t = certify(p.num.lo, p.den.hi, p.num.hi, p.den.lo);
            keep = split(t.value);
            width = t.width;
            if (width <= kMaxWidth) return;
        }
        throw std::logic_error("constant-time randomized response: threshold did not converge");
    }

    // floor(W m / 2^192) for the 192-bit W = (w2, w1, w0): the top word of the 256-bit product,
    // by three 64x64 multiplications and carries (no branch, no division).
    static uint64_t scaled(uint64_t w2, uint64_t w1, uint64_t w0, uint64_t m) {
        const u128 p0 = static_cast<u128>(w0) * m, p1 = static_cast<u128>(w1) * m, p2 = static_cast<u128>(w2) * m;
        const u128 s1 = (p0 >> 64) + static_cast<uint64_t>(p1);
        const u128 s2 = (p1 >> 64) + static_cast<uint64_t>(p2) + (s1 >> 64);
        return static_cast<uint64_t>(p2 >> 64) + static_cast<uint64_t>(s2 >> 64);
    }

    // The report for a true category x (any int64: clamped to [0, k - 1] by masks).
    template <class Bits>
    int64_t respond(Bits& bits, int64_t x) const {
        const uint64_t top = k - 1;
        const uint64_t neg = mask_of(lt_signed(x, 0)), over = mask_of(lt_signed(static_cast<int64_t>(top), x));
        const uint64_t xc = (static_cast<uint64_t>(x) & ~(neg | over)) | (top & over);
        const uint64_t uh = bits.word(), ul = bits.word();
        const uint64_t keep = mask_of(below(uh, ul, this->keep));
        uint64_t u = 0;  // k = 2: the only other category is 1 - x (k is public)
        if (top > 1) {
            const uint64_t w2 = bits.word(), w1 = bits.word(), w0 = bits.word();
            u = scaled(w2, w1, w0, top);
        }
        const uint64_t other = u + (1u ^ lt64(u, xc));  // skip x: u < x ? u : u + 1
        return static_cast<int64_t>((xc & keep) | (other & ~keep));
    }
};

// The tables of the last 32 (k, gamma) used, each certified once (tens of microseconds, the
// bulk of a scalar call): as request::TableCache, keyed by the exact public parameters, least
// recently used first out, thread-safe; a hit or a miss depends on the public parameters only.
inline std::shared_ptr<const RandomizedResponseTable> cached_table(uint64_t k, const BigUint& num, const BigUint& den) {
    struct Entry {
        uint64_t k;
        BigUint num, den;
        std::shared_ptr<const RandomizedResponseTable> table;
    };
    static std::mutex mutex;
    static std::list<Entry> entries;
    {
        std::lock_guard<std::mutex> lock(mutex);
        for (auto it = entries.begin(); it != entries.end(); ++it) {
            if (it->k == k && compare(it->num, num) == 0 && compare(it->den, den) == 0) {
                entries.splice(entries.begin(), entries, it);
                return it->table;
            }
        }
    }
    auto table = std::make_shared<const RandomizedResponseTable>(RandomizedResponseKernel(k, num, den));  // checks k, gamma
    std::lock_guard<std::mutex> lock(mutex);
    entries.push_front(Entry{k, num, den, table});
    if (entries.size() > 32) entries.pop_back();
    return table;
}

}  // namespace dpnoise::exact::ct
