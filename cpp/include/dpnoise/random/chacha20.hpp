// dpnoise/random/chacha20.hpp -- the ChaCha20 block function (RFC 8439 §2.3) and a
// multi-block keystream generator: a portable path, 8-block AVX2 / AVX-512VL kernels on
// 256-bit vectors and a 16-block AVX-512F kernel on 512-bit vectors, chosen at run time (each
// SIMD kernel is compiled with its own target attribute; no global -m flags). The SIMD kernels
// exist on x86-64 only (DPNOISE_X86_SIMD, dpnoise/simd.hpp); other CPUs use the portable path.
//
// State layout (RFC 8439 §2.3): words 0-3 constants, 4-11 key, 12-15 counter/nonce.
// The RFC variant uses word 12 as a 32-bit block counter and words 13-15 as the nonce;
// dpnoise's streams use words 12-13 as a 64-bit block counter and 14-15 as a 64-bit
// stream id (the original Bernstein layout). The block function is the same for both.
#pragma once
#include <cstddef>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "dpnoise/simd.hpp"  // DPNOISE_X86_SIMD: the SIMD kernels below (x86-64 only)

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

// Writes through memcpy, so `out` may be the storage of other integer words (64-bit keystream
// words are two of these, little-endian) without breaking type-based aliasing; the SIMD kernels
// store through vector types, which may alias anything.
inline void blocks_portable(const uint32_t key[8], uint64_t stream, uint64_t counter,
                            size_t nblocks, uint32_t* out) {
    uint32_t state[16], block[16];
    for (size_t b = 0; b < nblocks; ++b) {
        chacha20_stream_state(key, stream, counter + b, state);
        chacha20_block(state, block);
        std::memcpy(out + 16 * b, block, sizeof block);
    }
}

#ifdef DPNOISE_X86_SIMD
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

// `ngroups` groups of 8 blocks (the 16-block kernel's interface).
__attribute__((target("avx2"))) inline void blocks8_avx2_groups(const uint32_t key[8], uint64_t stream,
                                                                 uint64_t counter, size_t ngroups, uint32_t* out) {
    for (size_t g = 0; g < ngroups; ++g) blocks8_avx2(key, stream, counter + 8 * g, out + 128 * g);
}
__attribute__((target("avx2,avx512f,avx512vl"))) inline void blocks8_avx512vl_groups(
    const uint32_t key[8], uint64_t stream, uint64_t counter, size_t ngroups, uint32_t* out) {
    for (size_t g = 0; g < ngroups; ++g) blocks8_avx512vl(key, stream, counter + 8 * g, out + 128 * g);
}

// AVX-512F: 16 blocks per call on 512-bit vectors (vprold), chacha20_simd16.inc. GCC 12 warns
// falsely about the "undefined" vector its own AVX-512 intrinsics start from (GCC bug 105593,
// fixed in GCC 13); nothing in the kernel reads an uninitialised value.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "dpnoise/random/chacha20_simd16.inc"
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

inline bool cpu_has_avx512f() {
    static const bool has = __builtin_cpu_supports("avx512f");
    return has;
}

inline bool cpu_has_avx512vl() {
    static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
    return has;
}

inline bool cpu_has_avx2() {
    static const bool has = __builtin_cpu_supports("avx2");
    return has;
}
#endif  // DPNOISE_X86_SIMD

}  // namespace detail

// The multi-block kernels, fastest last: kAvx512f computes 16 blocks at a time on 512-bit
// vectors, kAvx512vl and kAvx2 8 blocks on 256-bit vectors. Every kernel writes the same words.
enum class ChaCha20Kernel : int { kPortable = 0, kAvx2 = 1, kAvx512vl = 2, kAvx512f = 3 };

inline const char* chacha20_kernel_name(ChaCha20Kernel k) {
    switch (k) {
        case ChaCha20Kernel::kAvx512f: return "avx512f";
        case ChaCha20Kernel::kAvx512vl: return "avx512vl";
        case ChaCha20Kernel::kAvx2: return "avx2";
        case ChaCha20Kernel::kPortable: break;
    }
    return "portable";
}

// Whether this CPU (and this build) can run kernel k.
inline bool chacha20_kernel_supported(ChaCha20Kernel k) {
    switch (k) {
        case ChaCha20Kernel::kPortable: return true;
#ifdef DPNOISE_X86_SIMD
        case ChaCha20Kernel::kAvx2: return detail::cpu_has_avx2();
        case ChaCha20Kernel::kAvx512vl: return detail::cpu_has_avx512vl();
        case ChaCha20Kernel::kAvx512f: return detail::cpu_has_avx512f();
#else
        default: return false;
#endif
    }
    return false;
}

