"""``constant_time=True`` on the local-DP frequency oracles (those whose kernel table has a
constant-time row: CONSTANT_TIME_PROTOCOLS below, checked against the declarations; the bit
randomizers' exact laws in test_constant_time_ldp_bits.py): the report law equals the default client's, the
aggregators stay unbiased, the option is a recorded configuration parameter, and every other
configuration refuses it. Statistical tests use fixed seeds; each states its false-alarm rate."""
import math

import numpy as np
import pytest

import dpnoise
from dpnoise import _core, ldp
from dpnoise.accounting.losses import ApproxDP
from dpnoise.ldp import Configuration

# frequency oracles that declare constant-time kernels (their kernel tables' constant-time rows):
# written out here so that a protocol losing its row is caught
CONSTANT_TIME_PROTOCOLS = ("grr", "olh", "flh", "sue", "oue", "hadamard", "cms", "hcms", "dbitflip", "zmatrix")

TV = 2.0**-64
N = 200_000


def client(fo, seed):
    return fo.client(dpnoise.default_rng(seed), allow_insecure=True)


def chi2(counts, probs):
    expected = np.asarray(probs, dtype=np.float64) * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.mark.parametrize("name", ["olh", "flh"])
def test_hashed_bucket_law_matches_grr_over_g(name):
    """200,000 users holding item 3, ε = 2 (g = 8): the offset (value − h_seed(3)) mod g is 0
    with probability p = e^γ/(e^γ + g − 1) (the default client's exact law) and each other
    offset with (1 − p)/(g − 1): chi-square, 7 d.o.f., alpha 1e-6 (critical 40.52). The seeds'
    top 4 bits (OLH, 15 d.o.f., critical 56.49, twice) or the pool indices (FLH, k′ = 16, 15
    d.o.f.) are uniform. Family-wise false alarm < 3e-6 per protocol."""
    opts = {"k_prime": 16} if name == "flh" else {}
    fo = ldp.FrequencyOracle(name, 2.0, 10, constant_time=True, **opts)
    assert fo.g == 8
    r = client(fo, 31).privatize(np.full(N, 3)).data
    seeds = r["seeds"] if name == "olh" else np.ascontiguousarray(fo.pool[r["indices"]])
    offset = (r["values"] - _core.ldp.local_hash(seeds, np.full(N, 3), fo.g, name == "flh")) % fo.g
    p = fo._pq()[0]
    assert chi2(np.bincount(offset, minlength=8), [p] + [(1 - p) / 7] * 7) < 40.52
    tops = [(r["seeds"][:, c] >> np.uint64(60)).astype(np.int64) for c in (0, 1)] if name == "olh" else [r["indices"]]
    for top in tops:
        assert chi2(np.bincount(top, minlength=16), [1 / 16] * 16) < 56.49


def test_sue_report_law_is_the_product_of_binary_rr():
    """200,000 users holding item 1 of d = 4: each of the 16 possible reports has probability
    Π_x (p if bit x = [x = 1] else 1 − p), p = e^{γ/2}/(e^{γ/2} + 1), as for the default
    client (independent bits: the joint law, not only the marginals). Chi-square, 15 d.o.f.,
    alpha 1e-6 (critical 56.49). The padding bits are zero (deterministic)."""
    fo = ldp.FrequencyOracle("sue", 2.0, 4, constant_time=True)
    bits = client(fo, 32).privatize(np.full(N, 1)).data["bits"][:, 0]
    assert not (bits >> np.uint64(4)).any()
    p = fo._pq()[0]
    probs = [math.prod(p if ((v >> x) & 1) == (x == 1) else 1 - p for x in range(4)) for v in range(16)]
    assert math.isclose(sum(probs), 1.0)
    assert chi2(np.bincount(bits.astype(np.int64), minlength=16), probs) < 56.49


TRUTH = np.repeat(np.arange(5), [400, 300, 200, 80, 20])
# options that keep the constant-time clients small (the sketches' width) and the public keys fixed
OPTIONS = {"flh": {"k_prime": 16, "pool_key": 5}, "dbitflip": {"pool_key": 5}, "cms": {"hashes": 4, "width": 16, "public_key": 5},
           "hcms": {"hashes": 4, "width": 16, "public_key": 5}, "zmatrix": {"public_key": 5}}
# m, the constant-time draws per report at d = 6 (the δ term): SUE/OUE d, dBitFlip b = 6, CMS m + 1
DRAWS = {"sue": 6, "oue": 6, "dbitflip": 6, "cms": 17, "hcms": 2}


