"""Numeric statistics under local DP: mean and sum oracles (docs/ldp_numeric.md)."""
from .mean import MeanAggregator, MeanClient, MeanOracle, MeanReports

__all__ = ["MeanAggregator", "MeanClient", "MeanOracle", "MeanReports"]
