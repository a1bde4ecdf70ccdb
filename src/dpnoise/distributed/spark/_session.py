"""A local Spark session that works offline, for tests, benchmarks and the demo."""
from __future__ import annotations

import os
import shutil
import sys
from typing import Any


def java_available() -> str | None:
    """The java executable Spark will use (JAVA_HOME/bin/java, else java on PATH), or None.

    Returns
    -------
    str or None
        The executable's path.
    """
    return jdk_tool("java")


def jdk_tool(name: str) -> str | None:
    """The JDK executable ``name`` (``java``, ``javac``): JAVA_HOME/bin/<name>, else on PATH, or
    None."""
    home = os.environ.get("JAVA_HOME")
    if home:
        exe = os.path.join(home, "bin", name)
        if os.access(exe, os.X_OK):
            return exe
    return shutil.which(name)


def _package_root() -> str:
    import dpnoise

    return os.path.dirname(os.path.dirname(os.path.abspath(dpnoise.__file__)))


def local_session(master: str = "local[2]", app_name: str = "dpnoise", *, driver_memory: str = "2g",
                  shuffle_partitions: int = 4, **conf: Any) -> Any:
    """A SparkSession on this machine: ``master`` (default ``local[2]``; ``local[2, 4]`` lets
    each task fail up to 4 times), loopback binding (127.0.0.1, no network needed), no UI, few
    shuffle partitions, Arrow on (2^18 rows per batch), and the current Python (``sys.executable``) with this dpnoise
    on its path for the workers. Needs Java 17 or later (JAVA_HOME or ``java`` on PATH) and
    ``pip install 'dpnoise[spark]'``. Extra Spark settings go in ``conf`` (dots as ``__``, e.g.
    ``spark__task__maxFailures="2"``, or pass a dict as ``conf={...}``).

    Parameters
    ----------
    master : str, default "local[2]"
        The Spark master.
    app_name : str, default "dpnoise"
        The application's name.
    driver_memory : str, default "2g"
        ``spark.driver.memory``.
    shuffle_partitions : int, default 4
        ``spark.sql.shuffle.partitions``.
    **conf
        More Spark settings.

    Returns
    -------
    pyspark.sql.SparkSession
        The session (stop it when done).

    Raises
    ------
    RuntimeError
        Without Java.
    ImportError
        Without pyspark.
    """
    from pyspark.sql import SparkSession

    if java_available() is None:
        raise RuntimeError("Spark needs Java 17 or later: set JAVA_HOME or put java on PATH")
    root = _package_root()
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = {
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.default.parallelism": "2",
        "spark.driver.memory": driver_memory,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # rows per Arrow batch handed to mapInArrow (Spark's default 10,000 makes the per-batch
        # Python overhead dominate; 2^18 rows of reports is a few MB)
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(1 << 18),
        "spark.executorEnv.PYTHONPATH": os.environ["PYTHONPATH"],
        "spark.pyspark.python": sys.executable,
    }
    extra = conf.pop("conf", None) or {}
    settings.update({k.replace("__", "."): str(v) for k, v in conf.items()})
    settings.update({k: str(v) for k, v in extra.items()})
    builder = SparkSession.builder.master(master).appName(app_name)
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# Spark's FileSystem based checkpoint manager (docs/scaling.md recommends it for a local
# checkpoint): its class in Spark 4, then in Spark 3
FILESYSTEM_CHECKPOINT_MANAGERS = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
    "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager",
)


def filesystem_checkpoint_manager(spark: Any) -> str | None:
    """The class name of the FileSystem based checkpoint manager in ``spark``'s JVM, for
    ``spark.sql.streaming.checkpointFileManagerClass``; None when this Spark has neither."""
    for name in FILESYSTEM_CHECKPOINT_MANAGERS:
        try:
            spark._jvm.java.lang.Class.forName(name)
            return name
        except Exception:  # not in this Spark
            continue
    return None
