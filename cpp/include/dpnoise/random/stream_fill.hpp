// dpnoise/random/stream_fill.hpp -- fill an output array chunk by chunk, chunk c from stream c
// of one reservation in a stream family, over up to `threads` workers.
//
// A kernel declares its reproducibility unit kPerStream (outputs per stream): chunk c holds
// outputs [c kPerStream, (c+1) kPerStream) and always reads stream c of the request's
// reservation, so the output does not depend on the number of threads. A sequential family
// (Family::kParallel false, e.g. an external generator) runs its chunks in order on the
// calling thread. The family concept is documented in random/generator.hpp.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "dpnoise/parallel.hpp"
#include "dpnoise/random/bit_source.hpp"

namespace dpnoise::random {

// Streams a request of n outputs reserves (at least one, so that even an empty request
// advances the family the same way every time).
inline uint64_t streams_needed(size_t n, size_t per_stream) {
    return std::max<uint64_t>(1, (n + per_stream - 1) / per_stream);
}

template <class Source>
struct alignas(64) ChunkReader {
    Source words;
    BitReader<Source> bits{words};
    char pad[64];  // keeps the next heap object off bits' cache line
    explicit ChunkReader(Source s) : words(std::move(s)) {}
};

// The hot loop of one chunk, with the sampler inlined into it (flatten: otherwise inlining
// budgets decide, and the same sampler ran 15-20% faster or slower after unrelated edits);
// the samplers keep their rare paths out of line with noinline.
template <class Bits, class T, class SampleOne>
[[gnu::flatten]] void fill_chunk(Bits& bits, T* out, size_t begin, size_t end, SampleOne& sample) {
    for (size_t i = begin; i < end; ++i) out[i] = sample(bits, i);
}

// chunk(BitReader<Family::Source>&, size_t begin, size_t end) for every chunk of a request
// of n outputs. Reserves the streams the request needs (once, before any draw).
template <size_t kPerStream, class Family, class Chunk>
void for_each_chunk(Family& family, size_t n, unsigned threads, Chunk&& chunk_fn) {
    static_assert(kPerStream > 0, "a kernel's reproducibility unit must be positive");
    using Source = typename Family::Source;
    const auto reservation = family.reserve(streams_needed(n, kPerStream));
    const size_t nchunks = (n + kPerStream - 1) / kPerStream;
    parallel_tasks(nchunks, Family::kParallel ? threads : 1u, [&](size_t chunk) {
        // Everything the loop reads is copied to this thread first, and the reader's state
        // (written on every draw) lives on the heap on cache lines of its own. Read through
        // references instead, it sat on the calling thread's stack next to lines that thread
        // writes on every draw, and that false sharing made two threads slower than one in
        // some process layouts.
        auto local_chunk = chunk_fn;
        const size_t begin = chunk * kPerStream;
        const size_t end = std::min(n, begin + kPerStream);
        const auto state = std::make_unique<ChunkReader<Source>>(family.open(reservation, chunk));
        local_chunk(state->bits, begin, end);
    });
}

// sample(BitReader<Family::Source>&, size_t index) -> T, written to out[index].
template <size_t kPerStream, class Family, class T, class SampleOne>
void sample_into(Family& family, T* out, size_t n, unsigned threads, SampleOne&& sample) {
    for_each_chunk<kPerStream>(family, n, threads, [out, sample](auto& bits, size_t begin, size_t end) {
        auto local_sample = sample;
        fill_chunk(bits, out, begin, end, local_sample);
    });
}

}  // namespace dpnoise::random
