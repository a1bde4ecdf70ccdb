"""Local-DP heavy hitters over huge domains (32/64-bit IDs, str/bytes of up to 255 bytes found
exactly with no dictionary): PEM, TreeHist, Bitstogram and string_pem, built on fast-local-hashing
frequency oracles over 64-bit keys.

    hh = dpnoise.ldp.HeavyHitters("pem", epsilon=4.0, item_bits=32)
    reports = hh.client().privatize(items)
    agg = hh.aggregator(); agg.add(reports); agg.top(10); agg.above(1000)

See docs/heavy_hitters.md.
"""
from .._aggregator import HeavyHitter
from .._deprecated import deprecated_attributes
from .._discover import import_public_modules
from .._protocol import Client
from ._base import HeavyHitters, HeavyHittersConfiguration, HHAggregator, HHProtocol, HHReports, methods
from ._items import LONG_ITEM_KEY, long_item_digest

import_public_modules(__name__, __path__)  # each method's module registers it

__getattr__ = deprecated_attributes(__name__, {
    "HHClient": (lambda: Client, "every configuration's client is dpnoise.ldp.Client"),
})

__all__ = ["HHAggregator", "HHProtocol", "HHReports", "HeavyHitter", "HeavyHitters", "HeavyHittersConfiguration",
           "LONG_ITEM_KEY", "long_item_digest", "methods"]
