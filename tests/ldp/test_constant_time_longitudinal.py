"""``constant_time=True`` together with ``instantaneous_epsilon=`` (daily collection): both layers
by the constant-time kernels, the memoised permanent answer on the PRF stream, the two-layer
loss within total variation (m∞ + m₁)·2^-64 per report, budget charges, and the refusals.

Statistical tests: fixed seeds; each chi-square or z-test rejects at the stated level, so a
correct implementation fails one of them with probability at most that level (and never, for
the fixed seeds, once it has passed)."""
import itertools
import math

import numpy as np
import pytest
from scipy import stats

import dpnoise
from dpnoise import ldp
from dpnoise.accounting import Accountant, PrivacyBudget, PureDP, WithinTotalVariation
from dpnoise.ldp._kernels import Kernels, KernelTable
from dpnoise.ldp._memo import memo_fingerprint, memo_generator, memoised_batch, memoised_reports
from dpnoise.ldp.longitudinal import LongitudinalDP

TV = 2.0**-64
EPS, EPS1 = 2.0, 1.0
# tiny domains; options that fix each configuration's public pool
CASES = {"grr": (4, {}), "olh": (4, {"pool_size": 8, "pool_key": 7}), "flh": (4, {"k_prime": 8, "pool_key": 7}),
         "oue": (3, {}), "sue": (3, {}), "dbitflip": (4, {"bits": 2, "pool_size": 8, "pool_key": 7})}
NAMES = sorted(CASES)
ALPHA = 1e-4  # false-alarm rate of each goodness-of-fit test below


def make(name, eps=EPS, eps1=EPS1, **extra):
    d, opts = CASES[name]
    return ldp.FrequencyOracle(name, eps, d, constant_time=True, instantaneous_epsilon=eps1, **opts, **extra)


def key(i):
    """A device key for tests (seeded: reproducible)."""
    return np.random.default_rng([7, i]).integers(0, 256, 32, dtype=np.uint8).tobytes()


def permanent(fo, device_key, items):
    """The memoised permanent layer alone (before the per-report layer)."""
    return memoised_reports(fo, device_key, memo_fingerprint(fo), np.asarray(items, dtype=np.int64))


def rr_law(gamma, k, keep):
    """k-ary randomized response at γ of symbol ``keep``: e^γ/(e^γ + k − 1) there, 1/(...) elsewhere."""
    e = math.exp(float(gamma))
    law = np.full(k, 1.0 / (e + k - 1))
    law[keep] = e / (e + k - 1)
    return law


def bits_law(bits_in, p1, q1):
    """The law of the report bits (little-endian codes) when bit j is 1 w.p. p1 where the
    permanent bit is 1 and q1 where it is 0, independently."""
    law = []
    for code in itertools.product((0, 1), repeat=len(bits_in)):
        pr = 1.0
        for b_in, b_out in zip(bits_in, code):
            one = p1 if b_in else q1
            pr *= one if b_out else 1 - one
        law.append(pr)
    return np.array(law)


def chi_square_ok(observed, law):
    expected = law * observed.sum()
    keep = expected > 0
    assert observed[~keep].sum() == 0, "a report of probability zero"
    stat = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    return stats.chi2.sf(stat, keep.sum() - 1) > ALPHA


