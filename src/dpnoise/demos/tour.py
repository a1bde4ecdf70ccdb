"""The ``dpnoise demo`` tour: a first-screen summary (exact, secure, how fast against NumPy, what
ran), then one short section per use of the library, each measured in this run on made-up data
(:mod:`dpnoise.demos.data`), public API only:

 1. exact samplers, with a chi-square goodness-of-fit p-value against the exact pmf;
 2. a mechanism release (central DP, charged to a budget);
 3. an accountant (the budget's ledger; PLD against RDP and zCDP);
 4. an LDP frequency oracle (telemetry of app usage);
 5. heavy hitters over web addresses of up to 64 bytes, with no dictionary;
 6. a mean oracle (minutes of use per day);
 7. daily (longitudinal) collection, fresh against memoised clients;
 8. a constant-time release;
 9. private selection;
10. an audit verdict (:mod:`dpnoise.audit`).

By default each section prints at most three lines (the whole output stays under 60 lines);
``verbose=True`` adds the tables. ``plot=FILE`` writes one figure with a panel per section and a
residual axis under each pmf fit (PNG, PDF or SVG by the extension).
"""
from __future__ import annotations

import math
import os
import secrets
import textwrap
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TypedDict

import numpy as np

import dpnoise
from dpnoise import _core, ldp
from dpnoise.accounting import Accountant, Gaussian, PrivacyBudget
from dpnoise.demos.data import (
    DIAGNOSES,
    STATES,
    app_names,
    synthetic_app_usage,
    synthetic_diagnoses,
    synthetic_minutes,
    synthetic_people,
    synthetic_url_visits,
    synthetic_urls,
)
from dpnoise.mechanisms import DiscreteLaplaceMechanism, Histogram, LaplaceMechanism, PrivateKDE
from dpnoise.selection import AboveThreshold, ReportNoisyMax

#: The sections, in the order they are printed and drawn.
SECTIONS: tuple[str, ...] = ("Exact samplers", "Mechanism release", "Accountant", "LDP frequency oracle",
                             "Heavy hitters", "Mean oracle", "Daily collection", "Constant time",
                             "Private selection", "Audit")
#: The figure formats of ``plot=``, by the file's extension.
PLOT_FORMATS: tuple[str, ...] = (".png", ".pdf", ".svg")
#: The most lines the default (not verbose) tour prints.
MAX_DEFAULT_LINES = 60
_WIDTH = 104  # the summary's wrapping width

Draw = Callable[[Any, Optional[Any]], None]


@dataclass
class Section:
    """One section of the tour: what it printed, what ``--verbose`` adds and how it is drawn.

    Attributes
    ----------
    title : str
        One of :data:`SECTIONS`.
    headline : str
        What the section runs, printed after its number and title.
    lines : list of str
        The short text (at most three lines), printed by default.
    details : list of str
        The tables, printed with ``verbose=True``.
    draw : callable
        ``draw(ax, residual_ax)`` draws the section's panel (``residual_ax`` is None unless
        ``residuals`` is set).
    residuals : bool
        The panel is a pmf fit with a residual axis below it.
    seconds : float
        Wall time of the section.
    """

    title: str
    headline: str
    lines: list[str]
    details: list[str] = field(default_factory=list)
    draw: Draw | None = None
    residuals: bool = False
    seconds: float = 0.0


class _Insecure(TypedDict, total=False):
    """The keyword a seeded tour passes to everything that refuses seeded generators."""

    allow_insecure: bool


@dataclass
class _Context:
    rng: dpnoise.Generator
    n: int
    threads: int
    devices: int
    verbose: bool
    budget: PrivacyBudget
    insecure: _Insecure  # {"allow_insecure": True} when seeded, else {}
    data_rng: np.random.Generator  # made-up public data (device items, keys under --seed)
    facts: dict[str, Any] = field(default_factory=dict)  # what the summary reads


# -- statistics (NumPy only) ---------------------------------------------------------------------

def _upper_gamma_q(a: float, x: float) -> float:
    """Q(a, x) = Γ(a, x)/Γ(a), the regularised upper incomplete gamma function: the series for
    x < a + 1, else Legendre's continued fraction (Abramowitz & Stegun 6.5.29 and 6.5.31; evaluated
    as in Press et al., Numerical Recipes 3rd ed., §6.2)."""
    if x <= 0:
        return 1.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        k = a
        while abs(term) > abs(total) * 1e-15:
            k += 1
            term *= x / k
            total += term
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300  # modified Lentz
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return min(1.0, math.exp(log_front) * h)


def chi_square_pvalue(samples: np.ndarray, pmf: Callable[[np.ndarray], np.ndarray]) -> tuple[float, int]:
    """Pearson's chi-square goodness of fit of integer samples to an exact pmf, with every value of
    expected count >= 5 its own bin and the two tails pooled (Pearson 1900; df = bins - 1).

    Parameters
    ----------
    samples : numpy.ndarray
        Integer samples.
    pmf : callable
        The exact probabilities of an integer array.

    Returns
    -------
    (float, int)
        The p-value (uniform on [0, 1] under the exact law, up to the chi-square approximation)
        and the number of bins.
    """
    n = samples.size
    if n == 0:
        return 1.0, 0
    k = np.arange(int(samples.min()), int(samples.max()) + 1)
    k = k[pmf(k) * n >= 5]
    if k.size < 2:
        return 1.0, 0
    lo, hi = int(k[0]), int(k[-1])
    inner = np.arange(lo, hi + 1)
    observed = np.bincount((samples[(samples >= lo) & (samples <= hi)] - lo).astype(np.int64), minlength=inner.size)
    expected = pmf(inner) * n
    tails_o = float(n - observed.sum())
    tails_e = float(n - expected.sum())
    stat = float(np.sum((observed - expected) ** 2 / expected))
    bins = inner.size
    if tails_e >= 5:
        stat += (tails_o - tails_e) ** 2 / tails_e
        bins += 1
    return _upper_gamma_q((bins - 1) / 2, stat / 2), bins


