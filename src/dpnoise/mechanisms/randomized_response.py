"""Randomized response (binary, k-ary, and the two-coin protocol), sampled exactly."""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Optional

import numpy as np

from ..accounting.budget import PrivacyBudget
from ..accounting.losses import RandomizedResponse as RRLoss
from .._validate import MAX_PART, integer
from ..generator import Generator
from ._base import Mechanism, check_beta, check_epsilon



def _epsilon_down(eps: float) -> Fraction:
    """ε as an exact rational the Bernoulli(exp(-ε)) sampler takes without rounding: the largest
    multiple of 2^-62 not above ε (rounding ε down only adds privacy)."""
    fr = Fraction(eps)
    if fr.denominator <= MAX_PART and fr.numerator <= MAX_PART:
        return fr
    return Fraction(math.floor(fr * MAX_PART), MAX_PART)


class RandomizedResponse(Mechanism):
    """k-ary randomized response: report the true category with probability e^ε/(e^ε + k - 1),
    otherwise one of the k - 1 others uniformly (Warner 1965; Kairouz, Oh & Viswanath 2016).

    Exact sampling, no floating-point probability: propose "keep" or one specific other
    category uniformly (1/k each) and accept a change with probability exp(-ε) (the exact
    Bernoulli(exp(-γ)) of CKS 2020), retrying otherwise. Then
    P(keep) ∝ 1 and P(each other) ∝ e^-ε, which is the distribution above; the expected number
    of rounds is k / (1 + (k-1)e^-ε). ``RandomizedResponse.two_coin()`` is the two-coin survey
    protocol of the introduction seed (truthful on heads, else a second coin answers): ε = ln 3.
    """

    def __init__(self, epsilon: float, categories: int = 2, *, rng: Optional[Generator] = None,
                 budget: Optional[PrivacyBudget] = None):
        super().__init__(rng, budget)
        categories = integer(categories, "categories")
        if categories < 2:
            raise ValueError(f"categories must be >= 2, got {categories}")
        self.categories = int(categories)
        self._gamma = _epsilon_down(check_epsilon(epsilon))
        self.epsilon = float(self._gamma)
        self.delta = 0.0
        self._two_coin = False

    @classmethod
    def two_coin(cls, *, rng: Optional[Generator] = None,
                 budget: Optional[PrivacyBudget] = None) -> "RandomizedResponse":
        """The two-coin protocol: keep probability 3/4, ε = ln 3 (introduction seed 002)."""
        m = cls(math.log(3.0), 2, rng=rng, budget=budget)
        m._two_coin = True
        m.epsilon = math.log(3.0)
        return m

    @property
    def keep_probability(self) -> float:
        if self._two_coin:
            return 0.75
        return 1.0 / (1.0 + (self.categories - 1) * math.exp(-self.epsilon))

    def privacy_loss(self) -> RRLoss:
        return RRLoss(self.epsilon, self.categories)

    def _prepare(self, value: Any) -> Any:
        arr = np.asarray(value)
        if arr.dtype == np.bool_:
            arr = arr.astype(np.int64)
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"value must be category indices (integers or bools), got dtype {arr.dtype}")
        if arr.size and (arr.min() < 0 or arr.max() >= self.categories):
            raise ValueError(f"value must be in [0, {self.categories}), got values in "
                             f"[{arr.min()}, {arr.max()}]")
        return arr.astype(np.int64), np.ndim(value) == 0

    def _release(self, prepared: Any) -> Any:
        x, scalar = prepared
        flat = x.reshape(-1).copy()
        k = self.categories
        if self._two_coin:
            bits = self.rng.random_raw(flat.size)
            truthful = (bits & np.uint64(1)).astype(bool)
            second = ((bits >> np.uint64(1)) & np.uint64(1)).astype(np.int64)
            out = np.where(truthful, flat, second)
        else:
            out = flat.copy()
            pending = np.arange(flat.size)
            while pending.size:
                j = np.asarray(self.rng.integers(0, k, pending.size))  # 0 = keep, else shift by j
                keep = j == 0
                accept = np.zeros(pending.size, dtype=bool)
                change = ~keep
                if change.any():
                    accept[change] = np.asarray(self.rng.bernoulli_exp(self._gamma, int(change.sum())))
                out[pending[change & accept]] = (flat[pending[change & accept]] + j[change & accept]) % k
                pending = pending[~(keep | accept)]
        out = out.reshape(x.shape)
        return int(out) if scalar else out

    def estimate_counts(self, responses: Any) -> np.ndarray:
        """Unbiased estimates of the true category counts from the noisy responses:
        f̂_j = (n_j - qN)/(p - q), p = keep probability, q = (1 - p)/(k - 1) (post-processing)."""
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

    def accuracy(self, beta: float, n: int = 1) -> float:
        """Half-width w with P(some |f̂_j - f_j| > w) <= beta for n respondents (Hoeffding on the
        n independent responses, union bound over the k counts)."""
        p = self.keep_probability
        q = (1 - p) / (self.categories - 1)
        return math.sqrt(n * math.log(2 * self.categories / check_beta(beta)) / 2) / (p - q)

    def __repr__(self) -> str:
        if self._two_coin:
            return "RandomizedResponse.two_coin()"
        return f"RandomizedResponse(epsilon={self.epsilon}, categories={self.categories})"
