// cpp/tests/dudect/targets.hpp -- what the timing checks time: one release of a secret integer,
// clamp(secret) + noise, with the noise from a sampler reading a given word source. The
// constant-time samplers (exact/constant_time/) and, to show that the checks have power, the
// variable-time ones (CKS 2020 Algorithms 2 and 3, the scalar path; and the table samplers,
// the size= path).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include "dpnoise/exact/constant_time/laws.hpp"
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

enum class Target { ct_laplace, ct_gaussian, vt_laplace, vt_gaussian, vt_laplace_table, vt_gaussian_table };

inline bool parse_target(const std::string& s, Target& t) {
    if (s == "ct_laplace") t = Target::ct_laplace;
    else if (s == "ct_gaussian") t = Target::ct_gaussian;
    else if (s == "vt_laplace") t = Target::vt_laplace;
    else if (s == "vt_gaussian") t = Target::vt_gaussian;
    else if (s == "vt_laplace_table") t = Target::vt_laplace_table;
    else if (s == "vt_gaussian_table") t = Target::vt_gaussian_table;
    else return false;
    return true;
}

// Every sampler's parameter and table, built once (public).
struct Samplers {
    uint64_t scale;  // Laplace scale and Gaussian sigma (integers)
    exact::ct::DiscreteLaplaceTable ct_laplace;
    exact::ct::DiscreteGaussianTable ct_gaussian;
    exact::DiscreteGaussianParams vt_gaussian;
    exact::GeometricTable vt_laplace_table;
    exact::DiscreteGaussianTable vt_gaussian_table;
    explicit Samplers(uint64_t s)
        : scale(s), ct_laplace(s, 1), ct_gaussian(s * s, 1), vt_gaussian(s * s, 1),
          vt_laplace_table(s, 1, exact::GeometricTable::Law::laplace), vt_gaussian_table(exact::DiscreteGaussianParams(s * s, 1)) {}

    int64_t noise(Target t, Reader& bits) const {
        switch (t) {  // t is public: the same branch on every measurement of a run
            case Target::ct_laplace: return exact::ct::discrete_laplace(bits, ct_laplace);
            case Target::ct_gaussian: return exact::ct::discrete_gaussian(bits, ct_gaussian);
            case Target::vt_laplace: return exact::discrete_laplace(bits, scale, 1);
            case Target::vt_gaussian: return exact::discrete_gaussian(bits, vt_gaussian);
            case Target::vt_laplace_table: return exact::discrete_laplace_table(bits, vt_laplace_table);
            case Target::vt_gaussian_table: return exact::discrete_gaussian_table(bits, vt_gaussian_table);
        }
        return 0;
    }

    // one release: clamp(secret) + noise
    int64_t release(Target t, int64_t secret, BufferWords& words) const {
        Reader bits(words);
        return clamp_ct(secret, kBound) + noise(t, bits);
    }
};

}  // namespace dudect_targets