namespace detail {
// -1: the fastest supported kernel; otherwise a ChaCha20Kernel forced by a test (the words do
// not change, only which code computes them). One relaxed load per multi-block call.
inline std::atomic<int>& forced_kernel_for_testing() {
    static std::atomic<int> forced{-1};
    return forced;
}

inline ChaCha20Kernel best_kernel() {
    static const ChaCha20Kernel best = [] {
        for (ChaCha20Kernel k : {ChaCha20Kernel::kAvx512f, ChaCha20Kernel::kAvx512vl, ChaCha20Kernel::kAvx2})
            if (chacha20_kernel_supported(k)) return k;
        return ChaCha20Kernel::kPortable;
    }();
    return best;
}
}  // namespace detail

// The kernel chacha20_stream_blocks uses: the fastest this CPU has, unless a test forced one.
inline ChaCha20Kernel chacha20_active_kernel() {
    const int forced = detail::forced_kernel_for_testing().load(std::memory_order_relaxed);
    return forced < 0 ? detail::best_kernel() : static_cast<ChaCha20Kernel>(forced);
}

// Test hook: force kernel k (it must be supported) for every later multi-block call, or go
// back to the fastest with k = nullptr. Returns false, changing nothing, for an unsupported k.
inline bool force_chacha20_kernel_for_testing(const ChaCha20Kernel* k) {
    if (k != nullptr && !chacha20_kernel_supported(*k)) return false;
    detail::forced_kernel_for_testing().store(k == nullptr ? -1 : static_cast<int>(*k), std::memory_order_relaxed);
    return true;
}

// Which block implementation is in use ("avx512f", "avx512vl", "avx2" or "portable"), for
// reports and tests.
inline const char* chacha20_backend() { return chacha20_kernel_name(chacha20_active_kernel()); }

namespace detail {
// Whole groups of kGroup blocks straight into `out`; a remainder of two or more blocks as one
// more group into a local buffer, of which the blocks asked for are copied (on an AVX-512 Xeon
// a group of 16 blocks takes ~170 ns, of 8 blocks 135-195 ns, one portable block ~95 ns); a
// single block with the portable kernel. The blocks computed past the end are dropped; their
// counters may pass 2^64 (the lanes wrap), which is harmless since none of them is handed out.
template <size_t kGroup, class Groups>
inline void blocks_in_groups(Groups groups, const uint32_t key[8], uint64_t stream, uint64_t counter,
                             size_t nblocks, uint32_t* out) {
    const size_t whole = nblocks / kGroup;
    if (whole > 0) groups(key, stream, counter, whole, out);
    const size_t done = kGroup * whole, rest = nblocks - done;
    if (rest >= 2) {
        alignas(64) uint32_t group[16 * kGroup];
        groups(key, stream, counter + done, 1, group);
        std::memcpy(out + 16 * done, group, 64 * rest);
    } else {
        blocks_portable(key, stream, counter + done, rest, out + 16 * done);
    }
}
}  // namespace detail

// Blocks counter, ..., counter+nblocks-1 of `stream` with kernel k (supported; the caller
// checked that the counter does not wrap).
inline void chacha20_stream_blocks_with(ChaCha20Kernel k, const uint32_t key[8], uint64_t stream, uint64_t counter,
                                        size_t nblocks, uint32_t* out) {
#ifdef DPNOISE_X86_SIMD
    using detail::blocks_in_groups;
    switch (k) {
        case ChaCha20Kernel::kAvx512f:
            return blocks_in_groups<16>(&detail::blocks16_avx512f, key, stream, counter, nblocks, out);
        case ChaCha20Kernel::kAvx512vl:
            return blocks_in_groups<8>(&detail::blocks8_avx512vl_groups, key, stream, counter, nblocks, out);
        case ChaCha20Kernel::kAvx2:
            return blocks_in_groups<8>(&detail::blocks8_avx2_groups, key, stream, counter, nblocks, out);
        case ChaCha20Kernel::kPortable: break;
    }
#else
    (void)k;
#endif
    detail::blocks_portable(key, stream, counter, nblocks, out);
}

// Writes blocks counter, counter+1, ... counter+nblocks-1 of `stream` (16 words each), with the
// active kernel (the portable one when allow_simd is false).
// Throws std::overflow_error rather than let the 64-bit block counter wrap around.
inline void chacha20_stream_blocks(const uint32_t key[8], uint64_t stream, uint64_t counter,
                                   size_t nblocks, uint32_t* out, bool allow_simd = true) {
    if (nblocks > 0 && counter > UINT64_MAX - (nblocks - 1))
        throw std::overflow_error("ChaCha20 block counter would wrap around");
    chacha20_stream_blocks_with(allow_simd ? chacha20_active_kernel() : ChaCha20Kernel::kPortable, key, stream,
                                counter, nblocks, out);
}

}  // namespace dpnoise::random
