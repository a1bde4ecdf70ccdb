"""Issue #33, item 2: the grid choosers put the *final* noise parameter inside the samplers' range.

0.7.1's DP-SGD form (``noise_multiplier=``) refused power-of-two multipliers on real model sizes:
its chooser aimed σ at exactly 2^30 (2^20 with ``constant_time=True``) grid units, and rounding σ
up then put it one unit over. Its neighbours had the same kind of defect: the (ε, δ) and ρ forms
gave up after four coarser grids, and ``LaplaceMechanism`` never coarsened at all, when the
widening (√d, resp. d, grid units) was what pushed the parameter over; and all of them could pick
a grid exponent outside the constant-time kernel's range. Only plan() is called here (no array
of 10^9 values is made). Nothing here is random: no false alarms.
"""
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpnoise import GaussianMechanism, LaplaceMechanism
from dpnoise._release import constant_time as _ct
from dpnoise.accounting.losses import (
    DiscreteGaussian, DiscreteGaussianVector, Gaussian, PoissonSampled, WithinTotalVariation,
)
from dpnoise.mechanisms.gaussian import _smoothed_sigma
from dpnoise.mechanisms.laplace import discrete_laplace_loss, discrete_laplace_scale

SIZES = (1, 100, 1000, 10**7, 10**8, 10**9)


def limits(constant_time):
    """(largest noise parameter in grid units, (lowest, highest) grid exponent) of a release."""
    if constant_time:
        return _ct.MAX_PARAMETER, (_ct.MIN_EXPONENT, _ct.MAX_EXPONENT)
    return 2**30, (-1022, 970)


def check_multiplier_plan(z, c, d, constant_time, sample_rate=None):
    """The DP-SGD plan for d coordinates: σ in [2^10, limit] grid units, never below z·C and
    within 2^-20 (+ 2^-49) of it; the widened sensitivity covers the rounding; the stated loss is the
    one of that σ and that sensitivity."""
    mech = GaussianMechanism(noise_multiplier=z, sensitivity=c, sample_rate=sample_rate,
                             constant_time=constant_time)
    p = mech.plan((d,))
    top, (lowest, highest) = limits(constant_time)
    sigma, k, sens = p.param, p.k, p.sensitivity
    assert lowest <= k <= highest
    assert 2**10 <= sigma <= top
    want, got = Fraction(z) * Fraction(c), Fraction(sigma) * Fraction(2) ** k
    # rounded toward more noise only: up to 21 significant bits, after an upward float slack
    # of at most 2^-49 (so z·(1 - 2^-53) may round up past z)
    assert want <= got <= want * (1 + Fraction(1, 2**20) + Fraction(1, 2**49))
    units = Fraction(c) / Fraction(2) ** k
    if d == 1:
        assert sens == math.floor(units) + 1
    else:  # Δ/2^k + √d grid units (to float precision)
        assert Fraction(sens) >= (units + Fraction(math.sqrt(d))) * (1 - Fraction(1, 2**50))
    if sample_rate is not None:
        base = PoissonSampled(Gaussian(_smoothed_sigma(sigma), sens), sample_rate)
    else:
        base = DiscreteGaussian(sigma, int(sens)) if d == 1 else DiscreteGaussianVector(sigma, sens, d)
    assert p.loss == (WithinTotalVariation(base, d * _ct.TV_PER_DRAW) if constant_time else base)
    return p


@pytest.mark.parametrize("constant_time", [False, True])
@pytest.mark.parametrize("c", [1.0, 0.1])
@pytest.mark.parametrize("j", range(-3, 11))
def test_power_of_two_multipliers_fit_every_size(j, c, constant_time):
    for d in SIZES:
        check_multiplier_plan(2.0**j, c, d, constant_time)


