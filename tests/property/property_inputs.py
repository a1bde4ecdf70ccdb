"""Wide inputs for the property tests, and the checks every public call must pass.

The contract (issue #10): for ANY argument, a public call returns a valid result or raises
ValueError / TypeError / OverflowError / a dpnoise.DPError, within a time bound; a call that
fails leaves the privacy budget and the generator's stream untouched.

Profiles: "ci" (default; derandomized, moderate example counts, no shrinking so that a slow
failing input cannot multiply the run time) and "dev" (random, shrinking on, more examples):
``HYPOTHESIS_PROFILE=dev pytest tests/property``.
"""
from __future__ import annotations

import contextlib
import decimal
import inspect
import math
import os
import signal
import threading
from fractions import Fraction
from typing import Any, Callable, Iterator, Tuple

import numpy as np
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dpnoise

settings.register_profile(
    "ci", derandomize=True, max_examples=40, deadline=None, print_blob=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.register_profile(
    "dev", max_examples=300, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Seconds one call may take. Generous: the machine is shared; a correct call takes milliseconds.
TIME_LIMIT = float(os.environ.get("DPNOISE_PROPERTY_TIME_LIMIT", "10"))

ALLOWED = (ValueError, TypeError, OverflowError, dpnoise.DPError)


class CallTookTooLong(Exception):
    """Raised inside a call that passed TIME_LIMIT (a hang, or a parameter-dependent loop)."""


@contextlib.contextmanager
def time_limit(seconds: float = TIME_LIMIT) -> Iterator[None]:
    """Interrupt the block after ``seconds`` (SIGALRM; main thread on POSIX, else no limit).
    A C++ loop running with the GIL released is interrupted when it returns to Python."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise CallTookTooLong(f"call took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def outcome(call: Callable[[], Any]) -> Tuple[bool, Any]:
    """(True, result) or (False, exception) for an allowed exception; anything else (another
    exception type, a time-out) propagates and fails the test."""
    with time_limit():
        try:
            return True, call()
        except ALLOWED as exc:
            assert str(exc).strip(), f"{type(exc).__name__} with an empty message"
            return False, exc


# -- wide scalar values ----------------------------------------------------------------------

SPECIAL_FLOATS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, -5e-324, 2.2250738585072014e-308,
                  1e-300, 1e-20, 0.1, 0.5, 1.0, 1.5, 2.0, 10.0, 1e20, 2.0**62, 2.0**63, 2.0**64, 1e300,
                  1e308, 1.7976931348623157e308, -1.0, -1e308]
SPECIAL_INTS = [0, 1, 2, 3, 10, -1, -(2**63), 2**31, 2**62, 2**62 + 1, 2**63 - 1, 2**63, 2**64, 2**100,
                -(2**100), 10**400]


def fractions_wide() -> st.SearchStrategy[Fraction]:
    return st.one_of(
        st.fractions(min_value=-10, max_value=10, max_denominator=1000),
        st.builds(Fraction, st.integers(-(2**100), 2**100), st.integers(1, 2**100)),
        st.sampled_from([Fraction(1, 3), Fraction(7, 3), Fraction(1, 2**70), Fraction(2**70, 3), Fraction(0)]),
    )


def decimals_wide() -> st.SearchStrategy[decimal.Decimal]:
    return st.one_of(
        st.decimals(allow_nan=False, allow_infinity=False, places=None),
        st.sampled_from([decimal.Decimal("NaN"), decimal.Decimal("sNaN"), decimal.Decimal("Infinity"),
                         decimal.Decimal("-Infinity"), decimal.Decimal("-0"), decimal.Decimal("1e-400"),
                         decimal.Decimal("1e400"), decimal.Decimal("0.1"), decimal.Decimal("2.5")]),
    )


def numpy_scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(np.float64, st.sampled_from(SPECIAL_FLOATS)),
        st.builds(np.float32, st.sampled_from([0.5, 1.0, 3.0, -0.0, math.inf, math.nan])),
        st.builds(np.float16, st.sampled_from([0.5, 1.0, 3.0, 65504.0])),
        st.builds(np.int8, st.integers(-128, 127)),
        st.builds(np.uint64, st.sampled_from([0, 1, 2**62, 2**64 - 1])),
        st.builds(np.int64, st.sampled_from([0, 1, -1, 2**63 - 1, -(2**63)])),
        st.sampled_from([np.bool_(True), np.bool_(False), np.longdouble("1e-4000"), np.longdouble(2.5)]),
    )


def odd_objects() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.booleans(), st.none(), st.text(max_size=4), st.binary(max_size=3),
        st.sampled_from(["1", "nan", "1/2", "", [], (), {}, [1.0], object(), 1 + 2j, b"\x00", range(3)]),
    )


def real_scalars() -> st.SearchStrategy[Any]:
    """Numbers of every kind (Python, NumPy, Fraction, Decimal) incl. the special values."""
    return st.one_of(
        st.sampled_from(SPECIAL_FLOATS), st.sampled_from(SPECIAL_INTS),
        st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70),
        fractions_wide(), decimals_wide(), numpy_scalars(),
    )


def scalars() -> st.SearchStrategy[Any]:
    """Anything a user might pass where a number is expected."""
    return st.one_of(real_scalars(), real_scalars(), odd_objects())


def small_positive() -> st.SearchStrategy[Any]:
    """Ordinary valid parameters, so that the success path is exercised too."""
    return st.one_of(st.sampled_from([0.5, 1, 2, 3.0, Fraction(7, 3), 10, 0.1]),
                     st.floats(0.05, 50), st.integers(1, 100))


# -- arrays of odd dtypes, strides and shapes ------------------------------------------------

ODD_DTYPES = [np.dtype(t) for t in ("int8", "uint8", "int32", "int64", "uint64", "float16", "float32",
                                    "float64", ">f8", "<i8", "bool", "complex128")]


def arrays_wide(max_side: int = 6) -> st.SearchStrategy[np.ndarray]:
    """Arrays of odd dtypes (incl. object, complex, strings), shapes (incl. empty, 0-d, 3-d) and
    memory layouts (reversed, strided, Fortran order)."""
    shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=max_side)
    base = st.one_of(
        st.sampled_from(ODD_DTYPES).flatmap(lambda dt: hnp.arrays(dt, shapes)),
        hnp.arrays(np.float64, shapes, elements=st.sampled_from(SPECIAL_FLOATS)),
        hnp.arrays(np.int64, shapes, elements=st.sampled_from([0, 1, -1, 2**53, 2**62, -(2**63), 2**63 - 1])),
        st.lists(st.one_of(st.integers(-5, 5), fractions_wide(), st.none(), st.text(max_size=2)),
                 max_size=4).map(lambda xs: np.array(xs, dtype=object)),
        st.sampled_from([np.array(["a", "b"]), np.array([], dtype="U1"), np.array(1.5),
                         np.array([[1, 2], [3, 4]], dtype=np.int16).T, np.zeros((2, 0)),
                         np.arange(12.0)[::-3], np.asfortranarray(np.ones((3, 2)))]),
    )
    return base.flatmap(lambda a: st.sampled_from([a, a[::-1] if a.ndim else a, a[::2] if a.ndim else a]))


def values() -> st.SearchStrategy[Any]:
    """What a query value or a parameter array may be: scalars, arrays, lists."""
    return st.one_of(scalars(), arrays_wide(), st.lists(real_scalars(), max_size=4))


def sizes() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(), st.integers(0, 40),
        st.tuples(st.integers(0, 6), st.integers(0, 6)), st.just(()), st.just((0,)),
        st.sampled_from([-1, (2, -1), 2.5, "3", [2], True, (True,), 2**64, (2**32, 2**32), (2**60,),
                         np.int64(3), (np.int32(2), 3), (2**62, 0)]),
    )


def threads() -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from([None, 1, 2, 3]),
                     st.sampled_from([0, -1, 4097, 2**64, True, 1.5, "2", np.int64(2)]))


# -- the untouched-state checks --------------------------------------------------------------

SEED = 20261122


def twin_generators() -> Tuple[dpnoise.Generator, dpnoise.Generator]:
    """Two seeded generators on the same stream: one is used, the other is the witness."""
    return dpnoise.default_rng(SEED), dpnoise.default_rng(SEED)


def assert_same_stream(used: dpnoise.Generator, witness: dpnoise.Generator) -> None:
    """The next sequential words AND the next sampler stream agree with the untouched twin."""
    assert np.array_equal(used.random_raw(2), witness.random_raw(2)), "the failed call consumed sequential words"
    assert np.array_equal(used.discrete_laplace(5, 4), witness.discrete_laplace(5, 4)), \
        "the failed call reserved sampler streams"


def insecure_ok(cls: Any) -> dict:
    """``allow_insecure=True`` when the class takes it (another change adds it so that seeded
    generators are refused by default); nothing otherwise. Feature-detected on purpose."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return {}
    return {"allow_insecure": True} if "allow_insecure" in params else {}


def budget_state(budget: Any) -> Tuple[Any, ...]:
    return (len(budget.ledger), budget.ledger, budget.spent_epsilon)


# -- explicit edge cases: always run (also under the derandomized CI profile) -----------------

EDGE_VALUES = [math.nan, math.inf, -math.inf, -0.0, 0, 5e-324, 1e-300, 1e308, 2**62, 2**62 + 1, 2**63,
               2**64, 10**400, -1, Fraction(1, 2**70), Fraction(2**70, 3), Fraction(-1, 3),
               decimal.Decimal("sNaN"), decimal.Decimal("NaN"), decimal.Decimal("1e400"),
               decimal.Decimal("0.5"), np.longdouble("1e-4000"), np.float16(0.5), np.uint64(2**64 - 1),
               True, None, "1", 1 + 2j, np.array([1.0, math.nan]), np.array([], dtype=float),
               np.array([[0.5, 2.0]]), np.array([1, 2], dtype=object), np.array(["1"])]


def with_edge_examples(build: Callable[[Any], dict], edge: Any = None) -> Callable[[Any], Any]:
    """Decorator: add one explicit hypothesis example per edge value (``build(v)`` -> kwargs)."""
    from hypothesis import example

    def deco(fn: Any) -> Any:
        for v in (EDGE_VALUES if edge is None else edge):
            fn = example(**build(v))(fn)
        return fn
    return deco