@pytest.mark.parametrize("name", NAMES)
def test_report_law_given_the_permanent_answer(name):
    """Many reports of one device and item: the permanent fields repeat, and the fresh layer has
    the exact law of the protocol's ε₁ channel applied to the permanent answer (chi-square,
    α = 1e-4, N = 20,000)."""
    fo, item, n = make(name), 1, 20_000
    perm = permanent(fo, key(0), [item])
    reports = fo.client(dpnoise.default_rng(11), allow_insecure=True, device_key=key(0)).privatize([item] * n).data
    g1 = fo.gamma1
    if name in ("grr", "olh", "flh"):
        k = fo.domain_size if name == "grr" else fo.g
        for field in set(reports) - {"values"}:  # the memoised seed or pool index repeats
            assert (reports[field] == perm[field][0]).all()
        observed = np.bincount(reports["values"], minlength=k)
        law = rr_law(g1, k, int(perm["values"][0]))
    elif name in ("oue", "sue"):
        d = fo.domain_size
        e1 = math.exp(float(g1))
        p1, q1 = (0.5, 1 / (e1 + 1)) if name == "oue" else (math.sqrt(e1) / (math.sqrt(e1) + 1), 1 / (math.sqrt(e1) + 1))
        bits_in = [(int(perm["bits"][0, 0]) >> j) & 1 for j in range(d)]
        codes = reports["bits"][:, 0].astype(np.int64)
        assert (codes >> d == 0).all()
        # itertools.product enumerates codes with the first bit most significant: reverse the bits
        order = [sum(b << j for j, b in enumerate(code)) for code in itertools.product((0, 1), repeat=d)]
        observed = np.bincount(codes, minlength=1 << d)[order]
        law = bits_law(bits_in, p1, q1)
    else:  # dbitflip: the memoised row repeats, each bit flipped w.p. q₁ = 1/(e^{ε₁/2} + 1)
        b = fo.options["bits"]
        assert (reports["indices"] == perm["indices"][0]).all()
        q1 = 1 / (math.exp(float(g1) / 2) + 1)
        bits_in = [(int(perm["bits"][0]) >> j) & 1 for j in range(b)]
        order = [sum(bit << j for j, bit in enumerate(code)) for code in itertools.product((0, 1), repeat=b)]
        observed = np.bincount(reports["bits"].astype(np.int64), minlength=1 << b)[order]
        law = bits_law(bits_in, 1 - q1, q1)
    assert chi_square_ok(observed, law), (name, observed, law * n)


@pytest.mark.parametrize("name", ["grr", "oue"])
def test_permanent_answer_law_over_devices(name):
    """Over 20,000 device keys the memoised (constant-time) permanent answer of item 1 has the
    exact ε∞ law (chi-square, α = 1e-4)."""
    fo, n = make(name), 20_000
    keys = np.random.default_rng(5).integers(0, 256, (n, 32), dtype=np.uint8)
    perm = memoised_batch(fo, keys, memo_fingerprint(fo), np.ones(n, dtype=np.int64))
    d = fo.domain_size
    if name == "grr":
        assert chi_square_ok(np.bincount(perm["values"], minlength=d), rr_law(fo.gamma, d, 1))
    else:
        e = math.exp(float(fo.gamma))
        order = [sum(b << j for j, b in enumerate(code)) for code in itertools.product((0, 1), repeat=d)]
        observed = np.bincount(perm["bits"][:, 0].astype(np.int64), minlength=1 << d)[order]
        assert chi_square_ok(observed, bits_law([0, 1, 0], 0.5, 1 / (e + 1)))


@pytest.mark.parametrize("name", NAMES)
def test_memoised_permanent_answer_is_stable(name):
    """The same key and item give the same permanent answer on every call, whatever the client's
    generator, in any batch position and through the device_keys batch path; the PRF input as
    8 bytes is the same as the int's; another key gives (for some item) another answer."""
    fo = make(name)
    items = [0, 1, 1, 2, 0]
    first = permanent(fo, key(1), items)
    again = permanent(fo, key(1), items[::-1])
    batch = memoised_batch(fo, np.frombuffer(key(1) * 5, dtype=np.uint8).reshape(5, 32), memo_fingerprint(fo),
                           np.array(items, dtype=np.int64))
    by_int = [fo._privatize(memo_generator(key(1), memo_fingerprint(fo), x), np.array([x]), 1) for x in items]
    for field in first:
        np.testing.assert_array_equal(first[field], again[field][::-1])
        np.testing.assert_array_equal(first[field], batch[field])
        np.testing.assert_array_equal(first[field], np.concatenate([r[field] for r in by_int]))
        np.testing.assert_array_equal(first[field][1], first[field][2])  # a repeated item: one answer
    other = permanent(fo, key(2), list(range(fo.domain_size)) * 4)
    mine = permanent(fo, key(1), list(range(fo.domain_size)) * 4)
    assert any(not np.array_equal(other[f], mine[f]) for f in mine)


