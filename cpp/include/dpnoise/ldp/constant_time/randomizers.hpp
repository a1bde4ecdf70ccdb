// dpnoise/ldp/constant_time/randomizers.hpp -- the local-DP randomizers whose decisions
// are bits (unary encoding, dBitFlip, 1-bit Hadamard, count-mean sketch and its Hadamard
// variant) in constant time. The unary and CMS bits: "U < t" for one 64-bit uniform U and a
// public threshold t, the certified 128-bit one rounded to the nearest multiple of 2^-64 (so
// each bit is within 2^-64 of its law), decided 64 columns at a time by a branch-free vector
// compare (AVX2, else the ct_ops.hpp word operations); where the secret item x decides which
// law a bit has, the threshold is selected by masks from a branch-free compare of x with the
// column. The Hadamard bits: the k = 2 table's 128-bit compare (2^-120). Proofs and
// assumptions: docs/security.md, "Constant-time randomized response" and "Local DP".
//
//   BitChannel       one bit of a unary report: P(1) = p_true at the item's column, p_other
//                    elsewhere; bit = [U < t_sel] xor flip_sel, (t, flip) selected by the
//                    compare. SUE / dBitFlip (Erlingsson, Pihur & Korolova 2014; Wang et al.
//                    2017 §4.3; Ding, Kulkarni & Yekhanin 2017 §2.2): t_true = t_other = the
//                    k = 2 keep threshold at γ/2, flip_other = 1 (so p_other = 1 − p_true).
//                    OUE (Wang et al. 2017 §4.3): t_true = 2^63 (p = 1/2 exactly), t_other =
//                    the k = 2 keep threshold at γ, flip_other = 1 (1 − e^γ/(e^γ + 1) = 1/(e^γ + 1)).
//                    CMS's signs: SUE's channel with the flips exchanged.
//   parity64         popcount(v) mod 2 by xor folding (no table, no branch): the Hadamard entry
//                    H[j, x] = (−1)^{parity(j & x)} (Sylvester's construction).
//   SketchHashCT     the count-mean sketch's public hash h_l(x) (count_mean_sketch.hpp) without
//                    an address or a branch depending on x: the ChaCha20 block x/8 of stream l
//                    is computed (ARX: fixed time) and word x mod 8 selected from all 8 by masks.
//   uniform_ct       a uniform index in [0, k) by Lemire's multiply-shift without rejection
//                    (randomized_response.hpp: within k/2^192 < 2^-130 of uniform, 3 words).
// Every report reads the same number of words and runs the same instructions for every item;
// the public parameters (d, γ, the sketch shape, the keys, the CPU's AVX2 flag) decide the
// loop lengths and the code path.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "dpnoise/exact/constant_time/ct_ops.hpp"
#include "dpnoise/exact/constant_time/public_word.hpp"
#include "dpnoise/exact/constant_time/randomized_response.hpp"
#include "dpnoise/random/keystream.hpp"
#include "dpnoise/random/stream_fill.hpp"
#include "dpnoise/simd.hpp"  // DPNOISE_X86_SIMD: the AVX2 decisions

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

// A probability as a 64-bit threshold: P = (t + all 2^64) / 2^64 (all = 1 only for P = 1, t = 0).
struct Threshold64 {
    uint64_t t = 0, all = 0;
};

// T / 2^128 rounded to the nearest multiple of 2^-64 (public, once per configuration): with the
// certified |p − T/2^128| <= 2^-120, |p − t/2^64| <= 2^-65 + 2^-120 < 2^-64 (docs/security.md,
// "Local DP").
inline Threshold64 round64(const Threshold128& T) {
    const uint64_t up = T.lo >> 63, t = T.hi + up;
    return {t, up & eq64(t, 0)};
}

