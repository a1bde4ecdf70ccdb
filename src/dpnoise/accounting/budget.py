"""A privacy budget (filter): refuses a release that would exceed (ε, δ), before any noise.

In memory (``PrivacyBudget(...)``) or backed by a file shared between processes
(``PrivacyBudget.open(path, ...)``). The file format is JSON, versioned::

    {"format": "dpnoise.PrivacyBudget", "version": 2,
     "epsilon": ..., "delta": ..., "accountant": ..., "neighbours": ...,
     "value_discretization_interval": ...,
     "ledger": [{"loss": {...}, "count": 1, "label": null, "insecure": false}, ...],
     "totals": {"releases": n, "uses": Σ count, "insecure_releases": m, "spent_epsilon": ε}}

``totals`` is recomputed from the ledger on every load and must agree with it, so a ledger
edited by hand (an entry removed, a count lowered) is refused. Version 1 (no ``format``,
``version``, ``totals`` or ``insecure``) is still read.
"""
from __future__ import annotations

import copy
import json
import math
import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Union

from .. import _validate as check
from .._errors import BudgetExceededError
from .accountant import Accountant, _same_loss, _same_signature
from .losses import PrivacyLoss, loss_from_dict
from .pld import DEFAULT_INTERVAL

# Budgets are compared with this relative slack so that splits written in decimal
# (3 × 0.1 against 0.3) are not refused for a binary rounding error; 1e-12 of ε is far below
# anything a privacy analysis can resolve.
RELATIVE_SLACK = 1e-12
FORMAT = "dpnoise.PrivacyBudget"
VERSION = 2
# recorded spent ε and the one recomputed from the ledger must agree to this relative precision
_TOTALS_RTOL = 1e-9

PathLike = Union[str, "os.PathLike[str]"]


def _field(data: dict[str, Any], name: str, where: str = "budget data") -> Any:
    if name not in data:
        raise ValueError(f"{where} is missing the field {name!r}")
    return data[name]


