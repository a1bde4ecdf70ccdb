"""Numeric mean oracles (dpnoise.ldp.MeanOracle): n = 10^6 users, values uniform on [0, 600]
(minutes of use), bounds (0, 600), one thread, secure generator (dpnoise.default_rng()).

Targets (issue #22 item 2; checked in test_mean_targets):
  client privatization   >= 1e7 values/s   (every method)
  server add + mean      >= 1e8 reports/s  (every method)
Also reported: the stated against the empirical standard error at ε in {0.5, 1, 2, 4}
(300 runs of 2,000 users holding 300.0; the ratio is printed, the unit tests assert it), and
the client's throughput relative to Hadamard's frequency-oracle client in the same run.

Constant time (issue #25 item 1, docs/security.md "Constant-time mean oracles"): the
``constant_time=True`` clients of every method, a hybrid vector of k = 8, and the zmatrix
client (d = 2^16, 2^20 columns), each beside the default client measured in the same session;
test_constant_time_ratios prints the throughputs and ratios (no target: reported only).
"""
import math
import os
import time

import numpy as np
import pytest

import dpnoise
from dpnoise import ldp
from conftest import RESULTS, record

N, EPS = 1_000_000, 1.0
METHODS = ["duchi", "bitmean", "piecewise", "hybrid"]
VALUES = np.random.default_rng(0).uniform(0, 600, size=N)
ORACLE = {m: ldp.MeanOracle(m, EPS, bounds=(0.0, 600.0)) for m in METHODS}
CLIENT = {m: ORACLE[m].client() for m in METHODS}
REPORTS = {m: CLIENT[m].privatize(VALUES, threads=1) for m in METHODS}
CALIBRATION: dict = {}


@pytest.mark.parametrize("method", METHODS)
def test_mean_client(benchmark, method):
    out = record(benchmark, f"ldp mean client {method}", lambda: CLIENT[method].privatize(VALUES, threads=1), N,
                 rounds=3)
    assert CLIENT[method].rng.is_secure and len(out) == N


@pytest.mark.parametrize("method", METHODS)
def test_mean_server(benchmark, method):
    def run():
        agg = ORACLE[method].aggregator().add(REPORTS[method])
        return agg.mean(), agg.mean_stderr()

    mean, se = record(benchmark, f"ldp mean server {method}", run, N, rounds=5)
    assert abs(mean - VALUES.mean()) < 5 * se


def test_hadamard_client_reference(benchmark):
    fo = ldp.FrequencyOracle("hadamard", EPS, 1024)
    c = fo.client()
    items = (VALUES * 1024 / 600).astype(np.int64).clip(0, 1023)
    record(benchmark, "ldp hadamard client d=1024 (reference)", lambda: c.privatize(items, threads=1), N, rounds=3)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("method", METHODS)
def test_stderr_calibration(method, eps):
    """Stated vs empirical standard error of the mean (300 runs of 2,000 users at 300.0)."""
    oracle = ldp.MeanOracle(method, eps, bounds=(0.0, 600.0))
    client = oracle.client(dpnoise.default_rng(int(eps * 10)), allow_insecure=True)
    est, stated = [], []
    for _ in range(300):
        agg = oracle.aggregator().add(client.privatize(np.full(2000, 300.0)))
        est.append(agg.mean())
        stated.append(agg.mean_stderr())
    emp = float(np.std(est, ddof=1))
    CALIBRATION[(method, eps)] = (float(np.mean(stated)), emp, oracle.worst_case_variance())
    assert abs(np.mean(stated) / emp - 1) < 0.25  # 300 runs: relative SE 4%; the unit tests hold 10%


def test_mean_targets(request):
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("benchmarks disabled: no timings to compare")
    keys = [f"ldp mean client {m}" for m in METHODS] + [f"ldp mean server {m}" for m in METHODS]
    if any(k not in RESULTS for k in keys):
        pytest.skip("run the whole file to compare")
    lines, misses = [], []
    ref = RESULTS.get("ldp hadamard client d=1024 (reference)")
    for m in METHODS:
        c, s = 1 / RESULTS[f"ldp mean client {m}"], 1 / RESULTS[f"ldp mean server {m}"]
        rel = f", {RESULTS[f'ldp mean client {m}'] and ref / RESULTS[f'ldp mean client {m}']:.2f}x hadamard" if ref else ""
        lines.append(f"{m}: client {c:.3g} values/s{rel}; server {s:.3g} reports/s")
        if c < 1e7:
            misses.append(f"{m} client {c:.3g} < 1e7 values/s")
        if s < 1e8:
            misses.append(f"{m} server {s:.3g} < 1e8 reports/s")
    for (m, eps), (stated, emp, _worst) in sorted(CALIBRATION.items()):
        lines.append(f"stderr {m} eps={eps}: stated {stated:.4g} empirical {emp:.4g} ratio {stated / emp:.3f}")
    print("\n" + "\n".join(lines))
    assert not misses, "; ".join(misses)


