// dpnoise/random/chacha20.hpp -- the ChaCha20 block function (RFC 8439 §2.3) and a
// multi-block keystream generator with a portable path and an AVX2 path (8 blocks in
// parallel), chosen at run time.
//
// State layout (RFC 8439 §2.3): words 0-3 constants, 4-11 key, 12-15 counter/nonce.
// The RFC variant uses word 12 as a 32-bit block counter and words 13-15 as the nonce;
// dpnoise's streams use words 12-13 as a 64-bit block counter and 14-15 as a 64-bit
// stream id (the original Bernstein layout). The block function is the same for both.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define DPNOISE_HAVE_AVX2_PATH 1
#include <immintrin.h>
#endif

namespace dpnoise::random {

inline constexpr uint32_t kChaChaConstants[4] = {0x61707865u, 0x3320646eu, 0x79622d32u,
                                                 0x6b206574u};  // "expand 32-byte k"

namespace detail {
inline uint32_t rotl32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

inline void quarter_round(uint32_t& a, uint32_t& b, uint32_t& c, uint32_t& d) {
    a += b; d ^= a; d = rotl32(d, 16);
    c += d; b ^= c; b = rotl32(b, 12);
    a += b; d ^= a; d = rotl32(d, 8);
    c += d; b ^= c; b = rotl32(b, 7);
}
}  // namespace detail

// RFC 8439 §2.3: 20 rounds (10 double rounds) then add the input state.
inline void chacha20_block(const uint32_t in[16], uint32_t out[16]) {
    uint32_t x[16];
    std::memcpy(x, in, sizeof x);
    for (int i = 0; i < 10; ++i) {
        detail::quarter_round(x[0], x[4], x[8], x[12]);
        detail::quarter_round(x[1], x[5], x[9], x[13]);
        detail::quarter_round(x[2], x[6], x[10], x[14]);
        detail::quarter_round(x[3], x[7], x[11], x[15]);
        detail::quarter_round(x[0], x[5], x[10], x[15]);
        detail::quarter_round(x[1], x[6], x[11], x[12]);
        detail::quarter_round(x[2], x[7], x[8], x[13]);
        detail::quarter_round(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; ++i) out[i] = x[i] + in[i];
}

// The 16-word input state of block `counter` of stream `stream` under `key`.
inline void chacha20_stream_state(const uint32_t key[8], uint64_t stream, uint64_t counter,
                                  uint32_t state[16]) {
    for (int i = 0; i < 4; ++i) state[i] = kChaChaConstants[i];
    for (int i = 0; i < 8; ++i) state[4 + i] = key[i];
    state[12] = static_cast<uint32_t>(counter);
    state[13] = static_cast<uint32_t>(counter >> 32);
    state[14] = static_cast<uint32_t>(stream);
    state[15] = static_cast<uint32_t>(stream >> 32);
}

namespace detail {

inline void blocks_portable(const uint32_t key[8], uint64_t stream, uint64_t counter,
                            size_t nblocks, uint32_t* out) {
    uint32_t state[16];
    for (size_t b = 0; b < nblocks; ++b) {
        chacha20_stream_state(key, stream, counter + b, state);
        chacha20_block(state, out + 16 * b);
    }
}

#ifdef DPNOISE_HAVE_AVX2_PATH
__attribute__((target("avx2"))) inline __m256i rotl_avx2(__m256i x, int n) {
    return _mm256_or_si256(_mm256_slli_epi32(x, n), _mm256_srli_epi32(x, 32 - n));
}

// Eight consecutive blocks at once: lane j of vector w holds word w of block j.
__attribute__((target("avx2"))) inline void blocks8_avx2(const uint32_t key[8], uint64_t stream,
                                                         uint64_t counter, uint32_t* out) {
    const __m256i rot16 = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
                                           2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    const __m256i rot8 = _mm256_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14,
                                          3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14);
    __m256i in[16];
    for (int i = 0; i < 4; ++i) in[i] = _mm256_set1_epi32(static_cast<int>(kChaChaConstants[i]));
    for (int i = 0; i < 8; ++i) in[4 + i] = _mm256_set1_epi32(static_cast<int>(key[i]));
    alignas(32) uint32_t lo[8], hi[8];
    for (int j = 0; j < 8; ++j) {
        const uint64_t c = counter + static_cast<uint64_t>(j);
        lo[j] = static_cast<uint32_t>(c);
        hi[j] = static_cast<uint32_t>(c >> 32);
    }
    in[12] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
    in[13] = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
    in[14] = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream)));
    in[15] = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream >> 32)));
    __m256i x[16];
    for (int i = 0; i < 16; ++i) x[i] = in[i];
