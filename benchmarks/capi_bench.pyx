# cython: language_level=3, boundscheck=False, wraparound=False
"""Benchmark kernels for benchmarks/test_bench_capi.py: n discrete Laplace draws (scale num/den)
into an int64 buffer through the three ways of dpnoise's C API."""
import numpy as np

from libc.stdint cimport int64_t, uint64_t
from dpnoise.capi cimport (DPNOISE_LAW_DISCRETE_LAPLACE, DPNOISE_OK, check, dpnoise_capi,
                           dpnoise_sampler, dpnoise_stream, import_capi, new_sampler, open_stream)

cdef const dpnoise_capi* api = import_capi()


cdef finish(dpnoise_stream* s, int status, dpnoise_sampler* sampler):
    """Raise for a failed status (check), after closing the stream and freeing the sampler."""
    try:
        check(api, s, status)
    finally:
        api.stream_close(s)
        if sampler != NULL:
            api.sampler_free(sampler)


def per_call(generator, uint64_t num, uint64_t den, Py_ssize_t n):
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef int status = DPNOISE_OK
    cdef Py_ssize_t i
    cdef dpnoise_stream* s = open_stream(api, generator)
    with nogil:
        for i in range(n):
            status = api.discrete_laplace(s, num, den, &o[i])
            if status != DPNOISE_OK:
                break
    finish(s, status, NULL)
    return out


def prepared_draw(generator, uint64_t num, uint64_t den, Py_ssize_t n):
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef int status = DPNOISE_OK
    cdef Py_ssize_t i
    cdef dpnoise_sampler* sampler = new_sampler(api, DPNOISE_LAW_DISCRETE_LAPLACE, num, den)
    cdef dpnoise_stream* s = open_stream(api, generator)
    with nogil:
        for i in range(n):
            status = api.sampler_draw(s, sampler, &o[i])
            if status != DPNOISE_OK:
                break
    finish(s, status, sampler)
    return out


def bulk_fill(generator, uint64_t num, uint64_t den, Py_ssize_t n, unsigned threads):
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef int status
    cdef dpnoise_sampler* sampler = new_sampler(api, DPNOISE_LAW_DISCRETE_LAPLACE, num, den)
    cdef dpnoise_stream* s = open_stream(api, generator)
    with nogil:
        status = api.sampler_fill(s, sampler, &o[0], <size_t>n, threads)
    finish(s, status, sampler)
    return out
