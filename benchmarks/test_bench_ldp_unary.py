"""Unary-encoding frequency oracles ("oue", "sue"): n = 10^6 users, eps = 2, Zipf(1.1) items
over d = 1024, one thread, secure generator.

Target (issue #12; asserted in test_unary_targets): OUE aggregation plus full estimation at
d = 1024 at least 10^7 users/s. Client privatization is reported (no stated target), and
pure-ldp's OUE (a separate venv with numpy < 2) when it is importable here.
"""
import os
import subprocess

import numpy as np
import pytest

from conftest import RESULTS, assert_targets, record
from dpnoise import ldp
from dpnoise.demos.data import zipf_items

N, D, EPS = 1_000_000, 1024, 2.0
ITEMS = zipf_items(N, D, seed=0)
TRUTH = np.bincount(ITEMS, minlength=D)
FO = {name: ldp.FrequencyOracle(name, EPS, D) for name in ("oue", "sue")}
CLIENT = {name: fo.client() for name, fo in FO.items()}  # secure (OS-keyed) generators
_REPORTS = {}


def reports(name):
    if name not in _REPORTS:
        _REPORTS[name] = CLIENT[name].privatize(ITEMS, threads=1)
    return _REPORTS[name]


def accurate(est, name):
    """Every estimate within 6 standard errors of the truth (a sanity check of the answer)."""
    z = (est - TRUTH) / np.sqrt(FO[name].variance(N, TRUTH))
    return float(np.abs(z).max()) < 6


@pytest.mark.parametrize("name", ["oue", "sue"])
def test_client_privatize(benchmark, name):
    assert CLIENT[name].rng.is_secure
    out = record(benchmark, f"ldp {name} d=1024 privatize", lambda: CLIENT[name].privatize(ITEMS, threads=1), N,
                 rounds=3)
    assert out.data["bits"].shape == (N, D // 64)
    _REPORTS[name] = out


@pytest.mark.parametrize("name", ["oue", "sue"])
def test_aggregate_and_estimate(benchmark, name):
    rep = reports(name)

    def run():
        agg = FO[name].aggregator()
        agg.add(rep)
        return agg.estimate(), agg.stderr()

    est, se = record(benchmark, f"ldp {name} d=1024 aggregate+estimate", run, N, rounds=5)
    assert accurate(est, name) and se.shape == (D,)


PURE_LDP_PYTHON = os.environ.get("PURE_LDP_PYTHON", "/tmp/venv-pureldp/bin/python")
PURE_LDP_SCRIPT = r"""
import sys, time, numpy as np
from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer
n, d, eps = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
w = 1.0 / np.arange(1, d + 1) ** 1.1
items = np.random.default_rng(0).choice(d, size=n, p=w / w.sum()).tolist()
c = UEClient(epsilon=eps, d=d, use_oue=True, index_mapper=lambda x: x)
s = UEServer(epsilon=eps, d=d, use_oue=True, index_mapper=lambda x: x)
t = time.perf_counter(); reps = [c.privatise(x) for x in items]; t1 = time.perf_counter()
for r in reps: s.aggregate(r)
s.estimate(0, suppress_warnings=True); t2 = time.perf_counter()
print(n / (t1 - t), n / (t2 - t1))
"""


def test_pure_ldp_oue(request):
    """pure-ldp's OUE (a separate venv: it needs numpy < 2), 20,000 users, same (d, eps, law),
    timed once in a subprocess (PURE_LDP_PYTHON names its interpreter)."""
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("benchmarks disabled")
    if not os.path.exists(PURE_LDP_PYTHON):
        pytest.skip("pure-ldp's venv is not installed")
    out = subprocess.run([PURE_LDP_PYTHON, "-c", PURE_LDP_SCRIPT, "20000", str(D), str(EPS)], capture_output=True,
                         text=True, timeout=600)
    if out.returncode != 0:
        pytest.skip(f"pure-ldp did not run: {out.stderr.strip().splitlines()[-1:]}")
    client_rate, agg_rate = map(float, out.stdout.split())
    RESULTS["ldp pure-ldp oue d=1024 privatize"] = 1 / client_rate
    RESULTS["ldp pure-ldp oue d=1024 aggregate+estimate"] = 1 / agg_rate


def test_unary_report():
    if "ldp oue d=1024 aggregate+estimate" not in RESULTS:
        pytest.skip("benchmarks disabled")
    for key in sorted(k for k in RESULTS if k.startswith("ldp ")):
        print(f"\n{key}: {1 / RESULTS[key] / 1e6:.2f} M users/s")


def test_unary_targets(request):
    assert_targets(request, rates=[("ldp oue d=1024 aggregate+estimate", 1e7)])
