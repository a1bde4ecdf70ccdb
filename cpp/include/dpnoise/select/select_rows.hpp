// dpnoise/select/select_rows.hpp -- batched private selection: one call selects k candidates
// from every row of a score matrix, rows split into chunks over threads, chunk c reading stream
// c of the call's reservation (random/stream_fill.hpp), so a seeded family gives the same
// output for any number of threads. Memory beyond input and output: O(columns) per thread.
//
// Methods (gamma = a/b, the caller's epsilon / (2 sensitivity), or epsilon / sensitivity for
// monotone scores; docs/selection.md):
//   permute_and_flip       P(accept r) = e^{-gamma (q* - q_r)}        (permute_and_flip.hpp)
//   exponential_mechanism  P(r) proportional to e^{gamma q_r}          (exponential_mechanism.hpp)
//   laplace                argmax of q_r + DLap(1/gamma), fair ties    (laplace_noisy_max.hpp)
// Everything that can fail is checked before the first draw (the finiteness of real scores too,
// by the callers; the row loader's own check is a guard).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>

#include "dpnoise/exact/rational.hpp"
#include "dpnoise/exact/refinement_policy.hpp"
#include "dpnoise/request.hpp"
#include "dpnoise/select/candidates.hpp"
#include "dpnoise/select/exponential_mechanism.hpp"
#include "dpnoise/select/gap_coins.hpp"
#include "dpnoise/select/laplace_noisy_max.hpp"
#include "dpnoise/select/permute_and_flip.hpp"
#include "dpnoise/select/score_rows.hpp"

namespace dpnoise::select {

enum class Method { permute_and_flip, exponential_mechanism, laplace };

struct Selection {
    // the reproducibility unit: rows per stream
    static constexpr size_t kRowsPerStream = 64;
};

// The certified coin tables of one gamma, kept in the request layer's cache (immutable, by
// (num, den), least recently used out): building them costs about 500 certified exponentials,
// more than a whole selection over 1,000 candidates. The cache changes only the time.
struct GapCoinsOfGamma {
    using Param = exact::Rational;
    using Table = GapCoins;
    static std::pair<uint64_t, uint64_t> key(const Param& p) { return {p.num, p.den}; }
    static GapCoins build(const Param& p) { return GapCoins(p.num, p.den); }
};

// out: rows x k int64, row-major. gamma > 0; 1 <= k <= s.cols.
template <class Family, class Policy = exact::NeverForceRefinement>
void select_rows(Family& family, const ScoreMatrix& s, Method method, exact::Rational gamma, size_t k, int64_t* out,
                 unsigned threads) {
    check_matrix(s);
    exact::checked_rational(gamma.num, gamma.den, "gamma", /*allow_zero=*/false);
    if (k < 1 || k > s.cols) throw std::invalid_argument("k must be between 1 and the number of candidates");
    constexpr size_t kUnit = Selection::kRowsPerStream;
    switch (method) {
        case Method::permute_and_flip: {
            const std::shared_ptr<const GapCoins> cached = request::TableCache<GapCoinsOfGamma>::get(gamma);
            const GapCoins& coins = *cached;
            random::for_each_chunk<kUnit>(family, s.rows, threads, [&s, k, out, &coins](auto& bits, size_t b, size_t e) {
                RowWork work(s.cols);
                PermuteAndFlip<Policy> once{&coins, &work.accepted};
                for (size_t r = b; r < e; ++r) {
                    load_row(s, r, work.scores.data());
                    peel(bits, work, k, out + r * k, once);
                }
            });
            return;
        }
        case Method::exponential_mechanism: {
            const std::shared_ptr<const GapCoins> cached = request::TableCache<GapCoinsOfGamma>::get(gamma);
            const GapCoins& coins = *cached;
            random::for_each_chunk<kUnit>(family, s.rows, threads, [&s, k, out, &coins](auto& bits, size_t b, size_t e) {
                RowWork work(s.cols);
                ExponentialMechanism<Policy> once{&coins};
                for (size_t r = b; r < e; ++r) {
                    load_row(s, r, work.scores.data());
                    peel(bits, work, k, out + r * k, once);
                }
            });
            return;
        }
        case Method::laplace: {
            // discrete Laplace of scale t = 1/gamma = b/a (score units)
            using Law = request::DiscreteLaplace;
            const Law::Param scale = Law::make({gamma.den, gamma.num});
            const size_t draws = s.rows * s.cols;  // at least; peeling adds more
            auto run = [&](auto draw_one) {
                random::for_each_chunk<kUnit>(family, s.rows, threads, [&s, k, out, draw_one](auto& bits, size_t b, size_t e) {
                    RowWork work(s.cols);
                    LaplaceNoisyMax<decltype(draw_one)> once{draw_one};
                    for (size_t r = b; r < e; ++r) {
                        load_row(s, r, work.scores.data());
                        peel(bits, work, k, out + r * k, once);
                    }
                });
            };
            if (request::use_tables(draws, Law::table_cost(scale))) {
                const std::shared_ptr<const Law::Table> table = request::TableCache<Law>::get(scale);
                const Law::Table* t = table.get();
                Law::with_table_loop(*t, [&](auto draw) { run([t, draw](auto& bits) { return draw(bits, *t); }); });
            } else {
                run([scale](auto& bits) { return exact::discrete_laplace(bits, scale.num, scale.den); });
            }
            return;
        }
    }
    throw std::invalid_argument("unknown selection method");
}

}  // namespace dpnoise::select
