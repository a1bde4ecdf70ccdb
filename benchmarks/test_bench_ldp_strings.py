"""Heavy hitters over long strings with no dictionary (issue #22 item 1), one thread, secure
generators.

Workload: 10^6 devices (DPNOISE_BENCH_STRING_DEVICES to change it, e.g. 10^7 once, outside CI),
Zipf(1.1) over 10,000 distinct made-up package names of 11-40 bytes (median about 23), like
``org.minevivi.lorakelo.keyboard.shop``; the items reach the client as a list of str.

Targets (test_string_targets): ``string_pem``, with uniform and with length-aware levels, finds the
true top 10 with their exact names, recall >= 0.9 at ε = 4; its server (add + top(10)) takes
<= 60 s; its client runs at >= 2 M strings/s.
Reported, not asserted: the same at ε = 2 (target recall 0.9 there: NOT met, see
docs/heavy_hitters.md), ``string_pem`` with length-aware ``level_weights`` (LENGTH_AWARE below),
and the design it is compared with in the same run:
PEM over 8-byte keyed BLAKE2b digests of the names (``long_items="hash"``), which can only name a
string when the server is GIVEN the catalogue (``candidates=``, here the true 10,000 names: an
advantage string_pem does not have).
Also reported, not asserted: every other method over the same strings with no dictionary
(``max_length=64``, their defaults): "pem" (levels of 10 bits over x⊥), "treehist" (a 256-ary
tree, threshold pruning) and "bitstogram" (string-aware codec: per-bit oracles over the padded
string and its length). Lower recall than string_pem at 10^6 devices is expected and reported as
measured (docs/heavy_hitters.md, "Long strings").
"""
import os
import time

import numpy as np
import pytest

from conftest import assert_targets, record, record_time
from dpnoise.demos.data import package_names, zipf_ranks
from dpnoise.ldp import HeavyHitters

DEVICES = int(os.environ.get("DPNOISE_BENCH_STRING_DEVICES", 10**6))
NAMES_COUNT = 10_000
RECALL: dict = {}

def catalogue(count=NAMES_COUNT, seed=2031):
    """``count`` distinct made-up package names of 11-40 bytes (dpnoise.demos.data.package_names)."""
    return package_names(count, seed, max_bytes=40)


NAMES = catalogue()
RANKS = zipf_ranks(NAMES_COUNT, DEVICES, 1.1, seed=2032)
ITEMS = [NAMES[r] for r in RANKS]
TRUTH = {NAMES[r] for r in range(10)}  # ranks 0..9 are the 10 most probable; checked below
assert {NAMES[i] for i in np.argsort(-np.bincount(RANKS, minlength=NAMES_COUNT), kind="stable")[:10]} == TRUTH


def string_pem(eps):
    return HeavyHitters("string_pem", eps, max_length=64)


# Public, fixed before any data: package names diverge after their 2-4 byte top-level domain and
# mostly end by byte 36, so levels 3-35 get 4 times the users of the others (levels 0-2: shared
# prefixes, strong anyway; 36-64: only the pooled estimates of complete names).
LENGTH_AWARE = tuple(4 if 3 <= level < 36 else 1 for level in range(65))


def string_pem_length_aware(eps):
    return HeavyHitters("string_pem", eps, max_length=64, level_weights=LENGTH_AWARE)


def pem_on_hashes(eps):
    return HeavyHitters("pem", eps, item_type="str", max_length=8, long_items="hash")


def on_strings(method):
    """``method`` over str items of up to 64 bytes, its defaults, no dictionary."""
    return lambda eps: HeavyHitters(method, eps, item_type="str", max_length=64)


DESIGNS = {"string_pem": (string_pem, None), "string_pem+level_weights": (string_pem_length_aware, None),
           "pem_hash8+catalogue": (pem_on_hashes, NAMES),
           **{f"{m}_strings": (on_strings(m), None) for m in ("pem", "treehist", "bitstogram")}}


def test_catalogue_is_the_issue_s():
    lengths = np.array([len(n.encode()) for n in NAMES])
    assert lengths.min() >= 11 and lengths.max() <= 40 and 20 <= np.median(lengths) <= 26


@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_client_throughput(benchmark, design):
    client = DESIGNS[design][0](4.0).client()
    rep = record(benchmark, f"strings client {design}", lambda: client.privatize(ITEMS, threads=1), DEVICES,
                 rounds=3)
    assert len(rep) == DEVICES and client.rng.is_secure


@pytest.mark.parametrize("eps", [4.0, 2.0])
@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_server_recall(benchmark, design, eps):
    make, candidates = DESIGNS[design]
    hh = make(eps)
    reports = hh.client().privatize(ITEMS)

    def server():
        agg = hh.aggregator(candidates) if candidates is not None else hh.aggregator()
        return agg.add(reports).top(10)

    t0 = time.perf_counter()
    top = record_time(benchmark, f"strings server {design} eps={eps:g}", server, rounds=1)
    seconds = time.perf_counter() - t0
    recall = len({h.item for h in top} & TRUTH) / 10
    RECALL[(design, eps)] = recall
    benchmark.extra_info.update(recall_top10=recall, server_seconds=seconds, devices=DEVICES)
    print(f"\n{design} eps={eps:g} devices={DEVICES}: recall {recall:.2f}, server {seconds:.1f} s; "
          f"found {[h.item for h in top]}")


def test_string_targets(request):
    if ("string_pem", 4.0) in RECALL:
        print("\n" + "\n".join(f"recall {d} eps={e:g}: {r:.2f}" for (d, e), r in sorted(RECALL.items())))
    designs = ("string_pem", "string_pem+level_weights")
    assert_targets(request, rates=[(f"strings client {d}", 2e6) for d in designs],
                   seconds=[(f"strings server {d} eps=4", 60.0) for d in designs])
    assert all(RECALL[(d, 4.0)] >= 0.9 for d in designs), RECALL
