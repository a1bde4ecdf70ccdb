"""Regression tests for issue 23, defects 5-7 (selection): every check that can fail runs before
the budget is charged, and the exception (or its absence) depends on the types of the scores,
never on their magnitudes. Each test here failed on main before the fix."""
from __future__ import annotations

import numpy as np
import pytest

import dpnoise
from dpnoise.accounting import PrivacyBudget

TIMES = [np.array([1, 2, 3], dtype="timedelta64[s]"), np.array([1, 2, 3], dtype="datetime64[D]")]


def _budget() -> PrivacyBudget:
    return PrivacyBudget(epsilon=100.0)


def _rnm(budget: PrivacyBudget, **kw) -> dpnoise.ReportNoisyMax:
    return dpnoise.ReportNoisyMax(1.0, rng=dpnoise.default_rng(1), budget=budget, allow_insecure=True, **kw)


def _svt(budget: PrivacyBudget) -> dpnoise.AboveThreshold:
    return dpnoise.AboveThreshold(1.0, 2.0, rng=dpnoise.default_rng(1), budget=budget, allow_insecure=True)


# -- defect 5: refused before the charge, with one exception type -------------------------------
@pytest.mark.parametrize("scores", TIMES, ids=["timedelta64", "datetime64"])
def test_report_noisy_max_refuses_times_before_the_charge(scores):
    budget = _budget()
    with pytest.raises(TypeError, match="scores must be numeric"):
        _rnm(budget).release(scores)
    assert len(budget.ledger) == 0 and budget.spent_epsilon == 0


@pytest.mark.parametrize("scores", TIMES, ids=["timedelta64", "datetime64"])
def test_above_threshold_refuses_times_before_the_charge(scores):
    budget = _budget()
    with pytest.raises(TypeError, match="queries must be numeric"):
        _svt(budget).release(scores)
    with pytest.raises(TypeError, match="must be numeric"):
        _svt(budget).start().test(scores[0])
    assert len(budget.ledger) == 1  # only the session's own charge (start()), none for the refusals


def test_more_than_2_32_minus_1_candidates_refused_before_the_charge():
    many = np.broadcast_to(np.int8(1), (1 << 32,))  # a stride-0 view: no memory
    budget = _budget()
    with pytest.raises(ValueError, match="at most 2\\^32 - 1"):
        _rnm(budget).release(many)
    with pytest.raises(ValueError, match="at most 2\\^32 - 1"):
        _rnm(budget, axis=0).release(many[:, None])
    with pytest.raises(ValueError, match="at most 2\\^32 - 1"):
        _rnm(budget).privacy_loss((1 << 32,))
    with pytest.raises(ValueError, match="at most 2\\^32 - 1"):
        _svt(budget).release(many)
    assert len(budget.ledger) == 0 and budget.spent_epsilon == 0


# -- defect 6: Python ints are converted exactly, whatever their size ---------------------------
@pytest.mark.parametrize("scores", [[5, 6], [2**64, 6], [-2**63 - 1, 0], [2**63, 6], [2**63, -1], [10**30, -10**30]])
def test_python_int_scores_take_the_integer_path(scores):
    budget = _budget()
    mech = _rnm(budget)
    prepared, _, dtype = mech._prepare(scores)
    assert np.dtype(dtype) == np.int64 and prepared.dtype == np.int64
    assert int(mech.release(scores)) in (0, 1)
    assert isinstance(budget.ledger[-1], object) and len(budget.ledger) == 1
    assert dpnoise.report_noisy_max(scores, 1.0, rng=dpnoise.default_rng(2), allow_insecure=True) in (0, 1)


def test_python_ints_beyond_the_clamp_equal_the_clamp():
    # the integer path clamps to +-2^61: scores beyond it select exactly as the clamp does
    big = [2**63, -(2**70), 3]
    clamped = [2**61, -(2**61), 3]
    a = dpnoise.report_noisy_max([big] * 50, 1.0, rng=dpnoise.default_rng(5), allow_insecure=True)
    b = dpnoise.report_noisy_max([clamped] * 50, 1.0, rng=dpnoise.default_rng(5), allow_insecure=True)
    assert np.array_equal(a, b)


def test_above_threshold_python_ints_take_the_integer_path():
    mech = _svt(_budget())
    for queries in ([1, 2], [2**63, -1], [2**64, 0]):
        _, _, dtype = mech._prepare(queries)
        assert np.dtype(dtype) == np.int64
        mech.release(queries)


def test_laplace_mechanism_python_ints_take_the_integer_path():
    mech = dpnoise.LaplaceMechanism(1.0, rng=dpnoise.default_rng(3), allow_insecure=True)
    for values in ([1, 2], [2**63, -1], [2**64, 1]):
        out = mech(values)
        assert out.dtype == np.int64, values


# -- defect 7: a finite longdouble above the largest double is clamped, not "NaN or infinity" ----
def test_finite_longdouble_beyond_float64_is_clamped():
    if np.finfo(np.longdouble).max <= np.finfo(np.float64).max:
        pytest.skip("longdouble is float64 on this platform")
    huge = np.array([np.longdouble(10) ** 400, 1, -np.longdouble(10) ** 400], dtype=np.longdouble)
    assert dpnoise.report_noisy_max(huge, 1.0, rng=dpnoise.default_rng(1), allow_insecure=True) == 0
    assert list(_svt(_budget()).release(huge)) == [0]
    out = dpnoise.LaplaceMechanism(1.0, rng=dpnoise.default_rng(1), allow_insecure=True)(huge)
    assert out.dtype == np.float64 and out[0] > 1e11 and out[2] < -1e11  # the grid clamp 2^(52+k)
    for bad in (np.inf, np.nan):
        with pytest.raises(ValueError, match="finite"):
            dpnoise.report_noisy_max(np.array([bad, 1], dtype=np.longdouble), 1.0,
                                     rng=dpnoise.default_rng(1), allow_insecure=True)
