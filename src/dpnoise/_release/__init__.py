"""The shared release framework: validate, plan, charge, execute.

Every mechanism (dpnoise.mechanisms) and every selection (dpnoise.selection) releases through
:class:`Mechanism`: ``release(value)`` validates and prepares the input (``_prepare``; every
check that can fail runs here), builds a frozen :class:`ReleasePlan` (``plan``), charges the
budget once with ``plan.loss``, and executes the plan (draws the noise). Nothing can fail after
the charge. ``grid`` holds the grid arithmetic of real queries (Mironov 2012's defence).
"""
from .._validate import MAX_EPSILON, check_epsilon
from . import grid
from .mechanism import Mechanism
from .plan import (
    GRID_BOUND,
    INTEGER_BOUND,
    MAX_GAUSSIAN_SIGMA,
    MAX_LAPLACE_SCALE,
    STANDARD_EXPONENT,
    ReleasePlan,
)
from .validate import (
    MAX_RHO,
    MIN_REAL_SENSITIVITY,
    as_integer_array,
    as_real_array,
    check_beta,
    check_delta,
    check_laplace_scale,
    check_rho,
    check_sensitivity,
    clamp_to_grid,
    clamped_integers,
    integers_on_grid,
    normalise_shape,
    size_of,
)

__all__ = [
    "GRID_BOUND", "INTEGER_BOUND", "MAX_EPSILON", "MAX_GAUSSIAN_SIGMA", "MAX_LAPLACE_SCALE", "MAX_RHO",
    "MIN_REAL_SENSITIVITY", "Mechanism", "ReleasePlan", "STANDARD_EXPONENT", "as_integer_array",
    "as_real_array", "check_beta", "check_delta", "check_epsilon", "check_laplace_scale", "check_rho",
    "check_sensitivity", "clamp_to_grid", "clamped_integers", "grid", "integers_on_grid",
    "normalise_shape", "size_of",
]
