// C++ unit tests of the local-DP kernels (dpnoise/ldp/): packed column counts, the Walsh–Hadamard
// transform, the hash families, the exact geometric skips, every randomizer's keep probability
// against its exact value, the aggregation kernels against naive sums, and the report checks.
// No Python. Built and run like test_core (ctest, .ci/sanitize). Statistical checks use fixed
// seeds; each states its false-alarm rate (check.hpp: binomial ~6e-7, chi-square ~1e-4).
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "dpnoise/exact/randomized_response.hpp"
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
#include "dpnoise/random/generator.hpp"

#include "check.hpp"

using namespace dpnoise;
using Bits = random::BitReader<random::KeystreamWords>;

static exact::BigUint big(uint64_t v) { return exact::BigUint(static_cast<exact::u128>(v)); }

// Test data (not a sampler under test): words of a seeded stream.
struct Words {
    random::ChaCha20Generator gen;
    random::KeystreamWords source;
    Bits bits;
    explicit Words(uint32_t seed) : gen(test_key(seed)), source(gen.open(gen.reserve(1), 0)), bits(source) {}
    uint64_t next() { return bits.word(); }
    uint64_t below(uint64_t m) { return next() % m; }  // test data only: the bias is irrelevant here
};

// e^γ/(e^γ + k − 1): the keep probability of k-ary randomized response at γ.
static double keep_probability(double gamma, double k) { return std::exp(gamma) / (std::exp(gamma) + k - 1); }

// ---------------------------------------------------------------------- packed column counts
// The carry-save counter equals a bit-by-bit count, for 1 and 3 words, partial groups of 16,
// several flushes (63 groups), and the multi-threaded split; counts are added (+=).
static void test_packed_column_counts_naive() {
    Words w(1);
    for (size_t W : {size_t{1}, size_t{3}}) {
        for (size_t n : {size_t{0}, size_t{5}, size_t{16}, size_t{17}, size_t{2500}, size_t{9000}}) {
            std::vector<uint64_t> rows(n * W);
            for (auto& r : rows) r = w.next() & w.next();  // density 1/4
            std::vector<int64_t> naive(64 * W, 7);
            for (size_t r = 0; r < n; ++r)
                for (size_t b = 0; b < 64 * W; ++b) naive[b] += static_cast<int64_t>((rows[r * W + b / 64] >> (b % 64)) & 1u);
            for (unsigned threads : {1u, 3u}) {
                std::vector<int64_t> counts(64 * W, 7);
                ldp::add_packed_column_counts(rows.data(), n, W, counts.data(), threads);
                CHECK(counts == naive);
            }
        }
    }
    std::vector<uint64_t> rows(4 * 2, 0);
    CHECK(ldp::packed_padding_clear(rows.data(), 4, 2, 125));
    rows[2 * 2 + 1] = uint64_t{1} << 62;  // column 126 of row 2: padding for d = 125
    CHECK(!ldp::packed_padding_clear(rows.data(), 4, 2, 125));
    CHECK(ldp::packed_padding_clear(rows.data(), 4, 2, 127));
    CHECK(ldp::packed_padding_clear(rows.data(), 4, 2, 128));
}

// ------------------------------------------------------------------- Walsh–Hadamard transform
// H H = D I (an involution up to D), the transform of a unit vector e_j is row j of H, lengths
// that are not a power of two are refused.
static void test_walsh_hadamard() {
    Words w(2);
    for (uint64_t D : {uint64_t{1}, uint64_t{2}, uint64_t{8}, uint64_t{256}}) {
        std::vector<int64_t> v(D), t(D);
        for (auto& x : v) x = static_cast<int64_t>(w.below(2001)) - 1000;
        t = v;
        ldp::walsh_hadamard_transform(t.data(), D);
        ldp::walsh_hadamard_transform(t.data(), D);
        for (uint64_t i = 0; i < D; ++i) CHECK(t[i] == static_cast<int64_t>(D) * v[i]);
        for (uint64_t j : {uint64_t{0}, D / 2, D - 1}) {
            std::vector<int64_t> e(D, 0);
            e[j] = 1;
            ldp::walsh_hadamard_transform(e.data(), D);
            for (uint64_t x = 0; x < D; ++x) CHECK(e[x] == 1 - 2 * static_cast<int64_t>(ldp::hadamard_sign_bit(j, x)));
        }
    }
    std::vector<int64_t> six(6, 1);
    CHECK(throws<std::invalid_argument>([&] { ldp::walsh_hadamard_transform(six.data(), 6); }));
    CHECK(ldp::next_power_of_two(1) == 1 && ldp::next_power_of_two(5) == 8 && ldp::next_power_of_two(64) == 64);
    CHECK(throws<std::invalid_argument>([] { ldp::next_power_of_two(0); }));
}

