"""``constant_time=True`` on the numeric mean oracles (``MeanOracle``: "duchi", "bitmean",
"piecewise", "hybrid", vectors) and on the ``"zmatrix"`` frequency oracle: the reports' laws
against the exact ones, the recorded option, the δ term, and the refusals. The input grid's and
Duchi's / Piecewise's laws are also checked in test_mean_oracle.py (parametrized over
constant_time). Statistical tests use fixed seeds; each states its false-alarm rate."""
import math

import numpy as np
import pytest

import dpnoise
from dpnoise import _core, ldp
from dpnoise.accounting.losses import ApproxDP
from dpnoise.ldp import Configuration
from test_mean_oracle import pm_pmf  # the exact Piecewise grid pmf

TV = 2.0**-64
N = 200_000
METHODS = ["duchi", "bitmean", "piecewise", "hybrid"]


def client(oracle, seed):
    return oracle.client(dpnoise.default_rng(seed), allow_insecure=True)


def unpack(packed, n):
    return np.unpackbits(packed, bitorder="little")[:n].astype(np.int64)


def binomial_ok(k, n, p, z=5.0):
    """|k − np| within z standard deviations (z = 5: two-sided false alarm 5.7e-7)."""
    return abs(k - n * p) <= z * math.sqrt(n * p * (1 - p))


# ---------------------------------------------------------------- mean oracles
@pytest.mark.parametrize("ct", [True, False])
@pytest.mark.parametrize("m", [0, 2**32, -(2**32), 1_234_567_890, -3_000_000_001])
def test_piecewise_kernel_exact_pmf_on_a_small_grid(ct, m):
    """Piecewise's kernel alone on the grid C~ = 11/4 (Z = 11, G = 2: 23 reports, window edges
    inside cells, partially covered cells at both edges) for inputs m from −1 to 1: chi-square of
    the 23 report counts (200,000 draws) against the exact pmf, 22 d.o.f., α = 1e-6 (critical
    62.4). The constant-time kernel (masks for every branch, the cell and its position from
    fixed words) and the default one meet the same law; 10 cases: family-wise false alarm 1e-5."""
    Z, G = 11, 2
    probs = np.array([float(pm_pmf(Z, G, m, z)) for z in range(-Z, Z + 1)])
    assert abs(probs.sum() - 1) < 1e-12
    z = _core.ldp._mean_piecewise_for_testing(dpnoise.default_rng(100 + m % 97)._core, m, Z, G, N, ct)
    assert z.min() >= -Z and z.max() <= Z
    counts = np.bincount(z + Z, minlength=2 * Z + 1)
    keep = probs > 0
    assert counts[~keep].sum() == 0
    assert ((counts[keep] - N * probs[keep]) ** 2 / (N * probs[keep])).sum() < 62.4


def test_hybrid_law_and_vectors_select_the_sampled_coordinate():
    """Hybrid at ε = 2 (it mixes), 200,000 users holding the upper bound (t = 1): the kind is
    Duchi with probability e^{−γ/2}; Duchi reports are 1 with probability e^γ/(e^γ + 1); the
    Piecewise reports' mean is t·2^G within 5 standard errors. Then a vector of k = 3 (Duchi,
    rows (low, high, mid)): coordinates uniform (chi-square, 2 d.o.f., α = 1e-6: 27.6) and each
    coordinate's bits with its own value's law (binomial). Every check: false alarm 5.7e-7 or
    1e-6; family-wise < 1e-5."""
    g = 2.0
    hy = ldp.MeanOracle("hybrid", g, bounds=(0.0, 1.0), constant_time=True)
    gamma = float(hy.gamma)
    r = client(hy, 5).privatize(np.ones(N)).data
    kind = unpack(r["kinds"], N)
    assert binomial_ok(int(kind.sum()), N, math.exp(-gamma / 2))
    duchi = r["values"][kind == 1]
    assert set(np.unique(duchi).tolist()) <= {0, 1}
    assert binomial_ok(int(duchi.sum()), duchi.size, math.exp(gamma) / (math.exp(gamma) + 1))
    z = r["values"][kind == 0].astype(np.float64) / 2.0**hy.grid_bits
    assert abs(z.mean() - 1.0) < 5 * z.std() / math.sqrt(z.size)

    vec = ldp.MeanOracle("duchi", 1.0, bounds=(-2.0, 2.0), dimensions=3, constant_time=True)
    rows = np.tile([-2.0, 2.0, 0.0], (N, 1))
    r = client(vec, 6).privatize(rows).data
    coords, bits = r["coordinates"], unpack(r["bits"], N)
    counts = np.bincount(coords, minlength=3)
    assert ((counts - N / 3) ** 2 / (N / 3)).sum() < 27.6
    e = math.exp(float(vec.gamma))
    for j, p in enumerate([1 / (e + 1), e / (e + 1), 0.5]):
        assert binomial_ok(int(bits[coords == j].sum()), int(counts[j]), p)


