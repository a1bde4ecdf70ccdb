"""The dpnoise command line: ``dpnoise demo``, ``dpnoise sample`` and ``dpnoise bench``.

Every usage error (a bad flag or value, an unwritable --plot file, a missing optional package)
is reported before any work starts, as one line on stderr, with exit status 2.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
from fractions import Fraction
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence

import numpy as np

import dpnoise
from dpnoise import _core
from dpnoise import _validate
from dpnoise.bit_generator import _SEED_LIMIT

# demo keeps a few arrays of n samples in memory at once: 10^8 is about 2.4 GB.
MAX_DEMO_SAMPLES = 10**8
MAX_DEMO_DEVICES = 10**7
_MAX_NUMBER_TEXT = 200     # characters of an exact number given on the command line
_MAX_EXPONENT = 1000       # |e| of a decimal exponent ('1e400'): larger ones take long to expand


class _UsageError(Exception):
    """A command-line error: main() prints it as one line and returns 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is one line (no usage block) and is returned, not exited."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.prog}: error: {message}")


def _integer_text(text: str, what: str) -> int:
    text = text.strip()
    if not re.fullmatch(r"[+-]?\d{1,400}", text):
        raise argparse.ArgumentTypeError(f"{what} must be an integer, got {text[:40]!r}")
    return int(text)


def _bounded_count(limit: int, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        v = _integer_text(text, what)
        if not 1 <= v <= limit:
            raise argparse.ArgumentTypeError(f"{what} must be between 1 and {limit:,}, got {v}")
        return v
    parse.__name__ = what  # argparse names the type in some messages
    return parse


def _threads(text: str) -> int:
    try:
        return _validate.check_threads(_integer_text(text, "threads"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _seed(text: str) -> int:
    v = _integer_text(text, "seed")
    if not 0 <= v < _SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"seed must be in [0, 2**256), got {v}")
    return v


def _parse_number(text: str) -> Fraction:
    """'2', '0.3', '7/3' -> an exact Fraction (decimal text is taken at its decimal value)."""
    exp = re.search(r"[eE]\s*([+-]?\d+)", text)
    if len(text) > _MAX_NUMBER_TEXT or (exp and abs(int(exp.group(1))) > _MAX_EXPONENT):
        raise argparse.ArgumentTypeError(f"number out of range: {text[:40]!r}")
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError) as exc:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from exc


def _plot_file(path: str) -> str:
    """--plot FILE: the directory must exist and be writable, and matplotlib importable."""
    full = os.path.abspath(path)
    folder = os.path.dirname(full)
    if os.path.isdir(full):
        raise argparse.ArgumentTypeError(f"{path!r} is a directory, not a file name")
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"directory {folder!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"directory {folder!r} is not writable")
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise argparse.ArgumentTypeError("needs matplotlib: pip install 'dpnoise[plot]'") from exc
    return path


def _throughput(fn: Callable[[], object], n: int, repeats: int = 3) -> float:
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n / best


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


def _spark_demo(args: argparse.Namespace) -> int:
    """``dpnoise demo --spark``: the telemetry scenario on a local Spark session (pyspark and
    Java 17+ needed; see docs/scaling.md)."""
    import shutil

    try:
        import pyspark  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        raise _UsageError("--spark needs the spark extra: pip install 'dpnoise[spark]'") from None
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise _UsageError("--spark needs Java 17 or newer (java on PATH or JAVA_HOME set)")
    if args.plot:
        raise _UsageError("--plot is not available with --spark")
    from dpnoise.distributed.spark.demo import run_telemetry_demo

    print("dpnoise demo --spark: the local-DP telemetry scenario on a local Spark session (local[2])")
    run_telemetry_demo(devices=args.devices)
    return 0


def _demo(args: argparse.Namespace) -> int:
    if args.spark:
        return _spark_demo(args)
    n = args.n
    threads = args.threads
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
    telemetry = _telemetry_demo(rng, args.devices)

    if args.plot:
        import matplotlib  # importable: checked by _plot_file before any work

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 3, figsize=(16, 4))
        pos = np.arange(len(telemetry["top"]))
        axes[2].bar(pos - 0.2, telemetry["true"], width=0.4, label="true count")
        axes[2].bar(pos + 0.2, telemetry["estimate"], width=0.4, yerr=1.96 * telemetry["stderr"], capsize=3,
                    label=f"LDP estimate ({telemetry['protocol']}) +- 1.96 stderr")
        axes[2].set_xticks(pos, [str(int(i)) for i in telemetry["top"]])
        axes[2].set_xlabel("app")
        axes[2].set_title(f"top apps of {args.devices:,} devices, epsilon=2 per device")
        axes[2].legend()
        for ax, s, pmf, title in ((axes[0], lap, lambda k: _laplace_pmf(10.0, k), "discrete Laplace, scale 10"),
                                  (axes[1], gau, lambda k: _gaussian_pmf(10.0, k), "discrete Gaussian, sigma 10")):
            ks = np.arange(-50, 51)
            counts = np.array([(s == k).sum() for k in ks]) / len(s)
            ax.bar(ks, counts, width=1.0, alpha=0.5, label="dpnoise samples")
            ax.plot(ks, pmf(ks), "k.-", lw=1, label="exact pmf")
            ax.set_title(title)
            ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=100)
        print(f"\nplot written to {args.plot}")
    return 0


