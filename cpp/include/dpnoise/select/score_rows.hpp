// dpnoise/select/score_rows.hpp -- a score matrix as the selection kernels read it: any element
// type, any strides (in bytes, possibly negative), read one row at a time into an int64 buffer
// of the row's length (the kernels' only copy: O(columns) per thread, never the whole matrix).
//
// Integer scores are clamped to [-kScoreBound, kScoreBound]; real scores are rounded to the grid
// 2^k (ties to even) and clamped to 2^52 grid units, exactly as the mechanisms' grid kernel
// (mechanism_kernels.hpp). Both maps are 1-Lipschitz and monotone, so the sensitivity (widened
// by the rounding, which the caller accounts for) and monotonicity are kept, and score gaps fit
// 63 bits.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "dpnoise/mechanism_kernels.hpp"

namespace dpnoise::select {

inline constexpr int64_t kScoreBound = int64_t{1} << 61;

enum class ScoreType { i8, i16, i32, i64, u8, u16, u32, u64, boolean, f32, f64 };

struct ScoreMatrix {
    const char* data = nullptr;
    ScoreType type = ScoreType::i64;
    size_t rows = 0, cols = 0;
    ptrdiff_t row_stride = 0, col_stride = 0;  // bytes
    bool grid = false;                         // real scores: round to 2^grid_exponent
    int grid_exponent = 0;

    bool is_real() const { return type == ScoreType::f32 || type == ScoreType::f64; }
};

// Checks a matrix description (not its values) before any draw.
inline void check_matrix(const ScoreMatrix& s) {
    if (s.cols == 0) throw std::invalid_argument("scores: every candidate set must have at least one candidate");
    if (s.cols > UINT32_MAX) throw std::invalid_argument("scores: at most 2^32 - 1 candidates per set");
    if (s.rows > 0 && s.data == nullptr) throw std::invalid_argument("scores: no data");
    if (s.is_real() && !s.grid) throw std::invalid_argument("scores: real scores need a grid exponent");
    if (s.grid && (s.grid_exponent < -1100 || s.grid_exponent > 1100))
        throw std::invalid_argument("grid exponent must be in [-1100, 1100]");
}

namespace detail {

template <class T>
inline T load(const char* p) {
    T x;
    std::memcpy(&x, p, sizeof(T));  // strides need not be multiples of the element size
    return x;
}

template <class T>
void integer_row(const char* p, ptrdiff_t stride, size_t n, int64_t* out) {
    for (size_t i = 0; i < n; ++i, p += stride) {
        const T x = load<T>(p);
        if constexpr (std::is_signed_v<T>) {
            const int64_t v = static_cast<int64_t>(x);
            out[i] = v > kScoreBound ? kScoreBound : (v < -kScoreBound ? -kScoreBound : v);
        } else {
            const uint64_t v = static_cast<uint64_t>(x);
            out[i] = v > static_cast<uint64_t>(kScoreBound) ? kScoreBound : static_cast<int64_t>(v);
        }
    }
}

template <class T, class Down>
void real_row(const char* p, ptrdiff_t stride, size_t n, int64_t* out, const Down& down) {
    constexpr double bound = static_cast<double>(request::GridKernel::kMaxBound);
    for (size_t i = 0; i < n; ++i, p += stride) {
        const double x = static_cast<double>(load<T>(p));
        // callers refuse non-finite scores before any draw; this is the core's own guard
        if (!std::isfinite(x)) throw std::invalid_argument("scores must be finite (no NaN or infinity)");
        out[i] = request::to_grid(x, down, bound);
    }
}

}  // namespace detail

// Row r of s as int64 scores (clamped, or on the grid) in out[0, s.cols).
inline void load_row(const ScoreMatrix& s, size_t r, int64_t* out) {
    const char* p = s.data + static_cast<ptrdiff_t>(r) * s.row_stride;
    const size_t n = s.cols;
    const ptrdiff_t cs = s.col_stride;
    switch (s.type) {
        case ScoreType::i8: return detail::integer_row<int8_t>(p, cs, n, out);
        case ScoreType::i16: return detail::integer_row<int16_t>(p, cs, n, out);
        case ScoreType::i32: return detail::integer_row<int32_t>(p, cs, n, out);
        case ScoreType::i64: return detail::integer_row<int64_t>(p, cs, n, out);
        case ScoreType::u8: return detail::integer_row<uint8_t>(p, cs, n, out);
        case ScoreType::u16: return detail::integer_row<uint16_t>(p, cs, n, out);
        case ScoreType::u32: return detail::integer_row<uint32_t>(p, cs, n, out);
        case ScoreType::u64: return detail::integer_row<uint64_t>(p, cs, n, out);
        case ScoreType::boolean: return detail::integer_row<uint8_t>(p, cs, n, out);
        case ScoreType::f32:
        case ScoreType::f64: {
            const int k = s.grid_exponent;
            auto run = [&](auto down) {
                if (s.type == ScoreType::f32) detail::real_row<float>(p, cs, n, out, down);
                else detail::real_row<double>(p, cs, n, out, down);
            };
            if (k >= -1022 && k <= 1022) run(request::TimesFactor{std::ldexp(1.0, -k)});
            else run(request::TimesLdexp{-k});
            return;
        }
    }
    throw std::invalid_argument("scores: unsupported element type");
}

}  // namespace dpnoise::select
