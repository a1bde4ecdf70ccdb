# cython: language_level=3, boundscheck=False, wraparound=False
"""Exact DP noise in nogil loops, through dpnoise's C API (docs/cython.md).

Build with include_dirs=[dpnoise.get_include()]; Cython finds dpnoise/capi.pxd in the
installed dpnoise package.
"""
import numpy as np

from libc.stdint cimport INT64_MAX, INT64_MIN, int64_t, uint64_t
from dpnoise.capi cimport (DPNOISE_OK, check, dpnoise_capi, dpnoise_stream,
                           import_capi, open_stream)

# The function table, fetched once when this module is imported.
cdef const dpnoise_capi* api = import_capi()

ctypedef int (*draw_fn)(dpnoise_stream*, uint64_t, uint64_t, int64_t*) noexcept nogil


cdef draw_fn sampler(str law) except NULL:
    if law == "laplace":    # discrete Laplace, scale num/den
        return api.discrete_laplace
    if law == "gaussian":   # discrete Gaussian, variance num/den
        return api.discrete_gaussian
    raise ValueError(f"law must be 'laplace' or 'gaussian', got {law!r}")


cdef inline bint add_overflows(int64_t a, int64_t b) noexcept nogil:
    return (b > 0 and a > INT64_MAX - b) or (b < 0 and a < INT64_MIN - b)


def add_noise(const int64_t[::1] counts, generator, str law, uint64_t num, uint64_t den):
    """counts + independent exact noise, one draw per count (e.g. a noisy histogram).

    generator: a dpnoise.Generator (or ChaCha20); law: "laplace" (scale num/den) or
    "gaussian" (variance num/den).
    """
    cdef draw_fn draw = sampler(law)
    out = np.empty(counts.shape[0], dtype=np.int64)
    cdef int64_t[::1] noisy = out
    cdef int64_t noise
    cdef int status = DPNOISE_OK
    cdef bint overflow = False
    cdef Py_ssize_t i
    # A fresh stream of the generator's: it never repeats the generator's other output.
    cdef dpnoise_stream* stream = open_stream(api, generator)
    with nogil:
        for i in range(counts.shape[0]):
            status = draw(stream, num, den, &noise)
            if status != DPNOISE_OK:
                break
            if add_overflows(counts[i], noise):
                overflow = True
                break
            noisy[i] = counts[i] + noise
    try:
        check(api, stream, status)   # ValueError / OverflowError naming the bad argument
        if overflow:
            raise OverflowError("a noisy count does not fit in int64")
    finally:
        api.stream_close(stream)
    return out


def sum_of_noise(generator, str law, uint64_t num, uint64_t den, Py_ssize_t n):
    """The sum of n independent exact draws, accumulated without the GIL."""
    cdef draw_fn draw = sampler(law)
    cdef int64_t noise, total = 0
    cdef int status = DPNOISE_OK
    cdef bint overflow = False
    cdef Py_ssize_t i
    cdef dpnoise_stream* stream = open_stream(api, generator)
    with nogil:
        for i in range(n):
            status = draw(stream, num, den, &noise)
            if status != DPNOISE_OK:
                break
            if add_overflows(total, noise):
                overflow = True
                break
            total += noise
    try:
        check(api, stream, status)
        if overflow:
            raise OverflowError("the sum of the noise does not fit in int64")
    finally:
        api.stream_close(stream)
    return total
