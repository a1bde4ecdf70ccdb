"""Exact output laws of the private-selection mechanisms, for the law and privacy tests.

Pure Python/NumPy, float64 (every sum is of positive terms, so nothing cancels; the final sums
use math.fsum). All functions take integer (or real, where said) scores q_1..q_n and the
calibration gamma documented by ``dpnoise.report_noisy_max``:

    gamma = epsilon / (2 * sensitivity), or epsilon / sensitivity when monotonic=True.

* Exponential mechanism (McSherry & Talwar 2007): P(r) = exp(gamma q_r) / sum_j exp(gamma q_j).
* Permute-and-flip (McKenna & Sheldon 2020, Alg. 1) = report-noisy-max with exponential noise
  (Ding et al. 2021, Thm. 1): visit the candidates in a uniform random order and accept r with
  probability p_r = exp(-gamma (q* - q_r)), q* = max_j q_j; output the first accepted. Computed
  two ways that must agree: by enumerating the n! orders, and by
      P(r) = p_r * E[1 / (1 + |A_{-r}|)],  A_{-r} ~ independent Bernoulli(p_j), j != r,
  since, given the set A of candidates whose coins say "accept", the first of A in a uniform
  order is uniform on A; E[1/(1+T)] = integral_0^1 E[x^T] dx = integral_0^1 prod_j (1 - p_j +
  p_j x) dx, integrated exactly from the polynomial's coefficients.
* Report noisy max with discrete Laplace noise (Dwork & Roth 2014, Claim 3.9, with the discrete
  Laplace of Canonne, Kamath & Steinke 2020): y_j = q_j + Z_j, P(Z = z) = (1-s)/(1+s) s^|z|,
  s = exp(-gamma); argmax, ties among the maxima broken uniformly. For each value y of y_r,
      P(r wins, y_r = y) = P(Z_r = y - q_r) * integral_0^1 prod_{j != r} (P(y_j < y) + P(y_j = y) x) dx
  (the same E[1/(1+T)] identity, T = number of others tied at y, all others <= y). The sum over
  y is truncated to |y - q_j| <= m with m chosen so that the noise mass left out, over all n
  candidates together, is below 1e-16 (TAIL_MASS): each probability is exact to ~1e-16 absolute.
* Report noisy max with continuous Laplace noise of scale b (the limit of the discrete law on a
  fine grid, used for the real-score path): P(r) = integral f_b(y - q_r) prod_{j != r} F_b(y - q_j) dy
  by adaptive quadrature between the kinks (scipy).
* Top-k by peeling: k sequential selections, each over the candidates not selected yet, with
  fresh randomness (and the maximum recomputed), so
      P(i_1, ..., i_k) = prod_t P_{one}(i_t | scores restricted to the remaining candidates).
"""
from __future__ import annotations

import itertools
import math
from typing import Callable, Dict, Sequence, Tuple

import numpy as np

TAIL_MASS = 1e-16  # discrete Laplace: noise mass left out of the sum, all candidates together

Law = Callable[[Sequence[float], float], np.ndarray]


def gamma_of(epsilon: float, sensitivity: float = 1.0, monotonic: bool = False) -> float:
    """The documented calibration of dpnoise.report_noisy_max (McSherry & Talwar 2007 Thm. 6;
    McKenna & Sheldon 2020 Thm. 1; Dwork & Roth 2014 Claim 3.9 and its non-monotone form)."""
    return epsilon / sensitivity if monotonic else epsilon / (2 * sensitivity)


def _normalised(weights: Sequence[float]) -> np.ndarray:
    total = math.fsum(weights)
    return np.array([w / total for w in weights], dtype=np.float64)


def _integral_of_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """integral_0^1 prod_j (a_j + b_j x) dx along the last axis of a and b (shape (..., m)),
    from the polynomial's coefficients (all >= 0): sum_t c_t / (t + 1)."""
    coef = np.ones(a.shape[:-1] + (1,), dtype=np.float64)
    for j in range(a.shape[-1]):
        aj = a[..., j : j + 1]
        bj = b[..., j : j + 1]
        pad = np.zeros(a.shape[:-1] + (1,), dtype=np.float64)
        coef = np.concatenate([coef * aj, pad], axis=-1) + np.concatenate([pad, coef * bj], axis=-1)
    return (coef / np.arange(1, coef.shape[-1] + 1)).sum(axis=-1)


