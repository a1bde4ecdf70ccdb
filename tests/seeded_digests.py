"""Digests of seeded outputs of every kernel that has an x86 SIMD form beside its portable one.

Not a test module: a tool to show that two builds give bit-identical seeded outputs, e.g. the
default x86-64 build and the forced-portable one (CMake -DDPNOISE_NO_SIMD=ON, which runs the code
aarch64 and Apple silicon run; docs/building.md):

    PYTHONPATH=<build A's src> python tests/seeded_digests.py > a.json
    PYTHONPATH=<build B's src> python tests/seeded_digests.py > b.json
    diff a.json b.json      # empty: the same outputs

Covers the ChaCha20 keystream (8- and 16-block kernels), the samplers on it, the mechanisms'
fused grid release (AVX2 combination) and their constant-time forms (SSE2 clamps, the AVX2
discrete Gaussian scan), local hashing (OLH/FLH support kernels), the Z-matrix sweep, the
constant-time unary randomizer (AVX2 decisions) and the mean oracles (lane sums, clamps).
Runs in a few seconds.
"""
from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np

import dpnoise
from dpnoise import _core, ldp


def digest(value: Any) -> str:
    """SHA-256 (first 16 hex digits) of an array's dtype, shape and bytes."""
    a = np.ascontiguousarray(np.asarray(value))
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()[:16]


def rng(seed: int) -> dpnoise.Generator:
    return dpnoise.default_rng(seed)


def seeded(seed: int, constant_time: bool = False) -> dict[str, Any]:
    return {"rng": rng(seed), "allow_insecure": True, "constant_time": constant_time}


def frequency(name: str, seed: int, items: np.ndarray, constant_time: bool = False, **options: Any) -> np.ndarray:
    """The estimate of protocol `name` (ε = 2, d = 300) from the seeded reports of `items`."""
    fo = ldp.FrequencyOracle(name, 2.0, 300, constant_time=constant_time, **options)
    reports = fo.client(rng(seed), allow_insecure=True).privatize(items)
    return np.asarray(fo.aggregator().add(reports).estimate())


def mean(method: str, seed: int, values: np.ndarray, constant_time: bool = False) -> np.ndarray:
    oracle = ldp.MeanOracle(method, 1.0, bounds=(-1.0, 1.0), constant_time=constant_time)
    reports = oracle.client(rng(seed), allow_insecure=True).privatize(values)
    return np.asarray(oracle.aggregator().add(reports).estimate())


GRID = np.linspace(-1e3, 1e3, 200_001)


def laplace_grid(constant_time: bool) -> np.ndarray:
    return np.asarray(dpnoise.LaplaceMechanism(1.0, 0.7, **seeded(8, constant_time))(GRID))


def gaussian_grid_float32(constant_time: bool) -> np.ndarray:
    return np.asarray(dpnoise.GaussianMechanism(1.0, 1e-5, 0.3, **seeded(9, constant_time))(GRID.astype(np.float32)))


def laplace_integers(constant_time: bool) -> np.ndarray:
    values = np.arange(-100_000, 100_000, dtype=np.int64)
    return np.asarray(dpnoise.LaplaceMechanism(0.5, 2, **seeded(10, constant_time))(values))


def discrete_gaussian_mechanism(constant_time: bool) -> np.ndarray:
    values = np.arange(200_000, dtype=np.int64)
    return np.asarray(dpnoise.DiscreteGaussianMechanism(1.0, 1e-5, sensitivity=3, **seeded(11, constant_time))(values))


def cases() -> Iterator[tuple[str, Callable[[], Any]]]:
    items = (np.arange(20_000) * 7919 % 300).astype(np.int64)
    values = np.linspace(-1.0, 1.0, 20_000)
    yield "random_raw", lambda: rng(1).random_raw(1_000_003)
    yield "random_raw threads", lambda: rng(2).random_raw(3_000_001, threads=2)
    yield "integers", lambda: rng(3).integers(0, 10**9, size=500_000)
    yield "discrete_laplace", lambda: rng(4).discrete_laplace(3.5, size=500_000)
    yield "discrete_gaussian", lambda: rng(5).discrete_gaussian(2.5, size=500_000)
    yield "discrete_laplace ct", lambda: rng(6).discrete_laplace(3.5, size=200_000, constant_time=True)
    yield "discrete_gaussian ct", lambda: rng(7).discrete_gaussian(40.0, size=200_000, constant_time=True)
    yield "chacha20 stream words", lambda: _core.chacha20_stream_words(bytes(range(32)), 5, 2**32 - 20, 1000)
    for ct in (False, True):
        tag = " ct" if ct else ""
        yield f"laplace grid float64{tag}", partial(laplace_grid, ct)
        yield f"gaussian grid float32{tag}", partial(gaussian_grid_float32, ct)
        yield f"laplace integers{tag}", partial(laplace_integers, ct)
        yield f"discrete gaussian mechanism{tag}", partial(discrete_gaussian_mechanism, ct)
    yield "olh", lambda: frequency("olh", 12, items)
    yield "olh g=3", lambda: frequency("olh", 13, items, g=3)
    yield "flh g<=16", lambda: frequency("flh", 14, items, k_prime=50, g=5, pool_key=99)
    yield "flh g>16", lambda: frequency("flh", 15, items, k_prime=50, g=40, pool_key=98)
    yield "olh ct", lambda: frequency("olh", 16, items, constant_time=True)
    yield "zmatrix", lambda: frequency("zmatrix", 17, items, columns=512, planes=10, public_key=12345)
    yield "oue ct", lambda: frequency("oue", 18, items, constant_time=True)
    yield "sue ct", lambda: frequency("sue", 19, items, constant_time=True)
    for method in ("duchi", "piecewise", "hybrid"):
        yield f"mean {method}", partial(mean, method, 20, values)
        yield f"mean {method} ct", partial(mean, method, 21, values, constant_time=True)


def main() -> None:
    print(f"X86_SIMD_BUILT = {getattr(_core, 'X86_SIMD_BUILT', 'absent')}", file=sys.stderr)
    print(json.dumps({name: digest(make()) for name, make in cases()}, indent=1))


if __name__ == "__main__":
    main()
