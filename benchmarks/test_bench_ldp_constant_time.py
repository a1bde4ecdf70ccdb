"""Constant-time local-DP clients (``constant_time=True``; ldp/constant_time/randomizers.hpp)
against the default clients, same run, one thread, secure generator, eps = 2, Zipf(1.1) items.

* SUE/OUE at d = 1024: the packed constant-time kernel, the default (exact geometric skips)
  client, and the constant-time SUE client this kernel replaced (an n x d one-hot matrix through
  the k-ary constant-time randomized-response kernel, reproduced below as the baseline).
* dBitFlip (b = 8), Hadamard (d = 1024), CMS (16 hashes, width 1024), HCMS: constant-time vs default.

The SUE/OUE/dBitFlip/CMS kernels decide each column from one 64-bit word (threshold rounded to
2^-64), 64 columns at a time (AVX2 compare/pack); the kernel before it (2 words and a 128-bit
compare per column) measured SUE 0.09x, OUE 0.022x and CMS 0.73x their default clients.
No stated target: the ratios are printed (test_constant_time_ldp_ratios) and recorded.

Each client's answer is also checked (accuracy): on a second, seeded run of the same client (the
timed runs use the secure generator), every item's estimate within a tolerance whose false-alarm
rate is at most 1e-6 over all D items (see accuracy()).
"""
import numpy as np
import pytest

import dpnoise
from conftest import RESULTS, record
from sketch_accuracy import sketch_accuracy
from dpnoise import _core, ldp
from dpnoise.demos.data import zipf_items
from dpnoise.ldp._protocol import native

D, EPS = 1024, 2.0
USERS = {"sue": 20_000, "oue": 20_000, "dbitflip": 200_000, "hadamard": 200_000, "cms": 20_000, "hcms": 200_000}
# the sketches' public hash key is fixed: their accuracy check is given the hashes (sketch_accuracy.py)
OPTIONS = {"dbitflip": {"bits": 8}, "cms": {"hashes": 16, "width": 1024, "public_key": 2017},
           "hcms": {"hashes": 16, "width": 1024, "public_key": 2017}}
SEED = 20261125  # the accuracy run's generator seed (fixed: the check is deterministic)


def items(name):
    return zipf_items(USERS[name], D, seed=0)


def clients(name):
    ct = ldp.FrequencyOracle(name, EPS, D, constant_time=True, **OPTIONS.get(name, {}))
    plain = ldp.FrequencyOracle(name, EPS, D, **{**OPTIONS.get(name, {}), **{k: v for k, v in ct.options.items()
                                                                             if k in ("pool_key", "public_key")}})
    return {True: ct.client(), False: plain.client()}


def onehot_sue_constant_time(client, x, threads=1):
    """The constant-time SUE client before the packed kernel: an (n, d) one-hot matrix by
    comparison, k = 2 constant-time randomized response of every cell, packed by shifts and a sum
    (batches of 2^22 cells)."""
    fo, rng = client.protocol, client.rng
    d, w, g = fo.domain_size, fo.words, fo.gamma
    cols = np.arange(d, dtype=np.int64)
    shifts = np.arange(64, dtype=np.uint64)
    out = np.zeros((x.shape[0], w), dtype=np.uint64)
    step = max(1, (1 << 22) // d)
    for lo in range(0, x.shape[0], step):
        onehot = (x[lo:lo + step, None] == cols).astype(np.int64)
        bits = _core.randomized_response_constant_time(native(rng), onehot, 2, g.numerator, 2 * g.denominator, threads)
        full = np.zeros((bits.shape[0], 64 * w), dtype=np.uint64)
        full[:, :d] = bits
        out[lo:lo + step] = (full.reshape(-1, w, 64) << shifts).sum(axis=2, dtype=np.uint64)
    return out


def accuracy(fo, reports, x):
    """max over items of |f̂(x) − E f̂(x)| / tolerance(x), and the same for f̂ + 5 sd (a biased
    estimate, which must fail: the check has power). Pass: the first < 1 (and the second > 1).
    False alarm <= 1e-6 over the D items:
    * cms/hcms: given the fixed hashes, Bernstein's inequality and a union bound (rigorous; see
      sketch_accuracy.py, which also says why a random key made the former check fail ~12% of runs).
    * the others (no public randomness; fo.variance is over users' randomness only): 6.12 sd,
      D · 2 Φ̄(6.12) = 9.6e-7 by the normal approximation (sums of 2·10^4+ bounded terms)."""
    truth = np.bincount(x, minlength=D).astype(np.float64)
    est = fo.aggregator().add(reports).estimate()
    if fo.name in ("cms", "hcms"):
        return sketch_accuracy(fo, est, truth)
    sd = np.sqrt(fo.variance(x.size, truth))
    return float(np.abs((est - truth) / (6.12 * sd)).max()), float(np.abs((est + 5 * sd - truth) / (6.12 * sd)).max())


@pytest.mark.parametrize("constant_time", [False, True])
@pytest.mark.parametrize("name", list(USERS))
def test_client(benchmark, name, constant_time):
    c = clients(name)[constant_time]
    x = items(name)
    reports = record(benchmark, f"ldp ct {name} {'constant-time' if constant_time else 'default'}", lambda: c.privatize(x, threads=1), x.size, rounds=3)
    assert reports.n == x.size
    # the answer, on a seeded run of the same client (accuracy(): false alarm <= 1e-6)
    seeded = c.protocol.client(dpnoise.default_rng(SEED), allow_insecure=True).privatize(x, threads=1)
    worst, biased = accuracy(c.protocol, seeded, x)
    assert worst < 1, f"{name}: an estimate {worst:.2f}x its tolerance off its expectation"
    assert biased > 1, f"{name}: estimates shifted by 5 sd pass the check ({biased:.2f}x the tolerance)"


def test_sue_onehot_baseline(benchmark):
    c = clients("sue")[True]
    x = items("sue")
    bits = record(benchmark, "ldp ct sue-onehot constant-time", lambda: onehot_sue_constant_time(c, x), x.size, rounds=3)
    assert bits.shape == (x.size, c.protocol.words)


def test_constant_time_ldp_ratios():
    """Prints throughput and ratios (each measured in this run)."""
    rate = {(key.split()[2], key.split()[3] == "constant-time"): 1 / t for key, t in RESULTS.items()
            if key.startswith("ldp ct ")}
    lines = [f"{name}: constant-time {rate[name, True]:.3g} users/s, default {rate[name, False]:.3g} users/s, "
             f"constant-time / default throughput {rate[name, True] / rate[name, False]:.3f}"
             for name in USERS if (name, True) in rate and (name, False) in rate]
    if ("sue-onehot", True) in rate and ("sue", True) in rate:
        lines.append(f"sue: packed constant-time kernel {rate['sue', True] / rate['sue-onehot', True]:.2f}x the "
                     f"one-hot constant-time client ({rate['sue-onehot', True]:.3g} users/s)")
    if not lines:
        pytest.skip("benchmarks disabled or the file not run whole")
    print("\n" + "\n".join(lines))
