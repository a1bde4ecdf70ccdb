"""Local DP against pure-ldp, in the same run: epsilon = 2, d = 1024, Zipf(1.1) devices, one
thread, dpnoise with its secure generator.

pure-ldp needs numpy < 2, so it lives in its own venv; dpnoise runs there too (it needs only
NumPy >= 1.x at run time). Run this file in that venv to get the ratios, e.g.

    python -m venv /tmp/venv-pureldp
    /tmp/venv-pureldp/bin/pip install 'numpy<2' 'xxhash<4' scikit-learn statsmodels pure-ldp pytest pytest-benchmark
    PYTHONPATH=src /tmp/venv-pureldp/bin/python -m pytest benchmarks/test_bench_ldp_peers.py -s

Everywhere else the pure-ldp half skips. pure-ldp has no batch API, so it is timed as its README
uses it: ``client.privatise(x)`` per device, ``server.aggregate(r)`` per report, then
``server.estimate_all(range(d))``; on fewer devices (PEER_N) since it is slow, and compared per
device. dpnoise is timed on N = 10^6 devices.
"""
import pytest

import dpnoise
from conftest import RESULTS, record
from dpnoise.demos.data import zipf_items

EPS, D, N = 2.0, 1024, 1_000_000
ITEMS = zipf_items(N, D, seed=1)
# pure-ldp name, dpnoise name, devices timed for pure-ldp's client and server
PAIRS = {"grr": ("DE", 200_000, 200_000), "oue": ("OUE", 5_000, 20_000), "olh": ("OLH", 50_000, 1_000),
         "hadamard": ("HR", 50_000, 200_000)}


def _pure_ldp(name):
    fo = pytest.importorskip("pure_ldp.frequency_oracles")
    ident = lambda x: x  # noqa: E731  (pure-ldp maps items to x - 1 by default)
    if name == "DE":
        from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
        return DEClient(EPS, D, index_mapper=ident), DEServer(EPS, D, index_mapper=ident)
    if name == "OUE":
        from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer
        return UEClient(EPS, D, use_oue=True, index_mapper=ident), UEServer(EPS, D, use_oue=True, index_mapper=ident)
    if name == "OLH":
        from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
        return LHClient(EPS, D, use_olh=True, index_mapper=ident), LHServer(EPS, D, use_olh=True, index_mapper=ident)
    from pure_ldp.frequency_oracles.hadamard_response import HadamardResponseClient, HadamardResponseServer
    assert fo is not None
    server = HadamardResponseServer(EPS, D, index_mapper=ident)
    return HadamardResponseClient(EPS, D, server.get_hash_funcs(), index_mapper=ident), server


@pytest.mark.parametrize("protocol", list(PAIRS))
def test_dpnoise_client(benchmark, protocol):
    fo = dpnoise.ldp.FrequencyOracle(protocol, epsilon=EPS, domain_size=D)
    client = fo.client()
    out = record(benchmark, f"ldp peers dpnoise {protocol} client", lambda: client.privatize(ITEMS), N, rounds=3)
    assert out.n == N


@pytest.mark.parametrize("protocol", list(PAIRS))
def test_dpnoise_server(benchmark, protocol):
    fo = dpnoise.ldp.FrequencyOracle(protocol, epsilon=EPS, domain_size=D)
    n = N // 10 if protocol == "olh" else N  # OLH's server is O(n·d)
    reports = fo.client().privatize(ITEMS[:n])
    record(benchmark, f"ldp peers dpnoise {protocol} server", lambda: fo.aggregator().add(reports).estimate(), n, rounds=3)


@pytest.mark.parametrize("protocol", list(PAIRS))
def test_pure_ldp_client(benchmark, protocol):
    name, n, _ = PAIRS[protocol]
    client, _ = _pure_ldp(name)
    items = ITEMS[:n].tolist()
    record(benchmark, f"ldp peers pure-ldp {protocol} client", lambda: [client.privatise(x) for x in items], n, rounds=1)


@pytest.mark.parametrize("protocol", list(PAIRS))
def test_pure_ldp_server(benchmark, protocol):
    name, _, n = PAIRS[protocol]
    client, _ = _pure_ldp(name)
    reports = [client.privatise(x) for x in ITEMS[:n].tolist()]

    def serve():
        _, server = _pure_ldp(name)
        for r in reports:
            server.aggregate(r)
        return server.estimate_all(range(D), suppress_warnings=True)
    record(benchmark, f"ldp peers pure-ldp {protocol} server", serve, n, rounds=1)


def test_ldp_peer_ratios_report():
    lines = []
    for p in PAIRS:
        for side in ("client", "server"):
            ours, theirs = RESULTS.get(f"ldp peers dpnoise {p} {side}"), RESULTS.get(f"ldp peers pure-ldp {p} {side}")
            if ours and theirs:
                lines.append(f"{p:9s} {side}: dpnoise {1 / ours / 1e6:8.2f} M/s, pure-ldp {1 / theirs / 1e6:8.4f} M/s, "
                             f"{theirs / ours:,.0f}x")
    if not lines:
        pytest.skip("pure-ldp is not installed here (or benchmarks are disabled)")
    print("\n" + "\n".join(lines))
