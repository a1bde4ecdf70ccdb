# cython: language_level=3
"""Test probe: every entry of dpnoise's C API table, one call at a time, statuses unraised."""
from libc.stdint cimport int64_t, uint64_t
from cpython.object cimport PyObject
import numpy as np
from dpnoise.capi cimport (DPNOISE_CAPI_VERSION, DPNOISE_OK, check, dpnoise_capi, dpnoise_sampler,
                           dpnoise_stream, import_capi, open_stream)

cdef const dpnoise_capi* api = import_capi()


def table_version():
    """(version, size) of the table, and (version, sizeof) this module was compiled with."""
    return (api.version, api.size), (DPNOISE_CAPI_VERSION, sizeof(dpnoise_capi))


def open_status(obj):
    """The status of stream_open(obj) (the stream, if any, is closed again)."""
    cdef dpnoise_stream* stream = NULL
    cdef int status = api.stream_open(<PyObject*>obj, &stream)
    api.stream_close(stream)
    return status, api.status_message(status).decode()


def null_statuses():
    """Statuses for NULL arguments (no crash)."""
    cdef int64_t x
    cdef int b
    cdef uint64_t u
    cdef dpnoise_stream* stream = NULL
    out = [api.stream_open(NULL, &stream), api.discrete_laplace(NULL, 1, 1, &x),
           api.discrete_gaussian(NULL, 1, 1, &x), api.geometric(NULL, 1, 1, &x),
           api.bernoulli(NULL, 1, 2, &b), api.bernoulli_exp(NULL, 1, 1, &b),
           api.uniform_at_most(NULL, 5, &u), api.next_uint64(NULL, &u)]
    api.stream_close(NULL)
    return out


_NAMES = ["discrete_laplace", "discrete_gaussian", "geometric", "bernoulli", "bernoulli_exp",
          "uniform_at_most", "next_uint64"]


cdef class Stream:
    """One C API stream; draw(name, a, b) returns (status, value, message) without raising."""
    cdef dpnoise_stream* stream

    def __cinit__(self, generator):
        self.stream = open_stream(api, generator)

    def __dealloc__(self):
        api.stream_close(self.stream)

    @property
    def is_secure(self):
        return api.stream_is_secure(self.stream)

    def draw(self, str name, uint64_t a=0, uint64_t b=1):
        cdef int which = _NAMES.index(name)   # ValueError for an unknown name
        cdef int64_t x = 0
        cdef int flag = 0
        cdef uint64_t u = 0
        cdef int status
        with nogil:
            if which == 0:
                status = api.discrete_laplace(self.stream, a, b, &x)
            elif which == 1:
                status = api.discrete_gaussian(self.stream, a, b, &x)
            elif which == 2:
                status = api.geometric(self.stream, a, b, &x)
            elif which == 3:
                status = api.bernoulli(self.stream, a, b, &flag)
            elif which == 4:
                status = api.bernoulli_exp(self.stream, a, b, &flag)
            elif which == 5:
                status = api.uniform_at_most(self.stream, a, &u)
            else:
                status = api.next_uint64(self.stream, &u)
        value = None
        if which <= 2:
            value = x
        elif which <= 4:
            value = flag
        else:
            value = u
        message = api.stream_error(self.stream).decode() if status != DPNOISE_OK else ""
        return status, value, message

    def draw_null_out(self):
        return api.discrete_laplace(self.stream, 1, 1, NULL), api.stream_error(self.stream).decode()

    def draws(self, str name, uint64_t a, uint64_t b, Py_ssize_t n):
        """n draws, raising (through capi.pxd's check) on the first failure."""
        out = []
        for _ in range(n):
            status, value, _ = self.draw(name, a, b)
            check(api, self.stream, status)
            out.append(value)
        return out


def sampler_status(int law, uint64_t num, uint64_t den):
    """The status of sampler_new(law, num, den) (the sampler, if any, is freed again)."""
    cdef dpnoise_sampler* sampler = NULL
    cdef int status = api.sampler_new(law, num, den, &sampler)
    api.sampler_free(sampler)
    return status, api.status_message(status).decode()


cdef class Sampler:
    """A prepared sampler; sample(stream, n) draws n values without the GIL."""
    cdef dpnoise_sampler* sampler

    def __cinit__(self, int law, uint64_t num, uint64_t den):
        cdef int status = api.sampler_new(law, num, den, &self.sampler)
        if status != DPNOISE_OK:
            raise ValueError(api.status_message(status).decode())

    def __dealloc__(self):
        api.sampler_free(self.sampler)

    def sample(self, Stream stream, Py_ssize_t n):
        cdef int64_t x
        cdef int status = DPNOISE_OK
        cdef Py_ssize_t i
        out = []
        for i in range(n):
            with nogil:
                status = api.sampler_draw(stream.stream, self.sampler, &x)
            check(api, stream.stream, status)
            out.append(x)
        return out

    def draw_null(self, Stream stream):
        """Statuses for a NULL sampler, a NULL stream and a NULL out."""
        cdef int64_t x
        return (api.sampler_draw(stream.stream, NULL, &x), api.stream_error(stream.stream).decode(),
                api.sampler_draw(NULL, self.sampler, &x), api.sampler_draw(stream.stream, self.sampler, NULL))

    # -- version 2: bulk fills ------------------------------------------------------------
    def fill(self, Stream stream, Py_ssize_t n, unsigned threads=1):
        """(status, message, int64 array) of sampler_fill."""
        out = np.zeros(n, dtype=np.int64)
        cdef int64_t[::1] view = out
        cdef int status
        with nogil:
            status = api.sampler_fill(stream.stream, self.sampler, &view[0] if n else NULL,
                                      <size_t>n, threads)
        return status, stream_message(stream, status), out

    def grid_add(self, Stream stream, values, int k, int64_t bound, unsigned threads=1):
        """(status, message) of grid_noise_add_f32/_f64 on a contiguous float array, in place."""
        cdef float[::1] f32
        cdef double[::1] f64
        cdef size_t n = values.size
        cdef int status
        if values.dtype == np.float32:
            f32 = values
            with nogil:
                status = api.grid_noise_add_f32(stream.stream, self.sampler, k, bound,
                                                &f32[0] if n else NULL, n, threads)
        else:
            f64 = values
            with nogil:
                status = api.grid_noise_add_f64(stream.stream, self.sampler, k, bound,
                                                &f64[0] if n else NULL, n, threads)
        return status, stream_message(stream, status)


def bulk_null_statuses():
    """Statuses of the bulk entries given NULL stream / sampler / buffer."""
    cdef int64_t x = 0
    cdef double d = 0
    cdef float f = 0
    return [api.sampler_fill(NULL, NULL, &x, 1, 1),
            api.grid_noise_add_f64(NULL, NULL, 0, 0, &d, 1, 1),
            api.grid_noise_add_f32(NULL, NULL, 0, 0, &f, 1, 1)]


cdef stream_message(Stream stream, int status):
    return api.stream_error(stream.stream).decode() if status != DPNOISE_OK else ""