// ----------------------------------------------------------------------------- hash families
// Buckets lie in [0, g) and agree with the bucket boundaries L_v the aggregation scans with;
// for a fixed item and random seeds the bucket is uniform (chi-square, ~1e-4) and two distinct
// items collide with probability 1/g (binomial, ~6e-7): the strong universality the estimators
// assume. check_buckets refuses g < 2 and g > 2^32; the sketch family stays in [0, width).
static void test_hash_families() {
    Words w(3);
    for (uint64_t g : {uint64_t{2}, uint64_t{3}, uint64_t{1000}, uint64_t{1} << 32}) {
        for (int i = 0; i < 2000; ++i) {
            const ldp::HashSeed s{w.next(), w.next()};
            const uint64_t x = w.below(uint64_t{1} << 32);
            const uint64_t b = ldp::HashFamily::bucket(s, x, g);
            CHECK(b < g);
            const uint64_t h = ldp::HashFamily::hash32(s, x);
            CHECK(ldp::HashFamily::bucket_start(b, g) <= h && h < ldp::HashFamily::bucket_start(b + 1, g));
            uint64_t seed_words[4] = {w.next(), w.next(), w.next(), w.next()};
            CHECK(ldp::HashFamily64::bucket(ldp::HashFamily64::seed(seed_words), w.next(), g) < g);
        }
    }
    for (uint64_t bad : {uint64_t{0}, uint64_t{1}, (uint64_t{1} << 32) + 1}) {
        CHECK(throws<std::invalid_argument>([bad] { ldp::HashFamily::check_buckets(bad); }));
        CHECK(throws<std::invalid_argument>([bad] { ldp::HashFamily64::check_buckets(bad); }));
    }
    const uint64_t g = 5, n = 50000;
    std::vector<uint64_t> c32(g, 0), c64(g, 0);
    uint64_t coll32 = 0, coll64 = 0;
    for (uint64_t i = 0; i < n; ++i) {
        const ldp::HashSeed s{w.next(), w.next()};
        c32[ldp::HashFamily::bucket(s, 12345, g)] += 1;
        coll32 += ldp::HashFamily::bucket(s, 12345, g) == ldp::HashFamily::bucket(s, 12346, g);
        uint64_t sw[4] = {w.next(), w.next(), w.next(), w.next()};
        const ldp::HashSeed128 s64 = ldp::HashFamily64::seed(sw);
        c64[ldp::HashFamily64::bucket(s64, 777, g)] += 1;
        coll64 += ldp::HashFamily64::bucket(s64, 777, g) == ldp::HashFamily64::bucket(s64, 778, g);
    }
    const std::vector<double> uniform(g, 1.0 / g);
    CHECK(chi_square(c32, uniform) < chi2_critical_1e4(g - 1));
    CHECK(chi_square(c64, uniform) < chi2_critical_1e4(g - 1));
    CHECK(binomial_close(coll32, n, 1.0 / g));
    CHECK(binomial_close(coll64, n, 1.0 / g));

    const ldp::SketchHashes hs(test_key(4), 3, 16);
    std::vector<uint64_t> row(100);
    for (uint64_t l = 0; l < 3; ++l) {
        hs.row(l, 50, row.data(), row.size());
        for (uint64_t i = 0; i < 100; ++i) CHECK(row[i] < 16 && row[i] == hs(l, 50 + i));
    }
    CHECK(throws<std::invalid_argument>([] { ldp::SketchHashes(test_key(4), 0, 16); }));
    CHECK(throws<std::invalid_argument>([] { ldp::SketchHashes(test_key(4), 2, 12); }));
    CHECK(throws<std::invalid_argument>([] { ldp::SketchHashes(test_key(4), 2, 4); }));
}

// ------------------------------------------------------------------------- geometric skips
// min(Y, limit) against P[Y >= j] = q^j, q = 1/(1 + e^{−γ}), binned; chi-square, false alarm
// ~1e-4 per case. Cases: γ = 1 and 1/3 (one table, k = 0) and γ = 6 (k >= 1: H and the low
// part L), each by the fast path and with every decision forced down the exact refinement path.
template <class Policy>
static void check_skip_law(uint64_t num, uint64_t den, uint64_t limit, uint64_t bin, uint64_t n, uint32_t seed) {
    const ldp::GeometricSkip skip(big(num), big(den));
    const double q = 1 / (1 + std::exp(-static_cast<double>(num) / static_cast<double>(den)));
    const size_t nbins = static_cast<size_t>(limit / bin) + 1;  // the last bin: Y >= limit
    std::vector<uint64_t> counts(nbins, 0);
    Words w(seed);
    for (uint64_t i = 0; i < n; ++i) {
        const uint64_t y = skip.sample<Bits, Policy>(w.bits, limit);
        CHECK(y <= limit);
        counts[static_cast<size_t>(std::min(y, limit) / bin)] += 1;
    }
    std::vector<double> p(nbins);
    for (size_t b = 0; b + 1 < nbins; ++b)
        p[b] = std::pow(q, static_cast<double>(b * bin)) - std::pow(q, static_cast<double>((b + 1) * bin));
    p[nbins - 1] = std::pow(q, static_cast<double>(limit));
    CHECK(chi_square(counts, p) < chi2_critical_1e4(static_cast<unsigned>(nbins - 1)));
}

