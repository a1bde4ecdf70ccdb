"""Shared bookkeeping for the benchmark suites: every timing of a session is kept so that
ratios are computed between measurements taken in the same run."""
import pytest

RESULTS: dict = {}
TIMES: dict = {}  # wall-clock seconds of one call (for things that are not sample streams)


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
    try:
        from test_bench_samplers import ratio_lines
    except ImportError:
        return
    for line in ratio_lines():
        tr.write_line(line)


@pytest.fixture
def results():
    return RESULTS
