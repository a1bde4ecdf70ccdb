// dpnoise/ldp/constant_time/zmatrix.hpp -- the zmatrix client (ldp/zmatrix_oracle.hpp: report
// ±Z[x, c], kept with probability e^γ/(e^γ + 1); Bassily & Smith 2015) in constant time in the
// secret item x and the random bits. docs/security.md, "Constant-time zmatrix".
//
// The entry: Z[x, c]'s bit is bit c mod 64 of PublicSplitMix::word(seed_x, c / 64), seed_x the
// 64-bit word x of the public ChaCha20 stream (ldp/public_matrix.hpp). The default client looks
// seed_x up in a table of all d seeds (an address that depends on x) or asks the public stream
// for word x (whose batching branches on x). Here seed_x is the ChaCha20 block x / 8 (RFC 8439
// §2.3: additions, rotations and xors of 32-bit words, no branch and no table) with word x mod 8
// selected by a scan of the block's 8 words (public_word.hpp, shared with the constant-time
// sketch hash); the SplitMix64 mix is multiplies, xors and shifts.
// The column c is public (it is in the report) and the shift by c mod 64 is a barrel shift.
// The keep/flip: the constant-time k = 2 randomized response (randomized_response.hpp), 2 words,
// total variation < 2^-119 to the exact law. So every report reads 2 words and runs the same
// instructions whatever x.
#pragma once
#include <cstddef>
#include <cstdint>

#include "dpnoise/exact/constant_time/public_word.hpp"
#include "dpnoise/exact/constant_time/randomized_response.hpp"
#include "dpnoise/ldp/public_matrix.hpp"
#include "dpnoise/ldp/zmatrix_oracle.hpp"
#include "dpnoise/random/keystream.hpp"
#include "dpnoise/random/stream_fill.hpp"

namespace dpnoise::exact::ct {

// Word `row` of the matrix's row-seed stream (public_word.hpp: the ChaCha20 block row / 8 and a
// scan of its words).
inline uint64_t row_seed_ct(const random::StreamKey& key, uint64_t row) {
    return public_word_ct(key, ldp::PublicSignMatrix::kRowSeedStream, row);
}

// The bit of Z[row, column] (1 for -1) in constant time in `row`.
inline uint64_t entry_bit_ct(const random::StreamKey& key, uint64_t row, uint64_t column) {
    return (ldp::PublicSignMatrix::word(row_seed_ct(key, row), column / 64) >> (column % 64)) & 1u;
}

// One report: ±1 (int8) for the item x (in [0, d): checked by the caller) on the public column.
template <class Bits>
int8_t zmatrix_report_ct(const RandomizedResponseTable& table, const random::StreamKey& key, Bits& bits, uint64_t x,
                         uint64_t column) {
    const int64_t bit = table.respond(bits, static_cast<int64_t>(entry_bit_ct(key, x, column)));  // k = 2
    return static_cast<int8_t>(1 - 2 * bit);
}

// out[i] = the report of items[i] on columns[i] (as ldp::zmatrix_privatize: chunk c reads stream c).
template <class Family>
void zmatrix_privatize_constant_time(Family& family, const RandomizedResponseTable& table, const random::StreamKey& key,
                                     const int64_t* items, const uint64_t* columns, int8_t* out, size_t n,
                                     unsigned threads) {
    random::sample_into<ldp::ZMatrixRandomizer::kOutputsPerStream>(
        family, out, n, threads, [&table, &key, items, columns](auto& bits, size_t i) {
            return zmatrix_report_ct(table, key, bits, static_cast<uint64_t>(items[i]), columns[i]);
        });
}

}  // namespace dpnoise::exact::ct
