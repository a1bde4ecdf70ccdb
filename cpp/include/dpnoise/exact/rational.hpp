// dpnoise/exact/rational.hpp -- the rational parameters the samplers take, and their limits.
// Python (or any caller) turns user input into these exactly, or rounds toward more noise;
// the C++ core only checks that they are in range.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace dpnoise::exact {

// Numerators and denominators are at most 2^62, so that sums and doublings of them never
// overflow 64 bits and their products always fit 128.
inline constexpr uint64_t kMaxRationalPart = uint64_t{1} << 62;

struct Rational {
    uint64_t num;
    uint64_t den;
};

inline Rational checked_rational(uint64_t num, uint64_t den, const char* name, bool allow_zero = true) {
    if (den == 0) throw std::invalid_argument(std::string(name) + ": denominator must be positive");
    if (num > kMaxRationalPart || den > kMaxRationalPart)
        throw std::overflow_error(std::string(name) + ": numerator and denominator must be at most 2^62");
    if (!allow_zero && num == 0) throw std::invalid_argument(std::string(name) + " must be positive");
    return {num, den};
}

}  // namespace dpnoise::exact
