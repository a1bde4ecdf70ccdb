"""pure-ldp's PEM against dpnoise's PEM, in the same process, on the issue's workload at
n = 10^5 users (32-bit IDs, 10^6 distinct, Zipf(1.1)), ε = 4, top-10 recall and wall time.

pure-ldp needs numpy < 2, so run this in its venv (see benchmarks/test_bench_ldp_peers.py):

    PYTHONPATH=src:benchmarks /tmp/venv-pureldp/bin/python benchmarks/heavy_hitters_pureldp.py

pure-ldp's PEM works on strings over an alphabet: the IDs are written as 32-character bit
strings (its default binary alphabet). Its frequency oracle is Apple's CMS (pure-ldp's OLH
enumerates each level's domain, up to 2^32 items, and runs out of memory, as the issue reports).
pure-ldp parameters: start_length 8 and fragment_length 8 (levels of 16, 24, 32 bits: pure-ldp
counts the first level as start + fragment), CMS with k = 256 hash functions of width m = 1024
(its README's example sizes), top-k pruning with k = 10 at every level (its find_heavy_hitters).
"""
import random
import sys
import time

import numpy as np

import dpnoise
from dpnoise.ldp import HeavyHitters
from dpnoise.demos.data import id_workload, true_top

N, EPS = 100_000, 4.0


def pure_ldp_pem(items, seed):
    from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
    from pure_ldp.heavy_hitters.prefix_extending import PEMClient, PEMServer

    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002  (pure_ldp draws from NumPy's global state: the only way to seed it)
    server_fo = CMSServer(EPS, 256, 1024)
    client_fo = CMSClient(EPS, server_fo.hash_funcs, 1024)
    server = PEMServer(EPS, 8, 32, 8, fo_server=server_fo)
    client = PEMClient(EPS, 8, 32, 8, fo_client=client_fo)
    t0 = time.perf_counter()
    for x in items:
        server.aggregate(client.privatise(format(int(x), "032b")))
    hh, _ = server.find_heavy_hitters(k=10)
    return {int(s, 2) for s in hh}, time.perf_counter() - t0


def dpnoise_pem(items, seed):
    hh = HeavyHitters("pem", EPS, item_bits=32)
    t0 = time.perf_counter()
    agg = hh.aggregator().add(hh.client(dpnoise.default_rng(seed), allow_insecure=True).privatize(items))
    found = {r.item for r in agg.top(10)}
    return found, time.perf_counter() - t0


def main() -> int:
    items = id_workload(32, n_users=N)
    truth = true_top(items, 10)
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print("| library | users | ε | top-10 recall | seconds end to end |")
    print("|---|---|---|---|---|")
    for name, fn in (("dpnoise PEM (FLH, k′=16384)", dpnoise_pem), ("pure-ldp PEM (CMS k=256, m=1024)", pure_ldp_pem)):
        rec, secs = [], []
        for s in range(seeds):
            found, t = fn(items, s + 1)
            rec.append(len(found & truth) / 10)
            secs.append(t)
        print(f"| {name} | {N:,} | {EPS:g} | {np.mean(rec):.2f} (mean of {seeds}) | {np.mean(secs):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
