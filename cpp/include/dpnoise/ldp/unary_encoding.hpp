// dpnoise/ldp/unary_encoding.hpp -- the unary-encoding randomizers, bit-packed and exact.
//
// A user with item x in [0, d) sends d bits B (packed little-endian in ceil(d/64) uint64 words:
// bit b of word j is item 64 j + b); every bit is independent:
//   * B_x = 1 with probability p_true, B_y = 1 (y != x) with probability p_other = 1/(e^g + 1).
//   * "oue", optimized unary encoding (Wang, Blocki, Li & Jha, "Locally Differentially Private
//     Protocols for Frequency Estimation", USENIX Security 2017, §4.3): g = γ, p_true = 1/2.
//   * "sue", symmetric unary encoding / basic one-time RAPPOR (Erlingsson, Pihur & Korolova,
//     CCS 2014; Wang et al. 2017, §4.3): g = γ/2, p_true = e^{γ/2}/(e^{γ/2} + 1).
// Two inputs x, x' differ only in the laws of bits x and x', so every output's probability
// ratio is at most (p_true/p_other)((1 − p_other)/(1 − p_true)) = e^γ for both (Wang et al.
// 2017, Theorem 2; for SUE e^{γ/2} e^{γ/2}).
//
// Exactness: the other bits are drawn as gaps between ones, each an exact geometric with
// P[gap >= j] = (1 − p_other)^j (geometric_skip.hpp), so about d p_other + 1 draws per user
// instead of d; bit x is then overwritten by its own draw (a fair bit for OUE; the exact
// Bernoulli(e^{γ/2}/(e^{γ/2} + 1)) of exact::RandomizedResponseKernel with k = 2 for SUE). The
// value the skip wrote at x was independent of everything else and is discarded, so the law is
// exactly the one above. No floating point on this path.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/ldp/geometric_skip.hpp"
#include "dpnoise/random/stream_fill.hpp"

namespace dpnoise::ldp {

enum class UnaryKind { optimized, symmetric };

struct UnaryEncoding {
    // a report is at most 2^20 bits (128 KiB): beyond that, hashing or Hadamard protocols
    static constexpr uint64_t kMaxDomain = uint64_t{1} << 20;
    // the reproducibility unit: users [c 1024, (c+1) 1024) read stream c
    static constexpr size_t kUsersPerStream = 1024;

    UnaryKind kind = UnaryKind::optimized;
    uint64_t d = 2;
    size_t words = 1;
    GeometricSkip other;                     // the gaps between the other items' ones
    exact::RandomizedResponseKernel true_bit;  // SUE: the true bit (k = 2, γ/2)

    UnaryEncoding(UnaryKind k, uint64_t domain, const BigUint& gamma_num, const BigUint& gamma_den)
        : kind(k), d(domain) {
        if (d < 2) throw std::invalid_argument("domain_size must be at least 2");
        if (d > kMaxDomain) throw std::invalid_argument("domain_size must be at most 2^20 for unary encoding");
        if (gamma_den.is_zero()) throw std::invalid_argument("gamma_den must be positive");
        words = static_cast<size_t>((d + 63) / 64);
        if (kind == UnaryKind::optimized) {
            other = GeometricSkip(gamma_num, gamma_den);
        } else {
            const BigUint half_den = exact::shift_left(gamma_den, 1);  // γ/2 = num/(2 den)
            other = GeometricSkip(gamma_num, half_den);
            true_bit = exact::RandomizedResponseKernel(2, gamma_num, half_den);
        }
    }

    // one user's report for item x in [0, d) (checked by the caller) into row[0, words)
    template <class Bits>
    void privatize(Bits& bits, uint64_t x, uint64_t* row) const {
        std::fill(row, row + words, uint64_t{0});
        uint64_t pos = 0;
        if (other.low_bits == 0) {
            // the single-table path inlined: one guide load per gap in the common case
            const exact::Thresholds& th = other.high;
            const uint64_t m = th.hi_m1.size();
            const unsigned gb = th.guide_bits;
            const uint64_t mask = (uint64_t{1} << gb) - 1;
            // buckets are cut from whole words, floor(64/gb) per word; a word's leftover bits
            // are dropped (unused independent bits: dropping them leaves every law unchanged)
            uint64_t buf = 0;
            unsigned left = 0;
            for (;;) {
                if (left < gb) {
                    buf = bits.word();
                    left = 64;
                }
                const uint32_t bucket = static_cast<uint32_t>(buf & mask);
                buf >>= gb;
                left -= gb;
                const uint32_t e = th.guide[bucket];
                const uint64_t h = (e & 1) ? (e >> 1) : other.scan_bucket(bits, bucket);
                pos += h;
                if (pos >= d) break;
                if (h == m) continue;  // H >= m: memoryless, draw again (GeometricSkip::sample)
                row[pos >> 6] |= uint64_t{1} << (pos & 63);
                if (++pos >= d) break;
            }
        } else {
            for (;;) {
                pos += other.sample(bits, d - pos);
                if (pos >= d) break;
                row[pos >> 6] |= uint64_t{1} << (pos & 63);
                if (++pos >= d) break;
            }
        }
        const bool one = kind == UnaryKind::optimized ? bits.bit() : true_bit.keep(bits);
        const uint64_t mask = uint64_t{1} << (x & 63);
        row[x >> 6] = one ? (row[x >> 6] | mask) : (row[x >> 6] & ~mask);
    }
};

template <class Bits>
[[gnu::flatten]] void unary_privatize_chunk(Bits& bits, const UnaryEncoding& enc, const int64_t* items, uint64_t* out,
                                            size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) enc.privatize(bits, static_cast<uint64_t>(items[i]), out + i * enc.words);
}

// out (n rows of enc.words words) = the reports of items[0, n) (each in [0, d), checked by the
// caller before any draw); chunk c of kUsersPerStream users reads stream c of the family, so
// the output does not depend on `threads`.
template <class Family>
void unary_privatize(Family& family, const UnaryEncoding& enc, const int64_t* items, uint64_t* out, size_t n,
                     unsigned threads) {
    random::for_each_chunk<UnaryEncoding::kUsersPerStream>(
        family, n, threads, [&enc, items, out](auto& bits, size_t begin, size_t end) {
            unary_privatize_chunk(bits, enc, items, out, begin, end);
        });
}

}  // namespace dpnoise::ldp
