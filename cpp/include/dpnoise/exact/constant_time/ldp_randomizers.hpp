// dpnoise/exact/constant_time/ldp_randomizers.hpp -- the local-DP randomizers whose decisions
// are bits (unary encoding, dBitFlip, 1-bit Hadamard, count-mean sketch and its Hadamard
// variant) in constant time: every random decision is "U < T" for a 128-bit uniform U and a
// certified public threshold T, compared branch-free (ct_ops.hpp), and where the secret item x
// decides which law a bit has, the threshold is selected by masks from a branch-free compare of
// x with the column. Proofs and assumptions: docs/security.md, "Constant-time randomized
// response" and "Local DP".
//
//   BitChannel       one bit of a unary report: P(1) = p_true at the item's column, p_other
//                    elsewhere; bit = [U < T_sel] xor flip_sel, (T, flip) selected by the
//                    compare. SUE / dBitFlip (Erlingsson, Pihur & Korolova 2014; Wang et al.
//                    2017 §4.3; Ding, Kulkarni & Yekhanin 2017 §2.2): T_true = T_other = the
//                    k = 2 keep threshold at γ/2, flip_other = 1 (so p_other = 1 − p_true).
//                    OUE (Wang et al. 2017 §4.3): T_true = 2^127 (p = 1/2 exactly), T_other =
//                    the k = 2 keep threshold at γ, flip_other = 1 (1 − e^γ/(e^γ + 1) = 1/(e^γ + 1)).
//                    Each bit is within 2^-120 of its law (the threshold's certified width).
//   parity64         popcount(v) mod 2 by xor folding (no table, no branch): the Hadamard entry
//                    H[j, x] = (−1)^{parity(j & x)} (Sylvester's construction).
//   SketchHashCT     the count-mean sketch's public hash h_l(x) (count_mean_sketch.hpp) without
//                    an address or a branch depending on x: the ChaCha20 block x/8 of stream l
//                    is computed (ARX: fixed time) and word x mod 8 selected from all 8 by masks.
//   uniform_ct       a uniform index in [0, k) by Lemire's multiply-shift without rejection
//                    (randomized_response.hpp: within k/2^192 < 2^-130 of uniform, 3 words).
// Every report reads the same number of words and runs the same instructions for every item;
// the public parameters (d, γ, the sketch shape, the keys) decide the loop lengths.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "dpnoise/exact/constant_time/ct_ops.hpp"
#include "dpnoise/exact/constant_time/randomized_response.hpp"
#include "dpnoise/random/chacha20.hpp"
#include "dpnoise/random/keystream.hpp"
#include "dpnoise/random/stream_fill.hpp"

namespace dpnoise::exact::ct {

// 64-bit select by a 0/1 bit
inline uint64_t select64(uint64_t bit, uint64_t a_if_one, uint64_t b_if_zero) {
    const uint64_t m = mask_of(bit);
    return (a_if_one & m) | (b_if_zero & ~m);
}

// popcount(v) mod 2: xor folding (Hacker's Delight §5-2), six shifts and xors
inline uint64_t parity64(uint64_t v) {
    v ^= v >> 32;
    v ^= v >> 16;
    v ^= v >> 8;
    v ^= v >> 4;
    v ^= v >> 2;
    v ^= v >> 1;
    return v & 1;
}

// a uniform index in [0, k) from 3 words: floor(W k / 2^192), TV < k/2^192 (k >= 1 public)
template <class Bits>
uint64_t uniform_ct(Bits& bits, uint64_t k) {
    const uint64_t w2 = bits.word(), w1 = bits.word(), w0 = bits.word();
    return RandomizedResponseTable::scaled(w2, w1, w0, k);
}

enum class BitChannelKind { symmetric, optimized };

struct BitChannel {
    Threshold128 t_true, t_other;
    uint64_t flip_true = 0, flip_other = 1;

    // keep: the certified k = 2 randomized-response table (at γ/2 for symmetric, γ for optimized)
    BitChannel(BitChannelKind kind, const RandomizedResponseTable& keep) {
        if (keep.k != 2) throw std::invalid_argument("a bit channel needs the binary (k = 2) table");
        t_other = keep.keep;
        if (kind == BitChannelKind::symmetric) t_true = keep.keep;
        else t_true = Threshold128{uint64_t{1} << 63, 0};  // exactly 1/2
    }

