"""Spark scale-out against one process, in the same run (issue 21, item 4).

N = 2*10^7 Hadamard reports (d = 65,536, ε = 1, Zipf(1.1) items), written once to four Parquet
files (row groups of 2^20 rows, the configuration in the schema metadata), read by:

* one process (the baselines): the same read + add in one Python process, pyarrow reading the
  same files row group by row group into one aggregator, (a) with pyarrow's default thread
  pool (``use_threads=True``: its decoding runs on os.cpu_count() = 2 threads, the conversion
  and add on the one Python thread) and (b) with ``use_threads=False`` (1 thread);
* Spark local[2], Parquet path: ``aggregate_reports(path, ...)``, the executors read the row
  groups themselves with pyarrow (no JVM -> Python conversion): 2 Python workers, each
  ``use_threads=False`` (1 thread each), plus the JVM (scheduling only);
* Spark local[2], DataFrame path: a DataFrame that is not a plain scan
  (``spark.read.parquet(path).where("report IS NOT NULL")``). Hadamard's state is a count
  table over (rows, bits) of 2·D = 131,072 keys: Spark evaluates the DataFrame and
  dpnoise's JVM helper counts each row's key into a dense array per partition in the
  executors' JVM (route ``jvm_counts``; without a JDK it would be ``mapInArrow``: Spark's row
  -> Arrow conversion of 2·10^7 rows, then the same add in 2 Python workers; ``"routes"`` in
  the output says which route each side took). ``test_dataframe_routes`` compares the three
  routes on GRR reports with 1,024 keys. Beside it, each round times a bare ``count()`` of that DataFrame:
  the least any route that lets Spark evaluate the DataFrame can cost (no conversion, no
  Python, no aggregation).

Every side produces the same state (asserted). After two warm-ups of each side, ROUNDS rounds
each time the baselines and the Spark paths back to back; the ratio (single time / Spark
time) is computed within each round against each baseline, and the median and best reported
(targets, against the default-threads baseline (a): Parquet ≥ 1.0, moonshot 1.6; DataFrame ≥
0.3). The machine's load average is recorded beside them.

Peak driver memory vs n: the resident memory of the Python driver (sampled every 5 ms during
``aggregate_reports``, above its level before the call) at N/10 and N reports, and the JVM's
(which in local mode also hosts the executors' JVM side). DPNOISE_BENCH_SPARK_N overrides N.

The malformed-rows cost (10% bad rows against 0%, 2^18 TreeHist rows through the row masks and
one add) is measured in ``test_malformed_rows_cost``.
"""
import functools
import glob
import os
import statistics
import threading
import time

import numpy as np
import pytest

import dpnoise
from conftest import TIMES

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from dpnoise.distributed.spark import _arrow, aggregate_reports, local_session, reports_table  # noqa: E402

N = int(os.environ.get("DPNOISE_BENCH_SPARK_N", 20_000_000))
ROUNDS = int(os.environ.get("DPNOISE_BENCH_SPARK_ROUNDS", 3))
WARMUPS = 2
D, EPS = 65_536, 1.0
FO = dpnoise.ldp.FrequencyOracle("hadamard", epsilon=EPS, domain_size=D)
FILES = 4
W = 1.0 / np.arange(1, D + 1) ** 1.1