@pytest.mark.parametrize("name", CONSTANT_TIME_PROTOCOLS)
def test_aggregator_unbiased_on_constant_time_reports(name):
    """300 seeded runs of 1,000 users (d = 5; FLH with a fresh pool key per run, over which
    it is unbiased): the mean error of every item is within 4.5 standard errors of 0
    (two-sided 6.8e-6 per item, 5 items: false alarm < 4e-5 per protocol)."""
    runs = 300
    errors = np.empty((runs, 5))
    for r in range(runs):
        # a fresh public key per run (FLH, the sketches, dBitFlip are unbiased over it)
        opts = {**OPTIONS.get(name, {}), **({"pool_key": r} if name in ("flh", "dbitflip") else {})}
        opts = {**opts, "k_prime": 64} if name == "flh" else opts
        opts = {**opts, "public_key": r} if name in ("cms", "hcms", "zmatrix") else opts
        fo = ldp.FrequencyOracle(name, 1.0, 5, constant_time=True, **opts)
        agg = fo.aggregator().add(client(fo, 1000 + r).privatize(TRUTH))
        errors[r] = agg.estimate() - np.bincount(TRUTH, minlength=5)
    se = errors.std(axis=0, ddof=1) / math.sqrt(runs)
    assert (np.abs(errors.mean(axis=0)) < 4.5 * se).all()


@pytest.mark.parametrize("name", CONSTANT_TIME_PROTOCOLS)
def test_option_is_a_recorded_configuration_parameter(name):
    opts = OPTIONS.get(name, {})
    fo = ldp.FrequencyOracle(name, 1.5, 6, constant_time=True, **opts)
    plain = ldp.FrequencyOracle(name, 1.5, 6, **opts)
    off = ldp.FrequencyOracle(name, 1.5, 6, constant_time=False, **opts)
    assert fo.params()["constant_time"] is True
    assert "constant_time" not in plain.params() and off == plain  # older blobs keep matching
    assert fo != plain
    back = Configuration.from_json(fo.to_json())
    assert back == fo and back.params()["constant_time"] is True
    m = DRAWS.get(name, 1)
    loss = fo.privacy_loss()
    assert isinstance(loss, ApproxDP) and loss.epsilon == pytest.approx(1.5)
    assert loss.delta == pytest.approx((1 + math.exp(1.5)) * m * TV, rel=1e-9)
    assert plain.privacy_loss().pure_epsilon() == pytest.approx(1.5)
    reports = client(fo, 7).privatize(np.arange(6))
    agg = fo.aggregator().add(reports)
    assert agg.n == 6
    with pytest.raises(ValueError):  # a configuration parameter: the default readers refuse them
        plain.aggregator().add(reports)
    with pytest.raises(TypeError, match="constant_time"):
        ldp.FrequencyOracle(name, 1.5, 6, constant_time="yes", **opts)
    if plain.longitudinal:  # with a daily layer too: tests/ldp/test_constant_time_longitudinal.py
        both = ldp.FrequencyOracle(name, 1.5, 6, constant_time=True, instantaneous_epsilon=1.0, **opts)
        assert both.privacy_loss().loss.permanent_epsilon == 1.5


def test_support_is_read_from_the_declarations():
    """Which configurations take constant_time=True is what their kernel tables declare: the
    frequency oracles above, every mean method, and the heavy-hitters methods but string_pem."""
    declared = {fam: sorted(n for n, c in base.registered().items() if c.supports("constant_time"))
                for fam, base in Configuration.families().items()}
    assert set(CONSTANT_TIME_PROTOCOLS) <= set(declared["frequency"])  # (and any protocol added since)
    assert declared["mean"] == sorted(Configuration.families()["mean"].registered())
    assert declared["heavy_hitters"] == ["bitstogram", "pem", "treehist"]
    with pytest.raises(ValueError, match="variant"):
        Configuration.supports("shuffled")


def _refusing_configurations():
    for family, base in Configuration.families().items():
        for name, cls in base.registered().items():
            if not cls.supports("constant_time"):  # the others: here and test_heavy_hitters_constant_time.py
                yield pytest.param(cls, id=f"{family}-{name}")


@pytest.mark.parametrize("cls", list(_refusing_configurations()))
def test_other_configurations_refuse_constant_time(cls, monkeypatch):
    """Every other registered configuration: constant_time=True is a ValueError naming the
    argument and the supporting protocols, before anything is built; False is accepted and
    not recorded."""
    plain = cls.example()
    for flag in (False, True):
        monkeypatch.setattr(cls, "example_options", {**cls.example_options, "constant_time": flag})
        make = cls.example
        if flag:
            with pytest.raises(ValueError, match=r"constant_time=True.*frequency: 'cms', 'dbitflip',.* 'grr'"):
                make()
        else:
            assert "constant_time" not in make().params()
    assert "constant_time" not in plain.params()


def test_factories_refuse_constant_time():
    assert ldp.FrequencyOracle("oue", 1.0, 8, constant_time=True).params()["constant_time"] is True
    with pytest.raises(TypeError, match="constant_time"):
        ldp.FrequencyOracle("hadamard", 1.0, 8, constant_time=1)


@pytest.mark.parametrize("name", [n for n in CONSTANT_TIME_PROTOCOLS if ldp.FrequencyOracle(n, 1.0, 6).longitudinal])
def test_daily_collection_loss_is_unchanged(name):
    """The constant-time loss lives in Protocol.privacy_loss: with instantaneous_epsilon every
    daily-collection protocol still states both layers (GRR's own override used to return PureDP)."""
    fo = ldp.FrequencyOracle(name, 2.0, 6, instantaneous_epsilon=1.0)
    loss = fo.privacy_loss()
    assert isinstance(loss, ldp.longitudinal.LongitudinalDP) and loss.permanent_epsilon == 2.0