def _laplace_pmf(scale: float, k: np.ndarray) -> np.ndarray:
    # discrete Laplace: P(x) = (1-q)/(1+q) q^|x|, q = e^(-1/scale) (Canonne, Kamath & Steinke 2020, Def. 27)
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(k)


def _gaussian_pmf(sigma: float, k: np.ndarray) -> np.ndarray:
    # discrete Gaussian: P(x) proportional to exp(-x^2/(2 sigma^2)) (Canonne, Kamath & Steinke 2020, Def. 1)
    m = int(14 * sigma) + 40
    norm = np.exp(-(np.arange(-m, m + 1, dtype=float) ** 2) / (2 * sigma**2)).sum()
    return np.exp(-(np.asarray(k).astype(float) ** 2) / (2 * sigma**2)) / norm


def _best_time(fn: Callable[[], object], repeats: int = 3) -> float:
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return max(best, 1e-9)


def _fit_table(samples: np.ndarray, pmf: Callable[[np.ndarray], np.ndarray], values: Sequence[int]) -> list[str]:
    n = len(samples)
    lines = ["      x   empirical       exact    (emp-exact)/se"]
    for v in values:
        p = float(pmf(np.array([v]))[0])
        e = float((samples == v).sum()) / n
        se = math.sqrt(p * (1 - p) / n)
        lines.append(f"  {v:5d}   {e:.6f}    {p:.6f}    {(e - p) / se:+6.2f}")
    return lines


def _draw_fits(fits: Sequence[tuple[str, np.ndarray, Callable[[np.ndarray], np.ndarray]]], title: str) -> Draw:
    """A pmf panel (empirical frequencies and the exact pmf) with standardised residuals below.
    Every legend of the figure has a fixed place: matplotlib's loc="best" warns when it is slow."""
    ks = np.arange(-40, 41)

    def draw(ax: Any, rax: Any | None) -> None:
        for (label, s, pmf), colour in zip(fits, ("C0", "C1")):
            n = max(len(s), 1)
            emp = np.bincount(np.clip(s, -41, 41) + 41, minlength=83)[1:-1] / n
            exact = pmf(ks)
            ax.plot(ks, emp, ".", color=colour, ms=3, label=f"{label}: samples")
            ax.plot(ks, exact, "-", color=colour, lw=0.8, label=f"{label}: exact pmf")
            if rax is not None:  # only where the expected count is >= 5, as in the chi-square bins
                se = np.sqrt(exact * (1 - exact) / n)
                shown = exact * n >= 5
                rax.plot(ks[shown], ((emp - exact) / se)[shown], ".", color=colour, ms=3)
        ax.set_title(title, fontsize=9)
        ax.set_ylabel("probability P(x)")
        ax.legend(fontsize=6, loc="upper right")
        if rax is not None:
            rax.axhline(0, color="k", lw=0.5)
            for z in (-2, 2):
                rax.axhline(z, color="k", lw=0.5, ls=":")
            rax.set_xlabel("noise value x")
            rax.set_ylabel("(emp-exact)/se", fontsize=7)
    return draw


# -- the sections ---------------------------------------------------------------------------------

def _samplers(ctx: _Context) -> Section:
    rng, n, threads = ctx.rng, ctx.n, ctx.threads
    nprng = np.random.default_rng()
    speed = []
    for ours_name, ours, ref_name, ref in (
            ("discrete_laplace(10)", lambda: rng.discrete_laplace(10, n, threads=threads),
             "laplace", lambda: nprng.laplace(scale=10, size=n)),
            ("discrete_gaussian(10)", lambda: rng.discrete_gaussian(10, n, threads=threads),
             "normal", lambda: nprng.normal(scale=10, size=n))):
        t_ours, t_ref = n / _best_time(ours), n / _best_time(ref)
        speed.append((ours_name, t_ours, ref_name, t_ref))
    lap = rng.discrete_laplace(10, n)
    gau = rng.discrete_gaussian(10, n)
    p_lap, b_lap = chi_square_pvalue(lap, lambda k: _laplace_pmf(10.0, k))
    p_gau, b_gau = chi_square_pvalue(gau, lambda k: _gaussian_pmf(10.0, k))
    ctx.facts.update(p_lap=p_lap, p_gau=p_gau, speed=speed)
    headline = f"discrete Laplace (scale 10) and Gaussian (sigma 10), {n:,} draws each"
    lines = [f"fit to the exact pmf: chi-square p = {p_lap:.2f} ({b_lap} bins), {p_gau:.2f} ({b_gau} bins); "
             "p is uniform when exact",
             f"speed, best of 3, threads={threads}: "
             + "; ".join(f"{ta / 1e6:.1f} M/s = {ta / tb:.2f}x NumPy {b}" for _, ta, b, tb in speed)]
    details = ["Throughput (NumPy's samplers are floating point, NOT exact or secure: the speed reference):"]
    details += [f"  {a:24s} {ta / 1e6:8.2f} M/s   numpy {b:8s} {tb / 1e6:8.2f} M/s   ratio {ta / tb:.2f}x"
                for a, ta, b, tb in speed]
    details.append("Empirical distribution against the exact pmf (se = binomial standard error):")
    details.append(" discrete Laplace, scale 10: P(x) = (1-q)/(1+q) q^|x|, q = e^(-1/10)")
    details += _fit_table(lap, lambda k: _laplace_pmf(10.0, k), [-20, -10, -1, 0, 1, 10, 20])
    details.append(" discrete Gaussian, sigma 10: P(x) proportional to exp(-x^2/200)")
    details += _fit_table(gau, lambda k: _gaussian_pmf(10.0, k), [-20, -10, -1, 0, 1, 10, 20])
    details.append(f" sample variance: Laplace {lap.var():.2f} (exact "
                   f"{2 * math.exp(-0.1) / (1 - math.exp(-0.1)) ** 2:.2f}), Gaussian {gau.var():.2f} (exact ~100.00)")
    draw = _draw_fits([("Laplace(10)", lap, lambda k: _laplace_pmf(10.0, k)),
                       ("Gaussian(10)", gau, lambda k: _gaussian_pmf(10.0, k))],
                      f"exact samplers: p = {p_lap:.2f}, {p_gau:.2f}")
    return Section(SECTIONS[0], headline, lines, details, draw, residuals=True)


