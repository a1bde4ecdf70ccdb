// cpp/tests/dudect/dudect.cpp -- dudect (Reparaz, Balasch & Verbauwhede, "Dude, is my code
// constant time?", DATE 2017) for the samplers: time one release clamp(secret) + noise per
// measurement, for two classes of inputs drawn in random order, and compare the classes' timing
// distributions with Welch's t-test, on all measurements and on the measurements cropped at 100
// upper percentiles (dudect's cropping: thresholds at the 1 - 0.5^(10 (k+1)/100) quantiles of
// a first batch). Leakage is declared when max |t| > 4.5 (dudect's threshold).
//
//   dudect TARGET CLASSES N [SCALE] [EXPECT]
//     TARGET   ct_laplace | ct_gaussian | ct_grid_laplace | ct_grid_gaussian | ct_rr | vt_laplace |
//              vt_gaussian | vt_laplace_table | vt_gaussian_table | vt_rr   (targets.hpp)
//     CLASSES  input:  secret fixed (0) vs uniform in [-2^40, 2^40]     (noise from one pool of random
//                      words, shared by both classes)
//              output: words whose noise is small (|y| <= scale/4) vs large (|y| >= 2.5 scale);
//                      randomized response: kept vs flipped to a category >= k/2
//     N        measurements per class (the harness stops when both classes have N)
//     SCALE    Laplace scale / Gaussian sigma / categories k (integer, default 100)
//     EXPECT   constant (exit 1 if max |t| >= 4.5) | leaky (exit 1 if max |t| <= 4.5) | none
#ifdef __linux__
#include <sched.h>  // sched_setaffinity (Linux only)
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// The cycle counter: the time-stamp counter on x86 (fenced by lfence), the virtual counter on
// aarch64 (cntvct_el0, ordered by isb), std::chrono's steady clock elsewhere. Only the x86 one
// is what .ci/constant_time's thresholds were calibrated on.
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define DUDECT_X86_TSC 1
#include <x86intrin.h>
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define DUDECT_AARCH64_CNTVCT 1
#else
#include <atomic>
#include <chrono>
#endif

#include "target_set.hpp"  // which targets this binary is built for

namespace {

// The harness's own randomness (class order, buffers, secrets): SplitMix64 from a fixed seed.
// It is not secret; the timing it measures does not depend on its quality.
struct SplitMix {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
};

// Welford's online mean and variance per class, and Welch's t.
struct TTest {
    double mean[2] = {0, 0}, m2[2] = {0, 0}, n[2] = {0, 0};
    void push(double x, int c) {
        n[c] += 1;
        const double d = x - mean[c];
        mean[c] += d / n[c];
        m2[c] += d * (x - mean[c]);
    }
    double t() const {
        if (n[0] < 2 || n[1] < 2) return 0;
        const double v0 = m2[0] / (n[0] - 1), v1 = m2[1] / (n[1] - 1);
        const double den = std::sqrt(v0 / n[0] + v1 / n[1]);
        return den > 0 ? (mean[0] - mean[1]) / den : 0;
    }
};

inline uint64_t cycles() {
#if defined(DUDECT_X86_TSC)
    _mm_lfence();
    const uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
#elif defined(DUDECT_AARCH64_CNTVCT)
    uint64_t t;
    __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(t) : : "memory");
    return t;
#else
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// Every store before it is visible before any later load or store (the copy below is done
// before the timing starts).
inline void store_fence() {
#if defined(DUDECT_X86_TSC)
    _mm_mfence();
#elif defined(DUDECT_AARCH64_CNTVCT)
    __asm__ __volatile__("dsb sy" : : : "memory");
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

constexpr size_t kWords = 128;   // words per buffer (1 KiB; read cyclically by the variable-time samplers)
constexpr size_t kPool = 2048;   // buffers per class
constexpr size_t kBatch = 10000;  // measurements per batch
constexpr int kPercentiles = 100;

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: dudect TARGET input|output N [SCALE] [constant|leaky|none]\n");
        return 2;
    }
    Target target;
    if (!parse_target(argv[1], target)) {
        std::fprintf(stderr, "unknown target %s\n", argv[1]);
        return 2;
    }
    const std::string classes = argv[2];
    if (classes != "input" && classes != "output") {
        std::fprintf(stderr, "CLASSES must be input or output\n");
        return 2;
    }
    const size_t per_class = std::strtoull(argv[3], nullptr, 10);
    const uint64_t scale = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 100;
    const std::string expect = argc > 5 ? argv[5] : "none";
    const Samplers samplers(scale);
    SplitMix rng{20261125};
#ifdef __linux__
    {  // stay on one CPU (migrations add noise to the timings; failure to pin is harmless)
        cpu_set_t one;
        CPU_ZERO(&one);
        const int cpu = sched_getcpu();
        if (cpu >= 0) {
            CPU_SET(cpu, &one);
            (void)sched_setaffinity(0, sizeof one, &one);
        }
    }
#endif

