// The memoisation PRF of daily collection (src/dpnoise/ldp/longitudinal.py, memo_generator):
// BLAKE2b-256 keyed with the 32-byte device key and personalised with a 16-byte string, of the
// 40-byte message fingerprint || item (int64, little-endian): RFC 7693 (BLAKE2, sections 2.5
// keyed hashing, 2.8 parameter block; the personalisation as in the BLAKE2 paper, section 2.8,
// and Python's hashlib). Its 32-byte digest is the ChaCha20 key of that (device, item,
// configuration)'s permanent answer. Bytes in, bytes out: no Python, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dpnoise::ldp {

class MemoPrf {
public:
    static constexpr size_t kKeyBytes = 32, kFingerprintBytes = 32, kPersonBytes = 16, kDigestBytes = 32;

    // person: 16 bytes (shorter personalisations zero-padded by the caller, as hashlib does)
    MemoPrf(const uint8_t* fingerprint, const uint8_t* person) {
        std::memcpy(fingerprint_, fingerprint, kFingerprintBytes);
        for (int i = 0; i < 8; ++i) h0_[i] = kIv[i];
        // parameter block (RFC 7693 2.5; BLAKE2 paper 2.8): digest length, key length, fanout 1,
        // depth 1; words 6 and 7 hold the personalisation
        h0_[0] ^= 0x01010000ULL ^ (uint64_t{kKeyBytes} << 8) ^ uint64_t{kDigestBytes};
        h0_[6] ^= load64(person);
        h0_[7] ^= load64(person + 8);
    }

    // digest = BLAKE2b_{key}(fingerprint || le64(item)), 32 bytes
    void operator()(const uint8_t* key, int64_t item, uint8_t* digest) const {
        uint64_t h[8];
        for (int i = 0; i < 8; ++i) h[i] = h0_[i];
        uint8_t block[128] = {};
        std::memcpy(block, key, kKeyBytes);  // the key, zero-padded to one block (RFC 7693 3.3)
        compress(h, block, 128, false);
        std::memset(block, 0, sizeof block);
        std::memcpy(block, fingerprint_, kFingerprintBytes);
        const uint64_t x = static_cast<uint64_t>(item);
        for (int i = 0; i < 8; ++i) block[kFingerprintBytes + i] = static_cast<uint8_t>(x >> (8 * i));
        compress(h, block, 128 + kFingerprintBytes + 8, true);
        for (size_t i = 0; i < kDigestBytes; ++i) digest[i] = static_cast<uint8_t>(h[i / 8] >> (8 * (i % 8)));
    }

private:
    static constexpr uint64_t kIv[8] = {0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
                                        0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
                                        0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};
    static constexpr uint8_t kSigma[12][16] = {
        {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
        {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
        {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
        {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
        {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
        {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

    static uint64_t load64(const uint8_t* p) {
        uint64_t v = 0;
        for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
        return v;
    }
    static uint64_t rotr(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

    // RFC 7693 3.2, function F (t: bytes compressed so far, this block included; < 2^64 here)
    static void compress(uint64_t* h, const uint8_t* block, uint64_t t, bool last) {
        uint64_t m[16], v[16];
        for (int i = 0; i < 16; ++i) m[i] = load64(block + 8 * i);
        for (int i = 0; i < 8; ++i) {
            v[i] = h[i];
            v[i + 8] = kIv[i];
        }
        v[12] ^= t;
        if (last) v[14] = ~v[14];
        auto g = [&v](int a, int b, int c, int d, uint64_t x, uint64_t y) {  // RFC 7693 3.1
            v[a] = v[a] + v[b] + x;
            v[d] = rotr(v[d] ^ v[a], 32);
            v[c] = v[c] + v[d];
            v[b] = rotr(v[b] ^ v[c], 24);
            v[a] = v[a] + v[b] + y;
            v[d] = rotr(v[d] ^ v[a], 16);
            v[c] = v[c] + v[d];
            v[b] = rotr(v[b] ^ v[c], 63);
        };
        for (int r = 0; r < 12; ++r) {
            const uint8_t* s = kSigma[r];
            g(0, 4, 8, 12, m[s[0]], m[s[1]]);
            g(1, 5, 9, 13, m[s[2]], m[s[3]]);
            g(2, 6, 10, 14, m[s[4]], m[s[5]]);
            g(3, 7, 11, 15, m[s[6]], m[s[7]]);
            g(0, 5, 10, 15, m[s[8]], m[s[9]]);
            g(1, 6, 11, 12, m[s[10]], m[s[11]]);
            g(2, 7, 8, 13, m[s[12]], m[s[13]]);
            g(3, 4, 9, 14, m[s[14]], m[s[15]]);
        }
        for (int i = 0; i < 8; ++i) h[i] ^= v[i] ^ v[i + 8];
    }

    uint64_t h0_[8];
    uint8_t fingerprint_[kFingerprintBytes];
};

}  // namespace dpnoise::ldp
