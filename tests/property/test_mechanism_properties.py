"""Property tests of the mechanisms over wide inputs (issue #10).

Constructors accept or refuse any argument with an allowed error; ``release`` returns a valid
answer and charges the budget once, or fails and leaves the budget and the generator's stream
untouched (everything that can fail is checked before the charge, the charge comes before noise).
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Dict

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import dpnoise
from dpnoise import mechanisms as M
from dpnoise.accounting import PrivacyBudget
from property_inputs import (
    PROFILE, assert_same_stream, budget_state, insecure_ok, outcome, scalars,
    small_positive, twin_generators, values, with_edge_examples,
)

POSITIVE_OR_WIDE = st.one_of(small_positive(), small_positive(), scalars())
DELTA = st.one_of(st.sampled_from([1e-6, 1e-3, 0.1]), scalars())

# name -> (constructor(kwargs) -> mechanism, strategy of constructor kwargs)
MECHANISMS: Dict[str, Any] = {
    "LaplaceMechanism": (M.LaplaceMechanism, st.fixed_dictionaries(
        {"epsilon": POSITIVE_OR_WIDE, "sensitivity": POSITIVE_OR_WIDE},
        optional={"delta": DELTA, "granularity": st.one_of(st.none(), scalars(), st.sampled_from([2.0**-10, 1.0]))})),
    "DiscreteLaplaceMechanism": (M.DiscreteLaplaceMechanism, st.fixed_dictionaries(
        {"epsilon": POSITIVE_OR_WIDE, "sensitivity": st.one_of(st.integers(1, 5), scalars())},
        optional={"delta": DELTA})),
    "GeometricMechanism": (M.GeometricMechanism, st.fixed_dictionaries(
        {"epsilon": POSITIVE_OR_WIDE, "sensitivity": st.one_of(st.integers(1, 5), scalars())})),
    "GaussianMechanism": (M.GaussianMechanism, st.one_of(
        st.fixed_dictionaries({"epsilon": POSITIVE_OR_WIDE, "delta": DELTA},
                              optional={"sensitivity": POSITIVE_OR_WIDE,
                                        "calibration": st.sampled_from(["analytic", "classic", "seed", "nope", None])}),
        st.fixed_dictionaries({"rho": POSITIVE_OR_WIDE}, optional={"sensitivity": POSITIVE_OR_WIDE}))),
    "DiscreteGaussianMechanism": (M.DiscreteGaussianMechanism, st.one_of(
        st.fixed_dictionaries({"epsilon": POSITIVE_OR_WIDE, "delta": DELTA},
                              optional={"sensitivity": st.one_of(st.integers(1, 5), scalars()),
                                        "coordinates": st.one_of(st.integers(1, 5), scalars())}),
        st.fixed_dictionaries({"rho": POSITIVE_OR_WIDE}))),
    "RandomizedResponse": (M.RandomizedResponse, st.fixed_dictionaries(
        {"epsilon": POSITIVE_OR_WIDE, "categories": st.one_of(st.integers(2, 6), scalars())})),
    "Histogram": (M.Histogram, st.fixed_dictionaries(
        {"epsilon": POSITIVE_OR_WIDE},
        optional={"categories": st.one_of(st.integers(1, 6), scalars()),
                  "neighbours": st.sampled_from(["add_remove", "replace", "other", None]),
                  "noise": st.sampled_from(["laplace", "gaussian", "x"]), "delta": DELTA})),
    "PrivateKDE": (M.PrivateKDE, st.fixed_dictionaries(
        {"epsilon": POSITIVE_OR_WIDE, "delta": DELTA, "bandwidth": POSITIVE_OR_WIDE,
         "grid": st.one_of(values(), st.just(np.linspace(0, 1, 5)))})),
}

BUDGET = st.sampled_from([("basic", 1e9, 0.5), ("zcdp", 1e9, 0.5), ("rdp", 1e9, 0.5),
                          ("basic", 1e-3, 1e-9), ("zcdp", 0.05, 1e-9)])


def _make(name: str, kwargs: Dict[str, Any], budget: Any, rng: dpnoise.Generator) -> Any:
    cls = M.__dict__[name]
    return cls(**kwargs, rng=rng, budget=budget, **insecure_ok(cls))


def _check_release(name: str, kwargs: Dict[str, Any], budget_args: Any, value: Any) -> None:
    kind, eps, delta = budget_args
    rng, witness = twin_generators()
    budget = PrivacyBudget(eps, delta, accountant=kind)
    made, mech = outcome(lambda: _make(name, kwargs, budget, rng))
    if not made:
        assert_same_stream(rng, witness)
        return
    before = budget_state(budget)
    ok, res = outcome(lambda: mech.release(value))
    if ok:
        assert len(budget.ledger) == before[0] + 1, "a release must be charged exactly once"
        arr = np.asarray(res)
        assert arr.dtype != object
        if np.issubdtype(arr.dtype, np.floating):
            assert np.isfinite(arr).all(), "a release returned NaN or infinity"
        if name not in ("Histogram", "PrivateKDE", "RandomizedResponse"):
            assert np.shape(res) == np.shape(value)
        return
    assert budget_state(budget) == before, f"failed release ({type(res).__name__}: {res}) changed the budget"
    assert_same_stream(rng, witness)


def _valid_value(name: str) -> np.ndarray:
    if name.startswith("Discrete") or name in ("RandomizedResponse", "Histogram", "GeometricMechanism"):
        return np.array([0, 1, 1])
    return np.array([0.25, 0.5, 0.75])


def _edge_fields(name: str) -> Callable[[Any], Any]:
    """Explicit examples: each constructor field of a valid mechanism set to each edge value, with
    a valid query (a bad parameter must fail before the charge and before any noise)."""
    fields = [f for f in ("epsilon", "delta", "sensitivity", "categories", "bandwidth", "granularity")
              if f in inspect.signature(M.__dict__[name]).parameters]

    def deco(fn: Any) -> Any:
        for f in fields:
            fn = with_edge_examples(lambda v, f=f: {"kwargs": {**_valid_kwargs(name), f: v},
                                                    "budget_args": ("rdp", 1e9, 0.5),
                                                    "value": _valid_value(name)})(fn)
        return fn
    return deco


def _mechanism_test(name: str) -> Callable[..., None]:
    @PROFILE
    @with_edge_examples(lambda v: {"kwargs": _valid_kwargs(name), "budget_args": ("basic", 1e9, 0.5), "value": v})
    @_edge_fields(name)
    @given(kwargs=MECHANISMS[name][1], budget_args=BUDGET, value=values())
    def test(kwargs: Dict[str, Any], budget_args: Any, value: Any) -> None:
        _check_release(name, kwargs, budget_args, value)
    test.__name__ = f"test_{name}_release"
    return test


def _valid_kwargs(name: str) -> Dict[str, Any]:
    return {
        "LaplaceMechanism": {"epsilon": 1.0},
        "DiscreteLaplaceMechanism": {"epsilon": 1.0},
        "GeometricMechanism": {"epsilon": 1.0},
        "GaussianMechanism": {"epsilon": 1.0, "delta": 1e-6},
        "DiscreteGaussianMechanism": {"epsilon": 1.0, "delta": 1e-6},
        "RandomizedResponse": {"epsilon": 1.0, "categories": 3},
        "Histogram": {"epsilon": 1.0, "categories": 4},
        "PrivateKDE": {"epsilon": 1.0, "delta": 1e-6, "bandwidth": 1.0, "grid": np.linspace(0, 1, 5)},
    }[name]


test_LaplaceMechanism_release = _mechanism_test("LaplaceMechanism")
test_DiscreteLaplaceMechanism_release = _mechanism_test("DiscreteLaplaceMechanism")
test_GeometricMechanism_release = _mechanism_test("GeometricMechanism")
test_GaussianMechanism_release = _mechanism_test("GaussianMechanism")
test_DiscreteGaussianMechanism_release = _mechanism_test("DiscreteGaussianMechanism")
test_RandomizedResponse_release = _mechanism_test("RandomizedResponse")
test_Histogram_release = _mechanism_test("Histogram")
test_PrivateKDE_release = _mechanism_test("PrivateKDE")


@PROFILE
@with_edge_examples(lambda v: {"name": "LaplaceMechanism", "field": "epsilon", "bad": v})
@with_edge_examples(lambda v: {"name": "GaussianMechanism", "field": "delta", "bad": v})
@with_edge_examples(lambda v: {"name": "LaplaceMechanism", "field": "sensitivity", "bad": v})
@with_edge_examples(lambda v: {"name": "DiscreteLaplaceMechanism", "field": "sensitivity", "bad": v})
@given(name=st.sampled_from(sorted(MECHANISMS)), field=st.sampled_from(["epsilon", "delta", "sensitivity"]),
       bad=scalars())
def test_constructor_errors_name_the_argument(name, field, bad):
    """One bad argument among valid ones: refused with a message naming it, or accepted."""
    kwargs = dict(_valid_kwargs(name))
    if field == "sensitivity" and name in ("RandomizedResponse", "Histogram", "PrivateKDE"):
        return
    if field == "delta" and name in ("RandomizedResponse", "GeometricMechanism"):
        return
    kwargs[field] = bad
    rng, _ = twin_generators()
    cls = M.__dict__[name]
    ok, res = outcome(lambda: cls(**kwargs, rng=rng, **insecure_ok(cls)))
    if not ok:
        assert field in str(res), \
            f"{type(res).__name__} does not name {field}: {res}"



# -- issue 23/24: the grid mechanisms read inputs by type, never by magnitude -------------------
from hypothesis import strategies as _st  # noqa: E402

from test_selection_properties import KINDS, PARTS, _same_length, _same_outcome_both_sizes  # noqa: E402

GRID_CALLS = {
    "LaplaceMechanism": lambda s, b: dpnoise.LaplaceMechanism(
        1.0, rng=dpnoise.default_rng(7), budget=b, allow_insecure=True)(s),
    "GaussianMechanism": lambda s, b: dpnoise.GaussianMechanism(
        rho=0.5, rng=dpnoise.default_rng(7), budget=b, allow_insecure=True)(s),
    "GaussianMechanism_dpsgd_out": lambda s, b: _into(dpnoise.GaussianMechanism(
        noise_multiplier=1.1, rng=dpnoise.default_rng(7), budget=b, allow_insecure=True), s),
}


def _into(mech, s):
    x = np.asarray(s) if isinstance(s, np.ndarray) else s
    out = np.empty(len(s), dtype=np.float32 if getattr(x, "dtype", None) == np.float32 else np.float64)
    return mech(x, out=out)


@PROFILE
@given(data=_st.data(), entry=_st.sampled_from(sorted(GRID_CALLS)), kind=_st.sampled_from(KINDS), small=PARTS)
def test_grid_mechanism_exception_does_not_depend_on_magnitudes(data, entry, kind, small):
    large = data.draw(_same_length(small))
    _same_outcome_both_sizes(GRID_CALLS[entry], kind, small, large)
