"""Failures of Spark jobs, surfaced as the documented Python exceptions with a one-line reason.

Errors about the data or the configuration (a ValueError, TypeError or OverflowError raised by
dpnoise on an executor) travel back as data: the task catches them and returns ``"Type:
message"`` in place of a state, and the driver raises the same type with the same one line
(:func:`raise_task_error`), with no retry and no Java stack. Anything else (a lost executor,
out of memory, a bug) fails the Spark job as usual, after Spark's retries; :func:`run_job`
turns that into ``RuntimeError("<what>: the Spark job failed: <the Python error's last line>")``.
"""
from __future__ import annotations

import re
from typing import Any, Callable, TypeVar

T = TypeVar("T")

#: exception types a task reports as data (the caller's mistake: same on every retry)
_DATA_ERRORS = {"OverflowError": OverflowError, "TypeError": TypeError, "ValueError": ValueError}


def task_error(exc: BaseException) -> str:
    """``"Type: message"`` on one line, for a task to return in place of its result."""
    # the documented base type (a ConfigurationError or pyarrow's ArrowInvalid is a ValueError)
    name = next(k for k, v in _DATA_ERRORS.items() if isinstance(exc, v)) if isinstance(exc, catchable()) \
        else type(exc).__name__
    return f"{name}: " + " ".join(str(exc).split())


def catchable() -> tuple[type[BaseException], ...]:
    return tuple(_DATA_ERRORS.values())


def raise_task_error(error: str | None, what: str) -> None:
    """Raise the exception a task reported (see :func:`task_error`); nothing for None/""."""
    if not error:
        return
    name, _, message = error.partition(": ")
    raise _DATA_ERRORS.get(name, RuntimeError)(f"{what}: {message}")


_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): ?(.*)$")


def one_line_reason(text: str) -> str:
    """The last Python exception line of a Spark failure's text (the executor's traceback is
    embedded in it), else its first line."""
    found = None
    in_traceback = False
    for line in text.splitlines():
        if line.startswith("Traceback (most recent call last)"):
            in_traceback = True
            continue
        if in_traceback and line and not line[0].isspace():
            m = _EXC_LINE.match(line)
            if m:
                found = (m.group(1).rsplit(".", 1)[-1], m.group(2))
            in_traceback = False
    if found is not None:
        return f"{found[0]}: {found[1]}"
    # a JVM-side failure: the deepest cause ("Caused by: java.lang.RuntimeException: ...")
    causes = [line[len("Caused by: "):] for line in text.splitlines() if line.startswith("Caused by: ")]
    if causes:
        return causes[-1].strip()[:300]
    for line in text.splitlines():
        if re.search(r"Exception: .", line) and not line.startswith("\tat "):
            return line.strip()[:300]
    first = text.strip().splitlines()[0] if text.strip() else "unknown reason"
    return first[:300]


def run_job(what: str, job: Callable[[], T]) -> T:
    """``job()``; a failed Spark job raises RuntimeError naming ``what`` and the reason in one
    line (the ValueError/TypeError/OverflowError of a Python task keeps its type)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    try:
        return job()
    except (Py4JJavaError, PySparkException) as exc:
        reason = one_line_reason(str(exc))
        name, _, message = reason.partition(": ")
        kind: Any = _DATA_ERRORS.get(name)
        if kind is not None:
            raise kind(f"{what}: {message}") from None
        raise RuntimeError(f"{what}: the Spark job failed: {reason}") from None
