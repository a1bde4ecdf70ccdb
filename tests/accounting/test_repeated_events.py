"""Repeated identical events compose by count (issue 24, item 2): the accountant's groups and
the budget's headroom give the same answers as composing everything at once."""

import pytest

from dpnoise import BudgetExceededError
from dpnoise.accounting import Accountant, Gaussian, Laplace, PoissonSampled, PrivacyBudget
from dpnoise.accounting.budget import RELATIVE_SLACK

STEP = PoissonSampled(Gaussian(1.0), 0.01)


def test_identical_events_merge_into_one_pair():
    acc = Accountant("rdp")
    for _ in range(50):
        acc.compose(PoissonSampled(Gaussian(1.0), 0.01))  # equal, not identical, descriptors
    assert acc.events == [(STEP, 50)]
    acc.compose(Laplace(2.0)).compose(STEP, 3)
    assert [c for _, c in acc.events] == [50, 1, 3]  # order kept for consecutive runs only
    assert acc.count_of(STEP) == 53 and acc.count_of(Laplace(2.0)) == 1


@pytest.mark.parametrize("kind", ["pld", "rdp"])
def test_interleaved_events_equal_composition_by_count(kind):
    a, b = STEP, Laplace(5.0)
    one_by_one = Accountant(kind)
    for _ in range(20):
        one_by_one.compose(a).compose(b)
    at_once = Accountant(kind).compose(a, 20).compose(b, 20)
    assert one_by_one.get_epsilon(1e-6) == at_once.get_epsilon(1e-6)
    assert one_by_one.get_delta(2.0) == at_once.get_delta(2.0)


def test_charges_one_at_a_time_equal_one_charge_of_the_count():
    budget = PrivacyBudget(10.0, 1e-5, "pld")
    for _ in range(500):
        budget.spend(STEP)
    assert len(budget.ledger) == 500
    assert budget.spent_epsilon == Accountant("pld").compose(STEP, 500).get_epsilon(1e-5)


@pytest.mark.parametrize("kind", ["rdp", "pld"])
def test_the_headroom_admits_exactly_the_counts_that_fit(kind):
    # the largest count m with eps(m) within the budget, found by direct evaluation...
    eps_budget = Accountant(kind).compose(STEP, 300).get_epsilon(1e-5)
    limit = eps_budget * (1 + RELATIVE_SLACK)
    fits = [m for m in range(295, 306) if Accountant(kind).compose(STEP, m).get_epsilon(1e-5) <= limit]
    m_max = max(fits)
    assert fits == list(range(295, m_max + 1))
    # ...is the number of single charges the budget admits, whatever its cache did
    budget = PrivacyBudget(eps_budget, 1e-5, kind)
    admitted = 0
    with pytest.raises(BudgetExceededError):
        for _ in range(400):
            budget.spend(STEP)
            admitted += 1
    assert admitted == m_max
    assert not budget.can_spend(STEP)
    assert len(budget.ledger) == m_max


def spend_until_refused(budget, loss, epsilon):
    """Charge ``loss`` until ``budget`` (ε = ``epsilon``) refuses it; after every charge the
    spent ε is within the budget (up to the accountants' relative slack). Returns how many
    ``loss`` the budget's ledger then holds."""
    while True:
        try:
            budget.spend(loss)
        except BudgetExceededError:
            break
        assert budget.spent_epsilon <= epsilon * (1 + RELATIVE_SLACK)
    assert budget.spent_epsilon <= epsilon * (1 + RELATIVE_SLACK)
    return budget.accountant.count_of(loss)


def test_another_event_invalidates_the_headroom():
    big = Laplace(1 / 3.0)  # epsilon 3, pure
    budget = PrivacyBudget(4.0, 1e-5, "pld")
    for _ in range(200):
        budget.spend(STEP)  # verifies a headroom well beyond 200 steps of 4.0
    budget.spend(big)
    # the remaining budget is now small: the next steps are re-verified against the new ledger
    n = spend_until_refused(budget, STEP, 4.0)
    assert Accountant("pld").compose(STEP, n + 1).compose(big).get_epsilon(1e-5) > 4.0 * (1 + RELATIVE_SLACK)


def test_a_file_backed_budget_reverifies_after_reload(tmp_path):
    path = tmp_path / "budget.json"
    step = Laplace(10.0)  # epsilon 0.1 per charge
    budget = PrivacyBudget.open(path, 3.0, 1e-5, accountant="rdp")
    other = PrivacyBudget.open(path, 3.0, 1e-5, accountant="rdp")
    for _ in range(5):
        budget.spend(step)  # verifies a headroom for this process's view of the ledger
    other.spend(Laplace(1.0))  # another process spends from the same file
    with pytest.raises(BudgetExceededError):
        for _ in range(100):
            budget.spend(step)
    assert budget.spent_epsilon <= 3.0 * (1 + RELATIVE_SLACK)
    n = budget.accountant.count_of(step)
    assert Accountant("rdp").compose(step, n + 1).compose(Laplace(1.0)).get_epsilon(1e-5) > 3.0


def test_other_gaussians_invalidate_a_gaussian_headroom(tmp_path):
    # the PLD accountant keeps Gaussians outside its groups (as one μ²): a headroom verified for
    # one Gaussian must not survive another Gaussian charged meanwhile (here by another
    # process sharing the budget file, which the headroom slot of this one does not see)
    small, big = Gaussian(20.0), Gaussian(1.2)
    path = tmp_path / "budget.json"
    budget = PrivacyBudget.open(path, 4.5, 1e-6, accountant="pld")
    other = PrivacyBudget.open(path, 4.5, 1e-6, accountant="pld")
    for _ in range(10):
        budget.spend(small)  # verifies a headroom of 128 uses of small
    other.spend(big)
    n = spend_until_refused(budget, small, 4.5)
    assert n < 128
    assert Accountant("pld").compose(small, n + 1).compose(big).get_epsilon(1e-6) > 4.5 * (1 + RELATIVE_SLACK)