static void test_geometric_skip_law() {
    CHECK(ldp::GeometricSkip(big(1), big(1)).low_bits == 0);
    CHECK(ldp::GeometricSkip(big(6), big(1)).low_bits > 0);
    check_skip_law<exact::NeverForceRefinement>(1, 1, 12, 1, 200000, 11);
    check_skip_law<exact::NeverForceRefinement>(1, 3, 14, 1, 200000, 12);
    check_skip_law<exact::NeverForceRefinement>(6, 1, 2000, 100, 200000, 13);
    check_skip_law<exact::ForceRefinement>(1, 1, 12, 1, 20000, 14);
    check_skip_law<exact::ForceRefinement>(6, 1, 2000, 100, 10000, 15);
    CHECK(throws<std::invalid_argument>([] { ldp::GeometricSkip(big(0), big(1)); }));
    CHECK(throws<std::invalid_argument>([] { ldp::GeometricSkip(big(1), big(0)); }));
}

// ------------------------------------------------------------------------------ randomizers
// Unary encodings: bit x is 1 with p_true, every other bit with p_other (OUE: 1/2 and
// 1/(e^γ + 1); SUE: the halved γ applied by the core, e^{γ/2}/(e^{γ/2} + 1) and
// 1/(e^{γ/2} + 1)); padding bits stay 0; the output does not depend on threads.
static void check_unary(ldp::UnaryKind kind, uint64_t num, double p_true, double p_other, uint32_t seed) {
    const uint64_t d = 70, x = 65, n = 20000;
    const ldp::UnaryEncoding enc(kind, d, big(num), big(1));
    std::vector<int64_t> items(n, static_cast<int64_t>(x));
    std::vector<uint64_t> out(n * enc.words), again(n * enc.words);
    random::ChaCha20Generator g1(test_key(seed)), g2(test_key(seed));
    ldp::unary_privatize(g1, enc, items.data(), out.data(), n, 1);
    ldp::unary_privatize(g2, enc, items.data(), again.data(), n, 3);
    CHECK(out == again);
    CHECK(ldp::packed_padding_clear(out.data(), n, enc.words, d));
    std::vector<int64_t> counts(64 * enc.words, 0);
    ldp::add_packed_column_counts(out.data(), n, enc.words, counts.data(), 1);
    uint64_t others = 0;
    for (uint64_t b = 0; b < d; ++b)
        if (b != x) others += static_cast<uint64_t>(counts[b]);
    CHECK(binomial_close(static_cast<uint64_t>(counts[x]), n, p_true));
    CHECK(binomial_close(others, n * (d - 1), p_other));
}

static void test_unary_keep_probabilities() {
    const double e1 = std::exp(1.0), e6 = std::exp(6.0), h = std::exp(0.5), h6 = std::exp(3.0);  // e^γ, e^{γ/2}
    check_unary(ldp::UnaryKind::optimized, 1, 0.5, 1 / (e1 + 1), 21);
    check_unary(ldp::UnaryKind::optimized, 6, 0.5, 1 / (e6 + 1), 22);  // the k >= 1 skip path
    check_unary(ldp::UnaryKind::symmetric, 1, h / (h + 1), 1 / (h + 1), 23);
    check_unary(ldp::UnaryKind::symmetric, 6, h6 / (h6 + 1), 1 / (h6 + 1), 24);
    CHECK(throws<std::invalid_argument>([] { ldp::UnaryEncoding(ldp::UnaryKind::optimized, 1, big(1), big(1)); }));
    CHECK(throws<std::invalid_argument>(
        [] { ldp::UnaryEncoding(ldp::UnaryKind::optimized, (uint64_t{1} << 20) + 1, big(1), big(1)); }));
    CHECK(throws<std::invalid_argument>([] { ldp::UnaryEncoding(ldp::UnaryKind::symmetric, 8, big(1), big(0)); }));
}

