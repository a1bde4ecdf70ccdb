"""The 1-bit Hadamard frequency oracle ("hadamard"): n = 10^6 users, ε = 2, Zipf(1.1) items,
one thread, secure generator (dpnoise.default_rng()).

Targets (issue #12; checked in test_hadamard_targets):
  client privatization                          >= 5e6 users/s   (d = 1024)
  d = 1024:   aggregation plus full estimation  >= 1e7 users/s
  d = 65,536: aggregation plus full estimation  <= 0.5 s
pure-ldp's HadamardMech (t = 1, the same oracle) is measured beside it when its venv
(/tmp/venv-pureldp, numpy < 2) exists, on fewer users (it is pure Python), in a subprocess.

Also reported (no targets): Apple's sketches "cms" and "hcms" (k = 256 hashes, width 1024),
client and aggregation + full estimation at d = 1024 and 65,536; the CMS client draws m exact
Bernoulli decisions per user, so it is timed on 10^5 users.
"""
import itertools
import json
import os
import subprocess
import textwrap

import numpy as np
import pytest

import dpnoise
from dpnoise import ldp
from conftest import RESULTS, TIMES, assert_targets, record, record_time, throughput
from sketch_accuracy import sketch_accuracy
from dpnoise.demos.data import zipf_items

N, EPS = 1_000_000, 2.0
PURE_LDP_PYTHON = "/tmp/venv-pureldp/bin/python"
ITEMS = {d: zipf_items(N, d, seed=0) for d in (1024, 65536)}
ORACLE = {d: ldp.FrequencyOracle("hadamard", EPS, d) for d in ITEMS}
CLIENT = {d: ORACLE[d].client() for d in ITEMS}  # secure (OS-keyed) generator
REPORTS = {d: CLIENT[d].privatize(ITEMS[d], threads=1) for d in ITEMS}


def close_to_truth(est, d):
    """The top items' estimates are within 5 standard errors of the truth."""
    truth = np.bincount(ITEMS[d], minlength=d)
    sd = np.sqrt(ORACLE[d].variance(N, truth))
    return bool((np.abs(est[:10] - truth[:10]) < 5 * sd[:10]).all())


@pytest.mark.parametrize("d", [1024, 65536])
def test_hadamard_client(benchmark, d):
    out = record(benchmark, f"ldp hadamard client d={d}", lambda: CLIENT[d].privatize(ITEMS[d], threads=1), N,
                 rounds=3)
    assert CLIENT[d].rng.is_secure and len(out) == N


def aggregate_and_estimate(d):
    agg = ORACLE[d].aggregator()
    agg.add(REPORTS[d])
    return agg.estimate()


def test_hadamard_aggregate_estimate_1024(benchmark):
    est = record(benchmark, "ldp hadamard aggregate+estimate d=1024", lambda: aggregate_and_estimate(1024), N,
                 rounds=5)
    assert close_to_truth(est, 1024)


def test_hadamard_aggregate_estimate_65536(benchmark):
    est = record_time(benchmark, "ldp hadamard aggregate+estimate d=65536", lambda: aggregate_and_estimate(65536),
                      rounds=3)
    assert close_to_truth(est, 65536)


SKETCH_USERS = {"cms": 100_000, "hcms": N}
SKETCH = {(name, d): ldp.FrequencyOracle(name, EPS, d, hashes=256, width=1024, public_key=2017)
          for name in SKETCH_USERS for d in ITEMS}


@pytest.mark.parametrize("name", ["cms", "hcms"])
def test_sketch_client(benchmark, name):
    f, n = SKETCH[(name, 1024)], SKETCH_USERS[name]
    c = f.client()
    out = record(benchmark, f"ldp {name} client d=1024", lambda: c.privatize(ITEMS[1024][:n], threads=1), n,
                 rounds=3)
    assert len(out) == n


@pytest.mark.parametrize("d", [1024, 65536])
@pytest.mark.parametrize("name", ["cms", "hcms"])
def test_sketch_aggregate_estimate(benchmark, name, d):
    f, n = SKETCH[(name, d)], SKETCH_USERS[name]
    # seeded reports (what is timed is the server), so the accuracy check below is deterministic
    reports = f.client(dpnoise.default_rng(2017), allow_insecure=True).privatize(ITEMS[d][:n], threads=1)

    def run():
        return f.aggregator().add(reports).estimate()

    est = record(benchmark, f"ldp {name} aggregate+estimate d={d}", run, n, rounds=3)
    truth = np.bincount(ITEMS[d][:n], minlength=d)
    # every item given the fixed key: false alarm <= 1e-6 (sketch_accuracy.py); shifted by 5 sd it must fail
    worst, biased = sketch_accuracy(f, est, truth.astype(np.float64))
    assert worst < 1, f"{name}: an estimate {worst:.2f}x its tolerance off its expectation"
    assert biased > 1, f"{name}: estimates shifted by 5 sd pass the check ({biased:.2f}x the tolerance)"


