// dpnoise/select/candidates.hpp -- one row's candidates and top-k by peeling.
//
// A selection "once" picks one candidate of a round; top-k repeats it k times, each round over
// the candidates not yet selected (peeling: k sequential selections, each with its own noise).
// The active list is kept in any order (a selected candidate is swapped with the last one):
// the law of a selection does not depend on the order in which candidates are listed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace dpnoise::select {

// Per-thread working memory of the row kernels: O(columns), reused for every row of a chunk.
struct RowWork {
    std::vector<int64_t> scores;      // the row, clamped or on the grid (score_rows.hpp)
    std::vector<uint32_t> active;     // top-k: candidates not yet selected
    std::vector<uint32_t> accepted;   // permute-and-flip: positions accepted this round
    explicit RowWork(size_t n) : scores(n) {}
};

// The candidates of one round: all of the row (list == nullptr) or those listed.
struct Candidates {
    const uint32_t* list = nullptr;
    size_t size = 0;
    uint32_t operator[](size_t j) const { return list ? list[j] : static_cast<uint32_t>(j); }
};

inline int64_t max_score(const int64_t* v, const Candidates& c) {
    int64_t m = v[c[0]];
    if (!c.list) {
        for (size_t j = 1; j < c.size; ++j) m = v[j] > m ? v[j] : m;
    } else {
        for (size_t j = 1; j < c.size; ++j) m = v[c.list[j]] > m ? v[c.list[j]] : m;
    }
    return m;
}

// out[0, k) = the candidates picked by k rounds of once(bits, scores, candidates) -> position.
template <class Bits, class Once>
void peel(Bits& bits, RowWork& w, size_t k, int64_t* out, Once& once) {
    const size_t n = w.scores.size();
    if (k == 1) {
        out[0] = static_cast<int64_t>(once(bits, w.scores.data(), Candidates{nullptr, n}));
        return;
    }
    w.active.resize(n);
    std::iota(w.active.begin(), w.active.end(), uint32_t{0});
    for (size_t round = 0; round < k; ++round) {
        const size_t j = once(bits, w.scores.data(), Candidates{w.active.data(), w.active.size()});
        out[round] = static_cast<int64_t>(w.active[j]);
        w.active[j] = w.active.back();
        w.active.pop_back();
    }
}

}  // namespace dpnoise::select
