# cython: language_level=3
"""The dpnoise C API for Cython: exact DP noise in ``nogil`` loops (docs/cython.md).

    from dpnoise.capi cimport dpnoise_capi, dpnoise_stream, import_capi, open_stream, check
    cdef const dpnoise_capi* api = import_capi()

Build with ``include_dirs=[dpnoise.get_include()]`` (this file declares dpnoise/capi.h, which
documents every function). Cython is needed only to build your extension, never by dpnoise.
"""
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.stddef cimport size_t
from cpython.object cimport PyObject

cdef extern from "dpnoise/capi.h":
    enum:
        DPNOISE_CAPI_VERSION
        DPNOISE_OK
        DPNOISE_ERR_VALUE
        DPNOISE_ERR_OVERFLOW
        DPNOISE_ERR_TYPE
        DPNOISE_ERR_FORKED
        DPNOISE_ERR_ENTROPY
        DPNOISE_ERR_MEMORY
        DPNOISE_ERR_INTERNAL
        DPNOISE_LAW_DISCRETE_LAPLACE
        DPNOISE_LAW_DISCRETE_GAUSSIAN
        DPNOISE_LAW_GEOMETRIC
    const char* DPNOISE_CAPI_CAPSULE

    ctypedef struct dpnoise_stream:
        pass

    ctypedef struct dpnoise_sampler:
        pass

    ctypedef struct dpnoise_capi:
        uint32_t version
        uint32_t size
        # GIL held
        int (*stream_open)(PyObject* generator, dpnoise_stream** out) noexcept
        # no GIL needed
        void (*stream_close)(dpnoise_stream* stream) noexcept nogil
        int (*discrete_laplace)(dpnoise_stream* stream, uint64_t scale_num, uint64_t scale_den,
                                int64_t* out) noexcept nogil
        int (*discrete_gaussian)(dpnoise_stream* stream, uint64_t variance_num, uint64_t variance_den,
                                 int64_t* out) noexcept nogil
        int (*geometric)(dpnoise_stream* stream, uint64_t scale_num, uint64_t scale_den,
                         int64_t* out) noexcept nogil
        int (*bernoulli)(dpnoise_stream* stream, uint64_t p_num, uint64_t p_den, int* out) noexcept nogil
        int (*bernoulli_exp)(dpnoise_stream* stream, uint64_t gamma_num, uint64_t gamma_den,
                             int* out) noexcept nogil
        int (*uniform_at_most)(dpnoise_stream* stream, uint64_t m, uint64_t* out) noexcept nogil
        int (*next_uint64)(dpnoise_stream* stream, uint64_t* out) noexcept nogil
        int (*stream_is_secure)(const dpnoise_stream* stream) noexcept nogil
        const char* (*stream_error)(const dpnoise_stream* stream) noexcept nogil
        const char* (*status_message)(int status) noexcept nogil
        # prepared samplers (tables built once for one law and parameter)
        int (*sampler_new)(int law, uint64_t num, uint64_t den, dpnoise_sampler** out) noexcept nogil
        void (*sampler_free)(dpnoise_sampler* sampler) noexcept nogil
        int (*sampler_draw)(dpnoise_stream* stream, const dpnoise_sampler* sampler, int64_t* out) noexcept nogil
        # version 2: bulk fills over threads (the fast path for arrays)
        int (*sampler_fill)(dpnoise_stream* stream, const dpnoise_sampler* sampler, int64_t* out,
                            size_t n, unsigned threads) noexcept nogil
        int (*grid_noise_add_f64)(dpnoise_stream* stream, const dpnoise_sampler* sampler,
                                  int grid_exponent, int64_t bound, double* values, size_t n,
                                  unsigned threads) noexcept nogil
        int (*grid_noise_add_f32)(dpnoise_stream* stream, const dpnoise_sampler* sampler,
                                  int grid_exponent, int64_t bound, float* values, size_t n,
                                  unsigned threads) noexcept nogil

    # Imports dpnoise._core and checks the table's version (GIL held).
    const dpnoise_capi* dpnoise_capi_import() except NULL


cdef inline const dpnoise_capi* import_capi() except NULL:
    """The C API table of the installed dpnoise (ImportError if it is too old)."""
    return dpnoise_capi_import()


cdef inline dpnoise_stream* open_stream(const dpnoise_capi* api, object generator) except NULL:
    """Opens a stream on a fresh stream id of a dpnoise Generator or ChaCha20; close it with
    api.stream_close. Raises TypeError for any other object (including generators over NumPy
    bit generators), dpnoise.EntropyError if the OS gives no entropy."""
    cdef dpnoise_stream* stream = NULL
    cdef int status = api.stream_open(<PyObject*>generator, &stream)
    if status != DPNOISE_OK:
        _raise(api, NULL, status)
    return stream


cdef inline dpnoise_stream* open_secure_stream(const dpnoise_capi* api, object generator,
                                               bint allow_insecure=False) except NULL:
    """open_stream for a release: refuses a stream of a seeded (reproducible, hence not secret)
    generator with ValueError unless allow_insecure is true (tests only)."""
    cdef dpnoise_stream* stream = open_stream(api, generator)
    if not allow_insecure and not api.stream_is_secure(stream):
        api.stream_close(stream)
        raise ValueError("generator: a seeded generator is reproducible and not secret; release "
                         "noise from a secure one (dpnoise.default_rng() without a seed), or pass "
                         "allow_insecure=True in tests")
    return stream


cdef inline dpnoise_sampler* new_sampler(const dpnoise_capi* api, int law, uint64_t num,
                                         uint64_t den) except NULL:
    """A prepared sampler (law a DPNOISE_LAW_*, parameter num/den); free it with
    api.sampler_free. ValueError / OverflowError for a bad parameter."""
    cdef dpnoise_sampler* sampler = NULL
    cdef int status = api.sampler_new(law, num, den, &sampler)
    if status == DPNOISE_OK:
        return sampler
    name = "variance" if law == DPNOISE_LAW_DISCRETE_GAUSSIAN else "scale"
    message = name + ": " + api.status_message(status).decode("utf-8")
    if status == DPNOISE_ERR_VALUE:
        raise ValueError(message)
    if status == DPNOISE_ERR_OVERFLOW:
        raise OverflowError(message)
    _raise(api, NULL, status)


cdef inline int check(const dpnoise_capi* api, const dpnoise_stream* stream, int status) except -1:
    """Raises the Python exception for a failed draw (status != DPNOISE_OK); returns 0 otherwise.
    Call it with the GIL held, after the nogil loop (keep the first failing status there)."""
    if status != DPNOISE_OK:
        _raise(api, stream, status)
    return 0


cdef inline int _raise(const dpnoise_capi* api, const dpnoise_stream* stream, int status) except -1:
    message = (api.stream_error(stream) if stream != NULL else api.status_message(status)).decode("utf-8")
    if status == DPNOISE_ERR_VALUE:
        raise ValueError(message)
    if status == DPNOISE_ERR_OVERFLOW:
        raise OverflowError(message)
    if status == DPNOISE_ERR_TYPE:
        raise TypeError(message)
    if status == DPNOISE_ERR_MEMORY:
        raise MemoryError(message)
    import dpnoise._errors as errors
    if status == DPNOISE_ERR_ENTROPY:
        raise errors.EntropyError(message)
    if status == DPNOISE_ERR_INTERNAL:
        raise errors.InvariantError(message)
    raise errors.DPError(message)  # DPNOISE_ERR_FORKED and any newer status
