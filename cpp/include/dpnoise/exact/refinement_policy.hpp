// dpnoise/exact/refinement_policy.hpp -- (temporary) the forced-refinement test switch.
#pragma once
#include <atomic>

namespace dpnoise::exact {

// Test hook: when set, every trial settles its decisive comparison by the exact refinement
// path (the path taken in production only when 32 bits do not decide), to test it statistically.
inline std::atomic<bool> g_force_refinement{false};
inline std::atomic<bool>& force_refinement_for_testing() { return g_force_refinement; }

}  // namespace dpnoise::exact
