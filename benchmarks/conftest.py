"""Shared bookkeeping for the benchmark suites: every timing of a session is kept so that
ratios are computed between measurements taken in the same run."""
import pytest

RESULTS: dict = {}
TIMES: dict = {}  # wall-clock seconds of one call (for things that are not sample streams)
# (key, base, target or None) of every ratio a suite checked or showed this session, in order:
# the terminal summary prints them (a suite declares them through assert_targets; this file
# imports no test module)
RATIOS: list = []


def record(benchmark, key, fn, n, rounds=5):
    """Run fn under pytest-benchmark and remember the best time per sample for key."""
    out = benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=1)
    if not benchmark.disabled and benchmark.stats is not None:
        RESULTS[key] = benchmark.stats.stats.min / n
        benchmark.extra_info["samples_per_second"] = n / benchmark.stats.stats.min
    return out


def record_time(benchmark, key, fn, rounds=3):
    """Run fn under pytest-benchmark and remember its best wall time (seconds) for key."""
    out = benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=0)
    if not benchmark.disabled and benchmark.stats is not None:
        TIMES[key] = benchmark.stats.stats.min
    return out


def throughput(key):
    return 1.0 / RESULTS[key] if key in RESULTS else None


def ratio(key, base):
    """Throughput of key / throughput of base, both measured in this session (None if either is not)."""
    return RESULTS[base] / RESULTS[key] if key in RESULTS and base in RESULTS else None


def assert_targets(request, rates=(), ratios=(), seconds=(), shown=()):
    """The one check of a suite's targets, each measured in this session:

    rates    (key, least items per second)            from RESULTS
    ratios   (key, base, least throughput(key) / throughput(base))
    seconds  (key, most seconds of one call)          from TIMES
    shown    (key, base): ratios printed in the summary, not checked

    Every ratio (checked or shown) is printed in the terminal summary with its target.
    Skips when benchmarks are disabled (no timings) or when a key was not measured in this
    session (run the whole file); prints every figure beside its target; fails naming each miss.
    """
    for entry in [tuple(r) for r in ratios] + [(a, b, None) for a, b in shown]:
        if entry not in RATIOS:
            RATIOS.append(entry)
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("benchmarks disabled: no timings to compare")
    needed = [k for k, _ in rates] + [k for a, b, _ in ratios for k in (a, b)]
    missing = [k for k in needed if k not in RESULTS] + [k for k, _ in seconds if k not in TIMES]
    if missing:
        pytest.skip(f"run the whole file to compare: {missing[0]!r} not measured")
    checks = [(f"{k}: {throughput(k):.3g}/s", throughput(k) >= least, f">= {least:.3g}/s") for k, least in rates]
    checks += [(f"{a} / {b} = {ratio(a, b):.2f}", ratio(a, b) >= least, f">= {least}") for a, b, least in ratios]
    checks += [(f"{k}: {TIMES[k]:.3g} s", TIMES[k] <= most, f"<= {most:g} s") for k, most in seconds]
    print("\n" + "\n".join(f"{text} (target {target})" for text, _, target in checks))
    misses = [f"{text}, target {target}" for text, ok, target in checks if not ok]
    assert not misses, "; ".join(misses)


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    if TIMES:
        tr.section("dpnoise timings (best of rounds, same run)")
        for key in sorted(TIMES):
            tr.write_line(f"  {key:60s} {TIMES[key]:9.4f} s")
    if not RESULTS:
        return
    tr.section("dpnoise throughput (best of rounds, same run)")
    for key in sorted(RESULTS):
        tr.write_line(f"  {key:40s} {1.0 / RESULTS[key] / 1e6:10.3f} M samples/s")
    for line in ratio_lines():
        tr.write_line(line)


def ratio_lines():
    """The summary's lines: every ratio a suite checked or showed (see assert_targets), measured."""
    lines = []
    for a, b, target in RATIOS:
        r = ratio(a, b)
        if r is not None:
            tgt = f"[>= {target}]" if target else ""
            lines.append(f"    {a:32s} / {b:28s} = {r:8.2f}  {tgt}")
    return ["  ratios (target in brackets):"] + lines if lines else []


@pytest.fixture
def results():
    return RESULTS
