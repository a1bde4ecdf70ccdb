// The C API of the extension (dpnoise/capi.h): a versioned table of C function pointers,
// exported as the capsule dpnoise._core._C_API, through which other extensions (C, C++,
// Cython via dpnoise/capi.pxd) draw exact noise without the GIL. Nothing here throws across
// the C boundary: every entry point catches and returns a status code.
//
// A stream is one fresh ChaCha20 stream id reserved from the generator (its own keystream
// buffer and bit reader), so it never repeats the generator's other output and needs neither
// the generator object nor Python once opened. This file is the only place that knows how a
// Python generator object maps to a C++ generator (GeneratorHandle::gen).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>

#include "bindings.hpp"
#include "dpnoise/capi.h"
#include "dpnoise/errors.hpp"
#include "dpnoise/exact/bernoulli.hpp"
#include "dpnoise/exact/discrete_gaussian.hpp"
#include "dpnoise/exact/discrete_laplace.hpp"
#include "dpnoise/exact/geometric.hpp"
#include "dpnoise/exact/rational.hpp"
#include "dpnoise/exact/table_samplers.hpp"
#include "dpnoise/exact/uniform.hpp"
#include "dpnoise/mechanism_kernels.hpp"
#include "dpnoise/request.hpp"
#include "dpnoise/random/bit_source.hpp"
#include "dpnoise/random/generator.hpp"
#include "dpnoise/random/keystream.hpp"

namespace rnd = dpnoise::random;
namespace exact = dpnoise::exact;

// Declared (opaque) in dpnoise/capi.h. Holds a BitReader pointing at its own member: never
// copied or moved, only created by capi_stream_open and freed by capi_stream_close.
struct dpnoise_stream {
    rnd::KeystreamWords words;
    rnd::BitReader<rnd::KeystreamWords> bits{words};
    bool secure;
    uint64_t fork_epoch;      // a secure stream must not draw in a forked child (it would repeat)
    const char* error = "";   // static message of the last failure
    // The last discrete Gaussian parameters: a loop over one variance builds them once.
    bool has_gaussian = false;
    exact::DiscreteGaussianParams gaussian;

    explicit dpnoise_stream(rnd::ChaCha20Generator& gen)
        : words(rnd::ChaCha20Generator::open(gen.reserve(1), 0)),
          secure(gen.is_secure()),
          fork_epoch(rnd::detail::fork_epoch()) {}
    dpnoise_stream(const dpnoise_stream&) = delete;
    dpnoise_stream& operator=(const dpnoise_stream&) = delete;
};

// Declared (opaque) in dpnoise/capi.h: the tables of one law and parameter, built once.
struct dpnoise_sampler {
    int law;
    exact::GeometricTable geometric;       // DPNOISE_LAW_DISCRETE_LAPLACE, DPNOISE_LAW_GEOMETRIC
    exact::DiscreteGaussianTable gaussian; // DPNOISE_LAW_DISCRETE_GAUSSIAN
};

