"""Property tests of accounting over wide inputs (issue #10): loss descriptors, Accountant
compose / get_epsilon / get_delta, calibrate, PrivacyBudget.spend / from_dict.

Results are valid (ε ≥ 0 or ∞, δ in [0, 1]) or an allowed error; a failed spend leaves the
budget untouched, and a failed compose leaves the accountant untouched.
"""
from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dpnoise import accounting as A
from property_inputs import (
    PROFILE, budget_state, outcome, scalars, small_positive, with_edge_examples,
)

POS = st.one_of(small_positive(), small_positive(), scalars())
KINDS = st.one_of(st.sampled_from(["basic", "advanced", "zcdp", "rdp", "pld"]), scalars())
NEIGHBOURS = st.one_of(st.sampled_from(["add_remove", "replace"]), scalars())
COUNT = st.one_of(st.integers(1, 5), st.sampled_from([0, -1, 2**62, 2**64, True, 1.5, None, "2"]))

# Loss descriptors with valid-ish and wide arguments (construction may fail: that is tested too).
LOSS_BUILDERS = st.one_of(
    st.builds(A.PureDP, POS),
    st.builds(A.ApproxDP, POS, st.one_of(st.sampled_from([0.0, 1e-6]), scalars())),
    st.builds(A.ZCDP, POS),
    st.builds(A.Laplace, POS, POS),
    st.builds(A.DiscreteLaplace, POS, st.one_of(st.integers(1, 3), scalars())),
    st.builds(A.Gaussian, POS, POS),
    st.builds(A.DiscreteGaussian, POS, st.one_of(st.integers(1, 3), scalars())),
    st.builds(A.RandomizedResponse, POS, st.one_of(st.integers(2, 5), scalars())),
    st.builds(A.RDP, st.one_of(st.just((2.0, 4.0)), st.tuples(scalars(), scalars())),
              st.one_of(st.just((0.1, 0.3)), st.tuples(scalars(), scalars()))),
    st.builds(A.ReportNoisyMax, POS),
)


@st.composite
def losses(draw: Any) -> Any:
    """A loss descriptor, or whatever its constructor raised (an allowed error)."""
    ok, res = outcome(lambda: draw(LOSS_BUILDERS))
    if ok and draw(st.booleans()) and draw(st.booleans()):
        ok2, sub = outcome(lambda: A.PoissonSampled(res, draw(st.one_of(st.sampled_from([0.01, 0.5, 1.0]), scalars()))))
        if ok2:
            return sub
    return res if ok else None


def _valid_epsilon(e: Any) -> None:
    assert isinstance(e, float) and not math.isnan(e) and e >= 0


def _valid_delta(d: Any) -> None:
    assert isinstance(d, float) and 0.0 <= d <= 1.0


@PROFILE
@given(loss=losses(), kind=KINDS, neighbours=NEIGHBOURS, count=COUNT,
       delta=st.one_of(st.sampled_from([0.0, 1e-6, 0.5]), scalars()),
       epsilon=st.one_of(st.sampled_from([0.0, 1.0, 10.0]), scalars()))
def test_accountant_compose_and_read(loss, kind, neighbours, count, delta, epsilon):
    made, acc = outcome(lambda: A.Accountant(kind, neighbours))
    if not made:
        return
    events = acc.events
    ok, res = outcome(lambda: acc.compose(loss, count))
    if not ok:
        assert acc.events == events, "a failed compose changed the accountant"
    ok, eps = outcome(lambda: acc.get_epsilon(delta))
    if ok:
        _valid_epsilon(eps)
    ok, dlt = outcome(lambda: acc.get_delta(epsilon))
    if ok:
        _valid_delta(dlt)


@PROFILE
@with_edge_examples(lambda v: {"family": "laplace", "epsilon": v, "delta": 0.0, "count": 1,
                               "accountant": "basic", "sensitivity": 1.0, "rate": None})
@with_edge_examples(lambda v: {"family": "gaussian", "epsilon": 1.0, "delta": v, "count": 1,
                               "accountant": "zcdp", "sensitivity": 1.0, "rate": None})
