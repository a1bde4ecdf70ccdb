// dpnoise/parameters.hpp -- noise parameters given as doubles or int64 turned into the exact
// rationals the samplers take, with the rule of dpnoise's Python layer (_rational.py):
//   * a value whose exact rational p/q has p, q <= 2^62 (and p q <= 2^96 for a variance) is
//     used exactly (every double is the dyadic rational m 2^e);
//   * otherwise scales, variances and exponents are rounded UP (more noise) to the least
//     num / 2^k above the value with the largest k that fits; a probability is rounded to the
//     nearest multiple of 2^-62 (ties to even);
//   * a value too large to round up within 2^62 is refused (std::overflow_error).
// Arrays are converted once per distinct value: the result lists the distinct values in
// ascending order and an index per element (the layout of numpy.unique(..., return_inverse)).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dpnoise/exact/rational.hpp"
#include "dpnoise/exact/wide_uint.hpp"

namespace dpnoise::parameters {

using exact::Rational;
using exact::u128;

// How a parameter is rounded when its exact value does not fit.
enum class Kind {
    scale,      // >= 0, rounded up (discrete Laplace / geometric scale, Bernoulli-exp gamma)
    variance,   // >= 0, rounded up, also num * den <= 2^96 (discrete Gaussian variance)
    sigma,      // >= 0, squared exactly, then rounded up as a variance
    probability // in [0, 1], rounded to the nearest multiple of 2^-62
};

inline constexpr uint64_t kMaxPart = exact::kMaxRationalPart;        // 2^62
inline constexpr unsigned kMaxVarianceProductBits = 96;               // num * den <= 2^96

namespace detail {

inline std::string show(double x) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return buf;
}

inline unsigned bit_length(u128 v) {
    unsigned n = 0;
    while (v) { v >>= 1; ++n; }
    return n;
}

// ceil(v / 2^s) for any s
inline u128 shr_ceil(u128 v, unsigned s) {
    if (v == 0) return 0;
    if (s >= 128) return 1;
    const u128 q = v >> s;
    return (q << s) == v ? q : q + 1;
}

// p / 2^j (p > 0) rounded up per the rule above: exact when it fits, else the least
// num / 2^k >= p / 2^j with num <= 2^62 (and num 2^k <= 2^max_product_bits) for the largest k.
inline Rational round_up_dyadic(u128 p, unsigned j, unsigned max_product_bits, const char* name) {
    const u128 max_product = u128(1) << max_product_bits;  // max_product_bits <= 127
    if (p <= kMaxPart && j <= 62 && (p << j) <= max_product) return {static_cast<uint64_t>(p), uint64_t{1} << j};
    const unsigned pbits = bit_length(p);
    for (unsigned k = 63; k-- > 0;) {
        u128 num;
        if (k >= j) {
            if (pbits + (k - j) > 63) continue;  // num > 2^62
            num = p << (k - j);
        } else {
            num = shr_ceil(p, j - k);
        }
        if (num > kMaxPart || (num << k) > max_product) continue;  // num 2^k < 2^125: no wrap
        return {static_cast<uint64_t>(num), uint64_t{1} << k};
    }
    throw std::overflow_error(std::string(name) + " is too large (at most about 2^62 is supported)");
}

// x = m 2^e with m odd (x finite, > 0)
inline void decompose(double x, uint64_t& m, int& e) {
    int ex;
    const double frac = std::frexp(x, &ex);  // x = frac 2^ex, frac in [0.5, 1)
    m = static_cast<uint64_t>(std::ldexp(frac, 53));  // exact: 53 significant bits
    e = ex - 53;
    while ((m & 1) == 0) { m >>= 1; ++e; }
}

}  // namespace detail

