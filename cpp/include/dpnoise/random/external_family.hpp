// dpnoise/random/external_family.hpp -- a SEQUENTIAL stream family over an external word
// function (e.g. a NumPy bit generator's next_uint64, wired up by the bindings; this header
// knows nothing of Python or NumPy).
//
// The family has a single sequence of words, so it is not parallel (kParallel = false): a
// request's chunks run in order on the calling thread and chunk c reads the words that follow
// chunk c-1's. The output of a request is therefore a function of the external generator's
// state and the request alone (never of `threads`). Such a family is never secure: whoever
// knows the external generator's state knows the noise.
//
// Thread safety is the caller's: the external state is not synchronised here. The bindings hold
// the external generator's own lock for the whole request.
#pragma once
#include <cstdint>
#include <stdexcept>

namespace dpnoise::random {

class ExternalWordFamily {
public:
    using WordFunction = uint64_t (*)(void*);

    ExternalWordFamily(void* state, WordFunction next_u64) : state_(state), next_u64_(next_u64) {
        if (next_u64 == nullptr) throw std::invalid_argument("external generator has no word function");
    }

    // A light handle: every draw calls the external word function.
    class Source {
    public:
        Source(void* state, WordFunction next) : state_(state), next_(next) {}
        uint64_t next_u64() { return next_(state_); }

    private:
        void* state_;
        WordFunction next_;
    };

    struct Reservation {
        uint64_t count;
    };

    // -- the stream-family interface (see ChaCha20Generator) --
    static constexpr bool kParallel = false;
    Reservation reserve(uint64_t count) const { return Reservation{count}; }
    // Every chunk reads the one shared sequence; open them in chunk order, one at a time.
    Source open(const Reservation& r, uint64_t chunk) const {
        if (chunk >= r.count) throw std::out_of_range("chunk beyond the reservation");
        return Source(state_, next_u64_);
    }

    static constexpr bool is_secure() { return false; }

private:
    void* state_;
    WordFunction next_u64_;
};

}  // namespace dpnoise::random