    // Buffers: class c's j-th at (c kPool + j) KiB, so that both classes' buffers have the
    // same addresses modulo 4 KiB (the copy below then meets the same cache sets and 4K
    // aliasing for both classes).
    std::vector<uint64_t> buffers(2 * kPool * kWords);
    size_t filled[2] = {0, 0};
    std::vector<uint64_t> candidate(kWords);
    while (filled[0] < kPool || filled[1] < kPool) {
        for (auto& w : candidate) w = rng.next();
        int c = -1;
        if (classes == "input") {
            c = filled[0] <= filled[1] ? 0 : 1;  // (only pool 0 is used: see below)
        } else {
            BufferWords words{candidate.data(), kWords};
            c = samplers.output_class(target, samplers.release(target, 0, words));
        }
        if (c < 0 || filled[c] >= kPool) continue;
        std::copy(candidate.begin(), candidate.end(), buffers.begin() + static_cast<ptrdiff_t>((static_cast<size_t>(c) * kPool + filled[c]) * kWords));
        ++filled[c];
    }

    std::vector<int> cls(kBatch);
    std::vector<const uint64_t*> buf(kBatch);
    std::vector<int64_t> secret(kBatch);
    std::vector<double> times(kBatch);
    std::vector<uint64_t> scratch(kWords);
    std::vector<double> crop(kPercentiles, 0);
    TTest tests[1 + kPercentiles];
    uint64_t sink = 0;
    size_t n[2] = {0, 0};
    bool first = true;
    while (n[0] < per_class || n[1] < per_class) {
        for (size_t i = 0; i < kBatch; ++i) {
            const uint64_t r = rng.next();
            cls[i] = static_cast<int>(r & 1);
            const size_t j = static_cast<size_t>((r >> 1) % kPool);
            // input classes: both classes draw from the same pool (only the secret differs);
            // output classes: each from its own
            const size_t pool = classes == "input" ? 0 : static_cast<size_t>(cls[i]);
            buf[i] = buffers.data() + (pool * kPool + j) * kWords;
            if (classes == "input")
                secret[i] = cls[i] == 0 ? 0 : static_cast<int64_t>(rng.next() % (2 * static_cast<uint64_t>(kBound) + 1)) - kBound;
            else
                secret[i] = 0;
        }
        for (size_t i = 0; i < kBatch; ++i) {
            // the words are copied to one scratch buffer first (untimed): every measurement
            // reads the same addresses, so only the words' values differ between the classes
            // (reading each class's buffers in place made the cache sets differ by class)
            std::copy(buf[i], buf[i] + kWords, scratch.begin());
            store_fence();  // the copy's stores leave the store buffer before the timing starts
            BufferWords words{scratch.data(), kWords};
            const int64_t sec = secret[i];
            const uint64_t t0 = cycles();
            const int64_t out = samplers.release(target, sec, words);
            const uint64_t t1 = cycles();
            sink += static_cast<uint64_t>(out);
            times[i] = static_cast<double>(t1 - t0);
        }
        if (first) {  // dudect: the first batch only warms up and sets the cropping thresholds
            std::vector<double> sorted(times);
            std::sort(sorted.begin(), sorted.end());
            for (int k = 0; k < kPercentiles; ++k) {
                const double q = 1 - std::pow(0.5, 10.0 * (k + 1) / kPercentiles);
                crop[static_cast<size_t>(k)] = sorted[static_cast<size_t>(q * static_cast<double>(kBatch - 1))];
            }
            first = false;
            continue;
        }
        for (size_t i = 0; i < kBatch; ++i) {
            const int c = cls[i];
            if (n[c] >= per_class) continue;
            ++n[c];
            tests[0].push(times[i], c);
            for (int k = 0; k < kPercentiles; ++k)
                if (times[i] < crop[static_cast<size_t>(k)]) tests[1 + k].push(times[i], c);
        }
    }
    // dudect reports the largest |t| among the tests with enough measurements
    double max_t = 0;
    int which = 0;
    for (int k = 0; k <= kPercentiles; ++k) {
        if (tests[k].n[0] + tests[k].n[1] < 10000) continue;
        if (std::fabs(tests[k].t()) > std::fabs(max_t)) {
            max_t = tests[k].t();
            which = k;
        }
    }
    std::printf("dudect %s classes=%s scale=%llu n=%zu/%zu: max|t| = %.2f (sign %c; %s), uncropped t = %.2f, mean cycles %.1f vs %.1f%s\n",
                argv[1], classes.c_str(), static_cast<unsigned long long>(scale), n[0], n[1], std::fabs(max_t), max_t < 0 ? '-' : '+',
                which == 0 ? "uncropped" : ("cropped at percentile " + std::to_string(which - 1)).c_str(), tests[0].t(),
                tests[0].mean[0], tests[0].mean[1], sink == 42 ? " " : "");
    if (std::getenv("DUDECT_VERBOSE")) {
        for (int k = 0; k <= kPercentiles; k += 5)
            std::printf("  test %3d: n = %.0f/%.0f, t = %6.2f, means %.1f / %.1f\n", k, tests[k].n[0], tests[k].n[1], tests[k].t(),
                        tests[k].mean[0], tests[k].mean[1]);
    }
    const bool leak = std::fabs(max_t) > 4.5;
    if (expect == "constant" && leak) {
        std::printf("  FAIL: expected no detectable leakage (|t| < 4.5)\n");
        return 1;
    }
    if (expect == "leaky" && !leak) {
        std::printf("  FAIL: expected the harness to detect this variable-time path (|t| > 4.5)\n");
        return 1;
    }
    return 0;
}
