// noise_example.cpp -- exact differential-privacy noise from C++ with dpnoise's core.
//
//   noise_example          a secure generator, keyed from the operating system
//   noise_example SEED     a reproducible generator (tests only: NOT secure; the same stream
//                          as dpnoise.default_rng(SEED) in Python, for 0 <= SEED < 2^64)
//
// Prints 20 discrete Laplace draws (scale 3/2) and 20 discrete Gaussian draws (variance 9/4),
// then a noisy count. Built by docs/examples/cpp/CMakeLists.txt (see docs/cpp.md).
#include <cstdint>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <dpnoise/dpnoise.hpp>

using dpnoise::random::BitReader;
using dpnoise::random::ChaCha20Generator;
using dpnoise::random::KeystreamWords;
namespace exact = dpnoise::exact;

// A secure generator, or a seeded one: the seed is the 256-bit ChaCha20 key (little-endian
// 32-bit words), as in dpnoise.ChaCha20(seed).
std::unique_ptr<ChaCha20Generator> make_generator(int argc, char** argv) {
    if (argc < 2) return std::make_unique<ChaCha20Generator>();
    const uint64_t seed = std::stoull(argv[1]);
    dpnoise::random::StreamKey key{};
    key.words[0] = static_cast<uint32_t>(seed);
    key.words[1] = static_cast<uint32_t>(seed >> 32);
    return std::make_unique<ChaCha20Generator>(key);
}

// n draws from a fresh stream of the generator. Each request reserves its own stream id, so
// no two requests (and no two threads, if each opens its own) ever share a keystream word.
template <class Draw>
std::vector<int64_t> sample(ChaCha20Generator& gen, size_t n, Draw draw) {
    KeystreamWords words = gen.open(gen.reserve(1), 0);
    BitReader<KeystreamWords> bits(words);  // hands the samplers a few bits at a time
    std::vector<int64_t> out(n);
    for (int64_t& x : out) x = draw(bits);
    return out;
}

void print(const char* label, const std::vector<int64_t>& xs) {
    std::cout << label << ':';
    for (int64_t x : xs) std::cout << ' ' << x;
    std::cout << '\n';
}

int main(int argc, char** argv) {
    try {
        const auto gen = make_generator(argc, argv);
        std::cout << "secure: " << (gen->is_secure() ? "yes" : "no") << '\n';

        // Parameters are exact rationals, checked once before any draw (the samplers assume
        // valid ones): std::invalid_argument / std::overflow_error otherwise.
        const exact::Rational scale = exact::checked_rational(3, 2, "scale");  // P(x) ~ exp(-|x| 2/3)
        const exact::DiscreteGaussianParams variance(9, 4);                   // sigma^2 = 9/4

        print("discrete_laplace scale=3/2", sample(*gen, 20, [&](auto& bits) {
                  return exact::discrete_laplace(bits, scale.num, scale.den);
              }));
        print("discrete_gaussian variance=9/4", sample(*gen, 20, [&](auto& bits) {
                  return exact::discrete_gaussian(bits, variance);
              }));

        // A counting query (sensitivity 1) released with epsilon = 1/2: scale 1/epsilon = 2.
        const int64_t true_count = 1234;
        const int64_t noise = sample(*gen, 1, [](auto& bits) { return exact::discrete_laplace(bits, 2, 1); })[0];
        std::cout << "noisy count: " << true_count + noise << '\n';
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
