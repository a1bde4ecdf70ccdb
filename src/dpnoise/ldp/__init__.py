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
from ._protocol import Client, Configuration
from ._reports import Reports
from ._schema import PACKED, PER_USER, ROW, ReportField, report_rows, reports_from_rows
from ._frequency import FrequencyOracle, Protocol, protocols, register
from ._choose import compare, recommend
from ._discover import import_public_modules

# every public module of this package is imported, and so registers the protocols it defines:
# a new protocol is one new module, listed nowhere else
import_public_modules(__name__, __path__)
from . import postprocess  # noqa: E402
from .postprocess import clip_nonnegative, norm_sub, project_simplex
from . import heavy_hitters
from .heavy_hitters import HeavyHitters, HHAggregator, HHReports
from .numeric import MeanOracle  # noqa: F401  (numeric mean and sum oracles)

__all__ = ["Aggregator", "Client", "Configuration", "FrequencyOracle", "HHAggregator", "HHReports", "HeavyHitter",
           "HeavyHitters", "PACKED", "PER_USER", "ROW", "ReportField", "heavy_hitters", "Protocol", "Reports",
           "clip_nonnegative", "compare", "norm_sub", "postprocess", "project_simplex", "protocols", "recommend", "register", "report_rows", "reports_from_rows"]