def _central_dp_demo(rng: "dpnoise.Generator") -> None:
    """Private releases about 1000 synthetic people, each charged to one budget."""
    from dpnoise.accounting import PrivacyBudget
    from dpnoise.demo_data import STATES, synthetic_people
    from dpnoise.mechanisms import Histogram, LaplaceMechanism, PrivateKDE

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
    from dpnoise import ldp
    from dpnoise.demo_data import synthetic_app_usage

    apps, eps = 1024, 2.0
    items = synthetic_app_usage(devices, apps)
    true = np.bincount(items, minlength=apps)
    print(f"\nLocal DP telemetry: {devices:,} simulated devices each report their most-used of {apps:,} apps "
          f"(Zipf 1.1), epsilon={eps:g} per device; the server never sees an app, only randomized reports.")
    print(f"  {'protocol':10s} {'client':>12s} {'server':>12s} {'rms error':>10s} {'stderr':>8s}  (counts; server = add + estimate)")
    results: Dict[str, Any] = {}
    for name in [p for p in ("grr", "oue", "sue", "olh", "flh", "hadamard", "cms", "hcms", "zmatrix")
                 if p in ldp.protocols()]:
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
    print("   app    true count   estimate +- 1.96 stderr")
    for i in top:
        print(f"   {int(i):4d}   {int(true[i]):10,d}   {est[i]:10,.0f} +- {1.96 * err[i]:,.0f}")
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
    return {"protocol": best, "top": top, "true": true[top], "estimate": est[top], "stderr": err[top]}


def _heavy_hitters_demo(rng: "dpnoise.Generator", devices: int) -> None:
    """Local-DP heavy hitters: the server finds the most used app NAMES (strings) with no list of
    names, from one randomized report per device (docs/heavy_hitters.md)."""
    from collections import Counter

    from dpnoise import ldp
    from dpnoise.demo_data import synthetic_app_names

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
        print(f"   {str(r.item):10s}  {true.get(r.item, 0):10,d}   {r.estimate:10,.0f} +- {r.ci_high - r.estimate:,.0f}")
    print(f"   {len({r.item for r in top} & truth)} of the true top 10 found")


def _selection_demo(rng: "dpnoise.Generator") -> None:
    """Private selection over made-up patients: the most common diagnosis, per clinic in one
    batched call, the top 3, and the sparse vector technique."""
    from dpnoise.demo_data import DIAGNOSES, synthetic_diagnoses
    from dpnoise.selection import AboveThreshold, ReportNoisyMax

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
    found = svt.release(flu)
    print(f" Sparse vector, epsilon=1: the first 3 clinics (in list order) with more than 60 {DIAGNOSES[0]} patients")
    print("   -> clinics " + ", ".join(f"{int(i)} (true {int(flu[i])})" for i in found)
          + f"; truly above 60: clinics {', '.join(str(int(i)) for i in np.flatnonzero(flu > 60)[:3])}, ...")


_SAMPLERS = {
    "discrete-laplace": ("scale", lambda r, v, n, t: r.discrete_laplace(v, n, threads=t)),
    "discrete-gaussian": ("sigma", lambda r, v, n, t: r.discrete_gaussian(v, n, threads=t)),
    "geometric": ("scale", lambda r, v, n, t: r.geometric(scale=v, size=n, threads=t)),
    "bernoulli": ("p", lambda r, v, n, t: r.bernoulli(v, n, threads=t).astype(np.int64)),
    "bernoulli-exp": ("gamma", lambda r, v, n, t: r.bernoulli_exp(v, n, threads=t).astype(np.int64)),
}