// 1-bit Hadamard: the bit equals H[j, x] with e^γ/(e^γ + 1); the rows are uniform (chi-square).
// zmatrix: y = Z[x, c] with e^γ/(e^γ + 1). Both refuse a kernel that is not binary.
static void test_hadamard_and_zmatrix_keep_probabilities() {
    const uint64_t n = 40000, x = 11;
    const exact::RandomizedResponseKernel rr(2, big(1), big(1));
    const ldp::HadamardResponse hr(4, rr);
    std::vector<int64_t> items(n, static_cast<int64_t>(x)), rows(n);
    std::vector<uint8_t> packed((n + 7) / 8);
    random::ChaCha20Generator gen(test_key(31));
    ldp::hadamard_privatize(gen, hr, items.data(), rows.data(), packed.data(), n, 2);
    uint64_t kept = 0;
    std::vector<uint64_t> row_counts(16, 0);
    for (uint64_t i = 0; i < n; ++i) {
        const unsigned bit = (packed[i / 8] >> (i % 8)) & 1u;
        kept += bit == ldp::hadamard_sign_bit(static_cast<uint64_t>(rows[i]), x);
        row_counts[static_cast<size_t>(rows[i])] += 1;
    }
    CHECK(binomial_close(kept, n, keep_probability(1, 2)));
    CHECK(chi_square(row_counts, std::vector<double>(16, 1.0 / 16)) < chi2_critical_1e4(15));
    const exact::RandomizedResponseKernel rr3(3, big(1), big(1));
    CHECK(throws<std::invalid_argument>([&] { ldp::HadamardResponse(4, rr3); }));

    const ldp::PublicSignMatrix Z(test_key(32));
    Words w(33);
    const uint64_t m = 20000, domain = 1000;
    std::vector<int64_t> zx(m);
    std::vector<uint64_t> cols(m);
    for (uint64_t i = 0; i < m; ++i) {
        zx[i] = static_cast<int64_t>(w.below(domain));
        cols[i] = w.below(256);
    }
    std::vector<int8_t> y(m);
    ldp::zmatrix_privatize(gen, rr, Z, domain, zx.data(), cols.data(), y.data(), m, 2);
    uint64_t zkept = 0;
    for (uint64_t i = 0; i < m; ++i) zkept += y[i] == Z.entry(static_cast<uint64_t>(zx[i]), cols[i]);
    CHECK(binomial_close(zkept, m, keep_probability(1, 2)));
    std::vector<uint8_t> table_bits(m), block_bits(m);  // the client's two paths to Z give the same entries
    ldp::zmatrix_entry_bits(Z, domain, zx.data(), cols.data(), table_bits.data(), m, true);
    ldp::zmatrix_entry_bits(Z, domain, zx.data(), cols.data(), block_bits.data(), m, false);
    CHECK(table_bits == block_bits);
    CHECK(throws<std::invalid_argument>(
        [&] { ldp::zmatrix_privatize(gen, rr3, Z, domain, zx.data(), cols.data(), y.data(), m, 1); }));
}

// CMS: each of the m signs is kept with e^{γ/2}/(e^{γ/2} + 1), the halving applied by the core's
// cms_sign_kernel from the configuration's γ. HCMS: the bit H[a, h_l(x)] is kept with
// e^γ/(e^γ + 1). Hash indices are in [0, k), coefficients in [0, m).
static void test_sketch_keep_probabilities() {
    const uint64_t n = 20000, x = 4242, k = 4, m = 16;
    const ldp::SketchHashes hs(test_key(41), k, m);
    std::vector<int64_t> items(n, static_cast<int64_t>(x)), index(n), coefficient(n);
    std::vector<uint8_t> vectors(n * m / 8), packed((n + 7) / 8);
    random::ChaCha20Generator gen(test_key(42));
    ldp::cms_privatize(gen, hs, ldp::cms_sign_kernel(big(1), big(1)), items.data(), index.data(), vectors.data(), n, 2);
    uint64_t kept = 0;
    bool in_range = true;
    for (uint64_t i = 0; i < n; ++i) {
        in_range = in_range && index[i] >= 0 && static_cast<uint64_t>(index[i]) < k;
        const uint64_t a = hs(static_cast<uint64_t>(index[i]), x);
        for (uint64_t b = 0; b < m; ++b) {
            const unsigned minus = (vectors[i * m / 8 + b / 8] >> (b % 8)) & 1u;
            kept += minus == (b == a ? 0u : 1u);
        }
    }
    CHECK(in_range);
    CHECK(binomial_close(kept, n * m, keep_probability(0.5, 2)));
    const exact::RandomizedResponseKernel rr(2, big(1), big(1));
    ldp::hcms_privatize(gen, hs, rr, items.data(), index.data(), coefficient.data(), packed.data(), n, 2);
    uint64_t hkept = 0;
    for (uint64_t i = 0; i < n; ++i) {
        in_range = in_range && static_cast<uint64_t>(index[i]) < k && static_cast<uint64_t>(coefficient[i]) < m;
        const unsigned bit = (packed[i / 8] >> (i % 8)) & 1u;
        hkept += bit == ldp::hadamard_sign_bit(static_cast<uint64_t>(coefficient[i]), hs(static_cast<uint64_t>(index[i]), x));
    }
    CHECK(in_range);
    CHECK(binomial_close(hkept, n, keep_probability(1, 2)));
    CHECK(throws<std::invalid_argument>([&] {
        ldp::cms_privatize(gen, hs, exact::RandomizedResponseKernel(3, big(1), big(1)), items.data(), index.data(),
                           vectors.data(), n, 1);
    }));
}

