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

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DPNOISE_CAPI_VERSION 1
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
