"""No audit reports a bound above the truth with probability > alpha.

Design. Mechanisms whose ε is known exactly and attained by some event:
* DiscreteLaplaceMechanism(ε = 1) on 0 vs 1: exact sampler, scale exactly 1/ε, and every tail
  event {y >= m}, m >= 1, has likelihood ratio exactly e^ε (many near-tight events: the event
  choice is tempted to overfit);
* RandomizedResponse(ε = 1, 2 categories): exact sampler with ε rounded down to a multiple of
  2^-62 (``mech.epsilon`` is that value), attained by {y = 1}.
R independent audits (distinct seeds for the mechanism and the split) at level α each. If every
bound holds with probability >= 1 - α, the number X of bounds above the truth is stochastically
at most Binomial(R, α). The test fails when X > c, with c the least value such that
P(Binomial(R, α) > c) <= 1e-3: false-alarm rate of each test <= 1e-3.

Power: the plug-in estimate ln(k_fav/k_other) on the same held-out counts (no confidence
bound) lands above the truth about half the time; the same statistic must flag it (X > c).
"""
import pytest

import dpnoise
from dpnoise.audit import epsilon_lower_bound

stats = pytest.importorskip("scipy.stats")

RUNS = 200
TRIALS = 6000
FALSE_ALARM = 1e-3


def critical_value(runs, alpha):
    """Least c with P(Binomial(runs, alpha) > c) <= FALSE_ALARM."""
    c = 0
    while stats.binom.sf(c, runs, alpha) > FALSE_ALARM:
        c += 1
    return c


def mechanisms():
    return {
        "discrete_laplace": lambda seed: dpnoise.DiscreteLaplaceMechanism(
            1.0, rng=dpnoise.default_rng(seed), allow_insecure=True),
        "randomized_response": lambda seed: dpnoise.RandomizedResponse(
            1.0, 2, rng=dpnoise.default_rng(seed), allow_insecure=True),
    }


@pytest.mark.parametrize("name", ["discrete_laplace", "randomized_response"])
@pytest.mark.parametrize("alpha", [0.2, 0.05])
def test_bounds_above_the_truth_at_most_alpha(name, alpha):
    make = mechanisms()[name]
    over = plug_in_over = 0
    for run in range(RUNS):
        mech = make(10_000 + run)
        truth = mech.epsilon
        r = epsilon_lower_bound(mech, 0, 1, trials=TRIALS, vectorized=True, alpha=alpha, seed=run)
        over += r.epsilon > truth
        plug_in_over += r.estimate > truth
    c = critical_value(RUNS, alpha)
    print(f"{name}, alpha={alpha}: {over}/{RUNS} bounds above the truth (critical value {c}); "
          f"plug-in estimates above it: {plug_in_over}/{RUNS}")
    assert over <= c
    if alpha == 0.2:
        # the control: a statistic that is not a confidence bound is caught by the same test
        assert plug_in_over > c
