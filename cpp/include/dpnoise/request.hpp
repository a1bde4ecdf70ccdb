// dpnoise/request.hpp -- the sampling policy: for one request (law, parameter or parameters,
// output span, threads) choose the algorithm, build or reuse the immutable tables, and fill the
// output chunk by chunk from a stream family (random/stream_fill.hpp).
//
// Everything a request's output depends on is a function of its arguments: the algorithm is
// chosen from (parameter, size) alone, never from what a cache happens to hold, so a seeded
// family gives the same output for the same calls whatever ran before or beside them.
//
// The laws (DiscreteLaplace, Geometric, DiscreteGaussian, Bernoulli, BernoulliExp, Uniform) are
// traits: the parameter type, the small-request sampler (Canonne, Kamath & Steinke 2020,
// Algorithms 1-3), and for the first three the table type and its sampling loop
// (exact/table_samplers.hpp). Each kernel declares its reproducibility unit kOutputsPerStream.
// The mechanisms' fused kernels, built on these requests, are in mechanism_kernels.hpp.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "dpnoise/exact/bernoulli.hpp"
#include "dpnoise/exact/discrete_gaussian.hpp"
#include "dpnoise/exact/discrete_laplace.hpp"
#include "dpnoise/exact/geometric.hpp"
#include "dpnoise/exact/rational.hpp"
#include "dpnoise/exact/table_samplers.hpp"
#include "dpnoise/exact/uniform.hpp"
#include "dpnoise/parameters.hpp"
#include "dpnoise/random/stream_fill.hpp"

