"""The trust model of dpnoise's JVM helper jar (issue #33, item 1; docs/security.md, "The Spark
JVM helper's trust model"). The JVM runs the jar's code, so it is used only if nobody but this
user (or root) could have written it or renamed any directory above it, and what Spark is given
is a private copy of the bytes that were checked. "Another user" is simulated with permission
bits and, since the tests may run as root, with os.chown to an unused uid."""
import hashlib
import io
import os
import shutil
import stat
import subprocess
import types
import zipfile

import pytest

pytest.importorskip("pyspark")

from dpnoise.ldp import FrequencyOracle  # noqa: E402

from spark_oracles import force_route, reports, require_javac  # noqa: E402

OTHER_UID = 54_321  # no account has it on the test machines; only its being someone else matters
BASETEMP = []  # pytest's base temporary directory (tmp_path is just below it)


@pytest.fixture(autouse=True)
def _basetemp(tmp_path_factory):
    BASETEMP[:] = [tmp_path_factory.getbasetemp().resolve()]


@pytest.fixture(scope="module")
def built_jar(tmp_path_factory):
    """(the jar's file name, its bytes), compiled once for the module."""
    require_javac()
    from dpnoise.distributed.spark import _jvm_counts

    root = tmp_path_factory.mktemp("built")
    old = os.environ.get("DPNOISE_CACHE_DIR")
    os.environ["DPNOISE_CACHE_DIR"] = str(root)
    try:
        jar = _jvm_counts.jvm_helper_jar()
    finally:
        if old is None:
            del os.environ["DPNOISE_CACHE_DIR"]
        else:
            os.environ["DPNOISE_CACHE_DIR"] = old
    with open(jar, "rb") as fh:
        return os.path.basename(jar), fh.read()


def plant_cache(root, built, data=None):
    """A cache at ``root`` (under the test's tmp_path) holding the built jar (or ``data`` under
    its name): every directory from the test's tmp_path down made 0700, the jar 0644, as dpnoise
    makes them whatever the umask. Returns the jar's path."""
    name, original = built
    spark_dir = root / "spark"
    spark_dir.mkdir(parents=True, exist_ok=True)
    for d in [spark_dir, *spark_dir.parents]:
        if d.resolve().parent == BASETEMP[0]:  # tmp_path itself: pytest made it 0700
            break
        os.chmod(d, 0o700)
    jar = spark_dir / name
    jar.write_bytes(original if data is None else data)
    os.chmod(jar, 0o644)
    return jar


def no_javac(monkeypatch, tmp_path):
    """A cached jar needs no javac: without one, a refused cache cannot be rebuilt behind the
    test's back (the refusal is the checks', not a build's)."""
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))


def planted_jar(original):
    """A jar that passes every check but the bytes' identity: the helper's jar plus an entry."""
    buf = io.BytesIO(original)
    with zipfile.ZipFile(buf, "a") as z:
        z.writestr("planted-by-someone-else.txt", "not dpnoise's")
    return buf.getvalue()


# -- every directory from / down -------------------------------------------------------------

@pytest.mark.parametrize("variable", ["DPNOISE_CACHE_DIR", "XDG_CACHE_HOME"])
@pytest.mark.parametrize("mode, owner, why", [
    (0o777, None, "writable by others"),       # anyone can rename the cache below it
    (0o775, None, "writable by others"),       # so can the group
    (0o1777, OTHER_UID, "owned by another user"),  # sticky, but its owner can rename our entries
    (0o755, OTHER_UID, "owned by another user"),
])
def test_a_directory_above_the_cache_that_another_user_controls_is_refused(tmp_path, monkeypatch, built_jar,
                                                                           variable, mode, owner, why):
    """The attack of issue #33: under a cache root whose parent another user can write, that
    user renames the checked ``spark/`` directory and plants a jar. The check covered only the
    jar and ``spark/``, so such a cache was used."""
    from dpnoise.distributed.spark import jvm_helper_jar

    shared = tmp_path / "shared"
    root = shared / "cache" if variable == "DPNOISE_CACHE_DIR" else shared / "xdg" / "dpnoise"
    plant_cache(root, built_jar)
    os.chmod(shared, mode)
    if owner is not None:
        os.chown(shared, owner, -1)
    monkeypatch.delenv("DPNOISE_CACHE_DIR", raising=False)
    monkeypatch.setenv(variable, str(root if variable == "DPNOISE_CACHE_DIR" else root.parent))
    no_javac(monkeypatch, tmp_path)
    with pytest.raises(RuntimeError, match=why) as info:
        jvm_helper_jar()
    assert str(shared) in str(info.value)  # names the directory to fix
    os.chown(shared, os.getuid(), -1)  # so that pytest can clean up


