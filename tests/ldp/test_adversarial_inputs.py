"""Defects an adversarial review found in the frequency-oracle framework, each pinned by a
test: forged serialised states and report batches, malformed Reports, tiny ε, forged
aggregator states that are internally inconsistent, and post-processing at float extremes."""
from __future__ import annotations

import hashlib
import json
import math
import struct

import numpy as np
import pytest

import dpnoise
from dpnoise import ldp
from dpnoise.ldp._wire import FREQUENCY_REPORTS as _REPORTS_MAGIC, FREQUENCY_STATE as _MAGIC, frame as _frame, jsonable as _jsonable

CONFIGS = {
    "grr": {}, "oue": {}, "sue": {}, "olh": {}, "flh": {"k_prime": 50}, "hadamard": {},
    "cms": {"hashes": 4, "width": 16, "public_key": 7}, "hcms": {"hashes": 4, "width": 16, "public_key": 7},
    "zmatrix": {"columns": 128, "planes": 2},
}


def rng(seed=1):
    return dpnoise.default_rng(seed)


def client(fo):
    return fo.client(rng(), allow_insecure=True)


def rewrite_header(blob: bytes, magic: bytes, change) -> bytes:
    """The blob with its JSON header edited by ``change`` and the checksum recomputed (what a
    forger with the format in hand can do; the checksum only catches accidents)."""
    (hlen,) = struct.unpack_from("<I", blob, len(magic))
    start = len(magic) + 4
    head = json.loads(blob[start:start + hlen])
    change(head)
    h2 = json.dumps(head, sort_keys=True).encode()
    body = magic + struct.pack("<I", len(h2)) + h2 + blob[start + hlen:-32]
    return body + hashlib.sha256(body).digest()


def raw(magic, header, payload=b""):
    head = json.dumps(header).encode()
    body = magic + struct.pack("<I", len(head)) + head + payload
    return body + hashlib.sha256(body).digest()


# -- 1. a missing parameter is never filled with its default -----------------------------------
@pytest.mark.parametrize("name,option", [("cms", "public_key"), ("hcms", "public_key"), ("flh", "pool_key"),
                                         ("zmatrix", "public_key"), ("olh", "g"), ("zmatrix", "planes")])
def test_dropped_parameter_is_refused(name, option):
    opts = dict(CONFIGS[name])
    if option == "pool_key":
        opts["pool_key"] = 99
    if option == "public_key" and name == "zmatrix":
        opts["public_key"] = 12345
    fo = ldp.FrequencyOracle(name, 2.0, 50, **opts)
    agg = fo.aggregator().add(client(fo).privatize(np.arange(20) % 50))

    def drop(head):
        del head["params"][option]

    with pytest.raises(ValueError, match="corrupt aggregator state"):
        ldp.Aggregator.from_bytes(rewrite_header(agg.to_bytes(), _MAGIC, drop))
    with pytest.raises(ValueError, match="corrupt report batch"):
        ldp.Reports.from_bytes(rewrite_header(client(fo).privatize([1, 2]).to_bytes(), _REPORTS_MAGIC, drop))


def test_extra_or_inconsistent_parameters_are_refused():
    fo = ldp.FrequencyOracle("grr", 1.0, 10)
    blob = fo.aggregator().to_bytes()
    for change in (lambda h: h["params"].update(zz=1),
                   lambda h: h["params"].update(gamma={"fraction": [1, 3]}),
                   lambda h: h["params"].update(epsilon=2.0)):
        with pytest.raises(ValueError, match="corrupt aggregator state"):
            ldp.Aggregator.from_bytes(rewrite_header(blob, _MAGIC, change))
    assert ldp.Aggregator.from_bytes(blob).protocol == fo  # the untouched state loads


# -- 5. forged headers raise ValueError, never another exception -------------------------------
def test_forged_headers_raise_value_error():
    fo = ldp.FrequencyOracle("grr", 1.0, 10)
    params = _jsonable(fo.params())
    counts = [("counts", np.zeros(10, np.int64))]

    def blob(p):
        return _frame(_MAGIC, {"protocol": "grr", "params": p, "n": 0}, counts)

    forged = [
        blob([1, 2]), blob("x"),
        blob({k: v for k, v in params.items() if k != "epsilon"}),
        blob({k: v for k, v in params.items() if k != "gamma"}),
        blob({**params, "gamma": {"fraction": [1]}}),
        blob({**params, "gamma": {"fraction": [1, 0]}}),
        blob({**params, "gamma": {"hex": "zz"}}),
        blob({**params, "epsilon": "1.0"}),
        blob({**params, "epsilon": 10 ** 400}),
        blob({**params, "domain_size": 10.0}),
    ]
    head = {"protocol": "grr", "params": params, "n": 0, "format": 1}
    for shape in ([2 ** 70], [2 ** 62, 4], [2 ** 32, 2 ** 32], [1e300], ["inf"], "ab", [True]):
        forged.append(raw(_MAGIC, {**head, "arrays": [["counts", "<i8", shape]]}))
    for dtype in ("M8", "c16", "(2,)i8", [["a", "<i8"]]):
        forged.append(raw(_MAGIC, {**head, "arrays": [["counts", dtype, [10]]]}))
    forged.append(raw(_MAGIC, {**head, "arrays": [["a", "<i8", [1], 3]]}))
    forged.append(raw(_MAGIC, [1, 2]))
    deep = "[" * 100_000 + "]" * 100_000  # json.loads recursion
    body = _MAGIC + struct.pack("<I", len(deep)) + deep.encode()
    forged.append(body + hashlib.sha256(body).digest())
    for i, b in enumerate(forged):
        with pytest.raises(ValueError):
            ldp.Aggregator.from_bytes(b)


