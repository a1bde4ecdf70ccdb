"""Empirical privacy auditing: lower bounds on a mechanism's ε from neighbouring-input runs.

:func:`epsilon_lower_bound` runs any callable on two neighbouring inputs, picks a
distinguishing event on a training split and turns its held-out counts into a Clopper-Pearson
lower bound on ε, valid with probability >= 1 - α (DP-Sniper, Bichsel et al., S&P 2021).
:func:`search_pairs` tries several input pairs (Bonferroni). ``dpnoise audit`` (:func:`cli_main`)
runs the catalogue of :mod:`dpnoise.audit.catalogue` (docs/auditing.md).
"""
from ._events import Event
from .cli import cli_main
from .lower_bound import (
    AuditResult,
    MechanismError,
    PairSearchResult,
    epsilon_lower_bound,
    search_pairs,
)

__all__ = ["AuditResult", "Event", "MechanismError", "PairSearchResult", "cli_main",
           "epsilon_lower_bound", "search_pairs"]
