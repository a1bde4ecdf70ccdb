// dpnoise/random/keystream.hpp -- one ChaCha20 stream (key, stream id) read as 64-bit words,
// buffered sixteen blocks (one group of the widest kernel) at a time. Not thread-safe: each
// worker owns its own.
#pragma once
#include <cstddef>
#include <cstdint>

#include "dpnoise/random/chacha20.hpp"

namespace dpnoise::random {

struct StreamKey {
    uint32_t words[8];
};

// The keystream of blocks [first_block, first_block + nblocks) of `stream` as 64-bit words:
// keystream bytes are little-endian 32-bit words, and a 64-bit word is two consecutive ones.
// On a little-endian machine that is the keystream's own memory image, so the kernel writes
// straight into `out` (chacha20_stream_blocks writes through vector stores and memcpy, which
// may alias uint64_t); a big-endian machine swaps the halves of each word afterwards.
inline void keystream_words64(const StreamKey& key, uint64_t stream, uint64_t first_block, size_t nblocks,
                              uint64_t* out) {
    chacha20_stream_blocks(key.words, stream, first_block, nblocks, reinterpret_cast<uint32_t*>(out));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (size_t i = 0; i < 8 * nblocks; ++i) out[i] = (out[i] << 32) | (out[i] >> 32);
#endif
}

template <unsigned NBlocks>
inline void keystream_words64(const StreamKey& key, uint64_t stream, uint64_t first_block, uint64_t* out) {
    keystream_words64(key, stream, first_block, NBlocks, out);
}

class KeystreamWords {
public:
    static constexpr unsigned kBlocks = 16;
    static constexpr unsigned kWords = kBlocks * 8;  // 64-bit words per refill

    KeystreamWords(const StreamKey& key, uint64_t stream, uint64_t first_block = 0)
        : key_(key), stream_(stream), next_block_(first_block) {}

    uint64_t next_u64() {
        if (pos_ == kWords) refill();
        return buffer_[pos_++];
    }

    uint64_t next_block() const { return next_block_; }

    // Discards buffered words (after a re-key) so that none of them is handed out again.
    void reset(const StreamKey& key, uint64_t stream, uint64_t first_block) {
        key_ = key;
        stream_ = stream;
        next_block_ = first_block;
        pos_ = kWords;
        fresh_ = true;
    }

    // Skips the counter forward over blocks another caller generated directly.
    void skip_blocks(uint64_t n) { next_block_ += n; }

    unsigned buffered() const { return kWords - pos_; }

private:
    // Sixteen blocks at a time, except the first refill of a stream, which makes one block (8
    // words: a scalar draw's request needs no more, and one block costs about half of sixteen),
    // placed at the end of the buffer so that the hot path's test stays `pos_ == kWords`. The
    // words are the stream's words in order either way: only how many are computed ahead moves.
    // Out of line: the samplers' chunk loops are flattened (stream_fill.hpp), and inlined there
    // the kernel dispatch bloated every loop until GCC stopped inlining the reader's fast path
    // itself (discrete_laplace(10) ran 15% slower). A call per 128 words costs nothing.
    [[gnu::noinline]] void refill() {
        if (fresh_) {
            refill_first();
            return;
        }
        keystream_words64<kBlocks>(key_, stream_, next_block_, buffer_);
        next_block_ += kBlocks;
        pos_ = 0;
    }

    [[gnu::noinline, gnu::cold]] void refill_first() {
        keystream_words64<1>(key_, stream_, next_block_, buffer_ + kWords - 8);
        next_block_ += 1;
        pos_ = kWords - 8;
        fresh_ = false;
    }

    StreamKey key_;
    uint64_t stream_;
    uint64_t next_block_;
    unsigned pos_ = kWords;
    bool fresh_ = true;  // no word computed since construction or reset
    alignas(64) uint64_t buffer_[kWords];
};

}  // namespace dpnoise::random
