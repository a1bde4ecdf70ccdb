// dpnoise/ldp/count_mean_sketch.hpp -- Apple's count-mean sketch ("cms") and its Hadamard
// variant ("hcms") (Apple Differential Privacy Team 2017, "Learning with Privacy at Scale",
// Algorithms 1-4), with exact randomization.
//
// Hash family (PUBLIC): k functions h_l: [0, d) -> [0, m), m = 2^w, h_l(x) = the low w bits of
// word x of stream l of random::PublicStream(public key) (ChaCha20 of the public key, RFC 8439):
// under the PRF assumption, the k·d values are independent and uniform on [0, m).
//
// CMS client (Algorithm 1): l uniform on [0, k) (secret, sent); v in {−1, +1}^m with +1 only at
// h_l(x); every coordinate flipped with probability 1/(e^{γ/2} + 1) (binary randomized response
// at γ/2, exact kernel, read a byte at a time: keep_bytewise); the m signs packed (bit 1 = −1). Two inputs differ in at most two
// coordinates of v, so every ratio is at most (e^{γ/2})² = e^γ.
// HCMS client (Algorithm 3): l uniform on [0, k), a uniform on [0, m) (secret, sent); the bit
// H[a, h_l(x)] of the Hadamard transform of the one-hot vector, kept with probability
// e^γ/(e^γ + 1), else flipped: γ-LDP as for the 1-bit Hadamard oracle.
//
// Server state, in integers (exact, mergeable by addition): CMS: T[l, b] = Σ of the reported
// signs at coordinate b of the users of hash l, and N[l] = those users; HCMS: T[l, a] = Σ of the
// ±1 bits of the users of (l, a). Apple's de-biased sketch is then M = k((c/2) T + N/2) (CMS,
// c = (e^{γ/2} + 1)/(e^{γ/2} − 1)) and M = k c T H (HCMS, c = (e^γ + 1)/(e^γ − 1), row-wise
// Walsh–Hadamard transform), and the estimate (Algorithms 2 and 4)
//   f̂(x) = (m/(m − 1)) ((1/k) Σ_l M[l, h_l(x)] − n/m),
// the factor m/(m − 1) and the − n/m undoing the expected collisions. Its parts computed here:
// G(x) = Σ_l T'[l, h_l(x)] (T' = T for CMS, T H for HCMS), exact in int64.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/exact/uniform.hpp"
#include "dpnoise/ldp/walsh_hadamard.hpp"
#include "dpnoise/random/public_stream.hpp"
#include "dpnoise/random/stream_fill.hpp"

namespace dpnoise::ldp {

// The public hash family: h_l(x) = low log2(m) bits of public word (stream l, offset x).
class SketchHashes {
public:
    static constexpr uint64_t kMaxHashes = uint64_t{1} << 16;
    static constexpr unsigned kMaxLogWidth = 16;
    static constexpr unsigned kMinLogWidth = 3;  // m >= 8: a CMS vector is whole bytes

    SketchHashes(const random::StreamKey& public_key, uint64_t hashes, uint64_t width)
        : stream_(public_key), k_(hashes), m_(width) {
        if (hashes < 1 || hashes > kMaxHashes) throw std::invalid_argument("hashes must be in [1, 2^16]");
        if (!is_power_of_two(width) || width < (uint64_t{1} << kMinLogWidth) || width > (uint64_t{1} << kMaxLogWidth))
            throw std::invalid_argument("width must be a power of two in [8, 2^16]");
    }
    uint64_t hashes() const { return k_; }
    uint64_t width() const { return m_; }
    unsigned log_width() const { return static_cast<unsigned>(__builtin_ctzll(m_)); }

