// dpnoise/random/generator.hpp -- the thread-safe, fork-aware ChaCha20 generator.
//
// One key drives 2^64 independent ChaCha20 streams (the stream id sits in state words 14-15;
// RFC 8439 §2.3 block function, Bernstein's 64-bit counter / 64-bit nonce split).
//  * Stream 0 is the sequential stream: next_u64() and fill_u64() read it in order.
//  * Every sampling request reserves fresh stream ids 1, 2, ... (below kFirstReservedStream),
//    one per fixed-size chunk of its output (kSamplesPerStream samples), and each chunk is drawn
//    from its own stream. The output therefore depends only on the key and the order of
//    requests, never on how many threads filled the chunks, and two requests never share a
//    keystream word.
//  * Stream kNumpyStream feeds NumPy's BitGenerator interface (ReservedStreamReader below), so
//    NumPy never sees a word that random_raw or a sampling request sees.
//  * Stream kSpawnStream is never handed out: block j of it is the key material of spawned
//    child j (child_key(); the first 32 bytes of a ChaCha20 block used as a derived key, as
//    RFC 8439 §2.6 derives the Poly1305 one-time key).
// Fork safety: a pthread_atfork child handler bumps a global epoch. A secure generator that sees
// a new epoch re-keys from the OS before handing out anything, so a child never repeats its
// parent's stream; a seeded generator keeps its stream (reproducibility is its purpose).
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <pthread.h>

#include "dpnoise/parallel.hpp"
#include "dpnoise/random/keystream.hpp"
#include "dpnoise/random/os_entropy.hpp"

namespace dpnoise::random {

inline constexpr size_t kSamplesPerStream = size_t{1} << 16;
// Stream ids at and above this are reserved for the purposes below; requests stay under it.
inline constexpr uint64_t kFirstReservedStream = uint64_t{1} << 63;
inline constexpr uint64_t kNumpyStream = UINT64_MAX - 1;
inline constexpr uint64_t kSpawnStream = UINT64_MAX;

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
    explicit ChaCha20Generator(const StreamKey& seed_key) : ChaCha20Generator(seed_key, false) {}

    // Keyed from given key words; `secure` only for key material derived from a secure key
    // (spawned children of a secure generator): such a generator re-keys in a forked child.
    ChaCha20Generator(const StreamKey& key, bool secure)
        : key_(key), secure_(secure), epoch_(detail::fork_epoch()), sequential_(key, 0) {}

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
                keystream_words64(key, 0, first_block + b0, static_cast<size_t>(nb), blocks_out + 8 * b0);
            });
            done += static_cast<size_t>(8 * nblocks);
        }
        if (done < n) {
            std::lock_guard<std::mutex> lock(mutex_);
            check_fork_locked();
            while (done < n) out[done++] = sequential_.next_u64();
        }
    }

    // Advances the sequential stream by n words without producing them (random_raw with
    // output=False): the buffered words, then whole blocks by moving the counter.
    void skip_u64(uint64_t n) {
        std::lock_guard<std::mutex> lock(mutex_);
        check_fork_locked();
        while (n > 0 && sequential_.buffered() > 0) { (void)sequential_.next_u64(); --n; }
        const uint64_t nblocks = n / 8;
        if (nblocks > UINT64_MAX - sequential_.next_block()) throw std::overflow_error("ChaCha20 block counter would wrap around");
        sequential_.skip_blocks(nblocks);
        for (n -= 8 * nblocks; n > 0; --n) (void)sequential_.next_u64();
    }

    // Key words of the next `count` spawned children, in order: child j (counting every child
    // this generator has spawned) gets words 0-7 of block j of stream kSpawnStream. ChaCha20
    // is a PRF of (key, stream, counter), so the children's keys are independent of each
    // other and of every stream this generator hands out; a secure parent's children are
    // keyed from its secret key (and a forked child spawns from its own fresh key).
    std::vector<StreamKey> spawn_keys(uint64_t count) {
        std::lock_guard<std::mutex> lock(mutex_);
        check_fork_locked();
        if (count > UINT64_MAX - children_) throw std::overflow_error("generator has run out of child keys");
        std::vector<StreamKey> keys(static_cast<size_t>(count));
        uint32_t block[16];
        for (uint64_t j = 0; j < count; ++j) {
            chacha20_stream_blocks(key_.words, kSpawnStream, children_ + j, 1, block, false);
            std::memcpy(keys[static_cast<size_t>(j)].words, block, sizeof keys[0].words);
        }
        std::memset(block, 0, sizeof block);
        children_ += count;
        return keys;
    }

    // The current key and its generation (bumped on every re-key), after the fork check; for
    // readers of reserved streams, which must drop their buffers when the key changes.
    StreamKey key_for_reader(uint64_t& generation) {
        std::lock_guard<std::mutex> lock(mutex_);
        check_fork_locked();
        generation = key_generation_;
        return key_;
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
        if (count > kFirstReservedStream - next_stream_) throw std::overflow_error("generator has run out of stream ids");
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
        children_ = 0;
        ++key_generation_;
        sequential_.reset(key_, 0, 0);
    }

    std::mutex mutex_;
    StreamKey key_{};
    bool secure_;
    uint64_t epoch_;
    uint64_t next_stream_ = 1;
    uint64_t children_ = 0;
    uint64_t key_generation_ = 0;
    KeystreamWords sequential_;
};

