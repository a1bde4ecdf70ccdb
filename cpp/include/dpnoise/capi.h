/* dpnoise/capi.h -- the C interface of the dpnoise._core Python extension.
 *
 * Another extension module (C, C++ or Cython: dpnoise/capi.pxd declares the same) draws exact DP
 * noise in its own loops, without the GIL and without Python calls, through a table of function
 * pointers that dpnoise._core exports as the PyCapsule dpnoise._core._C_API. The model is
 * NumPy's numpy.random C/Cython API. Plain C; the core's C++ headers are not needed here.
 *
 *   const dpnoise_capi *api = dpnoise_capi_import();     // GIL held; NULL + exception on error
 *   dpnoise_stream *s;
 *   if (api->stream_open(generator, &s) != DPNOISE_OK) ...  // GIL held
 *   Py_BEGIN_ALLOW_THREADS
 *   int64_t x;
 *   int rc = api->discrete_laplace(s, 3, 2, &x);         // scale 3/2; any thread, no GIL
 *   Py_END_ALLOW_THREADS
 *   api->stream_close(s);
 *
 * Arrays: prepare a sampler once (sampler_new builds its tables), then fill whole buffers with
 * sampler_fill (int64 draws) or grid_noise_add_f64/_f32 (noise added in place to a float
 * buffer, on a grid), threaded, without the GIL. These are the fast path; per-call draws cost
 * about 8x more per value and are for a few values at a time.
 *
 * Streams. stream_open(generator, &stream) takes a dpnoise.Generator or dpnoise.ChaCha20 (a
 * generator backed by a NumPy BitGenerator is refused: DPNOISE_ERR_TYPE) and reserves one fresh
 * ChaCha20 stream id from it, so the stream's words are never handed out by anything else. The
 * stream owns its keystream buffer and bit reader; it does not keep the generator alive and needs
 * no Python. One stream serves one thread at a time; open one per thread. A stream opened from a
 * secure generator refuses to draw in a forked child (DPNOISE_ERR_FORKED): open a new one there.
 * Seeded generators give reproducible streams: the same seed and the same calls give the same
 * numbers.
 *
 * Errors. Every draw returns a status (DPNOISE_OK = 0); no C++ exception and no Python exception
 * crosses this interface, and *out is written only on success. A bad parameter is refused before
 * any random bit is read. status_message(status) is a static description of a status;
 * stream_error(stream) is a static message naming the argument of the last failed call on that
 * stream (it never contains values).
 *
 * Parameters are exact rationals num/den with den >= 1 and num, den <= 2^62 (the core's limits).
 *
 * Compatibility. Functions are only ever appended: a table with version >= the version a caller
 * was compiled with, and size >= its sizeof(dpnoise_capi), serves it (dpnoise_capi_import checks).
 * An incompatible change would get a new capsule name.
 */
#ifndef DPNOISE_CAPI_H
#define DPNOISE_CAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DPNOISE_CAPI_VERSION 2 /* 2: sampler_fill, grid_noise_add_f64/_f32 */
#define DPNOISE_CAPI_CAPSULE "dpnoise._core._C_API"

/* Status codes. */
#define DPNOISE_OK 0
#define DPNOISE_ERR_VALUE 1    /* a parameter outside its domain (den = 0, p > 1, ...): ValueError */
#define DPNOISE_ERR_OVERFLOW 2 /* a parameter above 2^62, or a draw beyond int64: OverflowError */
#define DPNOISE_ERR_TYPE 3     /* stream_open: not a ChaCha20-backed dpnoise generator: TypeError */
#define DPNOISE_ERR_FORKED 4   /* the stream of a secure generator was opened before fork() */
#define DPNOISE_ERR_ENTROPY 5  /* the operating system gave no entropy: dpnoise.EntropyError */
#define DPNOISE_ERR_MEMORY 6   /* out of memory: MemoryError */
#define DPNOISE_ERR_INTERNAL 7 /* an internal invariant failed (a bug in dpnoise) */

/* Laws of the prepared samplers. */
#define DPNOISE_LAW_DISCRETE_LAPLACE 1  /* scale num/den */
#define DPNOISE_LAW_DISCRETE_GAUSSIAN 2 /* variance num/den */
#define DPNOISE_LAW_GEOMETRIC 3         /* scale num/den */

/* An open stream (opaque). */
typedef struct dpnoise_stream dpnoise_stream;
/* A prepared sampler: one law and parameter, its tables built once (opaque, immutable). */
typedef struct dpnoise_sampler dpnoise_sampler;

/* CPython's PyObject (declared here so that this header does not need Python.h). */
struct _object;