@pytest.mark.parametrize("constant_time", [False, True])
@pytest.mark.parametrize("c", [1.0, 0.1])
@pytest.mark.parametrize("j", range(-3, 11))
@pytest.mark.parametrize("side", [1, -1])
def test_multipliers_next_to_powers_of_two_fit_every_size(side, j, c, constant_time):
    """z·(1 ± 2^-50): σ just above a power of two (rounded up past the top) or just below it
    (where σ >= 2^10 and the logarithms of the old chooser could round the wrong way)."""
    for d in SIZES:
        check_multiplier_plan(2.0**j * (1 + side * 2.0**-50), c, d, constant_time)


@pytest.mark.parametrize("constant_time", [False, True])
@pytest.mark.parametrize("j", [0, 1, 8])
def test_subsampled_form_charges_the_final_sigma(j, constant_time):
    for d in (100, 10**7, 10**9):
        check_multiplier_plan(2.0**j, 1.0, d, constant_time, sample_rate=0.01)


def _no_grid_fits(make, d, constant_time):
    """True when every grid exponent the release accepts is refused for d coordinates."""
    _, (lowest, highest) = limits(constant_time)
    for k in range(lowest, highest + 1):
        try:
            make(2.0**k).plan((d,))
        except ValueError:
            continue
        return False
    return True


@pytest.mark.parametrize("constant_time", [False, True])
@pytest.mark.parametrize("c", [2.0**-1000, 1e-300, 1e-12, 1e12, 1e300])
@pytest.mark.parametrize("z", [0.125, 1.1, 1024.0])
def test_tiny_and_huge_sensitivities_fit_or_are_refused_only_when_no_grid_fits(z, c, constant_time):
    for d in (1, 10**9):
        try:
            check_multiplier_plan(z, c, d, constant_time)
        except ValueError as exc:
            assert "noise_multiplier" in str(exc)
            assert _no_grid_fits(lambda g: GaussianMechanism(noise_multiplier=z, sensitivity=c, granularity=g,
                                                             constant_time=constant_time), d, constant_time)


@pytest.mark.parametrize("constant_time", [False, True])
def test_a_product_beyond_every_grid_is_a_value_error_naming_the_multiplier(constant_time):
    """z·C = 1.7e314 is no double: 0.7.1 raised a bare OverflowError converting it."""
    with pytest.raises(ValueError, match=r"noise_multiplier=1000000\.0 with sensitivity=1\.7e\+308: no grid"):
        GaussianMechanism(noise_multiplier=1e6, sensitivity=1.7e308, constant_time=constant_time)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(j=st.integers(-3, 10), nudge=st.sampled_from([0.0, 2.0**-52, -(2.0**-53), 2.0**-50, -(2.0**-50)]),
       frac=st.floats(1.0, 2.0, exclude_max=True), exact=st.booleans(),
       c_log=st.floats(-30, 30), d=st.integers(1, 10**9), constant_time=st.booleans())
def test_property_multiplier_plans_stay_in_range(j, nudge, frac, exact, c_log, d, constant_time):
    """For z in [2^-3, 2^11) (powers of two, nudged or not, and others), C in [2^-30, 2^30] and
    any size up to 10^9, the plan fits and states the loss of its own σ and sensitivity."""
    z = 2.0**j * (1.0 if exact else frac) * (1 + nudge)
    check_multiplier_plan(z, 2.0**c_log, d, constant_time)


# -- the (epsilon, delta) and rho forms ---------------------------------------------------------
GAUSSIAN_NEIGHBOURS = [
    # the √d grid units of widening need more than four coarser grids to fit 2^20
    (dict(epsilon=0.01, delta=1e-6, sensitivity=1e-6), 10**7),
    (dict(rho=5e-5, sensitivity=1.0), 10**8),
    # the default grid for a tiny Δ is finer than the constant-time kernel takes (2^-1000)
    (dict(epsilon=1.0, delta=1e-6, sensitivity=1e-300), 100),
    (dict(rho=0.5, sensitivity=2.0**-1000), 10**9),
]


