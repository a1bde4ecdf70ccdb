// dpnoise/random/bit_source.hpp -- random bits, a few at a time, from any word source.
// A word source is any type with `uint64_t next_u64()` returning independent uniform words
// (KeystreamWords, or an adapter over another generator). The exact samplers take a
// BitReader and consume only as many bits as they need, so one 64-bit word usually
// feeds several Bernoulli trials. A reader is copyable: a hot loop works on a local copy (kept in
// registers; through a reference, every store to an integer output might alias its state) and
// assigns it back before handing the reader to other code.
#pragma once
#include <cstdint>

namespace dpnoise::random {

template <class WordSource>
class BitReader {
public:
    explicit BitReader(WordSource& source) : source_(&source) {}

    // k uniform bits, 1 <= k <= 64, in the low bits of the result.
    uint64_t bits(unsigned k) {
        if (k <= available_) {
            const uint64_t r = k == 64 ? word_ : (word_ & ((uint64_t{1} << k) - 1));
            word_ = k == 64 ? 0 : (word_ >> k);
            available_ -= k;
            return r;
        }
        const uint64_t low = word_;
        const unsigned have = available_;
        const unsigned need = k - have;
        word_ = source_->next_u64();
        const uint64_t high = need == 64 ? word_ : (word_ & ((uint64_t{1} << need) - 1));
        word_ = need == 64 ? 0 : (word_ >> need);
        available_ = 64 - need;
        return have == 0 ? high : (low | (high << have));
    }

    // k uniform bits, 1 <= k <= 63: the same bits as bits(k), without its k = 64 cases.
    uint64_t bits_below64(unsigned k) {
        const uint64_t mask = (uint64_t{1} << k) - 1;
        if (k <= available_) {
            const uint64_t r = word_ & mask;
            word_ >>= k;
            available_ -= k;
            return r;
        }
        const uint64_t low = word_;
        const unsigned have = available_;  // < k <= 63
        word_ = source_->next_u64();
        const uint64_t r = (low | (word_ << have)) & mask;
        word_ >>= k - have;
        available_ = 64 - (k - have);
        return r;
    }

    bool bit() {
        if (available_ == 0) {
            word_ = source_->next_u64();
            available_ = 64;
        }
        const bool b = word_ & 1u;
        word_ >>= 1;
        --available_;
        return b;
    }

    uint64_t word() { return source_->next_u64(); }

    // f(owner) with this local copy's state handed to `owner` and taken back afterwards (a hot
    // loop's rare steps run on the reader that other code knows).
    template <class F>
    auto lend(BitReader& owner, F&& f) {
        owner = *this;
        auto result = f(owner);
        *this = owner;
        return result;
    }

private:
    WordSource* source_;
    uint64_t word_ = 0;
    unsigned available_ = 0;
};

}  // namespace dpnoise::random
