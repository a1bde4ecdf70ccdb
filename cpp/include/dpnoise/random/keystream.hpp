// dpnoise/random/keystream.hpp -- one ChaCha20 stream (key, stream id) read as 64-bit words,
// buffered eight blocks at a time. Not thread-safe: each worker owns its own.
#pragma once
#include <cstdint>

#include "dpnoise/random/chacha20.hpp"

namespace dpnoise::random {

struct StreamKey {
    uint32_t words[8];
};

class KeystreamWords {
public:
    static constexpr unsigned kBlocks = 8;
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
    }

    // Skips the counter forward over blocks another caller generated directly.
    void skip_blocks(uint64_t n) { next_block_ += n; }

    unsigned buffered() const { return kWords - pos_; }

private:
    void refill() {
        alignas(32) uint32_t raw[16 * kBlocks];
        chacha20_stream_blocks(key_.words, stream_, next_block_, kBlocks, raw);
        next_block_ += kBlocks;
        // Keystream bytes are little-endian 32-bit words; a 64-bit word is two consecutive ones.
        for (unsigned i = 0; i < kWords; ++i)
            buffer_[i] = static_cast<uint64_t>(raw[2 * i]) | (static_cast<uint64_t>(raw[2 * i + 1]) << 32);
        pos_ = 0;
    }

    StreamKey key_;
    uint64_t stream_;
    uint64_t next_block_;
    unsigned pos_ = kWords;
    alignas(32) uint64_t buffer_[kWords];
};

}  // namespace dpnoise::random
