// dpnoise/random/generator.hpp -- the thread-safe, fork-aware ChaCha20 generator.
//
// One key drives 2^64 independent ChaCha20 streams (the stream id sits in state words 14-15).
//  * Stream 0 is the sequential stream: next_u64() and fill_u64() read it in order.
//  * Every sampling request reserves fresh stream ids, one per fixed-size chunk of its output
//    (kSamplesPerStream samples), and each chunk is drawn from its own stream. The output
//    therefore depends only on the key and the order of requests, never on how many threads
//    filled the chunks, and two requests never share a keystream word.
// Fork safety: a pthread_atfork child handler bumps a global epoch. A secure generator that sees
// a new epoch re-keys from the OS before handing out anything, so a child never repeats its
// parent's stream; a seeded generator keeps its stream (reproducibility is its purpose).
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include <pthread.h>

#include "dpnoise/parallel.hpp"
#include "dpnoise/random/keystream.hpp"
#include "dpnoise/random/os_entropy.hpp"

namespace dpnoise::random {

inline constexpr size_t kSamplesPerStream = size_t{1} << 16;

namespace detail {
inline std::atomic<uint64_t>& fork_epoch_counter() {
    static std::atomic<uint64_t> epoch{0};
    return epoch;
}
inline void on_fork_child() { fork_epoch_counter().fetch_add(1, std::memory_order_relaxed); }
inline uint64_t fork_epoch() {
    static const bool registered = [] {
        if (pthread_atfork(nullptr, nullptr, &on_fork_child) != 0)
            throw std::runtime_error("pthread_atfork failed: cannot make the generator fork-safe");
        return true;
    }();
    (void)registered;
    return fork_epoch_counter().load(std::memory_order_relaxed);
}
}  // namespace detail

struct StreamReservation {
    StreamKey key;
    uint64_t first_stream;
};

class ChaCha20Generator {
public:
    // Secure: keyed from the operating system's entropy.
    ChaCha20Generator() : secure_(true), epoch_(detail::fork_epoch()), sequential_(rekey_from_os(), 0) {}

    // Reproducible: keyed from caller-supplied key words (a seed). Not secure.
    explicit ChaCha20Generator(const StreamKey& seed_key)
        : key_(seed_key), secure_(false), epoch_(detail::fork_epoch()), sequential_(seed_key, 0) {}

    ChaCha20Generator(const ChaCha20Generator&) = delete;
    ChaCha20Generator& operator=(const ChaCha20Generator&) = delete;

    bool is_secure() const { return secure_; }

    uint64_t next_u64() {
        std::lock_guard<std::mutex> lock(mutex_);
        check_fork_locked();
        return sequential_.next_u64();
    }

    // The next n words of the sequential stream; whole blocks are generated outside the lock and
    // split over `threads` workers (same words for any thread count).
    void fill_u64(uint64_t* out, size_t n, unsigned threads) {
        size_t done = 0;
        uint64_t first_block = 0, nblocks = 0;
        StreamKey key;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            check_fork_locked();
            while (done < n && sequential_.buffered() > 0) out[done++] = sequential_.next_u64();
            nblocks = (n - done) / 8;
            first_block = sequential_.next_block();
            if (nblocks > UINT64_MAX - first_block) throw std::overflow_error("ChaCha20 block counter would wrap around");
            sequential_.skip_blocks(nblocks);
            key = key_;
        }
        if (nblocks > 0) {
            uint64_t* blocks_out = out + done;
            constexpr uint64_t kBlocksPerTask = 4096;  // 256 KiB of keystream per task
            const size_t ntasks = static_cast<size_t>((nblocks + kBlocksPerTask - 1) / kBlocksPerTask);
            parallel_tasks(ntasks, threads, [&](size_t task) {
                const uint64_t b0 = task * kBlocksPerTask;
                const uint64_t nb = std::min<uint64_t>(kBlocksPerTask, nblocks - b0);
                uint32_t* dst = reinterpret_cast<uint32_t*>(blocks_out + 8 * b0);
                chacha20_stream_blocks(key.words, 0, first_block + b0, static_cast<size_t>(nb), dst);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
                for (uint64_t i = 0; i < 8 * nb; ++i) {
                    uint64_t& w = blocks_out[8 * b0 + i];
                    w = (w << 32) | (w >> 32);
                }
#endif
            });
            done += static_cast<size_t>(8 * nblocks);
        }
        if (done < n) {
            std::lock_guard<std::mutex> lock(mutex_);
            check_fork_locked();
            while (done < n) out[done++] = sequential_.next_u64();
        }
    }

    // -- the stream-family interface the request layer (dpnoise/request.hpp) samples through --
    // A family hands one request `count` independent word sources, one per chunk: reserve()
    // once per request (before any draw), then open(reservation, chunk) for chunk < count.
    // kParallel says whether chunks may run on several threads (a sequential family, such as
    // an external generator, runs them in order on the calling thread).
    static constexpr bool kParallel = true;
    using Source = KeystreamWords;
    using Reservation = StreamReservation;
    Reservation reserve(uint64_t count) { return reserve_streams(count); }
    static Source open(const Reservation& r, uint64_t chunk) { return Source(r.key, r.first_stream + chunk); }

    // Reserves `count` fresh stream ids for one sampling request.
    StreamReservation reserve_streams(uint64_t count) {
        std::lock_guard<std::mutex> lock(mutex_);
        check_fork_locked();
        if (count > UINT64_MAX - next_stream_) throw std::overflow_error("generator has run out of stream ids");
        StreamReservation r{key_, next_stream_};
        next_stream_ += count;
        return r;
    }

private:
    StreamKey rekey_from_os() {
        os_entropy(key_.words, sizeof key_.words);
        return key_;
    }

    void check_fork_locked() {
        const uint64_t now = detail::fork_epoch();
        if (now == epoch_) return;
        epoch_ = now;
        if (!secure_) return;
        rekey_from_os();
        next_stream_ = 1;
        sequential_.reset(key_, 0, 0);
    }

    std::mutex mutex_;
    StreamKey key_{};
    bool secure_;
    uint64_t epoch_;
    uint64_t next_stream_ = 1;
    KeystreamWords sequential_;
};

}  // namespace dpnoise::random
