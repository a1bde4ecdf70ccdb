"""The mean oracles' server kernels (cpp/include/dpnoise/ldp/mean_server_lanes.hpp): every lane
kernel this CPU has (portable, AVX2, AVX-512, AVX-512 IFMA, and "best", the one
``aggregator().add`` runs) gives exactly the sums of Python integers and the same verdict, on edge
values (|z| = Z, Z = 2^48 - 1, INT64_MIN), mixed report kinds, lengths around the vector width
and the carry blocks, and bad reports anywhere, tail included. Deterministic (fixed seeds): no
false alarms."""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpnoise
from dpnoise import _core, ldp

KERNELS = ["portable", "avx2", "avx512", "avx512ifma", "best"]
LANE_MAX_Z = 2**48 - 1  # the lane kernels' range (larger Z: the 128-bit loop)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# around the vector width (8, 16), the IFMA block (2^14) and the AVX-512 block (2^15)
LENGTHS = [0, 1, 7, 8, 9, 15, 17, 63, 65, 2**14 - 1, 2**14 + 9, 2**15 + 3, 3 * 2**15 + 13]

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]


def lane_sums(kernel: str, values: Ints, duchi: Bools | None, z: int) -> Any:
    kinds = None if duchi is None else np.packbits(duchi, bitorder="little")
    return _core.ldp._mean_lane_sums_for_testing(kernel, values, kinds, z)


def kernel_or_skip(kernel: str) -> str:
    if lane_sums(kernel, np.zeros(1, np.int64), None, 1) is None:
        pytest.skip(f"this CPU has no {kernel} kernel")
    return kernel


def exact(values: Ints, duchi: Bools | None, z: int) -> tuple[bool, int, int, int, int, int]:
    """(ok, Σz, Σz² over the Piecewise reports, Duchi ones, Duchi users, users) in Python ints."""
    v = [int(x) for x in values]
    d = [False] * len(v) if duchi is None else [bool(x) for x in duchi]
    ok = all((x in (0, 1)) if k else -z <= x <= z for x, k in zip(v, d))
    pm = [x for x, k in zip(v, d) if not k]
    ones = sum(x for x, k in zip(v, d) if k)
    return ok, sum(pm), sum(x * x for x in pm), ones, sum(d), len(v)


def hybrid_batch(n: int, z: int, seed: int, p_duchi: float = 0.6) -> tuple[Ints, Bools]:
    rng = np.random.default_rng(seed)
    duchi = rng.random(n) < p_duchi
    values = np.where(duchi, rng.integers(0, 2, n), rng.integers(-z, z + 1, n)).astype(np.int64)
    return values, duchi


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("n", LENGTHS)
def test_every_kernel_gives_the_exact_sums(kernel: str, n: int) -> None:
    kernel_or_skip(kernel)
    for z in (1, 2**40 + 3, LANE_MAX_Z):
        values, duchi = hybrid_batch(n, z, seed=n + z % 1000)
        assert lane_sums(kernel, values, duchi, z) == exact(values, duchi, z)
        assert lane_sums(kernel, values, None, z) == exact(values, None, z)


@pytest.mark.parametrize("kernel", KERNELS)
def test_lanes_at_their_largest(kernel: str) -> None:
    """Every report at |z| = Z = 2^48 - 1 over several carry blocks: each lane's sums reach their
    bound (2^11 squares' halves below 2^52 per IFMA lane, 2^12 terms below 2^48 per AVX-512 lane)."""
    kernel_or_skip(kernel)
    n = 3 * 2**15 + 5
    signs = np.where(np.random.default_rng(7).random(n) < 0.5, -1, 1)
    for values in (np.full(n, LANE_MAX_Z, np.int64), np.full(n, -LANE_MAX_Z, np.int64), signs * LANE_MAX_Z):
        values = values.astype(np.int64)
        assert lane_sums(kernel, values, None, LANE_MAX_Z) == exact(values, None, LANE_MAX_Z)
        duchi = np.arange(n) % 3 == 0
        mixed = np.where(duchi, 1, values).astype(np.int64)
        assert lane_sums(kernel, mixed, duchi, LANE_MAX_Z) == exact(mixed, duchi, LANE_MAX_Z)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("n", [9, 2**14 + 9, 2**15 + 3])
