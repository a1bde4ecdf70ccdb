"""dpnoise's JVM helper for Spark: dense per-partition key counts in the executors' JVM.

A DataFrame that is not a plain Parquet scan has to be evaluated by Spark. When the
aggregator's state is a count table over the report fields (Hadamard, GRR, HCMS), the fastest
thing Spark can do with it is count each row's key into one dense array per partition in the
JVM, where the rows already are, and tree-reduce the arrays: no hash aggregation (which slows
with the number of keys) and no row converted to Arrow for Python. Spark has no built-in
aggregate that does that, so dpnoise carries one small Java class
(``java/DenseCounts.java``), compiled on first use with the ``javac`` of the machine's JDK
against pyspark's own jars, cached (``$DPNOISE_CACHE_DIR``, else ``$XDG_CACHE_HOME/dpnoise``,
else ``~/.cache/dpnoise``), and added to the session with ``SparkContext.addJar`` (which ships
it to the executors). The JVM runs that code, so the jar is used only if nobody but this user
(or root) could have written it or renamed a directory above it (``_private_files``), and what
Spark is given is a private copy of the bytes that were checked, not the cache's path
(docs/security.md, "The Spark JVM helper's trust model"). Without a JDK (a JRE only), or with
``DPNOISE_SPARK_JVM_COUNTS=0``, :func:`aggregate_reports` takes its other routes;
``agg.spark.route`` says which ran.

On a cluster, build the jar once (:func:`jvm_helper_jar`) and pass it with ``--jars``; it is
found on the classpath then and never compiled or added again."""
from __future__ import annotations

import atexit
import hashlib
import io
import math
import os
import shutil
import subprocess
import tempfile
import threading
import zipfile
from typing import Any

import numpy as np

from . import _private_files
from ._session import jdk_tool

CLASS_NAME = "org.dpnoise.spark.DenseCounts"
#: the answer format of the Java class this module understands (its VERSION)
VERSION = 2
#: the largest key space counted this way: 2^22 keys are a 16 MiB int array per task and a
#: 32 MiB long array per partial result
MAX_KEYS = 1 << 22
_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java", "DenseCounts.java")
_ENV_SWITCH = "DPNOISE_SPARK_JVM_COUNTS"

_lock = threading.Lock()
#: per SparkContext (its application id and start time): the helper object, or why not
_loaded: dict[tuple[str, int], tuple[Any, str]] = {}
#: per driver JVM (its py4j gateway's id) and class name: (the gateway, kept alive so that its id
#: is not reused; the helper object; the private copy of the jar it was loaded from and that
#: copy's SHA-256, both None when on the classpath).
#: One class per JVM: py4j caches methods by class *name*, so a second DenseCounts class (a new
#: class loader for a new SparkContext) would be called through the first one's methods
_in_jvm: dict[tuple[int, str], tuple[Any, Any, str | None, str | None]] = {}


class HelperUnavailable(RuntimeError):
    """The JVM helper cannot be built or loaded here (the reason is the message)."""


def _javac() -> str:
    exe = jdk_tool("javac")
    if exe is None:
        raise HelperUnavailable("javac was not found (JAVA_HOME/bin/javac or on PATH): dpnoise's JVM helper needs a "
                                "JDK, not only a JRE")
    return exe


def _spark_jars() -> str:
    """The directory of the jars to compile against: $SPARK_HOME/jars, else pyspark's own."""
    home = os.environ.get("SPARK_HOME")
    if home and os.path.isdir(os.path.join(home, "jars")):
        return os.path.join(home, "jars")
    import pyspark

    jars = os.path.join(os.path.dirname(os.path.abspath(pyspark.__file__)), "jars")
    if not os.path.isdir(jars):
        raise HelperUnavailable(f"Spark's jars were not found (tried $SPARK_HOME/jars and {jars})")
    return jars


def _cache_dir() -> str:
    root = os.environ.get("DPNOISE_CACHE_DIR")
    if not root:
        root = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                            "dpnoise")
    # absolute: the path goes to the JVM, whose working directory is not Python's after a chdir;
    # resolved once: the symbolic links of the configured root are followed here and nowhere else
    # (below it every component is opened with O_NOFOLLOW and checked, see _private_files)
    return os.path.join(os.path.realpath(os.path.abspath(root)), "spark")


