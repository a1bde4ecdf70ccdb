"""Shared by the frequency-oracle tests: the unbiased count estimates of many seeded runs,
checked against the oracle's stated variance."""
import numpy as np


def assert_unbiased_with_stated_variance(fo, counts, truth):
    """``counts`` (runs, d): per run, how often each item was reported for the true items
    ``truth`` (n users). The estimates (counts - n q)/(p - q) must average within 4.5 standard
    errors of the true counts and their empirical variance be within 10% of
    ``fo.variance(n, true counts)``; returns the estimates (runs, d)."""
    runs, d = counts.shape
    n = len(truth)
    p, q = fo._pq()[:2]
    est = (counts - n * q) / (p - q)
    true_counts = np.bincount(truth, minlength=d)
    var = fo.variance(n, true_counts)
    se = np.sqrt(var / runs)
    assert (np.abs(est.mean(axis=0) - true_counts) < 4.5 * se).all()
    assert np.allclose(est.var(axis=0, ddof=1), var, rtol=0.10)
    return est