typedef struct dpnoise_capi {
    uint32_t version; /* DPNOISE_CAPI_VERSION of the dpnoise that filled the table */
    uint32_t size;    /* sizeof(dpnoise_capi) there */

    /* GIL held. Opens a stream on a fresh stream id of `generator` (a borrowed reference). */
    int (*stream_open)(struct _object *generator, dpnoise_stream **out);
    /* Any thread, no GIL needed; NULL is allowed. */
    void (*stream_close)(dpnoise_stream *stream);

    /* The draws: any thread, no GIL needed, one thread per stream at a time. */
    /* Discrete Laplace, P(x) ~ exp(-|x| den/num), scale num/den (num = 0: always 0). */
    int (*discrete_laplace)(dpnoise_stream *stream, uint64_t scale_num, uint64_t scale_den, int64_t *out);
    /* Discrete Gaussian, P(x) ~ exp(-x^2 / (2 sigma^2)), sigma^2 = num/den. */
    int (*discrete_gaussian)(dpnoise_stream *stream, uint64_t variance_num, uint64_t variance_den,
                             int64_t *out);
    /* Geometric on {0, 1, ...}, P(k) ~ exp(-k den/num), scale num/den. */
    int (*geometric)(dpnoise_stream *stream, uint64_t scale_num, uint64_t scale_den, int64_t *out);
    /* Bernoulli(num/den), num <= den; *out is 0 or 1. */
    int (*bernoulli)(dpnoise_stream *stream, uint64_t p_num, uint64_t p_den, int *out);
    /* Bernoulli(exp(-num/den)); *out is 0 or 1. */
    int (*bernoulli_exp)(dpnoise_stream *stream, uint64_t gamma_num, uint64_t gamma_den, int *out);
    /* Uniform on {0, ..., m}, unbiased, for any 64-bit m. */
    int (*uniform_at_most)(dpnoise_stream *stream, uint64_t m, uint64_t *out);
    /* The stream's next raw 64-bit keystream word. */
    int (*next_uint64)(dpnoise_stream *stream, uint64_t *out);

    /* 1 if the stream comes from a secure (OS-keyed) generator, 0 if from a seeded one. */
    int (*stream_is_secure)(const dpnoise_stream *stream);
    /* The static message of the last failed call on the stream ("" if none). */
    const char *(*stream_error)(const dpnoise_stream *stream);
    /* A static description of a status code. */
    const char *(*status_message)(int status);

    /* Prepared samplers: for many draws with one law and parameter. sampler_new builds the
     * core's inversion tables (certified bounds, about 0.1-1 ms and tens of KiB; exact, the same
     * law as the per-call functions but from different bits), after which a draw costs a
     * fraction of a per-call one. Immutable: one sampler may serve many streams and threads.
     * Any thread, no GIL. law is a DPNOISE_LAW_*; status_message describes a failure. */
    int (*sampler_new)(int law, uint64_t num, uint64_t den, dpnoise_sampler **out);
    void (*sampler_free)(dpnoise_sampler *sampler); /* NULL is allowed */
    int (*sampler_draw)(dpnoise_stream *stream, const dpnoise_sampler *sampler, int64_t *out);

    /* ---- version 2: bulk fills (the fast path for arrays) ----
     * Any thread, no GIL; the work is split over up to `threads` worker threads (0 or 1: the
     * calling thread only). A bulk call reads 256 bits from `stream` as the key of a fresh
     * ChaCha20 family whose stream c fills the chunk c of 65,536 outputs, so the output does
     * not depend on `threads`, a seeded stream gives the same output for the same calls, and
     * the stream's later draws are independent of the call's (ChaCha20 is a PRF; the same
     * construction as Generator.spawn). The parameters are checked before any bit is read. */

    /* out[0..n) = n independent draws of the prepared sampler (any law). */
    int (*sampler_fill)(dpnoise_stream *stream, const dpnoise_sampler *sampler, int64_t *out, size_t n,
                        unsigned threads);
    /* The grid mechanism in place (Mironov 2012: noise on the grid 2^k, so that every output
     * is an exact multiple of 2^k): for each i, v = round(values[i] / 2^k) (ties to even),
     * clamped to [-bound, bound]; values[i] = (v + noise_i) 2^k, exactly, noise_i a draw of
     * `sampler` in grid units (DISCRETE_LAPLACE or DISCRETE_GAUSSIAN; a GEOMETRIC sampler is
     * refused). The clamp makes the output a 1-Lipschitz function of each value, so a query of
     * sensitivity D (in grid units, after rounding up to the grid: D/2^k + 1 for a real D)
     * keeps it. Limits, checked before any bit is read (DPNOISE_ERR_VALUE): k in [-1074, 1023],
     * 0 <= bound <= 2^52, every value finite (NaN and infinities are refused). The noisy value
     * is computed exactly in double; f32 stores it rounded to the nearest float, a
     * post-processing of the exact release.
     * A noisy value beyond 2^53 grid steps, or one that overflows the type, returns
     * DPNOISE_ERR_OVERFLOW; that depends on the noise, so then EVERY element of `values` is
     * set to NaN: no un-noised or partly noised buffer survives a failed call. */
    int (*grid_noise_add_f64)(dpnoise_stream *stream, const dpnoise_sampler *sampler, int grid_exponent,
                              int64_t bound, double *values, size_t n, unsigned threads);
    int (*grid_noise_add_f32)(dpnoise_stream *stream, const dpnoise_sampler *sampler, int grid_exponent,
                              int64_t bound, float *values, size_t n, unsigned threads);
} dpnoise_capi;

#ifdef Py_PYTHON_H
/* Imports dpnoise._core and returns its table, or sets a Python exception and returns NULL.
 * Call with the GIL held (e.g. once, at module initialisation). */
static inline const dpnoise_capi *dpnoise_capi_import(void) {
    const dpnoise_capi *api = (const dpnoise_capi *)PyCapsule_Import(DPNOISE_CAPI_CAPSULE, 0);
    if (api == NULL) return NULL;
    if (api->version < DPNOISE_CAPI_VERSION || api->size < sizeof(dpnoise_capi)) {
        PyErr_Format(PyExc_ImportError,
                     "the installed dpnoise C API is version %u, older than version %u this "
                     "module was compiled against; upgrade dpnoise",
                     (unsigned)api->version, (unsigned)DPNOISE_CAPI_VERSION);
        return NULL;
    }
    return api;
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* DPNOISE_CAPI_H */
