// dpnoise/exact/table_samplers.hpp -- umbrella header of the table samplers: the same exact
// distributions as geometric.hpp, discrete_laplace.hpp and discrete_gaussian.hpp, faster for
// many samples with one parameter.
//
// Every random decision here has the form "uniform real R < c" for a constant c (a tail
// probability, or an acceptance probability e^{-x}). Each c gets certified integer bounds
// (certified_exp.hpp: Taylor series with outward rounding, no floating point), and R's bits
// are drawn only as far as the bounds need: usually 8 to 13 bits decide, then up to 32 against
// 32-bit bounds, and in the rare band that 32 bits do not decide (about 2^-31), more words of
// R while c is evaluated at increasing precision until the comparison is decided. Each decision
// is therefore an exact Bernoulli(c), and R's bits, being independent, may be drawn lazily.
//
// * Geometric and discrete Laplace, scale t/s <= 146: inversion of Y (or |Y|) over certified
//   tail thresholds, with a guide table on R's first 6 to 13 bits (Thresholds, invert()).
// * Larger scales: Y = H 2^k + L, H by inversion and L by certified rejection.
// * Discrete Gaussian: |Y| = j B + o with the bucket j by inversion over certified tail sums
//   of e^{-i^2 c}, the offset o uniform and accepted with probability e^{-x} (B = 1, no
//   acceptance, for sigma < 146).
//
// Tables cost O(entries) to build, so callers use these samplers for large requests only; the
// output distribution is identical either way.
//
// The parts, one job each:
//   fixed_enclosure.hpp          256-bit fixed-point enclosures for building tables
//   lazy_comparison.hpp          "R < c" against certified bounds, refined exactly
//   threshold_inversion.hpp      inversion over certified thresholds with a guide table
//   exp_fixed_bounds.hpp         fast certified fixed-point bounds of e^{-x}
//   geometric_table.hpp          geometric / discrete Laplace tables and their samplers
//   discrete_gaussian_table.hpp  discrete Gaussian buckets and their sampler
//   refinement_policy.hpp        NeverForceRefinement (default) / ForceRefinement (tests)
#pragma once
#include "dpnoise/exact/discrete_gaussian_table.hpp"
#include "dpnoise/exact/exp_fixed_bounds.hpp"
#include "dpnoise/exact/fixed_enclosure.hpp"
#include "dpnoise/exact/geometric_table.hpp"
#include "dpnoise/exact/lazy_comparison.hpp"
#include "dpnoise/exact/refinement_policy.hpp"
#include "dpnoise/exact/threshold_inversion.hpp"