def test_one_bad_report_refuses_the_batch(kernel: str, n: int) -> None:
    kernel_or_skip(kernel)
    z = 2**40 + 3
    values, duchi = hybrid_batch(n, z, seed=3)
    # first, inside the first vector, the last vector of the body, the tail (n % 8 reports)
    positions = sorted({0, 5, n - n % 8 - 1, n - 1})
    for pos in positions:
        for bad in (z + 1, -z - 1, INT64_MIN, INT64_MAX):  # a Piecewise report out of range
            v, d = values.copy(), duchi.copy()
            v[pos], d[pos] = bad, False
            assert lane_sums(kernel, v, d, z)[0] is False
            assert lane_sums(kernel, v, None, z)[0] is False
        for bad in (2, -1, 3, INT64_MIN, INT64_MAX - 1):  # a Duchi report other than 0 or 1
            v, d = values.copy(), duchi.copy()
            v[pos], d[pos] = bad, True
            assert lane_sums(kernel, v, d, z)[0] is False
        v, d = values.copy(), duchi.copy()
        v[pos], d[pos] = -z, False  # in range at the edge: accepted
        assert lane_sums(kernel, v, d, z) == exact(v, d, z)


@pytest.mark.parametrize("kernel", KERNELS)
def test_the_smallest_ranges(kernel: str) -> None:
    """Z = 0 and Z = 1: a Duchi report 1 is valid whatever Z (the IFMA kernel's shared check of
    |z| <= Z holds only for Z >= 1, so Z = 0 runs another kernel)."""
    kernel_or_skip(kernel)
    n = 2**14 + 21
    duchi = np.arange(n) % 2 == 0
    for z in (0, 1):
        values = np.where(duchi, 1, -z).astype(np.int64)
        assert lane_sums(kernel, values, duchi, z) == exact(values, duchi, z)
        bad = values.copy()
        bad[n // 2 | 1] = z + 1  # a Piecewise report (odd index) just out of range
        assert lane_sums(kernel, bad, duchi, z)[0] is False


@settings(max_examples=60, deadline=None, derandomize=True)
@given(n=st.integers(0, 300), z=st.integers(0, LANE_MAX_Z), seed=st.integers(0, 2**32 - 1),
       p_duchi=st.sampled_from([0.0, 0.3, 1.0]), bad_at=st.one_of(st.none(), st.integers(0, 299)))
def test_kernels_agree_with_the_portable_loop(n: int, z: int, seed: int, p_duchi: float, bad_at: int | None) -> None:
    values, duchi = hybrid_batch(n, z, seed, p_duchi)
    if bad_at is not None and bad_at < n:
        values[bad_at] = z + 1 if not duchi[bad_at] else 2
    want = exact(values, duchi, z)
    for kernel in KERNELS:
        got = lane_sums(kernel, values, duchi, z)
        if got is not None:
            assert got[0] == want[0]
            if want[0]:
                assert got == want


@pytest.mark.parametrize("method", ["piecewise", "hybrid"])
def test_aggregator_state_is_the_exact_sum_of_the_reports(method: str) -> None:
    """The server as users call it (``aggregator().add``, the "best" kernel): its Σz and Σz² limbs
    are the Python-integer sums of the reports, over several blocks and a tail."""
    oracle = ldp.MeanOracle(method, 1.0, bounds=(0.0, 600.0))
    x = np.random.default_rng(11).uniform(0.0, 600.0, 3 * 2**15 + 13)
    reports = oracle.client(dpnoise.default_rng(5), allow_insecure=True).privatize(x)
    values = reports.data["values"]
    duchi = None if method == "piecewise" else np.unpackbits(reports.data["kinds"], bitorder="little")[: reports.n] == 1
    ok, s, sq, ones, duchi_users, users = exact(values, duchi, oracle.grid_z)
    state = oracle.aggregator().add(reports)._state
    limbs = [int(w) for w in state["pm_sum"][0]]
    got_sum = limbs[0] + (limbs[1] << 64)
    got_sum -= (1 << 128) if got_sum >> 127 else 0
    got_sq = sum(int(w) << (64 * i) for i, w in enumerate(state["pm_sum_squares"][0]))
    assert ok and (got_sum, got_sq) == (s, sq)
    assert (int(state["duchi_ones"][0]), int(state["duchi_users"][0]), int(state["users"][0])) == (ones, duchi_users, users)


def test_the_test_hook_refuses_bad_arguments() -> None:
    v = np.zeros(9, np.int64)
    with pytest.raises(ValueError, match="kernel"):
        _core.ldp._mean_lane_sums_for_testing("sse9", v, None, 1)
    with pytest.raises(ValueError, match="Z"):
        _core.ldp._mean_lane_sums_for_testing("portable", v, None, 2**48)
    with pytest.raises(ValueError, match="kinds"):
        _core.ldp._mean_lane_sums_for_testing("portable", v, np.zeros(1, np.uint8), 1)
    with pytest.raises(ValueError, match="values"):
        _core.ldp._mean_lane_sums_for_testing("portable", v.astype(np.int32), None, 1)
