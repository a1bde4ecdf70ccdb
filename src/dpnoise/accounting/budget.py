"""A privacy budget (filter): refuses a release that would exceed (ε, δ), before any noise."""
from __future__ import annotations

import json
import math
import os
import threading
from typing import Any, Dict, List, Optional, Union

from .._errors import BudgetExceededError
from .. import _validate as check
from .accountant import Accountant
from .losses import PrivacyLoss, loss_from_dict

# Budgets are compared with this relative slack so that splits written in decimal
# (3 × 0.1 against 0.3) are not refused for a binary rounding error; 1e-12 of ε is far below
# anything a privacy analysis can resolve.
RELATIVE_SLACK = 1e-12


class PrivacyBudget:
    """A total (ε, δ) budget and the ledger of what has been spent against it.

    ``spend(loss)`` composes ``loss`` into a trial copy of the accountant and commits it only if
    the total still satisfies (epsilon, delta); otherwise it raises
    :class:`dpnoise.BudgetExceededError` and nothing changes. Mechanisms bound to a budget call
    ``spend`` before they draw any noise. Thread-safe: check-and-commit is atomic.

    accountant: a kind (``"basic"``, ``"advanced"``, ``"zcdp"``, ``"rdp"``, ``"pld"``) or an
    empty :class:`Accountant` to use as the template.
    """

    def __init__(self, epsilon: float, delta: float = 0.0,
                 accountant: Union[str, Accountant] = "basic",
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
        self._ledger: List[Dict[str, Any]] = []

    # ------------------------------------------------------------------ spending
    def _fits(self, acc: Accountant) -> bool:
        return acc.get_epsilon(self.delta) <= self.epsilon * (1 + RELATIVE_SLACK)

    def can_spend(self, loss: PrivacyLoss, count: int = 1) -> bool:
        """Whether ``spend(loss, count)`` would succeed now."""
        with self._lock:
            trial = self._accountant.copy().compose(loss, count)
            return self._fits(trial)

    def spend(self, loss: PrivacyLoss, count: int = 1, *, label: Optional[str] = None) -> None:
        """Charge ``count`` uses of ``loss``; BudgetExceededError (and no charge) if over budget."""
        with self._lock:
            trial = self._accountant.copy().compose(loss, count)
            if not self._fits(trial):
                spent = self._accountant.get_epsilon(self.delta)
                would = trial.get_epsilon(self.delta)
                raise BudgetExceededError(
                    f"release {label or loss!r} (x{count}) would bring epsilon at delta={self.delta:g} "
                    f"from {spent:.6g} to {would:.6g}, over the budget epsilon={self.epsilon:g}")
            self._accountant = trial
            self._ledger.append({"loss": loss.to_dict(), "count": count, "label": label})

    # ------------------------------------------------------------------ reading
    @property
    def spent_epsilon(self) -> float:
        """ε spent so far, at the budget's δ."""
        with self._lock:
            return self._accountant.get_epsilon(self.delta)

    @property
    def remaining_epsilon(self) -> float:
        """Budget ε minus the ε spent so far (at the budget's δ); never negative."""
        return max(0.0, self.epsilon - self.spent_epsilon)

    @property
    def spent_delta(self) -> float:
        """δ spent so far at the budget's ε (the least δ the ledger is (ε, δ)-DP for)."""
        with self._lock:
            return self._accountant.get_delta(self.epsilon)

    @property
    def ledger(self) -> List[Dict[str, Any]]:
        with self._lock:
            return [dict(e) for e in self._ledger]

    @property
    def accountant(self) -> Accountant:
        """A copy of the accountant holding everything spent."""
        with self._lock:
            return self._accountant.copy()

    def __repr__(self) -> str:
        return (f"PrivacyBudget(epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"accountant={self._accountant.kind!r}, spent_epsilon={self.spent_epsilon:.6g}, "
                f"releases={len(self._ledger)})")

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> Dict[str, Any]:
        with self._lock:
            acc = self._accountant
            return {"epsilon": self.epsilon, "delta": self.delta, "accountant": acc.kind,
                    "neighbours": acc.neighbours,
                    "value_discretization_interval": acc.value_discretization_interval,
                    "ledger": self.ledger}

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Write the budget and its ledger as JSON (atomically: temp file then rename)."""
        tmp = f"{os.fspath(path)}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, indent=1)
        os.replace(tmp, path)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "PrivacyBudget":
        acc = Accountant(data["accountant"], data.get("neighbours", "add_remove"),
                         value_discretization_interval=data.get("value_discretization_interval", 1e-4))
        budget = cls(data["epsilon"], data["delta"], accountant=acc)
        for entry in data["ledger"]:
            loss = loss_from_dict(entry["loss"])
            budget._accountant.compose(loss, entry["count"])
            budget._ledger.append({"loss": loss.to_dict(), "count": entry["count"],
                                   "label": entry.get("label")})
        if not math.isinf(budget.epsilon) and not budget._fits(budget._accountant):
            raise ValueError("the saved ledger exceeds the saved budget")
        return budget

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "PrivacyBudget":
        with open(path, encoding="utf-8") as fh:
            return cls.from_dict(json.load(fh))