// A private reader of one reserved stream of a generator (NumPy's BitGenerator interface reads
// stream kNumpyStream through one). NOT thread-safe: its user serialises the calls (NumPy holds
// the bit generator's lock around every draw). No mutex per word: the generator's mutex is
// taken only on refill, to read the current key. Fork safety costs one relaxed atomic load per
// word: a word buffered before a fork is never handed out in the child; on the next refill a
// secure generator has re-keyed and the reader restarts its stream under the new key.
class ReservedStreamReader {
public:
    static constexpr unsigned kBlocks = 32;            // 2 KiB of keystream per refill
    static constexpr unsigned kWords = kBlocks * 8;

    ReservedStreamReader(ChaCha20Generator& gen, uint64_t stream)
        : gen_(gen), stream_(stream), epoch_(detail::fork_epoch()) {}

    ReservedStreamReader(const ReservedStreamReader&) = delete;
    ReservedStreamReader& operator=(const ReservedStreamReader&) = delete;

    uint64_t next_u64() {
        if (detail::fork_epoch_counter().load(std::memory_order_relaxed) != epoch_) sync_key();
        if (pos_ == kWords) refill();
        return buffer_[pos_++];
    }

    // Both halves of a word: the low half first, the high half on the next call.
    uint32_t next_u32() {
        if (detail::fork_epoch_counter().load(std::memory_order_relaxed) != epoch_) sync_key();
        if (has_half_) {
            has_half_ = false;
            return half_;
        }
        const uint64_t w = next_u64();
        half_ = static_cast<uint32_t>(w >> 32);
        has_half_ = true;
        return static_cast<uint32_t>(w);
    }

private:
    // Reads the generator's key (running its fork check). After a re-key (a forked child of a
    // secure generator) the buffered words and half-word are dropped and the stream restarts
    // under the new key; a seeded generator keeps its key, so its reader simply continues.
    void sync_key() {
        uint64_t generation = 0;
        key_ = gen_.key_for_reader(generation);
        epoch_ = detail::fork_epoch();
        if (generation != generation_) {
            generation_ = generation;
            next_block_ = 0;
            pos_ = kWords;
            has_half_ = false;
        }
        have_key_ = true;
    }

    void refill() {
        if (!have_key_) sync_key();
        if (next_block_ > UINT64_MAX - kBlocks) throw std::overflow_error("ChaCha20 block counter would wrap around");
        keystream_words64<kBlocks>(key_, stream_, next_block_, buffer_);
        next_block_ += kBlocks;
        pos_ = 0;
    }

    ChaCha20Generator& gen_;
    uint64_t stream_;
    uint64_t epoch_;
    StreamKey key_{};
    bool have_key_ = false;
    uint64_t generation_ = 0;
    uint64_t next_block_ = 0;
    unsigned pos_ = kWords;
    bool has_half_ = false;
    uint32_t half_ = 0;
    alignas(64) uint64_t buffer_[kWords];
};

}  // namespace dpnoise::random
