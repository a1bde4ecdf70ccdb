// C++ unit tests of the constant-time public-stream word (exact/constant_time/public_word.hpp)
// and its two users, the zmatrix row seed (row_seed_ct, entry_bit_ct) and the sketch hash
// (SketchHashCT): each must equal the variable-time path (PublicStream::words,
// PublicSignMatrix, SketchHashes) bit for bit, at every word offset within a block (w mod 8),
// across block boundaries, at the top of the 64-bit word range and for large stream ids.
// Deterministic (no statistics): every check is an exact equality.
#include <cstdint>
#include <vector>

#include "dpnoise/ldp/constant_time/randomizers.hpp"
#include "dpnoise/exact/constant_time/public_word.hpp"
#include "dpnoise/ldp/constant_time/zmatrix.hpp"
#include "dpnoise/ldp/count_mean_sketch.hpp"
#include "dpnoise/ldp/public_matrix.hpp"
#include "dpnoise/random/public_stream.hpp"

#include "check.hpp"

using namespace dpnoise;

// the words tried: the first three blocks, and the last three blocks below 2^64
static std::vector<uint64_t> offsets() {
    std::vector<uint64_t> w;
    for (uint64_t i = 0; i < 24; ++i) {
        w.push_back(i);
        w.push_back(UINT64_MAX - i);
    }
    w.push_back(uint64_t{1} << 40);
    w.push_back((uint64_t{1} << 40) + 5);
    return w;
}

static void test_public_word_matches_the_public_stream() {
    for (uint32_t seed : {0u, 3u, 0xdeadbeefu}) {
        const random::StreamKey key = test_key(seed);
        const random::PublicStream stream(key);
        for (uint64_t s : {uint64_t{0}, uint64_t{1}, uint64_t{65535}, UINT64_MAX}) {
            for (uint64_t w : offsets()) {
                uint64_t expected = 0;
                stream.words(s, w, &expected, 1);
                CHECK(exact::ct::public_word_ct(key, s, w) == expected);
            }
        }
    }
}

static void test_zmatrix_row_seed_and_entries() {
    const random::StreamKey key = test_key(17);
    const ldp::PublicSignMatrix z(key);
    for (uint64_t row : offsets()) {
        CHECK(exact::ct::row_seed_ct(key, row) == z.row_seed(row));
        for (uint64_t column : {uint64_t{0}, uint64_t{63}, uint64_t{64}, uint64_t{1000}})
            CHECK(exact::ct::entry_bit_ct(key, row, column) == ldp::PublicSignMatrix::bit(z.row_seed(row), column));
    }
}

static void test_sketch_hash_matches_sketch_hashes() {
    const random::StreamKey key = test_key(29);
    for (uint64_t width : {uint64_t{8}, uint64_t{128}, uint64_t{65536}}) {
        const ldp::SketchHashes h(key, 16, width);
        const exact::ct::SketchHashCT ct{key, 16, width};
        for (uint64_t l = 0; l < 16; ++l)
            for (uint64_t x : offsets()) CHECK(ct(l, x) == h(l, x));
    }
}

int main() {
    test_public_word_matches_the_public_stream();
    test_zmatrix_row_seed_and_entries();
    test_sketch_hash_matches_sketch_hashes();
    return report("test_constant_time_public_word");
}
