"""``dpnoise audit``: run the audit catalogue and print the table of lower bounds on ε.

Exit status: 0 when every row is as expected (dpnoise's mechanisms within their claims, the
flawed mechanisms refuted; a peer's row is measured and reported, either way), 1 otherwise, 2 for a usage error (one line on stderr,
before any work). Progress goes to stderr; the table to stdout.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from typing import Any, Callable, NoReturn, TextIO

import numpy as np

import dpnoise

from .._figures import figure_format
from .catalogue import Entry, catalogue
from .lower_bound import MIN_TRIALS, MechanismError, search_pairs

DEFAULT_TRIALS = 1_000_000          # per input, mechanisms that take a batch of copies
DEFAULT_PER_CALL_TRIALS = 100_000   # per input, mechanisms called once per trial
QUICK_TRIALS = 100_000
QUICK_PER_CALL_TRIALS = 10_000
MAX_TRIALS = 100_000_000
# the smallest --alpha: split over the two bounds and a row's pairs it stays a positive float
MIN_ALPHA = 1e-300
# 2 (dpnoise 0.8.x): adds "machine" (the caption of --plot); 1 had the run's settings and rows only
JSON_SCHEMA = 2


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.prog}: error: {message}")


def _parsed(text: str, convert: Callable[[str], Any], not_parsed: str, ok: Callable[[Any], bool],
            out_of_range: str) -> Any:
    """``convert(text)`` if it parses and ``ok`` accepts it; else an ArgumentTypeError with the
    message ``not_parsed`` or ``out_of_range`` (formatted with ``text``, cut to 40 characters,
    and ``value``)."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(not_parsed.format(text=text[:40])) from None
    if not ok(value):
        raise argparse.ArgumentTypeError(out_of_range.format(text=text[:40], value=value))
    return value


def _count(text: str) -> int:
    return _parsed(text, lambda t: int(t.replace("_", "")), "must be an integer, got {text!r}",
                   lambda v: MIN_TRIALS <= v <= MAX_TRIALS,
                   f"must be between {MIN_TRIALS:,} and {MAX_TRIALS:,}, got {{value}}")


def _epsilons(text: str) -> list[float]:
    return [_parsed(part, float, "epsilons must be numbers separated by commas, got {text!r}",
                    lambda e: math.isfinite(e) and 0 < e <= 20, "each epsilon must be in (0, 20], got {text!r}")
            for part in text.split(",")]


def _alpha(text: str) -> float:
    return _parsed(text, float, "alpha must be a number, got {text!r}", lambda a: MIN_ALPHA <= a < 1,
                   f"alpha must be in [{MIN_ALPHA:g}, 1), got {{text!r}}")


def _seed(text: str) -> int:
    return _parsed(text, int, "seed must be an integer, got {text!r}", lambda v: 0 <= v < 2**63,
                   "seed must be in [0, 2^63), got {value}")


