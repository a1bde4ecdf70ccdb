# cython: language_level=3, boundscheck=False, wraparound=False
"""Exact DP noise from Cython through dpnoise's C API, on the fast path (docs/cython.md).

Build with include_dirs=[dpnoise.get_include()]; Cython finds dpnoise/capi.pxd in the
installed dpnoise package. Every function here releases noise, so each refuses a seeded
generator (reproducible, hence not secret) unless allow_insecure=True (tests only).
"""
from fractions import Fraction

import numpy as np

from libc.stdint cimport INT64_MAX, INT64_MIN, int64_t, uint64_t
from dpnoise.capi cimport (DPNOISE_LAW_DISCRETE_GAUSSIAN, DPNOISE_LAW_DISCRETE_LAPLACE, DPNOISE_OK,
                           check, dpnoise_capi, dpnoise_sampler, dpnoise_stream, import_capi,
                           new_sampler, open_secure_stream)

# The function table, fetched once when this module is imported.
cdef const dpnoise_capi* api = import_capi()

cdef uint64_t LIMIT = 1 << 62  # the C API's limit on a rational parameter's parts


cdef int law_of(str law) except -1:
    if law == "laplace":    # discrete Laplace, scale num/den
        return DPNOISE_LAW_DISCRETE_LAPLACE
    if law == "gaussian":   # discrete Gaussian, variance num/den
        return DPNOISE_LAW_DISCRETE_GAUSSIAN
    raise ValueError(f"law must be 'laplace' or 'gaussian', got {law!r}")


def add_noise(const int64_t[::1] counts, generator, str law, uint64_t num, uint64_t den,
              unsigned threads=1, bint allow_insecure=False):
    """counts + independent exact noise, one draw per count (e.g. a noisy histogram).

    generator: a dpnoise.Generator (or ChaCha20), secure unless allow_insecure; law:
    "laplace" (scale num/den) or "gaussian" (variance num/den); threads: worker threads.
    """
    cdef int kind = law_of(law)
    # Refuses a seeded generator before anything is drawn (ValueError).
    cdef dpnoise_stream* stream = open_secure_stream(api, generator, allow_insecure)
    cdef dpnoise_sampler* sampler = NULL
    cdef int status = DPNOISE_OK
    cdef bint overflow = False
    cdef Py_ssize_t i, n = counts.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] noisy = out
    try:
        sampler = new_sampler(api, kind, num, den)   # tables built once; ValueError if bad
        with nogil:
            # the fast path: the whole buffer at once, over threads
            status = api.sampler_fill(stream, sampler, &noisy[0] if n else NULL, <size_t>n, threads)
            if status == DPNOISE_OK:
                for i in range(n):
                    if (noisy[i] > 0 and counts[i] > INT64_MAX - noisy[i]) or \
                            (noisy[i] < 0 and counts[i] < INT64_MIN - noisy[i]):
                        overflow = True
                        break
                    noisy[i] += counts[i]
        check(api, stream, status)   # ValueError / OverflowError naming the bad argument
        if overflow:
            raise OverflowError("a noisy count does not fit in int64")
    finally:
        api.sampler_free(sampler)
        api.stream_close(stream)
    return out


def add_gaussian_noise_(grad, generator, sigma, int grid_exponent=-20, unsigned threads=1,
                        bint allow_insecure=False):
    """DP-SGD's noise step, in place: grad += N_Z(0, sigma^2) on the grid 2^grid_exponent.

    grad: a C-contiguous float32 or float64 NumPy array (e.g. a clipped, summed gradient),
    overwritten with its noisy value; sigma: the noise standard deviation (noise multiplier
    times clipping norm), a float or Fraction, rounded up to the grid's rational
    (sigma / 2^grid_exponent)^2 in grid units. Each value is rounded to the grid, clamped to
    2^52 grid units, and the exact discrete Gaussian added, exactly in double (float32 stores
    the exact result rounded: post-processing). Returns grad. If the noise overflows the
    grid's exact range or the type, grad is all NaN and OverflowError is raised.
    """
    variance = (Fraction(sigma) / Fraction(2) ** grid_exponent) ** 2
    if variance <= 0:
        raise ValueError(f"sigma must be positive, got {sigma!r}")
    if variance.numerator >= LIMIT or variance.denominator >= LIMIT:
        # round up toward more noise, onto a denominator that fits
        variance = Fraction(-(-variance.numerator * 2**20 // variance.denominator), 2**20)
        if variance.numerator >= LIMIT:
            raise ValueError("sigma is too large for this grid: use a larger grid_exponent")
    cdef float[::1] f32
    cdef double[::1] f64
    cdef size_t n
    cdef int64_t bound = 1 << 52
    cdef int status = DPNOISE_OK
    if not isinstance(grad, np.ndarray) or not grad.flags.c_contiguous or not grad.flags.writeable:
        raise ValueError("grad must be a writeable, C-contiguous NumPy array (it is noised in place)")
    n = grad.size
    cdef bint is_f32 = grad.dtype == np.float32
    if is_f32:
        f32 = grad.reshape(-1)  # a view (contiguous)
    elif grad.dtype == np.float64:
        f64 = grad.reshape(-1)
    else:
        raise TypeError(f"grad must be float32 or float64, got {grad.dtype}")
    cdef dpnoise_stream* stream = open_secure_stream(api, generator, allow_insecure)
    cdef dpnoise_sampler* sampler = NULL
    try:
        sampler = new_sampler(api, DPNOISE_LAW_DISCRETE_GAUSSIAN, variance.numerator, variance.denominator)
        with nogil:
            if is_f32:
                status = api.grid_noise_add_f32(stream, sampler, grid_exponent, bound,
                                                &f32[0] if n else NULL, n, threads)
            else:
                status = api.grid_noise_add_f64(stream, sampler, grid_exponent, bound,
                                                &f64[0] if n else NULL, n, threads)
        check(api, stream, status)
    finally:
        api.sampler_free(sampler)
        api.stream_close(stream)
    return grad
