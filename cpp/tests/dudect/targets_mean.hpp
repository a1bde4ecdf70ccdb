// cpp/tests/dudect/targets_mean.hpp -- the timing checks' targets for the numeric mean oracles
// (ldp/constant_time/mean_mechanisms.hpp), for the same harnesses (dudect.cpp, ct_valgrind.cpp,
// compiled with -DDUDECT_TARGETS_NS=dudect_mean_targets -include this file). One release = one
// user's report of the double secret / 2^30 (in [-1024, 1024]) with bounds (-512, 512), so that
// both clipped and interior values occur; SCALE is 100 ε (default ε = 1), or for ct_mean_vector
// the number of coordinates k (ε = 1; the secret is placed in coordinate 0, the others 0).
//   ct_mean_duchi, ct_mean_piecewise, ct_mean_hybrid, ct_mean_vector (hybrid, k coordinates)
//   ct_zmatrix: the zmatrix report ±Z[x, c] of the item x = secret mod 2^20 on the public column
//               c = 12345, γ = SCALE / 100 (ldp/constant_time/zmatrix.hpp)
//   vt_mean_duchi, vt_mean_piecewise, vt_mean_hybrid, vt_zmatrix: the default (variable-time)
//               kernels (vt_zmatrix: the row seed from the public stream, the exact keep/flip)
// Output classes: Duchi's bit 0 vs 1; Piecewise / hybrid: a report inside vs outside the
// window of the secret 0 (hybrid: a Duchi report vs a Piecewise report far from 0); zmatrix:
// kept vs flipped.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "dpnoise/ldp/constant_time/mean_mechanisms.hpp"
#include "dpnoise/ldp/constant_time/zmatrix.hpp"
#include "targets.hpp"

namespace dudect_mean_targets {

using dudect_targets::BufferWords;
using dudect_targets::kBound;
using dudect_targets::Reader;
using namespace dpnoise;

enum class Target {
    ct_mean_duchi, ct_mean_piecewise, ct_mean_hybrid, ct_mean_vector, ct_zmatrix,
    vt_mean_duchi, vt_mean_piecewise, vt_mean_hybrid, vt_zmatrix
};
inline const char* const kTargetNames[] = {"ct_mean_duchi", "ct_mean_piecewise", "ct_mean_hybrid", "ct_mean_vector",
                                           "ct_zmatrix", "vt_mean_duchi", "vt_mean_piecewise", "vt_mean_hybrid",
                                           "vt_zmatrix"};

inline bool parse_target(const std::string& s, Target& t) {
    const auto* const end = std::end(kTargetNames);
    const auto* const it = std::find_if(std::begin(kTargetNames), end, [&s](const char* name) { return s == name; });
    t = static_cast<Target>(it - std::begin(kTargetNames));
    return it != end;
}

inline ldp::MeanMechanism mechanism(ldp::MeanMechanism::Method m, uint64_t eps100) {
    return ldp::MeanMechanism(m, -512.0, 512.0, exact::BigUint(static_cast<exact::u128>(eps100)), exact::BigUint(100), true);
}

inline random::StreamKey zmatrix_key() {
    random::StreamKey key{};
    for (uint32_t i = 0; i < 8; ++i) key.words[i] = 0x9e3779b9u * (i + 1);
    return key;
}

struct Samplers {
    static constexpr uint64_t kColumn = 12345;
    uint64_t k;  // coordinates of ct_mean_vector
    ldp::MeanMechanism duchi, piecewise, hybrid;
    exact::ct::MeanMechanismCT ct_duchi, ct_piecewise, ct_hybrid;
    ldp::PublicSignMatrix Z;
    exact::RandomizedResponseKernel vt_rr;  // k = 2 at γ = SCALE / 100
    exact::ct::RandomizedResponseTable ct_rr;
    int64_t z0;  // the zmatrix report of the item 0 when kept (±1)
    explicit Samplers(uint64_t scale)
        : k(scale < 2 ? 2 : scale), duchi(mechanism(ldp::MeanMechanism::kDuchi, scale)),
          piecewise(mechanism(ldp::MeanMechanism::kPiecewise, scale)), hybrid(mechanism(ldp::MeanMechanism::kHybrid, scale)),
          ct_duchi(duchi), ct_piecewise(piecewise), ct_hybrid(hybrid), Z(zmatrix_key()),
          vt_rr(2, exact::BigUint(static_cast<exact::u128>(scale)), exact::BigUint(100)), ct_rr(vt_rr),
          z0(Z.entry(0, kColumn)) {}