@pytest.mark.parametrize("kw,d", GAUSSIAN_NEIGHBOURS)
def test_epsilon_delta_and_rho_forms_take_the_finest_grid_that_fits(kw, d):
    p = GaussianMechanism(constant_time=True, **kw).plan((d,))
    top, (lowest, highest) = limits(True)
    sigma, k, sens = p.param, p.k, p.sensitivity
    assert lowest <= k <= highest and sigma <= top
    assert Fraction(sens) >= (Fraction(kw["sensitivity"]) / Fraction(2) ** k + Fraction(math.sqrt(d))) \
        * (1 - Fraction(1, 2**50))
    base = DiscreteGaussianVector(sigma, sens, d)
    if "rho" in kw:  # σ = Δ/sqrt(2ρ) of the widened Δ, rounded up
        assert sigma >= sens / math.sqrt(2 * kw["rho"])
    else:  # the target is met on the profile of the final σ and widened Δ
        assert float(base.delta_for_epsilon(kw["epsilon"])) <= kw["delta"]
    assert p.loss == _ct.loss(base, d, kw.get("epsilon"))
    # one grid finer does not fit (for ρ only: with (ε, δ), that mechanism's scalar check, an
    # exact discrete-Gaussian profile at σ ~ 10^5, takes 10-20 s)
    if k > lowest and "rho" in kw:
        with pytest.raises(ValueError):
            GaussianMechanism(constant_time=True, granularity=2.0 ** (k - 1), **kw).plan((d,))


def test_epsilon_delta_form_refuses_at_once_what_no_grid_fits():
    """√d·σ(1) alone is beyond 2^20 grid units: refused, naming the bound and the widening."""
    mech = GaussianMechanism(epsilon=0.01, delta=1e-6, constant_time=True)
    with pytest.raises(ValueError, match=r"every grid.*√100000000 grid units"):
        mech.plan((10**8,))


# -- LaplaceMechanism ---------------------------------------------------------------------------
LAPLACE_NEIGHBOURS = [
    # d/ε <= 2^20: fits on a coarse grid (docs/security.md promises it), refused by 0.7.1
    (10.0, 0.0, 1.0, 10**7, True),
    (2.0, 1e-6, 0.1, 1_500_000, True),
    (1e-4, 0.0, 1.0, 100, True),
    (1e-6, 0.0, 1.0, 10**7, False),
    (1e-4, 0.0, 0.1, 10**9, False),
    # the default grid for a tiny Δ is finer than the constant-time kernel takes
    (1.0, 0.0, 1e-300, 1, True),
]


@pytest.mark.parametrize("eps,delta,c,d,constant_time", LAPLACE_NEIGHBOURS)
def test_laplace_takes_the_finest_grid_whose_widened_scale_fits(eps, delta, c, d, constant_time):
    make = lambda g=None: LaplaceMechanism(eps, c, delta=delta, granularity=g,  # noqa: E731
                                           constant_time=constant_time)
    p = make().plan((d,), np.float64)
    top, (lowest, highest) = (_ct.MAX_PARAMETER, limits(True)[1]) if constant_time else (2**44, limits(False)[1])
    k, sens, scale = p.k, p.sensitivity, p.param
    assert lowest <= k <= highest and scale <= top
    assert sens == math.floor(Fraction(c) / Fraction(2) ** k) + d  # L1: floor(Δ/2^k) + d
    assert scale == discrete_laplace_scale(sens, eps, delta)
    base = discrete_laplace_loss(scale, sens)
    assert p.loss == (_ct.loss(base, d) if constant_time else base)
    if k > lowest:
        with pytest.raises(ValueError):
            make(2.0 ** (k - 1)).plan((d,), np.float64)


def test_laplace_refuses_what_no_grid_fits():
    """The widened L1 sensitivity is at least d grid units: d/ε > 2^20 cannot fit."""
    with pytest.raises(ValueError, match="2\\^20"):
        LaplaceMechanism(1.0, constant_time=True).plan((2 * 10**6,), np.float64)
