// dpnoise/random/stream_fill.hpp -- fill an output array, chunk by chunk, each chunk from its
// own ChaCha20 stream, over up to `threads` workers. Chunk c of a request always uses stream
// first_stream + c, so the output does not depend on the number of threads.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "dpnoise/parallel.hpp"
#include "dpnoise/random/bit_source.hpp"
#include "dpnoise/random/generator.hpp"
#include "dpnoise/random/keystream.hpp"

namespace dpnoise::random {

inline uint64_t streams_needed(size_t n) {
    return std::max<uint64_t>(1, (n + kSamplesPerStream - 1) / kSamplesPerStream);
}

struct alignas(64) ChunkReader {
    KeystreamWords words;
    BitReader<KeystreamWords> bits{words};
    char pad[64];  // keeps the next heap object off bits' cache line
    ChunkReader(const StreamKey& key, uint64_t stream) : words(key, stream) {}
};

// The hot loop of one chunk, with the sampler inlined into it (flatten: otherwise inlining
// budgets decide, and the same sampler ran 15-20% faster or slower after unrelated edits);
// the samplers keep their rare paths out of line with noinline.
template <class T, class SampleOne>
[[gnu::flatten]] void fill_chunk(BitReader<KeystreamWords>& bits, T* out, size_t begin, size_t end, SampleOne& sample) {
    for (size_t i = begin; i < end; ++i) out[i] = sample(bits, i);
}

// sample(BitReader<KeystreamWords>&, size_t index) -> T
template <class T, class SampleOne>
void fill_from_streams(const StreamReservation& r, T* out, size_t n, unsigned threads, SampleOne&& sample) {
    const size_t nchunks = (n + kSamplesPerStream - 1) / kSamplesPerStream;
    parallel_tasks(nchunks, threads, [&](size_t chunk) {
        // Everything the loop reads is copied to this thread first, and the reader's state
        // (written on every draw) lives on the heap on cache lines of its own. Read through
        // references instead, it sat on the calling thread's stack next to lines that thread
        // writes on every draw, and that false sharing made two threads slower than one in
        // some process layouts.
        auto local_sample = sample;
        T* const local_out = out;
        const size_t begin = chunk * kSamplesPerStream;
        const size_t end = std::min(n, begin + kSamplesPerStream);
        const auto state = std::make_unique<ChunkReader>(r.key, r.first_stream + chunk);
        fill_chunk(state->bits, local_out, begin, end, local_sample);
    });
}

// Reserves the streams a request of n samples needs, then fills it.
template <class T, class SampleOne>
void sample_into(ChaCha20Generator& gen, T* out, size_t n, unsigned threads, SampleOne&& sample) {
    const StreamReservation r = gen.reserve_streams(streams_needed(n));
    fill_from_streams(r, out, n, threads, std::forward<SampleOne>(sample));
}

}  // namespace dpnoise::random
