"""What every release plan holds, and the bounds every grid release shares.

A release (``Mechanism.release(value)``, :mod:`dpnoise._release.mechanism`) (1) validates and
prepares the input, (2) builds a plan with ``mechanism.plan(shape, dtype)``, (3) charges
``plan.loss`` to the budget, (4) runs ``plan.execute(rng, prepared)``. A plan is a frozen,
picklable dataclass, so it can be inspected, stored in a ledger or shipped to another process
(which executes it with its own generator). Mechanisms and selection subclass it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..accounting.losses import PrivacyLoss

# Grid values are clamped to +-GRID_BOUND grid units (real queries on the grid 2^k) or to
# +-INTEGER_BOUND (integer queries): the same bounds _noisy_grid applies.
GRID_BOUND = 1 << 52
INTEGER_BOUND = 1 << 61
# The largest noise parameter (grid units) a plan accepts: discrete Laplace scale t <= 2^44 and
# discrete Gaussian sigma <= 2^30 keep P(|noise| > 2^52) below 2^-90, so y = v + noise fits the
# exact range of _noisy_grid (2^53 with a grid, 2^62 without) except with that probability.
MAX_LAPLACE_SCALE = 1 << 44
MAX_GAUSSIAN_SIGMA = float(1 << 30)
# N(0, 1) for the Gaussian-process mechanism: discrete Gaussian of sigma 2^20 on the grid 2^-20
STANDARD_EXPONENT = 20


@dataclass(frozen=True)
class ReleasePlan:
    """The frozen plan of one release.

    Parameters
    ----------
    mechanism : str
        The mechanism's name (the ledger label).
    loss : PrivacyLoss
        The privacy loss one execution spends.
    shape : tuple of int
        The shape of the query.
    scalar : bool
        Whether the output is a scalar.
    threads : int
        Threads the execution uses.
    """

    mechanism: str
    loss: PrivacyLoss
    shape: tuple[int, ...]
    scalar: bool
    threads: int

    @property
    def size(self) -> int:
        """Number of values in the query."""
        return int(np.prod(self.shape, dtype=np.int64))

    def execute(self, rng: Any, prepared: Any) -> Any:  # pragma: no cover - abstract
        """Draw the noise and return the release (cannot fail on valid prepared input).

        Parameters
        ----------
        rng : dpnoise.Generator
            The generator the noise is drawn from (checked by the mechanism).
        prepared : Any
            The input as the mechanism's ``_prepare`` left it (usually an ndarray of ``shape``).

        Returns
        -------
        Any
            The release: a Python scalar when ``scalar``, else an array of ``shape``.

        Raises
        ------
        NotImplementedError
            On the base class.
        """
        raise NotImplementedError

    def prepare(self) -> None:
        """Build what execution needs (the plan's prepared kernel), so that nothing can fail
        after the budget is charged; the release calls it before the charge. Idempotent."""

    def prepared_kernel(self) -> Any:
        """The plan's prepared C++ kernel (built once, kept by the plan), for plans that have
        one-call routes.

        Returns
        -------
        object or None
            The kernel, or None for plans without one (this base class).
        """
        return None

    def __getstate__(self) -> Any:
        """The plan's fields: a prepared kernel is rebuilt where the plan is used, never pickled."""
        state = dict(self.__dict__)
        state.pop("_kernel", None)
        return state

    def result_dtype(self, prepared: Any) -> Any:
        """The dtype an ``out=`` buffer must have for this input, or None when the plan cannot
        write into a caller's buffer (the default).

        Parameters
        ----------
        prepared : Any
            The prepared input.

        Returns
        -------
        numpy.dtype or None
            The dtype of the release, or None without ``out=`` support.
        """
        return None

    def execute_into(self, rng: Any, prepared: Any, out: Any) -> None:  # pragma: no cover - abstract
        """Write the release into ``out`` (checked by the caller: see result_dtype).

        Parameters
        ----------
        rng : dpnoise.Generator
            The noise source.
        prepared : Any
            The prepared input.
        out : numpy.ndarray
            Writable, C-contiguous, of ``shape`` and ``result_dtype(prepared)``.

        Raises
        ------
        NotImplementedError
            On plans without ``out=`` support.
        """
        raise NotImplementedError


__all__ = ["GRID_BOUND", "INTEGER_BOUND", "MAX_GAUSSIAN_SIGMA", "MAX_LAPLACE_SCALE", "ReleasePlan",
           "STANDARD_EXPONENT"]
