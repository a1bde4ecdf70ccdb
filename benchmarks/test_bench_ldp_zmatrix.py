"""The zmatrix frequency oracle (public random matrix Z): n = 10^6 users, ε = 2, Zipf(1.1) items
over d = 65,536, one thread, secure generator.

Targets (issue #12; checked in test_zmatrix_targets):
  client privatization                        >= 5e6 users/s
  d = 65,536: aggregation + full estimation   <= 5 s   (d x n = 6.6e10 entries of Z)
Users have dense public columns 0 .. n-1 (first_column=0), the protocol's intended use. The
variant with columns drawn by the clients over W = 2^20 columns is reported, not targeted.
pure-ldp has no oracle over a public random matrix, so there is no peer figure.

Issue #22 item 6: estimate(items) for 3 items at d = 2^26 (8,192 users on distinct columns)
sweeps 3 rows of Z instead of all d (target <= 0.05 s); the full sweep of the same state is
timed in the same run (the ratio is printed) and gives identical values.
"""
import numpy as np

from conftest import assert_targets, record, record_time
from dpnoise import ldp
from dpnoise.demos.data import zipf_items

N, D, EPS = 1_000_000, 65_536, 2.0
ITEMS = zipf_items(N, D, seed=0)
TRUTH = np.bincount(ITEMS, minlength=D)
FO = ldp.FrequencyOracle("zmatrix", EPS, D, columns=N, planes=1)
FO_RANDOM = ldp.FrequencyOracle("zmatrix", EPS, D, columns=1 << 20)
CLIENT = FO.client()  # secure generator
REPORTS = CLIENT.privatize(ITEMS, first_column=0, threads=1)
REPORTS_RANDOM = FO_RANDOM.client().privatize(ITEMS, threads=1)


def accurate(est, agg):
    """The top items' estimates within 5 standard errors of the truth (a sanity check)."""
    top = np.argsort(TRUTH)[-20:]
    return bool((np.abs(est[top] - TRUTH[top]) < 5 * agg.stderr(top)).all())


def test_zmatrix_privatize(benchmark):
    out = record(benchmark, "ldp zmatrix privatize", lambda: CLIENT.privatize(ITEMS, first_column=0, threads=1),
                 N, rounds=3)
    assert CLIENT.rng.is_secure and out.n == N


def _aggregate_and_estimate(fo, reports):
    agg = fo.aggregator().add(reports)
    return agg, agg.estimate()


def test_zmatrix_estimate_d65536(benchmark):
    agg, est = record_time(benchmark, "ldp zmatrix d=65536 add + estimate", lambda: _aggregate_and_estimate(FO, REPORTS),
                           rounds=2)
    assert accurate(est, agg)


def test_zmatrix_estimate_d65536_random_columns(benchmark):
    agg, est = record_time(benchmark, "ldp zmatrix d=65536 add + estimate (random columns, W=2^20)",
                           lambda: _aggregate_and_estimate(FO_RANDOM, REPORTS_RANDOM), rounds=1)
    assert accurate(est, agg)


def test_zmatrix_targets(request):
    assert_targets(request, rates=[("ldp zmatrix privatize", 5e6)],
                   seconds=[("ldp zmatrix d=65536 add + estimate", 5.0)])


D26, N26 = 1 << 26, 8192
FO26 = ldp.FrequencyOracle("zmatrix", EPS, D26, columns=N26, planes=1)
REPORTS26 = FO26.client().privatize(zipf_items(N26, D26, seed=1), first_column=0, threads=1)
THREE = [0, 1, D26 - 1]


def test_zmatrix_estimate_three_items_d2_26(benchmark):
    agg = FO26.aggregator().add(REPORTS26)
    est = record_time(benchmark, "ldp zmatrix d=2^26 estimate(3 items)", lambda: agg.estimate(THREE), rounds=3)
    assert "estimates" not in agg._cache  # no full sweep behind it
    benchmark.extra_info["estimates"] = est.tolist()


def test_zmatrix_estimate_full_sweep_d2_26(benchmark):
    def full():
        agg = FO26.aggregator().add(REPORTS26)
        return agg.estimate()[THREE]
    est = record_time(benchmark, "ldp zmatrix d=2^26 full estimate", full, rounds=1)
    np.testing.assert_array_equal(est, FO26.aggregator().add(REPORTS26).estimate(THREE))


def test_zmatrix_items_targets(request):
    from conftest import TIMES
    if "ldp zmatrix d=2^26 estimate(3 items)" in TIMES and "ldp zmatrix d=2^26 full estimate" in TIMES:
        print(f"\nfull / 3 items = {TIMES['ldp zmatrix d=2^26 full estimate'] / TIMES['ldp zmatrix d=2^26 estimate(3 items)']:.0f}")
    assert_targets(request, seconds=[("ldp zmatrix d=2^26 estimate(3 items)", 0.05)])
