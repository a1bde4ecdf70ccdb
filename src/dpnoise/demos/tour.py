"""The ``dpnoise demo`` tour: exact noise against NumPy, central DP on made-up people, private
selection over made-up clinics, local-DP telemetry over every registered frequency oracle, and
heavy hitters over app names. Public API only; the data are made up (:mod:`dpnoise.demos.data`).
"""
from __future__ import annotations

import math
import secrets
import time
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

import dpnoise
from dpnoise import _core, ldp
from dpnoise.accounting import PrivacyBudget
from dpnoise.bench import best_time
from dpnoise.demos.data import (DIAGNOSES, STATES, app_names, synthetic_app_names, synthetic_app_usage,
                                synthetic_diagnoses, synthetic_people)
from dpnoise.mechanisms import Histogram, LaplaceMechanism, PrivateKDE
from dpnoise.selection import AboveThreshold, ReportNoisyMax


def _throughput(fn: Callable[[], object], n: int, repeats: int = 3) -> float:
    return n / best_time(fn, repeats)


def _laplace_pmf(scale: float, k: np.ndarray) -> np.ndarray:
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(k)


def _gaussian_pmf(sigma: float, k: np.ndarray) -> np.ndarray:
    m = int(14 * sigma) + 40
    norm = np.exp(-(np.arange(-m, m + 1, dtype=float) ** 2) / (2 * sigma**2)).sum()
    return np.exp(-(k.astype(float) ** 2) / (2 * sigma**2)) / norm


def _fit_table(samples: np.ndarray, pmf: Callable[[np.ndarray], np.ndarray], values: Sequence[int]) -> List[str]:
    n = len(samples)
    lines = ["      x   empirical       exact    (emp-exact)/se"]
    for v in values:
        p = float(pmf(np.array([v]))[0])
        e = float((samples == v).sum()) / n
        se = math.sqrt(p * (1 - p) / n)
        lines.append(f"  {v:5d}   {e:.6f}    {p:.6f}    {(e - p) / se:+6.2f}")
    return lines