def _mechanism(ctx: _Context) -> Section:
    people = synthetic_people()
    n = len(people["salary"])
    budget, rng = ctx.budget, ctx.rng
    spent: list[str] = []

    def charge(what: str) -> None:
        spent.append(f"  -> {what}: spent so far epsilon={budget.spent_epsilon:.4f} at delta={budget.delta:g}")

    hist = Histogram(1.0, categories=len(STATES), neighbours="replace", rng=rng, budget=budget, **ctx.insecure)
    noisy = hist(people["state"])
    true = hist.counts(people["state"])
    charge("histogram")
    cap = 10_000.0
    mean_mech = LaplaceMechanism(0.5, sensitivity=cap / n, rng=rng, budget=budget, **ctx.insecure)
    clipped = np.clip(people["salary"], 0, cap)
    private_mean = mean_mech(clipped.mean())
    charge("mean salary")
    grid = np.linspace(150, 200, 11)
    kde = PrivateKDE(1.0, 1e-6, bandwidth=3.0, grid=grid, rng=rng, budget=budget, **ctx.insecure)
    dens = kde.density(people["height"])
    private = kde(people["height"])
    charge("KDE")
    headline = f"{n:,} made-up people, one budget (epsilon={budget.epsilon:g}, delta={budget.delta:g})"
    lines = [f"mean salary in [0, {cap:.0f}], epsilon=0.5: private {private_mean:.2f}, true {clipped.mean():.2f} "
             f"(95% within +-{mean_mech.accuracy(0.05):.2f})",
             f"histogram of {len(STATES)} states, epsilon=1: largest error {int(np.max(np.abs(noisy - true)))} "
             f"(95% within +-{hist.accuracy(0.05):.0f}); a KDE of height, epsilon=1"]
    details = [f" Histogram of state, epsilon=1 (sensitivity 2 under replace-one), 95% of releases within "
               f"+-{hist.accuracy(0.05):.0f} on every bar:"]
    details += [f"   {name:20s} true {t:4d}   private {v:4d}" for name, t, v in zip(STATES, true, noisy)]
    details.append(spent[0])
    details.append(f" Mean salary (sensitivity {cap / n:g}): private {private_mean:.2f} is an exact multiple of "
                   f"2^{mean_mech.grid(1)[0]}")
    details.append(spent[1])
    details.append(" Private KDE of height (Gaussian-process mechanism, epsilon=1, delta=1e-6, h=3 cm):")
    details.append("   height  " + " ".join(f"{g:6.0f}" for g in grid))
    details.append("   true    " + " ".join(f"{1000 * v:6.2f}" for v in dens) + "   (x 1e-3)")
    details.append("   private " + " ".join(f"{1000 * v:6.2f}" for v in private))
    details.append(spent[2])

    def draw(ax: Any, _: Any | None) -> None:
        pos = np.arange(len(STATES))
        ax.bar(pos - 0.2, true, width=0.4, label="true count")
        ax.bar(pos + 0.2, noisy, width=0.4, label="private (epsilon=1)")
        ax.set_xticks(pos, [s[:6] for s in STATES], rotation=60, fontsize=6)
        ax.set_xlabel("state")
        ax.set_ylabel("people (count)")
        ax.set_title("mechanism: private histogram", fontsize=9)
        ax.legend(fontsize=6, loc="upper left")
    return Section(SECTIONS[1], headline, lines, details, draw)