#define DPNOISE_QR8(a, b, c, d)                                              \
    x[a] = _mm256_add_epi32(x[a], x[b]); x[d] = _mm256_xor_si256(x[d], x[a]); \
    x[d] = _mm256_shuffle_epi8(x[d], rot16);                                  \
    x[c] = _mm256_add_epi32(x[c], x[d]); x[b] = _mm256_xor_si256(x[b], x[c]); \
    x[b] = rotl_avx2(x[b], 12);                                               \
    x[a] = _mm256_add_epi32(x[a], x[b]); x[d] = _mm256_xor_si256(x[d], x[a]); \
    x[d] = _mm256_shuffle_epi8(x[d], rot8);                                   \
    x[c] = _mm256_add_epi32(x[c], x[d]); x[b] = _mm256_xor_si256(x[b], x[c]); \
    x[b] = rotl_avx2(x[b], 7);
    for (int r = 0; r < 10; ++r) {
        DPNOISE_QR8(0, 4, 8, 12) DPNOISE_QR8(1, 5, 9, 13) DPNOISE_QR8(2, 6, 10, 14)
        DPNOISE_QR8(3, 7, 11, 15) DPNOISE_QR8(0, 5, 10, 15) DPNOISE_QR8(1, 6, 11, 12)
        DPNOISE_QR8(2, 7, 8, 13) DPNOISE_QR8(3, 4, 9, 14)
    }
#undef DPNOISE_QR8
    for (int i = 0; i < 16; ++i) x[i] = _mm256_add_epi32(x[i], in[i]);
    // Transpose the two 8x8 word matrices (words 0-7 and 8-15) so each block is contiguous.
    for (int half = 0; half < 2; ++half) {
        __m256i* v = x + 8 * half;
        __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
        __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
        __m256i t4 = _mm256_unpacklo_epi32(v[4], v[5]), t5 = _mm256_unpackhi_epi32(v[4], v[5]);
        __m256i t6 = _mm256_unpacklo_epi32(v[6], v[7]), t7 = _mm256_unpackhi_epi32(v[6], v[7]);
        __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
        __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
        __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
        __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
        // u0 holds words 0..3 of blocks 0 and 4 (low/high 128-bit lanes), u4 words 4..7.
        const __m256i rows[8] = {
            _mm256_permute2x128_si256(u0, u4, 0x20), _mm256_permute2x128_si256(u1, u5, 0x20),
            _mm256_permute2x128_si256(u2, u6, 0x20), _mm256_permute2x128_si256(u3, u7, 0x20),
            _mm256_permute2x128_si256(u0, u4, 0x31), _mm256_permute2x128_si256(u1, u5, 0x31),
            _mm256_permute2x128_si256(u2, u6, 0x31), _mm256_permute2x128_si256(u3, u7, 0x31)};
        for (int j = 0; j < 8; ++j)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16 * j + 8 * half), rows[j]);
    }
}

inline bool cpu_has_avx2() {
    static const bool has = __builtin_cpu_supports("avx2");
    return has;
}
#endif  // DPNOISE_HAVE_AVX2_PATH

}  // namespace detail

// Which block implementation is in use ("avx2" or "portable"), for reports and tests.
inline const char* chacha20_backend() {
#ifdef DPNOISE_HAVE_AVX2_PATH
    if (detail::cpu_has_avx2()) return "avx2";
#endif
    return "portable";
}

// Writes blocks counter, counter+1, ... counter+nblocks-1 of `stream` (16 words each).
// Throws std::overflow_error rather than let the 64-bit block counter wrap around.
inline void chacha20_stream_blocks(const uint32_t key[8], uint64_t stream, uint64_t counter,
                                   size_t nblocks, uint32_t* out, bool allow_simd = true) {
    if (nblocks > 0 && counter > UINT64_MAX - (nblocks - 1))
        throw std::overflow_error("ChaCha20 block counter would wrap around");
    size_t done = 0;
#ifdef DPNOISE_HAVE_AVX2_PATH
    if (allow_simd && detail::cpu_has_avx2()) {
        for (; done + 8 <= nblocks; done += 8)
            detail::blocks8_avx2(key, stream, counter + done, out + 16 * done);
    }
#else
    (void)allow_simd;
#endif
    detail::blocks_portable(key, stream, counter + done, nblocks - done, out + 16 * done);
}

}  // namespace dpnoise::random