def exponential_mechanism_law(scores: Sequence[float], gamma: float) -> np.ndarray:
    """P(r) = exp(gamma q_r) / sum_j exp(gamma q_j) (McSherry & Talwar 2007), shifted by max q."""
    q = [float(x) for x in scores]
    top = max(q)
    return _normalised([math.exp(gamma * (x - top)) for x in q])


def _accept_probabilities(scores: Sequence[float], gamma: float) -> np.ndarray:
    q = np.asarray(scores, dtype=np.float64)
    return np.exp(-gamma * (q.max() - q))


def permute_and_flip_law(scores: Sequence[float], gamma: float) -> np.ndarray:
    """P(r) = p_r * integral_0^1 prod_{j != r} (1 - p_j + p_j x) dx (see the module note)."""
    p = _accept_probabilities(scores, gamma)
    n = len(p)
    out = np.empty(n)
    for r in range(n):
        others = np.delete(p, r)
        out[r] = p[r] * _integral_of_product((1.0 - others)[None, :], others[None, :])[0]
    return out


def permute_and_flip_law_by_orders(scores: Sequence[float], gamma: float) -> np.ndarray:
    """The same law by enumerating every visiting order (n <= 7): P(r) = mean over orders of
    prod_{j before r} (1 - p_j) * p_r (the maximum has p = 1, so some candidate is accepted)."""
    p = [float(x) for x in _accept_probabilities(scores, gamma)]
    n = len(p)
    if n > 7:
        raise ValueError("enumeration over orders is for n <= 7")
    terms = [[] for _ in range(n)]
    for order in itertools.permutations(range(n)):
        reach = 1.0
        for r in order:
            terms[r].append(reach * p[r])
            reach *= 1.0 - p[r]
            if reach == 0.0:
                break
    count = math.factorial(n)
    return np.array([math.fsum(t) / count for t in terms])


def _discrete_laplace_pmf(z: np.ndarray, gamma: float) -> np.ndarray:
    """P(Z = z) = (1-s)/(1+s) s^|z|, s = exp(-gamma) (Canonne, Kamath & Steinke 2020, Def. 28)."""
    s = math.exp(-gamma)
    return (-math.expm1(-gamma)) / (1.0 + s) * np.exp(-gamma * np.abs(z))


def _discrete_laplace_cdf(z: np.ndarray, gamma: float) -> np.ndarray:
    """P(Z <= z): s^|z|/(1+s) for z < 0, 1 - s^(z+1)/(1+s) for z >= 0 (summed geometric series)."""
    s = math.exp(-gamma)
    z = np.asarray(z, dtype=np.float64)
    below = np.exp(-gamma * np.abs(z)) / (1.0 + s)
    above = -np.expm1(-gamma * (np.maximum(z, 0) + 1)) + np.exp(-gamma * (np.maximum(z, 0) + 1)) * (s / (1.0 + s))
    # 1 - s^(z+1)/(1+s) = (1 - s^(z+1)) + s^(z+1) * s/(1+s), written without cancellation
    return np.where(z < 0, below, above)


def discrete_laplace_truncation(n: int, gamma: float) -> int:
    """The half-width m with n * P(|Z| > m) = n * 2 s^(m+1) / (1+s) < TAIL_MASS."""
    s = math.exp(-gamma)
    m = math.ceil(math.log(TAIL_MASS * (1.0 + s) / (2.0 * n)) / -gamma) - 1
    while n * 2.0 * math.exp(-gamma * (m + 1)) / (1.0 + s) >= TAIL_MASS:
        m += 1
    return max(m, 0)


def laplace_noisy_max_law(scores: Sequence[int], gamma: float) -> np.ndarray:
    """Report noisy max with discrete Laplace noise P(Z=z) ~ exp(-gamma |z|) on integer scores,
    ties broken uniformly: exact up to the TAIL_MASS truncation (see the module note)."""
    q = np.asarray(scores)
    if not np.issubdtype(q.dtype, np.integer):
        raise TypeError("the discrete Laplace law is for integer scores")
    q = q.astype(np.int64)
    n = len(q)
    m = discrete_laplace_truncation(n, gamma)
    y = np.arange(int(q.min()) - m, int(q.max()) + m + 1, dtype=np.int64)
    diff = (y[:, None] - q[None, :]).astype(np.float64)  # (values, candidates)
    equal = _discrete_laplace_pmf(diff, gamma)             # P(y_j = y)
    below = _discrete_laplace_cdf(diff - 1.0, gamma)       # P(y_j < y)
    out = np.empty(n)
    for r in range(n):
        keep = [j for j in range(n) if j != r]
        tie_share = _integral_of_product(below[:, keep], equal[:, keep])
        out[r] = math.fsum(equal[:, r] * tie_share)
    return out


