// Memoised reports of many devices in one pass (daily collection; RAPPOR, Erlingsson, Pihur &
// Korolova 2014, section 3, permanent randomised response): row i's permanent answer is drawn
// from its own reproducible ChaCha20 family (RFC 8439) keyed by the PRF of (device key, item,
// configuration) (memo_prf.hpp), exactly as a fresh seeded generator would draw it for that one
// item: the same bits as one generator per row, without a Python round trip per row. Rows are
// independent (each reads only its own family), so the output does not depend on `threads`.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "dpnoise/ldp/memo_prf.hpp"
#include "dpnoise/parallel.hpp"
#include "dpnoise/random/generator.hpp"

namespace dpnoise::ldp {

struct MemoisedRows {
    static constexpr size_t kRowsPerTask = 512;

    const MemoPrf& prf;
    const uint8_t* keys;  // 32 bytes a row, or one key for every row (one_key)
    bool one_key;
    const int64_t* items;  // the PRF input of each row (the item, or its grid index)
    size_t n;

    // row(family, i) for every row i, family a ChaCha20 generator keyed by PRF(key_i, items[i])
    template <class Row>
    void run(unsigned threads, Row&& row) const {
        const size_t ntasks = (n + kRowsPerTask - 1) / kRowsPerTask;
        parallel_tasks(ntasks, threads, [&](size_t t) {
            uint8_t digest[MemoPrf::kDigestBytes];
            for (size_t i = t * kRowsPerTask, end = std::min(n, (t + 1) * kRowsPerTask); i < end; ++i) {
                prf(keys + (one_key ? 0 : MemoPrf::kKeyBytes * i), items[i], digest);
                random::StreamKey key;  // the digest as 8 little-endian words, as ChaCha20(int) keys
                for (int w = 0; w < 8; ++w)
                    key.words[w] = uint32_t{digest[4 * w]} | uint32_t{digest[4 * w + 1]} << 8 |
                                   uint32_t{digest[4 * w + 2]} << 16 | uint32_t{digest[4 * w + 3]} << 24;
                random::ChaCha20Generator family(key);
                row(family, i);
            }
        });
    }
};

}  // namespace dpnoise::ldp
