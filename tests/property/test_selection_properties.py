"""Property tests of report-noisy-max over wide inputs (issue #11): any scores (odd dtypes,
strides, shapes, NaN), any epsilon / sensitivity / k / axis / noise / threads. A call either
returns valid indices (in range, distinct within each row, one budget charge) or raises an
allowed error naming the problem, leaving the budget and the generator's streams untouched."""
from __future__ import annotations

from typing import Any, Dict

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import dpnoise
from dpnoise.accounting import PrivacyBudget
from property_inputs import (
    ALLOWED, PROFILE, arrays_wide, assert_same_stream, budget_state, outcome, scalars, small_positive,
    threads, twin_generators, with_edge_examples,
)

KWARGS = st.fixed_dictionaries(
    {"epsilon": st.one_of(small_positive(), scalars())},
    optional={"sensitivity": st.one_of(small_positive(), scalars()),
              "noise": st.sampled_from(["exponential", "gumbel", "laplace", "other"]),
              "k": st.one_of(st.integers(0, 4), scalars()),
              "axis": st.one_of(st.integers(-3, 2), scalars()),
              "monotonic": st.sampled_from([True, False, 1, None]),
              "disjoint_rows": st.sampled_from([True, False]),
              "threads": threads()})


def _check(kwargs: Dict[str, Any], scores: Any) -> None:
    rng, witness = twin_generators()
    budget = PrivacyBudget(1e9, 0.5, accountant="basic")
    made, mech = outcome(lambda: dpnoise.ReportNoisyMax(**kwargs, rng=rng, budget=budget, allow_insecure=True))
    if not made:
        assert isinstance(mech, ALLOWED), f"{type(mech).__name__}: {mech}"
        assert_same_stream(rng, witness)
        return
    before = budget_state(budget)
    ok, res = outcome(lambda: mech.release(scores))
    if not ok:
        assert isinstance(res, ALLOWED), f"{type(res).__name__}: {res}"
        assert budget_state(budget) == before, "a failed release changed the budget"
        assert_same_stream(rng, witness)
        return
    assert len(budget.ledger) == before[0] + 1, "a release must be charged exactly once"
    arr = np.asarray(scores)
    view = arr[None, :] if arr.ndim == 1 else (arr if mech.axis % 2 == 1 else arr.T)
    out = np.asarray(res).reshape(view.shape[0], -1)
    assert out.shape[1] == mech.k and out.dtype.kind == "i"
    assert ((out >= 0) & (out < view.shape[1])).all()
    assert all(len(set(row.tolist())) == mech.k for row in out)


@PROFILE
@with_edge_examples(lambda v: {"kwargs": {"epsilon": 1.0}, "scores": v})
@with_edge_examples(lambda v: {"kwargs": {"epsilon": v}, "scores": np.array([1, 2, 3])})
@with_edge_examples(lambda v: {"kwargs": {"epsilon": 1.0, "k": v}, "scores": np.array([1, 2, 3])})
@given(kwargs=KWARGS, scores=st.one_of(arrays_wide(), st.lists(st.integers(-5, 5), max_size=5)))
def test_report_noisy_max_release(kwargs: Dict[str, Any], scores: Any) -> None:
    _check(kwargs, scores)
