// dpnoise/select/laplace_noisy_max.hpp -- report noisy max with exact discrete Laplace noise
// (Dwork & Roth 2014, Claim 3.9, with the discrete Laplace of Canonne, Kamath & Steinke 2020):
// y_r = q_r + Z_r, Z_r ~ DLap(t) i.i.d., report argmax_r y_r, ties among the maxima broken
// uniformly at random (discrete noise makes ties possible; the j-th tie replaces the pick with
// probability 1/j, so each tied candidate is kept with probability 1/(number of ties)). Noise is
// drawn one candidate at a time and never stored.
#pragma once
#include <cstddef>
#include <cstdint>

#include "dpnoise/exact/bernoulli.hpp"
#include "dpnoise/select/candidates.hpp"

namespace dpnoise::select {

// draw(bits) -> int64 discrete Laplace noise of the call's scale
template <class Draw>
struct LaplaceNoisyMax {
    Draw draw;

    template <class Bits>
    size_t operator()(Bits& bits, const int64_t* v, const Candidates& c) const {
        __int128 best = 0;
        size_t pick = 0;
        uint64_t ties = 0;
        for (size_t j = 0; j < c.size; ++j) {
            const __int128 y = static_cast<__int128>(v[c[j]]) + draw(bits);  // no wrap: 64 + 64 bits
            if (ties == 0 || y > best) {
                best = y;
                pick = j;
                ties = 1;
            } else if (y == best) {
                ++ties;
                if (exact::bernoulli_one_over(bits, ties)) pick = j;
            }
        }
        return pick;
    }
};

}  // namespace dpnoise::select
