"""Local DP, k-ary randomized response ("grr"): n = 10^6 devices, epsilon = 2, Zipf(1.1) items,
one thread, secure generator (the LDP issue #12's workload).

Targets (checked in test_grr_targets, absolute throughputs as the issue states them):
  client privatization                          >= 5e6 devices/s
  d = 1024: aggregation plus full estimation    >= 1e7 devices/s
Reported beside them, measured in the same run: NumPy's float k-ary RR (neither exact nor
secure: the speed yardstick) and a plain bincount of the true items (the floor of any server).
"""
import math

import numpy as np
import pytest

import dpnoise
from conftest import RESULTS, assert_targets, ratio, record, throughput
from dpnoise.demos.data import zipf_items

N, EPS, D = 1_000_000, 2.0, 1024
ITEMS = zipf_items(N, D, seed=1)
FO = dpnoise.ldp.FrequencyOracle("grr", epsilon=EPS, domain_size=D)
CLIENT = FO.client()
REPORTS = CLIENT.privatize(ITEMS)
NP = np.random.default_rng()


def test_grr_client(benchmark):
    out = record(benchmark, "ldp grr client d=1024", lambda: CLIENT.privatize(ITEMS), N, rounds=5)
    assert CLIENT.rng.is_secure and out.n == N


def test_numpy_float_rr(benchmark):
    p = math.exp(EPS) / (math.exp(EPS) + D - 1)

    def float_rr():
        other = NP.integers(0, D - 1, N)
        return np.where(NP.random(N) < p, ITEMS, other + (other >= ITEMS))
    record(benchmark, "ldp numpy float rr d=1024", float_rr, N, rounds=5)


def test_grr_server(benchmark):
    est = record(benchmark, "ldp grr server d=1024", lambda: FO.aggregator().add(REPORTS).estimate(), N, rounds=5)
    true = np.bincount(ITEMS, minlength=D)
    # a sanity check of the answer (not a statistical test): the top item is estimated within 6 stderr
    agg = FO.aggregator().add(REPORTS)
    top = int(true.argmax())
    assert abs(est[top] - true[top]) < 6 * agg.stderr()[top]


def test_bincount_floor(benchmark):
    record(benchmark, "ldp numpy bincount d=1024", lambda: np.bincount(ITEMS, minlength=D), N, rounds=5)


TARGETS = [("ldp grr client d=1024", 5e6), ("ldp grr server d=1024", 1e7)]


def test_grr_report():
    if "ldp grr client d=1024" not in RESULTS:
        pytest.skip("benchmarks disabled")
    for key, target in TARGETS:
        print(f"\n{key}: {throughput(key) / 1e6:.1f} M devices/s (target {target / 1e6:g} M)")
    for key, base in (("ldp grr client d=1024", "ldp numpy float rr d=1024"),
                      ("ldp grr server d=1024", "ldp numpy bincount d=1024")):
        if ratio(key, base) is not None:
            print(f"{key} / {base}: {ratio(key, base):.2f}x")


def test_grr_targets(request):
    assert_targets(request, rates=TARGETS)
