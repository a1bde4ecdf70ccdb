"""Fuzz target: loading a privacy budget's ledger (PrivacyBudget.from_dict / PrivacyBudget.load).

The bytes are read as a JSON ledger file (the format ``PrivacyBudget.save`` writes). Loading must
return a budget whose ledger fits its (epsilon, delta), or raise an allowed error; a budget that
loads must round-trip through to_dict.
"""
from __future__ import annotations

import json
import math
import os
import tempfile

from fuzzing import allowed

_GOOD = {"epsilon": 1.0, "delta": 1e-6, "accountant": "basic", "neighbours": "add_remove",
         "value_discretization_interval": 1e-4,
         "ledger": [{"loss": {"type": "PureDP", "epsilon": 0.25}, "count": 2, "label": "a"}]}

SEEDS = [
    json.dumps(_GOOD).encode(),
    json.dumps({**_GOOD, "accountant": "pld"}).encode(),
    json.dumps({**_GOOD, "accountant": "zcdp", "ledger": [
        {"loss": {"type": "Gaussian", "sigma": 3.0, "sensitivity": 1.0}, "count": 1, "label": None}]}).encode(),
    json.dumps({**_GOOD, "ledger": [{"loss": {"type": "PureDP", "epsilon": 0.25}, "count": 10}]}).encode(),
    json.dumps({**_GOOD, "epsilon": "inf"}).encode(),
    json.dumps({**_GOOD, "ledger": [{"loss": {"type": "Nope"}, "count": 1}]}).encode(),
    json.dumps({**_GOOD, "ledger": [{"loss": {"type": "PureDP", "epsilon": 0.25}, "count": 1e400}]}).encode(),
    b'{"epsilon": NaN, "delta": 0, "accountant": "basic", "ledger": []}',
    b'{"epsilon": 1, "delta": 0, "accountant": "basic", "ledger": {}}',
    b'{"epsilon": 1, "delta": 0, "accountant": "basic"}',
    b"[]", b"null", b"{}", b"\xff\xfe",
]


def one_input(data: bytes) -> None:
    from dpnoise.accounting import PrivacyBudget

    try:
        text = data.decode("utf-8")
        doc = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        doc = None
    if doc is not None:
        try:
            budget = PrivacyBudget.from_dict(doc)
        except allowed() as exc:
            assert str(exc)
        else:
            assert math.isinf(budget.epsilon) or budget.spent_epsilon <= budget.epsilon * (1 + 1e-9)
            again = PrivacyBudget.from_dict(json.loads(json.dumps(budget.to_dict())))
            assert again.ledger == budget.ledger
    if data[:1] in (b"{", b"\xff"):  # the file path too (raw bytes, any encoding)
        fd, path = tempfile.mkstemp(suffix=".json")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            try:
                PrivacyBudget.load(path)
            except allowed() as exc:
                assert str(exc)
        finally:
            os.unlink(path)
