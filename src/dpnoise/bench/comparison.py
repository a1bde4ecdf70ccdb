"""``dpnoise bench compare``: two records, row by row: time ratios with a Mann-Whitney test on the
raw timed calls, utility changes with the interval of the difference, regressions flagged."""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from .stats import _min_p, mann_whitney_greater

#: Which way each known utility metric gets worse: "lower" is better, "higher" is better, or a
#: number: the value the metric should have (moving away from it is worse). Unknown metrics
#: (plugins) are compared but never flagged.
METRIC_GOALS: dict[str, Any] = {
    "rms_error": "lower", "p_correct": "higher", "recall": "higher", "ci_coverage": 0.95,
    "variance_ratio": 1.0, "mse_over_2b2": 1.0, "mse_over_sigma2": 1.0,
    "attack_success_30d": "lower", "rms_over_one_shot": "lower",
}


class RecordError(ValueError):
    """A bench record that cannot be read or compared (``dpnoise bench compare`` exits 2)."""


def load_record(path: str) -> dict[str, Any]:
    """Read a ``dpnoise bench --json`` record and check that it is one.

    Parameters
    ----------
    path : str
        The JSON file.

    Returns
    -------
    dict
        The record.

    Raises
    ------
    RecordError
        The file is missing or unreadable, not JSON, or not a dpnoise bench record (the message
        is one line and names the file, never its content).
    """
    try:
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
    except FileNotFoundError:
        raise RecordError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"{path}: cannot be read ({type(exc).__name__})") from None
    except ValueError as exc:
        raise RecordError(f"{path}: not JSON (line {getattr(exc, 'lineno', '?')})") from None
    _check_record(record, path)
    return record


def _check_record(record: Any, name: str) -> None:
    if not isinstance(record, dict) or not str(record.get("schema", "")).startswith("dpnoise-bench/"):
        raise RecordError(f"{name}: not a dpnoise bench record (no 'schema': 'dpnoise-bench/N'; "
                          "write one with dpnoise bench --json)")
    version = record.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise RecordError(f"{name}: not a dpnoise bench record (schema_version is not an integer)")
    if version < 2:
        raise RecordError(f"{name}: schema_version {version} keeps no raw times and cannot be compared "
                          "(re-run dpnoise bench --json)")
    rows = record.get("results")
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("workload"), str)
                                             for r in rows):
        raise RecordError(f"{name}: not a dpnoise bench record ('results' is not a list of rows)")


def _per_item(entry: dict[str, Any]) -> np.ndarray | None:
    sec = entry.get("seconds")
    items = entry.get("items")
    if not isinstance(sec, dict) or not isinstance(sec.get("raw"), list) or not sec["raw"] \
            or not isinstance(items, int) or items < 1:
        return None
    try:
        raw = np.asarray(sec["raw"], dtype=float)
    except (TypeError, ValueError):
        return None
    if not np.all(np.isfinite(raw)) or np.any(raw <= 0):
        return None
    return raw / items


def _worse(metric: str, old: float, new: float) -> bool | None:
    """True when new is worse than old for a known metric, False when better, None when unknown."""
    goal = METRIC_GOALS.get(metric)
    if goal is None or new == old:
        return None if goal is None else False
    if goal == "lower":
        return new > old
    if goal == "higher":
        return new < old
    return abs(new - goal) > abs(old - goal)


def _compare_metric(metric: str, old: dict[str, Any], new: dict[str, Any], threshold: float) -> dict[str, Any]:
    o = (old.get("utility") or {}).get(metric)
    n = (new.get("utility") or {}).get(metric)
    out: dict[str, Any] = {"metric": metric, "old": o, "new": n, "change": None, "relative": None,
                           "interval": None, "significant": None, "worse": None, "regression": False}
    if o is None or n is None:
        out["note"] = "missing in " + ("both" if o is None and n is None else "OLD" if o is None else "NEW")
        return out
    out["change"] = n - o
    out["relative"] = (n - o) / abs(o) if o != 0 else None
    so = ((old.get("utility_stats") or {}).get(metric) or {}).get("stderr")
    sn = ((new.get("utility_stats") or {}).get(metric) or {}).get("stderr")
    out["worse"] = _worse(metric, o, n)
    if so is None or sn is None:
        out["note"] = "no interval (fewer than 2 utility repetitions)"
        return out
    # 95% interval of the difference of two independent means (normal approximation)
    half = 1.959963984540054 * math.hypot(so, sn)
    out["interval"] = [n - o - half, n - o + half]
    out["significant"] = not (out["interval"][0] <= 0 <= out["interval"][1])
    big = abs(n - o) > (threshold - 1) * abs(o)
    out["regression"] = bool(out["significant"] and out["worse"] and big)
    return out


def _settings(record: dict[str, Any]) -> dict[str, Any]:
    """The record's ``settings`` (an empty dict if it has none, or not a dict)."""
    settings = record.get("settings")
    return settings if isinstance(settings, dict) else {}


