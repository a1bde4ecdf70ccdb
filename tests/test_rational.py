"""Parameter conversion: exact where representable, otherwise rounded toward more noise."""
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpnoise import _rational as R


def test_ordinary_floats_are_exact():
    for x in (0.3, 10.0, 1e6, 0.5, 2.0**-60, 123456.789):
        num, den = R.scale_pair(x, "scale")
        assert Fraction(num, den) == Fraction(x)


def test_fractions_are_exact():
    assert R.scale_pair(Fraction(7, 3), "scale") == (7, 3)
    assert R.sigma_to_variance_pair(Fraction(7, 3), "sigma") == (49, 9)
    assert R.sigma_to_variance_pair(10, "sigma") == (100, 1)


def test_unrepresentable_values_round_up():
    tiny = Fraction(1, 3 * 2**70)
    num, den = R.scale_pair(tiny, "scale")
    assert Fraction(num, den) >= tiny and num >= 1
    big = Fraction(2**61 * 3 + 1, 3)
    num, den = R.scale_pair(big, "scale")
    assert Fraction(num, den) >= big
    num, den = R.sigma_to_variance_pair(0.3, "sigma")  # 0.3^2 needs a 108-bit numerator
    assert Fraction(num, den) >= Fraction(0.3) ** 2
    assert num * den <= R.MAX_VARIANCE_PRODUCT
    assert Fraction(num, den) / Fraction(0.3) ** 2 - 1 < Fraction(1, 2**40)


@settings(max_examples=300, deadline=None)
@given(st.fractions(min_value=Fraction(1, 2**80), max_value=Fraction(2**60)))
def test_round_up_never_rounds_down_and_stays_close(fr):
    num, den = R.round_up(fr, "x")
    assert 0 < num <= R.MAX_PART and 0 < den <= R.MAX_PART
    got = Fraction(num, den)
    assert got >= fr
    if fr >= Fraction(1, 2**40):
        assert got - fr <= fr * Fraction(1, 2**20)


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-2, max_value=2e9, allow_nan=False, allow_infinity=False))
def test_variance_rounding_is_upward_and_tight(sigma):
    # sigma^2 in [1e-4, 4e18]: inside the core's range (below 2^-62 everything rounds up to
    # 2^-62; above 2^62 the variance is refused, see test_variance_limits).
    num, den = R.sigma_to_variance_pair(sigma, "sigma")
    exact = Fraction(sigma) ** 2
    assert Fraction(num, den) >= exact
    assert Fraction(num, den) - exact <= exact * Fraction(1, 2**40)


def test_probability_rounds_to_nearest():
    num, den = R.probability_pair(1e-30, "p")
    assert (num, den) == (0, R.MAX_PART)
    assert R.probability_pair(Fraction(1, 3), "p") == (1, 3)
    with pytest.raises(ValueError, match="p"):
        R.probability_pair(1.0000001, "p")


def test_parameter_table_converts_distinct_values_once():
    shape, nums, dens, index = R.parameter_table([[1.5, 2.0], [1.5, 1.5]], "scale", R.scale_pair)
    assert shape == (2, 2) and len(nums) == 2
    assert [Fraction(int(nums[i]), int(dens[i])) for i in index] == [Fraction(3, 2), 2, Fraction(3, 2), Fraction(3, 2)]


def test_variance_limits():
    assert R.sigma_to_variance_pair(1e-12, "sigma") == (1, R.MAX_PART)  # rounded up to 2^-62
    with pytest.raises(OverflowError, match="sigma"):
        R.sigma_to_variance_pair(2.0**32, "sigma")