// OLH, FLH and heavy hitters: the reported bucket equals the true one with e^γ/(e^γ + g − 1);
// pool indices and groups in range; the heavy-hitters group has probability weight/total.
static void test_hashing_keep_probabilities() {
    const uint64_t n = 30000, g = 10, x = 987654;
    const exact::RandomizedResponseKernel rr(g, big(1), big(1));
    std::vector<int64_t> items(n, static_cast<int64_t>(x)), values(n), indices(n), groups(n);
    std::vector<uint64_t> seeds(2 * n);
    random::ChaCha20Generator gen(test_key(51));
    ldp::olh_privatize(gen, rr, items.data(), seeds.data(), values.data(), n, 2);
    uint64_t kept = 0;
    for (uint64_t i = 0; i < n; ++i)
        kept += static_cast<uint64_t>(values[i]) == ldp::HashFamily::bucket(ldp::HashSeed{seeds[2 * i], seeds[2 * i + 1]}, x, g);
    CHECK(binomial_close(kept, n, keep_probability(1, g)));

    Words w(52);
    const uint64_t k_prime = 7;
    std::vector<uint64_t> pool(4 * k_prime);
    for (auto& v : pool) v = w.next();
    ldp::flh_privatize(gen, rr, pool.data(), k_prime, items.data(), indices.data(), values.data(), n, 2);
    kept = 0;
    bool in_range = true;
    for (uint64_t i = 0; i < n; ++i) {
        const uint64_t j = static_cast<uint64_t>(indices[i]);
        in_range = in_range && j < k_prime;
        kept += static_cast<uint64_t>(values[i]) ==
                ldp::HashFamily::bucket(ldp::HashSeed{pool[2 * j], pool[2 * j + 1]}, ldp::HashFamily::scramble(x), g);
    }
    CHECK(in_range);
    CHECK(binomial_close(kept, n, keep_probability(1, g)));
    CHECK(throws<std::invalid_argument>(
        [&] { ldp::flh_privatize(gen, rr, pool.data(), 0, items.data(), indices.data(), values.data(), n, 1); }));

    const std::vector<ldp::HeavyHitterGroup> hh{{1, 0, 0, 4}, {3, 0, 8, 7}};
    const std::vector<uint64_t> keys(n, x);
    ldp::hh_privatize(gen, rr, hh, pool.data(), k_prime, keys.data(), nullptr, groups.data(), indices.data(),
                      values.data(), n, 2);
    kept = 0;
    uint64_t first = 0;
    for (uint64_t i = 0; i < n; ++i) {
        const auto& gr = hh[static_cast<size_t>(groups[i])];
        const uint64_t j = static_cast<uint64_t>(indices[i]);
        in_range = in_range && groups[i] >= 0 && groups[i] < 2 && j < gr.k_prime;
        first += groups[i] == 0;
        kept += static_cast<uint64_t>(values[i]) ==
                ldp::HashFamily64::bucket(ldp::HashFamily64::seed(pool.data() + 4 * j), ldp::HeavyHitters::key(gr, x, 0), g);
    }
    CHECK(in_range);
    CHECK(binomial_close(first, n, 1.0 / 3));
    CHECK(binomial_close(kept, n, keep_probability(1, g)));
}

