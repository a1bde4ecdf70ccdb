// dpnoise/random/public_splitmix.hpp -- a FAST generator for PUBLIC randomness only.
//
// NOT a source of secret noise, and not cryptographic: anyone who knows (or guesses) a seed
// computes every output, and the outputs do not hide the seed. It exists because the public
// random matrix of a frequency oracle (ldp/public_matrix.hpp) needs about 10^10 public bits
// per second on one core, which ChaCha20 (random/public_stream.hpp, about 1 cycle per byte)
// cannot give. Seeds come from the ChaCha20 PublicStream, so the streams of different seeds are
// as independent as the keystream; only the words within one seed's sequence come from here.
//
// The sequence of a 64-bit seed s is SplitMix64 (Steele, Lea & Flood 2014, "Fast Splittable
// Pseudorandom Number Generators", OOPSLA; the output function is Stafford's "Mix13" variant of
// MurmurHash3's fmix64, as in Java's SplittableRandom and Vigna's splitmix64.c):
//   word(s, w) = mix(s + (w + 1) γ),  γ = 0x9e3779b97f4a7c15 (odd, the golden ratio · 2^64),
// i.e. the (w+1)-th output of SplitMix64 started from state s. Counter-based: any word is two
// multiplications from its address, so a client computes one entry in O(1) and a server sweeps
// a row at about three cycles per 64 bits. SplitMix64 passes BigCrush (Steele et al. 2014, §5).
#pragma once
#include <cstdint>

namespace dpnoise::random {

struct PublicSplitMix {
    static constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;

    // Stafford's Mix13 (the SplitMix64 output function).
    static inline uint64_t mix(uint64_t z) {
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }

    // Word w of seed s's sequence (modular arithmetic: wraps by design, as in SplitMix64).
    static inline uint64_t word(uint64_t seed, uint64_t w) { return mix(seed + (w + 1) * kGamma); }
};

}  // namespace dpnoise::random