def run_tour(n: int = 2_000_000, threads: int = 1, devices: int = 1_000_000, plot: Optional[str] = None) -> None:
    """Print the tour (``dpnoise demo``) and, with ``plot``, write a PNG of the fits and of the
    telemetry estimates (matplotlib needed). Randomness: the secure default generator.

    Parameters
    ----------
    n : int
        Samples per throughput run and per fit.
    threads : int
        Threads of the timed sampler calls.
    devices : int
        Simulated devices of the local-DP parts (any value >= 1).
    plot : str, optional
        Where to write the PNG.
    """
    rng = dpnoise.default_rng()
    nprng = np.random.default_rng()
    print("dpnoise demo: exact discrete noise from a secure ChaCha20 generator")
    print(f"  generator: {rng!r}  (ChaCha20 block function: {_core.chacha20_backend()})")
    print(f"  workload:  {n:,} samples per run, best of 3, threads={threads}\n")

    rows = [
        ("discrete_laplace(scale=10)", lambda: rng.discrete_laplace(10, n, threads=threads),
         "numpy laplace(scale=10)", lambda: nprng.laplace(scale=10, size=n)),
        ("discrete_gaussian(sigma=10)", lambda: rng.discrete_gaussian(10, n, threads=threads),
         "numpy normal(scale=10)", lambda: nprng.normal(scale=10, size=n)),
    ]
    print("Throughput, measured now on this machine (NumPy's samplers are floating point and NOT")
    print("exact or secure; they are the speed reference, not an alternative):")
    for ours_name, ours, ref_name, ref in rows:
        t_ours = _throughput(ours, n)
        t_ref = _throughput(ref, n)
        print(f"  {ours_name:30s} {t_ours / 1e6:8.2f} M/s   {ref_name:26s} {t_ref / 1e6:8.2f} M/s   ratio {t_ours / t_ref:.2f}x")

    lap = rng.discrete_laplace(10, n)
    gau = rng.discrete_gaussian(10, n)
    print("\nEmpirical distribution against the exact pmf (se = binomial standard error):")
    print(" discrete Laplace, scale 10: P(x) = (1-q)/(1+q) q^|x|, q = e^(-1/10)")
    print("\n".join(_fit_table(lap, lambda k: _laplace_pmf(10.0, k), [-20, -10, -1, 0, 1, 10, 20])))
    print(" discrete Gaussian, sigma 10: P(x) proportional to exp(-x^2/200)")
    print("\n".join(_fit_table(gau, lambda k: _gaussian_pmf(10.0, k), [-20, -10, -1, 0, 1, 10, 20])))
    print(f"\n sample variance: Laplace {lap.var():.2f} (exact {2 * math.exp(-0.1) / (1 - math.exp(-0.1)) ** 2:.2f}), "
          f"Gaussian {gau.var():.2f} (exact ~100.00)")

    _central_dp_demo(rng)
    _selection_demo(rng)
    telemetry = _telemetry_demo(rng, devices)
    _daily_collection_demo(rng, min(devices, 200))

    if plot:
        import matplotlib  # importable: the command line checks it before any work

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 3, figsize=(16, 4))
        pos = np.arange(len(telemetry["top"]))
        axes[2].bar(pos - 0.2, telemetry["true"], width=0.4, label="true count")
        axes[2].bar(pos + 0.2, telemetry["estimate"], width=0.4, yerr=1.96 * telemetry["stderr"], capsize=3,
                    label=f"LDP estimate ({telemetry['protocol']}) +- 1.96 stderr")
        axes[2].set_xticks(pos, telemetry["names"], rotation=45, ha="right")
        axes[2].set_xlabel("app (the ten most used)")
        axes[2].set_ylabel("devices using it most (count)")
        axes[2].set_title(f"top apps of {devices:,} devices, epsilon=2 per device")
        axes[2].legend()
        for ax, s, pmf, title in ((axes[0], lap, lambda k: _laplace_pmf(10.0, k), "discrete Laplace, scale 10"),
                                  (axes[1], gau, lambda k: _gaussian_pmf(10.0, k), "discrete Gaussian, sigma 10")):
            ks = np.arange(-50, 51)
            counts = np.array([(s == k).sum() for k in ks]) / len(s)
            ax.bar(ks, counts, width=1.0, alpha=0.5, label="dpnoise samples")
            ax.plot(ks, pmf(ks), "k.-", lw=1, label="exact pmf")
            ax.set_title(title)
            ax.set_xlabel("noise value x")
            ax.set_ylabel("probability P(x)")
            ax.legend()
        fig.tight_layout()
        fig.savefig(plot, dpi=100)
        print(f"\nplot written to {plot}")


