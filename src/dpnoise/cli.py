"""The dpnoise command line: argument parsing and dispatch for ``dpnoise demo`` (the tour in
:mod:`dpnoise.demos`), ``dpnoise sample``, ``dpnoise bench`` (:mod:`dpnoise.bench`) and
``dpnoise audit`` (forwarded to ``dpnoise.audit.cli_main``).

Every usage error (a bad flag or value, an unwritable --plot file, a missing optional package)
is reported before any work starts, as one line on stderr, with exit status 2.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Sequence
from fractions import Fraction
from typing import Callable, NoReturn, Optional

import numpy as np

import dpnoise
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
        raise argparse.ArgumentTypeError("needs matplotlib: pip install matplotlib") from exc
    return path


def _demo_plot_file(path: str) -> str:
    """demo --plot FILE: as --plot, and the extension names the format (.png, .pdf or .svg)."""
    from dpnoise.demos.tour import PLOT_FORMATS

    if os.path.splitext(path)[1].lower() not in PLOT_FORMATS:
        raise argparse.ArgumentTypeError(f"{path[:80]!r} must end in .png, .pdf or .svg (the format is its extension)")
    return _plot_file(path)


def _bench_plot_file(path: str) -> str:
    """bench --plot FILE: as --plot, and the extension names the format (.png, .pdf or .svg)."""
    from dpnoise.bench import PLOT_FORMATS

    if os.path.splitext(path)[1].lower() not in PLOT_FORMATS:
        raise argparse.ArgumentTypeError(f"{path[:80]!r} must end in .png, .pdf or .svg (the format is its extension)")
    return _plot_file(path)


def _spark_demo(args: argparse.Namespace) -> int:
    """``dpnoise demo --spark``: the telemetry scenario on a local Spark session (pyspark and
    Java 17+ needed; see docs/scaling.md)."""
    import shutil

    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError:
        raise _UsageError("--spark needs pyspark and pyarrow: pip install pyspark pyarrow 'pandas>=2.2,<3'") from None
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise _UsageError("--spark needs Java 17 or newer (java on PATH or JAVA_HOME set)")
    if args.plot:
        raise _UsageError("--plot is not available with --spark")
    from dpnoise.demos import spark as spark_demo

    if args.stream:  # the streamed collection over several days (demos/stream.py)
        from dpnoise.demos.stream import run_stream_demo

        print("dpnoise demo --spark --stream: continuous collection on a local Spark session (local[2])")
        run_stream_demo(devices=min(args.devices, 200_000))
        return 0
    print("dpnoise demo --spark: the local-DP telemetry scenario on a local Spark session (local[2])")
    spark_demo.run_telemetry_demo(devices=args.devices)
    return 0


_DEMO_DEVICES = 100_000         # the tour's default: a few seconds in all
_SPARK_DEMO_DEVICES = 1_000_000  # --spark's default (unchanged)


def _demo(args: argparse.Namespace) -> int:
    if args.stream and not args.spark:
        raise _UsageError("--stream needs --spark (dpnoise demo --spark --stream)")
    if args.devices is None:
        args.devices = _SPARK_DEMO_DEVICES if args.spark else _DEMO_DEVICES
    if args.spark:
        for flag in ("verbose", "seed"):
            if getattr(args, flag) not in (None, False):
                raise _UsageError(f"--{flag} is not available with --spark")
        return _spark_demo(args)
    from dpnoise.demos.tour import run_tour

    if args.seed is not None:
        print("warning: --seed makes every generator reproducible and NOT secure", file=sys.stderr)
    run_tour(n=args.n, threads=args.threads, devices=args.devices, plot=args.plot, verbose=args.verbose,
             seed=args.seed)
    return 0


#: A sampler of ``dpnoise sample``: (generator, parameter, n, threads) -> n integer draws.
_Draw = Callable[[dpnoise.Generator, float, int, Optional[int]], np.ndarray]

_SAMPLERS: dict[str, tuple[str, _Draw]] = {
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


def _epsilons(text: str) -> list[float]:
    """--epsilon 0.1,1,10: positive finite numbers, comma-separated."""
    out = []
    for part in text.split(","):
        try:
            e = float(_parse_number(part.strip()))
        except (argparse.ArgumentTypeError, OverflowError):
            raise argparse.ArgumentTypeError(
                f"epsilon must be comma-separated numbers, got {part.strip()[:40]!r}") from None
        if not 0 < e < math.inf:
            raise argparse.ArgumentTypeError(f"epsilon must be positive and finite, got {part.strip()[:40]!r}")
        out.append(e)
    return out


def _bench(args: argparse.Namespace) -> int:
    import json

    from dpnoise import bench

    for module in args.workloads or ():
        try:
            bench.load_workloads(module)
        except ImportError as exc:
            raise _UsageError(f"dpnoise bench --workloads: {exc}") from exc
    if args.list:
        for w in bench.workloads():
            print(w.name)
        return 0
    try:
        bench.select(args.only)  # before any work: --only matching nothing is a usage error
    except LookupError as exc:
        raise _UsageError(f"dpnoise bench --only: {exc.args[0]}") from exc
    if args.seed is not None:
        print("warning: --seed makes every generator reproducible and NOT secure (utility figures only)",
              file=sys.stderr)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    record = bench.run(quick=args.quick, threads=args.threads, peers=args.peers, repeats=args.repeats,
                       only=args.only, epsilons=args.epsilon, seed=args.seed,
                       progress=None if args.no_progress else progress, utility_repeats=args.utility_repeats)
    if args.json:
        print(json.dumps(record, indent=1))
    else:
        print(bench.format_table(record))
    if args.plot:
        bench.plot(record, args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    failed = [r["workload"] + (" (its utility hook)" if "error" not in r else "")
              for r in record["results"] if "error" in r or r.get("utility_error")]
    if failed:
        print(f"dpnoise bench: {len(failed)} workload(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _threshold(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"threshold must be a number > 1, got {text[:40]!r}") from None
    if not 1 < v < math.inf:
        raise argparse.ArgumentTypeError(f"threshold must be a finite number > 1, got {text[:40]!r}")
    return v


def _alpha(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"alpha must be a number in (0, 1), got {text[:40]!r}") from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"alpha must be a number in (0, 1), got {text[:40]!r}")
    return v


def _bench_compare(argv: Sequence[str]) -> int:
    """``dpnoise bench compare OLD.json NEW.json``: exit 1 on a regression, 2 on unusable input."""
    import json

    from dpnoise import bench

    p = _Parser(prog="dpnoise bench compare",
                description="Compare two `dpnoise bench --json` records: time ratios (Mann-Whitney on the raw "
                            "timed calls) and utility changes (95% intervals); exit 1 if any row regressed.")
    p.add_argument("old", metavar="OLD.json")
    p.add_argument("new", metavar="NEW.json")
    p.add_argument("--threshold", type=_threshold, default=1.1,
                   help="slow-down (NEW/OLD time per item) and relative utility change that count (default 1.1)")
    p.add_argument("--alpha", type=_alpha, default=0.01,
                   help="significance level of each test (default 0.01; needs --repeats 5 or more in both runs)")
    p.add_argument("--force", action="store_true",
                   help="compare records of different schema versions or sizes anyway (times per item)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = p.parse_args(list(argv))
    try:
        old, new = bench.load_record(args.old), bench.load_record(args.new)
        result = bench.compare(old, new, threshold=args.threshold, alpha=args.alpha, force=args.force)
    except bench.RecordError as exc:
        raise _UsageError(f"dpnoise bench compare: {exc}") from None
    print(json.dumps(result, indent=1) if args.json else bench.format_comparison(result))
    return 1 if result["regressions"] else 0


def _audit(argv: Sequence[str]) -> int:
    """``dpnoise audit ...``: everything after ``audit`` goes to ``dpnoise.audit.cli_main``."""
    import importlib

    try:
        module = importlib.import_module("dpnoise.audit")
    except ModuleNotFoundError as exc:
        if exc.name not in ("dpnoise.audit",):
            raise
        raise _UsageError("dpnoise audit: not available: this dpnoise has no dpnoise.audit package") from None
    cli_main = getattr(module, "cli_main", None)
    if not callable(cli_main):
        raise _UsageError("dpnoise audit: not available: dpnoise.audit has no cli_main(argv)")
    return int(cli_main(list(argv)))


def build_parser() -> argparse.ArgumentParser:
    """The ``dpnoise`` argument parser: sub-commands demo, bench, sample (and audit, dispatched
    to ``dpnoise.audit.cli``).

    Returns
    -------
    argparse.ArgumentParser
        Its usage errors exit with status 2 after one line.
    """
    p = _Parser(prog="dpnoise", description="Exact, secure differential-privacy noise.")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="a tour of dpnoise: a summary, then one short section per use, measured now "
                                    "(a few seconds)")
    d.add_argument("-n", type=_bounded_count(MAX_DEMO_SAMPLES, "n"), default=200_000,
                   help=f"samples per sampler run and pmf fit (default 200,000; at most {MAX_DEMO_SAMPLES:,})")
    d.add_argument("--threads", type=_threads, default=1, help=f"1 to {_validate.MAX_THREADS}")
    d.add_argument("--devices", type=_bounded_count(MAX_DEMO_DEVICES, "devices"), default=None,
                   help=f"simulated devices in the local-DP sections (default {_DEMO_DEVICES:,}; "
                        f"{_SPARK_DEMO_DEVICES:,} with --spark; at most {MAX_DEMO_DEVICES:,})")
    d.add_argument("--verbose", action="store_true", help="also print every section's tables")
    d.add_argument("--seed", type=_seed, default=None, help="reproducible run (NOT secure), 0 <= seed < 2**256")
    d.add_argument("--plot", metavar="FILE", type=_demo_plot_file,
                   help="also write one figure, a panel per section and residuals under the pmf fits: PNG, PDF or "
                        "SVG by the extension (needs matplotlib: pip install matplotlib)")
    d.add_argument("--spark", action="store_true",
                   help="run only the telemetry scenario, on a local Spark session (needs the [spark] extra and Java 17+)")
    d.add_argument("--stream", action="store_true", help="with --spark: a streamed collection over several days, "
                   "restarted half-way, per-day top apps and the central epsilon with and without a shuffler (--devices "
                   "per day, at most 200,000)")
    d.set_defaults(func=_demo)
    s = sub.add_parser("sample", help="print samples, one per line")
    s.add_argument("distribution", choices=sorted(_SAMPLERS))
    s.add_argument("-n", type=_bounded_count(_validate.MAX_SIZE, "n"), default=10, help="how many samples (default 10)")
    for name in ("scale", "sigma", "p", "gamma"):
        s.add_argument(f"--{name}", type=_parse_number, help="exact number: 2, 0.3 or 7/3")
    s.add_argument("--seed", type=_seed, default=None, help="reproducible stream (NOT secure), 0 <= seed < 2**256")
    s.add_argument("--threads", type=_threads, default=1, help=f"1 to {_validate.MAX_THREADS}")
    s.set_defaults(func=_sample)
    b = sub.add_parser("bench", help="speed and utility of the built-in workloads against NumPy (and installed peers)",
                       epilog="dpnoise bench compare OLD.json NEW.json [--threshold 1.1] [--force]: compare two "
                              "--json records (exit 1 on a regression); see docs/bench.md")
    b.add_argument("--quick", action="store_true", help="small workloads, utility included: about 10 s")
    b.add_argument("--json", action="store_true", help="print a JSON record (schema: docs/bench.md)")
    b.add_argument("--peers", action="store_true", help="also time installed OpenDP, diffprivlib, dp-accounting")
    b.add_argument("--threads", type=_threads, default=1, help=f"1 to {_validate.MAX_THREADS}")
    b.add_argument("--repeats", type=_bounded_count(100, "repeats"), default=None,
                   help="timed calls per row (default 5, 3 with --quick); best, median and IQR are kept")
    b.add_argument("--utility-repeats", metavar="R", type=_bounded_count(1000, "utility-repeats"), default=1,
                   help="measure every utility metric R times with independent seeds derived from --seed "
                        "(default 1); the record keeps mean, standard error, 95%% interval and the R values")
    b.add_argument("--only", metavar="TEXT", default=None,
                   help="only workloads whose name contains TEXT (ignoring case); matching none is an error")
    b.add_argument("--seed", type=_seed, default=None,
                   help="reproducible utility figures (generators seeded: NOT secure), 0 <= seed < 2**256")
    b.add_argument("--epsilon", type=_epsilons, default=None, metavar="E1,E2,...",
                   help="run every workload that takes an epsilon at each of these (e.g. 0.1,1,10)")
    b.add_argument("--workloads", metavar="MODULE", action="append", default=None,
                   help="import MODULE (a dotted path), which registers workloads with dpnoise.bench.register; "
                        "repeatable")
    b.add_argument("--plot", metavar="FILE", type=_bench_plot_file,
                   help="write a figure (PNG, PDF or SVG, by the extension): speed ratios, then one panel per "
                        "family and metric against epsilon with 95%% error bars (needs matplotlib)")
    b.add_argument("--list", action="store_true", help="print the registered workload names and stop")
    b.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    b.set_defaults(func=_bench)
    sub.add_parser("audit", help="empirical privacy auditing: every argument after 'audit' goes to dpnoise.audit",
                   add_help=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 for any usage error, printed as one line).

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0 on success.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["audit"]:
            return _audit(argv[1:])
        if argv[:2] == ["bench", "compare"]:
            return _bench_compare(argv[2:])
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