@pytest.mark.parametrize("method", METHODS)
def test_aggregator_unbiased_on_constant_time_reports(method):
    """200,000 users with values spread over and beyond the bounds (clipped), ε = 1: the mean
    estimate is within 5 stated standard errors of the clipped values' mean (false alarm 5.7e-7
    per method); the stated error is within 10% of the worst case's scale."""
    oracle = ldp.MeanOracle(method, 1.0, bounds=(-3.0, 5.0), constant_time=True)
    values = np.random.default_rng(7).uniform(-4.0, 6.0, N)
    agg = oracle.aggregator().add(client(oracle, 8).privatize(values))
    truth = np.clip(values, -3.0, 5.0).mean()
    assert abs(agg.mean() - truth) < 5 * agg.mean_stderr()
    assert agg.mean_stderr() <= 1.1 * math.sqrt(oracle.grid_worst_case_variance() / N)


@pytest.mark.parametrize("method", METHODS)
def test_mean_option_recorded_charged_and_refused_where_unsupported(method):
    fo = ldp.MeanOracle(method, 1.5, bounds=(0.0, 10.0), constant_time=True)
    plain = ldp.MeanOracle(method, 1.5, bounds=(0.0, 10.0))
    assert fo.params()["constant_time"] is True and "constant_time" not in plain.params()
    assert fo != plain and ldp.MeanOracle(method, 1.5, bounds=(0.0, 10.0), constant_time=False) == plain
    back = Configuration.from_json(fo.to_json())
    assert back == fo and back.params()["constant_time"] is True
    assert "constant_time=True" in repr(fo)
    loss = fo.privacy_loss()
    assert isinstance(loss, ApproxDP) and loss.epsilon == pytest.approx(1.5)
    assert loss.delta == pytest.approx((1 + math.exp(1.5)) * TV, rel=1e-9)
    assert plain.privacy_loss().pure_epsilon() == pytest.approx(1.5)
    reports = client(fo, 3).privatize(np.arange(8.0))
    assert fo.aggregator().add(reports).n == 8
    with pytest.raises(ValueError):  # a configuration parameter: the default readers refuse them
        plain.aggregator().add(reports)
    with pytest.raises(TypeError, match="constant_time"):
        ldp.MeanOracle(method, 1.5, constant_time="yes")
    with pytest.raises(ValueError, match="93 bits"):  # the fixed-point grid cannot hold 1e-30 and 1
        ldp.MeanOracle(method, 1.5, bounds=(1e-30, 1.0), constant_time=True)
    with pytest.raises(ValueError, match="finite"):
        client(fo, 3).privatize(np.array([1.0, np.nan]))


def test_mean_constant_time_refuses_daily_collection():
    with pytest.raises(ValueError, match="daily collection"):
        ldp.MeanOracle("bitmean", 1.0, instantaneous_epsilon=0.5, constant_time=True)
    with pytest.raises(ValueError, match="daily collection"):
        ldp.MeanOracle("bitmean", 1.0, points=16, constant_time=True)


