"""NumPy generators over dpnoise's ChaCha20, and exact Gaussian grid noise added in place.

``numpy_generator()`` and ``random_state()`` put NumPy's own (floating-point) samplers on
dpnoise's cryptographically secure ChaCha20 keystream, for libraries that take a NumPy
generator. Their samplers stay NumPy's: the *bits* become secure, the *floating-point*
transformations do not become exact (Mironov 2012). For DP noise, :func:`gaussian_noise_` or
dpnoise's mechanisms are the exact choice.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..bit_generator import ChaCha20
from ..generator import Generator, default_rng

# σ in grid units lies in (2^29, 2^30]: the variance σ² <= 2^60 is an exact integer parameter,
# the rounding of σ up to the grid costs a relative 2^-29 at most, and a value may reach
# 2^53 / 2^30 = 2^23 σ before the grid's exact range (2^53 steps) ends.
_SIGMA_UNITS_BITS = 30
_BOUND_UNITS = 1 << 52  # values are clamped to ±2^52 grid units (docs/integrations.md)


def _secure_chacha20(seed: int | None, allow_insecure: bool) -> ChaCha20:
    if seed is not None and not allow_insecure:
        raise ValueError("seed: a seeded generator is reproducible and not secret; leave seed=None "
                         "for releases, or pass allow_insecure=True in tests")
    return ChaCha20(seed)


def numpy_generator(seed: int | None = None, *, allow_insecure: bool = False) -> np.random.Generator:
    """A ``numpy.random.Generator`` drawing from dpnoise's ChaCha20.

    Parameters
    ----------
    seed : None or int
        None (default): keyed from the operating system, secure. An int: reproducible and NOT
        secure, refused unless ``allow_insecure=True`` (tests).
    allow_insecure : bool
        Allow a seed.

    Returns
    -------
    numpy.random.Generator
        NumPy's samplers (floating point, not exact) over a secure keystream.
    """
    # ChaCha20 is a bit generator by NumPy's protocol (``capsule`` and ``lock``), not by subclassing
    # numpy.random.BitGenerator, which NumPy's stubs name: the type cannot be expressed there
    return np.random.Generator(_secure_chacha20(seed, allow_insecure))  # type: ignore[arg-type]


def random_state(seed: int | None = None, *, allow_insecure: bool = False) -> np.random.RandomState:
    """A legacy ``numpy.random.RandomState`` drawing from dpnoise's ChaCha20.

    For libraries that accept only ``RandomState`` (diffprivlib, scikit-learn's
    ``check_random_state``).

    Parameters
    ----------
    seed, allow_insecure
        As for :func:`numpy_generator` (a seed is refused with ValueError unless
        ``allow_insecure=True``).

    Returns
    -------
    numpy.random.RandomState
    """
    return np.random.RandomState(_secure_chacha20(seed, allow_insecure))  # type: ignore[arg-type]  # as above


def grid_exponent_for(std: float) -> int:
    """The grid exponent k used for noise of standard deviation ``std``: std / 2^k in
    (2^29, 2^30].

    Parameters
    ----------
    std : float
        Positive and finite.

    Returns
    -------
    int
        k (may be negative).
    """
    return math.frexp(std)[1] - _SIGMA_UNITS_BITS


def gaussian_noise_(values: np.ndarray, std: float, generator: Generator | None = None, *,
                    allow_insecure: bool = False) -> np.ndarray:
    """Add exact discrete Gaussian noise of standard deviation ``std``, in place, on a grid.

    Each value x is rounded to the grid 2^k (k from :func:`grid_exponent_for`, ties to even),
    clamped to ±2^52 grid units, and y = round(x / 2^k) + Z with Z the exact discrete Gaussian of
    σ = ceil(std / 2^k) grid units (Canonne, Kamath & Steinke 2020), so σ_eff / std is in
    [1, 1 + 2^-29]. y·2^k is exact in float64 (Mironov 2012: no floating-point noise); a float32
    array then receives y·2^k rounded to float32, a post-processing of the exact release. The
    grid widens an L2 sensitivity C of a d-vector to at most C + √d·2^k (rounding): a relative
    √d·2^-29·std/C, below 10^-5 for d = 10^7 and std <= 1.1 C.

    Parameters
    ----------
    values : numpy.ndarray
        Writeable, C-contiguous, float32 or float64; overwritten with its noisy value.
    std : float
        Positive, finite.
    generator : dpnoise.Generator, optional
        Default: a fresh secure one. A seeded generator is refused unless
        ``allow_insecure=True``.

    Returns
    -------
    numpy.ndarray
        ``values``. Nothing is written if anything fails (the noisy values are computed aside,
        checked, then copied in).

    Raises
    ------
    TypeError
        ``values`` not a float32/float64 NumPy array.
    ValueError
        Not writeable or not contiguous, a NaN or infinite value, ``std`` not positive and
        finite, or a seeded generator without ``allow_insecure``.
    """
    if not isinstance(values, np.ndarray) or values.dtype not in (np.float32, np.float64):
        raise TypeError(f"values must be a float32 or float64 NumPy array, got "
                        f"{getattr(values, 'dtype', type(values).__name__)}")
    if not values.flags.writeable or not values.flags.c_contiguous:
        raise ValueError("values must be writeable and C-contiguous (noise is added in place)")
    if isinstance(std, bool) or not isinstance(std, (int, float, np.floating, np.integer)):
        raise TypeError(f"std must be a real number, got {type(std).__name__}")
    std = float(std)
    if not (math.isfinite(std) and std > 0):
        raise ValueError(f"std must be positive and finite, got {std!r}")
    g = default_rng() if generator is None else generator
    if not isinstance(g, Generator):
        raise TypeError(f"generator must be a dpnoise.Generator, got {type(g).__name__}")
    if not g.is_secure and not allow_insecure:
        raise ValueError("generator: a seeded generator is reproducible and not secret; use a "
                         "secure one (dpnoise.default_rng()), or pass allow_insecure=True in tests")
    flat = values.reshape(-1)
    if not np.all(np.isfinite(flat)):
        raise ValueError("values must be finite (NaN or infinity found)")
    k = grid_exponent_for(std)
    sigma_units = math.ceil(Fraction(std) / Fraction(2) ** k)  # rounded up: more noise
    units = np.rint(np.ldexp(flat.astype(np.float64), -k))  # exact: a power-of-two scaling
    np.clip(units, -_BOUND_UNITS, _BOUND_UNITS, out=units)
    noise = g.discrete_gaussian(variance=sigma_units * sigma_units, size=flat.size)
    units += noise  # exact: |units| <= 2^52, |noise| far below 2^52 but checked next
    if flat.size and float(np.max(np.abs(units))) > 2.0 ** 53:
        raise OverflowError("a noisy value lies beyond the grid's exact range (2^53 steps)")
    noisy = np.ldexp(units, k)
    if values.dtype == np.float32 and flat.size and float(np.max(np.abs(noisy))) > float(np.finfo(np.float32).max):
        raise OverflowError("a noisy value overflows float32")
    flat[...] = noisy  # float32: rounds the exact release (post-processing)
    return values


__all__ = ["gaussian_noise_", "grid_exponent_for", "numpy_generator", "random_state"]