@pytest.mark.parametrize("which", ["cache root", "spark", "jar"])
def test_the_cache_or_jar_owned_by_another_user_is_refused(tmp_path, monkeypatch, built_jar, which):
    from dpnoise.distributed.spark import jvm_helper_jar

    root = tmp_path / "cache"
    jar = plant_cache(root, built_jar)
    target = {"cache root": root, "spark": jar.parent, "jar": jar}[which]
    os.chown(target, OTHER_UID, -1)
    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(root))
    no_javac(monkeypatch, tmp_path)
    with pytest.raises(RuntimeError, match="owned by another user"):
        jvm_helper_jar()
    os.chown(target, os.getuid(), -1)


def test_a_sticky_directory_owned_by_root_above_the_cache_is_accepted(tmp_path, monkeypatch, built_jar):
    """Like /tmp: others can create entries there but cannot rename or remove ours (the sticky
    bit), and the directory's owner, root, can do anything anyway. The cache below it is ours."""
    from dpnoise.distributed.spark import jvm_helper_jar

    if os.getuid() != 0:
        pytest.skip("making a directory owned by root needs root")
    shared = tmp_path / "shared"
    root = shared / "cache"
    jar = plant_cache(root, built_jar)
    os.chmod(shared, 0o1777)
    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(root))
    no_javac(monkeypatch, tmp_path)
    assert jvm_helper_jar() == str(jar)


# -- symbolic links --------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["jar", "spark"])
def test_a_symbolic_link_in_the_cache_is_refused(tmp_path, monkeypatch, built_jar, which):
    """dpnoise never makes a link there: a link to a jar (or to a directory with one) elsewhere
    is refused, even when its target would pass every check."""
    from dpnoise.distributed.spark import jvm_helper_jar

    elsewhere = plant_cache(tmp_path / "elsewhere", built_jar)  # a jar that passes the checks
    root = tmp_path / "cache"
    (root / "spark").mkdir(parents=True)
    os.chmod(root, 0o700)
    if which == "jar":
        os.chmod(root / "spark", 0o700)
        (root / "spark" / elsewhere.name).symlink_to(elsewhere)
    else:
        (root / "spark").rmdir()
        (root / "spark").symlink_to(elsewhere.parent, target_is_directory=True)
    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(root))
    no_javac(monkeypatch, tmp_path)
    with pytest.raises(RuntimeError, match="is a symbolic link"):
        jvm_helper_jar()


def test_a_configured_cache_root_through_a_link_is_resolved_once(tmp_path, monkeypatch, built_jar):
    """The cache root the user configures may go through a link (a cache on another disk): it
    is resolved once, and the jar's path, the one checked and given out, has no link in it."""
    from dpnoise.distributed.spark import jvm_helper_jar

    jar = plant_cache(tmp_path / "real", built_jar)
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(tmp_path / "link"))
    no_javac(monkeypatch, tmp_path)
    assert jvm_helper_jar() == os.path.realpath(jar)


