// dpnoise/ldp/public_matrix.hpp -- the public random sign matrix Z ∈ {−1,+1}^{d×W} of the Z-matrix
// frequency oracle (Bassily & Smith 2015; its user guide in docs/), never stored: every entry is computed from its address
// and a public key, identically on clients and servers.
//
// Row r has a 64-bit seed: word r of stream kRowSeedStream of the ChaCha20 public stream of the
// key (random/public_stream.hpp). Word w of row r (columns 64w .. 64w+63) is
// PublicSplitMix::word(seed_r, w) (random/public_splitmix.hpp), and
//   Z[r, c] = 1 − 2 · (bit c mod 64 of word c / 64 of row r).
// A client needs one entry: one row seed (or a table of them) and one word. A server sweeps a
// row word by word from its seed. Both are public randomness: never the secret generator.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dpnoise/random/public_splitmix.hpp"
#include "dpnoise/random/public_stream.hpp"

namespace dpnoise::ldp {

class PublicSignMatrix {
public:
    static constexpr uint64_t kRowSeedStream = 0;

    explicit PublicSignMatrix(const random::StreamKey& public_key) : key_(public_key), stream_(public_key) {}

    // The public key (the constant-time client computes row seeds from it, ldp/constant_time/).
    const random::StreamKey& key() const { return key_; }

    uint64_t row_seed(uint64_t row) const {
        uint64_t s;
        stream_.words(kRowSeedStream, row, &s, 1);
        return s;
    }

    // Seeds of rows [row0, row0 + n).
    void row_seeds(uint64_t row0, uint64_t* out, size_t n) const { stream_.words(kRowSeedStream, row0, out, n); }

    static uint64_t word(uint64_t row_seed, uint64_t w) { return random::PublicSplitMix::word(row_seed, w); }

    // The bit of Z[r, c] (1 means −1) from the row's seed: one word, O(1).
    static unsigned bit(uint64_t row_seed, uint64_t column) {
        return static_cast<unsigned>((word(row_seed, column / 64) >> (column % 64)) & 1u);
    }

    // Z[r, c] as ±1, from the address alone (one ChaCha20 block and one word).
    int entry(uint64_t row, uint64_t column) const { return 1 - 2 * static_cast<int>(bit(row_seed(row), column)); }

private:
    random::StreamKey key_;
    random::PublicStream stream_;
};

}  // namespace dpnoise::ldp
