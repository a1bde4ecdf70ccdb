"""One local Spark session (local[2, 4]: two cores, a failed task retried up to 4 times) for
every Spark test. Skipped with the reason when pyspark/pyarrow or Java is missing, unless
DPNOISE_REQUIRE_SPARK=1 (as .ci/run sets), where a missing piece is a failure."""
import importlib.util
import os
import shutil

import pytest

REQUIRE = os.environ.get("DPNOISE_REQUIRE_SPARK") == "1"


def _missing():
    for mod in ("pyspark", "pyarrow", "pandas"):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed (pip install 'dpnoise[spark]')"
    home = os.environ.get("JAVA_HOME")
    if not (home and os.access(os.path.join(home, "bin", "java"), os.X_OK)) and shutil.which("java") is None:
        return "Java is not installed (Spark needs Java 17+: set JAVA_HOME or put java on PATH)"
    return None


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    # dpnoise's JVM helper jar is compiled into this run's own cache, not the user's
    os.environ.setdefault("DPNOISE_CACHE_DIR", str(tmp_path_factory.mktemp("dpnoise-cache")))
    reason = _missing()
    if reason:
        if REQUIRE:
            pytest.fail(f"DPNOISE_REQUIRE_SPARK=1 but {reason}")
        pytest.skip(reason)
    import warnings

    from dpnoise.distributed.spark import local_session

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyspark's own start-up warnings
        session = local_session("local[2, 4]", "dpnoise-tests", driver_memory="1g")
    yield session
    session.stop()