def test_a_foreign_file_at_the_jars_path_is_refused(tmp_path, monkeypatch, built_jar):
    """A damaged or foreign file where the jar should be (ours, not writable by others) was
    handed to Spark as it was; it is refused with a reason naming the path, not its contents."""
    from dpnoise.distributed.spark import jvm_helper_jar

    jar = plant_cache(tmp_path / "cache", built_jar, data=b"SECRET-CONTENTS" * 10)
    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(tmp_path / "cache"))
    no_javac(monkeypatch, tmp_path)
    with pytest.raises(RuntimeError, match="is not dpnoise's JVM helper jar") as info:
        jvm_helper_jar()
    assert str(jar) in str(info.value) and "SECRET" not in str(info.value)


def test_a_fifo_at_the_jars_path_is_refused_without_blocking(tmp_path, monkeypatch, built_jar):
    """Opening a FIFO for reading blocks until a writer comes: the jar is opened non-blocking
    and anything but a regular file refused (the alarm fails the test instead of hanging it)."""
    import signal

    from dpnoise.distributed.spark import jvm_helper_jar

    jar = plant_cache(tmp_path / "cache", built_jar)
    jar.unlink()
    os.mkfifo(jar, 0o600)
    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(tmp_path / "cache"))
    no_javac(monkeypatch, tmp_path)

    def hung(*_):
        raise TimeoutError("opening the jar blocked")
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        with pytest.raises(RuntimeError, match="is not a regular file"):
            jvm_helper_jar()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# -- what Spark is given is what was checked --------------------------------------------------

class FakeSpark:
    """What ``_jvm_counts._load`` touches of a session's py4j gateway. The class is not on the
    classpath; ``addJar`` and the driver's class loader read the jar at the path they are given
    *when Spark would*, after ``before_read`` (the swap) has run."""

    def __init__(self, before_read):
        from dpnoise.distributed.spark import _jvm_counts

        self.read = {}  # who read -> (path, bytes)
        fake = self

        def read(who, path):
            before_read()
            with open(path, "rb") as fh:
                fake.read[who] = (path, fh.read())

        class Loader:
            def __init__(self, urls=None):
                self.urls = urls

        class Helper:
            def version(self):
                return _jvm_counts.VERSION

        def for_name(name, init, loader):
            if loader.urls is None:
                raise RuntimeError("java.lang.ClassNotFoundException: " + name)
            read("driver class loader", loader.urls[0])
            return types.SimpleNamespace(getDeclaredConstructor=lambda _: types.SimpleNamespace(
                newInstance=lambda _: Helper()))

        lang = types.SimpleNamespace(
            Class=types.SimpleNamespace(forName=for_name), Object=object,
            Thread=types.SimpleNamespace(currentThread=lambda: types.SimpleNamespace(
                getContextClassLoader=lambda: Loader())))
        self._jvm = types.SimpleNamespace(java=types.SimpleNamespace(
            lang=lang,
            io=types.SimpleNamespace(File=lambda p: types.SimpleNamespace(
                toURI=lambda: types.SimpleNamespace(toURL=lambda: p))),
            net=types.SimpleNamespace(URL=str, URLClassLoader=lambda urls, parent: Loader(urls))))
        gateway = types.SimpleNamespace(new_array=lambda cls, n: [None] * n)
        jsc = types.SimpleNamespace(sc=lambda: types.SimpleNamespace(addJar=lambda p: read("addJar", p)))
        self.sparkContext = types.SimpleNamespace(_gateway=gateway, _jsc=jsc, applicationId="fake", startTime=0)


def swap_spark_dir(root, name, data):
    """What another user (or a second process) does: rename the checked ``spark/`` directory
    away and plant ``data`` at the jar's path, with permissions that pass every check."""
    os.rename(root / "spark", root / "spark.checked")
    (root / "spark").mkdir(mode=0o700)
    (root / "spark" / name).write_bytes(data)
    os.chmod(root / "spark" / name, 0o644)


