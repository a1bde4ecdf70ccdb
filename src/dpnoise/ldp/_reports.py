"""One batch of randomized reports, whatever the configuration: :class:`Reports`, its wire
format (dpnoise.ldp._wire), per-device records (dpnoise.ldp._records) and Arrow tables
(dpnoise.ldp.arrow, imported only when used: pyarrow is an extra)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _wire, arrow as _arrow
from ._records import from_records, to_records
from ._registry import FAMILIES, configuration_of, family_of_magic
from ._schema import check_arrays, concat_arrays


@dataclass(frozen=True)
class Reports:
    """A batch of randomized reports.

    Attributes
    ----------
    protocol : str
        The configuration's registered name (``method`` is the same, for heavy hitters).
    params : tuple
        The configuration's fingerprint: reports are only added to an aggregator of the very
        same configuration.
    n : int
        The number of reports (one per user).
    data : dict of str to numpy.ndarray
        The arrays the configuration declares (``report_fields``).

    Reports reveal nothing beyond what the LDP guarantee allows; send them as they are, with
    :meth:`to_bytes` (versioned, SHA-256-checked).
    """

    protocol: str
    params: tuple[tuple[str, Any], ...]
    n: int
    data: dict[str, np.ndarray] = field(compare=False)
    family: str = field(default="frequency", compare=False)
    #: rows a reader dropped as malformed (``from_arrow(..., on_malformed="skip")``), else 0
    skipped: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        n = self.n
        if type(n) is not int:  # the common case (a client's own count) needs no conversion
            if isinstance(n, np.integer):
                n = int(n)
            if not isinstance(n, int) or isinstance(n, bool):
                raise TypeError(f"Reports.n must be an int in [0, 2^62], got {type(self.n).__name__}")
            object.__setattr__(self, "n", n)
        if not 0 <= n <= _wire.MAX_REPORTS:
            raise TypeError(f"Reports.n must be an int in [0, 2^62], got {type(self.n).__name__}")
        if not isinstance(self.data, dict):
            raise TypeError("Reports.data must be a dict of NumPy arrays by name")
        for k, v in self.data.items():
            if not (isinstance(k, str) and isinstance(v, np.ndarray)):
                raise TypeError("Reports.data must be a dict of NumPy arrays by name")
        if self.family not in FAMILIES:
            raise ValueError(f"Reports.family must be one of {sorted(FAMILIES)}, got {self.family!r}")

    @classmethod
    def _made(cls, protocol: str, params: tuple[tuple[str, Any], ...], n: int, data: dict[str, np.ndarray],
              family: str) -> Reports:
        """A batch a configuration's own client made (``Configuration._client_reports``): the same
        object the constructor makes, without re-checking fields that are right by construction."""
        out = object.__new__(cls)
        out.__dict__.update(protocol=protocol, params=params, n=n, data=data, family=family, skipped=0)
        return out

    @property
    def method(self) -> str:
        """The configuration's name (the heavy-hitters spelling of ``protocol``)."""
        return self.protocol

    def __len__(self) -> int:
        return self.n

    def to_bytes(self) -> bytes:
        """The batch as bytes, to send from devices to a server: versioned and SHA-256-checked
        like an aggregator's state (see :meth:`Aggregator.to_bytes`).

        Returns
        -------
        bytes
            Loadable with :meth:`from_bytes`.
        """
        fam = FAMILIES[self.family]
        header = {fam._header_key: self.protocol, "n": self.n, "params": _wire.jsonable(dict(self.params))}
        return _wire.frame(fam._reports_magic, header, sorted(self.data.items()))

    def configuration(self) -> Any:
        """The configuration these reports were made for, rebuilt from their fingerprint.

        Returns
        -------
        Configuration
            Equal (same ``fingerprint()``) to the client's.
        """
        return configuration_of(self.family, self.protocol, dict(self.params))

    @staticmethod
    def concat(batches: Any) -> Reports:
        """One batch of all the reports of ``batches`` (packed bits are repacked across them).

        Parameters
        ----------
        batches : iterable of Reports
            At least one, all of one configuration.

        Returns
        -------
        Reports
            The reports in order.

        Raises
        ------
        ValueError
            For an empty list, or batches of different configurations (naming both).
        TypeError
            For anything that is not a Reports.
        """
        batches = list(batches)
        if not batches:
            raise ValueError("batches must hold at least one Reports")
        for b in batches:
            if not isinstance(b, Reports):
                raise TypeError(f"batches must hold dpnoise.ldp.Reports, got {type(b).__name__}")
        first = batches[0]
        for b in batches[1:]:
            if b.protocol != first.protocol or b.params != first.params or b.family != first.family:
                raise ValueError(f"batches of different configurations cannot be concatenated "
                                 f"({first.protocol!r} and {b.protocol!r}, or the same name with other parameters)")
        config = first.configuration()
        for b in batches:
            check_arrays(config.report_fields, config, b.data, b.n, config.name)
        counts = [b.n for b in batches]
        return config._reports(sum(counts), concat_arrays(config.report_fields, config, [b.data for b in batches],
                                                          counts))

    # -- compact per-device records (dpnoise.ldp._records) ---------------------------------------
    def to_records(self) -> list[bytes]:
        """One ``bytes`` per report: a 16-byte header (format and configuration id) and the
        report's own fields, no JSON (see :mod:`dpnoise.ldp._records`).

        Returns
        -------
        list of bytes
            One record per report, in order.
        """
        return to_records(self)

    @staticmethod
    def from_records(records: Any, oracle: Any) -> Reports:
        """The batch of per-device records written by :meth:`to_records`, parsed vectorised;
        ValueError for a truncated record or one of another configuration or format, naming
        its position, never its content.

        Parameters
        ----------
        records : iterable of bytes
            Records written by :meth:`to_records`.
        oracle : Configuration
            The configuration the records must be of.

        Returns
        -------
        Reports
            One report per record.
        """
        return from_records(records, oracle)

    def to_arrow(self) -> Any:
        """The batch as a ``pyarrow.Table``, one row per report, flat primitive columns (see
        :func:`dpnoise.ldp.arrow.to_arrow`). Needs pyarrow.

        Returns
        -------
        pyarrow.Table
            With the configuration's JSON in the schema metadata.
        """
        return _arrow.to_arrow(self)

    @staticmethod
    def from_arrow(table: Any, oracle: Any, on_malformed: str = "raise") -> Reports:
        """Reports from a ``pyarrow.Table``, RecordBatch or list of them (see
        :func:`dpnoise.ldp.arrow.from_arrow`). Needs pyarrow.

        Parameters
        ----------
        table : pyarrow.Table, pyarrow.RecordBatch or list of them
            Written by :meth:`to_arrow` (or of its layout).
        oracle : Configuration
            The configuration the table must be of (another one is refused, naming both).
        on_malformed : {"raise", "skip"}, default "raise"
            Refuse a batch with a malformed row, or drop such rows (counted in ``.skipped``).

        Returns
        -------
        Reports
            The batch.
        """
        return _arrow.from_arrow(table, oracle, on_malformed=on_malformed)

    @classmethod
    def from_bytes(cls, blob: bytes) -> Reports:
        """A batch serialised by :meth:`to_bytes`.

        Parameters
        ----------
        blob : bytes
            Bytes from :meth:`to_bytes`, e.g. as received from a device.

        Returns
        -------
        Reports
            The batch.

        Raises
        ------
        ValueError
            For anything corrupt, truncated, of another format version or of an unknown
            configuration.
        TypeError
            If ``blob`` is not bytes.
        """
        fam = family_of_magic(blob, "_reports_magic")
        what = f"{fam._label}report batch"
        header, arrays = _wire.unframe(blob, fam._reports_magic, what)
        config = fam._from_header(header, what)
        n = _wire.count_of(header, what, _wire.MAX_REPORTS)
        config._check_loaded_reports(arrays, n, what)
        return config._reports(n, arrays)