def _accountant(ctx: _Context) -> Section:
    budget = ctx.budget
    ks = [1, 2, 5, 10, 20, 50, 100, 200]
    curves = {kind: [Accountant(kind).compose(Gaussian(sigma=20.0), k).get_epsilon(1e-6) for k in ks]
              for kind in ("zcdp", "rdp", "pld")}
    headline = "the budget's PLD ledger, and k-fold composition"
    lines = [f"{len(budget.ledger)} releases spent epsilon {budget.spent_epsilon:.4f} of {budget.epsilon:g} "
             "(basic composition: 2.5 plus delta)",
             f"100 Gaussian releases (sigma 20) at delta=1e-6: PLD {curves['pld'][6]:.3f}, "
             f"RDP {curves['rdp'][6]:.3f}, zCDP {curves['zcdp'][6]:.3f}"]
    details = [f" Ledger: {len(budget.ledger)} releases, remaining epsilon {budget.remaining_epsilon:.4f}"]
    details += [f"   k = {k:4d} Gaussian(sigma 20): " + ", ".join(f"{kind} {curves[kind][i]:.3f}" for kind in curves)
                for i, k in enumerate(ks)]

    def draw(ax: Any, _: Any | None) -> None:
        for kind, eps in curves.items():
            ax.plot(ks, eps, "o-", ms=3, label=kind)
        ax.set_xscale("log")
        ax.set_xlabel("Gaussian releases (sigma 20), k")
        ax.set_ylabel("epsilon at delta=1e-6")
        ax.set_title("accountant: k-fold composition", fontsize=9)
        ax.legend(fontsize=6, loc="upper left")
    return Section(SECTIONS[2], headline, lines, details, draw)


def _frequency_oracle(ctx: _Context) -> Section:
    rng, devices = ctx.rng, ctx.devices
    apps, eps = 1024, 2.0
    items = synthetic_app_usage(devices, apps)
    names = app_names(apps)
    true = np.bincount(items, minlength=apps)
    best = ldp.recommend(eps, apps)
    details: list[str] = []
    if ctx.verbose:
        details.append(f" {'protocol':10s} {'client':>12s} {'server':>12s} {'rms error':>10s} {'stderr':>8s}  "
                       "(counts; server = add + estimate)")
    results: dict[str, Any] = {}
    for name in (ldp.protocols() if ctx.verbose else [best]):
        fo = ldp.FrequencyOracle(name, epsilon=eps, domain_size=apps)
        t0 = time.perf_counter()
        reports = fo.client(rng, **ctx.insecure).privatize(items)
        t1 = time.perf_counter()
        agg = fo.aggregator().add(reports)
        est = agg.estimate()
        t2 = time.perf_counter()
        results[name] = (agg, est, t2 - t0)
        if ctx.verbose:
            details.append(f"  {name:10s} {devices / max(t1 - t0, 1e-9) / 1e6:8.2f} M/s "
                           f"{devices / max(t2 - t1, 1e-9) / 1e6:8.2f} M/s "
                           f"{float(np.sqrt(np.mean((est - true) ** 2))):10.1f} {float(np.median(agg.stderr())):8.1f}")
    agg, est, seconds = results[best]
    err = agg.stderr()
    top = np.argsort(-true, kind="stable")[:10]
    inside = float(np.mean(np.abs(est - true) <= 1.96 * err))
    rms = float(np.sqrt(np.mean((est - true) ** 2)))
    i0 = int(top[0])
    headline = f"{devices:,} devices, most-used of {apps:,} apps, epsilon={eps:g}, {best!r} (recommended)"
    lines = [f"{seconds:.2f} s; rms error {rms:,.1f}, stated stderr {float(np.median(err)):,.1f}; "
             f"{100 * inside:.1f}% of {apps:,} 95% intervals cover the truth",
             f"top app {names[i0]}: true {int(true[i0]):,}, estimate {est[i0]:,.0f} +- {1.96 * err[i0]:,.0f}"]
    ctx.facts["fo_inside"] = inside
    details.append(f" The ten most used apps, estimated with {best!r}:")
    details.append("   app         true count   estimate +- 1.96 stderr")
    details += [f"   {names[i]:10s}  {int(true[i]):10,d}   {est[i]:10,.0f} +- {1.96 * err[i]:,.0f}" for i in top]
    details.append(f"   {100 * inside:.1f}% of all {apps} apps are within their 95% interval (expected about 95%)")
    if ctx.verbose:  # four servers, each with a quarter of the devices, merge to the same state
        fo = agg.protocol
        parts = [fo.aggregator() for _ in range(4)]
        for k, chunk in enumerate(np.array_split(items, 4)):
            parts[k].add(fo.client(rng, **ctx.insecure).privatize(chunk))
        merged = parts[0]
        for other in parts[1:]:
            merged.merge(ldp.Aggregator.from_bytes(other.to_bytes()))
        details.append(f"   four servers merged (after a serialisation round trip of {len(parts[1].to_bytes()):,} bytes "
                       f"each): {merged.n:,} reports, rms error "
                       f"{float(np.sqrt(np.mean((merged.estimate() - true) ** 2))):.1f}")
        consistent = ldp.norm_sub(est, agg.n)
        details.append(f"   optional post-processing, Norm-Sub (non-negative, sums to n): rms error "
                       f"{float(np.sqrt(np.mean((consistent - true) ** 2))):.1f} instead of {rms:.1f}")
    shown = [names[i] for i in top]

    def draw(ax: Any, _: Any | None) -> None:
        pos = np.arange(len(top))
        ax.bar(pos - 0.2, true[top], width=0.4, label="true count")
        ax.bar(pos + 0.2, est[top], width=0.4, yerr=1.96 * err[top], capsize=2, label=f"{best} estimate +- 1.96 se")
        ax.set_xticks(pos, shown, rotation=60, fontsize=6)
        ax.set_xlabel("app (the ten most used)")
        ax.set_ylabel("devices (count)")
        ax.set_title(f"LDP frequency oracle, {devices:,} devices", fontsize=9)
        ax.legend(fontsize=6, loc="upper right")
    return Section(SECTIONS[3], headline, lines, details, draw)


