"""WithinTotalVariation in an accountant: every reading of the composition carries Σ η (review
of the constant-time accounting)."""
import pytest

from dpnoise.accounting import Accountant, Gaussian, WithinTotalVariation


def test_curves_of_a_composition_with_total_variation_are_refused():
    # the exact releases' RDP curve / PLD is not the composition's: with η = 1e-3 the PLD said
    # ε(1e-5) = 0.34 while get_epsilon(1e-5) is ∞ (δ < 2η)
    loss = WithinTotalVariation(Gaussian(10.0, 1.0), 1e-3)
    rdp = Accountant("rdp").compose(loss)
    assert rdp.get_epsilon(1e-5) == float("inf")
    with pytest.raises(ValueError, match="WithinTotalVariation"):
        rdp.rdp(2.0)
    pld = Accountant("pld").compose(loss)
    assert pld.get_epsilon(1e-5) == float("inf")
    with pytest.raises(ValueError, match="WithinTotalVariation"):
        pld.pld()
    # η = 0, or no such release: the curves are still handed out
    assert Accountant("rdp").compose(WithinTotalVariation(Gaussian(10.0, 1.0), 0.0)).rdp(2.0) == pytest.approx(0.01)
    assert Accountant("pld").compose(Gaussian(10.0, 1.0)).pld() is not None
    assert rdp.get_epsilon(0.5) < 1.0  # reading (ε, δ) still works with the curve refused
