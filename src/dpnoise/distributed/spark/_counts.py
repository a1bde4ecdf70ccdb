"""private_counts: exact group counts computed by Spark, noise drawn once at the driver."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import numpy as np


@dataclass(frozen=True)
class PrivateCounts:
    """The released counts: ``bins`` (the public categories, in order) and ``counts`` (the
    noisy counts, one per bin). Plain values computed once: reading them again, or running
    another Spark action, never draws new noise."""

    bins: tuple
    counts: np.ndarray

    def as_dict(self) -> Dict[Any, Any]:
        return dict(zip(self.bins, self.counts.tolist()))


def private_counts(df: Any, column: str, mechanism: Any, *, bins: Optional[Sequence[Any]] = None) -> PrivateCounts:
    """How many rows of ``df`` hold each of the public ``bins`` in ``column``, with the noise of
    ``mechanism`` (central DP: the exact counts exist at the driver, in memory, and are never
    returned).

    1. Spark counts every group (``groupBy(column).count()``), collected at the driver.
    2. The counts are aligned to ``bins`` (a bin absent from the data counts 0). Without
       ``bins`` the mechanism must define its domain (a ``Histogram(categories=k)``: bins
       0..k-1); otherwise ValueError, because releasing the keys seen in the data is not
       private. Rows outside the bins (and nulls) follow a Histogram's ``out_of_domain``
       ("drop"; "raise": ValueError before any charge; "clamp": into the end bin, for the
       integer categories 0..k-1 only); for other mechanisms they are dropped.
    3. One release at the driver: the budget is charged once (the plan's loss), then the noise
       is drawn once from the mechanism's generator. A ``Histogram`` releases its plan on the
       aligned counts (the same steps as ``Histogram.release``, whose preparation Spark did); any
       other mechanism gets ``mechanism.release(counts)`` and must be calibrated for a count
       vector (one record moves one count by 1 under add/remove)."""
    from pyspark.sql import functions as F

    from ...mechanisms import Histogram
    from ..._release import Mechanism
    from ._checks import check_dataframe

    check_dataframe(df)
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a dpnoise mechanism (e.g. dpnoise.Histogram), got "
                        f"{type(mechanism).__name__}")
    if not isinstance(column, str):
        raise TypeError(f"column must be a str, got {type(column).__name__}")
    if column not in df.columns:
        raise ValueError(f"the DataFrame has no column {column!r} (columns: {df.columns})")
    is_hist = isinstance(mechanism, Histogram)
    if is_hist and mechanism.edges is not None:
        raise ValueError("private_counts counts categories: use Histogram(categories=k) (with bins= naming the "
                         "k public categories if they are not 0..k-1)")
    if bins is None:
        if not is_hist:
            raise ValueError("bins= (the public list of categories) is needed: releasing the keys observed in "
                             f"column {column!r} would not be private, and this mechanism defines no domain")
        bin_list: List[Any] = list(range(mechanism.categories))
        integer_domain = True
    else:
        if isinstance(bins, (str, bytes)) or not hasattr(bins, "__iter__"):
            raise TypeError(f"bins must be a sequence of public categories, got {type(bins).__name__}")
        bin_list = list(bins)
        integer_domain = False
        if len(set(bin_list)) != len(bin_list):
            raise ValueError("bins must not repeat a category")
        if is_hist and len(bin_list) != mechanism.categories:
            raise ValueError(f"bins has {len(bin_list)} categories, the Histogram has categories="
                             f"{mechanism.categories}")
    if not bin_list:
        raise ValueError("bins must hold at least one category")
    policy = mechanism.out_of_domain if is_hist else "drop"
    if policy == "clamp" and not integer_domain:
        raise ValueError("out_of_domain='clamp' needs the integer categories 0..k-1 (bins=None); with explicit "
                         "bins use a Histogram with out_of_domain='drop' or 'raise'")

    rows = df.groupBy(F.col(column)).count().collect()  # exact counts: driver memory only
    index = {b: i for i, b in enumerate(bin_list)}
    exact = np.zeros(len(bin_list), dtype=np.int64)
    outside = 0
    for key, count in rows:
        i = index.get(key)
        if i is None and policy == "clamp" and isinstance(key, (int, np.integer)):
            i = 0 if key < 0 else len(bin_list) - 1
        if i is None:
            outside += int(count)
        else:
            exact[i] += int(count)
    if outside and policy == "raise":
        raise ValueError(f"column {column!r}: some rows are outside the bins (out_of_domain='raise'; this "
                         "exception itself reveals that such a row exists)")
    if is_hist:
        plan = mechanism.plan((len(bin_list),), np.int64)
        mechanism._charge(plan)  # once, before any noise (Mechanism.release's step 3)
        noisy = plan.execute(mechanism.rng, exact)  # once (step 4)
    else:
        noisy = mechanism.release(exact)
    noisy = np.asarray(noisy).copy()
    noisy.flags.writeable = False
    return PrivateCounts(tuple(bin_list), noisy)
