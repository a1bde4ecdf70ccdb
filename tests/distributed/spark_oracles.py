"""One small configuration per registered protocol, for the Spark tests."""
import dpnoise
from dpnoise.ldp import FrequencyOracle


def oracles():
    return {
        "grr": FrequencyOracle("grr", 2.0, 20),
        "oue": FrequencyOracle("oue", 1.0, 100),
        "sue": FrequencyOracle("sue", 1.0, 70),
        "olh": FrequencyOracle("olh", 1.0, 300),
        "flh": FrequencyOracle("flh", 1.0, 300),
        "hadamard": FrequencyOracle("hadamard", 1.0, 1000),
        "cms": FrequencyOracle("cms", 2.0, 500, hashes=16, width=64),
        "hcms": FrequencyOracle("hcms", 2.0, 500, hashes=16, width=64),
        "zmatrix": FrequencyOracle("zmatrix", 1.0, 1000),
    }


def reports(fo, n, seed=7):
    import numpy as np

    items = np.random.default_rng(seed).integers(0, fo.domain_size, n)
    return fo.client(dpnoise.default_rng(seed), allow_insecure=True).privatize(items)


#: the routes of aggregate_reports for a DataFrame whose aggregator state is a count table
COUNT_ROUTES = ("jvm_counts", "count_table", "map_in_arrow")


def force_route(monkeypatch, route):
    """Make aggregate_reports take ``route`` for a count-table protocol: the JVM helper (the
    default; fails the test when it cannot load: CI has a JDK), Spark's groupBy (helper
    switched off), or mapInArrow (no count table)."""
    from dpnoise.distributed.spark import _count_table

    if route == "jvm_counts":
        require_javac()
        monkeypatch.delenv("DPNOISE_SPARK_JVM_COUNTS", raising=False)
        return
    monkeypatch.setenv("DPNOISE_SPARK_JVM_COUNTS", "0")
    if route == "map_in_arrow":
        monkeypatch.setattr(_count_table, "key_space", lambda oracle: None)


def require_javac():
    """Skip the test when no javac is found, unless DPNOISE_REQUIRE_SPARK=1 (CI has a JDK: the
    test then runs and fails if the helper cannot be built)."""
    import os

    import pytest

    from dpnoise.distributed.spark import _jvm_counts

    if os.environ.get("DPNOISE_REQUIRE_SPARK") == "1":
        return
    try:
        _jvm_counts._javac()
    except RuntimeError as exc:
        pytest.skip(str(exc))


def default_count_route():
    """The route a small count table takes by default: ``"jvm_counts"`` where javac is found
    (always under DPNOISE_REQUIRE_SPARK=1: CI installs a JDK), else Spark's ``"count_table"``."""
    import os

    from dpnoise.distributed.spark import _jvm_counts

    try:
        _jvm_counts._javac()
    except RuntimeError:
        return "count_table" if os.environ.get("DPNOISE_REQUIRE_SPARK") != "1" else "jvm_counts"
    return "jvm_counts"
