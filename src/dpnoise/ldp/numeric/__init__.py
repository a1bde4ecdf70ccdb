"""Numeric statistics under local DP: mean and sum oracles (docs/ldp_numeric.md)."""
from .mean import MeanAggregator, MeanConfiguration, MeanOracle

__all__ = ["MeanAggregator", "MeanConfiguration", "MeanOracle"]
