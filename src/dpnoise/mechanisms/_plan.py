"""The mechanisms' release plans (the base class and the release steps: dpnoise/_release/).

Execution draws all noise through the plan's prepared kernel (``_core.GridRelease``,
``_core.CategoricalRelease``: the fused kernels, built before the charge), the constant-time
kernels, or ``Generator._noisy_grid`` (the Gaussian-process plan), and cannot fail on valid
prepared input, except for the documented data-independent overflow of the grid kernel whose
probability the plan keeps below 2^-90.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _core, _rational as R
from .._release import constant_time as _ct
from .._release.buffers import source_for
from .._release.plan import GRID_BOUND, STANDARD_EXPONENT, ReleasePlan
from .._validate import MAX_PART

# Float dtypes a grid release keeps (float32 in, float32 out); other reals come out as float64.
KEPT_FLOATS = (np.float32, np.float64)


@dataclass(frozen=True)
class NoisyGridPlan(ReleasePlan):
    """Noise added on a grid: ``law`` "laplace" (``param`` = the discrete Laplace scale, an exact
    Fraction, grid units) or "gaussian" (``param`` = sigma, grid units); ``k`` the grid exponent
    (None: integer query, integer output); ``sensitivity`` the widened sensitivity in grid units
    the noise is calibrated to (L1 for Laplace, L2 for Gaussian); ``bound`` the clamp;
    ``constant_time`` the constant-time kernels (docs/security.md): the plan refuses, when it is
    built (before any charge), a parameter beyond 2^20 grid units or a grid exponent outside
    [-1000, 960], and a scalar release is a NumPy scalar (no Python-int conversion).

    Parameters
    ----------
    law, param, k, sensitivity, bound, constant_time
        As described above; the first five fields are those of :class:`ReleasePlan`.
    """

    law: str
    param: Fraction | float
    k: int | None
    sensitivity: int | float
    bound: int
    constant_time: bool = False

    def __post_init__(self) -> None:
        if self.constant_time:
            _ct.check_parameter(self.law, self.param, f"{self.mechanism} for shape {self.shape}")
            _ct.check_exponent(self.k)

    def _pair(self) -> tuple[int, int]:
        """The exact (num, den) of the kernels: the scale, or the variance σ²."""
        if self.law == "laplace":
            return R.scale_pair(self.param, "scale")
        return R.sigma_to_variance_pair(self.param, "sigma")

    def prepared_kernel(self) -> Any:
        """The prepared grid kernel: the exact law converted once, its tables built when cheap,
        kept by the plan.

        Returns
        -------
        dpnoise._core.GridRelease or None
            The kernel; None in constant-time mode (its kernels take the parameter per call).
        """
        if self.constant_time:
            return None
        kernel = self.__dict__.get("_kernel")
        if kernel is None:
            num, den = self._pair()
            bound = min(int(self.bound), MAX_PART - 1) if self.k is None else int(self.bound)
            kernel = _core.GridRelease(self.law, num, den, None if self.k is None else int(self.k), bound)
            object.__setattr__(self, "_kernel", kernel)  # a cache, not a field: equality and repr ignore it
        return kernel

    def prepare(self) -> None:
        """Build the prepared kernel before the charge (see ReleasePlan.prepare)."""
        self.prepared_kernel()

    def _constant_time(self, rng: Any, prepared: np.ndarray) -> np.ndarray:
        """The constant-time release, an array of the input's shape: int64 (integers), float32
        (float32 input) or float64; no branch on the values in Python or C++."""
        num, den = self._pair()
        flat = prepared.reshape(-1)
        if self.k is None:
            out = _core.noisy_integers_constant_time(rng._core, self.law, flat, num, den, self.bound, self.threads)
        else:
            out = _core.noisy_grid_constant_time(rng._core, self.law, flat, int(self.k), num, den, self.bound,
                                                 self.threads)
        return out.reshape(prepared.shape)

    @property
    def clamp(self) -> float:
        """The clamp in the query's units: inputs beyond ±clamp are released as ±clamp + noise."""
        return float(self.bound) if self.k is None else math.ldexp(float(self.bound), self.k)

    def execute(self, rng: Any, prepared: np.ndarray) -> Any:
        """The noisy release of ``prepared`` (int64 on the integer path; float32 for float32
        input, else float64, on a grid)."""
        if self.constant_time:
            out = self._constant_time(rng, prepared)
            return out.reshape(-1)[0] if self.scalar else out  # a NumPy scalar: no int() of the value
        if self.k is not None and prepared.dtype == np.float32:
            out = np.empty(prepared.shape, dtype=np.float32)
            self.execute_into(rng, prepared, out)
            return np.float32(out.reshape(-1)[0]) if self.scalar else out
        kernel = self.prepared_kernel()
        flat = prepared.reshape(-1)
        if self.k is None:
            out = kernel.integers(rng._core, flat.astype(np.int64, copy=False), self.threads)
        else:
            out = kernel.array(rng._core, flat.astype(np.float64, copy=False), self.threads)
        out = out.reshape(prepared.shape)
        if self.scalar:
            return int(out.reshape(-1)[0]) if self.k is None else float(out.reshape(-1)[0])
        return out

    def result_dtype(self, prepared: np.ndarray) -> np.dtype:
        """int64 on the integer path, else the input's float dtype (float32 or float64)."""
        if self.k is None:
            return np.dtype(np.int64)
        return np.dtype(np.float32) if prepared.dtype == np.float32 else np.dtype(np.float64)

    def execute_into(self, rng: Any, prepared: np.ndarray, out: np.ndarray) -> None:
        """Write the release into ``out`` (writable, C-contiguous, of ``result_dtype``; it may
        be ``prepared`` itself). The kernel cannot fail once it has started, so ``out`` is
        never half-written (mechanism_kernels.hpp, noisy_grid_into)."""
        if self.constant_time:  # the kernel reads a copy of the input, then one copy into out
            np.copyto(out, self._constant_time(rng, prepared))
            return
        kernel = self.prepared_kernel()
        if self.k is None:  # integer path: the int64 release, then one copy
            np.copyto(out, kernel.integers(rng._core, prepared.reshape(-1).astype(np.int64, copy=False),
                                           self.threads).reshape(prepared.shape))
            return
        values = prepared if prepared.dtype == out.dtype else prepared.astype(out.dtype)
        values = source_for(values, out).reshape(-1)
        kernel.into(rng._core, values, out.reshape(-1), self.threads)