namespace dpnoise::request {

using exact::Rational;

// Which algorithm a request uses: automatic (the rule below), or forced (tests, benchmarks).
enum class Path { automatic, small, tables };

// A request this large repays building the tables; smaller ones use the CKS samplers directly.
// Calibrated by measurement (2026-11-22): a table costs about 40 us plus 60 ns per certified
// entry to build and saves 50-80 ns per sample, so the break-even request is about
// 800 + 1.2 entries samples. Both paths are exact and have the same distribution.
inline bool use_tables(size_t n, size_t cost) { return n >= 1024 + cost; }

// Per-element parameters: tables for at most this many distinct values per request (the
// most-used ones; tens of KiB each), so a request cannot build gigabytes of tables.
inline constexpr size_t kMaxTablesPerRequest = 64;

// ------------------------------------------------------------------------------ the laws
// A chunk of geometric (Signed = false) or discrete Laplace draws from one table, as the
// with_table_loop paths below draw them one by one (the same bits, the same output).
template <bool Signed, class Bits>
void fill_geometric_table(Bits& bits, const exact::GeometricTable& t, int64_t* out, size_t n) {
    if (t.t == 0) {
        std::fill(out, out + n, int64_t{0});
    } else if (!t.direct) {
        exact::geometric_table_large_fill<Signed>(bits, t, out, n);
    } else {
        for (size_t i = 0; i < n; ++i)
            out[i] = Signed ? exact::discrete_laplace_direct(bits, t) : static_cast<int64_t>(exact::geometric_direct(bits, t));
    }
}

// What the two laws of one rational scale share: the parameter, its key and the geometric table
// (built for the law kTableLaw).
template <exact::GeometricTable::Law kTableLaw>
struct ScaleLaw {
    static constexpr size_t kOutputsPerStream = size_t{1} << 16;
    static constexpr parameters::Kind kKind = parameters::Kind::scale;
    static constexpr const char* kParamName = "scale";
    using Param = Rational;
    using Table = exact::GeometricTable;
    // The largest scale: the int64 noise overflows with probability about 2 exp(-2^63/scale)
    // (the geometric tail), at most 2 e^-128 < 2^-183 for scale <= 2^56; above it a draw could
    // fail in the middle of a request, after moving the stream, so every caller (bindings, C
    // API, Cython) is refused here, before any draw.
    static constexpr uint64_t kMaxScaleLog2 = 56;
    static Param make(Rational r) {
        const Rational p = exact::checked_rational(r.num, r.den, kParamName);
        if (static_cast<exact::u128>(p.num) > (static_cast<exact::u128>(p.den) << kMaxScaleLog2))
            throw std::overflow_error("scale is too large: at most 2^56 for int64 noise (it would overflow)");
        return p;
    }
    static std::pair<uint64_t, uint64_t> key(const Param& p) { return {p.num, p.den}; }
    static size_t table_cost(const Param& p) { return Table::entries_for(p.num, p.den); }
    static Table build(const Param& p) { return Table(p.num, p.den, kTableLaw); }
};

struct DiscreteLaplace : ScaleLaw<exact::GeometricTable::Law::laplace> {
    template <class Bits> static int64_t draw(Bits& bits, const Param& p) { return exact::discrete_laplace(bits, p.num, p.den); }
    template <class Bits> static int64_t draw_table(Bits& bits, const Table& t) { return exact::discrete_laplace_table(bits, t); }
    // one tight loop per table path, chosen once per request
    template <class Fn> static void with_table_loop(const Table& g, Fn&& fn) {
        if (g.t == 0) fn([](auto&, const Table&) { return int64_t{0}; });
        else if (!g.direct) fn([](auto& bits, const Table& t) { return exact::geometric_table_large<true>(bits, t); });
        else fn([](auto& bits, const Table& t) { return exact::discrete_laplace_direct(bits, t); });
    }
    static constexpr bool kBlockFill = true;
    template <class Bits> static void fill_table(Bits& bits, const Table& t, int64_t* out, size_t n) {
        fill_geometric_table<true>(bits, t, out, n);
    }
};

struct Geometric : ScaleLaw<exact::GeometricTable::Law::geometric> {
    template <class Bits> static int64_t draw(Bits& bits, const Param& p) {
        return static_cast<int64_t>(exact::geometric_exp(bits, p.num, p.den));
    }
    template <class Bits> static int64_t draw_table(Bits& bits, const Table& t) {
        return static_cast<int64_t>(exact::geometric_table(bits, t));
    }
    template <class Fn> static void with_table_loop(const Table& g, Fn&& fn) {
        if (g.t == 0) fn([](auto&, const Table&) { return int64_t{0}; });
        else if (!g.direct) fn([](auto& bits, const Table& t) { return exact::geometric_table_large<false>(bits, t); });
        else fn([](auto& bits, const Table& t) { return static_cast<int64_t>(exact::geometric_direct(bits, t)); });
    }
    static constexpr bool kBlockFill = true;
    template <class Bits> static void fill_table(Bits& bits, const Table& t, int64_t* out, size_t n) {
        fill_geometric_table<false>(bits, t, out, n);
    }
};

struct DiscreteGaussian {
    static constexpr size_t kOutputsPerStream = size_t{1} << 16;
    static constexpr parameters::Kind kKind = parameters::Kind::variance;
    static constexpr const char* kParamName = "variance";
    using Param = exact::DiscreteGaussianParams;
    using Table = exact::DiscreteGaussianTable;
    static Param make(Rational r) { return Param(r.num, r.den); }
    static std::pair<uint64_t, uint64_t> key(const Param& p) { return {p.a, p.b}; }
    static size_t table_cost(const Param& p) { return Table::entries_for(p); }
    static Table build(const Param& p) { return Table(p); }
    template <class Bits> static int64_t draw(Bits& bits, const Param& p) { return exact::discrete_gaussian(bits, p); }
    template <class Bits> static int64_t draw_table(Bits& bits, const Table& t) { return exact::discrete_gaussian_table(bits, t); }
    template <class Fn> static void with_table_loop(const Table&, Fn&& fn) {
        fn([](auto& bits, const Table& t) { return exact::discrete_gaussian_table(bits, t); });
    }
    // a whole chunk's draws in one tight loop (the same draws as draw_table, in order)
    static constexpr bool kBlockFill = true;
    template <class Bits> static void fill_table(Bits& bits, const Table& t, int64_t* out, size_t n) {
        if (t.p.a == 0) {
            std::fill(out, out + n, int64_t{0});
            return;
        }
        exact::discrete_gaussian_buckets_fill(bits, t.buckets, *t.exp_tables, out, n);
    }
};

// Laws without tables: Table = void, and one rational parameter of kind K.
template <parameters::Kind K>
struct RationalLawWithoutTable {
    static constexpr size_t kOutputsPerStream = size_t{1} << 16;
    static constexpr parameters::Kind kKind = K;
    using Param = Rational;
    using Table = void;
};

struct Bernoulli : RationalLawWithoutTable<parameters::Kind::probability> {
    static constexpr const char* kParamName = "p";
    static Param make(Rational r) {
        const Rational q = exact::checked_rational(r.num, r.den, kParamName);
        if (q.num > q.den) throw std::invalid_argument("p must be in [0, 1]");
        return q;
    }
    template <class Bits> static bool draw(Bits& bits, const Param& p) {
        return exact::bernoulli_rational<Bits, uint64_t>(bits, p.num, p.den);
    }
};

struct BernoulliExp : RationalLawWithoutTable<parameters::Kind::scale> {
    static constexpr const char* kParamName = "gamma";
    static Param make(Rational r) { return exact::checked_rational(r.num, r.den, kParamName); }
    template <class Bits> static bool draw(Bits& bits, const Param& p) {
        return exact::bernoulli_exp_minus<Bits, uint64_t>(bits, p.num, p.den);
    }
};

// Uniform integers low + [0, span_minus_one].
struct Uniform {
    static constexpr size_t kOutputsPerStream = size_t{1} << 16;
    using Param = std::pair<int64_t, uint64_t>;  // (low, span - 1)
    using Table = void;
    static Param make(int64_t low, uint64_t span_minus_one) {
        if (static_cast<__int128>(low) + static_cast<__int128>(span_minus_one) > INT64_MAX)
            throw std::overflow_error("integers: low + span exceeds int64");
        return {low, span_minus_one};
    }
    template <class Bits> static int64_t draw(Bits& bits, const Param& p) {
        // low + u in unsigned arithmetic: make() guarantees low + span - 1 <= INT64_MAX
        return static_cast<int64_t>(static_cast<uint64_t>(p.first) + exact::uniform_at_most(bits, p.second));
    }
};

template <class Law>
inline constexpr bool kHasTables = !std::is_void_v<typename Law::Table>;

// Laws whose tables fill a whole chunk in one loop (Law::fill_table) rather than draw by draw.
template <class Law, class = void>
inline constexpr bool kHasBlockFill = false;
template <class Law>
inline constexpr bool kHasBlockFill<Law, std::void_t<decltype(Law::kBlockFill)>> = Law::kBlockFill;

// ------------------------------------------------------------------------- the table cache
// Immutable tables, cached by (law, parameter) so repeated requests do not rebuild them; least
// recently used first out. Thread-safe; a table is built outside the lock (two threads may
// both build one, and one copy is kept). The cache changes only the time a request takes,
// never its output.
template <class Law>
class TableCache {
public:
    using Table = typename Law::Table;
    static constexpr size_t kCapacity = 32;

