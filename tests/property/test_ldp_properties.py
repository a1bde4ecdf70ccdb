"""Property checks of the LDP and heavy-hitters entry points (issue 23): the exception type, or
its absence, does not depend on the magnitude of the private values, and a refused call changes
nothing (no aggregator state, no report drawn). Items of one kind and dtype are either all
accepted or all refused by the same rule, whatever their size within that kind."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpnoise
from dpnoise import ldp

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
FO = {name: cls.example(2.0, 64) for name, cls in sorted(ldp.FrequencyConfiguration.registered().items())}
HH = {name: cls.example() for name, cls in sorted(ldp.HHProtocol.registered().items())} \
    if hasattr(ldp, "HHProtocol") else {name: ldp.HeavyHitters(name, 4.0, 16, k=4, k_prime=64)
                                        for name in ldp.heavy_hitters.methods()}


def outcome(fn):
    try:
        fn()
        return None
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return type(exc)


def magnitudes(limit):
    """Integers of every magnitude: inside [0, limit), just outside, and far outside (Python
    ints beyond int64 included)."""
    return st.one_of(st.integers(0, limit - 1), st.integers(limit, 2 * limit), st.integers(-2 * limit, -1),
                     st.integers(2**62, 2**70), st.integers(-2**70, -2**62))


def classify(v, limit):
    return "inside" if 0 <= v < limit else "outside"


@pytest.mark.parametrize("name", sorted(FO))
@SETTINGS
@given(a=magnitudes(64), b=magnitudes(64))
def test_frequency_oracle_outcome_depends_on_the_range_not_the_magnitude(name, a, b):
    config = FO[name]
    client = config.client(dpnoise.default_rng(1), allow_insecure=True)
    if classify(a, 64) == classify(b, 64):
        assert outcome(lambda: client.privatize([a])) is outcome(lambda: client.privatize([b]))
    agg = config.aggregator()
    before = agg.to_bytes()
    if outcome(lambda: agg.add(client.privatize([a]))) is not None:
        assert agg.to_bytes() == before


@pytest.mark.parametrize("name", sorted(FO))
@SETTINGS
@given(value=st.integers(-2**70, 2**70), field_index=st.integers(0, 3))
def test_a_forged_report_value_is_refused_whatever_its_magnitude(name, value, field_index):
    config = FO[name]
    reports = config.client(dpnoise.default_rng(2), allow_insecure=True).privatize([1, 2, 3])
    fields = [f for f in config.report_fields if f.kind == ldp.PER_USER]
    if not fields:
        return
    f = fields[field_index % len(fields)]
    data = {k: v.copy() for k, v in reports.data.items()}
    info = np.iinfo(f.dtype)
    if not info.min <= value <= info.max:
        return  # cannot be stored in the field's dtype: the schema check refuses it earlier
    data[f.name][1] = value
    agg = config.aggregator()
    before = agg.to_bytes()
    ok = bool(config.valid_rows(data, 3).all())
    got = outcome(lambda: agg.add(config.reports(data, 3)))
    assert (got is None) == ok  # add accepts exactly what valid_rows accepts
    if got is not None:
        assert got is ValueError and agg.to_bytes() == before


@pytest.mark.parametrize("name", sorted(HH))
@SETTINGS
@given(a=magnitudes(1 << 16), b=magnitudes(1 << 16))
def test_heavy_hitters_outcome_depends_on_the_range_not_the_magnitude(name, a, b):
    config = HH[name]
    client = config.client(dpnoise.default_rng(3), allow_insecure=True)
    if classify(a, 1 << 16) == classify(b, 1 << 16):
        assert outcome(lambda: client.privatize([a])) is outcome(lambda: client.privatize([b]))


@pytest.mark.parametrize("name", sorted(HH))
@pytest.mark.parametrize("devices", [0, 1, 3, 40])
def test_heavy_hitters_results_exist_at_every_population_size(name, devices):
    config = HH[name]
    agg = config.aggregator()
    if devices:
        agg.add(config.client(dpnoise.default_rng(devices), allow_insecure=True).privatize(
            config.example_items(devices)))
    assert len(agg.top()) <= config.tracked()
    assert isinstance(agg.above(0.0), list)