class PrivacyBudget:
    """A total (ε, δ) budget and the ledger of what has been spent against it.

    ``spend(loss)`` composes ``loss`` into a trial copy of the accountant and commits it only if
    the total still satisfies (epsilon, delta); otherwise it raises
    :class:`dpnoise.BudgetExceededError` and nothing changes. Mechanisms bound to a budget call
    ``spend`` before they draw any noise. Thread-safe: check-and-commit is atomic.

    accountant: a kind (``"basic"``, ``"advanced"``, ``"zcdp"``, ``"rdp"``, ``"pld"``) or an
    empty :class:`Accountant` to use as the template.

    A budget made by :meth:`open` is backed by its file and safe across processes (see there).

    Parameters
    ----------
    epsilon : float
        The total ε >= 0.
    delta : float, default 0.0
        The total δ in [0, 1]; ε spent is read at this δ.
    accountant : str or Accountant, default "basic"
        A kind or an empty accountant used as the template.
    neighbours : {"add_remove", "replace"}, default "add_remove"
        The neighbouring relation (ignored when ``accountant`` is an Accountant).

    Raises
    ------
    ValueError
        For a negative ε, a δ outside [0, 1], an unknown kind or neighbours, or an accountant
        that already holds events.

    Examples
    --------
    >>> from dpnoise.accounting import PrivacyBudget, Laplace
    >>> budget = PrivacyBudget(epsilon=1.0)
    >>> budget.spend(Laplace(scale=2.0), count=2, label="two counts")
    >>> budget.can_spend(Laplace(scale=2.0))
    False
    """

    def __init__(self, epsilon: float, delta: float = 0.0,
                 accountant: str | Accountant = "basic",
                 neighbours: str = "add_remove"):
        self.epsilon = check.nonnegative(epsilon, "epsilon")
        self.delta = check.probability(delta, "delta")
        if isinstance(accountant, Accountant):
            if accountant.events:
                raise ValueError("accountant must be empty (the budget keeps its own ledger)")
            self._accountant = accountant.copy()
        else:
            self._accountant = Accountant(accountant, neighbours)
        self._lock = threading.RLock()
        self._ledger: list[dict[str, Any]] = []
        self._path: str | None = None
        # (loss, rest of the ledger, largest count of loss known to fit, least count known not
        # to fit or None): see _fits_uses
        self._headroom: tuple[PrivacyLoss, Any, int, int | None] | None = None
        # the repeated event's fast lane (in-memory budgets): (loss, label, insecure, its
        # ledger dict, how many more single uses are known to fit); see spend
        self._repeat: list[Any] | None = None

    # ------------------------------------------------------------------ spending
    def _fits(self, acc: Accountant) -> bool:
        return acc.get_epsilon(self.delta) <= self.epsilon * (1 + RELATIVE_SLACK)

    def _fits_uses(self, trial: Accountant, loss: PrivacyLoss) -> bool:
        """``_fits(trial)``, where ``trial`` is the ledger plus the uses of ``loss`` asked for,
        answered without composing anything when a larger count of ``loss`` over the same rest
        of the ledger is already known to fit (or a smaller one known not to).

        Sound because the privacy curve of a composition never decreases when a mechanism is
        added to it (the shorter composition is a post-processing, a projection, of the longer
        one: Dwork & Roth 2014, Prop. 2.1), so a valid upper bound ε(rest + m uses) <= budget
        bounds every count up to m. A training loop charging one identical step at a time thus
        costs O(log T) accountant evaluations in all, not T (each one a full composition)."""
        sig = trial._signature_without(loss)
        have = trial.count_of(loss)
        known = self._headroom
        if known is not None and _same_signature(known[1], sig) and _same_loss(known[0], loss):
            if have <= known[2]:
                return True
            if known[3] is not None and have >= known[3]:
                return False

        def fits_with(extra: int) -> bool:
            return self._fits(trial if extra == 0 else trial.copy().compose(loss, extra))

        if _uses(loss) > 1:  # many selections in one use: no look-ahead (its composition is the costly part)
            if _fits_or_refuse(lambda: fits_with(0)):  # a composition too large to compute is a refusal
                return True
            self._headroom = (loss, sig, 0, have)
            return False
        ahead = max(127, have)  # look ahead to twice the count: O(log T) evaluations in all
        if _fits_or_refuse(lambda: fits_with(ahead)):
            self._headroom = (loss, sig, have + ahead, None)
            return True
        if not _fits_or_refuse(lambda: fits_with(0)):
            self._headroom = (loss, sig, 0, have)
            return False
        lo, hi = 0, ahead  # fits at +lo, not at +hi: bisect for the largest count that fits
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _fits_or_refuse(lambda mid=mid: fits_with(mid)):  # called at once; bound for clarity
                lo = mid
            else:
                hi = mid
        self._headroom = (loss, sig, have + lo, have + hi)
        return True

    def can_spend(self, loss: PrivacyLoss, count: int = 1) -> bool:
        """Whether ``spend(loss, count)`` would succeed now.

        Parameters
        ----------
        loss : PrivacyLoss
            What one use spends.
        count : int, default 1
            How many uses.

        Returns
        -------
        bool
            True when the ledger plus these uses stays within (epsilon, delta).
        """
        with self._synced(write=False):
            trial = self._accountant.copy().compose(loss, count)
            return self._fits_uses(trial, loss)

    def spend(self, loss: PrivacyLoss, count: int = 1, *, label: str | None = None,
              insecure: bool = False) -> None:
        """Charge ``count`` uses of ``loss``; BudgetExceededError (and no charge) if over budget.

        label: a name for the ledger (never put data values in it).
        insecure: True when the release draws from a generator that is not cryptographically
        secure (the caller allowed it); the ledger records it and the summary counts it.
        For a file-backed budget the charge is durable on disk before this returns.

        Parameters
        ----------
        loss, count
            As for :meth:`Accountant.compose`.
        label : str, optional
            A name for the ledger entry (never put data values in it).
        insecure : bool, default False
            True when the release draws from a generator that is not cryptographically secure.

        Raises
        ------
        dpnoise.BudgetExceededError
            When the total would exceed the budget (nothing is charged).
        TypeError
            For a non-str label, a non-bool ``insecure`` or a ``loss`` that is no descriptor.
        ValueError
            When the accountant cannot compose ``loss``, or ``count`` < 1.
        OSError
            When a file-backed budget cannot write its file (nothing is charged).
        """
        repeat = self._repeat
        if repeat is not None and repeat[0] is loss and count.__class__ is int and count == 1 \
                and repeat[1] == label and repeat[2] is insecure and label.__class__ in (str, type(None)):
            with self._lock:  # the repeated event's fast lane: O(1), no composition
                repeat = self._repeat
                if repeat is not None and repeat[0] is loss and repeat[4] > 0:
                    repeat[4] -= 1
                    self._accountant.compose(loss)  # the last composed descriptor: O(1)
                    self._ledger.append({"loss": repeat[3], "count": 1, "label": label, "insecure": insecure})
                    return
        if label is not None and not isinstance(label, str):
            raise TypeError(f"label must be a str or None, got {type(label).__name__}")
        if not isinstance(insecure, bool):
            raise TypeError(f"insecure must be a bool, got {type(insecure).__name__}")
        with self._synced(write=True):
            self._repeat = None
            trial = self._accountant.copy().compose(loss, count)
            if not self._fits_uses(trial, loss):
                raise BudgetExceededError(self._refusal(trial, loss, count, label))
            entry = {"loss": loss.to_dict(), "count": int(count), "label": label,
                     "insecure": insecure}
            if self._path is not None:
                data = self._data([*self._ledger, entry], trial)
                _write_durably(self._path, data)  # raises before the in-memory commit
            self._accountant = trial
            self._ledger.append(entry)
            if self._path is None and count == 1:
                self._repeat = [loss, label, insecure, entry["loss"], self._room(loss)]

    def _room(self, loss: PrivacyLoss) -> int:
        """How many more single uses of ``loss`` are known to fit on top of the ledger (from the
        headroom _fits_uses found): the fast lane of spend takes them without composing."""
        known = self._headroom
        if known is None or not _same_loss(known[0], loss):
            return 0
        if not _same_signature(known[1], self._accountant._signature_without(loss)):
            return 0
        return max(0, known[2] - self._accountant.count_of(loss))

    def _refusal(self, trial: Accountant, loss: PrivacyLoss, count: int, label: str | None) -> str:
        """The refusal's message: ε before and after, when they can be computed (a composition
        too large to compute is refused as over budget, and said so)."""
        spent = self._accountant.get_epsilon(self.delta)
        try:
            would = f"{trial.get_epsilon(self.delta):.6g}"
        except (ValueError, OverflowError, MemoryError):
            would = "beyond what can be computed"
        return (f"release {label or loss!r} (x{count}) would bring epsilon at delta={self.delta:g} "
                f"from {spent:.6g} to {would}, over the budget epsilon={self.epsilon:g}")

    # ------------------------------------------------------------------ reading
    @property
    def spent_epsilon(self) -> float:
        """ε spent so far, at the budget's δ."""
        with self._synced(write=False):
            return self._accountant.get_epsilon(self.delta)

    @property
    def remaining_epsilon(self) -> float:
        """Budget ε minus the ε spent so far (at the budget's δ); never negative."""
        return max(0.0, self.epsilon - self.spent_epsilon)

    @property
    def spent_delta(self) -> float:
        """δ spent so far at the budget's ε (the least δ the ledger is (ε, δ)-DP for)."""
        with self._synced(write=False):
            return self._accountant.get_delta(self.epsilon)

    @property
    def ledger(self) -> list[dict[str, Any]]:
        """A copy of the entries spent: dicts with ``loss`` (as ``to_dict``), ``count``,
        ``label`` and ``insecure``, in order."""
        with self._synced(write=False):
            return [_entry_copy(e) for e in self._ledger]

    @property
    def insecure_releases(self) -> int:
        """How many ledger entries were released with a non-secure generator."""
        with self._synced(write=False):
            return sum(1 for e in self._ledger if e.get("insecure"))

    @property
    def accountant(self) -> Accountant:
        """A copy of the accountant holding everything spent."""
        with self._synced(write=False):
            return self._accountant.copy()

    @property
    def path(self) -> str | None:
        """The backing file of a budget made by :meth:`open`, else None."""
        return self._path

    def __repr__(self) -> str:
        with self._synced(write=False):
            insecure = sum(1 for e in self._ledger if e.get("insecure"))
            where = f", path={self._path!r}" if self._path is not None else ""
            return (f"PrivacyBudget(epsilon={self.epsilon:g}, delta={self.delta:g}, "
                    f"accountant={self._accountant.kind!r}, "
                    f"spent_epsilon={self._accountant.get_epsilon(self.delta):.6g}, "
                    f"releases={len(self._ledger)}, insecure_releases={insecure}{where})")

    def summary(self) -> str:
        """A short human-readable account of the budget (no data values).

        Returns
        -------
        str
            One line: the budget, the accountant, ε spent and the number of releases (and of
            insecure ones, if any).
        """
        with self._synced(write=False):
            spent = self._accountant.get_epsilon(self.delta)
            insecure = sum(1 for e in self._ledger if e.get("insecure"))
            text = (f"privacy budget epsilon={self.epsilon:g}, delta={self.delta:g} "
                    f"({self._accountant.kind} accountant): spent epsilon={spent:.6g} in "
                    f"{len(self._ledger)} releases")
            if insecure:
                text += (f"; {insecure} of them used a NON-SECURE generator and give no "
                         f"privacy guarantee against an adversary who can predict it")
            return text

    # ------------------------------------------------------------------ persistence
    def _data(self, ledger: list[dict[str, Any]], acc: Accountant) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION,
                "epsilon": self.epsilon, "delta": self.delta, "accountant": acc.kind,
                "neighbours": acc.neighbours,
                "value_discretization_interval": acc.value_discretization_interval,
                "ledger": [_entry_copy(e) for e in ledger],
                "totals": {"releases": len(ledger),
                           "uses": sum(int(e["count"]) for e in ledger),
                           "insecure_releases": sum(1 for e in ledger if e.get("insecure")),
                           "spent_epsilon": acc.get_epsilon(self.delta)}}

    def to_dict(self) -> dict[str, Any]:
        """The budget as plain data (the file format, version 2).

        Returns
        -------
        dict
            JSON-able: format, version, epsilon, delta, accountant settings, ledger and totals.
        """
        with self._synced(write=False):
            return self._data(self._ledger, self._accountant)

    def save(self, path: PathLike) -> None:
        """Write the budget and its ledger as JSON, durably (temp file, fsync, rename, fsync of
        the directory). A snapshot: later spends are not written; see :meth:`open`.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (replaced atomically).
        """
        _write_durably(os.fspath(path), self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyBudget:
        """Rebuild a budget from :meth:`to_dict` output. ValueError (naming the field) when a
        field is missing or malformed, when the ledger exceeds the budget, or when the ledger
        does not add up to the recorded totals.

        Parameters
        ----------
        data : dict
            Output of :meth:`to_dict` (version 1 or 2).

        Returns
        -------
        PrivacyBudget
            An in-memory budget holding the ledger.

        Raises
        ------
        TypeError
            If ``data`` is not a dict.
        ValueError
            As described above.
        """
        if not isinstance(data, dict):
            raise TypeError(f"budget data must be a dict, got {type(data).__name__}")
        version = data.get("version", 1)
        if "format" in data and data["format"] != FORMAT:
            raise ValueError(f"budget data has format {data['format']!r}, expected {FORMAT!r}")
        if version not in (1, 2) or isinstance(version, bool):
            raise ValueError(f"budget data has unsupported version {version!r} (this dpnoise "
                             f"reads versions 1 and 2)")
        try:
            acc = Accountant(_field(data, "accountant"), data.get("neighbours", "add_remove"),
                             value_discretization_interval=data.get(
                                 "value_discretization_interval", DEFAULT_INTERVAL))
            budget = cls(_field(data, "epsilon"), _field(data, "delta"), accountant=acc)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"budget data is invalid: {exc}") from None
        ledger = _field(data, "ledger")
        if not isinstance(ledger, list):
            raise ValueError("budget data field 'ledger' must be a list")
        for i, entry in enumerate(ledger):
            where = f"budget ledger entry {i}"
            if not isinstance(entry, dict):
                raise ValueError(f"{where} must be a dict")
            try:
                loss = loss_from_dict(_field(entry, "loss", where))
                count = check.count(_field(entry, "count", where), "count")
                label = entry.get("label")
                insecure = entry.get("insecure", False)
                if label is not None and not isinstance(label, str):
                    raise ValueError("label must be a string or null")
                if not isinstance(insecure, bool):
                    raise ValueError("insecure must be true or false")
                budget._accountant.compose(loss, count)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{where} is invalid: {exc}") from None
            budget._ledger.append({"loss": loss.to_dict(), "count": count, "label": label,
                                   "insecure": insecure})
        if not math.isinf(budget.epsilon) and not budget._fits(budget._accountant):
            raise ValueError("the saved ledger exceeds the saved budget")
        if version >= 2:
            budget._check_totals(_field(data, "totals"))
        return budget

    def _check_totals(self, totals: Any) -> None:
        if not isinstance(totals, dict):
            raise ValueError("budget data field 'totals' must be a dict")
        mine = self._data(self._ledger, self._accountant)["totals"]
        for key in ("releases", "uses", "insecure_releases"):
            if _field(totals, key, "budget totals") != mine[key]:
                raise ValueError(f"the ledger does not add up to the recorded totals: {key} is "
                                 f"{mine[key]} by the ledger, {totals[key]!r} recorded")
        recorded = _field(totals, "spent_epsilon", "budget totals")
        if not isinstance(recorded, (int, float)) or isinstance(recorded, bool) or \
                not math.isclose(recorded, mine["spent_epsilon"], rel_tol=_TOTALS_RTOL,
                                 abs_tol=1e-12):
            raise ValueError(f"the ledger does not add up to the recorded totals: spent_epsilon "
                             f"is {mine['spent_epsilon']!r} by the ledger, {recorded!r} recorded")

    @classmethod
    def load(cls, path: PathLike) -> PrivacyBudget:
        """Read a budget saved by :meth:`save` (an in-memory snapshot, not file-backed).

        Parameters
        ----------
        path : str or os.PathLike
            The JSON file.

        Returns
        -------
        PrivacyBudget
            The budget and its ledger.
        """
        return cls.from_dict(_read_json(os.fspath(path)))

    # ------------------------------------------------------------------ file-backed
    @classmethod
    def open(cls, path: PathLike, epsilon: float, delta: float = 0.0, *,
             accountant: str = "basic", neighbours: str = "add_remove",
             value_discretization_interval: float = DEFAULT_INTERVAL) -> PrivacyBudget:
        """A budget backed by the file at ``path``, shared safely by any number of processes.

        The file is created (with an empty ledger) if absent. If it exists, its epsilon, delta,
        accountant, neighbours and value_discretization_interval must equal the arguments
        (ValueError naming those that differ) and its ledger must be consistent with its totals.

        Every spend takes an exclusive lock (``fcntl.flock`` on ``path + ".lock"``), re-reads the
        ledger, checks the budget, appends, writes durably (temp file in the same directory,
        flush, fsync, ``os.replace``, fsync of the directory) and only then returns: processes
        sharing the file never overspend together, and a spend reported as made survives a
        crash. Reads re-read the file under a shared lock. POSIX only (needs ``fcntl``).

        Parameters
        ----------
        path : str or os.PathLike
            The budget file (``path + ".lock"`` is its lock file).
        epsilon, delta, accountant, neighbours, value_discretization_interval
            As for :class:`PrivacyBudget` and :class:`Accountant`.

        Returns
        -------
        PrivacyBudget
            A file-backed budget.

        Raises
        ------
        ValueError
            When an existing file differs from the arguments or is not a valid budget.
        OSError
            Without POSIX file locks, or when the file cannot be read or written.
        """
        try:
            import fcntl  # noqa: F401
        except ImportError:  # pragma: no cover - Windows
            raise OSError("file-backed budgets need POSIX file locks (fcntl)") from None
        path = os.path.abspath(os.fspath(path))
        template = cls(epsilon, delta, Accountant(
            accountant, neighbours, value_discretization_interval=value_discretization_interval))
        with _file_lock(path, exclusive=True):
            if os.path.exists(path):
                stored = cls.from_dict(_read_json(path))
                differ = [name for name, a, b in (
                    ("epsilon", stored.epsilon, template.epsilon),
                    ("delta", stored.delta, template.delta),
                    ("accountant", stored._accountant.kind, template._accountant.kind),
                    ("neighbours", stored._accountant.neighbours, template._accountant.neighbours),
                    ("value_discretization_interval",
                     stored._accountant.value_discretization_interval,
                     template._accountant.value_discretization_interval)) if a != b]
                if differ:
                    raise ValueError(f"the budget file {path!r} differs from the arguments in: "
                                     f"{', '.join(differ)}")
                budget = stored
            else:
                budget = template
                _write_durably(path, budget.to_dict())
        budget._path = path
        return budget

    @contextmanager
    def _synced(self, write: bool) -> Iterator[None]:
        """Hold the thread lock and, for a file-backed budget, the file lock with the in-memory
        state refreshed from the file."""
        with self._lock:
            if self._path is None:
                yield
                return
            with _file_lock(self._path, exclusive=write):
                fresh = PrivacyBudget.from_dict(_read_json(self._path))
                if (fresh.epsilon, fresh.delta, fresh._accountant.kind) != \
                        (self.epsilon, self.delta, self._accountant.kind):
                    raise ValueError(f"the budget file {self._path!r} was replaced by a "
                                     f"different budget")
                self._accountant, self._ledger = fresh._accountant, fresh._ledger
                yield


