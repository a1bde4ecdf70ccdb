"""Defects an adversarial review found in the heavy hitters, each pinned by a test."""
import numpy as np
import pytest

import dpnoise
from dpnoise.ldp import HeavyHitters, HHReports
from dpnoise.ldp._wire import frame as _frame, unframe as _unframe
from dpnoise.ldp._wire import HEAVY_HITTERS_REPORTS as _REPORTS_MAGIC, HEAVY_HITTERS_STATE as _STATE_MAGIC
from dpnoise.ldp import HHAggregator


def _client(hh):
    return hh.client(dpnoise.default_rng(1), allow_insecure=True)


def _reframe(blob, magic, change_arrays=None, change_header=None):
    """The blob with its arrays/header edited and the checksum recomputed (a forger's power)."""
    h, arrs = _unframe(blob, magic, "x")
    if change_arrays:
        change_arrays(arrs)
    h = {k: v for k, v in h.items() if k not in ("format", "arrays")}
    if change_header:
        change_header(h)
    return _frame(magic, h, sorted(arrs.items()))


def test_forged_state_whose_int64_sum_wraps_to_n_is_refused():
    hh = HeavyHitters("pem", 2.0, item_type="str", max_length=4, k_prime=64, k=2)
    agg = hh.aggregator().add(_client(hh).privatize(["ab"] * 600 + ["cd"] * 400))

    def plus_four_2_62(arrs):  # 4 x 2^62 wraps an int64 sum back to the honest total
        for key, a in arrs.items():
            a = a.copy()
            a[0, 0] += 2 ** 62
            a[0, 1] += 2 ** 62
            a[1, 0] += 2 ** 62
            a[1, 1] += 2 ** 62
            arrs[key] = a

    with pytest.raises(ValueError, match="corrupt heavy-hitters aggregator state"):
        HHAggregator.from_bytes(_reframe(agg.to_bytes(), _STATE_MAGIC, plus_four_2_62))
    # the honest state still loads and gives the same answer
    again = HHAggregator.from_bytes(agg.to_bytes())
    assert [h.item for h in again.top(2)] == [h.item for h in agg.top(2)]


def test_report_batch_must_match_its_header():
    hh = HeavyHitters("pem", 4.0, item_bits=16, k_prime=16, k=2)
    blob = _client(hh).privatize(np.array([1, 2], dtype=np.uint16)).to_bytes()
    assert HHReports.from_bytes(blob).n == 2
    with pytest.raises(ValueError, match="corrupt heavy-hitters report batch"):
        HHReports.from_bytes(_reframe(blob, _REPORTS_MAGIC, change_header=lambda h: h.update(n=5)))

    def out_of_range(arrs):
        arrs["values"] = arrs["values"] + 10 ** 6

    with pytest.raises(ValueError, match="corrupt heavy-hitters report batch"):
        HHReports.from_bytes(_reframe(blob, _REPORTS_MAGIC, out_of_range))


def test_text_items_errors_never_echo_the_item():
    hs = HeavyHitters("pem", 4.0, item_type="str", max_length=8, k_prime=16, k=2)
    with pytest.raises(ValueError, match=r"items\[1\] is not valid Unicode") as info:
        _client(hs).privatize(["ok", "a\udcffsecret"])
    assert "secret" not in str(info.value) and "\udcff" not in str(info.value)
    # str and bytes may share a batch: a str is its UTF-8 bytes, so "a" and b"a" are one item
    agg = hs.aggregator().add(_client(hs).privatize(["a", b"a"] * 200))
    assert agg.top(1)[0].item == "a"


def test_above_and_z_type_checks():
    hh = HeavyHitters("treehist", 4.0, item_bits=8, k_prime=16, k=2)
    agg = hh.aggregator().add(_client(hh).privatize(np.arange(100, dtype=np.uint8) % 3))
    for bad in ("5", True, None):
        with pytest.raises(TypeError, match="count"):
            agg.above(bad)
    assert isinstance(agg.above(0), list)
    for bad in ("3", True):
        with pytest.raises(TypeError, match="z must be a number"):
            HeavyHitters("treehist", 4.0, item_bits=8, z=bad)