def _write(path, n, seed, fo=FO):
    items = np.random.default_rng(seed).choice(D, size=n, p=W / W.sum()).astype(np.int64) % fo.domain_size
    reports = fo.client(dpnoise.default_rng(seed), allow_insecure=True).privatize(items)
    os.makedirs(path)
    table = reports_table(reports, fo)
    for k in range(FILES):  # FILES files, row groups of 2^20
        lo, hi = k * n // FILES, (k + 1) * n // FILES
        pq.write_table(table.slice(lo, hi - lo), os.path.join(path, f"part-{k}.parquet"), row_group_size=1 << 20)
    return fo.aggregator().add(reports).to_bytes()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("spark-bench")
    big, small = str(root / "reports"), str(root / "reports-small")
    want = {big: _write(big, N, 1), small: _write(small, N // 10, 2)}
    spark = local_session("local[2]", "dpnoise-bench", driver_memory="2g")
    yield want, big, small, spark
    spark.stop()


def single_from_parquet(path, use_threads=True, fo=FO):
    """The baseline: one process, pyarrow reads every row group of every file (with its thread
    pool or on this thread), one aggregator: the executors' read + add, in one process."""
    agg = fo.aggregator()
    for f in sorted(glob.glob(os.path.join(path, "*.parquet"))):
        pf = pq.ParquetFile(f)
        for rg in range(pf.num_row_groups):
            table = pf.read_row_group(rg, columns=["report"], use_threads=use_threads)
            rows, good, bad = _arrow.arrow_to_rows(fo, table, "report")
            _arrow.add_rows(agg, fo, rows, good)
    return agg


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _rss(pid):
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


def _read(path):
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


def _tree_cpu_seconds(roots):
    """CPU seconds (user + system) used so far by the processes ``roots`` and all their
    descendants (the local-mode JVM, the PySpark daemon and its reused Python workers)."""
    parent, cpu = {}, {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    def under(pid):
        while pid > 1:
            if pid in roots:
                return True
            pid = parent.get(pid, 0)
        return False
    return sum(c for pid, c in cpu.items() if under(pid))


def _peak_rss_during(fn, pids):
    """(fn(), peak RSS above the level at the start, per pid), sampling every 5 ms."""
    base = {p: _rss(p) for p in pids}
    peak = dict(base)
    done = threading.Event()

    def sample():
        while not done.is_set():
            for p in pids:
                peak[p] = max(peak[p], _rss(p))
            time.sleep(0.005)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        out = fn()
    finally:
        done.set()
        t.join()
    return out, {p: peak[p] - base[p] for p in pids}


def test_spark_vs_single_process(benchmark, setup):
    want, path, small, spark = setup
    not_plain = lambda: spark.read.parquet(path).where("report IS NOT NULL")  # noqa: E731
    sides = {
        "single process (pyarrow, 2 threads)": lambda: single_from_parquet(path),
        "single process (pyarrow, 1 thread)": lambda: single_from_parquet(path, use_threads=False),
        "spark parquet path": lambda: aggregate_reports(path, "report", FO, spark=spark),
        "spark dataframe (not a plain scan)": lambda: aggregate_reports(not_plain(), "report", FO),
    }
    for _ in range(WARMUPS):  # warm-up: JVM (its JIT needs more than one job), Python workers, imports
        for fn in sides.values():
            assert fn().to_bytes() == want[path]
        assert not_plain().count() == N
    times = {k: [] for k in sides}
    loads, routes, floor = [], {}, []
    for _ in range(ROUNDS):
        loads.append(os.getloadavg()[0])
        for key, fn in sides.items():
            agg, t = _timed(fn)
            assert agg.to_bytes() == want[path]
            times[key].append(t)
            routes[key] = agg.spark.route if hasattr(agg, "spark") else "pyarrow, one process"
        # the floor of any route that lets Spark evaluate the DataFrame: a bare count() of it
        # (no conversion, no Python, no aggregation), timed in the same round
        floor.append(_timed(lambda: not_plain().count())[1])
    agg = benchmark.pedantic(sides["spark parquet path"], rounds=1, iterations=1)
    assert agg.spark.source == "parquet"
    assert routes["spark dataframe (not a plain scan)"] == "jvm_counts", "the JVM helper did not load (no JDK?)"
    ratios = {(k, b): [s / t for s, t in zip(times[b], times[k])]
              for k in sides if k.startswith("spark") for b in sides if b.startswith("single")}
    for key, values in times.items():
        TIMES[f"spark bench {N}: {key} (median)"] = statistics.median(values)

    # peak driver memory vs n (Python driver, and the local-mode JVM)
    jvm = spark.sparkContext._gateway.proc.pid if getattr(spark.sparkContext._gateway, "proc", None) else None
    pids = [os.getpid()] + ([jvm] if jvm else [])
    # CPU seconds each side uses (this process and the JVM's tree: its executor threads, the
    # PySpark daemon and the Python workers), against its wall time: how many cores it got
    cpu = {}
    for key, fn in sides.items():
        before, t0 = _tree_cpu_seconds(set(pids)), time.perf_counter()
        fn()
        cpu[key] = (round(_tree_cpu_seconds(set(pids)) - before, 3), round(time.perf_counter() - t0, 3))
    memory = {}
    for label, p, n in (("n/10", small, N // 10), ("n", path, N)):
        agg_m, peaks = _peak_rss_during(functools.partial(aggregate_reports, p, "report", FO, spark=spark), pids)
        assert agg_m.to_bytes() == want[p] and agg_m.n == n
        memory[label] = (n, peaks)
    info = {
        "n": N, "rounds": ROUNDS, "load_average_1min": loads, "pyarrow_cpu_count": pa.cpu_count(),
        # 1: the kernel shares the CPU between sessions, not threads; this process, the JVM and
        # its Python workers are one session, so under contention Spark's 2 workers together
        # get what the one-process baseline gets alone
        "sched_autogroup_enabled": _read("/proc/sys/kernel/sched_autogroup_enabled"),
        "routes": routes,
        "seconds": {k: [round(x, 3) for x in v] for k, v in times.items()},
        **{f"ratio {k} / {b} (median, best, all)": (round(statistics.median(v), 3), round(max(v), 3),
                                                     [round(x, 3) for x in v]) for (k, b), v in ratios.items()},
        "jvm floor: bare count() of the dataframe, seconds": [round(x, 3) for x in floor],
        "ratio bare count() / single process (pyarrow, 2 threads) (median, best)": (
            round(statistics.median(a / b for a, b in zip(times["single process (pyarrow, 2 threads)"], floor)), 3),
            round(max(a / b for a, b in zip(times["single process (pyarrow, 2 threads)"], floor)), 3)),
        "tasks_parquet": agg.spark.partitions,
        "cpu_seconds_and_wall_seconds_one_call": cpu,
        "driver_python_peak_rss_above_start_bytes": {k: (n, v[os.getpid()]) for k, (n, v) in memory.items()},
        "jvm_peak_rss_above_start_bytes": {k: (n, v.get(jvm)) for k, (n, v) in memory.items()} if jvm else None,
        "state_bytes": len(want[path]),
    }
    benchmark.extra_info.update({k: str(v) for k, v in info.items()})
    print("\n" + "\n".join(f"  {k}: {v}" for k, v in info.items()))


def test_dataframe_routes(benchmark, setup, tmp_path, monkeypatch):
    """The three routes of a DataFrame that is not a plain scan, in one run: N/5 GRR reports
    (d = 1,024, a count table of 1,024 keys) counted in the JVM by dpnoise's helper
    (``jvm_counts``: dense arrays), by Spark's groupBy (``count_table``, the helper switched
    off), and through ``mapInArrow`` (no count table), against one process reading the same
    files with pyarrow (2 threads). Same state asserted; ratios within each round."""
    from dpnoise.distributed.spark import _count_table

    spark = setup[3]
    grr = dpnoise.ldp.FrequencyOracle("grr", EPS, 1024)
    path = str(tmp_path / "grr")
    want = _write(path, N // 5, 3, grr)
    df = lambda: spark.read.parquet(path).where("report IS NOT NULL")  # noqa: E731
    key_space = _count_table.key_space

    def route(name):
        monkeypatch.setenv("DPNOISE_SPARK_JVM_COUNTS", "1" if name == "jvm_counts" else "0")
        monkeypatch.setattr(_count_table, "key_space", key_space if name != "map_in_arrow" else (lambda oracle: None))
        return aggregate_reports(df(), "report", grr)

    sides = {"single process (pyarrow, 2 threads)": lambda: single_from_parquet(path, fo=grr),
             **{f"spark dataframe, {name}": (lambda name=name: route(name))
                for name in ("jvm_counts", "count_table", "map_in_arrow")}}
    times, routes, loads = {k: [] for k in sides}, {}, []
    for r in range(WARMUPS + ROUNDS):
        loads.append(os.getloadavg()[0])
        for key, fn in sides.items():
            agg, t = _timed(fn)
            assert agg.to_bytes() == want
            routes[key] = agg.spark.route if hasattr(agg, "spark") else "pyarrow, one process"
            if r >= WARMUPS:
                times[key].append(t)
    for name in ("jvm_counts", "count_table", "map_in_arrow"):
        assert routes[f"spark dataframe, {name}"] == name
    benchmark.pedantic(sides["spark dataframe, jvm_counts"], rounds=1, iterations=1)
    base = times["single process (pyarrow, 2 threads)"]
    info = {"n": N // 5, "load_average_1min": loads, "routes": routes,
            "seconds": {k: [round(x, 3) for x in v] for k, v in times.items()},
            **{f"ratio {k} / one process (median, all)": (round(statistics.median([b / t for b, t in zip(base, v)]), 3),
                                                          [round(b / t, 3) for b, t in zip(base, v)])
               for k, v in times.items() if k.startswith("spark")}}
    benchmark.extra_info.update({k: str(v) for k, v in info.items()})
    print("\n" + "\n".join(f"  {k}: {v}" for k, v in info.items()))


def test_malformed_rows_cost(benchmark):
    """2^18 TreeHist rows (64-bit items) through arrow_to_rows (row masks) and one add: 10% bad
    rows (out-of-range groups, indices and values; nulls) against 0%, same run."""
    hh = dpnoise.ldp.HeavyHitters("treehist", 4.0, item_bits=64)
    n = 1 << 18
    items = np.random.default_rng(4).integers(0, 1 << 40, n, dtype=np.int64).astype(np.uint64)
    rep = hh.client(dpnoise.default_rng(4), allow_insecure=True).privatize(items)
    good = reports_table(rep, hh).column(0).combine_chunks()
    flat = {f: good.field(f).to_numpy().copy() for f in ("groups", "indices", "values")}
    bad_rows = np.random.default_rng(5).choice(n, n // 10, replace=False)
    for k, name in enumerate(("groups", "indices", "values")):
        flat[name][bad_rows[k::4]] = 1 << 40
    mask = np.ones(n, dtype=bool)
    mask[bad_rows[3::4]] = False
    arrays = [pa.array(flat[name], mask=~mask if name == "values" else None) for name in ("groups", "indices", "values")]
    bad = pa.StructArray.from_arrays(arrays, names=["groups", "indices", "values"])

    def ingest(column):
        agg = hh.aggregator()
        rows, n_good, n_bad = _arrow.arrow_to_rows(hh, column)
        _arrow.add_rows(agg, hh, rows, n_good)
        return n_bad

    t = {}
    for label, column in (("0%", good), ("10%", bad), ("0%", good), ("10%", bad)):
        n_bad, t[label] = _timed(functools.partial(ingest, column))
    assert ingest(bad) == n // 10 and ingest(good) == 0
    benchmark.pedantic(lambda: ingest(bad), rounds=1, iterations=1)
    info = {"rows": n, "seconds_0pct_bad": t["0%"], "seconds_10pct_bad": t["10%"], "ratio": t["10%"] / t["0%"]}
    benchmark.extra_info.update(info)
    print("\n" + "\n".join(f"  {k}: {v}" for k, v in info.items()))