    uint64_t operator()(uint64_t l, uint64_t x) const {
        uint64_t w;
        stream_.words(l, x, &w, 1);
        return w & (m_ - 1);
    }
    // h_l(x0), ..., h_l(x0 + count − 1)
    void row(uint64_t l, uint64_t x0, uint64_t* out, size_t count) const {
        stream_.words(l, x0, out, count);
        for (size_t i = 0; i < count; ++i) out[i] &= m_ - 1;
    }

private:
    random::PublicStream stream_;
    uint64_t k_, m_;
};

struct CountMeanSketch {
    static constexpr size_t kReportsPerStream = size_t{1} << 12;
};

// The kernel's exact Bernoulli(p) read a byte at a time: R's first 8 bits b against the
// kernel's certified bounds lo <= p 2^32 <= hi: (b + 1) 2^24 <= lo means R < (b + 1)/2^8 <= p
// (keep); b 2^24 >= hi means R >= b/2^8 >= p (flip). Otherwise (one or two values of b, so
// probability <= 2^-7) R's next 24 bits complete the kernel's 32-bit word w and the kernel's
// own decision and exact refinement follow, reading R's further bits in order. Same law
// (P[keep] = p exactly), about 8.2 random bits per decision instead of 32: the CMS client makes
// m of them per user.
template <class Bits>
inline bool keep_bytewise(const exact::RandomizedResponseKernel& kernel, Bits& bits) {
    const uint64_t b = bits.bits(8);
    if (((b + 1) << 24) <= kernel.keep_bounds.lo) return true;
    if ((b << 24) >= kernel.keep_bounds.hi) return false;
    const uint32_t w = static_cast<uint32_t>((b << 24) | bits.bits(24));
    if (w < kernel.keep_bounds.lo) return true;
    if (static_cast<uint64_t>(w) >= kernel.keep_bounds.hi) return false;
    return kernel.keep_refine(bits, w);
}

// The CMS sign-flip kernel for a configuration of exact ε = γ = num/den: binary randomized
// response at γ/2 = num/(2 den), flip probability 1/(e^{γ/2} + 1) (Apple 2017, Algorithm 1: two
// flipped coordinates per input change, so e^{γ/2} each). The halving lives here, with the
// protocol, so that every binding passes the configuration's γ unchanged.
inline exact::RandomizedResponseKernel cms_sign_kernel(const exact::BigUint& gamma_num, const exact::BigUint& gamma_den) {
    return exact::RandomizedResponseKernel(2, gamma_num, exact::add(gamma_den, gamma_den));
}

// CMS clients: hash_index[i] (int64) and vectors[i m/8 .. (i + 1) m/8) (bit b = coordinate b,
// little-endian in each byte; 1 means −1). half: cms_sign_kernel(γ), the k = 2 kernel at γ/2.
template <class Family>
void cms_privatize(Family& family, const SketchHashes& hashes, const exact::RandomizedResponseKernel& half,
                   const int64_t* items, int64_t* hash_index, uint8_t* vectors, size_t n, unsigned threads) {
    if (half.k != 2) throw std::invalid_argument("cms needs the binary (k = 2) kernel");
    const uint64_t m = hashes.width();
    random::for_each_chunk<CountMeanSketch::kReportsPerStream>(
        family, n, threads, [&, m](auto& bits, size_t begin, size_t end) {
            for (size_t i = begin; i < end; ++i) {
                const uint64_t l = exact::uniform_below(bits, hashes.hashes());
                const uint64_t a = hashes(l, static_cast<uint64_t>(items[i]));
                hash_index[i] = static_cast<int64_t>(l);
                uint8_t* v = vectors + i * (m / 8);
                for (uint64_t byte = 0; byte < m / 8; ++byte) {
                    unsigned out = 0;
                    for (unsigned b = 0; b < 8; ++b) {
                        const unsigned sign = (8 * byte + b == a) ? 0u : 1u;  // +1 at h_l(x), −1 elsewhere
                        out |= (sign ^ (keep_bytewise(half, bits) ? 0u : 1u)) << b;
                    }
                    v[byte] = static_cast<uint8_t>(out);
                }
            }
        });
}

// HCMS clients: hash_index[i], coefficient[i] (int64) and the packed bits (bit 1 = −1).
template <class Family>
void hcms_privatize(Family& family, const SketchHashes& hashes, const exact::RandomizedResponseKernel& rr,
                    const int64_t* items, int64_t* hash_index, int64_t* coefficient, uint8_t* packed, size_t n,
                    unsigned threads) {
    if (rr.k != 2) throw std::invalid_argument("hcms needs the binary (k = 2) kernel");
    static_assert(CountMeanSketch::kReportsPerStream % 8 == 0);
    const unsigned w = hashes.log_width();
    random::for_each_chunk<CountMeanSketch::kReportsPerStream>(
        family, n, threads, [&, w](auto& bits, size_t begin, size_t end) {
            for (size_t i = begin; i < end; i += 8) {
                const size_t stop = std::min<size_t>(8, end - i);
                unsigned byte = 0;
                for (size_t b = 0; b < stop; ++b) {
                    const uint64_t l = exact::uniform_below(bits, hashes.hashes());
                    const uint64_t a = bits.bits(w);
                    const unsigned h = hadamard_sign_bit(a, hashes(l, static_cast<uint64_t>(items[i + b])));
                    hash_index[i + b] = static_cast<int64_t>(l);
                    coefficient[i + b] = static_cast<int64_t>(a);
                    byte |= (h ^ (rr.keep(bits) ? 0u : 1u)) << b;
                }
                packed[i / 8] = static_cast<uint8_t>(byte);
            }
        });
}

// Checks (before any change) and adds a CMS batch: T[l, b] += sign, N[l] += 1.
inline void cms_check_reports(const int64_t* hash_index, size_t n, uint64_t k) {
    for (size_t i = 0; i < n; ++i)
        if (hash_index[i] < 0 || static_cast<uint64_t>(hash_index[i]) >= k)
            throw std::invalid_argument("cms report hash indices must be in [0, hashes)");
}
inline void cms_accumulate(int64_t* T, int64_t* N, uint64_t k, uint64_t m, const int64_t* hash_index,
                           const uint8_t* vectors, size_t n) {
    cms_check_reports(hash_index, n, k);
    for (size_t i = 0; i < n; ++i) {
        int64_t* row = T + static_cast<uint64_t>(hash_index[i]) * m;
        const uint8_t* v = vectors + i * (m / 8);
        for (uint64_t b = 0; b < m; ++b) row[b] += 1 - 2 * static_cast<int64_t>((v[b / 8] >> (b % 8)) & 1u);
        N[hash_index[i]] += 1;
    }
}

// Checks (before any change) and adds an HCMS batch: T[l, a] += ±1.
inline void hcms_check_reports(const int64_t* hash_index, const int64_t* coefficient, const uint8_t* packed,
                               size_t n, uint64_t k, uint64_t m) {
    cms_check_reports(hash_index, n, k);
    for (size_t i = 0; i < n; ++i)
        if (coefficient[i] < 0 || static_cast<uint64_t>(coefficient[i]) >= m)
            throw std::invalid_argument("hcms report coefficients must be in [0, width)");
    if (n % 8 && (packed[n / 8] >> (n % 8)) != 0)
        throw std::invalid_argument("hcms report bits: padding bits after the last report must be 0");
}
inline void hcms_accumulate(int64_t* T, uint64_t k, uint64_t m, const int64_t* hash_index,
                            const int64_t* coefficient, const uint8_t* packed, size_t n) {
    hcms_check_reports(hash_index, coefficient, packed, n, k, m);
    for (size_t i = 0; i < n; ++i)
        T[static_cast<uint64_t>(hash_index[i]) * m + static_cast<uint64_t>(coefficient[i])] +=
            1 - 2 * static_cast<int64_t>((packed[i / 8] >> (i % 8)) & 1u);
}

// G(x) = Σ_l table[l, h_l(x)] for x in [0, d): O(k d) public words, memory O(d + block).
inline void sketch_gather(const SketchHashes& hashes, const int64_t* table, uint64_t d, int64_t* out) {
    constexpr size_t kBlock = 4096;
    std::fill(out, out + d, int64_t{0});
    std::vector<uint64_t> h(kBlock);
    const uint64_t m = hashes.width();
    for (uint64_t l = 0; l < hashes.hashes(); ++l) {
        const int64_t* row = table + l * m;
        for (uint64_t x0 = 0; x0 < d; x0 += kBlock) {
            const size_t cnt = static_cast<size_t>(std::min<uint64_t>(kBlock, d - x0));
            hashes.row(l, x0, h.data(), cnt);
            for (size_t i = 0; i < cnt; ++i) out[x0 + i] += row[h[i]];
        }
    }
}

}  // namespace dpnoise::ldp
