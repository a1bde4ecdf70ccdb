"""Private selection: report-noisy-max (permute-and-flip, exponential mechanism, Laplace),
top-k by peeling, over whole score matrices in one exact C++ call; the sparse vector technique."""
from ._plan import SelectionPlan
from .noisy_max import ExponentialMechanism, ReportNoisyMax, report_noisy_max

__all__ = ["ExponentialMechanism", "ReportNoisyMax", "SelectionPlan", "report_noisy_max"]