def jvm_helper_jar() -> str:
    """The path of dpnoise's JVM helper jar for Spark, compiled now if it is not cached yet.

    The jar holds one class (``org.dpnoise.spark.DenseCounts``: dense per-partition counts of a
    key column, tree-reduced). :func:`aggregate_reports` builds and adds it by itself; call this
    to build it ahead of time, e.g. to ship it to a cluster with ``spark-submit --jars``.

    The jar is used only if nobody but this user (or root) could have written it or renamed
    any directory above it: every directory from ``/`` down is owned by this user or root and
    not writable by group or others (unless sticky and owned by root, like ``/tmp``), and no
    component is a symbolic link (the configured cache root is resolved once). See
    docs/security.md, "The Spark JVM helper's trust model".

    Returns
    -------
    str
        The jar's path, under ``$DPNOISE_CACHE_DIR`` (else ``$XDG_CACHE_HOME/dpnoise``, else
        ``~/.cache/dpnoise``)``/spark/``, named by a hash of the source and of the Spark jars it
        was compiled against.

    Raises
    ------
    RuntimeError
        No ``javac`` (a JDK is needed, a JRE is not enough), no Spark jars, a cache directory
        that cannot be made or written, a cached jar or a directory above it that another user
        owns or could write, or a symbolic link on the way (the message names the path), or
        the compiler failed (its first lines are in the message).
    """
    return _checked_jar()[0]


def _checked_jar() -> tuple[str, bytes]:
    """(the jar's path, its bytes as read through the checked walk), built first if needed."""
    try:
        return _cached_or_built_jar()
    except _private_files.UntrustedPath as exc:
        raise HelperUnavailable(_refusal(exc)) from None
    except OSError as exc:  # a cache directory that cannot be made or written, a missing source
        raise HelperUnavailable(f"dpnoise's JVM helper jar could not be built: {exc.strerror or exc} "
                                f"({exc.filename})") from None


def _refusal(exc: OSError) -> str:
    return (f"{exc.filename} {exc.strerror}: dpnoise's JVM helper jar is not used from there, since the JVM would "
            "run code that another user could have replaced; fix its permissions, remove it, or set "
            "DPNOISE_CACHE_DIR to a private directory, and the helper is compiled afresh (docs/security.md)")


def _read(path: str) -> bytes:
    """The file's bytes, read through the checked walk (where the platform allows it)."""
    if _private_files.SUPPORTED:
        return _private_files.read_file(path)[0]
    with open(path, "rb") as fh:  # pragma: no cover - Windows: no user ids, no openat
        return fh.read()


def _cached_or_built_jar() -> tuple[str, bytes]:
    with open(_SOURCE, "rb") as fh:
        source = fh.read()
    jars = _spark_jars()
    stamp = hashlib.sha256(source + "\0".join(sorted(os.listdir(jars))).encode()).hexdigest()[:16]
    out_dir = _cache_dir()
    jar = os.path.join(out_dir, f"dpnoise-spark-{stamp}.jar")
    try:
        data = _read(jar)  # every directory from / and the jar checked first: an untrusted cache is refused
    except FileNotFoundError:
        _build(source, jars, out_dir, jar)
        data = _read(jar)
    _check_contents(data, jar)
    return jar, data