// One finite double parameter, converted exactly or rounded per `kind`. The message of a
// refusal names the parameter and shows its value (parameters are public, never data).
inline Rational from_double(double x, Kind kind, const char* name) {
    if (std::isnan(x)) throw std::invalid_argument(std::string(name) + " must not be NaN");
    if (std::isinf(x)) throw std::invalid_argument(std::string(name) + " must be finite, got " + (x > 0 ? "inf" : "-inf"));
    if (kind == Kind::probability) {
        if (!(x >= 0.0 && x <= 1.0))
            throw std::invalid_argument(std::string(name) + " must be in [0, 1], got " + detail::show(x));
    } else if (x < 0.0) {
        throw std::invalid_argument(std::string(name) + " must be >= 0, got " + detail::show(x));
    }
    if (x == 0.0) return {0, 1};  // also -0.0
    uint64_t m;
    int e;
    detail::decompose(x, m, e);
    switch (kind) {
        case Kind::probability: {
            if (e >= 0) return {1, 1};  // x == 1
            const unsigned j = static_cast<unsigned>(-e);
            if (j <= 62) return {m, uint64_t{1} << j};
            // round(x 2^62), ties to even
            const unsigned s = j - 62;
            if (s >= 64) return {0, kMaxPart};
            const uint64_t fl = m >> s, rem = m & ((uint64_t{1} << s) - 1), half = uint64_t{1} << (s - 1);
            const uint64_t r = rem > half || (rem == half && (fl & 1)) ? fl + 1 : fl;
            return {r, kMaxPart};
        }
        case Kind::scale:
        case Kind::variance: {
            const unsigned maxbits = kind == Kind::variance ? kMaxVarianceProductBits : 127;
            if (e >= 0) {
                if (e > 62 || (u128(m) << e) > kMaxPart)
                    throw std::overflow_error(std::string(name) + " is too large (at most about 2^62 is supported), got " + detail::show(x));
                return {m << e, 1};
            }
            return detail::round_up_dyadic(m, static_cast<unsigned>(-e), maxbits, name);
        }
        case Kind::sigma: {
            const u128 p = u128(m) * m;  // odd, < 2^106
            const int e2 = 2 * e;
            if (e2 >= 0) {
                if (e2 > 62 || detail::bit_length(p) + static_cast<unsigned>(e2) > 63 || (p << e2) > kMaxPart)
                    throw std::overflow_error(std::string(name) + " is too large: sigma^2 must be at most 2^62, got sigma = " + detail::show(x));
                return {static_cast<uint64_t>(p << e2), 1};
            }
            return detail::round_up_dyadic(p, static_cast<unsigned>(-e2), kMaxVarianceProductBits, name);
        }
    }
    throw std::invalid_argument("unknown parameter kind");
}

// An int64 parameter (exact; refused beyond 2^62, like a double of that size).
inline Rational from_int64(int64_t v, Kind kind, const char* name) {
    if (kind == Kind::probability) {
        if (v < 0 || v > 1) throw std::invalid_argument(std::string(name) + " must be in [0, 1], got " + std::to_string(v));
        return {static_cast<uint64_t>(v), 1};
    }
    if (v < 0) throw std::invalid_argument(std::string(name) + " must be >= 0, got " + std::to_string(v));
    const uint64_t u = static_cast<uint64_t>(v);
    if (kind == Kind::sigma) {
        if (u > (uint64_t{1} << 31))
            throw std::overflow_error(std::string(name) + " is too large: sigma^2 must be at most 2^62, got sigma = " + std::to_string(v));
        return {u * u, 1};
    }
    if (u > kMaxPart) throw std::overflow_error(std::string(name) + " is too large (at most about 2^62 is supported), got " + std::to_string(v));
    return {u, 1};
}

// The distinct values of an array (ascending; -0.0 and 0.0 are one value), each converted, and
// for every element the position of its value: element i uses params[index[i]].
struct Table {
    std::vector<Rational> params;
    std::vector<int64_t> index;
};

// x[i * stride] for i < n (stride in elements). Refuses NaN and infinities first, naming the
// parameter; the order of the distinct values (and so of the tables a request builds) is that
// of numpy.unique, so the Python and C++ conversions give the same request.
template <class T>
Table convert_array(const T* x, ptrdiff_t stride, size_t n, Kind kind, const char* name) {
    // one sort of (value, position) pairs, then one pass assigns each position its value's rank
    std::vector<std::pair<T, size_t>> sorted(n);
    for (size_t i = 0; i < n; ++i) {
        const T v = x[static_cast<ptrdiff_t>(i) * stride];
        if constexpr (std::is_floating_point_v<T>) {
            if (std::isnan(v)) throw std::invalid_argument(std::string(name) + " must not be NaN");
            if (std::isinf(v)) throw std::invalid_argument(std::string(name) + " must be finite, got " + (v > 0 ? "inf" : "-inf"));
        }
        sorted[i] = {v == T(0) ? T(0) : v, i};  // -0.0 and 0.0 are one value
    }
    std::sort(sorted.begin(), sorted.end());
    Table t;
    t.index.resize(n);
    for (size_t i = 0; i < n; ++i) {
        if (i == 0 || sorted[i].first != sorted[i - 1].first) {
            const T v = sorted[i].first;
            if constexpr (std::is_floating_point_v<T>) t.params.push_back(from_double(static_cast<double>(v), kind, name));
            else t.params.push_back(from_int64(static_cast<int64_t>(v), kind, name));
        }
        t.index[sorted[i].second] = static_cast<int64_t>(t.params.size() - 1);
    }
    return t;
}

}  // namespace dpnoise::parameters
