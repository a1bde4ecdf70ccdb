// dpnoise/mechanism_kernels.hpp -- the fused kernels that mechanism plans execute, built on the
// request layer (request.hpp): a noisy release on the grid 2^k (real queries), its integer
// form, and k-ary randomized response. Each is one pass over the output in chunks over threads,
// with the GIL released by the caller, and draws its noise exactly as the request of the same
// law and size would (docs/reproducibility.md).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/request.hpp"
#include "dpnoise/simd.hpp"  // DPNOISE_X86_SIMD: the AVX2 form of the grid combination

namespace dpnoise::request {

// ----------------------------------------------------------------------- the grid kernel
// One noisy release on the grid 2^k, fused into the sampling pass (the mechanisms' plans):
// for each x_i, v = round(x_i / 2^k) (ties to even; the multiplication by a power of two is
// exact), clamped to [-bound, bound] grid units; y = v + noise (noise in grid units, from the
// law's request path); out_i = y 2^k, exact because |y| <= 2^53. The clamp makes the result a
// 1-Lipschitz function of x, so the sensitivity is unchanged (Mironov 2012 for why a grid).
// Throws std::overflow_error (a message naming no value) when |y| exceeds 2^53 or y 2^k
// overflows a double: this depends on the noise (and, through y, on v), and callers choose
// bound and k so that it has negligible probability.
struct GridKernel {
    static constexpr int64_t kMaxBound = int64_t{1} << 52;
    static constexpr int64_t kExact = int64_t{1} << 53;
};

// x 2^e is one multiplication when 2^e is a normal double: exact unless the product
// overflows (caught below) or is subnormal, where to_grid's value rounds to 0 anyway and
// from_grid's integer multiples of 2^e are subnormals exactly. Other exponents use std::ldexp.
struct TimesFactor {
    double factor;
    double operator()(double x) const { return x * factor; }
};
struct TimesLdexp {
    int e;
    double operator()(double x) const { return std::ldexp(x, e); }
};

// round(x 2^-k), ties to even, clamped to [-bound, bound] (bound <= 2^52), without branches:
// clamp first (the same result as clamping after rounding, bound being an integer), then add
// and subtract 2^52 with the sign of s, which leaves s rounded to an integer in the default
// rounding mode (|s| <= 2^52). NaN is refused by the callers before this point.
template <class Down>
inline int64_t to_grid(double x, const Down& down, double bound) {
    constexpr double kTwo52 = 4503599627370496.0;
    double s = down(x);
    s = s < -bound ? -bound : s;
    s = s > bound ? bound : s;
    const double shift = std::copysign(kTwo52, s);
    return static_cast<int64_t>((s + shift) - shift);
}

template <class Up>
inline double from_grid(int64_t y, const Up& up) {
    if (y > GridKernel::kExact || y < -GridKernel::kExact)
        throw std::overflow_error("a noisy value lies beyond the grid's exact range (2^53 grid steps)");
    const double r = up(static_cast<double>(y));
    if (std::isinf(r)) throw std::overflow_error("a noisy value times the grid step overflows a double");
    return r;
}

// values: n doubles at stride `stride` (elements); out: n doubles.
template <class Law, class Family, class P>
void noisy_grid(Family& family, const P& p, const double* values, ptrdiff_t stride, int k,
                int64_t bound, double* out, size_t n, unsigned threads) {
    if (bound < 0 || bound > GridKernel::kMaxBound) throw std::invalid_argument("bound must be in [0, 2^52]");
    if (k < -1100 || k > 1100) throw std::invalid_argument("grid exponent k must be in [-1100, 1100]");
    const double b = static_cast<double>(bound);
    auto run = [&](auto down, auto up) {
        sample_same<Law>(family, p, out, n, threads, Path::automatic, [=](size_t i, int64_t noise) {
            const int64_t v = to_grid(values[static_cast<ptrdiff_t>(i) * stride], down, b);
            if (noise > GridKernel::kExact || noise < -GridKernel::kExact)
                throw std::overflow_error("noise beyond the grid's exact range: the noise scale is too large for this grid");
            return from_grid(v + noise, up);
        });
    };
    if (k >= -1022 && k <= 1022) run(TimesFactor{std::ldexp(1.0, -k)}, TimesFactor{std::ldexp(1.0, k)});
    else run(TimesLdexp{-k}, TimesLdexp{k});
}

// The buffer form (the ML path): the same release into a caller's float32 or float64 buffer,
// which may be `values` itself (in place: element i is read before it is written, and every
// element is handled once). It cannot fail once the draws began, so a buffer is never left
// half-written: the arguments are checked first, and the rare noisy value beyond the exact
// range is clamped to +-2^53 grid steps instead of raising (a function of y alone: post-
// processing, Dwork & Roth 2014 Prop. 2.1). The output is y 2^k, exact in double; a float32
// buffer receives that exact value rounded to nearest (again a function of y alone; the
// argument is docs/security.md, "float32 outputs"), clamped to +-FLT_MAX first.
template <class T>
struct GridOutput;
template <>
struct GridOutput<double> {
    static double from_exact(double r) { return r; }
};
template <>
struct GridOutput<float> {
    static float from_exact(double r) {
        constexpr double kMax = 3.4028234663852886e38;  // FLT_MAX
        r = r > kMax ? kMax : (r < -kMax ? -kMax : r);
        return static_cast<float>(r);
    }
};

// The buffer kernel's combination, out_i = from_exact((clamp(v_i + clamp(noise_i)) 2^k), per
// element (operator()) or for a whole block (block). The block form computes the same values in
// double arithmetic, which compilers vectorise: v_i stays the rounded double s_i (an integer,
// |s_i| <= 2^52), and a noise |e| < 2^51 converts exactly by the 2^52 + 2^51 bias (the double
// with bits bits(1.5 2^52) + e is 1.5 2^52 + e); then |s_i + e| < 2^53 is exact and needs no
// clamp. A block with a larger noise, or a strided input, takes the per-element form.
// Every step is one correctly rounded IEEE operation (multiplications by powers of two, min/max
// against exact bounds, the 2^52 rounding trick, an exact sum, a rounding to float), so the
// SSE2, AVX2 and per-element forms give bit-identical outputs; the AVX2 form is chosen at run
// time (the package is built for baseline x86-64), without FMA so that no product is fused.
// Other CPUs, and builds with DPNOISE_NO_SIMD, compile the baseline form only (dpnoise/simd.hpp).
namespace detail {
template <class T>
[[gnu::always_inline]] inline void grid_combine_span(const T* __restrict x, T* __restrict o, const int64_t* __restrict noise,
                                                     size_t m, double down, double up, double b) {
    constexpr double kTwo52 = 4503599627370496.0, kBias = 6755399441055744.0;  // 2^52, 1.5 2^52
    constexpr int64_t kBiasBits = 0x4338000000000000;  // the bits of 1.5 2^52
    constexpr float kMaxF = 3.4028234663852886e38f;   // FLT_MAX
    for (size_t i = 0; i < m; ++i) {
        double sc = static_cast<double>(x[i]) * down;
        sc = sc < -b ? -b : sc;
        sc = sc > b ? b : sc;
        const double shift = std::copysign(kTwo52, sc);
        const double v = (sc + shift) - shift;
        const int64_t biased = noise[i] + kBiasBits;
        double e;
        std::memcpy(&e, &biased, sizeof e);
        T y = static_cast<T>((v + (e - kBias)) * up);
        // float: rounded, then clamped to +-FLT_MAX (a double beyond FLT_MAX rounds to FLT_MAX
        // or infinity, both clamped to FLT_MAX): the value of clamping first (GridOutput), in
        // a form without branches, so that it vectorises
        if constexpr (std::is_same_v<T, float>) {
            y = y < -kMaxF ? -kMaxF : y;
            y = y > kMaxF ? kMaxF : y;
        }
        o[i] = y;
    }
}
#ifdef DPNOISE_X86_SIMD
template <class T>
[[gnu::target("avx2")]] inline void grid_combine_span_avx2(const T* x, T* o, const int64_t* noise, size_t m, double down,
                                                           double up, double b) {
    grid_combine_span(x, o, noise, m, down, up, b);
}
inline bool has_avx2() {
    static const bool has = __builtin_cpu_supports("avx2");
    return has;
}
#endif
template <class T>
inline void grid_combine_span_baseline(const T* x, T* o, const int64_t* noise, size_t m, double down, double up, double b) {
    grid_combine_span(x, o, noise, m, down, up, b);
}
// The AVX2 form where the build has it and the CPU runs it, else the baseline one.
template <class T>
inline void grid_combine_span_best(const T* x, T* o, const int64_t* noise, size_t m, double down, double up, double b) {
#ifdef DPNOISE_X86_SIMD
    if (has_avx2()) return grid_combine_span_avx2(x, o, noise, m, down, up, b);
#endif
    grid_combine_span_baseline(x, o, noise, m, down, up, b);
}
}  // namespace detail

template <class T>
struct GridBufferCombine {
    const T* values;
    ptrdiff_t stride;
    TimesFactor down, up;
    double b;

