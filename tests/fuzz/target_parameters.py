"""Fuzz target: parameter conversion (src/dpnoise/_rational.py) and the samplers' parameter paths.

One input picks a converter (to_fraction, round_up, the *_pair converters, parameter_table) or a
public sampler, and a parameter decoded from the bytes. The call must return a valid result or
raise an allowed error; a rounded pair must fit the core's limits and never round toward less
noise.
"""
from __future__ import annotations

from fractions import Fraction

from fuzzing import Reader, allowed

SEEDS = [
    b"\x00\x00\x01\x05",                      # to_fraction(int 5)
    b"\x01\x01" + b"\x00" * 7 + b"\xf0\x7f",  # +inf
    b"\x02\x02" + b"\x01" + b"\x00" * 7,      # 5e-324
    b"\x03\x03\x09" + b"\xff" * 9 + b"\x01\x03",  # a Fraction with a huge numerator
    b"\x04\x04\x031e9",                       # Decimal('1e9')
    b"\x05\x04\x04sNaN",                      # Decimal('sNaN')
    b"\x06\x00\x20" + b"\xff" * 31 + b"\x7f",  # 2^255 - 1
    b"\x07\x08\x03" + b"\x00" * 7 + b"\xf8\x7f" + b"\x00" * 8 + b"\x00" * 8,  # array with NaN
    b"\x08\x07\x02\x0b\x10\x0b\x20",          # list of small numbers
    b"\x09\x0b\x08", b"\x0a\x0b\x30", b"\x0b\x0b\x04", b"\x0c\x0b\x10", b"\x0d\x0b\x01",
    b"\x0e\x0a\x02", b"\x0f\x09\x03abc",
]


def _check_pair(pair: object, value: Fraction, upward: bool) -> None:
    from dpnoise._validate import MAX_PART

    num, den = pair  # type: ignore[misc]
    assert isinstance(num, int) and isinstance(den, int) and 0 <= num <= MAX_PART and 1 <= den <= MAX_PART, pair
    if upward:
        assert Fraction(num, den) >= value, (pair, value)


def one_input(data: bytes) -> None:
    import numpy as np

    import dpnoise
    from dpnoise import _rational as R

    r = Reader(data)
    which = r.byte() % 16
    value = r.number()
    name = "param"
    names = (name,)
    try:
        if which == 0:
            fr = R.to_fraction(value, name)
            assert isinstance(fr, Fraction)
        elif which == 1:
            fr = R.to_fraction(value, name)
            if fr >= 0:
                _check_pair(R.round_up(fr, name), fr, upward=True)
        elif which == 2:
            fr = R.to_fraction(value, name)
            if fr >= 0:
                _check_pair(R.round_up(fr, name, R.MAX_VARIANCE_PRODUCT), fr, upward=True)
        elif which in (3, 4, 5, 6):
            conv = (R.scale_pair, R.variance_pair, R.gamma_pair, R.sigma_to_variance_pair)[which - 3]
            pair = conv(value, name)
            fr = R.to_fraction(value, name)
            _check_pair(pair, fr * fr if conv is R.sigma_to_variance_pair else fr, upward=True)
        elif which == 7:
            _check_pair(R.probability_pair(value, name), Fraction(0), upward=False)
        elif which == 8:
            shape, nums, dens, index = R.parameter_table(value, name, R.scale_pair)
            assert index.size == int(np.prod(shape)) and nums.shape == dens.shape
        else:
            g = dpnoise.default_rng(1)
            n = r.byte() % 4
            size = None if n == 3 else n
            pick = (which - 9) % 7
            names = (("scale",), ("sigma",), ("variance",), ("scale",), ("p",), ("gamma",), ("low", "high"))[pick]
            call = (lambda: g.discrete_laplace(value, size), lambda: g.discrete_gaussian(value, size),
                    lambda: g.discrete_gaussian(variance=value, size=size), lambda: g.geometric(scale=value, size=size),
                    lambda: g.bernoulli(value, size), lambda: g.bernoulli_exp(value, size),
                    lambda: g.integers(value, None, size))[pick]
            call()
    except allowed() as exc:
        # house rule: the message names the argument at fault
        assert any(n in str(exc) for n in names), f"{type(exc).__name__} does not name {names}: {exc}"