_CHUNK = 1 << 16  # samples drawn and printed at a time: memory stays bounded for any -n


def _sample(args: argparse.Namespace) -> int:
    pname, draw = _SAMPLERS[args.distribution]
    value = getattr(args, pname)
    if value is None:
        raise _UsageError(f"dpnoise sample {args.distribution}: --{pname} is required")
    extra = [f"--{p}" for p in ("scale", "sigma", "p", "gamma") if p != pname and getattr(args, p) is not None]
    if extra:
        raise _UsageError(f"dpnoise sample {args.distribution}: {', '.join(extra)} does not apply (it takes --{pname})")
    try:  # the parameter is checked on a throwaway generator: the real stream is not touched
        draw(dpnoise.default_rng(0), value, 0, args.threads)
    except (ValueError, TypeError, OverflowError) as exc:
        raise _UsageError(f"dpnoise sample: {exc}") from exc
    if args.seed is not None:
        print("warning: --seed makes the stream reproducible and NOT secure", file=sys.stderr)
    rng = dpnoise.default_rng(args.seed)
    left = args.n
    while left > 0:
        k = min(left, _CHUNK)
        out = draw(rng, value, k, args.threads)
        sys.stdout.write("".join(f"{int(x)}\n" for x in out))
        left -= k
    return 0


def _bench(args: argparse.Namespace) -> int:
    import json

    from dpnoise import bench

    record = bench.run(quick=args.quick, threads=args.threads, peers=args.peers,
                       repeats=args.repeats, only=args.only)
    if args.json:
        print(json.dumps(record, indent=1))
    else:
        print(bench.format_table(record))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="dpnoise", description="Exact, secure differential-privacy noise.")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="draw exact noise, compare its speed with NumPy and its distribution with the exact one")
    d.add_argument("-n", type=_bounded_count(MAX_DEMO_SAMPLES, "n"), default=2_000_000,
                   help=f"samples per run (default 2,000,000; at most {MAX_DEMO_SAMPLES:,})")
    d.add_argument("--threads", type=_threads, default=1, help=f"1 to {_validate.MAX_THREADS}")
    d.add_argument("--devices", type=_bounded_count(MAX_DEMO_DEVICES, "devices"), default=1_000_000,
                   help=f"simulated devices in the local-DP telemetry part (default 1,000,000; at most {MAX_DEMO_DEVICES:,})")
    d.add_argument("--plot", metavar="FILE", type=_plot_file,
                   help="also write a PNG of the fits and of the telemetry estimates (needs the [plot] extra)")
    d.add_argument("--spark", action="store_true",
                   help="run only the telemetry scenario, on a local Spark session (needs the [spark] extra and Java 17+)")
    d.set_defaults(func=_demo)
    s = sub.add_parser("sample", help="print samples, one per line")
    s.add_argument("distribution", choices=sorted(_SAMPLERS))
    s.add_argument("-n", type=_bounded_count(_validate.MAX_SIZE, "n"), default=10, help="how many samples (default 10)")
    for name in ("scale", "sigma", "p", "gamma"):
        s.add_argument(f"--{name}", type=_parse_number, help="exact number: 2, 0.3 or 7/3")
    s.add_argument("--seed", type=_seed, default=None, help="reproducible stream (NOT secure), 0 <= seed < 2**256")
    s.add_argument("--threads", type=_threads, default=1, help=f"1 to {_validate.MAX_THREADS}")
    s.set_defaults(func=_sample)
    b = sub.add_parser("bench", help="time built-in workloads against NumPy (and installed peers)")
    b.add_argument("--quick", action="store_true", help="small workloads: a few seconds")
    b.add_argument("--json", action="store_true", help="print a JSON record (schema: dpnoise.bench)")
    b.add_argument("--peers", action="store_true", help="also time installed OpenDP, diffprivlib, dp-accounting")
    b.add_argument("--threads", type=_threads, default=1, help=f"1 to {_validate.MAX_THREADS}")
    b.add_argument("--repeats", type=_bounded_count(100, "repeats"), default=None,
                   help="best of how many timed runs (default 5)")
    b.add_argument("--only", metavar="TEXT", default=None, help="only workloads whose name contains TEXT")
    b.set_defaults(func=_bench)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status (2 for any usage error, printed as one line)."""
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args))
    except _UsageError as exc:
        print(" ".join(str(exc).split()), file=sys.stderr)
        return 2
    except BrokenPipeError:  # `dpnoise sample ... | head`: the reader left; stop quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1


if __name__ == "__main__":
    sys.exit(main())