// DPNOISE_CT_PORTABLE_ONLY (a compile-time switch for the checks) leaves the AVX2 path out.
#if defined(DPNOISE_X86_SIMD) && !defined(DPNOISE_CT_PORTABLE_ONLY)
#define DPNOISE_CT_AVX2_DECIDE 1
// The 64 decisions of a block, 4 lanes at a time: lane b is "true" iff k[b] == x (vpcmpeqq),
// its threshold and flip selected by the mask, bit = ([u[b] < t] | all) ^ flip by a signed
// compare of sign-flipped words (vpcmpgtq), the 4 top bits gathered by vmovmskpd. No branch,
// no address depends on x or u (fixed-latency vector ops on every AVX2 core).
__attribute__((target("avx2"))) inline uint64_t decide64_avx2(const uint64_t* u, const uint64_t* k, uint64_t x,
                                                              const uint64_t sel[2][3]) {
    const __m256i top = _mm256_set1_epi64x(INT64_MIN), xv = _mm256_set1_epi64x(static_cast<int64_t>(x));
    __m256i tt[3], to[3];  // (t ^ top, all mask, flip mask) for the true and the other columns
    for (int j = 0; j < 3; ++j) {
        tt[j] = _mm256_set1_epi64x(static_cast<int64_t>(sel[0][j]));
        to[j] = _mm256_set1_epi64x(static_cast<int64_t>(sel[1][j]));
    }
    uint64_t acc = 0;
    for (unsigned i = 0; i < 16; ++i) {
        const __m256i kv = _mm256_load_si256(reinterpret_cast<const __m256i*>(k + 4 * i));
        const __m256i uv = _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(u + 4 * i)), top);
        const __m256i m = _mm256_cmpeq_epi64(kv, xv);
        __m256i v[3];
        for (int j = 0; j < 3; ++j) v[j] = _mm256_or_si256(_mm256_and_si256(m, tt[j]), _mm256_andnot_si256(m, to[j]));
        const __m256i bit = _mm256_xor_si256(_mm256_or_si256(_mm256_cmpgt_epi64(v[0], uv), v[1]), v[2]);
        acc |= static_cast<uint64_t>(static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(bit)))) << (4 * i);
    }
    return acc;
}
#endif

// The same 64 decisions word by word with the value-barrier operations of ct_ops.hpp.
inline uint64_t decide64_portable(const uint64_t* u, const uint64_t* k, uint64_t x, const uint64_t sel[2][3]) {
    constexpr uint64_t kTop = uint64_t{1} << 63;
    uint64_t acc = 0;
    for (unsigned b = 0; b < 64; ++b) {
        const uint64_t m = mask_of(eq64(k[b], x));
        const uint64_t t = ((sel[0][0] & m) | (sel[1][0] & ~m)) ^ kTop, all = (sel[0][1] & m) | (sel[1][1] & ~m);
        const uint64_t flip = (sel[0][2] & m) | (sel[1][2] & ~m);
        acc |= (((lt64(u[b], t) | all) ^ flip) & 1) << b;
    }
    return acc;
}

struct BitChannel {
    Threshold64 t_true, t_other;
    uint64_t flip_true = 0, flip_other = 1;

    // keep: the certified k = 2 randomized-response table (at γ/2 for symmetric, γ for optimized)
    BitChannel(BitChannelKind kind, const RandomizedResponseTable& keep) {
        if (keep.k != 2) throw std::invalid_argument("a bit channel needs the binary (k = 2) table");
        t_other = round64(keep.keep);
        if (kind == BitChannelKind::symmetric) t_true = t_other;
        else t_true = Threshold64{uint64_t{1} << 63, 0};  // exactly 1/2
    }

