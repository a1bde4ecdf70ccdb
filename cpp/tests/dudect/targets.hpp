// cpp/tests/dudect/targets.hpp -- what the timing checks time: one release of a secret, with
// the randomness from a given word source:
//   ct_laplace, ct_gaussian        clamp(secret) + noise (the integer mechanisms' release)
//   ct_grid_laplace                the grid mechanisms' release of the double x = secret / 10:
//                                  (to_grid_ct(x / 2^-10) + noise) 2^-10 as a double
//   ct_grid_gaussian               the same with float32 output (grid_output_ct<float>)
//   ct_rr                          k-ary randomized response of the secret, k = max(SCALE, 2),
//                                  gamma ~ ln(k - 1) (keep probability about 1/2)
// (exact/constant_time/), and, to show that the checks have power, the variable-time ones: CKS
// 2020 Algorithms 2 and 3 (the scalar path), the table samplers (the size= path) and the exact
// randomized-response kernel (vt_rr).
#pragma once
#include <cstdint>
#include <cmath>
#include <cstring>
#include <string>

#include "dpnoise/request_constant_time.hpp"
#include "dpnoise/mechanism_kernels_constant_time.hpp"
#include "dpnoise/exact/discrete_gaussian.hpp"
#include "dpnoise/exact/discrete_laplace.hpp"
#include "dpnoise/exact/table_samplers.hpp"
#include "dpnoise/random/bit_source.hpp"

namespace dudect_targets {

using namespace dpnoise;

// Words from a fixed buffer, read cyclically (a measurement replays its buffer from the start,
// so the noise it draws is known in advance and can define its class). Hook: a function that
// may mark each word as secret (valgrind).
struct BufferWords {
    const uint64_t* words;
    size_t n;
    size_t at = 0;
    void (*mark)(uint64_t*) = nullptr;
    uint64_t next_u64() {
        uint64_t w = words[at];
        at = at + 1 == n ? 0 : at + 1;  // the index depends on the count of words read only
        if (mark) mark(&w);
        return w;
    }
};

using Reader = random::BitReader<BufferWords>;

using exact::ct::clamp_ct;  // clamp(v, -bound, bound) by masks (ct_ops.hpp)

inline constexpr int64_t kBound = int64_t{1} << 40;

enum class Target {
    ct_laplace, ct_gaussian, ct_grid_laplace, ct_grid_gaussian, ct_rr,
    vt_laplace, vt_gaussian, vt_laplace_table, vt_gaussian_table, vt_rr
};
inline const char* const kTargetNames[] = {
    "ct_laplace", "ct_gaussian", "ct_grid_laplace", "ct_grid_gaussian", "ct_rr",
    "vt_laplace", "vt_gaussian", "vt_laplace_table", "vt_gaussian_table", "vt_rr"};

inline bool parse_target(const std::string& s, Target& t) {
    for (size_t i = 0; i < sizeof kTargetNames / sizeof kTargetNames[0]; ++i)
        if (s == kTargetNames[i]) {
            t = static_cast<Target>(i);
            return true;
        }
    return false;
}

inline bool is_grid(Target t) { return t == Target::ct_grid_laplace || t == Target::ct_grid_gaussian; }
inline bool is_rr(Target t) { return t == Target::ct_rr || t == Target::vt_rr; }

// gamma ~ ln(k - 1) in thousandths (public; keep probability about 1/2)
inline exact::RandomizedResponseKernel rr_kernel(uint64_t k) {
    k = k < 2 ? 2 : k;
    const double g = std::log(static_cast<double>(k > 2 ? k - 1 : 2));
    return exact::RandomizedResponseKernel(k, exact::BigUint(static_cast<exact::u128>(std::lround(g * 1000))),
                                           exact::BigUint(1000));
}

template <class T>
int64_t bits_of(T y) {  // the output's bit pattern, as the release's int64
    int64_t out = 0;
    std::memcpy(&out, &y, sizeof y);
    return out;
}

// Every sampler's parameter and table, built once (public).
struct Samplers {
    uint64_t scale;  // Laplace scale and Gaussian sigma (integers)
    exact::ct::DiscreteLaplaceTable ct_laplace;
    exact::ct::DiscreteGaussianTable ct_gaussian;
    exact::DiscreteGaussianParams vt_gaussian;
    exact::GeometricTable vt_laplace_table;
    exact::DiscreteGaussianTable vt_gaussian_table;
    exact::RandomizedResponseKernel vt_rr;  // categories k = scale
    exact::ct::RandomizedResponseTable ct_rr;
    explicit Samplers(uint64_t s)
        : scale(s), ct_laplace(s, 1), ct_gaussian(s * s, 1), vt_gaussian(s * s, 1),
          vt_laplace_table(s, 1, exact::GeometricTable::Law::laplace), vt_gaussian_table(exact::DiscreteGaussianParams(s * s, 1)),
          vt_rr(rr_kernel(s)), ct_rr(vt_rr) {}

