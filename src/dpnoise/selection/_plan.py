"""The frozen plan of one batched selection (see mechanisms/_plan.py for what plans are)."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._release import ReleasePlan


@dataclass(frozen=True)
class SelectionPlan(ReleasePlan):
    """Select ``k`` candidates from every candidate set (row) of a score matrix: ``method`` the
    kernel ("permute_and_flip", "exponential_mechanism" or "laplace"), ``gamma`` the exact rational
    of the kernel's weights e^{-gamma (q* - q)} (Laplace: noise scale 1/gamma), in score units or,
    for real scores, grid units of 2^``grid_exponent``; ``vector`` when the input was one vector.

    Parameters
    ----------
    method, gamma, grid_exponent, k, vector
        As described above; the first five fields are those of :class:`~dpnoise.mechanisms.ReleasePlan`.
    """

    method: str
    gamma: Fraction
    grid_exponent: int | None
    k: int
    vector: bool

    def execute(self, rng: Any, prepared: np.ndarray) -> Any:
        """The selected column indices: an int, a (k,) array, (rows,) or (rows, k) int64."""
        out = rng._select_rows(prepared, method=self.method, gamma=self.gamma, grid_exponent=self.grid_exponent,
                               k=self.k, threads=self.threads)
        return self.result(out)

    def result(self, out: np.ndarray) -> Any:
        """The release from the kernel's selections.

        Parameters
        ----------
        out : numpy.ndarray
            The kernel's int64 (rows, k) selected column indices.

        Returns
        -------
        int or numpy.ndarray
            An int (one vector, k = 1), a (k,) array, (rows,) or (rows, k) int64.
        """
        if self.vector:
            return int(out[0, 0]) if self.k == 1 else out[0]
        return out[:, 0] if self.k == 1 else out