def _entry_copy(entry: dict[str, Any]) -> dict[str, Any]:
    """A ledger entry the caller may change: repeated entries share their loss dict inside the
    budget (the fast lane), so it is copied, with its nested parts, on the way out."""
    out = dict(entry)
    out["loss"] = copy.deepcopy(entry["loss"])
    return out


def _uses(loss: PrivacyLoss) -> int:
    """How many single selections or releases one use of ``loss`` stands for."""
    inner = getattr(loss, "loss", loss)  # WithinTotalVariation wraps the exact loss
    try:
        return int(inner.repetitions()[1])
    except (AttributeError, TypeError, ValueError):
        return 1


def _fits_or_refuse(fits: Any) -> bool:
    """``fits()``, where a composition too large to compute (the PLD grid, an overflow) counts as
    not fitting: such a release is refused like any other over-budget release."""
    try:
        return bool(fits())
    except (ValueError, OverflowError, MemoryError):
        return False


def _read_json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the budget file {path!r} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"the budget file {path!r} does not hold a budget")
    return data


@contextmanager
def _file_lock(path: str, exclusive: bool) -> Iterator[None]:
    import fcntl

    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _write_durably(path: str, data: dict[str, Any]) -> None:
    """Write JSON so that after return it survives a crash, and readers see old or new whole."""
    directory = os.path.dirname(os.path.abspath(path)) or "."
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