def _heavy_hitters(ctx: _Context) -> Section:
    rng, devices = ctx.rng, ctx.devices
    eps, urls = 6.0, 500
    visits = synthetic_url_visits(devices, urls)
    true = Counter(visits)
    truth = {u for u, _ in true.most_common(10)}
    hh = ldp.HeavyHitters("string_pem", epsilon=eps, max_length=64, k=10, k_prime=256, keep=64)
    t0 = time.perf_counter()
    agg = hh.aggregator()  # (add returns the base Aggregator type: keep the typed one)
    agg.add(hh.client(rng, **ctx.insecure).privatize(visits))
    top = agg.top(10)
    elapsed = time.perf_counter() - t0
    found = {r.item for r in top} & truth
    lengths = [len(u) for u in synthetic_urls(urls)]
    longest = max((r.item for r in top if r.item in truth), key=len, default="")
    headline = (f"{devices:,} devices' most-visited web address ({min(lengths)}-{max(lengths)} bytes), "
                f"epsilon={eps:g}")
    lines = [f"string_pem, no dictionary: {len(found)} of the true top 10 found in {elapsed:.1f} s"
             + (f"; the longest ({len(longest)} bytes):" if longest else "")]
    if longest:
        lines.append(longest)
    details = ["   web address" + " " * 50 + "true count   estimate +- 1.96 stderr"]
    for r in top:
        shown = r.item if isinstance(r.item, str) and r.item.isprintable() else repr(r.item)
        details.append(f"   {shown:62s} {true.get(r.item, 0):10,d}   {r.estimate:10,.0f} +- {r.ci_high - r.estimate:,.0f}")
    details.append(f"   {len(found)} of the true top 10 found")
    ctx.facts["hh_found"] = len(found)

    def draw(ax: Any, _: Any | None) -> None:
        t = np.array([true.get(r.item, 0) for r in top], dtype=float)
        e = np.array([r.estimate for r in top], dtype=float)
        lo = np.array([r.estimate - r.ci_low for r in top], dtype=float)
        hi = np.array([r.ci_high - r.estimate for r in top], dtype=float)
        if len(top):
            ax.errorbar(t, e, yerr=[lo, hi], fmt="o", ms=3, capsize=2, label="found address: estimate, CI")
            m = max(float(t.max()), float(e.max()), 1.0)
            ax.plot([0, m], [0, m], "k:", lw=0.8, label="estimate = true")
            ax.legend(fontsize=6, loc="upper left")
        ax.set_xlabel("true count")
        ax.set_ylabel("estimated count")
        ax.set_title(f"heavy hitters: {len(found)}/10 found, <= 64 bytes", fontsize=9)
    return Section(SECTIONS[4], headline, lines, details, draw)


def _mean_oracle(ctx: _Context) -> Section:
    rng, devices = ctx.rng, ctx.devices
    minutes = synthetic_minutes(devices)
    bounds, eps = (0.0, 600.0), 1.0
    true = float(np.clip(minutes, *bounds).mean())
    rows = []
    # every registered mean method (the registry's order ends with hybrid, the headline below)
    for method in ldp.MeanConfiguration.registered():
        oracle = ldp.MeanOracle(method, epsilon=eps, bounds=bounds)
        t0 = time.perf_counter()
        agg = oracle.aggregator()
        assert isinstance(agg, ldp.MeanAggregator)  # a mean oracle's aggregator (typed as the base)
        agg.add(oracle.client(rng, **ctx.insecure).privatize(minutes))
        rows.append((method, agg.mean(), agg.mean_stderr(), time.perf_counter() - t0))
    _, mean, se, seconds = rows[-1]
    headline = f"minutes of use per day of {devices:,} devices, clipped to [0, 600], epsilon={eps:g}"
    lines = [f"hybrid: {mean:.2f} +- {1.96 * se:.2f} (95%), true {true:.2f}, {seconds:.2f} s",
             "others: " + ", ".join(f"{m} {v:.2f} +- {1.96 * e:.2f}" for m, v, e, _ in rows[:-1])]
    details = [f"   {m:10s} mean {v:8.2f} +- {1.96 * s:6.2f}   ({t:.2f} s)" for m, v, s, t in rows]

    def draw(ax: Any, _: Any | None) -> None:
        pos = np.arange(len(rows))
        ax.errorbar(pos, [r[1] for r in rows], yerr=[1.96 * r[2] for r in rows], fmt="o", capsize=3,
                    label="private mean +- 1.96 se")
        ax.axhline(true, color="k", lw=0.8, ls=":", label="true mean (clipped)")
        ax.set_xticks(pos, [r[0] for r in rows])
        ax.set_xlim(-0.5, len(rows) - 0.5)
        ax.set_xlabel("method")
        ax.set_ylabel("minutes per day")
        ax.set_title(f"mean oracle, epsilon={eps:g}", fontsize=9)
        ax.legend(fontsize=6, loc="lower right")
    return Section(SECTIONS[5], headline, lines, details, draw)


