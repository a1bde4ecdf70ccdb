"""The figure of a ``dpnoise bench`` record (``--plot``): speed ratios, one panel per (family,
metric) with error bars, a caption line; PNG, PDF or SVG by the file's extension."""
from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _figures
from .comparison import METRIC_GOALS

#: Axis labels (with units) of the known metrics in plots.
METRIC_LABELS = {
    "rms_error": "RMS error (value units; counts for frequencies)",
    "mse_over_2b2": "MSE / 2b\u00b2 (ratio; 1 = the stated Laplace noise)",
    "mse_over_sigma2": "MSE / \u03c3\u00b2 (ratio; 1 = the stated Gaussian noise)",
    "variance_ratio": "variance / exact variance (ratio; 1 expected)",
    "ci_coverage": "coverage of the 95% intervals (share of true values)",
    "p_correct": "P(correct choice) (probability)",
    "recall": "recall of the true top k (share)",
    "attack_success_30d": "attack success after 30 days (share of devices)",
    "rms_over_one_shot": "RMS error / one-shot RMS error (ratio; 1 = one-shot)",
}

PLOT_FORMATS = _figures.FIGURE_FORMATS


def _trim_names(names: Sequence[str]) -> dict[str, str]:
    """Each name without the words every name of the family shares at its start and end."""
    if len(set(names)) < 2:
        return dict.fromkeys(names, "dpnoise")
    words = [n.split(" ") for n in names]
    head = 0
    while all(len(w) > head + 1 and w[head] == words[0][head] for w in words):
        head += 1
    tail = 0
    while all(len(w) > head + tail + 1 and w[-1 - tail] == words[0][-1 - tail] for w in words):
        tail += 1
    return {n: "dpnoise " + " ".join(w[head:len(w) - tail]).strip(":,; ") for n, w in zip(names, words)}