PURE_LDP_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from pure_ldp.frequency_oracles.hadamard_mechanism import HadamardMechClient, HadamardMechServer
    d, n = int(sys.argv[1]), int(sys.argv[2])
    w = 1.0 / np.arange(1, d + 1) ** 1.1
    items = np.random.default_rng(0).choice(d, size=n, p=w / w.sum()) + 1  # pure-ldp items are 1-based
    client = HadamardMechClient(epsilon=2.0, d=d, t=1)
    server = HadamardMechServer(epsilon=2.0, d=d, t=1)
    t0 = time.perf_counter(); reports = [client.privatise(int(x)) for x in items]; t1 = time.perf_counter()
    for r in reports:
        server.aggregate(r)
    server.estimate(1)  # runs the full transform
    t2 = time.perf_counter()
    print(json.dumps({"client": n / (t1 - t0), "aggregate": n / (t2 - t1)}))
""")


@pytest.mark.parametrize("d", [1024])
def test_pure_ldp_hadamard(request, d):
    """pure-ldp's 1-bit Hadamard mechanism, 20,000 users (users/s; reported beside ours)."""
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("benchmarks disabled")
    if not os.path.exists(PURE_LDP_PYTHON):
        pytest.skip("pure-ldp venv not installed")
    out = subprocess.run([PURE_LDP_PYTHON, "-c", PURE_LDP_SCRIPT, str(d), "20000"], capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        pytest.skip(f"pure-ldp failed: {out.stderr[-300:]}")
    rates = json.loads(out.stdout.strip().splitlines()[-1])
    RESULTS[f"pure-ldp hadamard client d={d}"] = 1.0 / rates["client"]
    RESULTS[f"pure-ldp hadamard aggregate+estimate d={d}"] = 1.0 / rates["aggregate"]


PURE_LDP_SKETCH_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
    d, n, had = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "hcms"
    w = 1.0 / np.arange(1, d + 1) ** 1.1
    items = np.random.default_rng(0).choice(d, size=n, p=w / w.sum())
    server = CMSServer(epsilon=2.0, k=256, m=1024, is_hadamard=had)
    client = CMSClient(epsilon=2.0, hash_funcs=server.get_hash_funcs(), m=1024, is_hadamard=had)
    t0 = time.perf_counter(); reports = [client.privatise(int(x)) for x in items]; t1 = time.perf_counter()
    for r in reports:
        server.aggregate(r)
    est = [server.estimate(x, suppress_warnings=True) for x in range(d)]  # every item, as ours
    t2 = time.perf_counter()
    print(json.dumps({"client": n / (t1 - t0), "aggregate": n / (t2 - t1)}))
""")


@pytest.mark.parametrize("name", ["cms", "hcms"])
def test_pure_ldp_sketch(request, name):
    """pure-ldp's Apple CMS / HCMS (k = 256, m = 1024, d = 1024), 5,000 users (users/s; its
    full estimation is a fixed cost of k·d Python hash calls, so per-user figures favour larger n)."""
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("benchmarks disabled")
    if not os.path.exists(PURE_LDP_PYTHON):
        pytest.skip("pure-ldp venv not installed")
    out = subprocess.run([PURE_LDP_PYTHON, "-c", PURE_LDP_SKETCH_SCRIPT, "1024", "5000", name], capture_output=True,
                         text=True, timeout=600)
    if out.returncode != 0:
        pytest.skip(f"pure-ldp failed: {out.stderr[-300:]}")
    rates = json.loads(out.stdout.strip().splitlines()[-1])
    RESULTS[f"pure-ldp {name} client d=1024"] = 1.0 / rates["client"]
    RESULTS[f"pure-ldp {name} aggregate+estimate d=1024"] = 1.0 / rates["aggregate"]


def test_hadamard_report():
    if "ldp hadamard client d=1024" not in RESULTS:
        pytest.skip("benchmarks disabled")
    for name, what in itertools.product(("hadamard", "cms", "hcms"), ("client d=1024", "aggregate+estimate d=1024")):
        ours, theirs = throughput(f"ldp {name} {what}"), throughput(f"pure-ldp {name} {what}")
        if ours is None:
            continue
        line = f"\n{name} {what}: {ours / 1e6:.3f} M users/s"
        if theirs:
            line += f" (pure-ldp {theirs / 1e6:.4f} M users/s, {ours / theirs:.0f}x)"
        print(line)
    if "ldp hadamard aggregate+estimate d=65536" in TIMES:
        print(f"hadamard aggregate+estimate d=65536: {TIMES['ldp hadamard aggregate+estimate d=65536']:.3f} s")


def test_hadamard_targets(request):
    assert_targets(request,
                   rates=[("ldp hadamard client d=1024", 5e6), ("ldp hadamard aggregate+estimate d=1024", 1e7)],
                   seconds=[("ldp hadamard aggregate+estimate d=65536", 0.5)])
