"""private_counts: exact group counts computed by Spark, noise drawn once at the driver."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._identifiers import quoted


@dataclass(frozen=True)
class PrivateCounts:
    """The released counts: ``bins`` (the public categories, in order) and ``counts`` (the
    noisy counts, one per bin). Plain values computed once: reading them again, or running
    another Spark action, never draws new noise.

    Attributes
    ----------
    bins : tuple
        The public categories.
    counts : numpy.ndarray
        The noisy counts, as the mechanism releases them.
    """

    bins: tuple[Any, ...]
    counts: np.ndarray

    def as_dict(self) -> dict[Any, Any]:
        """The release as a mapping.

        Returns
        -------
        dict
            ``{bin: noisy count}``, in the bins' order.
        """
        return dict(zip(self.bins, self.counts.tolist()))


def private_counts(df: Any, column: str, mechanism: Any, *, bins: Sequence[Any] | None = None) -> PrivateCounts:
    """How many rows of ``df`` hold each of the public ``bins`` in ``column``, with the noise of
    ``mechanism`` (central DP: the exact counts exist at the driver, in memory, and are never
    returned).

    1. Spark counts the rows of each bin, and the rows outside the bins (and nulls) as one
       more group: at most ``len(bins) + 1`` rows are collected at the driver. A column whose
       Spark type cannot hold the bins (a string column with integer bins, a byte column with
       a bin of 300) is refused with TypeError before anything is counted or charged.
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
       vector (one record moves one count by 1 under add/remove).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The private data.
    column : str
        The column counted.
    mechanism : dpnoise mechanism
        Usually ``dpnoise.Histogram`` (bound to a budget to charge it).
    bins : sequence, optional
        The public categories (default: 0..k-1 of a Histogram).

    Returns
    -------
    PrivateCounts
        The released counts.

    Raises
    ------
    TypeError
        For a non-mechanism, a non-str column or a column type that cannot hold the bins.
    ValueError
        For a missing column, no bins where the mechanism defines none, duplicate or
        unusable bins, or out-of-domain rows under ``out_of_domain="raise"``.
    dpnoise.BudgetExceededError
        When the mechanism's budget cannot pay (nothing is drawn).
    """
    from pyspark.sql import functions as F

    from ..._release import Mechanism
    from ...mechanisms import Histogram
    from ._checks import check_dataframe
    from ._jobs import run_job

    check_dataframe(df)
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a dpnoise mechanism (e.g. dpnoise.Histogram), got "
                        f"{type(mechanism).__name__}")
    if not isinstance(column, str):
        raise TypeError(f"column must be a str, got {type(column).__name__}")
    if column not in df.columns:
        raise ValueError(f"the DataFrame has no column {column!r} (columns: {df.columns})")
    hist = mechanism if isinstance(mechanism, Histogram) else None
    if hist is not None and hist.edges is not None:
        raise ValueError("private_counts counts categories: use Histogram(categories=k) (with bins= naming the "
                         "k public categories if they are not 0..k-1)")
    if bins is None:
        if hist is None:
            raise ValueError("bins= (the public list of categories) is needed: releasing the keys observed in "
                             f"column {column!r} would not be private, and this mechanism defines no domain")
        bin_list: list[Any] = list(range(hist.categories))
        integer_domain = True
    else:
        if isinstance(bins, (str, bytes)) or not hasattr(bins, "__iter__"):
            raise TypeError(f"bins must be a sequence of public categories, got {type(bins).__name__}")
        bin_list = list(bins)
        integer_domain = False
        if len(set(bin_list)) != len(bin_list):
            raise ValueError("bins must not repeat a category")
        if hist is not None and len(bin_list) != hist.categories:
            raise ValueError(f"bins has {len(bin_list)} categories, the Histogram has categories="
                             f"{hist.categories}")
    if not bin_list:
        raise ValueError("bins must hold at least one category")
    policy = hist.out_of_domain if hist is not None else "drop"
    if policy == "clamp" and not integer_domain:
        raise ValueError("out_of_domain='clamp' needs the integer categories 0..k-1 (bins=None); with explicit "
                         "bins use a Histogram with out_of_domain='drop' or 'raise'")

    _check_bins_fit(df, column, bin_list)
    # In Spark: rows outside the bins fold into one null key, so at most len(bins) + 1 groups
    # reach the driver, whatever the number of distinct values in the column
    col = F.col(quoted(column))
    if policy == "clamp":  # integer categories 0..k-1 (checked above)
        last = len(bin_list) - 1
        key = F.when(col < 0, F.lit(0)).when(col > last, F.lit(last)).otherwise(col)
    else:
        key = F.when(col.isin([_plain(b) for b in bin_list]), col)
    rows = run_job(f"counting column {column!r}",
                   lambda: df.select(key.alias("bin")).groupBy("bin").count().limit(len(bin_list) + 1).collect())
    index = {b: i for i, b in enumerate(bin_list)}
    exact = np.zeros(len(bin_list), dtype=np.int64)
    outside = 0
    for key_value, count in rows:  # exact counts: driver memory only
        i = None if key_value is None else index.get(key_value)
        if i is None:
            outside += int(count)
        else:
            exact[i] += int(count)
    if outside and policy == "raise":
        raise ValueError(f"column {column!r}: some rows are outside the bins (out_of_domain='raise'; this "
                         "exception itself reveals that such a row exists)")
    if hist is not None:
        plan = mechanism.plan((len(bin_list),), np.int64)
        mechanism._charge(plan)  # once, before any noise (Mechanism.release's step 3)
        noisy = plan.execute(mechanism.rng, exact)  # once (step 4)
    else:
        noisy = mechanism.release(exact)
    noisy = np.asarray(noisy).copy()
    noisy.flags.writeable = False
    return PrivateCounts(tuple(bin_list), noisy)


def _plain(value: Any) -> Any:
    """A bin as the Python value Spark takes as a literal (NumPy scalars unwrapped)."""
    return value.item() if isinstance(value, np.generic) else value


def _bin_kind(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    return type(value).__name__


#: Spark integral types and the values they hold
_INT_RANGES = {"ByteType": 8, "ShortType": 16, "IntegerType": 32, "LongType": 64}


def _check_bins_fit(df: Any, column: str, bins: list[Any]) -> None:
    """TypeError naming the column unless its Spark type can hold every bin: integer bins need
    an integral column wide enough for them, str bins a string column, float bins a float or
    double column, bool bins a boolean column, bytes bins a binary column."""
    from pyspark.sql import types as T

    dtype = df.schema[column].dataType
    kinds = {_bin_kind(b) for b in bins}
    if len(kinds) != 1:
        raise TypeError(f"bins must all be of one type (int, float, str, bytes or bool), got {sorted(kinds)}")
    kind = kinds.pop()
    fits = {
        "int": isinstance(dtype, T.IntegralType),
        "float": isinstance(dtype, (T.FloatType, T.DoubleType)),
        "str": isinstance(dtype, (T.StringType, T.CharType, T.VarcharType)),
        "bytes": isinstance(dtype, T.BinaryType),
        "bool": isinstance(dtype, T.BooleanType),
    }.get(kind, False)
    if not fits:
        raise TypeError(f"column {column!r} is {dtype.simpleString()}: it cannot hold {kind} bins (no row would "
                        "count); cast the column or give bins of its type")
    if kind == "int":
        bits = _INT_RANGES.get(type(dtype).__name__, 64)
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if min(int(b) for b in bins) < lo or max(int(b) for b in bins) > hi:
            raise TypeError(f"column {column!r} is {dtype.simpleString()}: it cannot hold every bin (range "
                            f"[{lo}, {hi}])")