    T operator()(size_t i, int64_t noise) const {
        const int64_t v = to_grid(static_cast<double>(values[static_cast<ptrdiff_t>(i) * stride]), down, b);
        // |v| <= 2^52; noise clamped to +-2^62 keeps the sum in int64, then y to +-2^53
        const int64_t e = noise > GridKernel::kExact ? GridKernel::kExact : (noise < -GridKernel::kExact ? -GridKernel::kExact : noise);
        int64_t y = v + e;
        y = y > GridKernel::kExact ? GridKernel::kExact : (y < -GridKernel::kExact ? -GridKernel::kExact : y);
        return GridOutput<T>::from_exact(up(static_cast<double>(y)));
    }

    // Asks for values[begin, end) in cache ahead of block(): issued before the sampler fills the
    // sub-block's draws, the loads overlap with its arithmetic instead of stalling the block.
    void prefetch(size_t begin, size_t end) const {
        if (stride != 1) return;
        // addresses as integers: a pointer stepped past the array's end would be undefined
        const auto e = reinterpret_cast<uintptr_t>(values + end);
        for (auto a = reinterpret_cast<uintptr_t>(values + begin); a < e; a += 64)
            __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 3);
    }

    // out[begin, end) from noise[0, end - begin); out may be values itself (element i is read
    // before it is written)
    void block(T* out, size_t begin, size_t end, const int64_t* noise) const {
        constexpr int64_t kHalf = int64_t{1} << 51;
        uint64_t far = 0;  // some |noise| >= 2^51
        for (size_t i = 0; i < end - begin; ++i) far |= static_cast<uint64_t>(noise[i] + kHalf) >> 52;
        if (far != 0 || stride != 1) {
            for (size_t i = begin; i < end; ++i) out[i] = (*this)(i, noise[i - begin]);
            return;
        }
        detail::grid_combine_span_best(values + begin, out + begin, noise, end - begin, down.factor, up.factor, b);
    }
};

