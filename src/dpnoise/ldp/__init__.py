"""Local differential privacy: frequency oracles and heavy hitters (one randomized report per user, streaming
aggregation, merge, serialisation, unbiased estimates with standard errors).

    fo = dpnoise.ldp.FrequencyOracle("grr", epsilon=2.0, domain_size=100)
    reports = fo.client().privatize(items)
    agg = fo.aggregator(); agg.add(reports); agg.estimate(); agg.stderr()
"""
from ._protocol import (
    Aggregator, Client, FrequencyOracle, Protocol, Reports, protocols, recommend, register,
)
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
from .numeric import MeanOracle  # noqa: F401  (numeric mean and sum oracles)

__all__ = ["Aggregator", "Client", "FrequencyOracle", "HHAggregator", "HHReports", "HeavyHitter", "HeavyHitters",
           "heavy_hitters", "Protocol", "Reports", "clip_nonnegative", "norm_sub",
           "postprocess", "project_simplex", "protocols", "recommend", "register"]