    // the bit of a column whose "true" flag is is_true (0 or 1): 2 words
    template <class Bits>
    uint64_t draw(Bits& bits, uint64_t is_true) const {
        const uint64_t m = mask_of(is_true);
        const Threshold128 t{(t_true.hi & m) | (t_other.hi & ~m), (t_true.lo & m) | (t_other.lo & ~m)};
        const uint64_t flip = (flip_true & m) | (flip_other & ~m);
        const uint64_t uh = bits.word(), ul = bits.word();
        return below(uh, ul, t) ^ flip;
    }

    // One unary report over `columns` columns into row[0, ceil(columns/64)): column c is "true"
    // iff key(c) == x (compared branch-free), its bit packed at c. 2 words a column.
    template <class Bits, class Key>
    void row(Bits& bits, uint64_t x, const Key& key, uint64_t columns, uint64_t* out) const {
        const uint64_t words = (columns + 63) / 64;
        for (uint64_t w = 0; w < words; ++w) {
            const uint64_t stop = columns - 64 * w < 64 ? columns - 64 * w : 64;
            uint64_t acc = 0;
            for (uint64_t b = 0; b < stop; ++b) acc |= draw(bits, eq64(key(64 * w + b), x)) << b;
            out[w] = acc;
        }
    }
};

// the reproducibility unit of the unary kernel: reports [c 1024, (c+1) 1024) read stream c
inline constexpr size_t kUnaryReportsPerStream = 1024;

// out (n rows of ceil(columns/64) words): row i is the report of items[i] over the columns.
// keys == nullptr: column c's key is c (unary encoding over [0, columns)); else column c of row
// i has key keys[i columns + c] (dBitFlip: the public pool row the device drew). No check of
// the items (an item no key equals gives a report with every bit at p_other).
template <class Family>
void unary_constant_time(Family& family, const BitChannel& channel, const int64_t* items, const int64_t* keys,
                         uint64_t columns, uint64_t* out, size_t n, unsigned threads) {
    const size_t words = static_cast<size_t>((columns + 63) / 64);
    random::for_each_chunk<kUnaryReportsPerStream>(family, n, threads, [=, &channel](auto& bits, size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
            const uint64_t x = static_cast<uint64_t>(items[i]);
            if (keys == nullptr) {  // public: the same branch for every report of the call
                channel.row(bits, x, [](uint64_t c) { return c; }, columns, out + i * words);
            } else {
                const int64_t* k = keys + i * columns;
                channel.row(bits, x, [k](uint64_t c) { return static_cast<uint64_t>(k[c]); }, columns, out + i * words);
            }
        }
    });
}

// The 1-bit Hadamard oracle (hadamard_response.hpp) in constant time: row j = log_rows exact
// uniform bits (public, independent of x), the bit parity(j & x) through the k = 2 table
// (2 words). Reproducibility unit 2^16 reports (a multiple of 8: whole bytes per chunk).
inline constexpr size_t kHadamardReportsPerStream = size_t{1} << 16;

template <class Bits>
uint64_t hadamard_bit_ct(Bits& bits, const RandomizedResponseTable& rr, uint64_t h) {
    return static_cast<uint64_t>(rr.respond(bits, static_cast<int64_t>(h)));  // k = 2: h kept, or 1 - h
}

// Packs per-report bits little-endian: packed[i / 8] bit i % 8 (chunks start at multiples of 8).
template <size_t kPerStream, class Family, class Report>
void packed_bits_chunks(Family& family, size_t n, unsigned threads, uint8_t* packed, Report report) {
    static_assert(kPerStream % 8 == 0, "chunks must write whole bytes");
    random::for_each_chunk<kPerStream>(family, n, threads, [=](auto& bits, size_t begin, size_t end) {
        for (size_t i = begin; i < end; i += 8) {
            const size_t stop = end - i < 8 ? end - i : 8;
            unsigned byte = 0;
            for (size_t b = 0; b < stop; ++b) byte |= static_cast<unsigned>(report(bits, i + b)) << b;
            packed[i / 8] = static_cast<uint8_t>(byte);
        }
    });
}

template <class Family>
void hadamard_constant_time(Family& family, const RandomizedResponseTable& rr, unsigned log_rows, const int64_t* items,
                            int64_t* rows, uint8_t* packed, size_t n, unsigned threads) {
    if (rr.k != 2) throw std::invalid_argument("the Hadamard oracle needs the binary (k = 2) table");
    packed_bits_chunks<kHadamardReportsPerStream>(family, n, threads, packed, [=, &rr](auto& bits, size_t i) {
        const uint64_t j = log_rows ? bits.bits(log_rows) : 0;
        rows[i] = static_cast<int64_t>(j);
        return hadamard_bit_ct(bits, rr, parity64(j & static_cast<uint64_t>(items[i])));
    });
}