# -- 2. Reports are type-checked when built ----------------------------------------------------
def test_reports_n_and_data_are_checked():
    fo = ldp.FrequencyOracle("grr", 1.0, 10)
    rep = client(fo).privatize([1, 2, 3])
    with pytest.raises(TypeError, match="Reports.n"):
        ldp.Reports(rep.protocol, rep.params, 3.0, rep.data)
    with pytest.raises(TypeError, match="Reports.n"):
        ldp.Reports(rep.protocol, rep.params, -1, rep.data)
    with pytest.raises(TypeError, match="Reports.n"):
        ldp.Reports(rep.protocol, rep.params, True, rep.data)
    with pytest.raises(TypeError, match="Reports.data"):
        ldp.Reports(rep.protocol, rep.params, 3, None)
    with pytest.raises(TypeError, match="Reports.data"):
        ldp.Reports(rep.protocol, rep.params, 3, {"values": [1, 2, 3]})
    # a NumPy integer count is stored as a Python int, so the state still serialises
    r2 = ldp.Reports(rep.protocol, rep.params, np.int64(3), rep.data)
    assert type(r2.n) is int
    agg = fo.aggregator().add(r2)
    assert type(agg.n) is int and ldp.Aggregator.from_bytes(agg.to_bytes()).n == 3


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_extra_report_arrays_are_refused(name):
    fo = ldp.FrequencyOracle(name, 1.0, 50, **CONFIGS[name])
    rep = client(fo).privatize(np.arange(10))
    agg = fo.aggregator()
    before = agg.to_bytes()
    with pytest.raises(ValueError, match="exactly"):
        agg.add(ldp.Reports(rep.protocol, rep.params, rep.n, {**rep.data, "zz": np.zeros(1)}))
    assert agg.to_bytes() == before


def test_aggregator_refuses_more_than_2_62_reports():
    fo = ldp.FrequencyOracle("grr", 1.0, 4)
    agg = fo.aggregator()
    agg.n = (1 << 62) - 1  # as if it had counted that many
    rep = client(fo).privatize([0, 1])
    with pytest.raises(ValueError, match="2\\^62"):
        agg.add(rep)
    assert agg.n == (1 << 62) - 1


# -- 7. items: dtypes and the empty batch ------------------------------------------------------
def test_items_dtype_and_empty_batches():
    fo = ldp.FrequencyOracle("grr", 1.0, 10)
    cl = client(fo)
    with pytest.raises(TypeError, match="items must be integers"):
        cl.privatize(np.array([1, 2], dtype="m8[s]"))
    with pytest.raises(TypeError, match="items must be integers"):
        cl.privatize(np.array([1.0]))
    for empty in ([], (), np.array([], dtype=np.int64)):
        assert cl.privatize(empty).n == 0
    with pytest.raises(TypeError):
        cl.privatize(np.array([], dtype=np.float64))  # an explicit float array stays refused


# -- 3. tiny and huge ε ------------------------------------------------------------------------
def test_epsilon_bounds_are_value_errors():
    for bad in (2.0 ** -51, 1e-19, 10 ** 400, 101.0):
        with pytest.raises(ValueError, match="epsilon"):
            ldp.FrequencyOracle("grr", bad, 10)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("eps", [2.0 ** -50, 1e-12, 1e-6])
def test_tiny_epsilon_gives_finite_accurate_formulas(name, eps):
    """The de-biasing factors come from expm1: at tiny ε they equal their series expansions
    (e.g. (e^ε+1)/(e^ε−1) = 2/ε + ε/6 + ...) to near machine precision, where e^ε − 1 in
    floating point would be 0 (ZeroDivisionError) or off by up to 100%."""
    fo = ldp.FrequencyOracle(name, eps, 50, **CONFIGS[name])
    g = float(fo.gamma)
    agg = fo.aggregator().add(client(fo).privatize(np.arange(20) % 50))
    est, var = agg.estimate(), agg.variance()
    assert np.all(np.isfinite(est)) and np.all(np.isfinite(var)) and np.all(var > 0)
    if hasattr(fo, "scale"):
        half = name == "cms"
        x = g / 2 if half else g
        assert fo.scale() == pytest.approx(2 / x + x / 6, rel=1e-9)
    vpu = fo.variance_per_user()
    if name in ("oue", "olh", "flh"):  # OUE/OLH: 4e^ε/(e^ε−1)² ≈ 4/ε² (OLH at the optimal g = 2: 4/ε² too)
        assert vpu == pytest.approx(4 / g ** 2, rel=1e-5)
    if name == "grr":  # (e^ε + d − 2)/(e^ε − 1)² ≈ (d − 1)/ε²
        assert vpu == pytest.approx(49 / g ** 2, rel=1e-5)


