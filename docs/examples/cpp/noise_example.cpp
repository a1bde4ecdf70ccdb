// noise_example.cpp -- exact differential-privacy noise from C++ with dpnoise's core.
//
//   noise_example          a secure generator, keyed from the operating system
//   noise_example SEED     a reproducible generator (tests only: NOT secure; the same stream
//                          as dpnoise.default_rng(SEED) in Python, for 0 <= SEED < 2^64)
//
// The fast path for arrays: a table built once per parameter (GeometricTable for the discrete
// Laplace, DiscreteGaussianTable for the discrete Gaussian) and random::sample_into, which
// fills the buffer in chunks of kPerStream values over threads, chunk c from stream c of one
// reservation (so the output does not depend on the number of threads). Prints the first 10 of
// 100,000 discrete Laplace draws (scale 3/2) and of 100,000 discrete Gaussian draws (variance
// 9/4), their sums, then a noisy count drawn with the per-call sampler (for a few values).
// Built by docs/examples/cpp/CMakeLists.txt (see docs/cpp.md).
#include <cstddef>
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

// Outputs per stream: chunk c of a request always reads stream c. 65,536 is what dpnoise's
// Python requests use, so a seeded generator gives the same numbers here as in Python.
constexpr size_t kPerStream = size_t{1} << 16;

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

void print(const char* label, const std::vector<int64_t>& xs) {
    std::cout << label << ':';
    for (size_t i = 0; i < 10 && i < xs.size(); ++i) std::cout << ' ' << xs[i];
    int64_t sum = 0;
    for (int64_t x : xs) sum += x;
    std::cout << "\n" << label << " sum: " << sum << '\n';
}

int main(int argc, char** argv) {
    try {
        const auto gen = make_generator(argc, argv);
        std::cout << "secure: " << (gen->is_secure() ? "yes" : "no") << '\n';
        const size_t n = 100000;
        const unsigned threads = 2;

        // Parameters are exact rationals, checked once before any draw (the samplers assume
        // valid ones): std::invalid_argument / std::overflow_error otherwise. A table is
        // immutable: build it once per parameter, share it between threads.
        const exact::Rational scale = exact::checked_rational(3, 2, "scale");  // P(x) ~ exp(-|x| 2/3)
        const exact::GeometricTable laplace(scale.num, scale.den, exact::GeometricTable::Law::laplace);
        const exact::DiscreteGaussianTable gaussian(exact::DiscreteGaussianParams(9, 4));  // sigma^2 = 9/4

        // sample_into<kPerStream>(family, out, n, threads, draw(bits, i)): the generator is the
        // stream family; draw gets the chunk's bit reader and the output index.
        std::vector<int64_t> noise(n);
        dpnoise::random::sample_into<kPerStream>(*gen, noise.data(), n, threads, [&laplace](auto& bits, size_t) {
            return exact::discrete_laplace_table(bits, laplace);
        });
        print("discrete_laplace scale=3/2", noise);
        dpnoise::random::sample_into<kPerStream>(*gen, noise.data(), n, threads, [&gaussian](auto& bits, size_t) {
            return exact::discrete_gaussian_table(bits, gaussian);
        });
        print("discrete_gaussian variance=9/4", noise);

        // A few values: the per-call sampler on one fresh stream (no table to build).
        // A counting query (sensitivity 1) released with epsilon = 1/2: scale 1/epsilon = 2.
        KeystreamWords words = gen->open(gen->reserve(1), 0);
        BitReader<KeystreamWords> bits(words);
        const int64_t true_count = 1234;
        std::cout << "noisy count: " << true_count + exact::discrete_laplace(bits, 2, 1) << '\n';
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