def test_mean_constant_time_threads_and_bounds_at_the_edges():
    """Reports do not depend on threads; bounds of any sign and magnitude the grid holds work,
    with values at, between and far beyond them (subnormals, −0.0, ±1e300)."""
    oracle = ldp.MeanOracle("hybrid", 1.0, bounds=(-1e-3, 2.5e-3), constant_time=True)
    values = np.array([-0.0, 5e-324, -1e300, 1e300, -1e-3, 2.5e-3, 1e-4] * 20_000)
    one = client(oracle, 9).privatize(values, threads=1)
    two = client(oracle, 9).privatize(values, threads=2)
    assert all(np.array_equal(one.data[k], two.data[k]) for k in one.data)
    for low, high in ((-1e300, 1e300), (2.0**-1000, 2.0**-990), (-5.0, -4.0)):
        o = ldp.MeanOracle("duchi", 1.0, bounds=(low, high), constant_time=True)
        assert o.aggregator().add(client(o, 1).privatize(np.array([low, high, 0.0]))).n == 3


# ---------------------------------------------------------------- zmatrix
def test_zmatrix_keeps_the_public_entry_with_the_exact_probability():
    """200,000 users with items spread over d = 1000 (all 8 words of a ChaCha20 block, many
    blocks) on client-drawn columns: y = ±Z[x, c] with Z's entries from the default client's
    path (zmatrix_entry_bits); kept with probability e^γ/(e^γ + 1) among users whose entry is +1
    and among those whose entry is −1 (binomial, 5 sd: false alarm 5.7e-7 each). Also the same
    entries as the default client's reports when ε is large (ε = 30: flip probability < 1e-13)."""
    fo = ldp.FrequencyOracle("zmatrix", 1.0, 1000, columns=4096, public_key=12, constant_time=True)
    items = np.random.default_rng(4).integers(0, 1000, N)
    r = client(fo, 10).privatize(items).data
    entry = _core.ldp.zmatrix_entry_bits(fo.options["public_key"], items, r["columns"].astype(np.uint64), 1000, True)
    z = 1 - 2 * entry.astype(np.int64)
    kept = r["y"].astype(np.int64) == z
    p = math.exp(float(fo.gamma)) / (math.exp(float(fo.gamma)) + 1)
    for sign in (1, -1):
        assert binomial_ok(int(kept[z == sign].sum()), int((z == sign).sum()), p)
    sure = ldp.FrequencyOracle("zmatrix", 30.0, 1000, columns=4096, public_key=12, constant_time=True)
    cols = np.arange(2000) % 4096
    y = client(sure, 11).privatize(items[:2000], columns=cols).data["y"]
    entry = _core.ldp.zmatrix_entry_bits(sure.options["public_key"], items[:2000], cols.astype(np.uint64), 1000, False)
    assert np.array_equal(y.astype(np.int64), 1 - 2 * entry.astype(np.int64))


def test_zmatrix_constant_time_estimates_and_loss():
    """ε = 2, d = 8, 50,000 users, 2^20 columns: every estimate within 5 stated standard errors
    (false alarm < 5e-6 over 8 items); the loss is ApproxDP(ε, (1 + e^ε)·2^-64)."""
    fo = ldp.FrequencyOracle("zmatrix", 2.0, 8, public_key=3, constant_time=True)
    truth = np.repeat(np.arange(8), [20000, 10000, 8000, 5000, 4000, 2000, 1000, 0])
    agg = fo.aggregator().add(client(fo, 12).privatize(truth))
    assert (np.abs(agg.estimate() - np.bincount(truth, minlength=8)) < 5 * agg.stderr()).all()
    loss = fo.privacy_loss()
    assert isinstance(loss, ApproxDP) and loss.delta == pytest.approx((1 + math.exp(2.0)) * TV, rel=1e-9)