// ------------------------------------------------------------------ aggregation against naive
// The block/SIMD aggregation kernels equal their definitions computed naively, across several
// blocks and a partial last one.
static void test_support_naive() {
    Words w(61);
    const uint64_t g = 7, d = 5000, n = 300, k_prime = 5;
    std::vector<uint64_t> seeds(2 * n), pool(4 * k_prime);
    std::vector<int64_t> values(n), counts(k_prime * g, 0);
    for (auto& s : seeds) s = w.next();
    for (auto& v : values) v = static_cast<int64_t>(w.below(g));
    for (auto& p : pool) p = w.next();
    for (uint64_t j = 0; j < k_prime; ++j)
        if (j != 2)  // row 2 without reports: skipped by the kernels
            for (uint64_t v = 0; v < g; ++v) counts[j * g + v] = static_cast<int64_t>(w.below(50));
    std::vector<int64_t> olh(d, 0), flh(d);
    ldp::olh_support(seeds.data(), values.data(), n, g, d, olh.data(), 2);
    ldp::flh_support(counts.data(), pool.data(), k_prime, g, d, flh.data(), 2);
    bool olh_ok = true, flh_ok = true;
    for (uint64_t x = 0; x < d; ++x) {
        int64_t o = 0, f = 0;
        for (uint64_t i = 0; i < n; ++i)
            o += static_cast<uint64_t>(values[i]) == ldp::HashFamily::bucket(ldp::HashSeed{seeds[2 * i], seeds[2 * i + 1]}, x, g);
        for (uint64_t j = 0; j < k_prime; ++j)
            f += counts[j * g + ldp::HashFamily::bucket(ldp::HashSeed{pool[2 * j], pool[2 * j + 1]}, ldp::HashFamily::scramble(x), g)];
        olh_ok = olh_ok && olh[x] == o;
        flh_ok = flh_ok && flh[x] == f;
    }
    CHECK(olh_ok);
    CHECK(flh_ok);

    const size_t m = 600;
    std::vector<uint64_t> keys(m);
    for (auto& k : keys) k = w.next();
    std::vector<int64_t> support(m);
    ldp::hh_support(counts.data(), pool.data(), k_prime, g, keys.data(), m, support.data(), 2);
    bool hh_ok = true;
    for (size_t i = 0; i < m; ++i) {
        int64_t s = 0;
        for (uint64_t j = 0; j < k_prime; ++j) s += counts[j * g + ldp::HashFamily64::bucket(ldp::HashFamily64::seed(pool.data() + 4 * j), keys[i], g)];
        hh_ok = hh_ok && support[i] == s;
    }
    CHECK(hh_ok);
}

// Hadamard: accumulate then transform gives Σ_i y_i H[j_i, x]. Sketches: CMS/HCMS accumulate and
// sketch_gather give T[l, b] and Σ_l T[l, h_l(x)].
static void test_hadamard_and_sketch_aggregation_naive() {
    Words w(71);
    const uint64_t D = 16, n = 500;
    std::vector<int64_t> rows(n), sums(D, 0);
    std::vector<uint8_t> packed((n + 7) / 8);
    for (auto& r : rows) r = static_cast<int64_t>(w.below(D));
    for (auto& b : packed) b = static_cast<uint8_t>(w.next());
    packed.back() &= static_cast<uint8_t>((1u << (n % 8)) - 1);  // zero padding
    ldp::hadamard_accumulate(sums.data(), D, rows.data(), packed.data(), n);
    ldp::walsh_hadamard_transform(sums.data(), D);
    for (uint64_t x = 0; x < D; ++x) {
        int64_t s = 0;
        for (uint64_t i = 0; i < n; ++i)
            s += (1 - 2 * static_cast<int64_t>((packed[i / 8] >> (i % 8)) & 1u)) *
                 (1 - 2 * static_cast<int64_t>(ldp::hadamard_sign_bit(static_cast<uint64_t>(rows[i]), x)));
        CHECK(sums[x] == s);
    }

    const uint64_t k = 3, m = 8, d = 5000;
    const ldp::SketchHashes hs(test_key(72), k, m);
    std::vector<int64_t> index(n), T(k * m, 0), N(k, 0), naive_T(k * m, 0), naive_N(k, 0);
    std::vector<uint8_t> vectors(n * m / 8);
    for (auto& l : index) l = static_cast<int64_t>(w.below(k));
    for (auto& v : vectors) v = static_cast<uint8_t>(w.next());
    ldp::cms_accumulate(T.data(), N.data(), k, m, index.data(), vectors.data(), n);
    for (uint64_t i = 0; i < n; ++i) {
        const uint64_t l = static_cast<uint64_t>(index[i]);
        naive_N[l] += 1;
        for (uint64_t b = 0; b < m; ++b) naive_T[l * m + b] += 1 - 2 * static_cast<int64_t>((vectors[i * m / 8 + b / 8] >> (b % 8)) & 1u);
    }
    CHECK(T == naive_T);
    CHECK(N == naive_N);
    std::vector<int64_t> G(d);
    ldp::sketch_gather(hs, T.data(), d, G.data());
    bool gather_ok = true;
    for (uint64_t x = 0; x < d; ++x) {
        int64_t s = 0;
        for (uint64_t l = 0; l < k; ++l) s += T[l * m + hs(l, x)];
        gather_ok = gather_ok && G[x] == s;
    }
    CHECK(gather_ok);
}

