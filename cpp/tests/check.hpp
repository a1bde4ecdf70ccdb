// The checks the C++ unit tests share: CHECK(cond) records a failure (file, line, condition)
// and goes on, so one run reports every failed check; main() returns report(name). Also the
// seeded keys and the statistical helpers (binomial and chi-square bounds with a stated
// false-alarm rate) of the statistical checks.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "dpnoise/random/keystream.hpp"

static int failures = 0;
#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                                    \
        }                                                                                  \
    } while (0)

// true when f() throws an E (and nothing else)
template <class E, class F>
static bool throws(F&& f) {
    try {
        f();
    } catch (const E&) {
        return true;
    } catch (...) {
        return false;
    }
    return false;
}

// main()'s result: 0 when every check passed, else 1 (the failures were printed as they happened)
[[maybe_unused]] static int report(const char* name) {
    if (failures) {
        std::fprintf(stderr, "%s: %d check(s) failed\n", name, failures);
        return 1;
    }
    std::printf("%s: all checks passed\n", name);
    return 0;
}

// A reproducible (test-only, NOT secret) generator key: word 0 = w, the rest 0.
[[maybe_unused]] static dpnoise::random::StreamKey test_key(uint32_t w) {
    dpnoise::random::StreamKey k{};
    k.words[0] = w;
    return k;
}

// |successes − n p| <= 5 sqrt(n p (1 − p)) (+1 for the discreteness): a binomial count against its
// exact probability p. Normal approximation: false alarm about 5.7e-7 per check.
[[maybe_unused]] static bool binomial_close(uint64_t successes, uint64_t n, double p) {
    const double mean = static_cast<double>(n) * p;
    return std::fabs(static_cast<double>(successes) - mean) <= 5 * std::sqrt(mean * (1 - p)) + 1;
}

// Pearson's chi-square statistic of observed counts against expected probabilities (summing to 1).
[[maybe_unused]] static double chi_square(const std::vector<uint64_t>& observed, const std::vector<double>& p) {
    uint64_t n = 0;
    for (uint64_t o : observed) n += o;
    double x = 0;
    for (size_t i = 0; i < observed.size(); ++i) {
        const double e = static_cast<double>(n) * p[i];
        const double d = static_cast<double>(observed[i]) - e;
        x += d * d / e;
    }
    return x;
}

// The upper 1e-4 point of the chi-square law with `dof` degrees of freedom, by the
// Wilson–Hilferty cube-root normal approximation (Wilson & Hilferty 1931; z_{1e-4} = 3.7190),
// accurate to a few percent for dof >= 3: a goodness-of-fit check has false alarm about 1e-4.
[[maybe_unused]] static double chi2_critical_1e4(unsigned dof) {
    const double k = dof, z = 3.7190;
    const double c = 1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k));
    return k * c * c * c;
}