@dataclass(frozen=True)
class RandomizedResponsePlan(ReleasePlan):
    """k-ary randomized response with the exact rational ``gamma`` (the ε the sampler uses).

    Parameters
    ----------
    categories : int
        k, the domain size.
    gamma : fractions.Fraction
        The exact ε of the kernel.
    constant_time : bool
        The constant-time kernel (values clamped to [0, k) by masks; a scalar release is a
        NumPy int64, not a Python int).
    table : _core.ConstantTimeRandomizedResponseTable, optional
        The constant-time kernel's table, built by the mechanism's constructor (required with
        ``constant_time``: execute builds nothing).
    """

    categories: int
    gamma: Fraction
    constant_time: bool = False
    table: Any = dataclasses.field(default=None, compare=False, repr=False)

    def prepared_kernel(self) -> Any:
        """The prepared kernel: the exact γ converted once, kept by the plan.

        Returns
        -------
        dpnoise._core.CategoricalRelease or None
            The kernel; None in constant-time mode (its table is ``table``).
        """
        if self.constant_time:
            return None
        kernel = self.__dict__.get("_kernel")
        if kernel is None:
            g = Fraction(self.gamma)
            kernel = _core.CategoricalRelease(int(self.categories), g.numerator, g.denominator)
            object.__setattr__(self, "_kernel", kernel)
        return kernel

    def prepare(self) -> None:
        """Build the prepared kernel before the charge (see ReleasePlan.prepare)."""
        self.prepared_kernel()

    def execute(self, rng: Any, prepared: np.ndarray) -> Any:
        """The randomized answers: an int (scalar query; a NumPy int64 in constant-time mode) or an
        int64 array of category indices."""
        if self.constant_time:
            out = _core.randomized_response_constant_time_with(rng._core, self.table, prepared, self.threads)
            return out.reshape(-1)[0] if self.scalar else out
        out = self.prepared_kernel().array(rng._core, np.asarray(prepared), self.threads)
        return int(out.reshape(-1)[0]) if self.scalar else out


@dataclass(frozen=True)
class GaussianProcessPlan(ReleasePlan):
    """The Gaussian-process mechanism on m public points: f + scale · L z, with L the Cholesky
    factor of the kernel matrix and z ~ N(0, I) drawn as discrete Gaussian(2^20)·2^-20.

    Parameters
    ----------
    scale : float
        The noise scale.
    factor : numpy.ndarray
        The Cholesky factor L of the kernel matrix.
    """

    scale: float
    factor: np.ndarray = dataclasses.field(compare=False, repr=False)

    def execute(self, rng: Any, prepared: np.ndarray) -> np.ndarray:
        """f + scale · L z at the m points (a float64 array of shape (m,))."""
        m = self.factor.shape[0]
        z = rng._noisy_grid(np.zeros(m), law="gaussian", param=float(1 << STANDARD_EXPONENT),
                            k=-STANDARD_EXPONENT, bound=GRID_BOUND, threads=self.threads)
        return prepared + self.scale * (self.factor @ z)


__all__ = ["GaussianProcessPlan", "NoisyGridPlan", "RandomizedResponsePlan", "ReleasePlan"]
