"""Privacy accounting: loss descriptors, accountants, budgets and calibration."""
from .accountant import KINDS, Accountant, supported_by
from .budget import PrivacyBudget
from .calibration import calibrate, least_sigma
from .composition import group_privacy, parallel_composition
from .losses import (
    RDP,
    ZCDP,
    ApproxDP,
    DiscreteGaussian,
    DiscreteGaussianVector,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    Parallel,
    PoissonSampled,
    PrivacyLoss,
    PureDP,
    RandomizedResponse,
    ReportNoisyMax,
    ShuffledReports,
    WithinTotalVariation,
    loss_from_dict,
)
from .pld import PrivacyLossDistribution
from .shuffle import shuffle_amplification

__all__ = [
    "Accountant", "ApproxDP", "DiscreteGaussian", "DiscreteGaussianVector", "DiscreteLaplace", "Gaussian", "KINDS",
    "Laplace", "Parallel", "PoissonSampled", "PrivacyBudget", "PrivacyLoss",
    "PrivacyLossDistribution", "PureDP", "RDP", "RandomizedResponse", "ReportNoisyMax", "ShuffledReports", "WithinTotalVariation", "ZCDP",
    "calibrate", "least_sigma", "group_privacy", "loss_from_dict", "parallel_composition", "shuffle_amplification", "supported_by",
]