# ---------------------------------------------------------------- constant time vs default
N_CT = 200_000
VECTOR = np.random.default_rng(1).uniform(0, 600, size=(N_CT, 8))
ZM_ITEMS = np.random.default_rng(2).integers(0, 1 << 16, size=N_CT)
CT_CASES = METHODS + ["hybrid k=8", "zmatrix"]


def _ct_client(case, constant_time):
    if case == "zmatrix":
        fo = ldp.FrequencyOracle("zmatrix", EPS, 1 << 16, public_key=1, constant_time=constant_time)
        return fo.client(), ZM_ITEMS
    if case == "hybrid k=8":
        return ldp.MeanOracle("hybrid", EPS, bounds=(0.0, 600.0), dimensions=8, constant_time=constant_time).client(), VECTOR
    return ldp.MeanOracle(case, EPS, bounds=(0.0, 600.0), constant_time=constant_time).client(), VALUES[:N_CT]


@pytest.mark.parametrize("constant_time", [False, True])
@pytest.mark.parametrize("case", CT_CASES)
def test_constant_time_client(benchmark, case, constant_time):
    c, x = _ct_client(case, constant_time)
    out = record(benchmark, f"ldp ct client {case} {constant_time}", lambda: c.privatize(x, threads=1), N_CT, rounds=3)
    assert c.rng.is_secure and len(out) == N_CT


def test_constant_time_ratios(request):
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("benchmarks disabled: no timings to compare")
    if any(f"ldp ct client {c} {t}" not in RESULTS for c in CT_CASES for t in (False, True)):
        pytest.skip("run the whole file to compare")
    lines = []
    for case in CT_CASES:
        vt, ct = RESULTS[f"ldp ct client {case} False"], RESULTS[f"ldp ct client {case} True"]
        lines.append(f"{case}: constant-time {1 / ct:.3g} values/s, default {1 / vt:.3g} values/s, ratio {vt / ct:.3f}")
    print("\n" + "\n".join(lines))


# ---------------------------------------------------------------- against the NumPy formulas
# Issue #35 item 5: per method, the client (privatize) and the server (aggregator add) at 10^7
# values and per call at 100 values and at one value, against the same formula written in NumPy with NumPy's
# default generator (PCG64, not secure; floats), one thread each, interleaved, best of rounds.
# Targets: duchi/bitmean clients >= 1x the NumPy formula; piecewise/hybrid server adds >= 1x a
# NumPy float sum of the reports (dpnoise sums exactly, in integers). The other rows are shown.



N_NP = 10_000_000
LOW, HIGH = 0.0, 600.0
VALUES_NP = np.random.default_rng(3).uniform(LOW, HIGH, size=N_NP)
NP_TARGETS = {("duchi", "client"), ("bitmean", "client"), ("piecewise", "server"), ("hybrid", "server")}


def _np_duchi(gen, x, eps):
    """Duchi et al. (JASA 2018, §4.2.3): +C w.p. 1/2 + t (e^ε − 1)/(2(e^ε + 1)), t in [-1, 1]; the
    report is the bit (one byte per user here)."""
    t = (2.0 * np.clip(x, LOW, HIGH) - LOW - HIGH) / (HIGH - LOW)
    e = math.exp(eps)
    return gen.random(x.shape[0]) < 0.5 + t * ((e - 1.0) / (2.0 * (e + 1.0)))


def _np_bitmean(gen, x, eps):
    """1BitMean (Ding et al., NeurIPS 2017, §2.1): 1 w.p. 1/(e^ε + 1) + (x/m)(e^ε − 1)/(e^ε + 1)."""
    e = math.exp(eps)
    u = (np.clip(x, LOW, HIGH) - LOW) / (HIGH - LOW)
    return gen.random(x.shape[0]) < 1.0 / (e + 1.0) + u * ((e - 1.0) / (e + 1.0))


def _np_piecewise(gen, x, eps):
    """Piecewise (Wang et al., ICDE 2019, Alg. 2): uniform on [l, r] w.p. e^{ε/2}/(e^{ε/2} + 1), else
    uniform on [−C, l) ∪ (r, C]; float reports."""
    h = math.exp(eps / 2)
    c = (h + 1.0) / (h - 1.0)
    t = (2.0 * np.clip(x, LOW, HIGH) - LOW - HIGH) / (HIGH - LOW)
    left = (c + 1.0) / 2.0 * t - (c - 1.0) / 2.0
    n = x.shape[0]
    inside = gen.random(n) < h / (h + 1.0)
    y = gen.random(n)
    out_pos = y * (c + 1.0)  # the outside pieces have total length (C + l) + (C − l − C + 1) = C + 1
    outside = np.where(out_pos < c + left, -c + out_pos, left + (c - 1.0) + (out_pos - (c + left)))
    return np.where(inside, left + y * (c - 1.0), outside)


