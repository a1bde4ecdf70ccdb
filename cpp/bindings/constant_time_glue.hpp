// Glue shared by the constant-time variants of the local-DP families (each family's binding
// file registers its variable-time and constant-time clients side by side).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>

#include "bindings.hpp"
#include "dpnoise/exact/constant_time/randomized_response.hpp"

namespace dpnoise::bindings {

// The certified k = 2 randomized-response table at gamma, or at gamma/2 when halved
// (gamma/2 = num/(2 den)); built, from the cache, before any draw.
inline std::shared_ptr<const exact::ct::RandomizedResponseTable> binary_table(const ExactGamma& g, bool halved) {
    return exact::ct::cached_table(2, g.num, halved ? exact::add(g.den, g.den) : g.den);
}

// The items of a constant-time client: a 1-D int64 array (the Python clients range-check the
// values, a documented data-dependent step; the kernels read any int64).
inline const int64_t* items_1d(const i64_array& items) {
    if (items.ndim() != 1) throw std::invalid_argument("items must be a 1-D array");
    return items.data();
}

}  // namespace dpnoise::bindings
