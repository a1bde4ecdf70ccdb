"""The figure of ``dpnoise audit --plot``: claimed ε against the audited lower bounds.

One panel per claimed ε, all sharing one ε axis (log scale when the values span more than a
decade) and one list of mechanisms; for each row the reported lower bound (o within the claim,
X refuted), the point estimate, and a bar: the Clopper-Pearson interval of the chosen event's
privacy loss; a dashed line at the claim; a legend; a caption line (machine, dpnoise version,
trials, α, seed). PNG, PDF or SVG by the file's extension.
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import Any

from .. import _figures
from . import _binomial

#: The ε axis' floor (a fraction of the smallest claim): a bound of 0 (no evidence) is drawn there.
FLOOR_FRACTION = 0.05


def event_loss_interval(row: dict[str, Any], alpha: float) -> tuple[float, float | None]:
    """The interval of the chosen event's privacy loss ln((P[E | x_fav] − δ) / P[E | x_other]) of
    a report row: its lower end is the row's bound (Clopper-Pearson at level α' / 2 on each count,
    α' = α / pairs); the upper end uses the opposite Clopper-Pearson bounds at the same levels,
    so the interval holds with probability >= 1 − 2α' (union bound over the four bounds;
    Clopper & Pearson 1934). It bounds this event's loss, not the mechanism's ε.

    Parameters
    ----------
    row : dict
        A row of :func:`dpnoise.audit.cli.run_entry` (``hits``, ``held_out``, ``favoured``,
        ``delta``, ``pairs``, ``epsilon_lower_bound``).
    alpha : float
        The run's α.

    Returns
    -------
    (float, float or None)
        (lower, upper); upper is None when unbounded (no held-out hit under the other input).
    """
    low = float(row["epsilon_lower_bound"])
    if "hits" not in row:
        return low, None
    level = alpha / max(int(row.get("pairs", 1)), 1) / 2
    n = int(row["held_out"])
    fav = int(row["hits"][row["favoured"]])
    other = int(row["hits"][1 - row["favoured"]])
    p_fav_high = _binomial.upper_bound(fav, n, level)
    p_other_low = _binomial.lower_bound(other, n, level)
    if p_other_low <= 0.0:
        return low, None
    if p_fav_high <= row["delta"]:
        return low, max(low, 0.0)
    return low, max(low, math.log(p_fav_high - row["delta"]) - math.log(p_other_low))


def plot_caption(report: dict[str, Any]) -> str:
    """The caption line of an audit figure: machine, dpnoise version, trials, α, seed, and what
    the markers and bars are.

    Parameters
    ----------
    report : dict
        What ``dpnoise audit --json`` writes (``rows``, ``trials``, ``per_call_trials``,
        ``alpha``, ``seed``, ``dpnoise``, ``numpy`` and, from schema 2, ``machine``).

    Returns
    -------
    str
        One line (it wraps in the figure).
    """
    m = report.get("machine") or {}
    where = (f" on {m['cpu']} ({m.get('usable_cores', '?')} of {m.get('cores', '?')} cores usable), "
             f"Python {m.get('python', '?')}" if m.get("cpu") else "")
    a = report["alpha"]
    return (f"dpnoise {report['dpnoise']}{where}, NumPy {report['numpy']}; {report['trials']:,} runs per input for "
            f"batched mechanisms, {report['per_call_trials']:,} for those called once per run; alpha = {a:g}, "
            f"seed {report['seed']}. Markers: the lower bound on epsilon, below the truth with probability >= "
            f"1 - alpha (o within the claim, X refuted; hollow: 0, no evidence, drawn at the axis floor); "
            f"|: the point estimate; bars: Clopper-Pearson interval of the chosen event's privacy loss "
            f"ln((P0 - delta)/P1), jointly >= 1 - 2 alpha (an arrow: unbounded); dashed: the claimed epsilon.")


def plot(report: dict[str, Any], path: str) -> list[str]:
    """Write the audit figure of a report (what ``dpnoise audit --json`` writes).

    Parameters
    ----------
    report : dict
        The report: ``rows`` and the run's settings (see :func:`plot_caption`).
    path : str
        The file: PNG, PDF or SVG, by its extension.

    Returns
    -------
    list of str
        The panels' titles, one axes each, in drawing order (one per claimed ε).

    Raises
    ------
    ValueError
        ``path`` does not end in .png, .pdf or .svg, or the report has no row.
    ImportError
        matplotlib is not installed.
    """
    _figures.figure_format(path)
    rows: Sequence[dict[str, Any]] = report["rows"]
    if not rows:
        raise ValueError("report has no row to plot")
    alpha = float(report["alpha"])
    claims = sorted({float(r["claimed_epsilon"]) for r in rows})
    names = list(dict.fromkeys(f"{r['library']}: {r['mechanism']}" for r in rows))
    libraries = list(dict.fromkeys(r["library"] for r in rows))
    colours = {lib: f"C{i % 10}" for i, lib in enumerate(libraries)}
    floor = FLOOR_FRACTION * min(claims)
    points = []
    for r in rows:
        low, high = event_loss_interval(r, alpha)
        est = r.get("estimate")
        est = float(est) if isinstance(est, (int, float)) and math.isfinite(est) and est > 0 else None
        points.append((r, low, high, est))
    values = [v for _, low, high, est in points for v in (low, high, est) if v is not None and v > 0] + claims
    top = max(values) * 1.5
    log_axis = max(values) / max(min(values), floor) > 10
    fig = _figures.new_figure(figsize=(3.6 * len(claims) + 3.2, 0.26 * len(names) + 2.6), layout="constrained")
    axes = fig.subplots(1, len(claims), sharex=True, sharey=True, squeeze=False)[0]
    titles = []
    for ax, claim in zip(axes, claims):
        ax.axvline(claim, color="k", ls="--", lw=1.0)
        for r, low, high, est in points:
            if float(r["claimed_epsilon"]) != claim or r.get("error"):
                continue  # a failed row keeps its name on the axis and has no point
            y = names.index(f"{r['library']}: {r['mechanism']}")
            c = colours[r["library"]]
            x = max(low, floor)
            if high is not None:
                ax.plot([x, max(high, x)], [y, y], color=c, lw=1.6, alpha=0.6, solid_capstyle="butt")
            else:
                ax.annotate("", xy=(top, y), xytext=(x, y),
                            arrowprops={"arrowstyle": "->", "color": c, "lw": 1.2, "alpha": 0.6})
            if est is not None:
                ax.plot([est], [y], marker="|", ms=9, color=c, ls="none")
            refuted = r.get("refuted", low > claim)
            ax.plot([x], [y], marker="X" if refuted else "o", ms=7 if refuted else 5, ls="none",
                    color=c, mfc="none" if low <= 0 else c, mec="tab:red" if refuted else c)
        ax.set_title(f"claimed \u03b5 = {claim:g}", fontsize=9)
        ax.set_xlabel("\u03b5, privacy loss (nats" + ("; log scale)" if log_axis else ")"), fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        titles.append(f"claimed epsilon = {claim:g}")
    first = axes[0]
    if log_axis:
        first.set_xscale("log")
    first.set_xlim(floor / 1.3 if log_axis else 0.0, top)
    first.set_yticks(range(len(names)), names, fontsize=7)
    first.set_ylim(len(names) - 0.5, -0.5)
    first.set_ylabel("library: mechanism", fontsize=8)
    # one legend for the figure: libraries by colour, markers and bars by meaning
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colours[lib], lw=1.6, label=lib) for lib in libraries]
    handles += [Line2D([], [], marker="o", color="0.3", ls="none", label="lower bound, within the claim"),
                Line2D([], [], marker="X", color="0.3", mec="tab:red", ls="none", label="lower bound, refuted"),
                Line2D([], [], marker="|", color="0.3", ls="none", ms=9, label="point estimate"),
                Line2D([], [], color="0.3", lw=1.6, alpha=0.6, label="interval of the event's loss"),
                Line2D([], [], color="k", ls="--", lw=1.0, label="claimed \u03b5")]
    axes[-1].legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    caption = plot_caption(report)
    title = f"dpnoise {report['dpnoise']} audit: lower bounds on \u03b5"
    fig.suptitle(title, fontsize=10)
    fig.supxlabel(textwrap.fill(caption, int(40 * len(claims) + 60)), fontsize=7, ha="left", x=0.01)
    _figures.save_figure(fig, path, title, caption)
    return titles
