"""The accountants' structural speed-ups (issue #35, item 4) keep every value: the RDP integral's
order-independent terms are computed once per grid, PLD FFTs use 5-smooth lengths, and the PLD's
ε search reads a table of weights. Each test fails on the code before them."""
import math

import numpy as np
import pytest

from dpnoise.accounting import Accountant, Gaussian, Laplace, PoissonSampled, PrivacyLossDistribution
from dpnoise.accounting import pld as pld_module
from dpnoise.accounting.losses.base import _lse


def _rdp_fresh(loss, alpha):
    """The subsampled RDP integral on the order's own grid, every term recomputed (the code
    before the cache)."""
    lo, hi, dx = loss.loss._integration_window(alpha)
    n = int(min(max((hi - lo) / dx, 4000), 2_000_000))
    x = np.linspace(lo, hi, n + 1)
    lp, lq = loss.loss._logpdf_pair(x)
    q = loss.rate
    lmix = np.logaddexp(math.log1p(-q) + lq, math.log(q) + lp) if q < 1 else lp
    lw = np.full(x.shape, math.log(x[1] - x[0]))
    lw[0] = lw[-1] = math.log((x[1] - x[0]) / 2)
    lz = _lse(lq + lw)
    rem = _lse(alpha * lmix + (1 - alpha) * lq + lw) - lz
    add = _lse(alpha * lq + (1 - alpha) * lmix + lw) - lz
    return max(0.0, rem / (alpha - 1), add / (alpha - 1))


def test_subsampled_rdp_builds_its_integrand_once_per_grid(monkeypatch):
    calls = []
    original = Gaussian._logpdf_pair

    def counting(self, x):
        calls.append(x.size)
        return original(self, x)
    monkeypatch.setattr(Gaussian, "_logpdf_pair", counting)
    loss = PoissonSampled(Gaussian(1.3), 0.02)  # a descriptor no other test caches
    orders = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
    for a in orders:
        loss.rdp(a)
    # one grid per power of two of the order (2, 4, ..., 64): 6, not one per order (151)
    assert len(calls) <= 7


@pytest.mark.parametrize("loss", [PoissonSampled(Gaussian(1.1), 0.01), PoissonSampled(Gaussian(0.7), 0.2),
                                  PoissonSampled(Gaussian(3.0, 2.0), 1.0), PoissonSampled(Laplace(1.0), 0.05)],
                         ids=["dpsgd", "small-sigma", "q=1", "laplace"])
def test_subsampled_rdp_from_the_shared_grid_equals_the_fresh_integral(loss):
    for alpha in (1.001, 1.5, 2.0, 3.7, 8.3, 16.0, 33.0, 100.0, 1000.0):
        fresh = _rdp_fresh(loss, alpha)
        # the shared grid is wider (up to the next power of two of α) at the same step: the
        # integrals agree to the quadrature's rounding (|Δ| <= 1e-16 per unit of log-mass / (α-1))
        assert loss.rdp(alpha) == pytest.approx(fresh, rel=1e-7, abs=1e-13)


def _is_even_5_smooth(m):
    if m % 2:
        return False
    for f in (2, 3, 5):
        while m % f == 0:
            m //= f
    return m == 1


def test_fft_length_is_the_least_even_5_smooth_length():
    for n in list(range(1, 2500)) + [1308408, 4056278, 2**22, 2**22 + 1]:
        m = pld_module.fft_length(n)
        assert m >= n and _is_even_5_smooth(m)
        assert not any(_is_even_5_smooth(k) for k in range(n, min(m, n + 5000)))


def test_self_composition_fft_is_not_padded_to_a_power_of_two(monkeypatch):
    lengths = []
    original = np.fft.rfft

    def recording(a, n=None, *args, **kwargs):
        lengths.append(a.size if n is None else n)
        return original(a, n, *args, **kwargs)
    monkeypatch.setattr(pld_module.np.fft, "rfft", recording)
    composed = PrivacyLossDistribution.from_loss(Laplace(1.0), 1e-3, count=1000)
    window = composed._parts["remove"].pmf.size
    # a power of two would be 2^19 = 1.29x this window; a 5-smooth length is within 3% of it
    assert max(lengths) <= 1.05 * window
    # and the answer is the one of the power-of-two transform (the same pessimistic grid PMF)
    assert composed.get_epsilon_for_delta(1e-6) == pytest.approx(486.297, rel=1e-3)