def _daily_collection(ctx: _Context, days: int = 30) -> Section:
    """A server that combines each device's daily reports guesses its item; memoised two-layer
    clients (device_key=, instantaneous_epsilon=) stop it (docs/ldp.md, "Daily collection")."""
    from dpnoise.ldp.longitudinal import averaging_attack

    rng, devices = ctx.rng, min(ctx.devices, 1000)
    d, eps, eps1 = 5_000, 2.0, 1.0
    prior = np.arange(1, d + 1, dtype=np.float64) ** -1.1
    prior /= prior.sum()
    items = ctx.data_rng.choice(d, size=devices, p=prior)  # simulated devices (public data)
    if ctx.insecure:  # --seed: reproducible keys (NOT secret)
        keys = [ctx.data_rng.bytes(32) for _ in range(devices)]
    else:
        keys = [secrets.token_bytes(32) for _ in range(devices)]  # each device's secret key
    checkpoints = [t for t in (1, 2, 5, 10, 20, 30) if t < days] + [days]
    curves: dict[str, list[float]] = {}
    for label, options, memo in (("fresh randomness every day", {}, False),
                                 (f"memoised (device_key=), instantaneous_epsilon={eps1:g}",
                                  {"instantaneous_epsilon": eps1}, True)):
        fo = ldp.FrequencyOracle("olh", eps, d, **options)
        client = fo.client(rng, **ctx.insecure)
        daily = [(client.privatize(items, device_keys=keys) if memo else client.privatize(items)).to_records()
                 for _ in range(days)]
        curves[label] = []
        for t in checkpoints:
            reports = [ldp.Reports.from_records([daily[k][i] for k in range(t)], fo) for i in range(devices)]
            curves[label].append(float(np.mean(averaging_attack(fo, reports, prior, memoised=memo) == items)))
    f_hits, m_hits = curves.values()
    headline = (f"{devices:,} device{'s' if devices != 1 else ''} report the same app for {days} days "
                f"(OLH, epsilon={eps:g}, d={d:,})")
    lines = [f"combining each device's reports, a server guesses its app: {100 * f_hits[-1]:.1f}% "
             f"(day 1: {100 * f_hits[0]:.1f}%) if fresh daily,",
             f"{100 * m_hits[-1]:.1f}% memoised (device_key=, instantaneous_epsilon={eps1:g}); "
             f"the prior alone: {100 * prior.max():.1f}%"]
    details = [f"   {label:58s} " + "  ".join(f"day {t}: {100 * h:5.1f}%" for t, h in zip(checkpoints, hits))
               for label, hits in curves.items()]

    def draw(ax: Any, _: Any | None) -> None:
        for label, hits in curves.items():
            ax.plot(checkpoints, [100 * h for h in hits], "o-", ms=3, label=label.split(" (")[0].split(",")[0])
        ax.axhline(100 * prior.max(), color="k", lw=0.8, ls=":", label="prior alone")
        ax.set_xlabel("days of reports")
        ax.set_ylabel("devices whose app is guessed (%)")
        ax.set_ylim(0, 100)
        ax.set_title("daily collection: averaging attack", fontsize=9)
        ax.legend(fontsize=6, loc="center right")
    return Section(SECTIONS[6], headline, lines, details, draw)


def _constant_time(ctx: _Context) -> Section:
    rng, n = ctx.rng, ctx.n
    t_ct = _best_time(lambda: rng.discrete_laplace(10, n, constant_time=True))
    t_fast = _best_time(lambda: rng.discrete_laplace(10, n))
    lap = rng.discrete_laplace(10, n, constant_time=True)
    p, bins = chi_square_pvalue(lap, lambda k: _laplace_pmf(10.0, k))
    counts = synthetic_diagnoses()[0]
    mech = DiscreteLaplaceMechanism(1.0, constant_time=True, rng=rng, **ctx.insecure)
    released = mech(counts)
    eps_charged, delta_charged = mech.privacy_loss(counts.shape).approx_dp() or (math.inf, 1.0)
    headline = f"DiscreteLaplaceMechanism(1.0, constant_time=True) on {counts.size} counts"
    lines = [f"charged epsilon={eps_charged:g}, delta={delta_charged:.1e} (the sampler's 2^-64 distance from "
             "the exact law)",
             f"{n:,} draws fit the exact pmf: p = {p:.2f} ({bins} bins); {n / t_ct / 1e6:.1f} M/s, "
             f"{t_ct / t_fast:.1f}x the default sampler's time"]
    details = ["   count    true  released"]
    details += [f"   {DIAGNOSES[i]:18s} {int(counts[i]):4d}  {int(released[i]):8d}" for i in range(min(5, counts.size))]
    draw = _draw_fits([("constant-time Laplace(10)", lap, lambda k: _laplace_pmf(10.0, k))],
                      f"constant time: p = {p:.2f}")
    return Section(SECTIONS[7], headline, lines, details, draw, residuals=True)