def _np_hybrid(gen, x, eps):
    """Hybrid (Wang et al., ICDE 2019, §III-C): Piecewise w.p. α = 1 − e^{−ε/2} (ε > 0.61), else Duchi
    (its ±C reports as floats)."""
    alpha = 1.0 - math.exp(-eps / 2) if eps > 0.61 else 0.0
    e = math.exp(eps)
    c = (e + 1.0) / (e - 1.0)
    duchi = np.where(_np_duchi(gen, x, eps), c, -c)
    return np.where(gen.random(x.shape[0]) < alpha, _np_piecewise(gen, x, eps), duchi)


NP_CLIENT = {"duchi": _np_duchi, "bitmean": _np_bitmean, "piecewise": _np_piecewise, "hybrid": _np_hybrid}


def _np_reports(method, gen, x):
    r = NP_CLIENT[method](gen, x, EPS)
    if r.dtype == bool:  # the Duchi-type bit as the report's value ±C
        e = math.exp(EPS)
        c = (e + 1.0) / (e - 1.0)
        r = np.where(r, c, -c)
    return r


def _interleaved_best(fns, rounds):
    """Best time of each function over ``rounds`` rounds, the order reversed every other round (what
    ran just before, e.g. NumPy's client freeing ~1 GB of temporaries, favours no one)."""
    best = {name: math.inf for name in fns}
    for r in range(rounds):
        for name, fn in (list(fns.items()) if r % 2 == 0 else list(fns.items())[::-1]):
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def _per_call(fn, calls=2000):
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls


@pytest.mark.parametrize("method", METHODS)
def test_mean_against_numpy(request, method):
    """Client and server rows against the NumPy formula, 10^7 values and 100 values per call."""
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("benchmarks disabled: no timings to compare")
    load = os.getloadavg()[0]
    oracle = ldp.MeanOracle(method, EPS, bounds=(LOW, HIGH))
    client = oracle.client()
    gen = np.random.default_rng(4)
    reports = client.privatize(VALUES_NP, threads=1)
    np_reports = _np_reports(method, gen, VALUES_NP)
    best = _interleaved_best({
        "dpnoise client": lambda: client.privatize(VALUES_NP, threads=1),
        "numpy client": lambda: NP_CLIENT[method](gen, VALUES_NP, EPS),
        "dpnoise server": lambda: oracle.aggregator().add(reports),
        "numpy server": lambda: np_reports.sum(),
    }, rounds=6)
    small, small_r, small_np = VALUES_NP[:100], client.privatize(VALUES_NP[:100], threads=1), np_reports[:100]
    calls = {"dpnoise client": _per_call(lambda: client.privatize(small, threads=1)),
             "numpy client": _per_call(lambda: NP_CLIENT[method](gen, small, EPS)),
             "dpnoise server": _per_call(lambda: oracle.aggregator().add(small_r)),
             "numpy server": _per_call(lambda: small_np.sum())}
    one, one_r, one_np = VALUES_NP[:1], client.privatize(VALUES_NP[:1], threads=1), np_reports[:1]
    scalar = {"dpnoise client": _per_call(lambda: client.privatize(one, threads=1)),
              "numpy client": _per_call(lambda: NP_CLIENT[method](gen, one, EPS)),
              "dpnoise server": _per_call(lambda: oracle.aggregator().add(one_r)),
              "numpy server": _per_call(lambda: one_np.sum())}
    lines, misses = [f"\nmean {method}, eps={EPS}, one thread (load {load:.2f} before, {os.getloadavg()[0]:.2f} after)"], []
    for side in ("client", "server"):
        ratio = best[f"numpy {side}"] / best[f"dpnoise {side}"]
        per_call = calls[f"numpy {side}"] / calls[f"dpnoise {side}"]
        target = (method, side) in NP_TARGETS
        lines.append(f"  {side}: 10^7 dpnoise {best[f'dpnoise {side}'] * 1e3:8.1f} ms, NumPy "
                     f"{best[f'numpy {side}'] * 1e3:8.1f} ms, ratio {ratio:5.2f}{' (target >= 1)' if target else ''}; "
                     f"100 per call dpnoise {calls[f'dpnoise {side}'] * 1e6:6.1f} us, NumPy "
                     f"{calls[f'numpy {side}'] * 1e6:6.1f} us, ratio {per_call:5.2f}; one value per call dpnoise "
                     f"{scalar[f'dpnoise {side}'] * 1e6:6.1f} us, NumPy {scalar[f'numpy {side}'] * 1e6:6.1f} us, ratio "
                     f"{scalar[f'numpy {side}'] / scalar[f'dpnoise {side}']:5.2f}")
        if target and ratio < 1.0:
            misses.append(f"{method} {side} {ratio:.2f}x < 1x")
    agg = oracle.aggregator().add(reports)
    assert abs(agg.mean() - VALUES_NP.mean()) < 5 * agg.mean_stderr()  # the answer, not only the time
    print("\n".join(lines))
    assert not misses, "; ".join(misses)