    int64_t noise(Target t, Reader& bits) const {
        switch (t) {  // t is public: the same branch on every measurement of a run
            case Target::ct_laplace:
            case Target::ct_grid_laplace: return exact::ct::discrete_laplace(bits, ct_laplace);
            case Target::ct_gaussian:
            case Target::ct_grid_gaussian: return exact::ct::discrete_gaussian(bits, ct_gaussian);
            case Target::vt_laplace: return exact::discrete_laplace(bits, scale, 1);
            case Target::vt_gaussian: return exact::discrete_gaussian(bits, vt_gaussian);
            case Target::vt_laplace_table: return exact::discrete_laplace_table(bits, vt_laplace_table);
            case Target::vt_gaussian_table: return exact::discrete_gaussian_table(bits, vt_gaussian_table);
            default: return 0;  // randomized response: no additive noise
        }
    }

    // one release of the secret (the targets above); grid targets return the output's bits
    int64_t release(Target t, int64_t secret, BufferWords& words) const {
        Reader bits(words);
        if (t == Target::ct_rr) return ct_rr.respond(bits, secret);
        if (t == Target::vt_rr) {  // the exact kernel wants x in [0, k): clamped by masks first
            const int64_t top = static_cast<int64_t>(vt_rr.k) - 1;
            return vt_rr.respond(bits, clamp_ct(secret - top / 2, top / 2) + top / 2);
        }
        if (is_grid(t)) {
            constexpr double kDown = 1024.0, kUp = 1.0 / 1024.0, kGridBound = 4503599627370496.0;  // k = -10, 2^52
            const double x = static_cast<double>(secret) * 0.1;  // a double secret (normal or zero)
            const int64_t v = exact::ct::to_grid_ct(x, kDown, kGridBound);
            const double y = static_cast<double>(v + noise(t, bits)) * kUp;
            return t == Target::ct_grid_gaussian ? bits_of(exact::ct::grid_output_ct<float>(y)) : bits_of(y);
        }
        return clamp_ct(secret, kBound) + noise(t, bits);
    }

    // The output classes of a release of the secret 0: 0 for small noise (|y| <= scale/4; for
    // randomized response: kept), 1 for large (|y| >= 2.5 scale; flipped to a category >= k/2),
    // -1 for neither.
    int output_class(Target t, int64_t out) const {
        const double s = static_cast<double>(scale);
        double y = static_cast<double>(out);
        if (is_rr(t)) return out == 0 ? 0 : (2 * out >= static_cast<int64_t>(vt_rr.k) ? 1 : -1);
        if (t == Target::ct_grid_gaussian) {
            float f;
            std::memcpy(&f, &out, sizeof f);
            y = static_cast<double>(f) * 1024.0;
        } else if (is_grid(t)) {
            std::memcpy(&y, &out, sizeof y);
            y *= 1024.0;
        }
        y = std::fabs(y);
        return y <= s / 4 ? 0 : (y >= 2.5 * s ? 1 : -1);
    }
};

}  // namespace dudect_targets
