// dpnoise/dpnoise.hpp -- the umbrella header of the C++ core: one include for other C++ code.
//
//   #include <dpnoise/dpnoise.hpp>
//   dpnoise::random::ChaCha20Generator gen;                 // secure: keyed from the OS
//   auto words = gen.open(gen.reserve(1), 0);               // a fresh stream of its own
//   dpnoise::random::BitReader<dpnoise::random::KeystreamWords> bits(words);
//   int64_t noise = dpnoise::exact::discrete_laplace(bits, 3, 2);   // scale 3/2
//
// Header-only and free of Python; link the CMake target dpnoise::core (docs/cpp.md). The C
// interface of the Python extension (dpnoise/capi.h) is separate and not included here.
#pragma once

#include "dpnoise/errors.hpp"
#include "dpnoise/mechanism_kernels.hpp"
#include "dpnoise/parallel.hpp"
#include "dpnoise/parameters.hpp"
#include "dpnoise/request.hpp"
#include "dpnoise/random/bit_source.hpp"
#include "dpnoise/random/chacha20.hpp"
#include "dpnoise/random/external_family.hpp"
#include "dpnoise/random/generator.hpp"
#include "dpnoise/random/keystream.hpp"
#include "dpnoise/random/os_entropy.hpp"
#include "dpnoise/random/public_splitmix.hpp"
#include "dpnoise/random/public_stream.hpp"
#include "dpnoise/random/stream_fill.hpp"
#include "dpnoise/exact/bernoulli.hpp"
#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/discrete_gaussian.hpp"
#include "dpnoise/exact/discrete_gaussian_table.hpp"
#include "dpnoise/exact/discrete_laplace.hpp"
#include "dpnoise/exact/exp_fixed_bounds.hpp"
#include "dpnoise/exact/fixed_enclosure.hpp"
#include "dpnoise/exact/geometric.hpp"
#include "dpnoise/exact/geometric_table.hpp"
#include "dpnoise/exact/lazy_comparison.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/exact/rational.hpp"
#include "dpnoise/exact/refinement_policy.hpp"
#include "dpnoise/exact/table_samplers.hpp"
#include "dpnoise/exact/threshold_inversion.hpp"
#include "dpnoise/exact/uniform.hpp"
#include "dpnoise/exact/wide_uint.hpp"
#include "dpnoise/select/candidates.hpp"
#include "dpnoise/select/exponential_mechanism.hpp"
#include "dpnoise/select/gap_coins.hpp"
#include "dpnoise/select/laplace_noisy_max.hpp"
#include "dpnoise/select/permute_and_flip.hpp"
#include "dpnoise/select/score_rows.hpp"
#include "dpnoise/select/select_rows.hpp"
#include "dpnoise/ldp/count_mean_sketch.hpp"
#include "dpnoise/ldp/geometric_skip.hpp"
#include "dpnoise/ldp/hadamard_response.hpp"
#include "dpnoise/ldp/hash_family.hpp"
#include "dpnoise/ldp/hash_family64.hpp"
#include "dpnoise/ldp/heavy_hitters.hpp"
#include "dpnoise/ldp/local_hashing.hpp"
#include "dpnoise/ldp/packed_column_counts.hpp"
#include "dpnoise/ldp/public_matrix.hpp"
#include "dpnoise/ldp/unary_encoding.hpp"
#include "dpnoise/ldp/walsh_hadamard.hpp"
#include "dpnoise/ldp/zmatrix_oracle.hpp"