    // the report's integer: Duchi's bit; Piecewise's z; hybrid: 2 z + kind (a Duchi report: its bit)
    int64_t release(Target t, int64_t secret, BufferWords& words) const {
        Reader bits(words);
        const double v = static_cast<double>(secret) * 0x1p-30;  // exact: |secret| <= 2^40
        switch (t) {  // t is public
            case Target::ct_mean_duchi: return static_cast<int64_t>(ct_duchi.duchi_bit(bits, ct_duchi.grid.map(bits, v)));
            case Target::ct_mean_piecewise: return ct_piecewise.piecewise(bits, ct_piecewise.grid.map(bits, v));
            case Target::ct_mean_hybrid: return pack(exact::ct::mean_report_ct(ct_hybrid, bits, &v, 1));
            case Target::ct_mean_vector: {
                double row[64] = {0};  // k <= 64 here
                row[0] = v;
                return pack(exact::ct::mean_report_ct(ct_hybrid, bits, row, k > 64 ? 64 : k));
            }
            case Target::ct_zmatrix:
                return exact::ct::zmatrix_report_ct(ct_rr, Z.key(), bits, static_cast<uint64_t>(secret) & 0xfffff, kColumn);
            case Target::vt_zmatrix: {
                const int64_t z = Z.entry(static_cast<uint64_t>(secret) & 0xfffff, kColumn);
                return vt_rr.keep(bits) ? z : -z;
            }
            case Target::vt_mean_duchi: return duchi.duchi_bit(bits, duchi.grid.map(bits, v)) ? 1 : 0;
            case Target::vt_mean_piecewise: return piecewise.piecewise(bits, piecewise.grid.map(bits, v));
            case Target::vt_mean_hybrid: {
                const int64_t m = hybrid.grid.map(bits, v);
                if (hybrid.hybrid_uses_duchi(bits)) return 2 * (hybrid.duchi_bit(bits, m) ? 1 : 0) + 1;
                return 2 * hybrid.piecewise(bits, m);
            }
        }
        return 0;
    }

    static int64_t pack(const exact::ct::MeanReportCT& r) {
        return 2 * r.value + static_cast<int64_t>(r.bit);
    }

    // classes of a release of the secret 0: 0 / 1 as described above, -1 for neither
    int output_class(Target t, int64_t out) const {
        if (t == Target::ct_mean_duchi || t == Target::vt_mean_duchi) return static_cast<int>(out);
        if (t == Target::ct_zmatrix || t == Target::vt_zmatrix) return out == z0 ? 0 : 1;
        const bool hyb = t != Target::ct_mean_piecewise && t != Target::vt_mean_piecewise;
        const ldp::MeanMechanism& mm = hyb ? hybrid : piecewise;
        const int64_t z = hyb ? out / 2 : out;
        if (hyb && (out & 1)) return 0;  // a Duchi report
        const int64_t Z = static_cast<int64_t>(mm.Z);
        const int64_t az = z < 0 ? -z : z;
        if (hyb) return 4 * az >= 3 * Z ? 1 : -1;
        return 4 * az <= Z / 4 ? 0 : (4 * az >= 3 * Z ? 1 : -1);
    }
};

}  // namespace dudect_mean_targets
