"""Privacy-loss descriptors: what one release spends, in the richest form it has.

One module per family: ``base`` (the base class, the registry behind :func:`loss_from_dict` and
shared helpers), ``guarantees`` (pure/approximate DP, zCDP, RDP), ``laplace``, ``gaussian``
(Gaussian, discrete Gaussian, discrete Gaussian vector), ``randomized_response``,
``report_noisy_max``, ``poisson_sampled``, ``parallel``, ``total_variation`` and ``shuffled``. Every name is re-exported here.
"""
from .base import (  # noqa: F401  (helpers re-exported for the accountants and tests)
    DIRECTIONS,
    Atoms,
    PrivacyLoss,
    Tails,
    _atoms_profile,
    _atoms_rdp,
    _fields,
    _log_or_minus_inf,
    _lse,
    _register,
    _rr_atoms,
    loss_from_dict,
)
from .gaussian import (  # noqa: F401
    _DG_MAX_SUPPORT,
    DiscreteGaussian,
    DiscreteGaussianVector,
    Gaussian,
    _dg_sum_atoms,
    _GaussianNoise,
)
from .guarantees import RDP, ZCDP, ApproxDP, PureDP
from .laplace import DiscreteLaplace, Laplace
from .parallel import Parallel
from .poisson_sampled import PoissonSampled
from .randomized_response import RandomizedResponse
from .report_noisy_max import ReportNoisyMax
from .shuffled import ShuffledReports
from .total_variation import WithinTotalVariation

__all__ = [
    "ApproxDP", "DiscreteGaussian", "DiscreteGaussianVector", "DiscreteLaplace", "Gaussian",
    "Laplace", "Parallel", "PoissonSampled", "PrivacyLoss", "PureDP", "RDP", "RandomizedResponse",
    "ReportNoisyMax", "ShuffledReports", "WithinTotalVariation", "ZCDP", "loss_from_dict",
]
