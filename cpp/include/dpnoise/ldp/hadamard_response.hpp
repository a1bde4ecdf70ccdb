// dpnoise/ldp/hadamard_response.hpp -- the 1-bit Hadamard frequency oracle ("hadamard").
//
// Domain [0, d) padded to D = 2^t >= d. Client with item x: a row index j uniform on [0, D)
// (secret randomness, independent of x, sent in the report), the bit H[j, x] =
// (−1)^{popcount(j & x)}, kept with probability p = e^γ/(e^γ + 1) else flipped: binary
// randomized response (Warner 1965) on one entry of the Hadamard matrix, the 1-bit oracle of
// Bassily & Smith 2015 ("Local, private, efficient protocols for succinct histograms", §4,
// with the public matrix Z taken to be Hadamard rows). The report (j, y) has
// P(j, y | x) = (1/D)(p if y = H[j, x] else 1 − p), so every ratio between two inputs is at
// most p/(1 − p) = e^γ: γ-LDP.
//
// Server: S[j] = Σ_{i: j_i = j} y_i (state O(D)), then one Walsh–Hadamard transform gives
// Σ_i y_i H[j_i, x] for every x at once (walsh_hadamard.hpp), O(n + D log D). Since
// E[y_i H[j_i, x]] = (2p − 1) E_j[H[j, x_i] H[j, x]] = (2p − 1) 1{x_i = x} (orthogonal columns),
// f̂(x) = (e^γ + 1)/(e^γ − 1) Σ_i y_i H[j_i, x] is unbiased, with variance exactly
// n ((e^γ + 1)/(e^γ − 1))² − c(x) (docs/ldp_hadamard.md).
//
// Exact: the row is log2(D) uniform bits; the keep decision is the exact Bernoulli of the k = 2
// randomized-response kernel (exact/randomized_response.hpp). No floating point on the client.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/ldp/walsh_hadamard.hpp"
#include "dpnoise/random/stream_fill.hpp"

namespace dpnoise::ldp {

struct HadamardResponse {
    // Reproducibility unit (reports per secret stream); a multiple of 8, so that every chunk
    // writes whole bytes of the packed bits.
    static constexpr size_t kReportsPerStream = size_t{1} << 16;
    static_assert(kReportsPerStream % 8 == 0);
    static constexpr unsigned kMaxLogRows = 40;

    unsigned log_rows;  // t = log2(D)
    const exact::RandomizedResponseKernel& rr;  // k = 2: keep with e^γ/(e^γ + 1)

    HadamardResponse(unsigned log2_rows, const exact::RandomizedResponseKernel& kernel)
        : log_rows(log2_rows), rr(kernel) {
        if (log_rows > kMaxLogRows) throw std::invalid_argument("padded domain must be at most 2^40");
        if (kernel.k != 2) throw std::invalid_argument("the Hadamard oracle needs the binary (k = 2) kernel");
    }

    // One user's report: the row, and the reported bit (0 for +1, 1 for −1).
    template <class Bits>
    uint64_t respond(Bits& bits, uint64_t x, unsigned& bit) const {
        const uint64_t j = log_rows ? bits.bits(log_rows) : 0;
        const unsigned h = hadamard_sign_bit(j, x);
        bit = h ^ (rr.keep(bits) ? 0u : 1u);
        return j;
    }
};

template <class Bits>
[[gnu::flatten]] void hadamard_chunk(const HadamardResponse& hr, Bits& bits, const int64_t* items, int64_t* rows,
                                     uint8_t* packed, size_t begin, size_t end) {
    // begin is a multiple of 8: this chunk owns bytes [begin/8, ceil(end/8))
    for (size_t i = begin; i < end; i += 8) {
        const size_t stop = end - i < 8 ? end - i : 8;
        unsigned byte = 0;
        for (size_t b = 0; b < stop; ++b) {
            unsigned bit;
            rows[i + b] = static_cast<int64_t>(hr.respond(bits, static_cast<uint64_t>(items[i + b]), bit));
            byte |= bit << b;
        }
        packed[i / 8] = static_cast<uint8_t>(byte);
    }
}

// items: n values in [0, D) (checked by the caller); rows: n; packed: ceil(n/8) bytes, bit i%8
// of byte i/8 (little-endian bit order) is user i's bit, padding bits 0. Chunk c reads secret
// stream c, so the output does not depend on `threads`.
template <class Family>
void hadamard_privatize(Family& family, const HadamardResponse& hr, const int64_t* items, int64_t* rows,
                        uint8_t* packed, size_t n, unsigned threads) {
    random::for_each_chunk<HadamardResponse::kReportsPerStream>(
        family, n, threads, [&hr, items, rows, packed](auto& bits, size_t begin, size_t end) {
            hadamard_chunk(hr, bits, items, rows, packed, begin, end);
        });
}

// Validation of a report batch, before any change to a state: every row in [0, D), the packed
// bits exactly ceil(n/8) bytes (the caller passes that length) with zero padding. Messages
// name the field, never a value.
inline void hadamard_check_reports(const int64_t* rows, const uint8_t* packed, size_t n, uint64_t D) {
    for (size_t i = 0; i < n; ++i)
        if (rows[i] < 0 || static_cast<uint64_t>(rows[i]) >= D)
            throw std::invalid_argument("hadamard report rows must be in [0, padded_size)");
    if (n % 8 && (packed[n / 8] >> (n % 8)) != 0)
        throw std::invalid_argument("hadamard report bits: padding bits after the last report must be 0");
}

// row_sums[j] += Σ_{i: rows[i] = j} (1 − 2 bit_i), after a full check (so a bad batch changes
// nothing). |row_sums| stays at most the number of reports ingested.
inline void hadamard_accumulate(int64_t* row_sums, uint64_t D, const int64_t* rows, const uint8_t* packed,
                                size_t n) {
    hadamard_check_reports(rows, packed, n, D);
    for (size_t i = 0; i < n; ++i) {
        const int64_t y = 1 - 2 * static_cast<int64_t>((packed[i / 8] >> (i % 8)) & 1u);
        row_sums[rows[i]] += y;
    }
}

}  // namespace dpnoise::ldp
