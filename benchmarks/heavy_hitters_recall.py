"""Recall table of the local-DP heavy hitters (docs/heavy_hitters.md): prints one row per run.

    PYTHONPATH=src python benchmarks/heavy_hitters_recall.py [--quick]

Workload (issue #13; the generators are dpnoise.demos.data's): 10^6 distinct random IDs (a fixed-seed NumPy choice without replacement
from [0, 2^bits)), popularity Zipf(s = 1.1) over their ranks, 10^6 users; the true top-10 is
taken from the users' actual items. Strings: 2,000 random lowercase words of 3..8 bytes,
Zipf(1.1), 2·10^5 users, no dictionary. Package names: the 10,000 names of 11-40 bytes of
benchmarks/test_bench_ldp_strings.py, Zipf(1.1), every method with ``max_length=64`` (no
dictionary; string_pem for comparison). Times are end to end (clients, aggregation, top) with
one thread, measured here with time.perf_counter.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import dpnoise
from dpnoise.demos.data import id_workload, true_top, word_workload
from dpnoise.ldp import HeavyHitters


def run(method: str, eps: float, items, k: int = 10, seed: int = 1, **options) -> dict:
    hh = HeavyHitters(method, eps, **options, k=k)
    rng = dpnoise.default_rng(seed)
    t0 = time.perf_counter()
    reports = hh.client(rng, allow_insecure=True).privatize(items)
    t1 = time.perf_counter()
    agg = hh.aggregator().add(reports)
    t2 = time.perf_counter()
    top = agg.top(k)
    t3 = time.perf_counter()
    truth = true_top(items, k)
    found = {r.item for r in top}
    n = len(items)
    return {"method": method, "eps": eps, "recall": len(found & truth) / k, "client_s": t1 - t0, "add_s": t2 - t1,
            "top_s": t3 - t2, "total_s": t3 - t0, "n": n}


def name_workload(n: int) -> list:
    """n package names (Zipf(1.1) over the catalogue of test_bench_ldp_strings: 10,000 names of
    11-40 bytes, the same seeds; drawn from dpnoise.demos.data, not by importing the test module)."""
    from dpnoise.demos.data import package_names, zipf_ranks

    names = package_names(10_000, 2031, max_bytes=40)
    return [names[r] for r in zipf_ranks(len(names), n, 1.1, seed=2032)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10^5 users instead of 10^6")
    ap.add_argument("--seeds", type=int, default=1, help="runs per row (different client seeds)")
    args = ap.parse_args(argv)
    n = 10**5 if args.quick else 10**6
    t = time.perf_counter()
    ids32 = id_workload(32, n_users=n)
    ids64 = id_workload(64, n_users=n)
    words = word_workload()
    print(f"# workloads built in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    rows = [("32-bit IDs", "pem", 4.0, ids32, {"item_bits": 32}),
            ("32-bit IDs", "bitstogram", 4.0, ids32, {"item_bits": 32}),
            ("32-bit IDs", "treehist", 4.0, ids32, {"item_bits": 32}),
            ("32-bit IDs", "pem", 2.0, ids32, {"item_bits": 32}),
            ("32-bit IDs", "bitstogram", 2.0, ids32, {"item_bits": 32}),
            ("32-bit IDs", "treehist", 2.0, ids32, {"item_bits": 32}),
            ("64-bit IDs", "pem", 4.0, ids64, {"item_bits": 64}),
            ("64-bit IDs", "bitstogram", 4.0, ids64, {"item_bits": 64}),
            ("64-bit IDs", "treehist", 4.0, ids64, {"item_bits": 64}),
            ("words <= 8 B", "pem", 4.0, words, {"max_length": 8}),
            ("words <= 8 B", "bitstogram", 4.0, words, {"max_length": 8}),
            ("words <= 8 B", "treehist", 4.0, words, {"max_length": 8})]
    names = name_workload(n)
    rows += [("names 11-40 B", method, 4.0, names, {"item_type": "str", "max_length": 64})
             for method in ("string_pem", "pem", "treehist", "bitstogram")]
    print("| workload | users | method | ε | top-10 recall | client s | aggregate s | top s | total s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, method, eps, items, opts in rows:
        res = [run(method, eps, items, seed=s + 1, **opts) for s in range(args.seeds)]
        rec = np.mean([r["recall"] for r in res])
        f = {key: np.mean([r[key] for r in res]) for key in ("client_s", "add_s", "top_s", "total_s")}
        print(f"| {name} | {len(items):,} | {method} | {eps:g} | {rec:.2f}"
              + (f" (mean of {args.seeds})" if args.seeds > 1 else "")
              + f" | {f['client_s']:.2f} | {f['add_s']:.2f} | {f['top_s']:.2f} | {f['total_s']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