def _selection(ctx: _Context) -> Section:
    rng = ctx.rng
    counts = synthetic_diagnoses()
    clinics, d = counts.shape
    total = counts.sum(axis=0)
    picked_overall = ReportNoisyMax(0.1, monotonic=True, noise="exponential", rng=rng, **ctx.insecure)(total)
    per_clinic = ReportNoisyMax(1.0, monotonic=True, disjoint_rows=True, rng=rng, **ctx.insecure)
    t0 = time.perf_counter()
    picked = per_clinic(counts)
    elapsed = time.perf_counter() - t0
    best = counts.max(axis=1)
    gap = best - counts[np.arange(clinics), picked]
    exact = float(np.mean(gap == 0))
    headline = f"the most common of {d} diagnoses over {clinics:,} made-up clinics"
    lines = [f"overall, permute-and-flip, epsilon=0.1: {DIAGNOSES[int(picked_overall)]} "
             f"(true: {DIAGNOSES[int(total.argmax())]})",
             f"per clinic, one call, epsilon=1 each: {1e3 * elapsed:.1f} ms, a true most common diagnosis in "
             f"{100 * exact:.1f}%"]
    details: list[str] = []
    if ctx.verbose:
        details.append(f" Most common diagnosis overall, epsilon=0.1 each (true: {DIAGNOSES[int(total.argmax())]}, "
                       f"{int(total.max()):,} patients):")
        for noise, what in (("exponential", "permute-and-flip"), ("gumbel", "exponential mechanism"),
                            ("laplace", "Laplace noisy max")):
            m = ReportNoisyMax(0.1, monotonic=True, noise=noise, rng=rng, **ctx.insecure)
            details.append(f"   {what:22s} -> {DIAGNOSES[m(total)]}")
        top3 = ReportNoisyMax(0.1, monotonic=True, k=3, rng=rng, **ctx.insecure)(total)
        details.append(f"   top 3 by peeling (3 x 0.1) -> {', '.join(DIAGNOSES[i] for i in top3)}; "
                       f"true {', '.join(DIAGNOSES[i] for i in np.argsort(-total)[:3])}")
        details.append(f" Per clinic: within {int(np.percentile(gap, 99))} patients of the most common in 99% of "
                       f"clinics (the accuracy bound: within {per_clinic.accuracy(0.05, (d,)):.1f} with probability 0.95)")
        flu = counts[:, 0]
        svt = AboveThreshold(1.0, threshold=60, monotonic=True, max_positives=3, rng=rng, **ctx.insecure)
        plan = svt.plan(flu.shape, flu.dtype)
        alpha = svt.accuracy(0.05, flu.shape, flu.dtype)
        found = svt.release(flu)
        details.append(f" Sparse vector, epsilon=1: the first 3 clinics (in list order) whose NOISY count of "
                       f"{DIAGNOSES[0]} patients passes a NOISY threshold of 60")
        details.append(f"   (discrete Laplace noise of scale {float(plan.query_scale):g} on each of the {flu.size:,} "
                       f"counts and {float(plan.threshold_scale):g} on the threshold, so a clinic whose true count is "
                       f"below 60 can pass by chance; over all {flu.size:,} tests the 95% error bound is "
                       f"+-{alpha:.0f} patients)")
        details.append("   -> clinics " + ", ".join(f"{int(i)} (true {int(flu[i])})" for i in found)
                       + f"; truly above 60: clinics {', '.join(str(int(i)) for i in np.flatnonzero(flu > 60)[:3])}, ...")

    def draw(ax: Any, _: Any | None) -> None:
        g = np.bincount(np.minimum(gap, 10), minlength=11)
        ax.bar(np.arange(11), g)
        ax.set_yscale("log")
        ax.set_xlabel("best count - released diagnosis's count (10: >= 10)")
        ax.set_ylabel("clinics")
        ax.set_title(f"selection: {100 * exact:.1f}% exact per clinic", fontsize=9)
    return Section(SECTIONS[8], headline, lines, details, draw)


def _audit(ctx: _Context, trials: int = 100_000) -> Section:
    import dpnoise.audit as audit

    # the audit is a test tool: the mechanism runs from a seeded generator, as the catalogue's do
    ours = LaplaceMechanism(1.0, sensitivity=1.0, rng=dpnoise.default_rng(1), allow_insecure=True)
    naive_rng = np.random.default_rng(1)
    rows = []
    for label, mech in (("dpnoise LaplaceMechanism", ours),
                        ("NumPy x + laplace(1/epsilon)", lambda x: x + naive_rng.laplace(0.0, 1.0, size=np.shape(x)))):
        r = audit.epsilon_lower_bound(mech, 0.0, 1.0, trials=trials, vectorized=True, seed=0)
        rows.append((label, float(r.epsilon), "REFUTED" if r.epsilon > 1.0 else "within its claim"))
    headline = f"dpnoise.audit, {trials:,} runs per neighbouring input, both mechanisms claim epsilon=1"
    lines = [f"{label}: epsilon >= {eps:.2f} (95% lower bound), {verdict}" for label, eps, verdict in rows]
    ctx.facts["audit"] = rows

    def draw(ax: Any, _: Any | None) -> None:
        pos = np.arange(len(rows))
        ax.bar(pos, [r[1] for r in rows], color=["C2" if r[1] <= 1 else "C3" for r in rows])
        ax.axhline(1.0, color="k", lw=0.8, ls=":", label="claimed epsilon")
        ax.set_xticks(pos, ["dpnoise", "NumPy float"])
        ax.set_xlabel("Laplace mechanism")
        ax.set_ylabel("epsilon lower bound (95%)")
        ax.set_title("audit verdict", fontsize=9)
        ax.legend(fontsize=6, loc="upper left")
    return Section(SECTIONS[9], headline, lines, [], draw)


_RUNNERS: tuple[Callable[[_Context], Section], ...] = (
    _samplers, _mechanism, _accountant, _frequency_oracle, _heavy_hitters, _mean_oracle, _daily_collection,
    _constant_time, _selection, _audit)


# -- the tour ------------------------------------------------------------------------------------

