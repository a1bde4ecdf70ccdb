"""The human-readable table of a ``dpnoise bench`` record."""
from __future__ import annotations

from typing import Any


def _rate(thr: float, unit: str) -> str:
    if unit == "samples":
        return f"{thr / 1e6:9.2f} M/s"
    return f"{thr / 1e6:7.2f} Mop/s" if thr >= 1e6 else f"{thr:9.1f} op/s"


MISSING = "\u2014"  # an em dash: a declared utility metric the hook did not give


def _metrics(util: dict[str, float | None] | None, stats: dict[str, Any] | None = None) -> str:
    if not util:
        return ""
    parts = []
    for k, v in util.items():
        st = (stats or {}).get(k)
        if v is None:
            parts.append(f"{k} {MISSING}")
        elif st and st.get("ci95"):
            parts.append(f"{k} {v:.4g} \u00b1 {(st['ci95'][1] - st['ci95'][0]) / 2:.2g}")
        else:
            parts.append(f"{k} {v:.4g}")
    return ", ".join(parts)


def _utility_text(entry: dict[str, Any]) -> str:
    """"; utility: ..." for a row or peer entry (with its error or note), or ""."""
    text = f"; utility: {_metrics(entry['utility'], entry.get('utility_stats'))}" if entry.get("utility") else ""
    if entry.get("utility_error"):
        text += f"; utility failed: {entry['utility_error']}"
    elif entry.get("utility_note"):
        text += f" ({entry['utility_note']})"
    return text


def format_table(record: dict[str, Any]) -> str:
    """The human-readable report of a :func:`run` record.

    Parameters
    ----------
    record : dict
        What :func:`run` returned (or its JSON, loaded).

    Returns
    -------
    str
        The table, one row per workload and ε, with sizes, utility and peers.
    """
    m, s = record["machine"], record["settings"]
    lines = [
        f"dpnoise {record['dpnoise_version']} bench ({'quick' if s['quick'] else 'full'}, "
        f"{s['repeats']} timed calls per row: best and median, threads={s['threads']}, "
        + (f"utility: mean \u00b1 95% half-width of {s['utility_repeats']} repetitions, "
           if s.get("utility_repeats", 1) > 1 else "")
        + ("secure generators" if s["seed"] is None else f"SEEDED {s['seed']}: reproducible, NOT secure") + ")",
        f"  cpu: {m['cpu']} ({m['cores']} cores, {m['usable_cores']} usable; load {m['load_average']})",
        f"  python {m['python']}, numpy {m['numpy']}, ChaCha20 backend {m['chacha20_backend']}, {m['platform']}",
        "",
        f"  {'workload':52s} {'eps':>5s} {'dpnoise (best)':>14s} {'median':>13s}   {'like-for-like reference':34s} "
        f"{'ratio':>7s}",
    ]
    for r in record["results"]:
        eps = "-" if r["epsilon"] is None else f"{r['epsilon']:g}"
        if "error" in r:
            lines.append(f"  {r['workload'][:52]:52s} {eps:>5s} FAILED: {r['error']}")
            continue
        ref = r["reference"]
        head = (f"  {r['workload'][:52]:52s} {eps:>5s} {_rate(r['throughput'], r['unit']):>14s} "
                f"{_rate(r['throughput_median'], r['unit']):>13s}   ")
        if ref is None:
            lines.append(head + f"{'-':34s} {'-':>7s}")
        else:
            lines.append(head + f"{ref['name'][:34]:34s} {r['ratio']:6.2f}x")
        lines.append(f"      size: {r['size']}" + _utility_text(r))
        for p in r["peers"]:
            if "skipped" in p:
                lines.append(f"      peer {p['name']}: skipped ({p['skipped']})")
                continue
            size = "" if p["same_size"] else f" on {p['items']:,} {r['unit']} (dpnoise: {r['items']:,})"
            util = _utility_text(p)
            lines.append(f"      peer {p['name']} {p['version']}: {_rate(p['throughput'], r['unit']).strip()}{size}, "
                         f"dpnoise/peer {p['ratio']:.2f}x{util}")
    lines.append("")
    lines.append(f"  total {record['seconds_total']:.1f} s")
    lines.extend(f"  note: {n}" for n in record["notes"])
    return "\n".join(lines)
