"""Memoised batches (``privatize(items, device_keys=)``): the keyed-row kernel is chosen by a
per-configuration hook (``_memo_rows_kernel``), not by the protocol's name; a bad key of the
batch is named by its index (never its bytes); and the configuration's own refusal runs even
for an empty batch. No randomness is tested here: every comparison is of exact bits."""
import numpy as np
import pytest

from dpnoise import ldp
from dpnoise.accounting import PrivacyBudget
from dpnoise.ldp import _memo
from dpnoise.ldp._memo import memo_fingerprint, memoised_batch, memoised_reports

KERNEL_CASES = {"grr": {}, "olh": {"pool_size": 16, "pool_key": 3}, "oue": {}, "sue": {}}


def small_batch(d, n=12, seed=21):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, size=(n, 32), dtype=np.uint8),
            rng.integers(0, d, size=n).astype(np.int64))


@pytest.mark.parametrize("name", sorted(KERNEL_CASES))
def test_hook_bits_equal_the_per_row_path(name):
    """Each protocol's keyed-row kernel gives exactly the bits of the generator-per-row path,
    and its constant-time configuration has no kernel (None: the per-row path)."""
    fo = ldp.FrequencyOracle(name, 1.5, 70, **KERNEL_CASES[name])
    keys, items = small_batch(70)
    fp = memo_fingerprint(fo)
    fast = fo._memo_rows_kernel(keys, fp, _memo._MEMO_PERSON, items, 2)
    rows = _memo._memo_rows(fo, keys, fp, items)
    assert fast is not None and sorted(fast) == sorted(rows[0])
    for field in fast:
        np.testing.assert_array_equal(fast[field], np.concatenate([r[field] for r in rows]))
    slow = ldp.FrequencyOracle(name, 1.5, 70, constant_time=True, **KERNEL_CASES[name])
    assert slow._memo_rows_kernel(keys, memo_fingerprint(slow), _memo._MEMO_PERSON, items, 1) is None


@pytest.mark.parametrize("name,opts", [("flh", {"pool_key": 5}), ("dbitflip", {}), ("hadamard", {})])
def test_protocols_without_a_kernel_return_none(name, opts):
    fo = ldp.FrequencyOracle(name, 1.5, 40, **opts)
    keys, items = small_batch(40)
    assert fo._memo_rows_kernel(keys, memo_fingerprint(fo), _memo._MEMO_PERSON, items, 1) is None


def test_the_hook_is_what_dispatches(monkeypatch):
    """memoised_batch and memoised_reports take whatever the configuration's hook returns: a
    protocol outside grr/olh/oue/sue that opts in is used, and one of them that opts out goes
    row by row (so no list of names decides)."""
    calls = []

    def spy(self, keys, fingerprint, person, items, threads):
        calls.append((self.name, keys.shape, fingerprint, person, items.tolist(), threads))
        return {"values": np.full(items.shape[0], 7, dtype=np.int64)}

    fo = ldp.FrequencyOracle("flh", 1.5, 40, pool_key=5)
    monkeypatch.setattr(type(fo), "_memo_rows_kernel", spy)
    keys, items = small_batch(40, n=3)
    fp = memo_fingerprint(fo)
    assert memoised_batch(fo, keys, fp, items, threads=2)["values"].tolist() == [7, 7, 7]
    assert memoised_reports(fo, keys[0].tobytes(), fp, items)["values"].tolist() == [7, 7, 7]
    assert calls == [("flh", (3, 32), fp, b"dpnoise-memo-v1", items.tolist(), 2),
                     ("flh", (1, 32), fp, b"dpnoise-memo-v1", items.tolist(), 1)]

    grr = ldp.FrequencyOracle("grr", 1.5, 40)
    monkeypatch.setattr(type(grr), "_memo_rows_kernel", lambda self, *args: None)
    rows = _memo._memo_rows(grr, keys, memo_fingerprint(grr), items)
    batch = grr.client().privatize(items, device_keys=keys)
    np.testing.assert_array_equal(batch.data["values"], np.concatenate([r["values"] for r in rows]))


SECRET = bytes(range(100, 131))  # 31 bytes: must never appear in a message


@pytest.mark.parametrize("as_bytearray", [False, True])
def test_bad_key_of_a_batch_is_named_by_its_index(as_bytearray):
    fo = ldp.FrequencyOracle("grr", 1.0, 10)
    budget = PrivacyBudget(5.0)
    client = fo.client(budget=budget)
    good = bytes(32)
    short = bytearray(SECRET) if as_bytearray else SECRET
    with pytest.raises(ValueError, match=r"^device_keys\[2\] must be exactly 32 bytes, got 31$") as err:
        client.privatize([1, 2, 3], device_keys=[good, good, short])
    assert SECRET.hex() not in str(err.value) and repr(SECRET) not in str(err.value)
    with pytest.raises(TypeError, match=r"^device_keys\[1\] must be 32 bytes .*got str$"):
        client.privatize([1, 2, 3], device_keys=[good, "k" * 32, good])
    with pytest.raises(TypeError, match=r"^device_keys\[0\] must be 32 bytes .*got ndarray$"):
        client.privatize([1], device_keys=[np.zeros(32, np.uint8)])
    with pytest.raises(ValueError, match=r"^device_key must be exactly 32 bytes, got 31$"):
        fo.client(device_key=SECRET)  # the single key keeps its own name
    assert budget.spent_epsilon == 0


@pytest.mark.parametrize("keys", [[], np.zeros((0, 32), np.uint8)])
@pytest.mark.parametrize("name,message", [("olh", "device_key on 'olh' needs a public pool"),
                                          ("hadamard", r"device_key \(memoised daily collection\) is supported")])
def test_empty_batch_on_a_configuration_that_cannot_memoise(name, message, keys):
    """OLH without a public pool and a protocol without daily collection refuse device_keys
    whatever the number of items, zero included (as they do for one item)."""
    fo = ldp.FrequencyOracle(name, 1.0, 10)
    with pytest.raises(ValueError, match=message):
        fo.client().privatize([], device_keys=keys)
    with pytest.raises(ValueError, match=message):
        fo.client().privatize([1], device_keys=[bytes(32)])


@pytest.mark.parametrize("name,opts", sorted(KERNEL_CASES.items()) + [("flh", {"pool_key": 5})])
def test_empty_batch_on_a_configuration_that_memoises(name, opts):
    fo = ldp.FrequencyOracle(name, 1.0, 10, **opts)
    reports = fo.client().privatize([], device_keys=[])
    assert len(reports) == 0
