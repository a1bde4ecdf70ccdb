"""Generator and default_rng: the NumPy-style API over dpnoise's exact samplers.

Every sampler draws with integer/rational arithmetic only, from the ChaCha20 stream of the
generator's bit generator. Parameters accept int, float, fractions.Fraction (and NumPy
scalars), or array-likes of them that broadcast against ``size`` as in NumPy. Floats are used at
their exact binary value; a value that does not fit the core's 62-bit numerators and
denominators is rounded toward more noise (scales and variances up).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

import numpy as np

from dpnoise import _core, _rational as R
from dpnoise._validate import MAX_PART, Size, check_threads, count_of, integer, shape_of
from dpnoise.bit_generator import ChaCha20, PublicStream

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def _is_scalar(value: Any) -> bool:
    if isinstance(value, (list, tuple, np.ndarray)):
        return False
    try:
        return np.ndim(value) == 0
    except ValueError:  # a ragged sequence: refused by the array path, naming the parameter
        return False



# The Laplace/geometric laws' largest scale. Their int64 noise overflows with probability about
# 2·exp(-2^63/scale) (the geometric tail): at most 2·e^-128 < 2^-183 for scale <= 2^56. Above it
# the sampler could fail in the middle of a call, after moving the stream, so the Generator
# refuses such scales before any draw (and so does the core's request layer, ScaleLaw::make in
# request.hpp, for callers that bypass the Generator; the C API's scalar draws and samplers do
# not go through it).
_MAX_SCALE = 2**56
_SCALE_LAWS = ("discrete_laplace", "geometric")


def _refuse_scale(pname: str, value: float) -> None:
    raise OverflowError(f"{pname} is too large: at most 2^56 for int64 noise (it would overflow), "
                        f"got {pname} = {value:.6g}")


# -- the scalar fast path ------------------------------------------------------------------
# A scalar draw (no size, no constant time) converts its parameter to the exact law once: the
# prepared C++ law (request::Prepared) is kept here, keyed by (law, parameter kind, type, value),
# and the next draw with an equal parameter is one C++ call. Only immutable exact types are
# keys (a mutable object could change value behind its key; NaN never equals itself, so it is
# never found and always refused by the conversion); ``True`` and ``1`` differ by type, so a
# bool is still refused. Entries hold only public parameters, never randomness: a forked child
# or another thread may use them (the draws go through the generator's own lock and fork check).
# The same draw as the unprepared call: one value takes the small-request sampler either way.
_EXACT_SCALAR_TYPES = frozenset({int, float, Fraction, np.float64, np.int64, np.float32, np.int32})
_PREPARED_LIMIT = 256
_prepared_laws: dict[tuple[Any, ...], Any] = {}
_PREPARED_CLASSES = {
    "discrete_laplace": "PreparedDiscreteLaplace", "geometric": "PreparedGeometric",
    "discrete_gaussian": "PreparedDiscreteGaussian", "bernoulli": "PreparedBernoulli",
    "bernoulli_exp": "PreparedBernoulliExp",
}


def _prepared_law(name: str, value: Any, pname: str, convert: Callable[[Any, str], R.Pair]) -> Any:
    """The prepared C++ law of ``name`` at the scalar parameter ``value`` (checked and converted
    on first use, exactly as the unprepared path does)."""
    key = (name, pname, type(value), value)
    law = _prepared_laws.get(key)
    if law is None:
        num, den = convert(value, pname)
        if name in _SCALE_LAWS and num > _MAX_SCALE * den:
            _refuse_scale(pname, num / den)
        law = getattr(_core, _PREPARED_CLASSES[name])(num, den)
        if len(_prepared_laws) >= _PREPARED_LIMIT:
            _prepared_laws.clear()  # bounded; a dict swap under the GIL, never a torn entry
        _prepared_laws[key] = law
    return law


class Generator:
    """Exact DP noise from a bit generator (NumPy ``Generator``-style methods).

    Use :func:`default_rng` to make one. The bit generator is either

    * a :class:`dpnoise.ChaCha20`: a parallel stream family (large requests are split into
      chunks, each from its own stream, over ``threads``); secure when keyed from the
      operating system, reproducible (NOT secure) when seeded; or
    * any NumPy ``BitGenerator`` (PCG64, Philox, MT19937, SFC64, ...), read through its
      capsule as one sequential stream: reproducible, NEVER secure (``is_secure`` is False),
      ``threads`` is accepted but the chunks run in order on the calling thread. The bit
      generator's ``lock`` is held while dpnoise draws from it.

    ``is_secure`` tells whether the noise is secret (a secure ChaCha20) or not.

    ``threads=None`` on the sampling methods means one thread; the mechanisms' ``threads=None``
    means every CPU the process may use (``dpnoise._release.mechanism.default_threads``).

    Parameters
    ----------
    bit_generator : dpnoise.ChaCha20 or numpy.random.BitGenerator
        The source of random words.

    Raises
    ------
    TypeError
        For any other bit generator.

    Examples
    --------
    >>> import dpnoise
    >>> rng = dpnoise.default_rng()
    >>> rng.is_secure
    True
    >>> rng.discrete_gaussian(3.0, size=4).dtype
    dtype('int64')
    """

    def __init__(self, bit_generator: Any) -> None:
        if isinstance(bit_generator, ChaCha20):
            self._core = bit_generator._core
        elif isinstance(bit_generator, np.random.BitGenerator):
            self._core = _core.GeneratorCore.from_numpy(bit_generator)
        else:
            raise TypeError(
                "bit_generator must be a dpnoise.ChaCha20 or a numpy.random.BitGenerator, "
                f"got {type(bit_generator).__name__}"
            )
        self._bit_generator = bit_generator
        self._secure = bool(self._core.is_secure)  # fixed when the bit generator is made

    @property
    def bit_generator(self) -> Any:
        """The bit generator: a dpnoise.ChaCha20 or a NumPy BitGenerator."""
        return self._bit_generator

    @property
    def is_secure(self) -> bool:
        """True only for a ChaCha20 keyed from the operating system (or spawned from one)."""
        return self._secure

    def spawn(self, n_children: int) -> list[Generator]:
        """``n_children`` independent child Generators (NumPy's ``Generator.spawn``), e.g. one
        per worker or partition. Children of a seeded generator are reproducible from the seed
        and the spawn path; children of a secure generator are secure. A NumPy bit generator
        spawns through its SeedSequence (NumPy's ``BitGenerator.spawn``).

        Parameters
        ----------
        n_children : int
            How many children (>= 0).

        Returns
        -------
        list of Generator
            The children, in spawn order.
        """
        return [Generator(child) for child in self._bit_generator.spawn(n_children)]

    def __repr__(self) -> str:
        return f"Generator({self._bit_generator!r})"

    def __reduce__(self) -> Any:
        raise TypeError("dpnoise Generators cannot be pickled or copied: a copy would repeat the same noise")

    # -- the sampling driver ---------------------------------------------------------------
    def _draw(
        self,
        name: str,
        value: Any,
        pname: str,
        convert: Callable[[Any, str], R.Pair],
        size: Size,
        threads: int | None,
        constant_time: bool = False,
    ) -> Any:
        """Draw ``name`` with parameter ``value``. ``constant_time=True`` uses the constant-time
        sampler ``name + "_constant_time"``: one public scalar parameter, checked and converted
        here (before any draw); the draws themselves branch on nothing secret
        (docs/security.md), and this wrapper branches only on the parameter and ``size``."""
        if size is None and not constant_time and type(value) in _EXACT_SCALAR_TYPES:
            if threads is not None:
                check_threads(threads)
            return _prepared_law(name, value, pname, convert).draw(self._core)
        shape = shape_of(size)
        nthreads = check_threads(threads)
        scalar = _is_scalar(value) or (isinstance(value, np.ndarray) and value.ndim == 0)
        if constant_time and not scalar:
            raise ValueError(
                f"constant_time=True takes one scalar {pname} per call (array-valued {pname} is not supported)"
            )
        if _is_scalar(value) or (scalar and (shape is None or constant_time)):
            num, den = convert(value.item() if isinstance(value, (np.generic, np.ndarray)) else value, pname)
            if name in _SCALE_LAWS and num > _MAX_SCALE * den:
                _refuse_scale(pname, num / den)
            same = getattr(_core, name + "_constant_time" if constant_time else name)
            if shape is None:
                return same(self._core, num, den, 1, 1)[0]
            return same(self._core, num, den, count_of(shape), nthreads).reshape(shape)
        arr = R.parameter_array(value, pname)
        pshape = arr.shape
        if shape is None:
            shape = pshape
        else:
            try:
                ok = np.broadcast_shapes(pshape, shape) == shape
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"{pname} with shape {pshape} does not broadcast to size {shape}")
        if arr.dtype.kind in "fiu" and arr.dtype != np.uint64:
            # float and integer arrays are converted exactly in C++ (parameters.hpp), once per
            # distinct value, with the same rule as dpnoise._rational
            values = arr.reshape(-1).astype(np.float64 if arr.dtype.kind == "f" else np.int64, copy=False)
            if name in _SCALE_LAWS and values.size:  # NaN and inf: refused by the conversion in C++
                top = values.max()
                if np.isfinite(top) and top > _MAX_SCALE:
                    _refuse_scale(pname, float(top))
            if pshape == shape:  # one parameter per output: convert and sample in one call
                return getattr(_core, name + "_array")(self._core, values, pname, nthreads).reshape(shape)
            # broadcast: convert the parameters' own values only, then broadcast their index
            nums, dens, index = _core.convert_parameters(values, pname)
        else:
            pshape, nums, dens, index = R.parameter_table(arr, pname, convert)
            if name in _SCALE_LAWS:
                for num, den in zip(nums.tolist(), dens.tolist()):
                    if num > _MAX_SCALE * den:
                        _refuse_scale(pname, num / den)
        index = np.ascontiguousarray(np.broadcast_to(index.reshape(pshape), shape)).reshape(-1)
        each = getattr(_core, name + "_each")
        return each(self._core, nums, dens, index, nthreads).reshape(shape)

    # -- samplers ----------------------------------------------------------------------------
    def discrete_laplace(
        self, scale: Any, size: Size = None, *, threads: int | None = None, constant_time: bool = False
    ) -> Any:
        """Discrete Laplace noise: P(x) proportional to exp(-|x| / scale), x an integer (int64).

        Exact for rational ``scale``: Canonne, Kamath & Steinke (2020), Algorithm 2 for small
        requests, and for large ones inversion over certified tail probabilities (the same law,
        from fewer random bits; see docs/security.md). A float scale
        is used at its exact value when it lies in [2^-62, 2^62] with at most 62 significant
        bits (every ordinary double); otherwise it is rounded up (more noise). ``scale=0``
        gives zeros. ``threads`` splits large requests; the output is the same for any value.

        Parameters
        ----------
        scale : float, int, Fraction or array_like
            The scale (public). With ``constant_time=True``: one scalar in [0, 2^20].
        size : int or tuple of ints, optional
            Output shape; None gives one value.
        threads : int, optional
            Worker threads for large requests (the output does not depend on it). None means
            one thread (the mechanisms' ``threads=None`` means every CPU instead: a sampling
            call spreads over the machine only when asked).
        constant_time : bool, default False
            Draw with the constant-time sampler (docs/security.md, "Constant-time sampling"):
            running time and memory accesses depend on ``scale`` and ``size`` only, not on the
            noise. Its law is within total variation 2^-64 of the exact one (not identical).

        Returns
        -------
        numpy.int64 or numpy.ndarray of int64

        Raises
        ------
        ValueError
            A bad ``scale``; with ``constant_time=True``, a scale above 2^20 or an array scale
            (never a silent fallback to the variable-time sampler).
        OverflowError
            A scale above 2^56 (int64 noise would overflow), before any draw.

        Examples
        --------
        >>> rng = default_rng(7)  # seeded: tests only
        >>> noise = rng.discrete_laplace(10.0, size=3, constant_time=True)
        """
        if size is None and threads is None and constant_time is False:  # the scalar fast path
            law = _prepared_laws.get(("discrete_laplace", "scale", type(scale), scale)) \
                if type(scale) in _EXACT_SCALAR_TYPES else None
            if law is not None:
                return law.draw(self._core)
        return self._draw("discrete_laplace", scale, "scale", R.scale_pair, size, threads, constant_time)

    def discrete_gaussian(
        self,
        sigma: Any = None,
        size: Size = None,
        *,
        variance: Any = None,
        threads: int | None = None,
        constant_time: bool = False,
    ) -> Any:
        """Discrete Gaussian noise: P(x) proportional to exp(-x^2 / (2 sigma^2)), x an integer.

        Exact for rational sigma^2: Canonne, Kamath & Steinke (2020), Algorithm 3 for small
        requests, and for large ones inversion over certified tail sums (bucketed, with an
        exact acceptance step, for sigma >= 146; see docs/security.md). Give either
        ``sigma`` (sigma^2 is then computed exactly from it) or ``variance`` (any rational, e.g.
        ``Fraction(1, 2 * rho)`` for zCDP). A variance whose exact value does not fit is
        rounded up (more noise; relative change below 2^-40 for sigma in [0.01, 2^31];
        sigma above 2^31 is refused, and a variance below 2^-62 becomes 2^-62). ``sigma=0`` gives zeros.

        ``constant_time=True`` draws with the constant-time sampler (docs/security.md,
        "Constant-time sampling"): running time and memory accesses depend on sigma and
        ``size`` only, not on the noise; one scalar sigma in [0, 2^20] (variance <= 2^40), else
        ValueError (never a silent fallback); its law is within total variation 2^-64 of the
        exact one.

        Parameters
        ----------
        sigma : float, int, Fraction or array_like, optional
            σ >= 0 (public), up to 2^31; exactly one of ``sigma`` and ``variance``.
        size, threads
            As for :meth:`discrete_laplace`.
        variance : float, int, Fraction or array_like, optional
            σ² >= 0, instead of ``sigma``.
        constant_time : bool, default False
            Draw with the constant-time sampler (one scalar σ in [0, 2^20]).

        Returns
        -------
        numpy.int64 or numpy.ndarray of int64
            One value, or an array of shape ``size`` (or of the parameter's shape).

        Raises
        ------
        TypeError
            Unless exactly one of ``sigma`` and ``variance`` is given.
        ValueError
            For a negative, NaN or too large parameter, a shape that does not broadcast to
            ``size``, or (constant time) an array parameter or σ above 2^20.
        """
        if size is None and threads is None and constant_time is False and variance is None:  # the scalar fast path
            law = _prepared_laws.get(("discrete_gaussian", "sigma", type(sigma), sigma)) \
                if type(sigma) in _EXACT_SCALAR_TYPES else None
            if law is not None:
                return law.draw(self._core)
        if (sigma is None) == (variance is None):
            raise TypeError("discrete_gaussian takes exactly one of sigma or variance")
        if variance is not None:
            return self._draw("discrete_gaussian", variance, "variance", R.variance_pair, size, threads, constant_time)
        return self._draw("discrete_gaussian", sigma, "sigma", R.sigma_to_variance_pair, size, threads, constant_time)

    def geometric(
        self, *args: Any, scale: Any = None, size: Size = None, threads: int | None = None
    ) -> Any:
        """One-sided geometric noise: P(k) = (1 - e^(-1/scale)) e^(-k/scale), k = 0, 1, 2, ...

        This is the exponential parameterisation used by DP (the geometric mechanism), NOT
        NumPy's ``geometric(p)`` (trials until success); ``scale`` is therefore keyword-only.
        Exact for rational scale (CKS 2020, Algorithm 2 without the sign).

        Parameters
        ----------
        scale : float, int, Fraction or array_like
            The scale >= 0 (keyword-only).
        size, threads
            As for :meth:`discrete_laplace`.

        Returns
        -------
        numpy.int64 or numpy.ndarray of int64
            Values >= 0.

        Raises
        ------
        TypeError
            For a positional argument (NumPy's ``geometric(p)`` is a different law) or no scale.
        ValueError
            For a bad scale or a shape that does not broadcast to ``size``.
        OverflowError
            For a scale above 2^56 (int64 noise would overflow), before any draw.
        """
        if args:
            raise TypeError(
                "geometric takes scale= as a keyword: dpnoise's geometric is "
                "P(k) ~ exp(-k/scale) for k >= 0, not numpy's geometric(p)"
            )
        if scale is None:
            raise TypeError("geometric() missing required keyword argument: 'scale'")
        return self._draw("geometric", scale, "scale", R.scale_pair, size, threads)

    def bernoulli(self, p: Any, size: Size = None, *, threads: int | None = None) -> Any:
        """Bernoulli(p) as bool, exact for rational p (a float p is exact unless it is below
        2^-62 in granularity, in which case it is rounded to the nearest multiple of 2^-62).

        Parameters
        ----------
        p : float, int, Fraction or array_like
            The probability of True, in [0, 1].
        size, threads
            As for :meth:`discrete_laplace`.

        Returns
        -------
        numpy.bool_ or numpy.ndarray of bool
            One value or an array of shape ``size``.
        """
        return self._draw("bernoulli", p, "p", R.probability_pair, size, threads)

    def bernoulli_exp(self, gamma: Any, size: Size = None, *, threads: int | None = None) -> Any:
        """Bernoulli(exp(-gamma)) as bool, exact for rational gamma >= 0 (CKS 2020, Algorithm 1).
        A gamma that does not fit 62-bit parts is rounded up.

        Parameters
        ----------
        gamma : float, int, Fraction or array_like
            γ >= 0.
        size, threads
            As for :meth:`discrete_laplace`.

        Returns
        -------
        numpy.bool_ or numpy.ndarray of bool
            True with probability e^-γ.
        """
        return self._draw("bernoulli_exp", gamma, "gamma", R.gamma_pair, size, threads)

    def integers(
        self,
        low: int,
        high: int | None = None,
        size: Size = None,
        *,
        endpoint: bool = False,
        threads: int | None = None,
    ) -> Any:
        """Uniform integers in [low, high) (or [low, high] with ``endpoint=True``), unbiased
        (rejection sampling). With ``high=None`` the range is [0, low). Bounds must be ints
        within int64; array bounds are not supported.

        Parameters
        ----------
        low : int
            The lowest value (or the exclusive upper bound when ``high`` is None).
        high : int, optional
            The exclusive (or, with ``endpoint``, inclusive) upper bound.
        size, threads
            As for :meth:`discrete_laplace`.
        endpoint : bool, default False
            Include ``high``.

        Returns
        -------
        numpy.int64 or numpy.ndarray of int64
            Uniform draws.

        Raises
        ------
        OverflowError
            For a bound outside int64.
        ValueError
            For an empty range.
        TypeError
            For a non-integer bound.
        """
        for nm, v in (("low", low), ("high", high)):
            if v is None and nm == "high":
                continue
            if not _INT64_MIN <= integer(v, nm) <= _INT64_MAX + 1:
                raise OverflowError(f"{nm}={v} is out of the int64 range")
        lo, hi = (0, int(low)) if high is None else (int(low), int(high))
        top = hi if endpoint else hi - 1
        if top < lo:
            raise ValueError(f"high must be greater than low (low={lo}, high={hi}, endpoint={endpoint})")
        if top > _INT64_MAX or lo < _INT64_MIN:
            raise OverflowError(f"the range [{lo}, {top}] does not fit in int64")
        shape = shape_of(size)
        nthreads = check_threads(threads)
        out = _core.integers(self._core, lo, top - lo, count_of(shape), nthreads)
        return out[0] if shape is None else out.reshape(shape)

    # -- execution primitives of the mechanism plans (internal) -----------------------------
    def _noisy_grid(
        self,
        values: np.ndarray,
        *,
        law: str,
        param: Any,
        k: int | None,
        bound: int,
        threads: int | None = None,
        constant_time: bool = False,
    ) -> np.ndarray:
        """Internal: one noisy release on a grid, for the mechanism plans.

        ``values`` is a finite float64 array when ``k`` is an int, an int64 array when ``k`` is
        None. Each value becomes v = round(value / 2^k) (ties to even; no rounding when k is
        None), clamped to [-bound, bound] grid units (bound <= 2^52 with a grid, < 2^62
        without); then y = v + noise with exact noise in grid units (``law`` "laplace": discrete
        Laplace of scale ``param``; "gaussian": discrete Gaussian of sigma ``param``). Returns
        y * 2^k as float64 (exact), or y as int64 when k is None, in the shape of ``values``.
        OverflowError, naming no value, when |y| passes 2^53 (2^62 without a grid) or y * 2^k
        overflows a double.

        ``constant_time=True``: the noise from the constant-time samplers (docs/security.md) and
        no branch on the values or the noise (C++ ``noisy_*_constant_time``); parameters beyond
        the constant-time range (scale, sigma > 2^20; k outside [-1000, 960]; bound > 2^62 - 2^40
        without a grid) raise ValueError, and no overflow can occur.
        """
        v = np.asarray(values)
        nthreads = check_threads(threads)
        if law == "laplace":
            num, den = R.scale_pair(param, "scale")
        elif law == "gaussian":
            num, den = R.sigma_to_variance_pair(param, "sigma")
        else:
            raise ValueError(f"law must be 'laplace' or 'gaussian', got {law!r}")
        flat = v.reshape(-1)
        out: np.ndarray  # int64 values without a grid, float64 on the grid 2^k
        if constant_time:
            if k is None:
                out = _core.noisy_integers_constant_time(self._core, law, flat.astype(np.int64, copy=False), num, den,
                                                         min(int(bound), MAX_PART - (1 << 40)), nthreads)
            else:
                out = _core.noisy_grid_constant_time(self._core, law, flat.astype(np.float64, copy=False), int(k), num,
                                                     den, int(bound), nthreads)
            return out.reshape(v.shape)
        if k is None:
            out = _core.noisy_integers(self._core, law, flat.astype(np.int64, copy=False), num, den,
                                       min(int(bound), MAX_PART - 1), nthreads)
        else:
            out = _core.noisy_grid(self._core, law, flat.astype(np.float64, copy=False), int(k), num, den,
                                   int(bound), nthreads)
        return out.reshape(v.shape)

    def _select_rows(
        self, scores: np.ndarray, *, method: str, gamma: Fraction, grid_exponent: int | None, k: int,
        threads: int | None = None,
    ) -> np.ndarray:
        """Internal: batched selection for the selection plans. ``scores`` a 2-D array (any
        integer, bool, float32 or float64 dtype, any strides: read in place), one candidate set
        per row; returns int64 (rows, k): k distinct candidates per row by ``method``
        ("permute_and_flip", "exponential_mechanism" or "laplace") with weights
        e^{-gamma (q* - q)} (Laplace: noise scale 1/gamma), real scores rounded to the grid
        2^grid_exponent (docs/selection.md)."""
        g = Fraction(gamma)
        return _core.select_rows(self._core, method, scores, grid_exponent, g.numerator, g.denominator, int(k),
                                 check_threads(threads))

    def random_raw(self, size: Size = None, *, threads: int | None = None, out: np.ndarray | None = None) -> Any:
        """Raw uint64 words of the bit generator's sequential stream.

        Parameters
        ----------
        size : int or tuple of ints, optional
            Output shape; None gives one word.
        threads : int, optional
            Worker threads (ChaCha20 only; the words do not depend on it).
        out : numpy.ndarray of uint64, optional
            Fill this uint64, C-contiguous, writable array and return it (ChaCha20 only), as
            NumPy's ``out=``: ``rng.random_raw(out=buf)``.

        Returns
        -------
        int or numpy.ndarray of uint64
            The words (``out`` when given).

        Raises
        ------
        TypeError
            For an ``out`` that is not a uint64 ndarray.
        ValueError
            For a bad ``size`` or ``threads``, an ``out`` that is not C-contiguous and writable or
            does not match ``size``, or ``out`` with a NumPy bit generator.
        """
        if not isinstance(self._bit_generator, ChaCha20):  # a NumPy bit generator: no threads
            check_threads(threads)
            if out is not None:
                raise ValueError("out is supported for the ChaCha20 bit generator only")
            return self._bit_generator.random_raw(size)
        return self._bit_generator.random_raw(size, threads=threads, out=out)


def default_rng(
    seed: int | np.random.SeedSequence | ChaCha20 | np.random.BitGenerator | Generator | None = None,
) -> Generator:
    """A dpnoise Generator.

    ``default_rng()`` is secure (keyed from the operating system). ``default_rng(seed)`` with an
    int or a ``numpy.random.SeedSequence`` is reproducible and NOT secure: use it only for
    tests and benchmarks; its ``is_secure`` is False and its repr says so. A ChaCha20 or a NumPy
    BitGenerator passed in is wrapped (a NumPy one is never secure); a Generator is returned.

    Parameters
    ----------
    seed : None, int, numpy.random.SeedSequence, ChaCha20, numpy.random.BitGenerator or Generator
        None for a secure generator; anything else for a reproducible (insecure) one.

    Returns
    -------
    Generator
        The generator (``seed`` itself when it is one).

    Raises
    ------
    TypeError
        For a PublicStream (its words are public) or an unsupported seed type.

    Examples
    --------
    >>> import dpnoise
    >>> dpnoise.default_rng().is_secure
    True
    >>> dpnoise.default_rng(42).is_secure  # seeded: tests only
    False
    """
    if isinstance(seed, Generator):
        return seed
    if isinstance(seed, (ChaCha20, np.random.BitGenerator)):
        return Generator(seed)
    if isinstance(seed, PublicStream):
        raise TypeError("default_rng cannot use a PublicStream: its words are public, not secret noise")
    return Generator(ChaCha20(seed))


__all__ = ["Generator", "default_rng"]


def secure_generator(rng: Generator | None, allow_insecure: Any, *, drawn: str = "randomness") -> Generator:
    """The generator a release path draws from: ``rng`` (default: a fresh OS-keyed one), which
    must be a :class:`Generator` and secure unless ``allow_insecure=True``.

    Parameters
    ----------
    rng : Generator or None
        The caller's generator.
    allow_insecure : bool
        Accept a seeded (reproducible, NOT secure) generator: tests and benchmarks only.
    drawn : str
        What the generator draws, for the error message ("noise", "randomness").

    Raises
    ------
    TypeError
        If ``rng`` is not a Generator or ``allow_insecure`` not a bool.
    dpnoise.InsecureGeneratorError
        For a seeded generator without ``allow_insecure=True``.
    """
    from dpnoise._errors import InsecureGeneratorError

    if rng is None:
        rng = default_rng()
    if not isinstance(rng, Generator):
        raise TypeError(f"rng must be a dpnoise.Generator (dpnoise.default_rng()), got {type(rng).__name__}")
    if not isinstance(allow_insecure, (bool, np.bool_)):
        raise TypeError(f"allow_insecure must be a bool, got {type(allow_insecure).__name__}")
    if not rng.is_secure and not allow_insecure:
        raise InsecureGeneratorError(
            f"rng is not secure (seeded: its {drawn} can be reproduced); use dpnoise.default_rng() "
            "with no seed, or pass allow_insecure=True for tests")
    return rng
