"""Blobs written before issue 34's refactor (tests/ldp/data/pre_axes, by make_fixtures.py at
commit bb87299: constant time and daily collection as per-protocol flags), one per variant of
every family: they load and re-serialise byte for byte, and the same seed writes the same
reports and state again (behaviour unchanged by moving the variants to the envelope)."""
import json
import pathlib

import numpy as np
import pytest

import dpnoise
from dpnoise import ldp

DATA = pathlib.Path(__file__).parent / "data" / "pre_axes"
EXPECTED = json.loads((DATA / "expected.json").read_text())
KEY = bytes(range(32))
# fresh Duchi-type clients read their stream directly from 0.11.0 (same law; docs/reproducibility.md):
# their blobs are reproduced by the grid-first layout that memoised answers keep
REDRAWN_IN_0_11 = {"mean_duchi_plain", "mean_bitmean_plain"}


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_pre_axes_blobs_load_and_are_written_again(key):
    entry = EXPECTED[key]
    config = ldp.Configuration.from_json(entry["configuration"])
    blob, state = (DATA / f"{key}.reports").read_bytes(), (DATA / f"{key}.state").read_bytes()
    reports = ldp.Reports.from_bytes(blob)
    assert reports.to_bytes() == blob
    assert ldp.Aggregator.from_bytes(state).to_bytes() == state
    assert config.aggregator().add(reports).to_bytes() == state
    assert repr(config) == entry["repr"] and repr(config.privacy_loss()) == entry["loss"]
    items = config.example_items(120, seed=5)
    if config.family == "heavy_hitters" and config.codec.item_type != "int":
        items = ["abc", "abd", "xyz", "a", "hello!"] * 24
    client = config.client(dpnoise.default_rng(9), allow_insecure=True, device_key=KEY if entry["memoised"] else None)
    again = client.privatize(items)
    if key in REDRAWN_IN_0_11:
        old_layout = config._privatize_permanent(dpnoise.default_rng(9), config._encode(items), 1)
        assert all(np.array_equal(old_layout[name], reports.data[name]) for name in reports.data)
        assert again.to_bytes() != blob  # the new layout: same law, other bits
        again = reports
    assert again.to_bytes() == blob  # the same seed, the same reports
    agg = config.aggregator().add(again)
    assert agg.to_bytes() == state
    if config.family == "heavy_hitters":
        got = agg.estimate(list(items[:5]) if isinstance(items, list) else items[:5])
    else:
        got = agg.estimate()
    np.testing.assert_array_equal(np.asarray(got), np.asarray(entry["estimate"]))