@with_edge_examples(lambda v: {"family": "discrete_laplace", "epsilon": 1.0, "delta": 0.0, "count": 1,
                               "accountant": "basic", "sensitivity": v, "rate": None})
@given(family=st.one_of(st.sampled_from(["laplace", "discrete_laplace", "gaussian", "discrete_gaussian",
                                         "pure", "randomized_response"]), scalars()),
       epsilon=POS, delta=st.one_of(st.sampled_from([0.0, 1e-6]), scalars()), count=COUNT,
       accountant=st.sampled_from(["basic", "advanced", "zcdp", "rdp"]), sensitivity=POS,
       rate=st.one_of(st.none(), st.sampled_from([0.01, 1.0]), scalars()))
def test_calibrate(family, epsilon, delta, count, accountant, sensitivity, rate):
    ok, res = outcome(lambda: A.calibrate(family, epsilon, delta, count, accountant,
                                          sensitivity=sensitivity, sampling_rate=rate))
    if ok:
        assert isinstance(res, float) and res > 0 and math.isfinite(res)


@PROFILE
@with_edge_examples(lambda v: {"loss": A.PureDP(0.5), "count": v, "budget_eps": 1.0, "kind": "basic"},
                    edge=[0, -1, 2**62, 2**64, True, 1.5, None, "2", 10**400])
@given(loss=losses(), count=COUNT, budget_eps=st.one_of(st.sampled_from([0.5, 5.0, math.inf]), scalars()),
       kind=st.sampled_from(["basic", "zcdp", "rdp"]))
def test_budget_spend_is_all_or_nothing(loss, count, budget_eps, kind):
    made, budget = outcome(lambda: A.PrivacyBudget(budget_eps, 1e-6, accountant=kind))
    if not made:
        return
    before = budget_state(budget)
    ok, res = outcome(lambda: budget.spend(loss, count, label="property"))
    if ok:
        assert len(budget.ledger) == before[0] + 1
        assert budget.spent_epsilon <= budget.epsilon * (1 + 1e-9)
    else:
        assert budget_state(budget) == before, f"a refused spend ({res!r}) changed the budget"


LEDGER_ENTRY = st.fixed_dictionaries(
    {"loss": st.one_of(st.just({"type": "PureDP", "epsilon": 0.5}),
                       st.dictionaries(st.sampled_from(["type", "epsilon", "delta", "scale", "sigma"]),
                                       st.one_of(scalars(), st.sampled_from(["PureDP", "Gaussian", "Nope"])),
                                       max_size=3),
                       scalars()),
     "count": COUNT},
    optional={"label": st.one_of(st.none(), st.text(max_size=3), scalars())})

BUDGET_DICT = st.fixed_dictionaries(
    {},
    optional={"epsilon": POS, "delta": st.one_of(st.just(1e-6), scalars()),
              "accountant": st.one_of(st.sampled_from(["basic", "pld", "zcdp"]), scalars()),
              "neighbours": NEIGHBOURS,
              "value_discretization_interval": st.one_of(st.just(1e-4), scalars()),
              "ledger": st.one_of(st.lists(LEDGER_ENTRY, max_size=3), scalars(), st.just([]))})


@PROFILE
@with_edge_examples(lambda v: {"data": v}, edge=[{}, [], None, "x", 1, {"epsilon": 1.0},
                                                 {"epsilon": 1.0, "delta": 0.0, "accountant": "basic"},
                                                 {"epsilon": 1.0, "delta": 0.0, "accountant": "basic",
                                                  "ledger": [{"loss": {"type": "PureDP", "epsilon": 0.5}}]}])
@given(data=st.one_of(BUDGET_DICT, scalars()))
def test_budget_from_dict(data):
    ok, res = outcome(lambda: A.PrivacyBudget.from_dict(data))
    if ok:
        assert isinstance(res, A.PrivacyBudget)
        assert res.spent_epsilon <= res.epsilon * (1 + 1e-9) or math.isinf(res.epsilon)
        again = A.PrivacyBudget.from_dict(res.to_dict())  # a loaded budget round-trips
        assert again.ledger == res.ledger