def _utility_panels(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One panel per (family, metric): every series (a dpnoise row's workload, or a peer) with
    its points (ε, mean, 95% interval, size)."""
    rows = [r for r in record["results"] if "error" not in r and r.get("utility")]
    panels: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        family = r.get("family") or r["workload"]
        for metric in r["utility"]:
            panel = panels.setdefault((family, metric), {"family": family, "metric": metric, "series": {},
                                                         "workloads": [], "unit": r["unit"]})
            if r["workload"] not in panel["workloads"]:
                panel["workloads"].append(r["workload"])
            entries = [(r["workload"], r, r.get("items"))]
            entries += [(f"peer {p['name']}", p, p.get("items")) for p in r.get("peers", [])
                        if "skipped" not in p and p.get("utility")]
            for key, entry, items in entries:
                value = entry["utility"].get(metric)
                if value is None:
                    continue  # a missing metric is no point
                ci = ((entry.get("utility_stats") or {}).get(metric) or {}).get("ci95")
                series = panel["series"].setdefault(key, {"points": [], "sizes": set()})
                series["points"].append((r["epsilon"], value, ci))
                series["sizes"].add(items)
    members: dict[str, list[str]] = {}  # every workload of a family, whatever the metric
    for r in rows:
        names = members.setdefault(r.get("family") or r["workload"], [])
        if r["workload"] not in names:
            names.append(r["workload"])
    out = []
    for (family, metric), panel in panels.items():
        if not panel["series"]:
            continue
        short = _trim_names(members[family])
        sizes = [x for s in panel["series"].values() if len(s["sizes"]) == 1 for x in s["sizes"] if x is not None]
        # the panel's size: the most common one, the largest on a tie (a reduced row is the odd one)
        common = max(set(sizes), key=lambda x: (sizes.count(x), x)) if sizes else None
        for key, series in panel["series"].items():
            series["label"] = short.get(key, key)
            odd = series["sizes"] != {common}
            series["other_size"] = odd
            if odd:
                shown = ", ".join(f"{x:,}" for x in sorted(x for x in series["sizes"] if x is not None))
                series["label"] += f" [n={shown}; others {common:,}]" if common is not None else f" [n={shown}]"
        panel["items"] = common
        panel["title"] = f"{family}: {metric}"
        out.append(panel)
    return out


def _speed_bars(record: dict[str, Any]) -> list[tuple[str, float, float, float]]:
    """(label, ratio of medians, low, high) per like-for-like reference and peer: throughput
    dpnoise / other, whiskers from the quartiles of both timings."""
    bars = []
    for r in record["results"]:
        if "error" in r:
            continue
        tag = r["workload"] + ("" if r["epsilon"] is None else f" (\u03b5={r['epsilon']:g})")
        others = ([(r["reference"]["name"], r["reference"])] if r.get("reference") else [])
        others += [(p["library"], p) for p in r.get("peers", []) if "skipped" not in p]
        ours = np.asarray(r["seconds"]["raw"]) / r["items"]
        for name, other in others:
            theirs = np.asarray(other["seconds"]["raw"]) / other["items"]
            q = np.percentile(ours, [25, 50, 75])
            t = np.percentile(theirs, [25, 50, 75])
            bars.append((f"{tag} / {name}", float(t[1] / q[1]), float(t[0] / q[2]), float(t[2] / q[0])))
    return bars


def plot_caption(record: dict[str, Any]) -> str:
    """The figure's caption line: machine, dpnoise version, sizes, repetitions, seed.

    Parameters
    ----------
    record : dict
        A :func:`run` record.

    Returns
    -------
    str
        One line (it wraps in the figure).
    """
    m, st = record["machine"], record["settings"]
    sizes = st.get("sizes") or {}
    r = st.get("utility_repeats", 1)
    return (f"dpnoise {record['dpnoise_version']} on {m['cpu']} ({m['usable_cores']} of {m['cores']} cores usable, "
            f"threads={st['threads']}), Python {m['python']}, NumPy {m['numpy']}; "
            f"{'quick' if st['quick'] else 'full'} sizes: {sizes.get('samples', 0):,} samples, "
            f"{sizes.get('values', 0):,} values, {sizes.get('devices', 0):,} devices per call "
            f"(a panel's rows: the n in its corner, and in the legend where a row differs); utility: mean of R={r} repetition{'s' if r > 1 else ''}"
            + (", error bars 95% Student-t intervals" if r > 1 else ", no error bars (R=1)")
            + (f"; seed {st['seed']} (insecure, reproducible)" if st.get("seed") is not None else "; secure generators")
            + f"; speed: median of {st['repeats']} timed calls, whiskers from the quartiles. "
            "Hollow markers, dashed lines: a size other than the rest of the panel's.")


def plot(record: dict[str, Any], path: str) -> list[str]:
    """Write the figure of a record: speed ratios (dpnoise / like-for-like reference or peer),
    then one panel per (family, metric) with every workload and peer of the family overlaid
    against ε (log axis), 95% error bars from the utility repetitions, a legend, axis labels
    with units and a caption line (also in the file's metadata).

    Parameters
    ----------
    record : dict
        A :func:`run` record.
    path : str
        The file to write: PNG, PDF or SVG, by its extension.

    Returns
    -------
    list of str
        The panels' titles, in drawing order (one axes each).

    Raises
    ------
    ImportError
        matplotlib is not installed (``pip install matplotlib``).
    ValueError
        ``path`` does not end in .png, .pdf or .svg.
    """
    _figures.figure_format(path)
    bars = _speed_bars(record)
    panels = _utility_panels(record)
    cols = max(1, min(3, len(panels)))
    grid_rows = (len(panels) + cols - 1) // cols
    bar_h = 0.22 * max(len(bars), 4) + 1.2 if bars else 0.0
    caption = plot_caption(record)
    fig = _figures.new_figure(figsize=(5.2 * cols + 1.5, bar_h + 4.2 * grid_rows + 1.2), layout="constrained")
    heights = ([bar_h] if bars else []) + [4.2] * grid_rows
    grid = fig.add_gridspec(len(heights), cols, height_ratios=heights)
    titles = []
    if bars:
        ax = fig.add_subplot(grid[0, :])
        y = np.arange(len(bars))
        ratio = np.array([b[1] for b in bars])
        err = np.array([[b[1] - b[2] for b in bars], [b[3] - b[1] for b in bars]]).clip(min=0)
        ax.barh(y, ratio, xerr=err, color=["tab:blue" if v >= 1 else "tab:red" for v in ratio],
                error_kw={"elinewidth": 0.8, "capsize": 2})
        ax.set_yticks(y, [b[0][:95] for b in bars], fontsize=7)
        ax.set_xscale("log")
        ax.axvline(1.0, color="k", lw=0.8)
        ax.invert_yaxis()
        ax.set_xlabel("throughput ratio dpnoise / other (times per item; log scale; > 1: dpnoise faster)")
        ax.set_title("speed, measured in one run", fontsize=9)
        titles.append("speed")
    first = 1 if bars else 0
    markers = "osD^v<>ph*"
    for k, panel in enumerate(panels):
        a = fig.add_subplot(grid[first + k // cols, k % cols])
        metric = panel["metric"]
        with_eps = any(pt[0] is not None for s in panel["series"].values() for pt in s["points"])
        labels = list(panel["series"])
        allv = []
        for j, key in enumerate(labels):
            series = panel["series"][key]
            pts = sorted(series["points"], key=lambda p: (p[0] is None, p[0] or 0.0))
            xs = [p[0] if with_eps else j for p in pts]
            ys = [p[1] for p in pts]
            lo = [p[1] - p[2][0] if p[2] else 0.0 for p in pts]
            hi = [p[2][1] - p[1] if p[2] else 0.0 for p in pts]
            allv += ys + [p[2][0] for p in pts if p[2]] + [p[2][1] for p in pts if p[2]]
            odd = series["other_size"]
            a.errorbar(xs, ys, yerr=[np.clip(lo, 0, None), np.clip(hi, 0, None)], marker=markers[j % len(markers)],
                       ls="--" if odd else "-", mfc="none" if odd else None, capsize=3, lw=1.2, ms=5,
                       label=series["label"][:70])
        goal = METRIC_GOALS.get(metric)
        if isinstance(goal, float):
            a.axhline(goal, color="0.5", lw=0.8, ls=":", label=f"expected {goal:g}")
        if with_eps:
            a.set_xscale("log")
            ticks = sorted({p[0] for s in panel["series"].values() for p in s["points"] if p[0] is not None})
            a.set_xticks(ticks, [f"{t:g}" for t in ticks])
            a.minorticks_off()
            a.set_xlabel("privacy parameter \u03b5 (log scale)")
        else:
            a.set_xticks(range(len(labels)), [panel["series"][k2]["label"].removeprefix("dpnoise ")[:28]
                                              for k2 in labels], fontsize=7, rotation=15)
            a.set_xlabel("sampler (no \u03b5)")
        positive = [v for v in allv if v > 0]
        if positive and len(positive) == len(allv) and max(positive) / min(positive) > 10:
            a.set_yscale("log")  # the metric spans decades
        a.set_ylabel(METRIC_LABELS.get(metric, metric), fontsize=8)
        if panel.get("items") is not None:  # the family's size (rows of another one say so in the legend)
            a.text(0.01, 0.01, f"n = {panel['items']:,} {panel['unit']} per call", transform=a.transAxes,
                   fontsize=6, color="0.35", va="bottom")
        a.set_title(panel["title"][:70], fontsize=9)
        a.legend(fontsize=6)
        titles.append(panel["title"])
    fig.suptitle(f"dpnoise {record['dpnoise_version']} bench", fontsize=11)
    fig.supxlabel(textwrap.fill(caption, 55 * cols + 45), fontsize=7, ha="left", x=0.01)
    # the caption beside the figure too (file metadata); vector files keep text as text
    _figures.save_figure(fig, path, f"dpnoise {record['dpnoise_version']} bench", caption)
    return titles
