"""Property tests of the Generator samplers over wide inputs (issue #10).

Every call returns a valid result (right shape, dtype and support) or raises an allowed error
whose message names the argument at fault, within the time limit; a call that raises leaves the
generator's stream untouched.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import dpnoise

from property_inputs import (
    PROFILE, arrays_wide, assert_same_stream, outcome, real_scalars, scalars, sizes,
    small_positive, threads, twin_generators, with_edge_examples,
)

EDGES = with_edge_examples(lambda v: {"param": v, "size": 3, "nthreads": None})

PARAMS = st.one_of(scalars(), small_positive(), arrays_wide(max_side=4),
                   st.lists(st.one_of(real_scalars(), small_positive()), max_size=3))

# name -> (call(rng, param, size, threads), parameter name, output check)
SAMPLERS: dict = {
    "discrete_laplace": (lambda g, p, s, t: g.discrete_laplace(p, s, threads=t), "scale", "int"),
    "discrete_gaussian(sigma=)": (lambda g, p, s, t: g.discrete_gaussian(p, s, threads=t), "sigma", "int"),
    "discrete_gaussian(variance=)": (lambda g, p, s, t: g.discrete_gaussian(variance=p, size=s, threads=t),
                                     "variance", "int"),
    "geometric": (lambda g, p, s, t: g.geometric(scale=p, size=s, threads=t), "scale", "nonneg"),
    "bernoulli": (lambda g, p, s, t: g.bernoulli(p, s, threads=t), "p", "bool"),
    "bernoulli_exp": (lambda g, p, s, t: g.bernoulli_exp(p, s, threads=t), "gamma", "bool"),
}


def _expected_shape(param: Any, size: Any) -> Any:
    if size is None:
        return np.shape(param) if np.ndim(param) else None
    return tuple(size) if isinstance(size, tuple) else (int(size),)


def _check_valid(out: Any, kind: str, param: Any, size: Any) -> None:
    shape = _expected_shape(param, size)
    if shape is None:
        assert np.ndim(out) == 0
    else:
        assert isinstance(out, np.ndarray) and out.shape == shape
    arr = np.asarray(out)
    if kind == "bool":
        assert arr.dtype == np.bool_
    else:
        assert arr.dtype == np.int64
        if kind == "nonneg" and arr.size:
            assert arr.min() >= 0


def _run_sampler(name: str, param: Any, size: Any, nthreads: Any) -> None:
    call, pname, kind = SAMPLERS[name]
    rng, witness = twin_generators()
    ok, res = outcome(lambda: call(rng, param, size, nthreads))
    if ok:
        _check_valid(res, kind, param, size)
        return
    msg = str(res)
    assert any(w in msg for w in (pname, "size", "threads")), \
        f"{type(res).__name__} does not name the argument: {msg!r}"
    assert_same_stream(rng, witness)


@PROFILE
@EDGES
@given(param=PARAMS, size=sizes(), nthreads=threads())
def test_discrete_laplace(param, size, nthreads):
    _run_sampler("discrete_laplace", param, size, nthreads)


@PROFILE
@EDGES
@given(param=PARAMS, size=sizes(), nthreads=threads())
def test_discrete_gaussian_sigma(param, size, nthreads):
    _run_sampler("discrete_gaussian(sigma=)", param, size, nthreads)


@PROFILE
@EDGES
@given(param=PARAMS, size=sizes(), nthreads=threads())
def test_discrete_gaussian_variance(param, size, nthreads):
    _run_sampler("discrete_gaussian(variance=)", param, size, nthreads)


@PROFILE
@EDGES
@given(param=PARAMS, size=sizes(), nthreads=threads())
def test_geometric(param, size, nthreads):
    _run_sampler("geometric", param, size, nthreads)


@PROFILE
@EDGES
@given(param=st.one_of(PARAMS, st.sampled_from([0, 1, 0.5, Fraction(1, 3), 1e-300, 5e-324, 1 - 2**-53])),
       size=sizes(), nthreads=threads())
def test_bernoulli(param, size, nthreads):
    _run_sampler("bernoulli", param, size, nthreads)


@PROFILE
@EDGES
@given(param=PARAMS, size=sizes(), nthreads=threads())
def test_bernoulli_exp(param, size, nthreads):
    _run_sampler("bernoulli_exp", param, size, nthreads)


@PROFILE
@with_edge_examples(lambda v: {"low": v, "high": None, "size": 3, "endpoint": False, "nthreads": None})
@with_edge_examples(lambda v: {"low": 0, "high": v, "size": 3, "endpoint": True, "nthreads": None})
@given(low=st.one_of(scalars(), st.integers(-(2**64), 2**64)),
       high=st.one_of(st.none(), scalars(), st.integers(-(2**64), 2**64)),
       size=sizes(), endpoint=st.one_of(st.booleans(), st.sampled_from([0, 1, "yes", None])),
       nthreads=threads())
def test_integers(low, high, size, endpoint, nthreads):
    rng, witness = twin_generators()
    ok, res = outcome(lambda: rng.integers(low, high, size, endpoint=endpoint, threads=nthreads))
    if ok:
        lo, hi = (0, low) if high is None else (low, high)
        top = hi if endpoint else hi - 1
        arr = np.asarray(res)
        assert arr.dtype == np.int64
        assert arr.shape == (() if size is None else _expected_shape(None, size))
        if arr.size:
            assert lo <= int(arr.min()) and int(arr.max()) <= top
        return
    assert any(w in str(res) for w in ("low", "high", "range", "size", "threads", "endpoint")), str(res)
    assert_same_stream(rng, witness)


@PROFILE
@given(size=sizes(), nthreads=threads())
def test_random_raw(size, nthreads):
    rng, witness = twin_generators()
    ok, res = outcome(lambda: rng.random_raw(size, threads=nthreads))
    if ok:
        if size is None:
            assert isinstance(res, int) and 0 <= res < 2**64
        else:
            assert res.dtype == np.uint64 and res.shape == _expected_shape(None, size)
            ref = witness.random_raw(size)  # same words for any thread count
            assert np.array_equal(res, ref)
        return
    assert any(w in str(res) for w in ("size", "threads")), str(res)
    assert_same_stream(rng, witness)


@PROFILE
@with_edge_examples(lambda v: {"seed": v})
@given(seed=st.one_of(scalars(), st.integers(-(2**300), 2**300)))
def test_default_rng_seed(seed):
    ok, res = outcome(lambda: dpnoise.default_rng(seed))
    if ok:
        assert res.is_secure == (seed is None)
    else:
        assert "seed" in str(res), str(res)

