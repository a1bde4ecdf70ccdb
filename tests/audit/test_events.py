"""The float bit features against a pure-Python reading of the IEEE-754 bits, on both code paths
(np.bitwise_count on NumPy >= 2, the float-exponent trick before), and the event families."""
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpnoise.audit import _events


def reference_key(x: float) -> int:
    u = struct.unpack("<Q", struct.pack("<d", x))[0]
    mantissa = u & ((1 << 52) - 1)
    zeros = 52 if mantissa == 0 else (mantissa & -mantissa).bit_length() - 1
    return ((u >> 52) << 6) | zeros


@pytest.mark.parametrize("popcount", [True, False])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1, max_size=50))
def test_float_bit_key_matches_reference(monkeypatch, popcount, values):
    if popcount and not hasattr(np, "bitwise_count"):
        pytest.skip("NumPy < 2.0 has no bitwise_count")
    monkeypatch.setattr(_events, "_HAS_BITWISE_COUNT", popcount)  # the same value for every example
    keys = _events.float_bit_key(np.array(values, dtype=np.float64))
    assert keys.tolist() == [reference_key(v) for v in values]


def test_describe_bit_key():
    key = lambda v: int(_events.float_bit_key(np.array([v]))[0])  # noqa: E731
    assert _events.describe_bit_key(key(0.3)) == "+2^-2/tz0"
    assert _events.describe_bit_key(key(-1.0)) == "-2^0/tz52"
    assert _events.describe_bit_key(key(0.0)) == "+0"
    assert _events.describe_bit_key(key(float("inf"))) == "+inf"


def test_threshold_and_parts_events_count_what_they_say():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 1, 4000), rng.normal(1, 1, 4000)
    for batch in _events.candidate_batches(a, b):
        for j in (0, len(batch.hits_favoured) // 2, len(batch.hits_favoured) - 1):
            event, fav = batch.make(j), int(batch.favours[j])
            hits = (int(event.contains(a).sum()), int(event.contains(b).sum()))
            assert hits[fav] == batch.hits_favoured[j] and hits[1 - fav] == batch.hits_other[j], str(event)