namespace dpnoise::bindings {

namespace {

using Bits = rnd::BitReader<rnd::KeystreamWords>;

int fail(dpnoise_stream* s, int status, const char* message) {
    s->error = message;
    return status;
}

// Checks a rational parameter num/den against the core's limits (exact/rational.hpp), with
// static messages naming the argument; nothing is drawn when it fails.
struct Limits {
    const char* zero_den;
    const char* too_large;
};
int check_rational(dpnoise_stream* s, uint64_t num, uint64_t den, const Limits& m) {
    if (den == 0) return fail(s, DPNOISE_ERR_VALUE, m.zero_den);
    if (num > exact::kMaxRationalPart || den > exact::kMaxRationalPart) return fail(s, DPNOISE_ERR_OVERFLOW, m.too_large);
    return DPNOISE_OK;
}
constexpr Limits kScale{"scale: the denominator must be positive",
                        "scale: numerator and denominator must be at most 2^62"};
// A discrete Laplace / geometric scale: a valid rational of at most request::ScaleLaw's 2^56
// (above it an int64 draw could overflow after moving the stream; see request.hpp).
bool scale_too_large(uint64_t num, uint64_t den) {
    return static_cast<exact::u128>(num) > (static_cast<exact::u128>(den) << request::DiscreteLaplace::kMaxScaleLog2);
}
int check_scale(dpnoise_stream* s, uint64_t num, uint64_t den) {
    if (const int rc = check_rational(s, num, den, kScale)) return rc;
    if (scale_too_large(num, den)) return fail(s, DPNOISE_ERR_OVERFLOW, "scale: at most 2^56 (an int64 draw could overflow)");
    return DPNOISE_OK;
}
constexpr Limits kVariance{"variance: the denominator must be positive",
                           "variance: numerator and denominator must be at most 2^62"};
constexpr Limits kProbability{"p: the denominator must be positive", "p: numerator and denominator must be at most 2^62"};
constexpr Limits kGamma{"gamma: the denominator must be positive",
                        "gamma: numerator and denominator must be at most 2^62"};

// The status of the exception being handled (call it inside a catch block), with a static
// message; ``overflow_message`` says what did not fit for this kind of call.
int fail_with_current_exception(dpnoise_stream* s, const char* overflow_message) noexcept {
    try {
        throw;
    } catch (const std::overflow_error&) {
        return fail(s, DPNOISE_ERR_OVERFLOW, overflow_message);
    } catch (const std::bad_alloc&) {
        return fail(s, DPNOISE_ERR_MEMORY, "out of memory");
    } catch (const std::invalid_argument&) {
        return fail(s, DPNOISE_ERR_VALUE, "invalid parameter");
    } catch (const std::domain_error&) {
        return fail(s, DPNOISE_ERR_VALUE, "invalid parameter");
    } catch (...) {
        return fail(s, DPNOISE_ERR_INTERNAL, "internal error in dpnoise (please report it)");
    }
}

// Runs one draw: checks the stream, the output pointer and the fork epoch, then draw(bits),
// mapping every exception to a status.
template <class T, class Draw>
int guarded_draw(dpnoise_stream* s, T* out, Draw&& draw) noexcept {
    if (s == nullptr) return DPNOISE_ERR_VALUE;
    if (out == nullptr) return fail(s, DPNOISE_ERR_VALUE, "out: must not be NULL");
    if (s->secure && s->fork_epoch != rnd::detail::fork_epoch())
        return fail(s, DPNOISE_ERR_FORKED, "stream: opened before fork(); open a new stream in the child");
    try {
        const T value = draw(s->bits);
        *out = value;
        return DPNOISE_OK;
    } catch (...) {
        return fail_with_current_exception(s, "the draw does not fit in int64 (scale too large)");
    }
}

// The C++ generator behind a Python object: a dpnoise.Generator or dpnoise.ChaCha20 (through
// their _core attribute) or the _core.ChaCha20Core itself; nullptr for anything else.
rnd::ChaCha20Generator* generator_of(py::handle obj) {
    py::object current = py::reinterpret_borrow<py::object>(obj);
    for (int depth = 0; depth < 2; ++depth) {
        if (py::isinstance<GeneratorHandle>(current)) return current.cast<GeneratorHandle&>().gen.get();
        if (!py::hasattr(current, "_core")) return nullptr;
        current = current.attr("_core");
    }
    return py::isinstance<GeneratorHandle>(current) ? current.cast<GeneratorHandle&>().gen.get() : nullptr;
}

int capi_stream_open(struct _object* generator, dpnoise_stream** out) noexcept {
    if (out == nullptr) return DPNOISE_ERR_VALUE;
    *out = nullptr;
    if (generator == nullptr) return DPNOISE_ERR_TYPE;
    try {
        rnd::ChaCha20Generator* gen = generator_of(py::handle(generator));
        if (gen == nullptr) return DPNOISE_ERR_TYPE;
        *out = new dpnoise_stream(*gen);
        return DPNOISE_OK;
    } catch (const entropy_error&) {
        return DPNOISE_ERR_ENTROPY;
    } catch (const std::bad_alloc&) {
        return DPNOISE_ERR_MEMORY;
    } catch (const std::overflow_error&) {
        return DPNOISE_ERR_OVERFLOW;  // the generator has run out of stream ids
    } catch (const py::error_already_set&) {
        return DPNOISE_ERR_TYPE;  // an attribute lookup raised: not one of our generators
    } catch (...) {
        return DPNOISE_ERR_INTERNAL;
    }
}

void capi_stream_close(dpnoise_stream* s) noexcept { delete s; }

int capi_discrete_laplace(dpnoise_stream* s, uint64_t num, uint64_t den, int64_t* out) noexcept {
    if (s && out) {
        if (const int rc = check_scale(s, num, den)) return rc;
    }
    return guarded_draw(s, out, [&](Bits& bits) { return exact::discrete_laplace(bits, num, den); });
}

int capi_geometric(dpnoise_stream* s, uint64_t num, uint64_t den, int64_t* out) noexcept {
    if (s && out) {
        if (const int rc = check_scale(s, num, den)) return rc;
    }
    return guarded_draw(s, out, [&](Bits& bits) { return static_cast<int64_t>(exact::geometric_exp(bits, num, den)); });
}

int capi_discrete_gaussian(dpnoise_stream* s, uint64_t num, uint64_t den, int64_t* out) noexcept {
    if (s && out) {
        if (const int rc = check_rational(s, num, den, kVariance)) return rc;
    }
    return guarded_draw(s, out, [&](Bits& bits) {
        if (!s->has_gaussian || s->gaussian.a != num || s->gaussian.b != den) {
            s->has_gaussian = false;
            s->gaussian = exact::DiscreteGaussianParams(num, den);
            s->has_gaussian = true;
        }
        return exact::discrete_gaussian(bits, s->gaussian);
    });
}

int capi_bernoulli(dpnoise_stream* s, uint64_t num, uint64_t den, int* out) noexcept {
    if (s && out) {
        if (const int rc = check_rational(s, num, den, kProbability)) return rc;
        if (num > den) return fail(s, DPNOISE_ERR_VALUE, "p: must be in [0, 1] (numerator at most the denominator)");
    }
    return guarded_draw(s, out, [&](Bits& bits) { return exact::bernoulli_rational<Bits, uint64_t>(bits, num, den) ? 1 : 0; });
}

int capi_bernoulli_exp(dpnoise_stream* s, uint64_t num, uint64_t den, int* out) noexcept {
    if (s && out) {
        if (const int rc = check_rational(s, num, den, kGamma)) return rc;
    }
    return guarded_draw(s, out, [&](Bits& bits) { return exact::bernoulli_exp_minus<Bits, uint64_t>(bits, num, den) ? 1 : 0; });
}

int capi_uniform_at_most(dpnoise_stream* s, uint64_t m, uint64_t* out) noexcept {
    return guarded_draw(s, out, [&](Bits& bits) { return exact::uniform_at_most(bits, m); });
}

int capi_next_uint64(dpnoise_stream* s, uint64_t* out) noexcept {
    return guarded_draw(s, out, [](Bits& bits) { return bits.word(); });
}

int capi_stream_is_secure(const dpnoise_stream* s) noexcept { return s != nullptr && s->secure ? 1 : 0; }

const char* capi_stream_error(const dpnoise_stream* s) noexcept { return s == nullptr ? "stream: NULL" : s->error; }

const char* capi_status_message(int status) noexcept {
    switch (status) {
        case DPNOISE_OK: return "success";
        case DPNOISE_ERR_VALUE: return "a parameter is outside its domain";
        case DPNOISE_ERR_OVERFLOW: return "a parameter or a draw exceeds the supported range";
        case DPNOISE_ERR_TYPE:
            return "generator must be a dpnoise.Generator or dpnoise.ChaCha20 backed by ChaCha20 "
                   "(NumPy bit generators are not supported by the C API)";
        case DPNOISE_ERR_FORKED: return "the stream was opened before fork(); open a new stream in the child";
        case DPNOISE_ERR_ENTROPY: return "the operating system could not supply entropy";
        case DPNOISE_ERR_MEMORY: return "out of memory";
        case DPNOISE_ERR_INTERNAL: return "internal error in dpnoise (please report it)";
        default: return "unknown dpnoise status";
    }
}

int capi_sampler_new(int law, uint64_t num, uint64_t den, dpnoise_sampler** out) noexcept {
    if (out == nullptr) return DPNOISE_ERR_VALUE;
    *out = nullptr;
    if (law != DPNOISE_LAW_DISCRETE_LAPLACE && law != DPNOISE_LAW_DISCRETE_GAUSSIAN && law != DPNOISE_LAW_GEOMETRIC)
        return DPNOISE_ERR_VALUE;
    if (den == 0) return DPNOISE_ERR_VALUE;
    if (num > exact::kMaxRationalPart || den > exact::kMaxRationalPart) return DPNOISE_ERR_OVERFLOW;
    if (law != DPNOISE_LAW_DISCRETE_GAUSSIAN && scale_too_large(num, den)) return DPNOISE_ERR_OVERFLOW;
    try {
        auto sampler = std::make_unique<dpnoise_sampler>();
        sampler->law = law;
        if (law == DPNOISE_LAW_DISCRETE_GAUSSIAN) {
            sampler->gaussian = exact::DiscreteGaussianTable(exact::DiscreteGaussianParams(num, den));
        } else {
            const auto which = law == DPNOISE_LAW_GEOMETRIC ? exact::GeometricTable::Law::geometric
                                                            : exact::GeometricTable::Law::laplace;
            sampler->geometric = exact::GeometricTable(num, den, which);
        }
        *out = sampler.release();
        return DPNOISE_OK;
    } catch (const std::bad_alloc&) {
        return DPNOISE_ERR_MEMORY;
    } catch (const std::overflow_error&) {
        return DPNOISE_ERR_OVERFLOW;
    } catch (const std::invalid_argument&) {
        return DPNOISE_ERR_VALUE;
    } catch (...) {
        return DPNOISE_ERR_INTERNAL;
    }
}

void capi_sampler_free(dpnoise_sampler* sampler) noexcept { delete sampler; }

int capi_sampler_draw(dpnoise_stream* s, const dpnoise_sampler* sampler, int64_t* out) noexcept {
    if (s != nullptr && sampler == nullptr) return fail(s, DPNOISE_ERR_VALUE, "sampler: must not be NULL");
    return guarded_draw(s, out, [sampler](Bits& bits) -> int64_t {
        switch (sampler->law) {
            case DPNOISE_LAW_DISCRETE_LAPLACE: return exact::discrete_laplace_table(bits, sampler->geometric);
            case DPNOISE_LAW_GEOMETRIC: return static_cast<int64_t>(exact::geometric_table(bits, sampler->geometric));
            default: return exact::discrete_gaussian_table(bits, sampler->gaussian);
        }
    });
}

// ------------------------------------------------------------------ bulk fills (version 2)
// A bulk call's family: a ChaCha20 generator keyed by 256 bits read from the stream (the key of
// a spawned child, generator.hpp spawn_keys: ChaCha20 is a PRF, so the key is uniform and the
// family independent of the stream's other output), chunk c of kPerStream outputs from its
// stream c; the output is the same for any number of threads.
constexpr size_t kPerStream = request::DiscreteLaplace::kOutputsPerStream;

rnd::StreamKey bulk_key(dpnoise_stream* s) {
    rnd::StreamKey key;
    for (int j = 0; j < 4; ++j) {
        const uint64_t w = s->bits.word();
        key.words[2 * j] = static_cast<uint32_t>(w);
        key.words[2 * j + 1] = static_cast<uint32_t>(w >> 32);
    }
    return key;
}

// Checks of every bulk call, before any bit is read (static messages, no values).
int check_bulk(dpnoise_stream* s, const dpnoise_sampler* sampler, const void* out, size_t n) {
    if (sampler == nullptr) return fail(s, DPNOISE_ERR_VALUE, "sampler: must not be NULL");
    if (out == nullptr && n > 0) return fail(s, DPNOISE_ERR_VALUE, "out: must not be NULL");
    if (s->secure && s->fork_epoch != rnd::detail::fork_epoch())
        return fail(s, DPNOISE_ERR_FORKED, "stream: opened before fork(); open a new stream in the child");
    return DPNOISE_OK;
}

// body(family) with every exception mapped to a status (after the checks above).
template <class Body>
int guarded_bulk(dpnoise_stream* s, Body&& body) noexcept {
    try {
        rnd::ChaCha20Generator family(bulk_key(s), s->secure);
        body(family);
        return DPNOISE_OK;
    } catch (...) {
        return fail_with_current_exception(
            s, "a noisy value does not fit the output type (noise scale too large for the grid)");
    }
}

// fn(fill) with fill(bits, dst, m) the sampler's whole-chunk table loop (request.hpp's fill_table:
// the same bits in the same order as one draw per element, so the same outputs, faster).
template <class Fn>
void with_sampler_fill(const dpnoise_sampler& sampler, Fn&& fn) {
    const dpnoise_sampler* p = &sampler;
    switch (sampler.law) {
        case DPNOISE_LAW_DISCRETE_LAPLACE:
            fn([p](auto& bits, int64_t* dst, size_t m) { request::DiscreteLaplace::fill_table(bits, p->geometric, dst, m); });
            break;
        case DPNOISE_LAW_GEOMETRIC:
            fn([p](auto& bits, int64_t* dst, size_t m) { request::Geometric::fill_table(bits, p->geometric, dst, m); });
            break;
        default:
            fn([p](auto& bits, int64_t* dst, size_t m) { request::DiscreteGaussian::fill_table(bits, p->gaussian, dst, m); });
    }
}

int capi_sampler_fill(dpnoise_stream* s, const dpnoise_sampler* sampler, int64_t* out, size_t n,
                      unsigned threads) noexcept {
    if (s == nullptr) return DPNOISE_ERR_VALUE;
    if (const int rc = check_bulk(s, sampler, out, n)) return rc;
    return guarded_bulk(s, [&](rnd::ChaCha20Generator& family) {
        with_sampler_fill(*sampler, [&](auto fill) {
            rnd::for_each_chunk<kPerStream>(family, n, threads, [out, fill](auto& bits, size_t begin, size_t end) {
                fill(bits, out + begin, end - begin);
            });
        });
    });
}

// The grid kernel for T = double or float (request::to_grid / from_grid, in double for both).
template <class T>
struct GridLimits;
template <>
struct GridLimits<double> {
    static constexpr int kMinExp = -1074, kMaxExp = 1023;
    static constexpr int64_t kMaxBound = request::GridKernel::kMaxBound;  // 2^52
    static constexpr int64_t kExact = request::GridKernel::kExact;        // 2^53
};
// float: the same grid and exact noisy value in double (a float times 2^-k is exact there);
// only the final store rounds y 2^k to the nearest float, a post-processing of the exact
// release (Dwork & Roth 2014, Prop. 2.1), so a fine grid does not cap float32 values at 2^24
// grid steps.
template <>
struct GridLimits<float> : GridLimits<double> {};

template <class T>
int grid_noise_add(dpnoise_stream* s, const dpnoise_sampler* sampler, int k, int64_t bound, T* values, size_t n,
                   unsigned threads) noexcept {
    using Lim = GridLimits<T>;
    if (s == nullptr) return DPNOISE_ERR_VALUE;
    if (const int rc = check_bulk(s, sampler, values, n)) return rc;
    if (sampler->law == DPNOISE_LAW_GEOMETRIC)
        return fail(s, DPNOISE_ERR_VALUE, "sampler: the grid kernel needs a discrete Laplace or Gaussian sampler");
    if (k < Lim::kMinExp || k > Lim::kMaxExp) return fail(s, DPNOISE_ERR_VALUE, "grid_exponent: outside the type's range");
    if (bound < 0 || bound > Lim::kMaxBound) return fail(s, DPNOISE_ERR_VALUE, "bound: must be in [0, 2^52]");
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(values[i])) return fail(s, DPNOISE_ERR_VALUE, "values: NaN or infinity");
    const double b = static_cast<double>(bound);
    const double down = std::ldexp(1.0, -k), up = std::ldexp(1.0, k);  // exact: |k| <= 1074 ...
    const bool scaled = k >= -1022 && k <= 1022;                        // ... as normal doubles here
    const int rc = guarded_bulk(s, [&](rnd::ChaCha20Generator& family) {
        with_sampler_fill(*sampler, [&](auto fill) {
            rnd::for_each_chunk<kPerStream>(family, n, threads, [=](auto& bits, size_t begin, size_t end) {
                request::fill_block_combined(bits, values, begin, end, fill, [=](size_t i, int64_t noise) -> T {
                    const double x = static_cast<double>(values[i]);
                    const int64_t v = scaled ? request::to_grid(x, request::TimesFactor{down}, b)
                                             : request::to_grid(x, request::TimesLdexp{-k}, b);
                    if (noise > Lim::kExact || noise < -Lim::kExact)
                        throw std::overflow_error("noise beyond the grid's exact range");
                    const int64_t y = v + noise;
                    if (y > Lim::kExact || y < -Lim::kExact) throw std::overflow_error("beyond the grid's exact range");
                    const double r = scaled ? static_cast<double>(y) * up : std::ldexp(static_cast<double>(y), k);
                    // exact in double (|y| <= 2^53); a float store rounds it (post-processing)
                    if (std::fabs(r) > static_cast<double>(std::numeric_limits<T>::max()))
                        throw std::overflow_error("a noisy value overflows the type");
                    return static_cast<T>(r);
                });
            });
        });
    });
    if (rc != DPNOISE_OK) {  // the noise decided it: leave nothing un-noised behind
        for (size_t i = 0; i < n; ++i) values[i] = std::numeric_limits<T>::quiet_NaN();
    }
    return rc;
}

int capi_grid_noise_add_f64(dpnoise_stream* s, const dpnoise_sampler* sampler, int k, int64_t bound, double* values,
                            size_t n, unsigned threads) noexcept {
    return grid_noise_add<double>(s, sampler, k, bound, values, n, threads);
}

int capi_grid_noise_add_f32(dpnoise_stream* s, const dpnoise_sampler* sampler, int k, int64_t bound, float* values,
                            size_t n, unsigned threads) noexcept {
    return grid_noise_add<float>(s, sampler, k, bound, values, n, threads);
}

const dpnoise_capi kCapi = {
    DPNOISE_CAPI_VERSION,
    static_cast<uint32_t>(sizeof(dpnoise_capi)),
    &capi_stream_open,
    &capi_stream_close,
    &capi_discrete_laplace,
    &capi_discrete_gaussian,
    &capi_geometric,
    &capi_bernoulli,
    &capi_bernoulli_exp,
    &capi_uniform_at_most,
    &capi_next_uint64,
    &capi_stream_is_secure,
    &capi_stream_error,
    &capi_status_message,
    &capi_sampler_new,
    &capi_sampler_free,
    &capi_sampler_draw,
    &capi_sampler_fill,
    &capi_grid_noise_add_f64,
    &capi_grid_noise_add_f32,
};

}  // namespace

void register_capi(py::module_& m) {
    // The table is static and immutable: the capsule needs no destructor.
    m.attr("_C_API") = py::capsule(static_cast<const void*>(&kCapi), DPNOISE_CAPI_CAPSULE);
}

}  // namespace dpnoise::bindings