def _build(source: bytes, jars: str, out_dir: str, jar: str) -> None:
    javac = _javac()
    if _private_files.SUPPORTED:
        os.close(_private_files.open_dir(out_dir, create=True))  # made 0700, every directory above checked
    else:  # pragma: no cover - Windows
        os.makedirs(out_dir, mode=0o700, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        # the bytes hashed into the jar's name are the bytes compiled (not the file read again)
        src = os.path.join(tmp, "src", os.path.basename(_SOURCE))
        os.mkdir(os.path.dirname(src), 0o700)
        with open(src, "wb") as fh:
            fh.write(source)
        classes = os.path.join(tmp, "classes")
        # bytecode for Java 8 and later: Spark 3 runs on 8/11/17, Spark 4 on 17+
        cmd = [javac, "--release", "8", "-Xlint:-options", "-nowarn", "-encoding", "UTF-8",
               "-cp", os.path.join(jars, "*"), "-d", classes, src]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise HelperUnavailable(f"javac could not run: {exc}") from None
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()[:5]
            raise HelperUnavailable("javac failed to compile dpnoise's JVM helper: " + " | ".join(lines))
        part = os.path.join(tmp, "helper.jar")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: dpnoise\r\n\r\n")
            for root, _, files in os.walk(classes):
                for name in sorted(files):
                    full = os.path.join(root, name)
                    z.write(full, os.path.relpath(full, classes))
        # not group/other-writable whatever the umask (the checks refuse such a jar)
        os.chmod(part, 0o644)
        os.replace(part, jar)  # atomic: a concurrent build writes the same bytes


def _check_contents(data: bytes, jar: str) -> None:
    """Refuse bytes that are not a readable jar holding the helper's class (a truncated or
    foreign file at the jar's path)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            ok = CLASS_NAME.replace(".", "/") + ".class" in z.namelist() and z.testzip() is None
    except (zipfile.BadZipFile, EOFError, ValueError):
        ok = False
    if not ok:
        raise HelperUnavailable(f"{jar} is not dpnoise's JVM helper jar (a damaged or foreign file): remove it, "
                                "and it is compiled afresh")


#: per process id: the private directories of the copies that process handed to Spark, removed
#: at its exit (a forked child inherits the dict, never removes its parent's copies)
_copies: dict[int, list[str]] = {}


def _remove_copies(owner: int) -> None:
    if os.getpid() != owner:
        return
    for folder in _copies.pop(owner, []):
        shutil.rmtree(folder, ignore_errors=True)


def _private_copy() -> tuple[str, str]:
    """(the path of a private copy of the checked jar's bytes, their SHA-256): what Spark is
    given. The copy is in a new directory only this user can write (``mkdtemp``, mode 0700, in
    the system's temporary directory, whose path passes the same checks), read back and
    compared before it is handed over; a swap of the cache after the check cannot reach it."""
    jar, data = _checked_jar()
    digest = hashlib.sha256(data).hexdigest()
    if not _private_files.SUPPORTED:  # pragma: no cover - Windows
        return jar, digest
    try:
        copy = _private_files.write_private_copy(data, os.path.basename(jar), prefix="dpnoise-spark-")
    except _private_files.UntrustedPath as exc:
        raise HelperUnavailable(_refusal(exc)) from None
    except OSError as exc:
        raise HelperUnavailable(f"dpnoise's JVM helper jar could not be copied: {exc.strerror or exc} "
                                f"({exc.filename})") from None
    if os.getpid() not in _copies:
        atexit.register(_remove_copies, os.getpid())
    _copies.setdefault(os.getpid(), []).append(os.path.dirname(copy))
    return copy, digest


def _verify_copy(copy: str, digest: str) -> str:
    """``copy`` if it still passes the checks and holds the bytes that were checked."""
    if not _private_files.SUPPORTED:  # pragma: no cover - Windows
        return copy
    try:
        _private_files.verify(copy, digest)
    except _private_files.UntrustedPath as exc:
        raise HelperUnavailable(_refusal(exc)) from None
    except OSError as exc:
        raise HelperUnavailable(f"{copy}, which this JVM loaded the helper from, cannot be read again: "
                                f"{exc.strerror or exc}") from None
    return copy


def _context_key(sc: Any) -> tuple[str, int]:
    return (sc.applicationId, int(sc.startTime))


def _load(spark: Any) -> Any:
    """The helper object in ``spark``'s JVM (classpath first; else the jar, built if needed,
    added to the SparkContext for the executors and loaded for the driver). Loaded once per
    driver JVM; a later SparkContext of the same JVM gets the same object, and the same jar."""
    jvm, sc = spark._jvm, spark.sparkContext
    gateway = sc._gateway
    known = _in_jvm.get((id(gateway), CLASS_NAME))
    if known is not None and known[0] is gateway:
        _, obj, jar, digest = known
        if jar is not None and digest is not None:  # a jar is always stored with its digest
            # the executors of the new context read it again: the bytes that were checked
            sc._jsc.sc().addJar(_verify_copy(jar, digest))
        return obj
    no_classes = gateway.new_array(jvm.java.lang.Class, 0)
    no_args = gateway.new_array(jvm.java.lang.Object, 0)

    def instance(loader: Any) -> Any:
        cls = jvm.java.lang.Class.forName(CLASS_NAME, True, loader)
        obj = cls.getDeclaredConstructor(no_classes).newInstance(no_args)
        if obj.version() != VERSION:
            raise HelperUnavailable(f"the JVM helper on the classpath is version {obj.version()}, this dpnoise "
                                    f"needs {VERSION}: rebuild it with jvm_helper_jar()")
        return obj

    context_loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        obj, jar, digest = instance(context_loader), None, None  # already on the classpath (spark-submit --jars)
    except HelperUnavailable:
        raise
    except Exception:
        # Spark is given a private copy of the bytes that were checked, not the cache's path
        jar, digest = _private_copy()
        sc._jsc.sc().addJar(jar)  # the executors fetch it before their next task
        url = jvm.java.io.File(jar).toURI().toURL()
        urls = gateway.new_array(jvm.java.net.URL, 1)
        urls[0] = url
        obj = instance(jvm.java.net.URLClassLoader(urls, context_loader))
    _in_jvm[(id(gateway), CLASS_NAME)] = (gateway, obj, jar, digest)
    return obj


def helper(spark: Any) -> tuple[Any | None, str]:
    """(the helper object in ``spark``'s JVM, "") or (None, why not): switched off by
    ``DPNOISE_SPARK_JVM_COUNTS=0``, a session without a JVM gateway (Spark Connect), no JDK, or
    a failure to build or load it. Loaded once per SparkContext."""
    switch = os.environ.get(_ENV_SWITCH, "1")
    if switch.strip().lower() in ("0", "false", "off", "no"):
        return None, f"{_ENV_SWITCH}={switch}"
    if getattr(spark, "_jvm", None) is None or getattr(spark, "sparkContext", None) is None:
        return None, "the session has no JVM gateway (Spark Connect)"
    with _lock:
        key = _context_key(spark.sparkContext)
        if key not in _loaded:
            try:
                _loaded[key] = (_load(spark), "")
            except HelperUnavailable as exc:
                _loaded[key] = (None, str(exc))
            except Exception as exc:
                _loaded[key] = (None, "the JVM helper did not load: " + " ".join(str(exc).split())[:300])
        return _loaded[key]


def count_dense(obj: Any, keyed: Any, keys: int, depth: int) -> tuple[np.ndarray, int]:
    """(counts of keys 0..keys-1 then of the malformed rows, tasks): Spark evaluates ``keyed``
    (a DataFrame whose only column is the bigint key) and the helper ``obj`` counts its rows
    per key, one dense array per partition, tree-reduced with ``depth``."""
    if not 1 <= keys <= MAX_KEYS:
        raise ValueError(f"keys must be in [1, {MAX_KEYS}], got {keys}")
    from py4j.protocol import Py4JError, Py4JJavaError

    rows = keyed._jdf.queryExecution().toRdd()
    partitions = int(rows.getNumPartitions())
    if partitions == 0:  # df.limit(0): nothing to count (and a --jars helper of before 0 partitions worked)
        return np.zeros(keys + 1, dtype=np.int64), 0
    # at most ~16 partial arrays per level of the tree (each keys + 1 longs: 32 MiB at 2^22 keys)
    depth = max(depth, math.ceil(math.log(partitions, 16)) if partitions > 1 else 1)
    try:
        raw = obj.count(rows, keys, depth)
    except Py4JJavaError:
        raise  # the job's failure: run_job makes it one line
    except Py4JError as exc:  # py4j itself (a reflection or connection failure): no Java stack
        lines = [line.strip() for line in str(exc).splitlines() if line.strip() and not line.startswith("\tat ")]
        raise RuntimeError("the JVM helper could not be called: " + " ".join(lines)[:300]) from None
    counts = np.frombuffer(bytes(raw), dtype="<i8")
    if counts.shape[0] != keys + 1:
        raise RuntimeError(f"the JVM helper returned {counts.shape[0]} counts for {keys} keys")
    return counts.astype(np.int64, copy=False), partitions