def _central_dp_demo(rng: "dpnoise.Generator") -> None:
    """Private releases about 1000 synthetic people, each charged to one budget."""
    people = synthetic_people()
    n = len(people["salary"])
    budget = PrivacyBudget(epsilon=3.0, delta=1e-5, accountant="pld", neighbours="replace")
    print(f"\nCentral DP on {n} synthetic people (salary, height, state); one budget "
          f"(epsilon={budget.epsilon:g}, delta={budget.delta:g}, PLD accountant, replace-one):")

    def spent(what: str) -> None:
        print(f"  -> {what}: spent so far epsilon={budget.spent_epsilon:.4f} at delta={budget.delta:g}")

    hist = Histogram(1.0, categories=len(STATES), neighbours="replace", rng=rng, budget=budget)
    noisy = hist(people["state"])
    true = hist.counts(people["state"])
    print(f"\n Histogram of state, epsilon=1 (sensitivity 2 under replace-one), "
          f"95% of releases within +-{hist.accuracy(0.05):.0f} on every bar:")
    for name, t, v in zip(STATES, true, noisy):
        print(f"   {name:20s} true {t:4d}   private {v:4d}")
    spent("histogram")

    cap = 10_000.0
    mean_mech = LaplaceMechanism(0.5, sensitivity=cap / n, rng=rng, budget=budget)
    clipped = np.clip(people["salary"], 0, cap)
    private_mean = mean_mech(clipped.mean())
    print(f"\n Mean salary (clipped to [0, {cap:.0f}], sensitivity {cap / n:g}), epsilon=0.5: "
          f"true {clipped.mean():.2f}, private {private_mean:.2f} "
          f"(an exact multiple of 2^{mean_mech.grid(1)[0]}; 95% within +-{mean_mech.accuracy(0.05):.2f})")
    spent("mean salary")

    grid = np.linspace(150, 200, 11)
    kde = PrivateKDE(1.0, 1e-6, bandwidth=3.0, grid=grid, rng=rng, budget=budget)
    dens = kde.density(people["height"])
    private = kde(people["height"])
    print("\n Private KDE of height (Gaussian-process mechanism, epsilon=1, delta=1e-6, h=3 cm):")
    print("   height  " + " ".join(f"{g:6.0f}" for g in grid))
    print("   true    " + " ".join(f"{1000 * v:6.2f}" for v in dens) + "   (x 1e-3)")
    print("   private " + " ".join(f"{1000 * v:6.2f}" for v in private))
    spent("KDE")
    print(f"\n Ledger: {len(budget.ledger)} releases, remaining epsilon {budget.remaining_epsilon:.4f}; "
          f"basic composition would have charged {1.0 + 0.5 + 1.0:.1f} plus the KDE's delta.")


def _telemetry_demo(rng: "dpnoise.Generator", devices: int) -> Dict[str, Any]:
    """Local DP at telemetry scale: every simulated device randomizes its own most-used app; the
    server estimates every app's count with a standard error. Returns what the plot shows."""
    apps, eps = 1024, 2.0
    items = synthetic_app_usage(devices, apps)
    names = app_names(apps)
    true = np.bincount(items, minlength=apps)
    print(f"\nLocal DP telemetry: {devices:,} simulated devices each report their most-used of {apps:,} apps "
          f"(Zipf 1.1), epsilon={eps:g} per device; the server never sees an app, only randomized reports.")
    print(f"  {'protocol':10s} {'client':>12s} {'server':>12s} {'rms error':>10s} {'stderr':>8s}  (counts; server = add + estimate)")
    results: Dict[str, Any] = {}
    for name in ldp.protocols():
        fo = ldp.FrequencyOracle(name, epsilon=eps, domain_size=apps)
        t0 = time.perf_counter()
        reports = fo.client(rng).privatize(items)
        t1 = time.perf_counter()
        agg = fo.aggregator().add(reports)
        est = agg.estimate()
        t2 = time.perf_counter()
        rms = float(np.sqrt(np.mean((est - true) ** 2)))
        results[name] = (agg, est)
        print(f"  {name:10s} {devices / (t1 - t0) / 1e6:8.2f} M/s {devices / (t2 - t1) / 1e6:8.2f} M/s "
              f"{rms:10.1f} {float(np.median(agg.stderr())):8.1f}")
    best = ldp.recommend(eps, apps)
    agg, est = results[best]
    err = agg.stderr()
    top = np.argsort(-true)[:10]
    inside = np.abs(est - true) <= 1.96 * err
    print(f" The ten most used apps, estimated with {best!r} (dpnoise.ldp.recommend's choice at this epsilon and d):")
    print("   app         true count   estimate +- 1.96 stderr")
    for i in top:
        print(f"   {names[i]:10s}  {int(true[i]):10,d}   {est[i]:10,.0f} +- {1.96 * err[i]:,.0f}")
    print(f"   {100 * float(np.mean(inside)):.1f}% of all {apps} apps are within their 95% interval (expected about 95%)")
    # four servers, each with a quarter of the devices, merge to the same state
    fo = agg.protocol
    parts = [fo.aggregator() for _ in range(4)]
    for k, chunk in enumerate(np.array_split(items, 4)):
        parts[k].add(fo.client(rng).privatize(chunk))
    merged = parts[0]
    for other in parts[1:]:
        merged.merge(ldp.Aggregator.from_bytes(other.to_bytes()))
    print(f"   four servers merged (after a serialisation round trip of {len(parts[1].to_bytes()):,} bytes each): "
          f"{merged.n:,} reports, rms error {float(np.sqrt(np.mean((merged.estimate() - true) ** 2))):.1f}")
    consistent = ldp.norm_sub(est, agg.n)
    print(f"   optional post-processing, Norm-Sub (non-negative, sums to n): rms error "
          f"{float(np.sqrt(np.mean((consistent - true) ** 2))):.1f} instead of "
          f"{float(np.sqrt(np.mean((est - true) ** 2))):.1f}")
    _heavy_hitters_demo(rng, devices)
    return {"protocol": best, "top": top, "names": [names[i] for i in top], "true": true[top], "estimate": est[top],
            "stderr": err[top]}