@pytest.mark.parametrize("name", NAMES)
def test_aggregator_debiases_both_layers(name):
    """3,000 devices (one key each) report their item every day for 2 days: each item's estimate
    is unbiased for 2 × its count (z-test over the d items, |z| < 4.42: α ≈ d·1e-5). The stated
    stderr treats reports as independent; a device's two days share the permanent answer, so
    the z-test uses the per-device stderr × 2 (two perfectly correlated days: the worst case)."""
    fo = make(name, eps=1.0, eps1=2.0)
    n, d = 3_000, fo.domain_size
    items = np.random.default_rng(3).integers(0, d, n)
    keys = np.random.default_rng(4).integers(0, 256, (n, 32), dtype=np.uint8)
    client = fo.client(dpnoise.default_rng(9), allow_insecure=True)
    agg = fo.aggregator()
    for _ in range(2):
        agg.add(client.privatize(items, device_keys=keys))
    truth = 2 * np.bincount(items, minlength=d)
    one_day = fo.aggregator().add(client.privatize(items, device_keys=keys))
    z = (agg.estimate() - truth) / (2 * one_day.stderr())
    assert np.abs(z).max() < 4.42, (name, z)


@pytest.mark.parametrize("name", NAMES)
def test_loss_is_the_two_layer_loss_within_total_variation(name):
    fo = make(name)
    loss = fo.privacy_loss()
    assert isinstance(loss, WithinTotalVariation) and isinstance(loss.loss, LongitudinalDP)
    assert (loss.loss.epsilon, loss.loss.permanent_epsilon, loss.loss.instantaneous_epsilon) == (EPS1, EPS, EPS1)
    d = fo.domain_size
    m_perm = {"oue": d, "sue": d, "dbitflip": 2}.get(name, 1)
    m_inst = {"oue": d + 1, "sue": 2 * (d + 1), "dbitflip": 3}.get(name, 1)
    assert loss.total_variation == (m_perm + m_inst) * TV
    eps, delta = loss.approx_dp()
    assert eps == EPS1 and delta == pytest.approx((1 + math.exp(EPS1)) * (m_perm + m_inst) * TV, rel=1e-9)
    # the exact configuration's loss is unchanged
    d_, opts = CASES[name]
    assert ldp.FrequencyOracle(name, EPS, d_, instantaneous_epsilon=EPS1, **opts).privacy_loss() == loss.loss


@pytest.mark.parametrize("kind", ["basic", "advanced", "zcdp", "rdp", "pld"])
def test_budget_charges_per_report(kind):
    """Every accountant composes the per-report loss (ε₁ <= ε∞): 3 reports are charged after the
    checks and before randomness; the ledger records the total variation."""
    fo = make("grr")
    budget = PrivacyBudget(50.0, 1e-6, accountant=kind)
    client = fo.client(dpnoise.default_rng(1), allow_insecure=True, budget=budget, device_key=key(3))
    with pytest.raises(ValueError):
        client.privatize([99])  # refused item: nothing charged
    assert budget.spent_epsilon == 0
    client.privatize([1, 2, 2])
    assert budget.ledger[-1]["loss"]["type"] == "WithinTotalVariation"
    if kind == "basic":
        assert budget.spent_epsilon == pytest.approx(3 * EPS1)
        # δ at ε = 3ε₁: the transfer (1 + e^ε)·Ση at the composition's ε, Ση = 3 reports × 2 draws
        assert budget.accountant.get_delta(3 * EPS1) == pytest.approx((1 + math.exp(3 * EPS1)) * 6 * TV, rel=1e-6)
    # three reports of the stated loss: what an independent accountant of the kind composes
    expected = Accountant(kind).compose(WithinTotalVariation(PureDP(EPS1), 2 * TV), 3).get_epsilon(1e-6)
    assert budget.spent_epsilon == pytest.approx(expected, rel=1e-9)
    assert budget.spent_epsilon >= Accountant(kind).compose(PureDP(EPS1), 3).get_epsilon(1e-6)


