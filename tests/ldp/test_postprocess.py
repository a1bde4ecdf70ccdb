"""Post-processing of frequency-oracle estimates: Base-Pos, Norm-Sub and the simplex projection
checked against their definitions (a literal iterative Norm-Sub; the projection's optimality
conditions), plus bad input. Deterministic: no false alarms."""
import numpy as np
import pytest

import dpnoise
from dpnoise.ldp.postprocess import clip_nonnegative, norm_sub, project_simplex


def literal_norm_sub(x, total):
    """Wang et al. 2020's description, step by step: clip negatives, shift the positives by one
    δ so that they sum to total, repeat while some shifted value is not positive."""
    y = np.maximum(np.asarray(x, float), 0.0)
    while True:
        pos = y > 0
        delta = (total - y[pos].sum()) / pos.sum()
        y[pos] += delta
        if np.all(y[pos] > 0):
            return y
        y[y < 0] = 0.0
        y[np.isclose(y, 0.0, atol=0.0)] = 0.0


def check_projection(x, y, total):
    """KKT conditions of argmin ||y − x||² over {y ≥ 0, Σy = total}: one θ with y = x − θ where
    y > 0, and x ≤ θ where y = 0."""
    assert np.all(y >= 0)
    assert y.sum() == pytest.approx(total, rel=1e-12, abs=1e-9)
    pos = y > 0
    theta = x[pos] - y[pos]
    assert np.ptp(theta) <= 1e-9 * max(1.0, np.abs(x).max())
    assert np.all(x[~pos] <= theta[0] + 1e-9 * max(1.0, np.abs(x).max()))


@pytest.mark.parametrize("seed", range(20))
def test_norm_sub_matches_the_literal_algorithm(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 300))
    x = rng.normal(0, 50, d) + rng.exponential(30, d) * (rng.random(d) < 0.2)
    total = float(rng.choice([max(1.0, np.maximum(x, 0).sum() * f) for f in (0.3, 0.9, 1.0, 1.7)]))
    if not np.any(x > 0):
        x[0] = 1.0
    got = norm_sub(x, total)
    want = literal_norm_sub(x, total)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-7)
    assert got.sum() == pytest.approx(total, rel=1e-12)
    assert np.all(got >= 0)
    assert np.all(got[x <= 0] == 0)  # Norm-Sub never raises a clipped item


@pytest.mark.parametrize("seed", range(20))
def test_project_simplex_is_the_projection(seed):
    rng = np.random.default_rng(100 + seed)
    d = int(rng.integers(1, 400))
    x = rng.normal(0, 20, d) * rng.choice([0.01, 1, 100])
    total = float(rng.choice([0.5, 10.0, abs(x).sum() + 3, 1e6]))
    y = project_simplex(x, total)
    check_projection(x, y, total)


def test_norm_sub_equals_projection_when_positives_exceed_the_total():
    rng = np.random.default_rng(7)
    x = rng.normal(10, 30, 500)
    total = 0.5 * np.maximum(x, 0).sum()
    np.testing.assert_allclose(norm_sub(x, total), project_simplex(x, total), rtol=1e-12, atol=1e-9)


def test_they_differ_when_positives_fall_short():
    x = np.array([5.0, 3.0, -0.5, -4.0])
    ns, pr = norm_sub(x, 20.0), project_simplex(x, 20.0)
    assert ns[2] == 0 and pr[2] > 0
    assert ns.sum() == pytest.approx(20) and pr.sum() == pytest.approx(20)


def test_clip_nonnegative_and_inputs_untouched():
    x = np.array([3, -2, 0, 7], dtype=np.int32)
    y = clip_nonnegative(x)
    assert y.dtype == np.float64 and list(y) == [3, 0, 0, 7]
    assert list(x) == [3, -2, 0, 7]
    strided = np.arange(-10.0, 10.0)[::3]
    np.testing.assert_array_equal(clip_nonnegative(strided), np.maximum(strided, 0))


def test_zero_total_and_empty():
    assert list(project_simplex([1.0, 2.0], 0)) == [0.0, 0.0]
    assert list(norm_sub([1.0, 2.0], 0)) == [0.0, 0.0]
    assert project_simplex(np.zeros(0), 0).size == 0
    assert norm_sub([], 0).size == 0


@pytest.mark.parametrize("fn", [norm_sub, project_simplex])
@pytest.mark.parametrize("est,total,exc,word", [
    ([1.0, np.nan], 3, ValueError, "finite"),
    ([[1.0, 2.0]], 3, ValueError, "1-D"),
    (["a", "b"], 3, TypeError, "dtype"),
    ([True, False], 3, TypeError, "dtype"),
    ([1.0, 2.0], -1, ValueError, "total"),
    ([1.0, 2.0], float("inf"), ValueError, "total"),
    ([1.0, 2.0], "5", TypeError, "total"),
    ([1.0, 2.0], None, TypeError, "total"),
    ([], 3, ValueError, "total"),
])
def test_bad_input(fn, est, total, exc, word):
    with pytest.raises(exc, match=word):
        fn(est, total)


def test_norm_sub_without_positive_estimates_says_so():
    with pytest.raises(ValueError, match="no estimate is positive"):
        norm_sub([-1.0, -2.0], 5)


def test_on_a_real_aggregator():
    fo = dpnoise.ldp.FrequencyOracle("grr", epsilon=1.0, domain_size=50)
    rng = dpnoise.default_rng(3)
    items = np.random.default_rng(3).zipf(1.5, 20000) % 50
    agg = fo.aggregator().add(fo.client(rng, allow_insecure=True).privatize(items))
    raw = agg.estimate()
    assert np.any(raw < 0)  # the reason these exist
    for y in (norm_sub(raw, agg.n), project_simplex(raw, agg.n)):
        assert y.sum() == pytest.approx(agg.n) and np.all(y >= 0)
    # consistency improves the error on this skewed input (a property the paper reports)
    true = np.bincount(items, minlength=50)
    assert np.abs(norm_sub(raw, agg.n) - true).sum() < np.abs(raw - true).sum()