def _summary(ctx: _Context, sections: Sequence[Section], seconds: float) -> list[str]:
    speed = ctx.facts["speed"]
    ours, naive = ctx.facts["audit"]
    return [
        f"dpnoise {dpnoise.__version__} demo: exact, secure differential-privacy noise, measured now on made-up data",
        f" exact:  {ctx.n:,} draws fit the exact pmfs: chi-square p = {ctx.facts['p_lap']:.2f} (discrete Laplace), "
        f"{ctx.facts['p_gau']:.2f} (Gaussian)",
        f" secure: {ctx.rng!r}, block function {_core.chacha20_backend()}",
        f" audit:  claimed epsilon 1: dpnoise's Laplace >= {ours[1]:.2f} ({'refuted' if ours[1] > 1 else 'within'}), "
        f"NumPy's float Laplace >= {naive[1]:.2f} ({'refuted' if naive[1] > 1 else 'within'})",
        " speed:  " + ", ".join(f"{a.split('(')[0]} {ta / tb:.2f}x NumPy's {b}" for a, ta, b, tb in speed)
        + f" (threads={ctx.threads})",
        *textwrap.wrap(f"{len(sections)} sections in {seconds:.1f} s (-n {ctx.n:,}, --devices {ctx.devices:,}): "
                       + ", ".join(s.title.lower() for s in sections), width=_WIDTH,
                       initial_indent=" ran:    ", subsequent_indent=" " * 9),
        " more:   --verbose prints the tables; --plot FILE.png|.pdf|.svg draws a panel per section",
    ]


def run_tour(n: int = 200_000, threads: int = 1, devices: int = 100_000, plot: str | None = None,
             verbose: bool = False, out: Callable[[str], None] = print, seed: int | None = None) -> list[Section]:
    """Run the tour (``dpnoise demo``): a summary, then one short section per use; with
    ``verbose`` the tables too; with ``plot`` one figure. Randomness: the secure default
    generator (the audit's mechanisms excepted: seeded, as an audit must be reproducible).

    Parameters
    ----------
    n : int, default 200,000
        Samples per throughput run and per pmf fit.
    threads : int, default 1
        Threads of the timed sampler calls.
    devices : int, default 100,000
        Simulated devices of the local-DP sections (any value >= 1; daily collection uses at most
        1,000 of them).
    plot : str, optional
        Where to write the figure: PNG, PDF or SVG by the extension (matplotlib needed).
    verbose : bool, default False
        Also print every section's tables.
    out : callable, default print
        Receives each printed line.
    seed : int, optional
        Seed every generator: a reproducible run, NOT secure (tests). Default: the secure
        generator, keyed from the OS.

    Returns
    -------
    list of Section
        The sections, in the order of :data:`SECTIONS`.

    Raises
    ------
    ValueError
        For ``n``, ``threads`` or ``devices`` below 1, or a ``plot`` extension other than .png,
        .pdf or .svg (before any work).
    """
    for name, value in (("n", n), ("threads", threads), ("devices", devices)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if plot is not None and os.path.splitext(plot)[1].lower() not in PLOT_FORMATS:
        raise ValueError("plot must end in .png, .pdf or .svg (the format is its extension)")
    start = time.perf_counter()
    budget = PrivacyBudget(epsilon=3.0, delta=1e-5, accountant="pld", neighbours="replace")
    rng = dpnoise.default_rng(seed)  # seed None: ChaCha20 keyed from the OS
    insecure: _Insecure = {} if seed is None else {"allow_insecure": True}
    ctx = _Context(rng, int(n), int(threads), int(devices), verbose, budget, insecure, np.random.default_rng(seed))
    sections = []
    for runner in _RUNNERS:
        t0 = time.perf_counter()
        section = runner(ctx)
        section.seconds = time.perf_counter() - t0
        sections.append(section)
    for line in _summary(ctx, sections, time.perf_counter() - start):
        out(line)
    for i, s in enumerate(sections, 1):
        out(f"{i}. {s.title}: {s.headline}" + (f" ({s.seconds:.1f} s)" if verbose else ""))
        for line in s.lines:
            out("   " + line)
        if verbose:
            for line in s.details:
                out("   " + line)
    if plot:
        plot_tour(sections, plot)
        out(f"plot written to {plot}")
    return sections


def plot_tour(sections: Sequence[Section], path: str) -> Any:
    """Write one figure: a panel per section, a residual axis under each pmf fit.

    Parameters
    ----------
    sections : sequence of Section
        From :func:`run_tour`.
    path : str
        The file; its extension (.png, .pdf, .svg) names the format.

    Returns
    -------
    matplotlib.figure.Figure
        The figure written.

    Raises
    ------
    ValueError
        For another extension.
    ImportError
        Without matplotlib (``pip install matplotlib``).
    """
    if os.path.splitext(path)[1].lower() not in PLOT_FORMATS:
        raise ValueError("path must end in .png, .pdf or .svg (the format is its extension)")
    try:
        import matplotlib
        from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend
    except ImportError as exc:
        raise ImportError("the demo's plot needs matplotlib: pip install matplotlib") from exc
    cols = 5
    rows = -(-len(sections) // cols)
    fig = Figure(figsize=(4 * cols, 4.2 * rows), layout="constrained")
    grid = fig.add_gridspec(2 * rows, cols, height_ratios=[3, 1] * rows)
    for i, s in enumerate(sections):
        r, c = divmod(i, cols)
        if s.residuals:
            ax = fig.add_subplot(grid[2 * r, c])
            rax = fig.add_subplot(grid[2 * r + 1, c], sharex=ax)
            ax.tick_params(labelbottom=False)
        else:
            ax, rax = fig.add_subplot(grid[2 * r:2 * r + 2, c]), None
        if s.draw is not None:
            s.draw(ax, rax)
    fig.suptitle(f"dpnoise {dpnoise.__version__} demo: one panel per section (made-up data)")
    with matplotlib.rc_context({"svg.fonttype": "none", "pdf.fonttype": 42}):
        fig.savefig(path, dpi=90)
    return fig