    static std::shared_ptr<const Table> get(const typename Law::Param& p) {
        auto& self = instance();
        const auto k = Law::key(p);
        {
            std::lock_guard<std::mutex> lock(self.mutex_);
            for (auto it = self.entries_.begin(); it != self.entries_.end(); ++it) {
                if (it->first == k) {
                    self.entries_.splice(self.entries_.begin(), self.entries_, it);  // most recent first
                    ++self.hits_;
                    return it->second;
                }
            }
        }
        auto table = std::make_shared<const Table>(Law::build(p));
        std::lock_guard<std::mutex> lock(self.mutex_);
        ++self.builds_;
        for (auto& e : self.entries_)
            if (e.first == k) return e.second;  // built meanwhile by another thread
        self.entries_.emplace_front(k, table);
        if (self.entries_.size() > kCapacity) self.entries_.pop_back();
        return table;
    }

    // (tables held, lookups answered from the cache, tables built), for tests and reports
    static std::tuple<size_t, uint64_t, uint64_t> stats() {
        auto& self = instance();
        std::lock_guard<std::mutex> lock(self.mutex_);
        return {self.entries_.size(), self.hits_, self.builds_};
    }
    static void clear() {
        auto& self = instance();
        std::lock_guard<std::mutex> lock(self.mutex_);
        self.entries_.clear();
    }

private:
    static TableCache& instance() {
        static TableCache cache;
        return cache;
    }
    std::mutex mutex_;
    std::list<std::pair<std::pair<uint64_t, uint64_t>, std::shared_ptr<const Table>>> entries_;
    uint64_t hits_ = 0, builds_ = 0;
};

// ------------------------------------------------------------------------------ requests
// The identity combination: the output is the sample.
struct Identity {
    template <class T> T operator()(size_t, T y) const { return y; }
};

// Fills out[begin, end) with draw(bits) and then, when a combination is given, applies
// out[i] = combine(i, draw) in a second pass over the chunk: the sampler's loop stays as tight
// as it is alone (its serial bit-reader chain is the bottleneck; the combination's work,
// interleaved with it, cost more than its instructions), and the chunk's draws (512 KiB) stay
// in cache for the second pass.
template <class Out, class Bits, class Draw, class Combine>
void fill_combined(Bits& bits, Out* out, size_t begin, size_t end, Draw& draw, const Combine& combine) {
    if constexpr (std::is_same_v<Combine, Identity>) {
        random::fill_chunk(bits, out, begin, end, draw);
    } else {
        const std::unique_ptr<int64_t[]> noise(new int64_t[end - begin]);
        auto shifted = [&draw, begin](Bits& b, size_t i) { return draw(b, begin + i); };
        random::fill_chunk(bits, noise.get(), 0, end - begin, shifted);
        for (size_t i = begin; i < end; ++i) out[i] = combine(i, noise[i - begin]);
    }
}

// Combinations that also take a whole chunk at once: combine.block(out, begin, end, noise).
template <class Combine, class Out, class = void>
inline constexpr bool kHasBlockCombine = false;
template <class Combine, class Out>
inline constexpr bool kHasBlockCombine<Combine, Out, std::void_t<decltype(std::declval<const Combine&>().block(
    std::declval<Out*>(), size_t{0}, size_t{0}, std::declval<const int64_t*>()))>> = true;

// The same for a block fill(bits, int64_t* dst, size_t count) that draws a whole chunk at once.
template <class Out, class Bits, class Fill, class Combine>
void fill_block_combined(Bits& bits, Out* out, size_t begin, size_t end, const Fill& fill, const Combine& combine) {
    if constexpr (std::is_same_v<Combine, Identity> && std::is_same_v<Out, int64_t>) {
        fill(bits, out + begin, end - begin);
    } else {
        const std::unique_ptr<int64_t[]> noise(new int64_t[end - begin]);
        fill(bits, noise.get(), end - begin);
        if constexpr (kHasBlockCombine<Combine, Out>) combine.block(out, begin, end, noise.get());
        else for (size_t i = begin; i < end; ++i) out[i] = combine(i, noise[i - begin]);
    }
}

// n samples from one table: out[i] = combine(i, sample) (the tables path of sample_same).
template <class Law, class Family, class Out, class Combine>
void sample_table(Family& family, const std::shared_ptr<const typename Law::Table>& table, Out* out, size_t n,
                  unsigned threads, Combine combine) {
    constexpr size_t kUnit = Law::kOutputsPerStream;
    if constexpr (kHasBlockFill<Law>) {
        const typename Law::Table* t = table.get();
        random::for_each_chunk<kUnit>(family, n, threads, [t, out, combine](auto& bits, size_t b, size_t e) {
            auto fill = [t](auto& r, int64_t* dst, size_t m) { Law::fill_table(r, *t, dst, m); };
            fill_block_combined(bits, out, b, e, fill, combine);
        });
    } else {
        Law::with_table_loop(*table, [&](auto draw) {
            const typename Law::Table* t = table.get();
            random::for_each_chunk<kUnit>(family, n, threads, [t, draw, out, combine](auto& bits, size_t b, size_t e) {
                auto one = [t, draw](auto& r, size_t) { return draw(r, *t); };
                fill_combined(bits, out, b, e, one, combine);
            });
        });
    }
}

// n samples with one parameter: out[i] = combine(i, sample). `combine` must not throw except
// on conditions that do not depend on the samples' secrecy (it runs after the draws began).
template <class Law, class Family, class Out, class Combine = Identity>
void sample_same(Family& family, const typename Law::Param& p, Out* out, size_t n, unsigned threads,
                 Path path = Path::automatic, Combine combine = Combine{}) {
    constexpr size_t kUnit = Law::kOutputsPerStream;
    if constexpr (kHasTables<Law>) {
        const bool tables = path == Path::tables || (path == Path::automatic && use_tables(n, Law::table_cost(p)));
        if (tables) {
            sample_table<Law>(family, TableCache<Law>::get(p), out, n, threads, combine);
            return;
        }
    }
    (void)path;
    random::for_each_chunk<kUnit>(family, n, threads, [&p, out, combine](auto& bits, size_t b, size_t e) {
        auto one = [&p](auto& r, size_t) { return Law::draw(r, p); };
        fill_combined(bits, out, b, e, one, combine);
    });
}

// ------------------------------------------------------------------------ prepared parameters
// A parameter checked and converted once for many requests: a Generator's recently used scalar
// parameter, or a mechanism's plan. Its tables, when they are cheap enough, are built when it
// is prepared (before any budget is charged or noise drawn) and held by it, not by the LRU
// cache, so many live plans never evict one another's tables.
//
// The rule (a function of the parameter and the request size alone, as above): a prepared
// parameter uses its tables for every request of 2 or more values when they cost at most
// kPreparedTableCost entries (about 4 ms and 1 MiB to build, once), and the automatic rule
// otherwise. A single value takes the small-request sampler, as it does unprepared, so a
// scalar draw is the same draw prepared or not; requests of 2 to 1023 + cost values draw
// differently from the automatic rule (the same law, from fewer random bits and in ~7 ns
// instead of ~100 ns a value: docs/reproducibility.md, 0.8.0).
inline constexpr size_t kPreparedTableCost = size_t{1} << 16;
inline bool use_prepared_tables(size_t n, size_t cost) { return n >= 2 && cost <= kPreparedTableCost; }

template <class Law>
struct Prepared {
    using Param = typename Law::Param;
    Param param;
    std::shared_ptr<const typename Law::Table> table;  // null: no tables (the automatic rule applies)