def continuous_laplace_noisy_max_law(scores: Sequence[float], scale: float) -> np.ndarray:
    """Report noisy max with continuous Laplace(scale) noise (ties have probability 0):
    P(r) = integral f(y - q_r) prod_{j != r} F(y - q_j) dy, by scipy quadrature between the kinks."""
    from scipy import integrate

    q = np.asarray(scores, dtype=np.float64)
    b = float(scale)

    def pdf(x):
        return math.exp(-abs(x) / b) / (2 * b)

    def cdf(x):
        return 0.5 * math.exp(x / b) if x < 0 else 1.0 - 0.5 * math.exp(-x / b)

    knots = sorted(set(q.tolist()))
    edges = [knots[0] - 60 * b] + knots + [knots[-1] + 60 * b]
    out = np.empty(len(q))
    for r in range(len(q)):
        def integrand(y, r=r):
            v = pdf(y - q[r])
            for j in range(len(q)):
                if j != r:
                    v *= cdf(y - q[j])
            return v

        pieces = [integrate.quad(integrand, lo, hi, epsabs=1e-15, epsrel=1e-13, limit=200)[0]
                  for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]
        out[r] = math.fsum(pieces)
    return out


LAWS: Dict[str, Law] = {
    "exponential": permute_and_flip_law,     # permute-and-flip == RNM with exponential noise
    "gumbel": exponential_mechanism_law,     # RNM with Gumbel noise == exponential mechanism
    "laplace": laplace_noisy_max_law,
}


def law(noise: str, scores: Sequence[float], epsilon: float, sensitivity: float = 1.0,
        monotonic: bool = False) -> np.ndarray:
    """The exact law of dpnoise.report_noisy_max(scores, epsilon, noise=..., k=1)."""
    return LAWS[noise](scores, gamma_of(epsilon, sensitivity, monotonic))


def top_k_peeling_law(noise: str, scores: Sequence[float], epsilon: float, k: int,
                      sensitivity: float = 1.0, monotonic: bool = False) -> Dict[Tuple[int, ...], float]:
    """P(i_1, ..., i_k) for top-k by peeling: each round the one-candidate law over the candidates
    not yet selected (fresh randomness, maximum recomputed). Keys: ordered tuples of indices."""
    q = list(scores)
    out: Dict[Tuple[int, ...], float] = {}

    def walk(prefix: Tuple[int, ...], prob: float) -> None:
        if len(prefix) == k:
            out[prefix] = prob
            return
        remaining = [i for i in range(len(q)) if i not in prefix]
        step = law(noise, [q[i] for i in remaining], epsilon, sensitivity, monotonic)
        for i, p in zip(remaining, step):
            walk(prefix + (i,), prob * float(p))

    walk((), 1.0)
    return out


def neighbours(scores: Sequence[int], sensitivity: int, monotonic: bool):
    """Every integer score vector q' with |q'_j - q_j| <= sensitivity (monotonic: all moves >= 0,
    or all <= 0), q' != q. Integer moves suffice for the integer path: scores are integers."""
    steps = range(-sensitivity, sensitivity + 1)
    for move in itertools.product(steps, repeat=len(scores)):
        if not any(move):
            continue
        if monotonic and not (all(d >= 0 for d in move) or all(d <= 0 for d in move)):
            continue
        yield tuple(int(a) + d for a, d in zip(scores, move))


def worst_log_ratio(noise: str, scores: Sequence[int], epsilon: float, sensitivity: int = 1,
                    monotonic: bool = False, gamma: float = None) -> Tuple[float, Tuple[int, ...]]:
    """max over neighbours q' and outputs r of |log P_q(r) - log P_q'(r)| under the documented
    calibration (or the given gamma), and the q' attaining it."""
    g = gamma_of(epsilon, sensitivity, monotonic) if gamma is None else gamma
    base = np.log(LAWS[noise](scores, g))
    worst, at = -1.0, tuple(scores)
    for other in neighbours(scores, sensitivity, monotonic):
        gap = float(np.max(np.abs(base - np.log(LAWS[noise](other, g)))))
        if gap > worst:
            worst, at = gap, other
    return worst, at
