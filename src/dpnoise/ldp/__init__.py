"""Local differential privacy: frequency oracles and heavy hitters on one envelope (one randomized
report per user, streaming aggregation, merge, serialisation, unbiased estimates with standard
errors).

    fo = dpnoise.ldp.FrequencyOracle("grr", epsilon=2.0, domain_size=100)
    reports = fo.client().privatize(items)
    agg = fo.aggregator(); agg.add(reports); agg.estimate(); agg.stderr()

Every configuration declares its report fields (``report_fields``, see :class:`ReportField`);
``Configuration.registered()`` lists a family's protocols.
"""
from ._aggregator import Aggregator, HeavyHitter
from ._choose import compare, recommend
from ._deprecated import deprecated_attributes
from ._discover import import_public_modules
from ._frequency import FrequencyConfiguration, FrequencyOracle, Protocol, protocols, register as _register
from ._protocol import Client, Configuration
from ._reports import Reports
from ._schema import PACKED, PER_USER, ROW, ReportField, report_rows, reports_from_rows

# every public module of this package is imported, and so registers the protocols it defines:
# a new protocol is one new module, listed nowhere else
import_public_modules(__name__, __path__)
from . import (
    heavy_hitters,
    postprocess,
)
from .heavy_hitters import HeavyHitters, HeavyHittersConfiguration, HHAggregator, HHReports
from .numeric import MeanAggregator, MeanConfiguration, MeanOracle
from .postprocess import clip_nonnegative, norm_sub, project_simplex

__getattr__ = deprecated_attributes(__name__, {
    "register": (lambda: _register, "declare the protocol with class arguments, "
                                    "class P(FrequencyConfiguration, name=...), which registers it"),
})

# one naming scheme for the families: <Family>Configuration (the base a protocol subclasses),
# <Family> or <Family>Oracle (the factory), <Family>Aggregator; ``Protocol`` is the frequency
# base's 0.7 name (a plain alias while dpnoise.distributed.spark imports it)
__all__ = ["Aggregator", "Client", "Configuration", "FrequencyConfiguration", "FrequencyOracle", "HHAggregator",
           "HHReports", "HeavyHitter", "HeavyHitters", "HeavyHittersConfiguration", "MeanAggregator",
           "MeanConfiguration", "MeanOracle", "PACKED", "PER_USER", "ROW", "ReportField", "heavy_hitters", "Protocol",
           "Reports", "clip_nonnegative", "compare", "norm_sub", "postprocess", "project_simplex", "protocols",
           "recommend", "report_rows", "reports_from_rows"]
