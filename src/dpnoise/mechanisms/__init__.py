"""Mechanisms: exact noise on grids, randomized response, histograms and a private KDE."""
from ._base import DEFAULT_OUT_OF_DOMAIN, OUT_OF_DOMAIN
from ._plan import GaussianProcessPlan, NoisyGridPlan, RandomizedResponsePlan, ReleasePlan
from .bounds import discrete_error_lower_bound, error_lower_bound, posterior_bounds
from .gaussian import (
    DiscreteGaussianMechanism,
    GaussianMechanism,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    discrete_gaussian_loss,
    discrete_gaussian_sigma,
    hall_rinaldo_wasserman_sigma,
)
from .histogram import Histogram
from .kde import PrivateKDE
from .laplace import (
    DiscreteLaplaceMechanism,
    GeometricMechanism,
    LaplaceMechanism,
    discrete_laplace_scale,
)
from .randomized_response import RandomizedResponse

__all__ = [
    "DiscreteGaussianMechanism", "DiscreteLaplaceMechanism", "GaussianMechanism",
    "GeometricMechanism", "Histogram", "LaplaceMechanism", "PrivateKDE", "RandomizedResponse",
    "analytic_gaussian_sigma", "classic_gaussian_sigma", "discrete_error_lower_bound",
    "error_lower_bound", "posterior_bounds", "discrete_gaussian_loss", "discrete_gaussian_sigma",
    "hall_rinaldo_wasserman_sigma",
    "ReleasePlan", "NoisyGridPlan", "RandomizedResponsePlan", "GaussianProcessPlan",
    "discrete_laplace_scale", "OUT_OF_DOMAIN", "DEFAULT_OUT_OF_DOMAIN",
]
