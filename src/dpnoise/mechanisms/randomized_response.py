"""Randomized response (binary, k-ary, and the two-coin protocol), sampled exactly."""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _core
from .._release import constant_time as _ct
from .._release.docs import shared_docs
from .._validate import MAX_PART, integer
from ..accounting.budget import PrivacyBudget
from ..accounting.losses import PrivacyLoss, PureDP, RandomizedResponse as RRLoss
from ..generator import Generator
from ._base import (
    DEFAULT_OUT_OF_DOMAIN,
    Mechanism,
    as_integer_array,
    check_beta,
    check_epsilon,
    check_out_of_domain,
    normalise_shape,
    out_of_domain_error,
    size_of,
)
from ._plan import RandomizedResponsePlan


def _epsilon_down(eps: float) -> Fraction:
    """ε as an exact rational the Bernoulli(exp(-ε)) sampler takes without rounding: the largest
    multiple of 2^-62 not above ε (rounding ε down only adds privacy)."""
    fr = Fraction(eps)
    if fr.denominator <= MAX_PART and fr.numerator <= MAX_PART:
        return fr
    return Fraction(math.floor(fr * MAX_PART), MAX_PART)


@shared_docs
class RandomizedResponse(Mechanism[RandomizedResponsePlan]):
    """k-ary randomized response: report the true category with probability e^ε/(e^ε + k - 1),
    otherwise one of the k - 1 others uniformly (Warner 1965; Kairouz, Oh & Viswanath 2016).

    Exact sampling, no floating-point probability, O(1) expected random bits per value for any k
    (up to 2^62) and ε: "keep" is decided by comparing uniform bits with certified bounds of
    1/(1 + (k-1)e^-ε), refined exactly in the rare undecided band, and a changed value is one of
    the other k - 1 categories drawn uniformly (docs/samplers.md, "Randomized response"). ε is
    used rounded down to a multiple of 2^-62 (rounding down only adds privacy).

    ``RandomizedResponse.two_coin()`` is Warner's (1965) survey protocol as given by Dwork &
    Roth (2014, §3.2): answer truthfully on heads, else answer with a second coin flip; keep
    probability 3/4, ε = ln 3 (sampled as binary randomized response with ε = ln 3 rounded down
    to a multiple of 2^-62, i.e. a keep probability below 3/4 by less than 2^-62).

    Records outside [0, k): ``out_of_domain="clamp"`` (the default) maps them to the nearest
    category (0 or k - 1) before randomizing, a per-record map that keeps ε; ``"raise"`` refuses
    the input before any charge, which reveals that such a record exists (docs/security.md).
    ``"drop"`` is refused: the output's length would reveal it.

    Timing: the number of random bits drawn (and so the time) varies with the random draws,
    rarely (the undecided band, about 2^-31 of values) by much; docs/security.md.
    ``constant_time=True`` uses the constant-time kernel instead: keep/flip and the other
    category from a fixed number of random words, selected by masks, records clamped to [0, k)
    by masks (with ``out_of_domain="clamp"`` nothing in Python looks at the values).

    Parameters
    ----------
    {epsilon_parameter}
    categories : int, default 2
        k, the public domain [0, k).
    {constant_time}
    out_of_domain : {"clamp", "raise"}
        Records outside [0, k) (default "clamp").
    {release_sections}

    Examples
    --------
    >>> import dpnoise
    >>> rr = dpnoise.RandomizedResponse(1.0, 4)
    >>> rr([0, 3, 2]).shape
    (3,)
    """

    epsilon: float  # always set (the base allows None for mechanisms calibrated otherwise)
    delta: float

    def __init__(self, epsilon: float, categories: int = 2, *, rng: Generator | None = None,
                 budget: PrivacyBudget | None = None, threads: int | None = None,
                 out_of_domain: str = DEFAULT_OUT_OF_DOMAIN, allow_insecure: bool = False,
                 constant_time: bool = False):
        super().__init__(rng, budget, threads=threads, allow_insecure=allow_insecure)
        self.constant_time = _ct.check_flag(constant_time)
        categories = integer(categories, "categories")
        if not 2 <= categories <= MAX_PART:
            raise ValueError(f"categories must be between 2 and 2^62, got {categories}")
        self.categories = int(categories)
        self.out_of_domain = check_out_of_domain(out_of_domain, drop=False)
        self._gamma = _epsilon_down(check_epsilon(epsilon))
        self.epsilon = float(self._gamma)
        self.delta = 0.0
        self._two_coin = False
        # the constant-time kernel's table (certified from k and the exact γ: tens of µs, and it
        # can fail) is built now and held by every plan, so nothing is built after a charge
        self._table = (_core.ConstantTimeRandomizedResponseTable(self.categories, self._gamma.numerator,
                                                                 self._gamma.denominator)
                       if self.constant_time else None)
        self._check_release_possible()

    @classmethod
    def two_coin(cls, *, rng: Generator | None = None, budget: PrivacyBudget | None = None,
                 threads: int | None = None, out_of_domain: str = DEFAULT_OUT_OF_DOMAIN,
                 allow_insecure: bool = False, constant_time: bool = False) -> RandomizedResponse:
        """The two-coin protocol (Warner 1965; Dwork & Roth 2014, §3.2): keep probability 3/4,
        ε = ln 3.

        Parameters
        ----------
        rng, budget, threads, out_of_domain, allow_insecure, constant_time
            As for :class:`RandomizedResponse`.

        Returns
        -------
        RandomizedResponse
            Binary, charged ε = ln 3 per record.
        """
        m = cls(math.log(3.0), 2, rng=rng, budget=budget, threads=threads,
                out_of_domain=out_of_domain, allow_insecure=allow_insecure, constant_time=constant_time)
        m._two_coin = True
        m.epsilon = math.log(3.0)  # the charged ε: an upper bound of the γ the sampler uses
        return m

    @property
    def keep_probability(self) -> float:
        """p = e^ε/(e^ε + k − 1), the probability that a response is the true category."""
        if self._two_coin:
            return 0.75
        return 1.0 / (1.0 + (self.categories - 1) * math.exp(-self.epsilon))

    def plan(self, shape: Any = (), dtype: Any = None) -> RandomizedResponsePlan:
        """The plan for ``shape`` responses (one per record); the loss is the per-record ε (each
        record is randomized on its own). An empty input spends nothing (PureDP(0))."""
        shape = normalise_shape(shape)
        loss: PrivacyLoss = RRLoss(self.epsilon, self.categories) if size_of(shape) else PureDP(0.0)
        if self.constant_time:  # each record's draw is within 2^-64 of the exact law
            loss = _ct.loss(loss, min(size_of(shape), 1))
        name = "RandomizedResponse.two_coin" if self._two_coin else type(self).__name__
        return RandomizedResponsePlan(name, loss, shape, shape == (), self.threads, self.categories,
                                      self._gamma, self.constant_time, self._table)

    def _prepare(self, value: Any) -> tuple[np.ndarray, tuple[int, ...], Any]:
        try:
            x = as_integer_array(value, "value", bound=MAX_PART, clamp=not self.constant_time)
        except TypeError:
            raise TypeError(f"value must be category indices (integers or bools), got dtype "
                            f"{np.asarray(value).dtype}") from None
        if self.constant_time:
            if self.out_of_domain == "raise":
                # one vectorised pass over every value, no early exit; only the count is branched
                # on, once: the exception itself reveals that some value is out of the domain
                outside = np.count_nonzero((x < 0) | (x >= self.categories))
                if outside:
                    raise out_of_domain_error(f"[0, {self.categories})")
            return x, x.shape, np.int64  # "clamp": the kernel clamps by masks
        if x.size and (x.min() < 0 or x.max() >= self.categories):
            if self.out_of_domain == "raise":
                raise out_of_domain_error(f"[0, {self.categories})")
            x = np.clip(x, 0, self.categories - 1)
        return x, x.shape, np.int64

    def _scalar_route(self, kind: type) -> tuple[str, Any] | None:
        """An int category is one call (an index outside the domain takes the general path,
        which raises or clips by ``out_of_domain``)."""
        if self.constant_time or kind not in (int, np.int64):
            return None
        return "category", self._plan_for((), np.int64)

    def estimate_counts(self, responses: Any) -> np.ndarray:
        """Unbiased estimates of the true category counts from the noisy responses:
        f̂_j = (n_j - qN)/(p - q), p = keep probability, q = (1 - p)/(k - 1) (post-processing).

        Parameters
        ----------
        responses : array_like of int or bool
            Released category indices in [0, k), any shape.

        Returns
        -------
        numpy.ndarray of float64
            Shape (k,), unbiased, not clipped.

        Raises
        ------
        TypeError
            For non-integer responses.
        ValueError
            For a response outside [0, k).
        """
        r = np.asarray(responses)
        if not np.issubdtype(r.dtype, np.integer) and r.dtype != np.bool_:
            raise TypeError(f"responses must be category indices, got dtype {r.dtype}")
        r = r.astype(np.int64).reshape(-1)
        if r.size and (r.min() < 0 or r.max() >= self.categories):
            raise ValueError(f"responses must be in [0, {self.categories})")
        n = np.bincount(r, minlength=self.categories).astype(float)
        p = self.keep_probability
        q = (1 - p) / (self.categories - 1)
        return (n - q * r.size) / (p - q)

    def accuracy(self, beta: float, shape: Any = ()) -> float:
        """Half-width w with P(some |f̂_j - f_j| > w) <= beta for n = size of ``shape``
        respondents (Hoeffding on the n independent responses, union bound over the k counts)."""
        n = size_of(normalise_shape(shape))
        p = self.keep_probability
        q = (1 - p) / (self.categories - 1)
        return math.sqrt(n * math.log(2 * self.categories / check_beta(beta)) / 2) / (p - q)

    def __repr__(self) -> str:
        if self._two_coin:
            return "RandomizedResponse.two_coin()"
        return f"RandomizedResponse(epsilon={self.epsilon}, categories={self.categories})"
