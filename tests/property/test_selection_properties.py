"""Property tests of report-noisy-max over wide inputs (issue #11): any scores (odd dtypes,
strides, shapes, NaN), any epsilon / sensitivity / k / axis / noise / threads. A call either
returns valid indices (in range, distinct within each row, one budget charge) or raises an
allowed error naming the problem, leaving the budget and the generator's streams untouched."""
from __future__ import annotations

from typing import Any, Dict

import numpy as np
import pytest
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


# -- issue 23: the exception type, or its absence, does not depend on the magnitude of the scores;
# -- nothing is charged when a call raises. One test per public entry point of selection.
KINDS = ["pyint", "pyfloat", "bool", "int8", "int64", "uint64", "float16", "float32", "float64", "longdouble",
         "timedelta64", "datetime64"]
# one value: (negative, level in [0, 1]): its magnitude is level of the way (log scale) to the kind's largest
PARTS = st.lists(st.tuples(st.booleans(), st.floats(0.0, 1.0)), min_size=1, max_size=5)


def _build(kind: str, parts: Any) -> Any:
    """A score vector of this kind whose magnitudes follow ``parts`` (NaN and infinity excluded:
    their exception depends on the data by design, docs/security.md)."""
    with np.errstate(all="ignore"):
        if kind == "pyint":
            return [(-1 if neg else 1) * int(2 ** (lv * 100)) for neg, lv in parts]
        if kind == "pyfloat":
            return [(-1.0 if neg else 1.0) * 2.0 ** (lv * 1023) for neg, lv in parts]
        if kind == "bool":
            return np.array([lv > 0.5 for _, lv in parts])
        if kind in ("int8", "int64", "uint64", "timedelta64", "datetime64"):
            info = np.iinfo(np.int64 if kind in ("timedelta64", "datetime64") else kind)
            vals = []
            for neg, lv in parts:
                v = min(int(2 ** (lv * info.bits)), int(info.max))
                vals.append(max(-v, int(info.min) + 1) if neg and info.min < 0 else v)  # int64 min is NaT
            if kind in ("timedelta64", "datetime64"):
                return np.array(vals, dtype=np.int64).astype(kind + "[s]")
            return np.array(vals, dtype=kind)
        dt = np.dtype(kind)
        top = np.log2(np.finfo(dt).max.astype(np.longdouble))
        vals = [np.exp2(np.longdouble(lv) * top) * (-1 if neg else 1) for neg, lv in parts]
        return np.clip(np.array(vals, dtype=np.longdouble), -np.finfo(dt).max, np.finfo(dt).max).astype(dt)


def _same_outcome_both_sizes(call: Any, kind: str, small: Any, large: Any) -> None:
    """``call(scores, budget)`` on two score vectors of one kind and length: the same exception
    type (or none), and an unchanged budget whenever it raises."""
    kinds = []
    for parts in (small, large):
        budget = PrivacyBudget(1e9, 0.5, accountant="basic")
        before = budget_state(budget)
        ok, res = outcome(lambda p=parts, b=budget: call(_build(kind, p), b))
        if not ok:
            assert isinstance(res, ALLOWED), f"{type(res).__name__}: {res}"
            assert budget_state(budget) == before, "a call that raised charged the budget"
        kinds.append(None if ok else type(res))
    assert kinds[0] is kinds[1], f"{kind}: {kinds[0]} for {small}, {kinds[1]} for {large}"


def _same_length(parts: Any) -> Any:
    return st.lists(st.tuples(st.booleans(), st.floats(0.0, 1.0)), min_size=len(parts), max_size=len(parts))


SELECTION_CALLS = {
    "report_noisy_max": lambda s, b: dpnoise.report_noisy_max(
        s, 1.0, rng=dpnoise.default_rng(7), allow_insecure=True),
    "ReportNoisyMax": lambda s, b: dpnoise.ReportNoisyMax(
        1.0, rng=dpnoise.default_rng(7), budget=b, allow_insecure=True).release(s),
    "ReportNoisyMax_matrix": lambda s, b: dpnoise.ReportNoisyMax(
        1.0, noise="laplace", axis=0, rng=dpnoise.default_rng(7), budget=b, allow_insecure=True).release(
        np.stack([np.asarray(s)] * 2, axis=1) if isinstance(s, np.ndarray) else [[v, v] for v in s]),
    "ExponentialMechanism.select": lambda s, b: dpnoise.ExponentialMechanism(
        1.0, rng=dpnoise.default_rng(7), budget=b, allow_insecure=True).select(list(range(len(s))), s),
    "AboveThreshold": lambda s, b: dpnoise.AboveThreshold(
        1.0, 0.0, rng=dpnoise.default_rng(7), budget=b, allow_insecure=True).release(s),
}


def _session_test(s: Any, b: PrivacyBudget) -> Any:
    own = PrivacyBudget(1e9, 0.5, accountant="basic")  # start() charges this one; test() must charge nothing
    session = dpnoise.AboveThreshold(1.0, 0.0, max_positives=10, rng=dpnoise.default_rng(7), budget=own,
                                     allow_insecure=True).start()
    spent = budget_state(own)
    ok, res = outcome(lambda: session.test(s[0]))
    assert budget_state(own) == spent, "session.test charged the budget"
    if not ok:
        raise res
    return res


SELECTION_CALLS["AboveThresholdSession.test"] = _session_test


@PROFILE
@given(data=st.data(), entry=st.sampled_from(sorted(SELECTION_CALLS)), kind=st.sampled_from(KINDS),
       small=PARTS)
def test_selection_exception_does_not_depend_on_magnitudes(data: Any, entry: str, kind: str, small: Any) -> None:
    large = data.draw(_same_length(small))
    _same_outcome_both_sizes(SELECTION_CALLS[entry], kind, small, large)


@pytest.mark.parametrize("entry", sorted(SELECTION_CALLS))
@pytest.mark.parametrize("kind", KINDS)
def test_selection_extreme_magnitudes_same_outcome(entry: str, kind: str) -> None:
    """The corners hypothesis may miss: every value tiny against every value the largest."""
    _same_outcome_both_sizes(SELECTION_CALLS[entry], kind, [(False, 0.0), (True, 0.0)], [(False, 1.0), (True, 1.0)])
    _same_outcome_both_sizes(SELECTION_CALLS[entry], kind, [(False, 0.1), (False, 0.2)], [(True, 1.0), (False, 0.99)])