def _epsilon_brute(g, delta, h):
    """The least grid ε (then refined inside its step) with δ(ε) <= delta, δ summed at every
    grid point with exp (the code before the table of weights)."""
    losses = (g.offset + np.arange(g.pmf.size)) * h
    deltas = np.array([g.inf_mass + np.sum(g.pmf[k + 1:] * -np.expm1(losses[k] - losses[k + 1:]))
                       for k in range(g.pmf.size)])
    return losses[int(np.nonzero(deltas <= delta)[0][0])]


@pytest.mark.parametrize("seed", range(5))
def test_epsilon_search_with_weights_matches_the_exact_grid_search(seed):
    rng = np.random.default_rng(seed)  # fixed seeds: random grid PMFs, no statistical test
    h = float(rng.choice([1e-3, 1e-2, 0.5]))
    p = rng.random(400) ** 4
    p /= p.sum() * (1 + rng.random() * 1e-3)
    g = pld_module._GridPMF(int(rng.integers(-300, 100)), p, float(rng.random() * 1e-7))
    for delta in (1e-6, 1e-4, 1e-2, 0.3):
        eps = pld_module._epsilon(g, delta, h)
        grid_eps = _epsilon_brute(g, delta, h)
        # the same grid point: refined within the step below it, never below it by more than h
        assert grid_eps - h - 1e-12 <= eps <= grid_eps + 1e-12
        assert pld_module._delta(g, eps, h) <= delta * (1 + 1e-9)


def test_symmetric_pld_reads_its_one_part_once(monkeypatch):
    pld = PrivacyLossDistribution.from_loss(Laplace(2.0), 1e-3, count=3)
    calls = []
    original = pld_module._epsilon
    monkeypatch.setattr(pld_module, "_epsilon", lambda *a: calls.append(1) or original(*a))
    pld.get_epsilon_for_delta(1e-6)
    assert len(calls) == 1


def test_dp_sgd_rdp_epsilon_is_unchanged_by_the_cache():
    # 10^4 steps of z = 1.1, q = 0.01 at delta = 1e-5 over opacus's default orders: within 1e-4 of
    # the orders' own best (the cached grid changes no value; refinement only tightens)
    orders = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
    loss = PoissonSampled(Gaussian(1.1), 0.01)
    eps = Accountant("rdp", orders=orders).compose(loss, 10_000).get_epsilon(1e-5)
    best_on_grid = min(10_000 * _rdp_fresh(loss, a) + math.log1p(-1 / a) - (math.log(1e-5) + math.log(a)) / (a - 1)
                       for a in orders)
    assert best_on_grid * (1 - 1e-4) <= eps <= best_on_grid * (1 + 1e-9)


@pytest.mark.parametrize("loss", [PoissonSampled(Gaussian(1.1), 0.01), Laplace(1.0), Laplace(10.0)],
                         ids=["dpsgd", "laplace1", "laplace10"])
def test_chernoff_window_searches_few_orders_and_finds_the_grid_minimum(loss):
    h, log_tol = 1e-3, math.log(pld_module.TAIL_MASS)
    for direction in ("remove", "add"):
        g = pld_module.discretise(loss, direction, h)
        eps, log_p = pld_module._mgf_terms(g, h)
        ts = pld_module._CHERNOFF_TS
        with np.errstate(over="ignore"):
            up, down = pld_module._log_mgfs(eps, log_p, ts), pld_module._log_mgfs(eps, log_p, -ts)
        g.chernoff_bound(h, 100, log_tol, 1)
        g.chernoff_bound(h, 100, log_tol, -1)
        # one count needs about 2 log2(61) of the 2 x 61 moment generating functions (a full
        # scan of the grid of t computed all 122)
        assert len(g._mgf) <= 2 * 14
        for n in (2, 100, 10_000, 10**6):
            assert g.chernoff_bound(h, n, log_tol, 1) == pytest.approx(np.min((n * up - log_tol) / ts), rel=1e-12)
            assert g.chernoff_bound(h, n, log_tol, -1) == pytest.approx(np.min((n * down - log_tol) / ts), rel=1e-12)