    // One unary report over `columns` columns into row[0, ceil(columns/64)): column c is "true"
    // iff key(c) == x (compared branch-free), its bit at c is [U < t_sel] xor flip_sel for one
    // fresh 64-bit word U. Per block of 64 columns: the words and the keys are read into arrays
    // (the same reads for every x), then decided and packed by decide64 (AVX2 when the CPU has
    // it: a public property). 1 word a column.
    template <class Bits, class Key>
    void row(Bits& bits, uint64_t x, const Key& key, uint64_t columns, uint64_t* out) const {
        constexpr uint64_t kTop = uint64_t{1} << 63;
        const uint64_t sel[2][3] = {{t_true.t ^ kTop, mask_of(t_true.all), mask_of(flip_true)},
                                    {t_other.t ^ kTop, mask_of(t_other.all), mask_of(flip_other)}};
        alignas(32) uint64_t u[64], k[64];
        const uint64_t words = (columns + 63) / 64;
        for (uint64_t w = 0; w < words; ++w) {
            const uint64_t stop = columns - 64 * w < 64 ? columns - 64 * w : 64;
            for (uint64_t b = 0; b < stop; ++b) u[b] = bits.word();
            for (uint64_t b = 0; b < stop; ++b) k[b] = key(64 * w + b);
            for (uint64_t b = stop; b < 64; ++b) u[b] = k[b] = 0;  // decided, then masked off
            const uint64_t keep = stop == 64 ? ~uint64_t{0} : (uint64_t{1} << stop) - 1;
            out[w] = decide64(u, k, x, sel) & keep;
        }
    }

private:
    static uint64_t decide64(const uint64_t* u, const uint64_t* k, uint64_t x, const uint64_t sel[2][3]) {
#ifdef DPNOISE_CT_AVX2_DECIDE
        if (random::detail::cpu_has_avx2()) return decide64_avx2(u, k, x, sel);
#endif
        return decide64_portable(u, k, x, sel);
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
// the word selected from all eight by masks (public_word.hpp, shared with the public-matrix row seed).
struct SketchHashCT {
    random::StreamKey key;
    uint64_t hashes = 1, width = 8;

    uint64_t operator()(uint64_t l, uint64_t x) const { return public_word_ct(key, l, x) & (width - 1); }
};

// the reproducibility unit of the sketch kernels (as CountMeanSketch::kReportsPerStream)
inline constexpr size_t kSketchReportsPerStream = size_t{1} << 12;

// CMS's sign channel (Apple 2017, Algorithm 1): a coordinate is kept with probability
// e^{γ/2}/(e^{γ/2} + 1) (half: the k = 2 table at γ/2), bit 1 meaning −1: bit = [U < t] xor 1 at
// h_l(x) (+1 kept), [U < t] elsewhere (−1 kept). SUE's channel with the flips exchanged.
inline BitChannel cms_sign_channel(const RandomizedResponseTable& half) {
    BitChannel signs(BitChannelKind::symmetric, half);
    signs.flip_true = 1;
    signs.flip_other = 0;
    return signs;
}

// CMS, one report: l = uniform_ct(k) (returned, sent), then the m = width signs in blocks of
// 64 through the sign channel with the "true" column h_l(x) (1 word each), m/8 bytes into v
// little-endian. m + 1 draws.
template <class Bits>
uint64_t cms_report_ct(Bits& bits, const SketchHashCT& hash, const BitChannel& signs, uint64_t x, uint8_t* v) {
    const uint64_t l = uniform_ct(bits, hash.hashes);
    const uint64_t a = hash(l, x);
    for (uint64_t w = 0; 64 * w < hash.width; ++w) {
        const uint64_t stop = hash.width - 64 * w < 64 ? hash.width - 64 * w : 64;  // a multiple of 8
        uint64_t block = 0;
        signs.row(bits, a, [w](uint64_t c) { return 64 * w + c; }, stop, &block);
        for (uint64_t byte = 0; byte < stop / 8; ++byte) v[8 * w + byte] = static_cast<uint8_t>(block >> (8 * byte));
    }
    return l;
}

template <class Family>
void cms_constant_time(Family& family, const SketchHashCT& hash, const RandomizedResponseTable& half,
                       const int64_t* items, int64_t* hash_index, uint8_t* vectors, size_t n, unsigned threads) {
    if (half.k != 2) throw std::invalid_argument("cms needs the binary (k = 2) table");
    const BitChannel signs = cms_sign_channel(half);
    const uint64_t bytes = hash.width / 8;
    random::for_each_chunk<kSketchReportsPerStream>(family, n, threads, [=, &hash](auto& bits, size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i)
            hash_index[i] = static_cast<int64_t>(cms_report_ct(bits, hash, signs, static_cast<uint64_t>(items[i]), vectors + i * bytes));
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
