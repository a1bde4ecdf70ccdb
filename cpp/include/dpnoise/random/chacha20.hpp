// dpnoise/random/chacha20.hpp -- the ChaCha20 block function (RFC 8439 §2.3) and a
// multi-block keystream generator with a portable path and AVX2 / AVX-512VL paths (8 blocks
// in parallel), chosen at run time.
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

// AVX2: rotations by 16 and 8 as byte shuffles, by 12 and 7 as two shifts and an or.
#define DPNOISE_SIMD8_NAME blocks8_avx2
#define DPNOISE_SIMD8_TARGET "avx2"
#define DPNOISE_SIMD8_ROT16(x) _mm256_shuffle_epi8(x, rot16)
#define DPNOISE_SIMD8_ROT8(x) _mm256_shuffle_epi8(x, rot8)
#define DPNOISE_SIMD8_ROTL(x, n) rotl_avx2(x, n)
#include "dpnoise/random/chacha20_simd8.inc"
#undef DPNOISE_SIMD8_NAME
#undef DPNOISE_SIMD8_TARGET
#undef DPNOISE_SIMD8_ROT16
#undef DPNOISE_SIMD8_ROT8
#undef DPNOISE_SIMD8_ROTL

// AVX-512VL: the same 256-bit kernel with the native rotate (vprold) and 32 vector registers,
// so the 16-word state no longer spills.
#define DPNOISE_SIMD8_NAME blocks8_avx512vl
#define DPNOISE_SIMD8_TARGET "avx2,avx512f,avx512vl"
#define DPNOISE_SIMD8_ROT16(x) _mm256_rol_epi32(x, 16)
#define DPNOISE_SIMD8_ROT8(x) _mm256_rol_epi32(x, 8)
#define DPNOISE_SIMD8_ROTL(x, n) _mm256_rol_epi32(x, n)
#include "dpnoise/random/chacha20_simd8.inc"
#undef DPNOISE_SIMD8_NAME
#undef DPNOISE_SIMD8_TARGET
#undef DPNOISE_SIMD8_ROT16
#undef DPNOISE_SIMD8_ROT8
#undef DPNOISE_SIMD8_ROTL

inline bool cpu_has_avx512vl() {
    static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
    return has;
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
    if (detail::cpu_has_avx512vl()) return "avx512vl";
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
    if (allow_simd && detail::cpu_has_avx512vl()) {
        for (; done + 8 <= nblocks; done += 8)
            detail::blocks8_avx512vl(key, stream, counter + done, out + 16 * done);
    } else if (allow_simd && detail::cpu_has_avx2()) {
        for (; done + 8 <= nblocks; done += 8)
            detail::blocks8_avx2(key, stream, counter + done, out + 16 * done);
    }
#else
    (void)allow_simd;
#endif
    detail::blocks_portable(key, stream, counter + done, nblocks - done, out + 16 * done);
}

}  // namespace dpnoise::random