def test_budget_refusals_up_front():
    fo = make("oue")
    with pytest.raises(ValueError, match="budget has delta = 0"):
        fo.client(budget=PrivacyBudget(10.0))  # δ > 0 per report: a pure budget can never pay
    # ε∞ < ε₁: a report is charged ε∞, sound for basic composition only
    wide = make("grr", eps=1.0, eps1=2.0)
    for kind in ("zcdp", "rdp", "pld", "advanced"):
        with pytest.raises(ValueError, match=f"budget: the '{kind}' accountant"):
            wide.client(budget=PrivacyBudget(10.0, 1e-6, accountant=kind))
    budget = PrivacyBudget(10.0, 1e-6)
    wide.client(dpnoise.default_rng(2), allow_insecure=True, budget=budget).privatize([0, 1])
    assert budget.spent_epsilon == pytest.approx(2 * 1.0)
    # the mean oracle charges min(ε₁, ε∞) per report as the frequency oracles do, so the same rule
    # holds: refused by a zcdp budget when ε∞ < ε₁, charged ε∞ by a basic one
    bitmean = ldp.MeanOracle("bitmean", 1.0, bounds=(0.0, 1.0), instantaneous_epsilon=2.0)
    with pytest.raises(ValueError, match="budget: the 'zcdp' accountant"):
        bitmean.client(budget=PrivacyBudget(50.0, 1e-6, accountant="zcdp"))
    basic = PrivacyBudget(50.0, 1e-6)
    bitmean.client(dpnoise.default_rng(2), allow_insecure=True, budget=basic).privatize([0.5])
    assert basic.spent_epsilon == pytest.approx(1.0)
    # ε₁ <= ε∞: every accountant composes it
    narrow = ldp.MeanOracle("bitmean", 2.0, bounds=(0.0, 1.0), instantaneous_epsilon=1.0)
    zcdp = PrivacyBudget(50.0, 1e-6, accountant="zcdp")
    narrow.client(dpnoise.default_rng(2), allow_insecure=True, budget=zcdp).privatize([0.5])
    assert zcdp.spent_epsilon > 0


def test_refusals_remain_where_there_is_no_constant_time_daily_layer():
    # constant-time protocols without daily collection name instantaneous_epsilon
    for name in ("hadamard", "cms", "hcms"):
        with pytest.raises(ValueError, match="instantaneous_epsilon"):
            ldp.FrequencyOracle(name, 2.0, 16, constant_time=True, instantaneous_epsilon=1.0)
    # the mean oracles have constant-time clients, but not with daily collection
    with pytest.raises(ValueError, match="constant_time=True covers the fresh randomizer only.*instantaneous_epsilon"):
        ldp.MeanOracle("bitmean", 2.0, bounds=(0.0, 1.0), instantaneous_epsilon=1.0, constant_time=True)
    with pytest.raises(TypeError, match="constant_time"):
        ldp.FrequencyOracle("grr", 2.0, 4, instantaneous_epsilon=1.0, constant_time="yes")


def test_constant_time_reports_are_refused_by_the_exact_configuration():
    fo = make("sue")
    d, opts = CASES["sue"]
    exact = ldp.FrequencyOracle("sue", EPS, d, instantaneous_epsilon=EPS1, **opts)
    reports = fo.client(dpnoise.default_rng(3), allow_insecure=True).privatize([0, 1])
    with pytest.raises(ValueError):
        exact.aggregator().add(reports)
    assert fo.aggregator().add(reports).n == 2


EXACT_KERNELS = ("grr_privatize", "unary_privatize", "olh_privatize", "flh_privatize", "memo_grr", "memo_olh",
                 "memo_unary")


@pytest.mark.parametrize("name", NAMES)
def test_no_variable_time_kernel_is_called(name, monkeypatch):
    """Neither layer falls back to an exact (variable-time) kernel: each of them raises here, and
    a memoising client, a device_keys batch and a fresh client still report."""
    from dpnoise import _core

    def refuse(*args, **kwargs):
        raise AssertionError("a variable-time kernel was called")

    exact = {getattr(_core.ldp, kernel) for kernel in EXACT_KERNELS}
    for kernel in EXACT_KERNELS:
        monkeypatch.setattr(_core.ldp, kernel, refuse)
    # the kernels are picked from the class's table: its constant-time row names none of the exact
    # kernels, and every kernel of its variable-time row refuses
    for cls in ldp.Configuration.families()["frequency"].registered().values():
        table = cls.kernel_table
        if table.constant_time is not None:
            assert not exact & set(table.constant_time._kernels.values())
        names = {k: refuse for k in table.variable_time._kernels}
        monkeypatch.setattr(cls, "kernel_table", KernelTable(Kernels(**names), table.constant_time))
    fo = make(name)
    keys = np.random.default_rng(6).integers(0, 256, (3, 32), dtype=np.uint8)
    assert len(fo.client(device_key=key(4)).privatize([0, 1, 1])) == 3
    assert len(fo.client().privatize([0, 1, 2], device_keys=keys)) == 3
    assert len(fo.client().privatize([0, 1, 2])) == 3
    d, opts = CASES[name]
    with pytest.raises(AssertionError, match="variable-time"):  # the spies have power
        ldp.FrequencyOracle(name, EPS, d, instantaneous_epsilon=EPS1, **opts).client().privatize([0])
