"""The benchmarks' accuracy check of Apple's sketches ("cms", "hcms") with a fixed public hash key
and a seeded run: every item's estimate against its expectation GIVEN the hashes, with a tolerance
whose false-alarm rate over all d items is at most 1e-6 (a rigorous bound, not a normal tail).

Why given the hashes: over a random key the estimate also carries the collision term (its variance
Σ_{y≠x} c(y)² (m−1)/(k m²) in fo.variance, docs/ldp_hadamard.md, "Variance"), which is not normal
when k is small: at k = 16, m = 1024 an item sharing one row with the top item (c ≈ 36,000 of
200,000 Zipf users) is off by ≈ c/16 ≈ 4 sd. "Every item within 6 sd of the truth" therefore
failed for 11.8% of random keys (hcms, 20,000 simulated keys; 55 of 400 real runs). Given the key
the collisions are known: with π_y(x) = (1/k) Σ_l 1{h_l(y) = h_l(x)} (a user's row l is uniform
and secret) and g = m/(m − 1), E[f̂(x) | h] = g (Σ_y c(y) π_y(x) − n/m) (Apple 2017, Algorithms
2 and 4), and f̂(x) − E is a sum of n independent users' centred terms g (Z − E Z), Z the user's
Y[l, h_l(x)] (count_mean_sketch.py), E[Z | h] = π_y(x):
  hcms  Z = c·bit·H[a, h_l(x)], Z² = c²:       Var Z = c² − π²,              |Z − E Z| <= c + 1
  cms   Z = (c·sign + 1)/2 at column h_l(x):   Var Z = (c² − 1)/4 + π(1 − π), |Z − E Z| <= (c + 1)/2
"""
import math

import numpy as np

FALSE_ALARM = 1e-6  # over all d items of one check (the seed's and the key's draw)


def sketch_reference(fo, truth):
    """E[f̂(x) | h], an upper bound V(x) of Var[f̂(x) | h] and b, the bound of one user's centred
    term (the module docstring), for every item; O(k d) (no d × d matrix).

    V: hcms g² (n c² − c(x)), as Σ_y c(y) π_y(x)² >= c(x) (y = x: π = 1); cms
    g² (n (c² − 1)/4 + Σ_{y≠x} c(y) π_y(x)), as π(1 − π) <= π. Both exceed the exact variance by
    the other items' collisions only (< 0.1% here), which errs toward a larger tolerance."""
    k, m, s, n = fo.hashes, fo.width, fo.scale(), float(truth.sum())
    h = fo.hash_values(np.arange(truth.size))
    shared = sum(np.bincount(row, weights=truth, minlength=m)[row] for row in h) / k  # Σ_y c(y) π_y(x)
    g = m / (m - 1)
    mean = g * (shared - n / m)
    if fo.name == "hcms":
        return mean, g * g * (n * s * s - truth), g * (s + 1)
    return mean, g * g * (n * (s * s - 1) / 4 + shared - truth), g * (s + 1) / 2


def sketch_accuracy(fo, est, truth):
    """max over items of |f̂(x) − E[f̂(x) | h]| / t(x), and the same for f̂ + 5 sqrt(V) (a biased
    estimate, which must fail: the check has power). The check passes when the first is < 1.

    t(x): Bernstein's inequality (Boucheron, Lugosi & Massart 2013, "Concentration Inequalities",
    Corollary 2.11 with c = b/3) for n independent terms within b of their means, variance at most
    V, both tails: P(|S| >= t) <= 2 exp(−t²/(2(V + b t/3))), which is α = FALSE_ALARM / d at
    t = L b/3 + sqrt((L b/3)² + 2 L V), L = ln(2/α) (21.4 at d = 1024: t ≈ 6.6 sqrt(V); 25.6 at
    d = 65,536: t ≈ 7.2 sqrt(V)); a union bound over the d items gives FALSE_ALARM."""
    mean, var, b = sketch_reference(fo, truth)
    ell = math.log(2 * truth.size / FALSE_ALARM)
    tol = ell * b / 3 + np.sqrt((ell * b / 3) ** 2 + 2 * ell * var)
    worst = float(np.abs((est - mean) / tol).max())
    biased = float(np.abs((est + 5 * np.sqrt(var) - mean) / tol).max())
    return worst, biased
