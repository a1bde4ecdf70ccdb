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


def test_epsilon_with_total_variation_is_the_least_valid_one():
    # 11 uses of PureDP(0.1) within η = 1e-8: ε = 1.1 holds at δ = 1e-6 ((1 + e^1.1)·1.1e-7 =
    # 4.2e-7 <= 1e-6); the search reserved (1 + e^{ε+1})·Ση and answered ∞ (a (2, 1e-6) budget
    # refused the 11th charge at 1.0 spent)
    from dpnoise.accounting import PrivacyBudget, PureDP

    loss = WithinTotalVariation(PureDP(0.1), 1e-8)
    acc = Accountant("basic").compose(loss, 11)
    eps = acc.get_epsilon(1e-6)
    assert eps == pytest.approx(1.1)
    assert acc.get_delta(eps) <= 1e-6
    budget = PrivacyBudget(2.0, 1e-6)
    budget.spend(loss, 11)
    assert budget.spent_epsilon == pytest.approx(1.1)
    # 16 uses: (1 + e^1.6)·1.6e-7 = 9.5e-7 <= 1e-6; 17: (1 + e^1.7)·1.7e-7 = 1.1e-6 > 1e-6
    assert budget.can_spend(loss, 5) and not budget.can_spend(loss, 6)
    for kind, exact_loss in (("zcdp", Gaussian(2.0, 1.0)), ("rdp", Gaussian(2.0, 1.0)), ("pld", Gaussian(2.0, 1.0))):
        a = Accountant(kind).compose(WithinTotalVariation(exact_loss, 1e-7))
        e = a.get_epsilon(1e-5)
        assert a.get_delta(e) <= 1e-5 * (1 + 1e-9)
        assert a.get_delta(e * 0.999) > 1e-5 * 0.999 or e == 0
