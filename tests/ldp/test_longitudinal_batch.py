"""Memoised reports of many devices in one call (issue 22 item 3: ``client(device_key=)``,
and ``privatize(items, device_keys=)`` for a batch of devices): the C++ keyed-row kernel must
give exactly the reports of the per-row Python path (keyed BLAKE2b PRF -> ChaCha20 generator ->
the protocol's randomizer). The reference outputs below were computed by that Python path
before the kernel existed (dpnoise main at b475648), so any change of bits fails here."""
import hashlib

import numpy as np
import pytest

import dpnoise
from dpnoise import ldp
from dpnoise.accounting import PrivacyBudget

KEYS = [bytes(range(i, i + 32)) for i in (0, 7, 200)]
ITEMS = [3, 41, 49999]
OPTIONS = {"grr": {}, "olh": {"pool_size": 1024, "pool_key": 77}, "oue": {}, "sue": {}}
# per device key: its three reports of ITEMS % d (olh: values and the first seed word; unary at
# d = 50: the one word of bits; at d = 50,000 the first 16 hex digits of sha256 of the bits)
REFERENCE = {
    ('grr', 50): [[47, 32, 32], [3, 47, 11], [29, 45, 3]],
    ('grr', 50000): [[35537, 17394, 34707], [40154, 44844, 32658], [8776, 20713, 13656]],
    ('olh', 50): [([4, 1, 5], [9076400924137789140, 18158615245280106944, 12479152105902311702]),
                  ([2, 1, 0], [16648767542465533585, 8370349422896558697, 4449697356410725716]),
                  ([1, 5, 0], [14528374073516302907, 10892279502399768145, 658069577278798852])],
    ('olh', 50000): [([1, 2, 6], [12683289971414732938, 12564081447678921108, 11187863123512848405]),
                     ([2, 4, 0], [10367061973405477604, 10948129391808353629, 2130375193512587984]),
                     ([0, 0, 7], [12448592710746297743, 865760442909565201, 15800381084204428421])],
    ('oue', 50): [[8865349369864, 4398046511170, 848823247482880], [8589938754, 310070872114448, 565183873312768],
                  [23107196699930, 424423299481600, 565288580416004]],
    ('oue', 50000): ['f7daa125f52f470a', '7db566f562290dd3', 'b39a36bfa7cdaa48'],
    ('sue', 50): [[572339083855905, 37671158428416, 740539360101125], [703711621939342, 65150358914596, 884301890859012],
                  [101293049807576, 346517966032916, 598757447042448]],
    ('sue', 50000): ['4443dfad626d0ad4', '74f90ad32ff472a7', 'cf56087dccca2a13'],
}


def summary(name, d, data):
    if name == "olh":
        return (data["values"].tolist(), data["seeds"][:, 0].tolist())
    if name == "grr":
        return data["values"].tolist()
    bits = data["bits"]
    return hashlib.sha256(bits.tobytes()).hexdigest()[:16] if d > 64 else bits[:, 0].tolist()


@pytest.mark.parametrize("name,d", sorted(REFERENCE))
def test_memoised_reports_keep_their_bits(name, d):
    fo = ldp.FrequencyOracle(name, 2.0, d, **OPTIONS[name])
    items = [x % d for x in ITEMS]
    for key, want in zip(KEYS, REFERENCE[(name, d)]):
        assert summary(name, d, fo.client(device_key=key).privatize(items).data) == want
    # the batch API: the same (key, item) gives the same report, in any row order
    keys = np.frombuffer(b"".join(k for k in KEYS for _ in items), dtype=np.uint8).reshape(-1, 32)
    order = np.random.default_rng(1).permutation(len(keys))
    batch = fo.client().privatize(np.tile(items, len(KEYS))[order], device_keys=keys[order])
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    for i, want in enumerate(REFERENCE[(name, d)]):
        rows = back[3 * i:3 * i + 3]
        assert summary(name, d, {f: v[rows] for f, v in batch.data.items()}) == want
    as_bytes = fo.client().privatize(items, device_keys=[KEYS[1]] * 3, threads=2)
    assert summary(name, d, as_bytes.data) == REFERENCE[(name, d)][1]