// zmatrix: the packed sign-magnitude sums equal the naive column sums, merge adds, and the sweep
// (SIMD and scalar) equals Σ_c s_c Z[x, c].
static void test_zmatrix_aggregation_naive() {
    Words w(81);
    const size_t nwords = 4;
    const unsigned planes = 4;
    const uint64_t ncols = 64 * nwords, n = 600, domain = 300;
    std::vector<uint64_t> sign(nwords, 0), mag(planes * nwords, 0), sign2(nwords, 0), mag2(planes * nwords, 0);
    ldp::ColumnSums s{sign.data(), mag.data(), planes, nwords}, s2{sign2.data(), mag2.data(), planes, nwords};
    std::vector<uint64_t> cols(n);
    std::vector<int8_t> y(n);
    std::vector<int64_t> naive(ncols, 0);
    for (uint64_t i = 0; i < n; ++i) {
        cols[i] = w.below(ncols);
        y[i] = (w.next() & 1) ? int8_t{1} : int8_t{-1};
        naive[cols[i]] += y[i];
    }
    ldp::zmatrix_accumulate(s, cols.data(), y.data(), n / 2);
    ldp::zmatrix_accumulate(s2, cols.data() + n / 2, y.data() + n / 2, n - n / 2);
    ldp::zmatrix_merge(s, s2);
    for (uint64_t c = 0; c < ncols; ++c) CHECK(s.get(c) == naive[c]);
    const ldp::PublicSignMatrix Z(test_key(82));
    for (bool simd : {true, false}) {
        std::vector<int64_t> sums(domain);
        ldp::zmatrix_sweep(Z, s, domain, sums.data(), 2, simd);
        bool ok = true;
        for (uint64_t x = 0; x < domain; ++x) {
            int64_t t = 0;
            for (uint64_t c = 0; c < ncols; ++c) t += naive[c] * Z.entry(x, c);
            ok = ok && sums[x] == t;
        }
        CHECK(ok);
    }
}

// ------------------------------------------------------------------------------ report checks
// Every batch check refuses an out-of-range field and dirty padding, before changing a state.
static void test_report_checks() {
    const uint64_t D = 8;
    std::vector<int64_t> rows{0, 7, 3, 1, 2};
    std::vector<uint8_t> bits{0x1f};  // 5 reports, padding clear
    std::vector<int64_t> sums(D, 0);
    ldp::hadamard_check_reports(rows.data(), bits.data(), 5, D);
    rows[1] = 8;
    CHECK(throws<std::invalid_argument>([&] { ldp::hadamard_accumulate(sums.data(), D, rows.data(), bits.data(), 5); }));
    rows[1] = -1;
    CHECK(throws<std::invalid_argument>([&] { ldp::hadamard_check_reports(rows.data(), bits.data(), 5, D); }));
    rows[1] = 7;
    bits[0] = 0x3f;  // a padding bit after report 4
    CHECK(throws<std::invalid_argument>([&] { ldp::hadamard_accumulate(sums.data(), D, rows.data(), bits.data(), 5); }));
    CHECK(sums == std::vector<int64_t>(D, 0));

    const uint64_t k = 4, m = 8;
    std::vector<int64_t> index{0, 3, 4}, coefficient{0, 7, 1}, T(k * m, 0), N(k, 0);
    std::vector<uint8_t> vectors(3 * m / 8, 0), packed{0x07};
    CHECK(throws<std::invalid_argument>([&] { ldp::cms_accumulate(T.data(), N.data(), k, m, index.data(), vectors.data(), 3); }));
    CHECK(T == std::vector<int64_t>(k * m, 0) && N == std::vector<int64_t>(k, 0));
    index[2] = 1;
    ldp::cms_check_reports(index.data(), 3, k);
    ldp::hcms_check_reports(index.data(), coefficient.data(), packed.data(), 3, k, m);
    coefficient[1] = 8;
    CHECK(throws<std::invalid_argument>([&] { ldp::hcms_check_reports(index.data(), coefficient.data(), packed.data(), 3, k, m); }));
    coefficient[1] = 7;
    packed[0] = 0x0f;
    CHECK(throws<std::invalid_argument>([&] { ldp::hcms_accumulate(T.data(), k, m, index.data(), coefficient.data(), packed.data(), 3); }));
    CHECK(T == std::vector<int64_t>(k * m, 0));

    std::vector<uint64_t> sign(1, 0), mag(1, 0);
    const ldp::ColumnSums s{sign.data(), mag.data(), 1, 1};
    const uint64_t col_out[] = {64}, col_ok[] = {5, 5};
    const int8_t y_ok[] = {1, 1}, y_bad[] = {0};
    CHECK(throws<std::invalid_argument>([&] { ldp::zmatrix_accumulate(s, col_out, y_ok, 1); }));
    CHECK(throws<std::invalid_argument>([&] { ldp::zmatrix_accumulate(s, col_ok, y_bad, 1); }));
    CHECK(throws<std::overflow_error>([&] { ldp::zmatrix_accumulate(s, col_ok, y_ok, 2); }));  // |sum| 2 > 2^1 − 1

    CHECK(throws<std::invalid_argument>([] { ldp::HeavyHitters::check_groups({}, 4); }));
    CHECK(throws<std::invalid_argument>([] { ldp::HeavyHitters::check_groups({{2, 0, 0, 1}, {2, 0, 0, 1}}, 4); }));
    CHECK(throws<std::invalid_argument>([] { ldp::HeavyHitters::check_groups({{1, 2, 0, 1}}, 4); }));
    CHECK(throws<std::invalid_argument>([] { ldp::HeavyHitters::check_groups({{1, 0, 64, 1}}, 4); }));
    CHECK(throws<std::invalid_argument>([] { ldp::HeavyHitters::check_groups({{1, 0, 0, 5}}, 4); }));
    CHECK(throws<std::invalid_argument>([] { ldp::HeavyHitters::check_groups({{1, 0, 0, 0}}, 4); }));
    ldp::HeavyHitters::check_groups({{1, 0, 0, 4}, {5, 1, 63, 1}}, 4);
}