def _daily_collection_demo(rng: "dpnoise.Generator", devices: int, days: int = 30) -> None:
    """Daily collection (docs/ldp.md): a server that averages each device's daily reports
    guesses its item; memoised two-layer clients (device_key=, instantaneous_epsilon=) stop it."""
    from dpnoise.ldp.longitudinal import averaging_attack

    d, eps, eps1 = 5_000, 2.0, 1.0
    prior = np.arange(1, d + 1, dtype=np.float64) ** -1.1
    prior /= prior.sum()
    items = np.random.default_rng().choice(d, size=devices, p=prior)  # simulated devices (public data)
    keys = [secrets.token_bytes(32) for _ in range(devices)]  # each device's secret key
    print(f"\nDaily collection: {devices:,} device{'s' if devices != 1 else ''} report the same app every day for {days} days (OLH, "
          f"epsilon={eps:g}, d={d:,}); a server that combines each device's reports guesses its app:")
    for label, options, memo in (("fresh randomness every day", {}, False),
                                 (f"memoised (device_key=), instantaneous_epsilon={eps1:g}",
                                  {"instantaneous_epsilon": eps1}, True)):
        fo = ldp.FrequencyOracle("olh", eps, d, **options)
        clients = [fo.client(rng, device_key=keys[i] if memo else None) for i in range(devices)]
        daily = [[c.privatize(items[i:i + 1]) for i, c in enumerate(clients)] for _ in range(days)]
        hits = []
        for t in (1, days):
            reports = [ldp.Reports.concat([daily[k][i] for k in range(t)]) for i in range(devices)]
            hits.append(float(np.mean(averaging_attack(fo, reports, prior, memoised=memo) == items)))
        print(f"   {label:58s} day 1: {100 * hits[0]:5.1f}%   day {days}: {100 * hits[1]:5.1f}%")
    print(f"   (the prior's most common app alone: {100 * prior.max():.1f}%)")


def _heavy_hitters_demo(rng: "dpnoise.Generator", devices: int) -> None:
    """Local-DP heavy hitters: the server finds the most used app NAMES (strings) with no list of
    names, from one randomized report per device (docs/heavy_hitters.md)."""
    eps = 4.0
    names = synthetic_app_names(devices)
    true = Counter(names)
    hh = ldp.HeavyHitters("pem", epsilon=eps, max_length=8, k=10)
    t0 = time.perf_counter()
    agg = hh.aggregator().add(hh.client(rng).privatize(names))
    top = agg.top(10)
    elapsed = time.perf_counter() - t0
    truth = {w for w, _ in true.most_common(10)}
    print(f"\nLocal DP heavy hitters: {devices:,} devices each report their most-used app NAME (strings of up to 8 "
          f"bytes, {len(true):,} distinct), epsilon={eps:g} per device, PEM; the server is given NO list of names "
          f"and finds them from the reports ({elapsed:.1f} s, clients + server):")
    print("   app name    true count   estimate +- 1.96 stderr")
    for r in top:
        shown = r.item if isinstance(r.item, str) and r.item.isprintable() else repr(r.item)
        print(f"   {shown:10s}  {true.get(r.item, 0):10,d}   {r.estimate:10,.0f} +- {r.ci_high - r.estimate:,.0f}")
    print(f"   {len({r.item for r in top} & truth)} of the true top 10 found")


