"""Private selection: report-noisy-max (permute-and-flip, exponential mechanism, Laplace),
top-k by peeling, over whole score matrices in one exact C++ call; the sparse vector technique."""
from ._plan import SelectionPlan
from .noisy_max import ExponentialMechanism, ReportNoisyMax, report_noisy_max
from .sparse_vector import AboveThreshold, AboveThresholdSession, SparseVectorPlan

__all__ = ["AboveThreshold", "AboveThresholdSession", "ExponentialMechanism", "ReportNoisyMax", "SelectionPlan",
           "SparseVectorPlan", "report_noisy_max"]