// Draws per sub-block of a chunk: the sampler fills this many draws, the combination consumes
// them while they are in L1 (16 KiB), and the next sub-block continues the same reader, so the
// draws are those of one fill of the whole chunk (Law::fill_table carries its reader across
// calls). 0.9.0 filled a 512 KiB buffer per chunk (allocated per chunk) and then combined it.
inline constexpr size_t kGridSubBlock = 2048;

namespace detail {
// The table a request of n draws uses, exactly as sample_same decides it (request.hpp): a
// prepared parameter's own tables for n >= 2, else the automatic rule; null: no tables.
template <class Law>
std::shared_ptr<const typename Law::Table> table_for(const typename Law::Param& p, size_t n) {
    if (use_tables(n, Law::table_cost(p))) return TableCache<Law>::get(p);
    return nullptr;
}
template <class Law>
std::shared_ptr<const typename Law::Table> table_for(const Prepared<Law>& p, size_t n) {
    if (p.table && n >= 2) return p.table;
    return table_for<Law>(p.param, n);
}
}  // namespace detail

// sample_same<Law>(family, p, out, n, threads, automatic, combine) with the combination applied
// per sub-block while the draws are in L1: the same streams, the same draws, the same output.
// combine: block(out, begin, end, noise) and prefetch(begin, end) (GridBufferCombine).
template <class Law, class Family, class P, class T, class Combine>
void sample_same_blocked(Family& family, const P& p, T* out, size_t n, unsigned threads, const Combine& combine) {
    if constexpr (kHasTables<Law> && kHasBlockFill<Law>) {
        const auto table = detail::table_for<Law>(p, n);
        if (table) {
            const typename Law::Table* t = table.get();
            random::for_each_chunk<Law::kOutputsPerStream>(family, n, threads, [t, out, combine](auto& bits, size_t b, size_t e) {
                alignas(64) int64_t noise[kGridSubBlock];
                for (size_t s = b; s < e; s += kGridSubBlock) {
                    const size_t m = std::min(kGridSubBlock, e - s);
                    combine.prefetch(s, s + m);
                    Law::fill_table(bits, *t, noise, m);
                    combine.block(out, s, s + m, noise);
                }
            });
            return;
        }
    }
    sample_same<Law>(family, p, out, n, threads, Path::automatic, combine);
}

