"""Files that only this user (or root) can have written, reached without following links.

The JVM runs the code of dpnoise's helper jar, so the jar is trusted only if nobody else could
have changed it, nor any directory through which its path is resolved: another user who can
write a directory on the path can rename what is below it and plant a file of their own at the
same path. The rule (docs/security.md, "The Spark JVM helper's trust model"):

* every directory from ``/`` down to the file is owned by this user or by root, and is not
  writable by group or others, unless it is sticky *and* owned by root (``/tmp``: others can
  create entries there but cannot rename or remove ours);
* the file is a regular file owned by this user or by root, not writable by group or others;
* no component is a symbolic link (the cache root that the user configures is resolved once,
  with :func:`os.path.realpath`, before the walk; every component is then opened with
  ``O_NOFOLLOW`` relative to its checked parent, so a component swapped after its check is
  never the one read).

The walk holds a file descriptor for each checked directory and opens the next component
relative to it (``openat``): what is checked is what is read, whatever happens to the names
meanwhile. Where the platform has no ``openat``/``O_NOFOLLOW`` or no user ids (Windows) the checks
are not made (the helper is a convenience; Spark's other routes need no jar).
"""
from __future__ import annotations

import errno
import hashlib
import os
import stat

#: whether this platform can do the checked walk (user ids, openat, O_NOFOLLOW, O_DIRECTORY)
SUPPORTED = (hasattr(os, "getuid") and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")
             and os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: a FIFO at the file's path is refused by the checks instead of blocking the open
_FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class UntrustedPath(OSError):
    """A path that another user could have changed, or that goes through a symbolic link (the
    message names the path and the reason, never the file's contents)."""


def _trusted_owner(uid: int) -> bool:
    return uid == os.getuid() or uid == 0


def check_dir_stat(st: os.stat_result, path: str) -> None:
    """Refuse a directory another user owns or could write (see the module's rule)."""
    if not stat.S_ISDIR(st.st_mode):
        raise UntrustedPath(errno.ENOTDIR, "is not a directory", path)
    if not _trusted_owner(st.st_uid):
        raise UntrustedPath(errno.EPERM, "is owned by another user", path)
    if st.st_mode & 0o022 and not (st.st_mode & stat.S_ISVTX and st.st_uid == 0):
        raise UntrustedPath(errno.EPERM, "is writable by others (its group or other users) and is not "
                                         "a sticky directory owned by root, like /tmp", path)


def check_file_stat(st: os.stat_result, path: str) -> None:
    """Refuse a file that is not regular, that another user owns, or that others could write."""
    if not stat.S_ISREG(st.st_mode):
        raise UntrustedPath(errno.EPERM, "is not a regular file", path)
    if not _trusted_owner(st.st_uid):
        raise UntrustedPath(errno.EPERM, "is owned by another user", path)
    if st.st_mode & 0o022:
        raise UntrustedPath(errno.EPERM, "is writable by others (its group or other users)", path)


def _components(path: str) -> list[str]:
    if not os.path.isabs(path):
        raise ValueError(f"path must be absolute, got {path!r}")
    return [p for p in os.path.normpath(path).split(os.sep) if p]


def _open_child_dir(parent: int, name: str, path: str, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
    except FileExistsError:  # made meanwhile (another process): checked below like any other
        return _open_child_dir(parent, name, path, False)
    fd = _open_child_dir(parent, name, path, False)
    os.fchmod(fd, 0o700)  # whatever the umask
    return fd


def _reraise_link(exc: OSError, path: str) -> None:
    # O_NOFOLLOW on a symbolic link: ELOOP (Linux, macOS), EMLINK (FreeBSD); with O_DIRECTORY a link
    # may also give ENOTDIR
    if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENOTDIR and os.path.islink(path)):
        raise UntrustedPath(errno.ELOOP, "is a symbolic link", path) from None


def open_dir(path: str, *, create: bool = False) -> int:
    """A file descriptor of the directory ``path`` (absolute), reached from ``/`` one component
    at a time with ``O_NOFOLLOW``, every directory on the way checked (``create``: missing ones
    are made, mode 0700). The caller closes it.

    Raises
    ------
    UntrustedPath
        A directory on the way another user owns or could write, or a symbolic link.
    OSError
        A component that does not exist (without ``create``) or is not a directory.
    """
    fd = os.open(os.sep, _DIR_FLAGS)
    here = os.sep
    try:
        check_dir_stat(os.fstat(fd), here)
        for name in _components(path):
            here = os.path.join(here, name)
            try:
                child = _open_child_dir(fd, name, here, create)
            except OSError as exc:
                if isinstance(exc, UntrustedPath):
                    raise
                _reraise_link(exc, here)
                raise
            os.close(fd)
            fd = child
            check_dir_stat(os.fstat(fd), here)
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_file(path: str) -> tuple[bytes, tuple[int, int]]:
    """(the bytes of the file ``path``, its (device, inode)): every directory from ``/`` and the
    file itself checked on the descriptors that are then read (see the module's rule).

    Raises
    ------
    UntrustedPath
        A directory or the file another user owns or could write, or a symbolic link.
    OSError
        The file or a directory does not exist.
    """
    dfd = open_dir(os.path.dirname(path))
    try:
        try:
            fd = os.open(os.path.basename(path), _FILE_FLAGS, dir_fd=dfd)
        except OSError as exc:
            _reraise_link(exc, path)
            raise
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        check_file_stat(st, path)
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks), (st.st_dev, st.st_ino)
    finally:
        os.close(fd)


def write_private_copy(data: bytes, name: str, *, prefix: str, parent: str | None = None) -> str:
    """Write ``data`` as ``name`` in a new directory only this user can write (``mkdtemp``:
    mode 0700, under ``parent``, else the system's temporary directory, whose path must pass the
    same checks) and return the file's path, after reading it back through the checked walk and
    comparing SHA-256 digests.

    Raises
    ------
    UntrustedPath
        The temporary directory's path fails the checks, or the copy read back differs.
    """
    import tempfile

    base = os.path.realpath(parent or tempfile.gettempdir())
    os.close(open_dir(base))  # the parent's own path is checked before anything is put there
    folder = tempfile.mkdtemp(prefix=prefix, dir=base)
    dfd = open_dir(folder)
    try:
        fd = os.open(name, _NEW_FILE_FLAGS, 0o600, dir_fd=dfd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, 0o400)  # read-only: nothing of ours rewrites it by mistake either
        finally:
            os.close(fd)
    finally:
        os.close(dfd)
    path = os.path.join(folder, name)
    verify(path, hashlib.sha256(data).hexdigest())
    return path


def verify(path: str, sha256: str) -> None:
    """Refuse the file ``path`` unless it passes the checked walk and its bytes have the SHA-256
    digest ``sha256``."""
    data, _ = read_file(path)
    if hashlib.sha256(data).hexdigest() != sha256:
        raise UntrustedPath(errno.EPERM, "changed since it was checked", path)
