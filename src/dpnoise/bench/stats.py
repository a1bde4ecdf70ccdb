"""The statistics of ``dpnoise bench``: Student-t intervals of repeated utility figures and the
Mann-Whitney U test of two samples of timed calls."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

# Student's t quantile t(0.975; df) for df = 1..30 (Fisher & Yates, Statistical Tables, Table III).
_T975 = (12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157,
         2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922,
         2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831,
         2.048407, 2.045230, 2.042272)


def t_quantile_975(df: int) -> float:
    """Student's t quantile t(0.975; df): the half-width factor of a two-sided 95% interval.

    Parameters
    ----------
    df : int
        Degrees of freedom, at least 1.

    Returns
    -------
    float
        Exact to 6 digits for df <= 30 (table); beyond, the Cornish-Fisher expansion of
        Abramowitz & Stegun 26.7.5, within 1e-6.

    Raises
    ------
    ValueError
        ``df`` is not an integer >= 1.
    """
    if isinstance(df, bool) or not isinstance(df, (int, np.integer)) or df < 1:
        raise ValueError(f"df must be an integer >= 1, got {df!r}")
    if df <= len(_T975):
        return _T975[df - 1]
    x, v = 1.959963984540054, float(df)  # the normal quantile z(0.975); A&S 26.7.5 in powers of 1/df
    g1 = (x**3 + x) / 4
    g2 = (5 * x**5 + 16 * x**3 + 3 * x) / 96
    g3 = (3 * x**7 + 19 * x**5 + 17 * x**3 - 15 * x) / 384
    g4 = (79 * x**9 + 776 * x**7 + 1482 * x**5 - 1920 * x**3 - 945 * x) / 92160
    return x + g1 / v + g2 / v**2 + g3 / v**3 + g4 / v**4


def summarize_utility(values: Sequence[float | None]) -> dict[str, Any]:
    """Mean, standard error and 95% interval of one metric's repetitions (missing ones left out).

    The interval is mean ± t(0.975; n-1)·s/√n (Student 1908), s the sample standard deviation of
    the n non-missing values.

    Parameters
    ----------
    values : sequence of float or None
        The metric's value in each repetition (None: missing there).

    Returns
    -------
    dict
        ``{"mean", "stderr", "ci95": [low, high], "n", "raw"}``: ``mean`` None when every value
        is missing; ``stderr`` and ``ci95`` None with fewer than 2 values; ``raw`` the values
        as given (None kept, in repetition order).
    """
    raw = [None if v is None else float(v) for v in values]
    have = np.asarray([v for v in raw if v is not None], dtype=float)
    n = int(have.size)
    mean: float | None = None
    stderr: float | None = None
    ci: list[float] | None = None
    if n:
        mean = float(have.mean())
    if mean is not None and n >= 2:
        stderr = float(have.std(ddof=1) / math.sqrt(n))
        half = t_quantile_975(n - 1) * stderr
        ci = [mean - half, mean + half]
    return {"mean": mean, "stderr": stderr, "ci95": ci, "n": n, "raw": raw}


_EXACT_MW_PAIRS = 2500  # m·n up to which the Mann-Whitney null distribution is counted exactly


def _mw_upper_exact(u2: int, m: int, n: int) -> float:
    """P(U >= u2/2) for the Mann-Whitney U of samples of sizes m and n without ties (U counted in
    half-units u2 = 2U), from the exact null distribution: the number of arrangements with U = u
    obeys f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u) (Mann & Whitney 1947, eq. 2)."""
    # f[j] is the distribution of U for (i, j), updated over i = 1..m
    f = [np.zeros(1) + 1.0 for _ in range(n + 1)]  # i = 0: U = 0 in one way
    for _i in range(1, m + 1):
        g = [np.zeros(1) + 1.0]  # j = 0: U = 0
        for j in range(1, n + 1):
            a = np.concatenate([np.zeros(j), f[j]])  # f(i-1, j, u-j)
            b = g[j - 1]                              # f(i, j-1, u)
            size = max(a.size, b.size)
            c = np.zeros(size)
            c[:a.size] += a
            c[:b.size] += b
            g.append(c)
        f = g
    dist = f[n] / f[n].sum()
    u = (u2 + 1) // 2  # without ties U is an integer
    return float(dist[u:].sum())


def mann_whitney_greater(new: Sequence[float] | np.ndarray, old: Sequence[float] | np.ndarray) -> float:
    """One-sided p-value of the Mann-Whitney U test (Mann & Whitney 1947) that ``new`` tends to
    be larger than ``old``: exact for small samples without ties, otherwise the normal
    approximation with tie correction and continuity correction (Lehmann 1975, eq. 1.30).

    Parameters
    ----------
    new, old : sequence or 1-d array of float
        The two samples (at least one value each).

    Returns
    -------
    float
        P(U >= observed) under the null hypothesis of one distribution.

    Raises
    ------
    ValueError
        A sample is empty or holds a non-finite value.
    """
    x = np.asarray(new, dtype=float)
    y = np.asarray(old, dtype=float)
    for name, a in (("new", x), ("old", y)):
        if a.size == 0 or not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be a non-empty sample of finite numbers")
    m, n = x.size, y.size
    both = np.concatenate([x, y])
    # ranks with ties given their mid-rank; U = R_x - m(m+1)/2, kept in half-units
    order = np.argsort(both, kind="mergesort")
    ranks = np.empty(m + n)
    sorted_vals = both[order]
    i = 0
    while i < m + n:
        j = i
        while j + 1 < m + n and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    u2 = round(2 * ranks[:m].sum() - m * (m + 1))
    _, counts = np.unique(both, return_counts=True)
    ties = bool(np.any(counts > 1))
    if not ties and m * n <= _EXACT_MW_PAIRS:
        return _mw_upper_exact(u2, m, n)
    mu = m * n / 2
    tie_term = float(np.sum(counts**3 - counts)) / ((m + n) * (m + n - 1)) if m + n > 1 else 0.0
    var = m * n / 12 * ((m + n + 1) - tie_term)
    if var <= 0:
        return 1.0
    z = (u2 / 2 - mu - 0.5) / math.sqrt(var)
    return 0.5 * math.erfc(z / math.sqrt(2))


def _min_p(m: int, n: int) -> float:
    """The smallest one-sided Mann-Whitney p-value samples of sizes m, n can give: 1 / C(m+n, m)."""
    return 1.0 / math.comb(m + n, m)