template <class Law, class T, class Family, class P>
void noisy_grid_into(Family& family, const P& p, const T* values, ptrdiff_t stride, int k,
                     int64_t bound, T* out, size_t n, unsigned threads) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "float32 or float64 buffers");
    if (bound < 0 || bound > GridKernel::kMaxBound) throw std::invalid_argument("bound must be in [0, 2^52]");
    // 2^k normal and 2^(53+k) finite: y 2^k is exact and finite for every |y| <= 2^53
    if (k < -1022 || k > 970) throw std::invalid_argument("grid exponent k must be in [-1022, 970]");
    if (n == 0) return;
    const GridBufferCombine<T> combine{values, stride, TimesFactor{std::ldexp(1.0, -k)}, TimesFactor{std::ldexp(1.0, k)},
                                       static_cast<double>(bound)};
    sample_same_blocked<Law>(family, p, out, n, threads, combine);
}

// The integer form: values int64 (no rounding), clamped to [-bound, bound], y = v + noise,
// |y| <= 2^62 or std::overflow_error.
template <class Law, class Family, class P>
void noisy_integers(Family& family, const P& p, const int64_t* values, ptrdiff_t stride,
                    int64_t bound, int64_t* out, size_t n, unsigned threads) {
    constexpr int64_t kLimit = static_cast<int64_t>(exact::kMaxRationalPart);
    if (bound < 0 || bound >= kLimit) throw std::invalid_argument("bound must be in [0, 2^62)");
    sample_same<Law>(family, p, out, n, threads, Path::automatic, [=](size_t i, int64_t noise) {
        const int64_t x = values[static_cast<ptrdiff_t>(i) * stride];
        const int64_t v = x > bound ? bound : (x < -bound ? -bound : x);
        if (noise > kLimit || noise < -kLimit)
            throw std::overflow_error("noise beyond 2^62: the noise scale is too large");
        const int64_t y = v + noise;  // |v| < 2^62, |noise| <= 2^62: no wrap
        if (y > kLimit || y < -kLimit) throw std::overflow_error("a noisy value lies beyond 2^62");
        return y;
    });
}

// ------------------------------------------------------------ k-ary randomized response
// out[i] = the kernel's response to in[i] (each in [0, k), checked by the caller before any
// draw): exact, O(1) expected random bits per value (exact/randomized_response.hpp).
struct RandomizedResponse {
    static constexpr size_t kOutputsPerStream = size_t{1} << 16;
};

template <class Family>
void randomized_response(Family& family, const exact::RandomizedResponseKernel& kernel, const int64_t* in,
                         int64_t* out, size_t n, unsigned threads) {
    random::sample_into<RandomizedResponse::kOutputsPerStream>(
        family, out, n, threads, [&kernel, in](auto& bits, size_t i) { return kernel.respond(bits, in[i]); });
}

}  // namespace dpnoise::request
