// dpnoise/exact/constant_time/public_word.hpp -- word w of a public ChaCha20 stream
// (random/public_stream.hpp's layout) in constant time in w: the one helper behind the
// constant-time public-matrix row seed (ldp/constant_time/) and the constant-time sketch hash
// (SketchHashCT, ldp/constant_time/randomizers.hpp), whose w is the secret item. Proof:
// docs/security.md, the constant-time mean oracles' section.
//
// PublicStream::words batches blocks and starts its loop at w mod 8 (a branch and a trip count
// that depend on w). Here the ChaCha20 block w / 8 is computed alone (RFC 8439 §2.3: additions,
// rotations and xors of 32-bit words, no branch and no table, so its time does not depend on the
// counter) and the 64-bit word w mod 8 is selected from all eight by masks from a branch-free
// compare (ct_ops.hpp): every call reads the same 16 words and runs the same instructions.
// The result equals PublicStream(key).words(stream, w, &out, 1) bit for bit.
#pragma once
#include <cstdint>

#include "dpnoise/exact/constant_time/ct_ops.hpp"
#include "dpnoise/random/chacha20.hpp"
#include "dpnoise/random/keystream.hpp"

namespace dpnoise::exact::ct {

// Word `word` of public stream `stream` (32-bit words 2(w mod 8), 2(w mod 8) + 1 of block w / 8,
// little-endian), constant time in `word`.
inline uint64_t public_word_ct(const random::StreamKey& key, uint64_t stream, uint64_t word) {
    uint32_t state[16], block[16];
    random::chacha20_stream_state(key.words, stream, word >> 3, state);
    random::chacha20_block(state, block);
    const uint64_t at = word & 7;
    uint64_t out = 0;
    for (uint64_t i = 0; i < 8; ++i) {
        const uint64_t v = static_cast<uint64_t>(block[2 * i]) | (static_cast<uint64_t>(block[2 * i + 1]) << 32);
        out |= v & mask_of(eq64(i, at));
    }
    return out;
}

}  // namespace dpnoise::exact::ct