@pytest.mark.parametrize("when", ["after the check", "during the check"])
def test_a_jar_swapped_after_the_check_is_not_what_spark_is_given(tmp_path, monkeypatch, built_jar, when):
    """Spark read the jar by its cache path after dpnoise had checked it (the executors fetch
    it before their next task, the driver's class loader opens it lazily): a jar planted at the
    same path meanwhile was what ran. Spark must get the bytes that were checked: swapped after
    the check (before Spark reads) or in the middle of the walk (after ``spark/`` was checked,
    before the jar is opened)."""
    from dpnoise.distributed.spark import _jvm_counts

    name, original = built_jar
    root = tmp_path / "cache"
    plant_cache(root, built_jar)
    planted = planted_jar(original)
    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(root))
    no_javac(monkeypatch, tmp_path)
    monkeypatch.setattr(_jvm_counts, "_in_jvm", {})
    swapped = []

    def swap_once():
        if not swapped:
            swapped.append(True)
            swap_spark_dir(root, name, planted)

    if when == "during the check":
        from dpnoise.distributed.spark import _private_files

        real = _private_files.check_dir_stat

        def check_then_swap(st, path):
            real(st, path)
            if path == str(root / "spark"):
                swap_once()
        monkeypatch.setattr(_private_files, "check_dir_stat", check_then_swap)
    spark = FakeSpark(swap_once)
    _jvm_counts._load(spark)
    assert swapped
    for who in ("addJar", "driver class loader"):
        path, data = spark.read[who]
        assert hashlib.sha256(data).digest() == hashlib.sha256(original).digest(), f"{who} was given another jar"
        assert not path.startswith(str(root))  # a private copy, not the cache's path
    copy = spark.read["addJar"][0]
    folder = os.stat(os.path.dirname(copy))
    assert folder.st_uid == os.getuid() and stat.S_IMODE(folder.st_mode) == 0o700
    shutil.rmtree(os.path.dirname(copy))


def test_a_private_copy_that_changed_is_not_given_to_spark_again(tmp_path, monkeypatch, built_jar):
    """A later SparkContext of the same JVM is given the copy again: its bytes are checked
    against the digest of the bytes that were checked first."""
    from dpnoise.distributed.spark import _jvm_counts

    plant_cache(tmp_path / "cache", built_jar)
    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(tmp_path / "cache"))
    no_javac(monkeypatch, tmp_path)
    copy, digest = _jvm_counts._private_copy()
    assert _jvm_counts._verify_copy(copy, digest) == copy
    os.chmod(copy, 0o600)
    with open(copy, "r+b") as fh:
        fh.seek(10)
        fh.write(b"\0")
    with pytest.raises(RuntimeError, match="changed since it was checked"):
        _jvm_counts._verify_copy(copy, digest)
    os.chmod(copy, 0o666)
    with pytest.raises(RuntimeError, match="writable by others"):
        _jvm_counts._verify_copy(copy, digest)
    shutil.rmtree(os.path.dirname(copy))
    with pytest.raises(RuntimeError, match="cannot be read again"):
        _jvm_counts._verify_copy(copy, digest)


def test_a_forked_child_leaves_its_parents_copy_alone(tmp_path, monkeypatch, built_jar):
    """The copies are removed at exit by the process that made them: a forked child that exits
    normally runs the parent's exit handlers too, and must not remove the copy the parent's
    JVM still reads."""
    from dpnoise.distributed.spark import _jvm_counts

    plant_cache(tmp_path / "cache", built_jar)
    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(tmp_path / "cache"))
    no_javac(monkeypatch, tmp_path)
    copy, _ = _jvm_counts._private_copy()
    pid = os.fork()
    if pid == 0:  # the child: what its atexit would do, then leave without pytest's handlers
        try:
            for owner in list(_jvm_counts._copies):
                _jvm_counts._remove_copies(owner)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.path.isfile(copy)
    _jvm_counts._copies[os.getpid()].remove(os.path.dirname(copy))
    shutil.rmtree(os.path.dirname(copy))