// hh_support_groups (one hash per (seed, key) for G groups) against one hh_support per group,
// in each lane width, and zmatrix_sweep_items against the full sweep's rows.
static void test_support_groups_and_zmatrix_items() {
    Words w(91);
    const uint64_t g = 5, k_prime = 9;
    const size_t G = 17, m = 300;
    std::vector<uint64_t> pool(4 * k_prime), keys(m);
    for (auto& p : pool) p = w.next();
    for (auto& k : keys) k = w.next();
    for (const int64_t scale : {int64_t{1}, int64_t{1} << 14, int64_t{1} << 32}) {
        std::vector<int64_t> counts(G * k_prime * g, 0), groups(G * m), one(m);
        for (size_t l = 0; l < G; ++l)
            for (uint64_t j = 0; j < k_prime; ++j)
                if (j != 4)  // a seed no group uses
                    for (uint64_t v = 0; v < g; ++v) counts[(l * k_prime + j) * g + v] = scale * static_cast<int64_t>(w.below(3));
        ldp::hh_support_groups(counts.data(), G, pool.data(), k_prime, g, keys.data(), m, groups.data(), 2);
        bool ok = true;
        for (size_t l = 0; l < G; ++l) {
            ldp::hh_support(counts.data() + l * k_prime * g, pool.data(), k_prime, g, keys.data(), m, one.data(), 1);
            for (size_t i = 0; i < m; ++i) ok = ok && groups[l * m + i] == one[i];
        }
        CHECK(ok);
    }
    std::vector<int64_t> negative(k_prime * g, -1), out(m);
    CHECK(throws<std::invalid_argument>([&] { ldp::hh_support_groups(negative.data(), 1, pool.data(), k_prime, g, keys.data(), m, out.data(), 1); }));

    const size_t nwords = 3;
    const uint64_t domain = 700;
    std::vector<uint64_t> sign(nwords), mag(2 * nwords);
    for (size_t i = 0; i < nwords; ++i) {
        mag[i] = w.next();
        mag[nwords + i] = w.next();
        sign[i] = w.next() & (mag[i] | mag[nwords + i]);
    }
    const ldp::ColumnSums s{sign.data(), mag.data(), 2, nwords};
    const ldp::PublicSignMatrix Z(test_key(92));
    std::vector<int64_t> full(domain), part(5);
    const uint64_t rows[] = {699, 0, 513, 513, 64};
    ldp::zmatrix_sweep(Z, s, domain, full.data(), 2);
    for (const bool simd : {false, true}) {
        ldp::zmatrix_sweep_items(Z, s, rows, 5, part.data(), 2, simd);
        bool same = true;
        for (size_t i = 0; i < 5; ++i) same = same && part[i] == full[rows[i]];
        CHECK(same);
    }
}

int main() {
    test_packed_column_counts_naive();
    test_walsh_hadamard();
    test_hash_families();
    test_geometric_skip_law();
    test_unary_keep_probabilities();
    test_hadamard_and_zmatrix_keep_probabilities();
    test_sketch_keep_probabilities();
    test_hashing_keep_probabilities();
    test_support_naive();
    test_hadamard_and_sketch_aggregation_naive();
    test_zmatrix_aggregation_naive();
    test_report_checks();
    test_support_groups_and_zmatrix_items();
    return report("test_ldp");
}