// h_l(x) = the low bits of public word x of stream l (random/public_stream.hpp's layout: 32-bit
// words 2(x mod 8), 2(x mod 8) + 1 of ChaCha20 block x/8), with the block computed for x/8 and
// the word selected from all eight by masks.
struct SketchHashCT {
    random::StreamKey key;
    uint64_t hashes = 1, width = 8;

    uint64_t operator()(uint64_t l, uint64_t x) const {
        uint32_t state[16], block[16];
        random::chacha20_stream_state(key.words, l, x >> 3, state);
        random::chacha20_block(state, block);
        const uint64_t at = x & 7;
        uint64_t w = 0;
        for (uint64_t i = 0; i < 8; ++i) {
            const uint64_t v = static_cast<uint64_t>(block[2 * i]) | (static_cast<uint64_t>(block[2 * i + 1]) << 32);
            w |= v & mask_of(eq64(i, at));
        }
        return w & (width - 1);
    }
};

// the reproducibility unit of the sketch kernels (as CountMeanSketch::kReportsPerStream)
inline constexpr size_t kSketchReportsPerStream = size_t{1} << 12;

// CMS (Apple 2017, Algorithm 1), one report: l = uniform_ct(k) (returned, sent), v = −1
// everywhere but +1 at h_l(x), every sign flipped unless [U < T] (binary RR at γ/2: `half`, the
// k = 2 table at γ/2); bit 1 means −1, m/8 bytes into v. m + 1 draws.
template <class Bits>
uint64_t cms_report_ct(Bits& bits, const SketchHashCT& hash, const RandomizedResponseTable& half, uint64_t x, uint8_t* v) {
    const uint64_t l = uniform_ct(bits, hash.hashes);
    const uint64_t a = hash(l, x);
    for (uint64_t byte = 0; byte < hash.width / 8; ++byte) {
        uint64_t out = 0;
        for (uint64_t b = 0; b < 8; ++b) {
            const uint64_t sign = 1 ^ eq64(8 * byte + b, a);  // 0 (+1) at h_l(x), 1 (−1) elsewhere
            const uint64_t uh = bits.word(), ul = bits.word();
            out |= (sign ^ 1 ^ below(uh, ul, half.keep)) << b;
        }
        v[byte] = static_cast<uint8_t>(out);
    }
    return l;
}

template <class Family>
void cms_constant_time(Family& family, const SketchHashCT& hash, const RandomizedResponseTable& half,
                       const int64_t* items, int64_t* hash_index, uint8_t* vectors, size_t n, unsigned threads) {
    if (half.k != 2) throw std::invalid_argument("cms needs the binary (k = 2) table");
    const uint64_t bytes = hash.width / 8;
    random::for_each_chunk<kSketchReportsPerStream>(family, n, threads, [=, &hash, &half](auto& bits, size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i)
            hash_index[i] = static_cast<int64_t>(cms_report_ct(bits, hash, half, static_cast<uint64_t>(items[i]), vectors + i * bytes));
    });
}

// HCMS (Apple 2017, Algorithm 3), one report: l = uniform_ct(k), a = log2(m) exact uniform bits
// (both sent), the bit H[a, h_l(x)] = parity(a & h_l(x)) through the k = 2 table at γ. 2 draws.
template <class Bits>
uint64_t hcms_report_ct(Bits& bits, const SketchHashCT& hash, const RandomizedResponseTable& rr, uint64_t x,
                        uint64_t& l, uint64_t& a) {
    l = uniform_ct(bits, hash.hashes);
    a = bits.bits(static_cast<unsigned>(__builtin_ctzll(hash.width)));
    return hadamard_bit_ct(bits, rr, parity64(a & hash(l, x)));
}

template <class Family>
void hcms_constant_time(Family& family, const SketchHashCT& hash, const RandomizedResponseTable& rr,
                        const int64_t* items, int64_t* hash_index, int64_t* coefficient, uint8_t* packed, size_t n,
                        unsigned threads) {
    if (rr.k != 2) throw std::invalid_argument("hcms needs the binary (k = 2) table");
    packed_bits_chunks<kSketchReportsPerStream>(family, n, threads, packed, [=, &hash, &rr](auto& bits, size_t i) {
        uint64_t l = 0, a = 0;
        const uint64_t bit = hcms_report_ct(bits, hash, rr, static_cast<uint64_t>(items[i]), l, a);
        hash_index[i] = static_cast<int64_t>(l);
        coefficient[i] = static_cast<int64_t>(a);
        return bit;
    });
}

}  // namespace dpnoise::exact::ct
