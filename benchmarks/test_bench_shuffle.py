"""Shuffle-model accounting (issue #37 item 4): the time of shuffle_amplification at n = 10^4 … 10^8,
and binary GRR's ratio table.

Targets: <= 1 s for n = 10^8 on one thread, for every kind of bound (the generic FMT21 clone
bound, binary GRR's worst case over every dataset, GRR's, OUE's, OLH's and Hadamard's weighted
clone bounds at d = 16); binary GRR within 5% of the worst case over the datasets evaluated (the
ratio table: at n = 10^4 every number k of other users holding 1; at 10^6 and 10^8 a spread of
ten k, 0 = the standard pair among them). The reference point of the issue is Wang et al.'s code:
about 20 s at n = 10^6 and 2 minutes at n = 10^8 (not installable here, so not run). Each
benchmark also checks its answer: within (0, ε0), and for the configurations never above the
generic bound. The load (`os.getloadavg`) is printed with the targets.
"""
import math
import os
import warnings

import numpy as np
import pytest
from scipy.signal import fftconvolve
from scipy.stats import binom

from conftest import TIMES, assert_targets, record_time
import dpnoise.ldp as ldp
from dpnoise.accounting import shuffle_amplification
from dpnoise.accounting.shuffle import _clone_bound_epsilon

NS = [10**4, 10**5, 10**6, 10**7, 10**8]
EPS0 = [1.0, 4.0]
DELTA = 1e-8
KINDS = {"generic": None, "binary grr": ("grr", 2), "grr d=16": ("grr", 16), "oue d=16": ("oue", 16),
         "olh d=16": ("olh", 16), "hadamard d=16": ("hadamard", 16)}


def key(kind, eps0, n):
    return f"shuffle {kind}: eps0={eps0:g}, n=1e{len(str(n)) - 1}"


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("eps0", EPS0)
@pytest.mark.parametrize("kind", list(KINDS))
def test_shuffle_amplification(benchmark, kind, eps0, n):
    spec = KINDS[kind]
    config = None if spec is None else ldp.FrequencyOracle(spec[0], epsilon=eps0, domain_size=spec[1])
    eps = record_time(benchmark, key(kind, eps0, n),
                      lambda: shuffle_amplification(eps0, n, DELTA, configuration=config))
    assert 0 < eps < eps0
    if config is not None:
        assert eps <= shuffle_amplification(eps0, n, DELTA)
    benchmark.extra_info["epsilon"] = eps


def test_shuffle_targets(request):
    """n = 10^8 within 1 s for every kind (each timing the best of 3 rounds, this session)."""
    print(f"\nload average (1, 5, 15 min): {os.getloadavg()}")
    assert_targets(request, seconds=[(key(kind, eps0, 10**8), 1.0) for kind in KINDS for eps0 in EPS0])
    for n in NS:
        print("  ".join(f"{key(kind, 4.0, n)}: {TIMES[key(kind, 4.0, n)]:.3f} s" for kind in KINDS))


def _worst_over(eps0, n, delta, ks):
    """ε of shuffled binary RR at ``delta``, the worst over the numbers k of other users holding 1
    (SciPy pmfs on ±12 sd windows; the dropped mass only lowers this reference)."""
    p = math.exp(eps0) / (1 + math.exp(eps0))
    m = n - 1
    P, Q = [], []
    for k in ks:
        parts = []
        for count, prob in ((k, p), (m - k, 1 - p)):
            sd = math.sqrt(count * prob * (1 - prob))
            lo, hi = max(0, int(count * prob - 12 * sd - 10)), min(count, int(count * prob + 12 * sd + 10))
            parts.append(binom.pmf(np.arange(lo, hi + 1), count, prob))
        z = np.maximum(fftconvolve(*parts), 0) if parts[0].size * parts[1].size > 4e6 else np.convolve(*parts)
        s1, s0 = np.concatenate([[0], z]), np.concatenate([z, [0]])
        P.append(p * s1 + (1 - p) * s0)
        Q.append((1 - p) * s1 + p * s0)
    width = max(x.size for x in P)
    P = np.array([np.pad(x, (0, width - x.size)) for x in P])
    Q = np.array([np.pad(x, (0, width - x.size)) for x in Q])

    def worst(eps):
        e = math.exp(eps)
        return max(np.maximum(P - e * Q, 0).sum(1).max(), np.maximum(Q - e * P, 0).sum(1).max())
    if worst(0.0) <= delta:
        return 0.0
    lo, hi = 0.0, eps0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if worst(mid) <= delta else (mid, hi)
    return hi


def test_binary_grr_ratio_table():
    """ε returned for binary GRR / the worst ε over the k evaluated (issue 37: <= 1.05); the old
    clone bound's ratio beside it. At n = 10^4 every k <= n/2 (the others by symmetry)."""
    rows, misses = [], []
    for n in (10**4, 10**6, 10**8):
        m = n - 1
        for eps0 in (1.0, 2.0, 4.0, 8.0):
            if n == 10**4:
                ks, what = range(0, m // 2 + 1), "every k"
            else:
                ks, what = sorted({0, 1, 2, 5, 20, 100, m // 100, m // 10, m // 4, m // 2}), "10 k"
            worst = max(_worst_over(eps0, n, DELTA, ks[i:i + 500]) for i in range(0, len(ks), 500))
            fo = ldp.FrequencyOracle("grr", epsilon=eps0, domain_size=2)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # (8, 10^4): no amplification, nor in truth
                ours = shuffle_amplification(eps0, n, DELTA, configuration=fo)
            rows.append(f"  n=1e{len(str(n)) - 1} eps0={eps0:g}: ours {ours:.6g}  worst over {what} {worst:.6g}  "
                        f"ratio {ours / worst:.4f}  (old clone bound: {_clone_bound_epsilon(eps0, n, DELTA, domain_size=2) / worst:.3f})")
            if not worst * (1 - 1e-5) <= ours <= worst * 1.05:
                misses.append(rows[-1])
    print(f"\nload average (1, 5, 15 min): {os.getloadavg()}\n" + "\n".join(rows))
    assert not misses, misses

