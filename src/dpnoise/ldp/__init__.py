"""Local differential privacy: frequency oracles and heavy hitters on one envelope (one randomized
report per user, streaming aggregation, merge, serialisation, unbiased estimates with standard
errors).

    fo = dpnoise.ldp.FrequencyOracle("grr", epsilon=2.0, domain_size=100)
    reports = fo.client().privatize(items)
    agg = fo.aggregator(); agg.add(reports); agg.estimate(); agg.stderr()

Every configuration declares its report fields (``report_fields``, see :class:`ReportField`);
``Configuration.registered()`` lists a family's protocols.
"""
from ._protocol import Aggregator, Client, Configuration, Reports
from ._schema import PACKED, PER_USER, ROW, ReportField, report_rows, reports_from_rows
from ._frequency import FrequencyOracle, Protocol, protocols, register
from ._choose import recommend
from . import grr  # noqa: F401  (registers "grr")
from . import unary  # noqa: F401  (registers "oue" and "sue")
from . import local_hashing  # noqa: F401  (registers "olh" and "flh")
from . import hadamard  # noqa: F401  (registers "hadamard")
from . import count_mean_sketch  # noqa: F401  (registers "cms" and "hcms")
from . import zmatrix  # noqa: F401  (registers "zmatrix")
from . import postprocess
from .postprocess import clip_nonnegative, norm_sub, project_simplex
from . import heavy_hitters
from .heavy_hitters import HeavyHitter, HeavyHitters, HHAggregator, HHReports

__all__ = ["Aggregator", "Client", "Configuration", "FrequencyOracle", "HHAggregator", "HHReports", "HeavyHitter",
           "HeavyHitters", "PACKED", "PER_USER", "ROW", "ReportField", "heavy_hitters", "Protocol", "Reports",
           "clip_nonnegative", "norm_sub", "postprocess", "project_simplex", "protocols", "recommend", "register", "report_rows", "reports_from_rows"]