def test_prf_is_keyed_blake2b():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 256, size=(50, 32), dtype=np.uint8)
    items = rng.integers(-2**63, 2**63 - 1, size=50, dtype=np.int64)
    fp = bytes(range(100, 132))
    got = dpnoise._core.ldp.memo_keys(keys, fp, b"dpnoise-memo-v1", items)
    for k, x, g in zip(keys, items, got):
        h = hashlib.blake2b(key=k.tobytes(), digest_size=32, person=b"dpnoise-memo-v1")
        h.update(fp)
        h.update(int(x).to_bytes(8, "little", signed=True))
        assert h.digest() == g.tobytes()


@pytest.mark.parametrize("name,opts", [("flh", {"pool_key": 5}), ("grr", {"constant_time": True}),
                                       ("dbitflip", {})])
def test_protocols_without_the_kernel_batch_row_by_row(name, opts):
    fo = ldp.FrequencyOracle(name, 2.0, 40, **opts)
    items = np.array([1, 5, 39, 5])
    keys = [KEYS[0], KEYS[1], KEYS[2], KEYS[1]]
    batch = fo.client().privatize(items, device_keys=keys)
    for i, key in enumerate(keys):
        one = fo.client(device_key=key).privatize(items[i:i + 1])
        assert all(np.array_equal(batch.data[f][i:i + 1], one.data[f]) for f in one.data)


def test_instantaneous_layer_and_budget_per_report():
    fo = ldp.FrequencyOracle("grr", 2.0, 100, instantaneous_epsilon=0.5)
    budget = PrivacyBudget(10.0)
    client = fo.client(dpnoise.default_rng(4), allow_insecure=True, budget=budget)
    reports = client.privatize(np.arange(8), device_keys=[KEYS[0]] * 8)
    assert len(reports) == 8 and budget.spent_epsilon == pytest.approx(8 * 0.5)
    agg = fo.aggregator().add(reports)
    assert agg.n == 8


def test_bad_device_keys_charge_nothing():
    fo = ldp.FrequencyOracle("grr", 1.0, 10)
    budget = PrivacyBudget(5.0)
    client = fo.client(budget=budget)
    cases = [(TypeError, b"x" * 32), (TypeError, np.zeros((2, 32), np.int64)), (TypeError, np.zeros((2, 31), np.uint8)),
             (ValueError, [KEYS[0]]), (ValueError, [KEYS[0], b"short"]), (TypeError, [KEYS[0], 5]), (TypeError, 7)]
    for err, keys in cases:
        with pytest.raises(err, match="device_key"):
            client.privatize([1, 2], device_keys=keys)
    with pytest.raises(ValueError, match="device_key"):
        fo.client(device_key=KEYS[0]).privatize([1], device_keys=[KEYS[1]])
    with pytest.raises(ValueError, match="device_key"):
        ldp.FrequencyOracle("olh", 1.0, 10).client().privatize([1], device_keys=[KEYS[1]])  # no public pool
    with pytest.raises(ValueError, match="device_key"):
        ldp.FrequencyOracle("hadamard", 1.0, 10).client().privatize([1], device_keys=[KEYS[1]])
    assert budget.spent_epsilon == 0


@pytest.mark.parametrize("name,opts", [("grr", {}), ("grr", {"instantaneous_epsilon": 1.0}), ("olh", {"pool_size": 16}),
                                       ("olh", {"instantaneous_epsilon": 1.0}), ("oue", {"instantaneous_epsilon": 0.5}),
                                       ("sue", {}), ("oue", {})])
def test_kernel_rows_equal_the_python_rows(name, opts):
    """The permanent layer from the keyed-row kernel against the generator-per-row path, on
    random keys and items (OLH with instantaneous_epsilon and no pool: per-device secret seeds)."""
    from dpnoise.ldp._memo import memo_fingerprint, memo_generator, memoised_batch

    fo = ldp.FrequencyOracle(name, 1.5, 300, **opts)
    rng = np.random.default_rng(8)
    keys = rng.integers(0, 256, size=(40, 32), dtype=np.uint8)
    items = rng.integers(0, 300, size=40)
    fp = memo_fingerprint(fo)
    fast = memoised_batch(fo, keys, fp, items, threads=2)
    for i in range(40):
        slow = fo._privatize(memo_generator(keys[i].tobytes(), fp, int(items[i])), items[i:i + 1], 1)
        assert all(np.array_equal(fast[f][i:i + 1], slow[f]) for f in slow)