def _writable(path: str, what: str) -> str:
    if os.path.isdir(path):
        raise argparse.ArgumentTypeError(f"cannot write {what} {path!r}: it is a directory")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory) or not os.access(directory, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write {what} {path!r}: no writable directory {directory!r}")
    return path


def _plot_file(path: str) -> str:
    try:
        figure_format(path)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    _writable(path, "the plot")
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise argparse.ArgumentTypeError("--plot needs matplotlib: pip install matplotlib") from exc
    return path


def build_parser(prog: str = "dpnoise audit") -> argparse.ArgumentParser:
    """The ``dpnoise audit`` argument parser.

    Parameters
    ----------
    prog : str, default "dpnoise audit"
        The program name in usage lines.

    Returns
    -------
    argparse.ArgumentParser
        Trials, α, seed, ε values, peers, JSON and plot options.
    """
    p = _Parser(prog=prog, description=(
        "Empirical lower bounds on epsilon (Clopper-Pearson, held-out events) for dpnoise's "
        "mechanisms, NumPy's naive float Laplace, a mis-calibrated mechanism and installed peers."))
    p.add_argument("--trials", type=_count, default=None,
                   help=f"runs per input for batched mechanisms (default {DEFAULT_TRIALS:,}; --quick {QUICK_TRIALS:,})")
    p.add_argument("--per-call-trials", type=_count, default=None,
                   help=f"runs per input for mechanisms called once per run (default {DEFAULT_PER_CALL_TRIALS:,}; "
                        f"--quick {QUICK_PER_CALL_TRIALS:,})")
    p.add_argument("--quick", action="store_true", help="fewer trials")
    p.add_argument("--epsilons", type=_epsilons, default=[0.5, 1.0, 2.0], help="claimed epsilons (default 0.5,1,2)")
    p.add_argument("--only", default=None, help="rows whose library or name contains this text (case-insensitive)")
    p.add_argument("--no-peers", action="store_true", help="skip diffprivlib and OpenDP")
    p.add_argument("--alpha", type=_alpha, default=0.05, help="each bound may exceed the truth with probability alpha")
    p.add_argument("--seed", type=_seed, default=0, help="seeds the mechanisms' test generators and the splits")
    p.add_argument("--json", type=lambda s: _writable(s, "the JSON file"), default=None, help="write the rows as JSON")
    p.add_argument("--plot", type=_plot_file, default=None, help="draw claimed epsilon vs lower bounds, one panel per claimed epsilon: PNG, PDF or SVG by the "
                        "extension (matplotlib)")
    p.add_argument("--list", action="store_true", help="list the catalogue and exit")
    return p


class _Progress:
    """One status line on stderr, rewritten in place on a terminal, else one line per row."""

    def __init__(self, stream: TextIO, total_rows: int):
        self.stream, self.total_rows = stream, total_rows
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.row, self.label, self.done, self.total, self.last = 0, "", 0, 1, 0.0

    def start(self, row: int, label: str, total_runs: int) -> None:
        self.row, self.label, self.done, self.total = row, label, 0, max(total_runs, 1)
        self._show(force=True)

    def __call__(self, runs: int) -> None:
        self.done += runs
        self._show()

    def _show(self, force: bool = False) -> None:
        if not self.tty:
            return
        now = time.monotonic()
        if not force and now - self.last < 0.2:
            return
        self.last = now
        pct = 100.0 * min(self.done / self.total, 1.0)
        self.stream.write(f"\r[{self.row}/{self.total_rows}] {self.label[:60]:60s} {pct:5.1f}%")
        self.stream.flush()

    def finish(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r" + " " * 80 + "\r")
        self.stream.write(f"[{self.row}/{self.total_rows}] {text}\n")
        self.stream.flush()


def _verdict(row: dict[str, Any]) -> str:
    bound, claim = row["epsilon_lower_bound"], row["claimed_epsilon"]
    if row.get("error"):
        return "ERROR: " + row["error"]
    if bound > claim:
        text = f"REFUTED: bound {bound - claim:+.3g} above the claim ({bound / claim:.1f}x)"
    else:
        text = "within the claim"
    if row["expect"] == "refuted":
        text += " (expected: refuted)" if bound > claim else " (NOT refuted: expected a violation)"
    elif row["expect"] == "holds" and bound > claim:
        text += " (UNEXPECTED)"
    return text


def run_entry(entry: Entry, trials: int, alpha: float, seed: int,
              progress: _Progress | None = None) -> dict[str, Any]:
    """Audit one catalogue entry over its input pairs (Bonferroni over the pairs).

    Parameters
    ----------
    entry : Entry
        The mechanism, its claim and its neighbouring pairs.
    trials : int
        Runs per input.
    alpha : float
        The probability that the reported bound is wrong.
    seed : int
        Seeds the mechanism (insecure: audits only) and the train/held-out split.
    progress : callable, optional
        Called with the number of trials done.

    Returns
    -------
    dict
        The report row: claim, ``epsilon_lower_bound``, event, hits, ``refuted``, ``ok``
        (whether the finding is the expected one), ``seconds`` (``error`` if the mechanism
        failed).
    """
    row: dict[str, Any] = {
        "library": entry.library, "mechanism": entry.name, "note": entry.note,
        "claimed_epsilon": entry.epsilon, "delta": entry.delta, "trials": trials,
        "pairs": len(entry.pairs), "vectorized": entry.vectorized, "expect": entry.expect,
    }
    start = time.perf_counter()
    try:
        mechanism = entry.make(seed)
    except Exception as exc:
        row.update(epsilon_lower_bound=0.0, error=f"cannot build the mechanism: {type(exc).__name__}: {exc}"[:200],
                   ok=False, seconds=time.perf_counter() - start)
        return row
    try:
        result = search_pairs(mechanism, entry.pairs, trials=trials, delta=entry.delta, alpha=alpha,
                              seed=seed, vectorized=entry.vectorized,
                              progress=progress if progress is not None else None)
    except MechanismError as exc:
        row.update(epsilon_lower_bound=0.0, error=str(exc)[:200], ok=False, seconds=time.perf_counter() - start)
        return row
    best = result.best
    row.update(
        epsilon_lower_bound=best.epsilon, estimate=best.estimate, event=str(best.event)[:160],
        favoured=best.favoured, hits=list(best.hits), held_out=best.held_out,
        p_lower=best.p_lower, p_upper=best.p_upper, seconds=time.perf_counter() - start,
    )
    refuted = best.epsilon > entry.epsilon
    row["refuted"] = refuted
    row["excess"] = best.epsilon - entry.epsilon
    row["ok"] = {"refuted": refuted, "holds": not refuted}.get(entry.expect, True)  # "measured": either
    return row


def _table(rows: Sequence[dict[str, Any]]) -> str:
    head = ["library", "mechanism", "claimed eps", "delta", "trials", "eps lower bound", "verdict", "s"]
    body = [[r["library"], r["mechanism"], f"{r['claimed_epsilon']:g}", f"{r['delta']:g}", f"{r['trials']:,}",
             f"{r['epsilon_lower_bound']:.3f}", _verdict(r), f"{r['seconds']:.1f}"] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(b) for b in body])


def _unbuildable(entries: Sequence[Entry], seed: int) -> str:
    """One usage-error line if a catalogue mechanism whose verdict decides the exit status
    (dpnoise's rows, the flawed ones) cannot be built at the claimed ε (e.g. ``--epsilons
    1e-300``, which dpnoise refuses), else "". Building is cheap (a plan, no noise); peers'
    rows are left to run_entry, which records their refusal as the row's error."""
    for e in entries:
        if e.expect == "measured":
            continue
        try:
            e.make(seed)
        except (ValueError, OverflowError, TypeError) as exc:
            reason = " ".join(str(exc).split())[:200]
            return (f"dpnoise audit: error: --epsilons: {e.library} {e.name} refuses epsilon={e.epsilon:g}: "
                    f"{type(exc).__name__}: {reason}")
    return ""


def cli_main(argv: Sequence[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """``dpnoise audit [options]``: run the catalogue; return the exit status (0, 1 or 2).

    Parameters
    ----------
    argv : list of str
        The arguments after ``audit`` (``--help`` lists them).

    Returns
    -------
    int
        0 when every row is as expected, 1 when some is not, 2 for a usage error.
    """
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    try:
        args = build_parser().parse_args(list(argv))
    except _UsageError as exc:
        err.write(f"{exc}\n")
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    cat = catalogue(args.epsilons, peers=not args.no_peers)
    entries = cat.entries
    if args.only:
        key = args.only.lower()
        entries = [e for e in entries if key in e.library.lower() or key in e.name.lower()]
        if not entries:
            err.write(f"dpnoise audit: error: --only {args.only!r} matches no catalogue row\n")
            return 2
    for lib, why in cat.unavailable.items():
        err.write(f"dpnoise audit: {lib} unavailable ({why})\n")
    if args.list:
        for e in entries:
            out.write(f"{e.library:12s} {e.name:42s} eps={e.epsilon:g} delta={e.delta:g} expect={e.expect}\n")
        return 0
    refused = _unbuildable(entries, args.seed)
    if refused:
        err.write(refused + "\n")
        return 2
    trials = args.trials or (QUICK_TRIALS if args.quick else DEFAULT_TRIALS)
    per_call = args.per_call_trials or (QUICK_PER_CALL_TRIALS if args.quick else DEFAULT_PER_CALL_TRIALS)
    progress = _Progress(err, len(entries))
    rows = []
    start = time.perf_counter()
    for i, e in enumerate(entries, 1):
        n = trials if e.vectorized and not e.slow else per_call
        progress.start(i, f"{e.library} {e.name} eps={e.epsilon:g}", 2 * n * len(e.pairs))
        row = run_entry(e, n, args.alpha, args.seed, progress)
        progress.finish(f"{e.library} {e.name} eps={e.epsilon:g}: lower bound {row['epsilon_lower_bound']:.3f} "
                        f"({row['seconds']:.1f} s)")
        rows.append(row)
    elapsed = time.perf_counter() - start
    out.write(_table(rows) + "\n")
    refuted = [r for r in rows if r.get("refuted")]
    for r in refuted:
        out.write(f"\n{r['library']} {r['mechanism']} at claimed eps={r['claimed_epsilon']:g}: the bound "
                  f"{r['epsilon_lower_bound']:.3f} exceeds the claim by {r['excess']:.3f} "
                  f"({r['epsilon_lower_bound'] / r['claimed_epsilon']:.1f}x); event: {r['event']}")
    if refuted:
        out.write("\n")
    out.write(f"\n{len(rows)} rows in {elapsed:.1f} s; each bound may exceed the truth with probability "
              f"<= alpha = {args.alpha:g} (alpha split over a row's input pairs).\n")
    if args.json or args.plot:
        from ..bench import machine_info

        report = {"schema": JSON_SCHEMA, "dpnoise": dpnoise.__version__, "numpy": np.__version__,
                  "machine": machine_info(), "alpha": args.alpha, "seed": args.seed, "trials": trials,
                  "per_call_trials": per_call, "unavailable": cat.unavailable, "rows": rows}
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(report, fh, indent=1)
        if args.plot:
            from .plot import plot

            plot(report, args.plot)
    return 0 if all(r["ok"] for r in rows) else 1


def main() -> None:  # pragma: no cover - python -m dpnoise.audit.cli
    """``python -m dpnoise.audit.cli``: run :func:`cli_main` on ``sys.argv`` and exit with its status."""
    sys.exit(cli_main(sys.argv[1:]))


if __name__ == "__main__":  # pragma: no cover
    main()
