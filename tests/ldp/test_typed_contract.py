"""Defects the strict type check of dpnoise.ldp found (issue 36 item 6): a client whose
``privatize`` dropped the envelope's ``device_keys`` (zmatrix: TypeError instead of the refusal
every other configuration gives), and report fields asked for a bound or a width they do not
declare (a bare ``int(None)`` TypeError instead of an error naming the field)."""
import inspect

import numpy as np
import pytest

import dpnoise
from dpnoise import ldp
from dpnoise.accounting import PrivacyBudget
from dpnoise.ldp._schema import PER_USER, ROW, ReportField

KEY = bytes(range(32))


def _registered_classes():
    for family in ldp.Configuration.families().values():
        yield from family.registered().values()


@pytest.mark.parametrize("cls", list(_registered_classes()), ids=lambda c: f"{c.family}:{c.name}")
def test_every_client_takes_the_envelope_keywords(cls):
    # an override may add keywords (zmatrix's columns), never drop the envelope's
    params = inspect.signature(cls.client_class.privatize).parameters
    for name in ("threads", "device_keys"):
        assert name in params and params[name].kind is inspect.Parameter.KEYWORD_ONLY, (cls.name, name)


def test_zmatrix_refuses_device_keys_like_the_others_and_charges_nothing():
    budget = PrivacyBudget(5.0)
    for name in ("zmatrix", "hadamard"):  # neither memoises: the same refusal, naming the argument
        fo = ldp.FrequencyOracle(name, 1.0, 16)
        client = fo.client(dpnoise.default_rng(1), allow_insecure=True, budget=budget)
        with pytest.raises(ValueError, match=f"device_key.*not '{name}'"):
            client.privatize([1, 2], device_keys=[KEY, KEY])
    zm = ldp.FrequencyOracle("zmatrix", 1.0, 16).client(dpnoise.default_rng(1), allow_insecure=True, budget=budget)
    with pytest.raises(ValueError, match="device_keys or columns/first_column"):
        zm.privatize([1, 2], columns=[0, 1], device_keys=[KEY, KEY])
    with pytest.raises(ValueError, match="device_keys or columns/first_column"):
        zm.privatize([1, 2], first_column=0, device_keys=[KEY, KEY])
    assert budget.spent_epsilon == 0


def test_zmatrix_privatize_unchanged_without_device_keys():
    fo = ldp.FrequencyOracle("zmatrix", 1.0, 16)
    items = np.arange(40) % 16
    a = fo.client(dpnoise.default_rng(7), allow_insecure=True).privatize(items)
    b = fo.client(dpnoise.default_rng(7), allow_insecure=True).privatize(items, device_keys=None)
    assert a.to_bytes() == b.to_bytes()


def test_report_field_without_bound_or_width_is_named():
    per_user = ReportField("values", PER_USER, np.int64)
    with pytest.raises(ValueError, match="'values' declares no bound"):
        per_user.upper(None)
    with pytest.raises(ValueError, match="'values' is not a row field"):
        per_user.row_length(None)
    row = ReportField("bits", ROW, np.uint64, width=3)
    assert row.row_length(None) == 3 and row.row_bytes(None) == 24
    assert ReportField("v", PER_USER, "i8", bound=lambda c: c).upper(5) == 5
