// dpnoise/mechanism_kernels_constant_time.hpp -- the mechanisms' fused release kernels
// (mechanism_kernels.hpp) with constant-time noise and no branch on the secret values:
//   noisy_integers_constant_time: y = clamp(x, +-bound) + noise, int64
//   noisy_grid_constant_time:     y = (clamp(round(x / 2^k), +-bound) + noise) 2^k, double or
//                                 float (float32 in, float32 out: the double rounded once,
//                                 clamped to +-FLT_MAX by minsd/maxsd)
//   randomized_response_constant_time: k-ary randomized response of clamp(x, [0, k))
// The variable-time kernels check |y| against the grid's exact range after each draw (a branch
// on the noise); here the noise is bounded for every output (|noise| <= max_abs <= 2^40, from
// the table), so the public checks on bound and k below make overflow impossible and no
// per-element check is needed. Grid form: the floating-point scaling x 2^-k and y 2^k are one
// multiplication each; their time is data-independent except for subnormal operands or results
// on some CPUs (docs/security.md).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "dpnoise/exact/constant_time/ct_ops.hpp"
#include "dpnoise/request_constant_time.hpp"
#include "dpnoise/exact/constant_time/randomized_response.hpp"
#include "dpnoise/mechanism_kernels.hpp"  // request::sample_same, the variable-time to_grid
#include "dpnoise/simd.hpp"               // DPNOISE_X86_SIMD: minsd/maxsd and cvtsd2si (SSE2, baseline x86-64)

namespace dpnoise::exact::ct {

// round(x down) to the nearest integer, ties to even, clamped to [-bound, bound] (bound <=
// 2^52), with no comparison at all on x86-64: minsd/maxsd clamp, cvtsd2si rounds in the default
// rounding mode (nearest-even, as request::to_grid assumes). request::to_grid's ternaries
// compile to a flag-setting compare and a conditional move, which valgrind flags as depending
// on the secret. Other CPUs (and builds with DPNOISE_NO_SIMD) use request::to_grid (not
// checked by .ci/constant_time).
inline int64_t to_grid_ct(double x, double down, double bound) {
#ifdef DPNOISE_X86_SIMD
    __m128d s = _mm_set_sd(x * down);
    s = _mm_max_sd(s, _mm_set_sd(-bound));
    s = _mm_min_sd(s, _mm_set_sd(bound));
    return static_cast<int64_t>(_mm_cvtsd_si64(s));
#else
    return request::to_grid(x, request::TimesFactor{down}, bound);
#endif
}

inline constexpr int64_t kMaxNoise = int64_t{1} << 40;

template <class Law, class Family>
void noisy_integers_constant_time(Family& family, const typename Law::Param& p, const int64_t* values,
                                  ptrdiff_t stride, int64_t bound, int64_t* out, size_t n, unsigned threads) {
    // |clamp(x)| + |noise| <= (2^62 - 2^40) + 2^40: no overflow, and within the 2^62 limit of
    // the variable-time kernel
    if (bound < 0 || bound > (int64_t{1} << 62) - kMaxNoise) throw std::invalid_argument("bound must be in [0, 2^62 - 2^40]");
    request::sample_same<Law>(family, p, out, n, threads, request::Path::tables, [=](size_t i, int64_t noise) {
        return clamp_ct(values[static_cast<ptrdiff_t>(i) * stride], bound) + noise;
    });
}

// A double as T: itself, or (float) the nearest float32 of its value clamped to +-FLT_MAX,
// without a compare (minsd/maxsd, then cvtsd2ss in the default rounding mode).
template <class T> inline T grid_output_ct(double r) {
    if constexpr (std::is_same_v<T, double>) {
        return r;
    } else {
#ifdef DPNOISE_X86_SIMD
        constexpr double kMax = 3.4028234663852886e38;  // FLT_MAX
        return static_cast<float>(_mm_cvtsd_f64(_mm_min_sd(_mm_max_sd(_mm_set_sd(r), _mm_set_sd(-kMax)), _mm_set_sd(kMax))));
#else
        return request::GridOutput<float>::from_exact(r);
#endif
    }
}

template <class Law, class T, class Family>
void noisy_grid_constant_time(Family& family, const typename Law::Param& p, const T* values, ptrdiff_t stride,
                              int k, int64_t bound, T* out, size_t n, unsigned threads) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "float32 or float64 values");
    if (bound < 0 || bound > (int64_t{1} << 52)) throw std::invalid_argument("bound must be in [0, 2^52]");
    // 2^-k and 2^k normal doubles, and (2^52 + 2^40) 2^k < 2^1024: no overflow, no ldexp
    if (k < -1000 || k > 960)
        throw std::invalid_argument("constant_time=True supports grid exponents k in [-1000, 960]");
    const double down = std::ldexp(1.0, -k), up = std::ldexp(1.0, k), b = static_cast<double>(bound);
    // values[i] is read before out[i] is written (request::fill_combined), so out may be values
    request::sample_same<Law>(family, p, out, n, threads, request::Path::tables, [=](size_t i, int64_t noise) {
        // round(x 2^-k) clamped to +-bound: the same value as the variable-time kernel's
        const int64_t v = to_grid_ct(static_cast<double>(values[static_cast<ptrdiff_t>(i) * stride]), down, b);
        return grid_output_ct<T>(static_cast<double>(v + noise) * up);  // |v + noise| < 2^53: exact
    });
}

// out[i] = the constant-time response to in[i] (clamped to [0, k) by masks: no check, no
// branch on the values), through the request layer's streams (as request::randomized_response).
template <class Family>
void randomized_response_constant_time(Family& family, const RandomizedResponseTable& table, const int64_t* in,
                                       int64_t* out, size_t n, unsigned threads) {
    random::sample_into<request::RandomizedResponse::kOutputsPerStream>(
        family, out, n, threads, [&table, in](auto& bits, size_t i) { return table.respond(bits, in[i]); });
}

}  // namespace dpnoise::exact::ct
