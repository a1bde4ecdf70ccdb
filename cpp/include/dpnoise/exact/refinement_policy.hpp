// dpnoise/exact/refinement_policy.hpp -- when the table samplers take their exact refinement
// path, as a compile-time policy (a template parameter of every sampler that refines).
//
// In production a comparison "R < c" is refined exactly only when the certified bounds of c do
// not decide it (about 2^-31 of the time). Tests need that rare path exercised on every
// decision to check its law statistically: ForceRefinement sends every decision there (the
// test-only entry points in cpp/bindings/register_testing.cpp instantiate it). The default,
// NeverForceRefinement, is a constant false the compiler removes: zero cost on the hot path.
#pragma once

namespace dpnoise::exact {

struct NeverForceRefinement {
    static constexpr bool kForce = false;
};

struct ForceRefinement {
    static constexpr bool kForce = true;
};

}  // namespace dpnoise::exact