def _selection_demo(rng: "dpnoise.Generator") -> None:
    """Private selection over made-up patients: the most common diagnosis, per clinic in one
    batched call, the top 3, and the sparse vector technique."""
    counts = synthetic_diagnoses()
    clinics, d = counts.shape
    total = counts.sum(axis=0)
    print(f"\nPrivate selection over made-up patients: {clinics:,} clinics x {counts[0].sum()} patients, "
          f"{d} diagnoses (counts: monotone, sensitivity 1: one patient adds one to one count)")
    print(f" Most common diagnosis overall, epsilon=0.1 each (true: {DIAGNOSES[int(total.argmax())]}, "
          f"{int(total.max()):,} patients):")
    for noise, what in (("exponential", "permute-and-flip"), ("gumbel", "exponential mechanism"),
                        ("laplace", "Laplace noisy max")):
        m = ReportNoisyMax(0.1, monotonic=True, noise=noise, rng=rng)
        print(f"   {what:22s} -> {DIAGNOSES[m(total)]}")
    top3 = ReportNoisyMax(0.1, monotonic=True, k=3, rng=rng)(total)
    print(f"   top 3 by peeling (3 x 0.1) -> {', '.join(DIAGNOSES[i] for i in top3)}; "
          f"true {', '.join(DIAGNOSES[i] for i in np.argsort(-total)[:3])}")

    per_clinic = ReportNoisyMax(1.0, monotonic=True, disjoint_rows=True, rng=rng)
    t0 = time.perf_counter()
    picked = per_clinic(counts)
    elapsed = time.perf_counter() - t0
    best = counts.max(axis=1)
    exact = float(np.mean(counts[np.arange(clinics), picked] == best))
    gap = best - counts[np.arange(clinics), picked]
    print(f" Most common diagnosis in each clinic, one call, epsilon=1 per clinic (disjoint patients: "
          f"parallel composition, total epsilon {per_clinic.privacy_loss(counts.shape).pure_epsilon():g}):")
    print(f"   {clinics:,} clinics in {1e3 * elapsed:.1f} ms; the released diagnosis is a true most common one "
          f"in {100 * exact:.1f}% of clinics, within {int(np.percentile(gap, 99))} patients of it in 99%")
    print(f"   (the accuracy bound: within {per_clinic.accuracy(0.05, (d,)):.1f} with probability 0.95)")

    flu = counts[:, 0]
    svt = AboveThreshold(1.0, threshold=60, monotonic=True, max_positives=3, rng=rng)
    plan = svt.plan(flu.shape, flu.dtype)
    alpha = svt.accuracy(0.05, flu.shape, flu.dtype)
    found = svt.release(flu)
    print(f" Sparse vector, epsilon=1: the first 3 clinics (in list order) whose NOISY count of {DIAGNOSES[0]} "
          f"patients passes a NOISY threshold of 60")
    print(f"   (discrete Laplace noise of scale {float(plan.query_scale):g} on each of the {flu.size:,} counts and "
          f"{float(plan.threshold_scale):g} on the threshold, so a clinic whose true count is below 60 can pass "
          f"by chance; over all {flu.size:,} tests the 95% error bound is +-{alpha:.0f} patients)")
    print("   -> clinics " + ", ".join(f"{int(i)} (true {int(flu[i])})" for i in found)
          + f"; truly above 60: clinics {', '.join(str(int(i)) for i in np.flatnonzero(flu > 60)[:3])}, ...")