# -- building ------------------------------------------------------------------------------------

def test_what_is_compiled_is_the_source_that_named_the_jar_and_new_directories_are_private(tmp_path, monkeypatch):
    """The jar is named by a hash of the source's bytes; javac read the source file again by its
    path, so a source changed in between (an upgrade under a running process) was compiled
    under the old name. Here it is made uncompilable while javac starts: the bytes that were
    hashed are compiled all the same. And every directory dpnoise makes for the cache is 0700
    whatever the umask (makedirs gave the parents 0775 under umask 002, which the checks now
    refuse)."""
    require_javac()
    from dpnoise.distributed.spark import _jvm_counts, jvm_helper_jar

    source = tmp_path / "DenseCounts.java"
    shutil.copyfile(_jvm_counts._SOURCE, source)
    original = source.read_bytes()
    monkeypatch.setattr(_jvm_counts, "_SOURCE", str(source))
    real_run = subprocess.run

    def run(cmd, **kw):
        source.write_text("this is not Java")
        return real_run(cmd, **kw)
    monkeypatch.setattr(subprocess, "run", run)
    root = tmp_path / "a" / "b" / "cache"
    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(root))
    old = os.umask(0o002)
    try:
        jar = jvm_helper_jar()
    finally:
        os.umask(old)
    for d in (tmp_path / "a", tmp_path / "a" / "b", root, root / "spark"):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
    with zipfile.ZipFile(jar) as z:
        assert "org/dpnoise/spark/DenseCounts.class" in z.namelist()
    monkeypatch.setattr(subprocess, "run", real_run)
    source.write_bytes(original)  # the source that named the jar: found again, not rebuilt
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    assert jvm_helper_jar() == jar  # accepted again: the checks pass on what dpnoise made


# -- end to end ------------------------------------------------------------------------------------

def test_the_helper_counts_from_a_private_copy_and_a_later_context_survives_a_swapped_cache(spark, monkeypatch):
    """The real session: the helper was loaded from a private copy (not the cache's path) and
    counts; after the cache's ``spark/`` directory is swapped, a later SparkContext of the same
    JVM is given the same checked copy and still counts bit for bit."""
    from dpnoise.distributed.spark import _jvm_counts, aggregate_reports, reports_to_dataframe

    force_route(monkeypatch, "jvm_counts")
    fo = FrequencyOracle("grr", 2.0, 20)
    rep = reports(fo, 200)
    df = reports_to_dataframe(spark, rep, fo, num_partitions=2)
    first = aggregate_reports(df, "report", fo)
    assert first.spark.route == "jvm_counts", first.spark.jvm_helper
    (entry,) = [v for v in _jvm_counts._in_jvm.values() if v[0] is spark.sparkContext._gateway]
    _, _, copy, digest = entry
    cache = _jvm_counts._cache_dir()
    assert copy is not None and not copy.startswith(cache)
    with open(copy, "rb") as fh:
        assert hashlib.sha256(fh.read()).hexdigest() == digest
    if os.path.isdir(cache):  # the cache the copy came from, swapped for a planted jar
        os.rename(cache, cache + ".checked")
        os.mkdir(cache, 0o700)
        with open(os.path.join(cache, os.path.basename(copy)), "wb") as fh:
            fh.write(b"planted")
    try:
        monkeypatch.setattr(_jvm_counts, "_context_key", lambda sc: ("a-later-context", 0))
        again = aggregate_reports(df, "report", fo)
        assert again.spark.route == "jvm_counts", again.spark.jvm_helper
        assert again.to_bytes() == first.to_bytes() == fo.aggregator().add(rep).to_bytes()
    finally:
        if os.path.isdir(cache + ".checked"):
            shutil.rmtree(cache)
            os.rename(cache + ".checked", cache)