    explicit Prepared(const Param& p) : param(p) {
        if constexpr (kHasTables<Law>) {
            if (Law::table_cost(p) <= kPreparedTableCost) table = std::make_shared<const typename Law::Table>(Law::build(p));
        }
    }
};

// The requests of a prepared parameter: its own tables by the rule above, else sample_same.
template <class Law, class Family, class Out, class Combine = Identity>
void sample_same(Family& family, const Prepared<Law>& prepared, Out* out, size_t n, unsigned threads,
                 Path path = Path::automatic, Combine combine = Combine{}) {
    if constexpr (kHasTables<Law>) {
        if (path == Path::automatic && prepared.table && n >= 2) {
            sample_table<Law>(family, prepared.table, out, n, threads, combine);
            return;
        }
    }
    sample_same<Law>(family, prepared.param, out, n, threads, path, combine);
}

// n samples, sample i with parameter params[index[i]]. The indices are checked and the
// tables built before any randomness is drawn; a parameter used by enough elements (the rule
// above, on its own count) gets its tables, for at most kMaxTablesPerRequest parameters (the
// most used; ties by position), the others use the small-request sampler.
template <class Law, class Family, class Out, class Combine = Identity>
void sample_each(Family& family, const std::vector<typename Law::Param>& params, const int64_t* index, Out* out,
                 size_t n, unsigned threads, Combine combine = Combine{}) {
    constexpr size_t kUnit = Law::kOutputsPerStream;
    std::vector<size_t> uses(params.size(), 0);
    for (size_t i = 0; i < n; ++i) {
        if (index[i] < 0 || index[i] >= static_cast<int64_t>(params.size()))
            throw std::invalid_argument("parameter index out of range");
        ++uses[static_cast<size_t>(index[i])];
    }
    if constexpr (kHasTables<Law>) {
        std::vector<size_t> candidates;
        for (size_t k = 0; k < params.size(); ++k)
            if (use_tables(uses[k], Law::table_cost(params[k]))) candidates.push_back(k);
        std::stable_sort(candidates.begin(), candidates.end(), [&](size_t x, size_t y) { return uses[x] > uses[y]; });
        if (candidates.size() > kMaxTablesPerRequest) candidates.resize(kMaxTablesPerRequest);
        std::vector<std::shared_ptr<const typename Law::Table>> tables(params.size());
        for (size_t k : candidates) tables[k] = TableCache<Law>::get(params[k]);
        random::sample_into<kUnit>(family, out, n, threads, [&](auto& bits, size_t i) {
            const size_t k = static_cast<size_t>(index[i]);
            const typename Law::Table* table = tables[k].get();
            return combine(i, table ? Law::draw_table(bits, *table) : Law::draw(bits, params[k]));
        });
    } else {
        random::sample_into<kUnit>(family, out, n, threads, [&](auto& bits, size_t i) {
            return combine(i, Law::draw(bits, params[static_cast<size_t>(index[i])]));
        });
    }
}

// Converts a parameter table (parameters.hpp) into the law's parameters, checking each.
template <class Law>
std::vector<typename Law::Param> make_params(const std::vector<Rational>& rationals) {
    std::vector<typename Law::Param> out;
    out.reserve(rationals.size());
    for (const Rational& r : rationals) out.push_back(Law::make(r));
    return out;
}

}  // namespace dpnoise::request
