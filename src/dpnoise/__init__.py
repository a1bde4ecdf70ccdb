"""dpnoise: exact, secure differential-privacy noise.

The public surface: the secure generator (`default_rng`, `Generator`, `ChaCha20`), the
mechanisms (re-exported from `dpnoise.mechanisms`), the `dpnoise.accounting` package and the
library's exception family.
"""
from dpnoise import accounting, ldp, selection
from dpnoise._errors import (
    BudgetExceededError,
    CapacityError,
    DPError,
    EntropyError,
    InsecureGeneratorError,
    InvariantError,
)
from dpnoise._include import get_cmake_dir, get_include
from dpnoise.accounting import PrivacyBudget
from dpnoise.bit_generator import ChaCha20, PublicStream
from dpnoise.generator import Generator, default_rng
from dpnoise.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    GeometricMechanism,
    Histogram,
    LaplaceMechanism,
    PrivateKDE,
    RandomizedResponse,
    posterior_bounds,
)
from dpnoise.selection import AboveThreshold, ExponentialMechanism, ReportNoisyMax, report_noisy_max

__version__ = "0.11.0"

__all__ = [
    "AboveThreshold",
    "BudgetExceededError",
    "CapacityError",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "ExponentialMechanism",
    "GaussianMechanism",
    "GeometricMechanism",
    "Histogram",
    "LaplaceMechanism",
    "PrivacyBudget",
    "PrivateKDE",
    "RandomizedResponse",
    "ReportNoisyMax",
    "report_noisy_max",
    "selection",
    "ldp",
    "accounting",
    "posterior_bounds",
    "ChaCha20",
    "DPError",
    "EntropyError",
    "InsecureGeneratorError",
    "InvariantError",
    "PublicStream",
    "Generator",
    "default_rng",
    "get_cmake_dir",
    "get_include",
    "__version__",
]
