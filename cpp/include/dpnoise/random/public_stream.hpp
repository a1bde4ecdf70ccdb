// dpnoise/random/public_stream.hpp -- PUBLIC, addressable pseudo-random words: ChaCha20 of a
// public key, for randomness that everybody may know (the public matrix of an LDP protocol,
// hash seeds). A separate type from ChaCha20Generator, with no conversion between them: a
// public stream can never be used where secret noise is drawn.
//
// Layout (RFC 8439 §2.3 block function; 64-bit block counter in state words 12-13, 64-bit stream
// id in words 14-15, as for the generator): word w of stream s is keystream bytes 8w..8w+7 of
// stream s, little-endian, i.e. 32-bit words 2(w mod 8) and 2(w mod 8)+1 of block w / 8.
// Counter-based, so any word is computed directly from its address (s, w), without state.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "dpnoise/random/chacha20.hpp"
#include "dpnoise/random/keystream.hpp"

namespace dpnoise::random {

class PublicStream {
public:
    explicit PublicStream(const StreamKey& public_key) : key_(public_key) {}

    // out[i] = word offset + i of stream `stream`, for i < n.
    void words(uint64_t stream, uint64_t offset, uint64_t* out, size_t n) const {
        if (n == 0) return;
        if (n - 1 > UINT64_MAX - offset) throw std::overflow_error("public stream word offset would wrap around");
        uint64_t w = offset;
        size_t done = 0;
        alignas(32) uint32_t raw[16 * kBatch];
        while (done < n) {
            const uint64_t block = w / 8;
            const unsigned skip = static_cast<unsigned>(w % 8);
            const size_t want_blocks = std::min<size_t>(kBatch, (n - done + skip + 7) / 8);
            chacha20_stream_blocks(key_.words, stream, block, want_blocks, raw);
            for (size_t i = skip; i < 8 * want_blocks && done < n; ++i, ++w)
                out[done++] = static_cast<uint64_t>(raw[2 * i]) | (static_cast<uint64_t>(raw[2 * i + 1]) << 32);
        }
    }

    // The first n uniform integers in [0, m) of stream `stream`, by rejection from its words in
    // order: a word x is accepted when x < m * floor(2^64 / m) and gives x mod m (exactly
    // uniform; each word is accepted with probability > 1/2). Prefix-consistent: the first k
    // values of a longer request are the values of a request of k.
    void integers_below(uint64_t stream, uint64_t m, uint64_t* out, size_t n) const {
        if (m == 0) throw std::invalid_argument("m must be positive");
        const uint64_t limit = UINT64_MAX - (UINT64_MAX % m + 1) % m;  // m*floor(2^64/m) - 1
        uint64_t buf[8 * kBatch];
        uint64_t offset = 0;
        size_t done = 0;
        while (done < n) {
            words(stream, offset, buf, 8 * kBatch);
            offset += 8 * kBatch;
            for (size_t i = 0; i < 8 * kBatch && done < n; ++i)
                if (buf[i] <= limit) out[done++] = buf[i] % m;
        }
    }

    // Signs of the public ±1 matrix for rows [row0, row0 + nrows) and columns
    // [col0, col0 + ncols), row-major into out (nrows * ncols entries): entry (r, c) is
    // 1 - 2 * (bit c mod 64 of word c / 64 of stream r). Memory is the block only.
    void signs(uint64_t row0, uint64_t nrows, uint64_t col0, uint64_t ncols, int8_t* out) const {
        if (nrows == 0 || ncols == 0) return;
        if (nrows - 1 > UINT64_MAX - row0 || ncols - 1 > UINT64_MAX - col0)
            throw std::overflow_error("public matrix block beyond 2^64 rows or columns");
        const uint64_t w0 = col0 / 64, w1 = (col0 + (ncols - 1)) / 64;
        const size_t nw = static_cast<size_t>(w1 - w0 + 1);
        uint64_t buf[8 * kBatch];
        for (uint64_t r = 0; r < nrows; ++r) {
            int8_t* row = out + r * ncols;
            uint64_t c = 0;
            for (size_t base = 0; base < nw; base += 8 * kBatch) {
                const size_t cnt = std::min<size_t>(8 * kBatch, nw - base);
                words(row0 + r, w0 + base, buf, cnt);
                for (size_t i = 0; i < cnt && c < ncols; ++i) {
                    const uint64_t word = buf[i];
                    for (; c < ncols && (col0 + c) / 64 == w0 + base + i; ++c)
                        row[c] = static_cast<int8_t>(1 - 2 * static_cast<int>((word >> ((col0 + c) % 64)) & 1u));
                }
            }
        }
    }

private:
    static constexpr size_t kBatch = 16;  // blocks generated per call of the block function
    StreamKey key_;
};

}  // namespace dpnoise::random
