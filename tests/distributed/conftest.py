"""One local Spark session (local[2, 4]: two cores, a failed task retried up to 4 times) for
every Spark test. Skipped with the reason when pyspark/pyarrow or Java is missing, unless
DPNOISE_REQUIRE_SPARK=1 (as .ci/run sets), where a missing piece is a failure."""
import os

import pytest
from spark_available import spark_missing

REQUIRE = os.environ.get("DPNOISE_REQUIRE_SPARK") == "1"


_missing = spark_missing  # one check for every Spark test (tests/spark_available.py)


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