def test_variance_formulas_use_expm1():
    from dpnoise.ldp._channels import grr_variance, olh_variance, one_bit_variance
    e = 1e-10
    assert grr_variance(e, 2) == pytest.approx(1 / e ** 2, rel=1e-6)
    assert olh_variance(e) == pytest.approx(4 / e ** 2, rel=1e-6)
    assert one_bit_variance(e) == pytest.approx(4 / e ** 2, rel=1e-6)
    assert one_bit_variance(2.0) == pytest.approx(((math.e ** 2 + 1) / (math.e ** 2 - 1)) ** 2, rel=1e-14)


# -- 4. loaded states are checked for consistency ----------------------------------------------
def _forge(fo, n, state):
    return _frame(_MAGIC, {"protocol": fo.name, "params": _jsonable(fo.params()), "n": n}, sorted(state.items()))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_inconsistent_states_are_refused(name):
    fo = ldp.FrequencyOracle(name, 1.0, 50, **CONFIGS[name])
    agg = fo.aggregator().add(client(fo).privatize(np.arange(30) % 50))
    good = {k: v.copy() for k, v in agg._state.items()}
    assert ldp.Aggregator.from_bytes(_forge(fo, agg.n, good)).to_bytes() == agg.to_bytes()
    # claim fewer reports than the state holds: every protocol's state bounds its n from below
    with pytest.raises(ValueError, match="corrupt aggregator state"):
        ldp.Aggregator.from_bytes(_forge(fo, 1, good))
    # a huge counter
    key = sorted(good)[0] if name != "zmatrix" else "magnitude"
    bad = {k: v.copy() for k, v in good.items()}
    if bad[key].dtype == np.int64:
        bad[key].reshape(-1)[0] = 2 ** 62
    else:
        bad[key][...] = np.uint64(2 ** 64 - 1) >> np.uint64(2)  # many columns with large sums
        bad["sign"][...] = 0
    with pytest.raises(ValueError, match="corrupt aggregator state"):
        ldp.Aggregator.from_bytes(_forge(fo, agg.n, bad))


def test_negative_counts_are_refused():
    fo = ldp.FrequencyOracle("grr", 1.0, 4)
    with pytest.raises(ValueError, match="non-negative"):
        ldp.Aggregator.from_bytes(_forge(fo, 1, {"counts": np.array([-1, 1, 0, 1], np.int64)}))
    fo = ldp.FrequencyOracle("oue", 1.0, 4)
    with pytest.raises(ValueError, match="\\[0, n\\]"):
        ldp.Aggregator.from_bytes(_forge(fo, 2, {"counts": np.array([-1, 1, 0, 1], np.int64)}))


# -- 7. caches handed out are read-only ----------------------------------------------------------
def test_cached_arrays_are_read_only():
    fo = ldp.FrequencyOracle("flh", 1.0, 10, k_prime=5)
    a = fo.aggregator().add(client(fo).privatize(np.arange(10)))
    est = a.estimate()
    with pytest.raises(ValueError):
        a.support()[:] = 10 ** 6
    assert np.array_equal(a.estimate(), est)
    fo = ldp.FrequencyOracle("zmatrix", 1.0, 10, columns=64)
    z = fo.aggregator().add(client(fo).privatize(np.arange(10)))
    with pytest.raises(ValueError):
        z.column_sums()[0] = 5


# -- 6. post-processing at float extremes --------------------------------------------------------
def test_postprocessing_when_total_is_below_float_spacing():
    from dpnoise.ldp import norm_sub, project_simplex
    assert np.array_equal(project_simplex([1e17, 5.0], 1.0), [1.0, 0.0])
    assert np.array_equal(norm_sub([1e17, 3.0], 1.0), [1.0, 0.0])
    assert np.array_equal(project_simplex([1e308, 1e308], 1.0), [0.5, 0.5])
    out = project_simplex([1.0, 2.0], 5e-324)
    assert out.sum() == 5e-324 and out[0] == 0
    assert np.array_equal(project_simplex(np.array([2 ** 63 - 1, 5]), 3), [3.0, 0.0])
    with pytest.raises(ValueError, match="total"):
        norm_sub([1.0], 10 ** 400)


def test_flh_default_pool_shrinks_at_large_epsilon():
    """k′ g counters must fit 2^24: the default k′ = 10,000 gives way to ⌊2^24/g⌋ above ε ≈ 7.4
    (it used to refuse the default configuration there)."""
    fo = ldp.FrequencyOracle("flh", 8.0, 1000)
    assert fo.options["k_prime"] == (1 << 24) // fo.g < 10_000
    assert ldp.FrequencyOracle("flh", 2.0, 1000).options["k_prime"] == 10_000
    with pytest.raises(ValueError, match="k_prime \\* g"):
        ldp.FrequencyOracle("flh", 8.0, 1000, k_prime=10_000)