def _row_key(row: dict[str, Any]) -> tuple[str, float | None]:
    return row["workload"], row.get("epsilon")


def _row_label(key: tuple[str, float | None]) -> str:
    return key[0] + ("" if key[1] is None else f" (epsilon={key[1]:g})")


def compare(old: dict[str, Any], new: dict[str, Any], threshold: float = 1.1, alpha: float = 0.01,
            force: bool = False) -> dict[str, Any]:
    """Compare two bench records row by row: time ratio (NEW / OLD, per item) with a one-sided
    Mann-Whitney test on the raw timed calls, and each utility metric's change with the 95%
    interval of the difference.

    A row is a **time regression** when NEW's median time per item exceeds OLD's by more than
    ``threshold`` and the Mann-Whitney p-value (NEW slower) is at most ``alpha``; a **utility
    regression** when a known metric (:data:`METRIC_GOALS`) moves the worse way, the interval of
    the difference excludes 0, and the change exceeds ``threshold - 1`` relative to OLD; and a
    row that worked in OLD but failed in NEW is a regression too.

    Parameters
    ----------
    old, new : dict
        Two :func:`run` records (or their JSON, loaded).
    threshold : float, default 1.1
        The slow-down (and relative utility change) that counts, > 1.
    alpha : float, default 0.01
        The significance level of each test, in (0, 1).
    force : bool, default False
        Compare records of different schema versions or sizes anyway (times are per item).

    Returns
    -------
    dict
        ``{"rows": [...], "only_in_old": [...], "only_in_new": [...], "regressions": [...],
        "improvements": [...], "warnings": [...], "threshold", "alpha"}``.

    Raises
    ------
    RecordError
        A record is not a bench record; or, without ``force``, the two have different schema
        versions or sizes; or they have no row in common.
    ValueError
        ``threshold`` is not a finite number > 1 or ``alpha`` not in (0, 1).
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 1 < threshold < math.inf:
        raise ValueError(f"threshold must be a finite number > 1, got {threshold!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    _check_record(old, "OLD")
    _check_record(new, "NEW")
    warnings: list[str] = []
    if old["schema_version"] != new["schema_version"]:
        text = f"schema versions differ: OLD {old['schema_version']}, NEW {new['schema_version']}"
        if not force:
            raise RecordError(text + " (re-run both with one dpnoise, or pass --force)")
        warnings.append(text + " (compared anyway: --force)")
    so, sn = _settings(old), _settings(new)
    if (so.get("sizes"), so.get("quick")) != (sn.get("sizes"), sn.get("quick")):
        text = (f"sizes differ: OLD {'quick' if so.get('quick') else 'full'} {so.get('sizes')}, "
                f"NEW {'quick' if sn.get('quick') else 'full'} {sn.get('sizes')}")
        if not force:
            raise RecordError(text + " (run both with the same --quick, or pass --force)")
        warnings.append(text + " (compared per item anyway: --force)")
    if so.get("seed") != sn.get("seed"):
        warnings.append(f"seeds differ (OLD {so.get('seed')}, NEW {sn.get('seed')}): utility changes include "
                        "sampling noise (the intervals account for it)")
    old_rows = {_row_key(r): r for r in old["results"]}
    new_rows = {_row_key(r): r for r in new["results"]}
    common = [k for k in old_rows if k in new_rows]
    if not common:
        raise RecordError("the records have no row (workload, epsilon) in common")
    rows, regressions, improvements = [], [], []
    for key in common:
        o, n = old_rows[key], new_rows[key]
        entry: dict[str, Any] = {"workload": key[0], "epsilon": key[1], "status": "ok", "regression": False,
                                 "time": None, "utility": []}
        if "error" in o or "error" in n:
            entry["status"] = ("failed in both" if "error" in o and "error" in n
                               else "failed in OLD" if "error" in o else "failed in NEW")
            entry["regression"] = entry["status"] == "failed in NEW"
        else:
            if o.get("items") != n.get("items"):
                if not force:
                    raise RecordError(f"{_row_label(key)}: sizes differ (OLD {o.get('items')}, NEW {n.get('items')} "
                                      f"items per call; pass --force to compare per item)")
                entry["size_note"] = f"OLD {o.get('items'):,} items, NEW {n.get('items'):,} items per call"
            to, tn = _per_item(o), _per_item(n)
            if to is None or tn is None:
                entry["time"] = {"note": "no usable raw times"}
            else:
                ratio = float(np.median(tn) / np.median(to))
                p_slower = mann_whitney_greater(tn, to)
                p_faster = mann_whitney_greater(to, tn)
                t: dict[str, Any] = {"ratio": ratio, "p_slower": p_slower, "p_faster": p_faster,
                                     "old_calls": int(to.size), "new_calls": int(tn.size)}
                if _min_p(to.size, tn.size) > alpha:
                    t["note"] = (f"too few timed calls ({to.size} and {tn.size}) for a test at alpha={alpha:g}: "
                                 "use --repeats 5 or more")
                t["regression"] = bool(ratio > threshold and p_slower <= alpha)
                t["improvement"] = bool(ratio < 1 / threshold and p_faster <= alpha)
                ro, rn = o.get("reference"), n.get("reference")
                if isinstance(ro, dict) and isinstance(rn, dict):
                    a, b = _per_item(ro), _per_item(rn)
                    if a is not None and b is not None:
                        t["reference_ratio"] = float(np.median(b) / np.median(a))
                entry["time"] = t
                entry["regression"] = t["regression"]
                if t["improvement"]:
                    improvements.append(_row_label(key) + f": time x{ratio:.2f}")
            metrics = [k for k in (o.get("utility") or {}) if k in (n.get("utility") or {})]
            entry["utility"] = [_compare_metric(k, o, n, threshold) for k in metrics]
            if any(u["regression"] for u in entry["utility"]):
                entry["regression"] = True
        rows.append(entry)
        if entry["regression"]:
            why = []
            if entry["status"] == "failed in NEW":
                why.append("failed in NEW")
            if entry["time"] and entry["time"].get("regression"):
                why.append(f"time x{entry['time']['ratio']:.2f} (p={entry['time']['p_slower']:.2g})")
            why += [f"{u['metric']} {u['old']:.4g} -> {u['new']:.4g}" for u in entry["utility"] if u["regression"]]
            regressions.append(_row_label(key) + ": " + ", ".join(why))
    return {"threshold": threshold, "alpha": alpha, "old": {"created": old.get("created"),
                                                            "dpnoise_version": old.get("dpnoise_version")},
            "new": {"created": new.get("created"), "dpnoise_version": new.get("dpnoise_version")},
            "rows": rows, "only_in_old": [_row_label(k) for k in old_rows if k not in new_rows],
            "only_in_new": [_row_label(k) for k in new_rows if k not in old_rows],
            "regressions": regressions, "improvements": improvements, "warnings": warnings}


def format_comparison(result: dict[str, Any]) -> str:
    """The human-readable table of a :func:`compare` result.

    Parameters
    ----------
    result : dict
        What :func:`compare` returned.

    Returns
    -------
    str
        One line per common row (time ratio NEW/OLD, p-value, utility changes), then the rows
        only in one record, warnings and the verdict.
    """
    lines = [f"dpnoise bench compare: OLD {result['old']['dpnoise_version']} ({result['old']['created']}) vs "
             f"NEW {result['new']['dpnoise_version']} ({result['new']['created']}); "
             f"threshold x{result['threshold']:g}, "
             f"alpha {result['alpha']:g} (one-sided Mann-Whitney on the timed calls; utility: 95% interval of "
             "the difference)", "",
             f"  {'workload':58s} {'time NEW/OLD':>12s} {'p(slower)':>9s} {'ref NEW/OLD':>11s}  verdict"]
    for r in result["rows"]:
        label = _row_label((r["workload"], r["epsilon"]))[:58]
        verdict = "REGRESSION" if r["regression"] else ""
        if r["status"] != "ok":
            lines.append(f"  {label:58s} {r['status']:>12s} {'':9s} {'':11s}  {verdict}")
            continue
        t = r["time"] or {}
        if "ratio" in t:
            ref = f"{t['reference_ratio']:.2f}" if "reference_ratio" in t else "-"
            if not verdict and t.get("improvement"):
                verdict = "faster"
            lines.append(f"  {label:58s} {t['ratio']:12.2f} {t['p_slower']:9.2g} {ref:>11s}  {verdict}")
        else:
            lines.append(f"  {label:58s} {'-':>12s} {'':9s} {'':11s}  {t.get('note', '')}")
        for note in ([r["size_note"]] if "size_note" in r else []) + ([t["note"]] if t.get("note") and "ratio" in t
                                                                        else []):
            lines.append(f"      note: {note}")
        for u in r["utility"]:
            if u["change"] is None:
                lines.append(f"      {u['metric']}: {u.get('note', '')}")
                continue
            ci = (f" [{u['interval'][0]:+.3g}, {u['interval'][1]:+.3g}]" if u["interval"] else "")
            flag = " REGRESSION" if u["regression"] else (" (significant)" if u["significant"] else "")
            lines.append(f"      {u['metric']}: {u['old']:.4g} -> {u['new']:.4g} ({u['change']:+.3g}{ci}){flag}"
                         + (f"; {u['note']}" if u.get("note") else ""))
    lines.append("")
    lines += [f"  only in OLD: {k}" for k in result["only_in_old"]]
    lines += [f"  only in NEW: {k}" for k in result["only_in_new"]]
    lines += [f"  warning: {w}" for w in result["warnings"]]
    if result["regressions"]:
        lines.append(f"  {len(result['regressions'])} regression(s):")
        lines += [f"    {x}" for x in result["regressions"]]
    else:
        lines.append("  no regression")
    return "\n".join(lines)
