"""The fuzzing harness machinery: discovery, input decoding, corpus replay and the atheris runner.

A target is one file ``tests/fuzz/target_<name>.py`` that defines

    SEEDS: list[bytes]                 # a few inputs that reach the interesting paths
    def one_input(data: bytes) -> None # must return, or raise only an ALLOWED error

Its corpus is ``tests/fuzz/corpus/<name>/`` (seed files, plus inputs worth keeping that a fuzzing
run found). Adding a target is adding that one file (``python tests/fuzz/fuzzing.py --write-seeds``
writes its SEEDS into its corpus directory). ``.ci/fuzz`` runs every target for a bounded time;
``tests/fuzz/test_fuzz_corpus.py`` replays every corpus in the normal test suite.

Run one target by hand (atheris, libFuzzer flags after the name):

    PYTHONPATH=src python tests/fuzz/fuzzing.py budget_ledger -max_total_time=60
"""
from __future__ import annotations

import base64
import decimal
import dis
import hashlib
import importlib
import operator
import os
import struct
import sys
import tempfile
import traceback
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Dict, List

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"


def allowed() -> tuple:
    """The errors a public call may raise on bad input."""
    import dpnoise

    return (ValueError, TypeError, OverflowError, dpnoise.DPError)


def targets() -> Dict[str, ModuleType]:
    """name -> module for every tests/fuzz/target_<name>.py."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return {p.stem[len("target_"):]: importlib.import_module(p.stem) for p in sorted(HERE.glob("target_*.py"))}


def corpus_inputs(name: str, module: ModuleType) -> List[bytes]:
    """The target's SEEDS and every file of its corpus directory."""
    found = list(getattr(module, "SEEDS", []))
    folder = CORPUS / name
    if folder.is_dir():
        found.extend(p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file())
    return list(dict.fromkeys(found))  # each distinct input once, seeds first


class Reader:
    """Turns fuzz bytes into Python values (like atheris' FuzzedDataProvider, but pure Python, so
    corpus replay needs no atheris)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def take(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        return out

    def rest(self) -> bytes:
        out = self.data[self.pos:]
        self.pos = len(self.data)
        return out

    def int_(self) -> int:
        """Signed ints up to 2^512 (the length comes first)."""
        n = self.byte() % 65
        return int.from_bytes(self.take(n), "little", signed=True)

    def float_(self) -> float:
        raw = self.take(8).ljust(8, b"\0")
        return struct.unpack("<d", raw)[0]  # every bit pattern: NaNs, ±inf, subnormals, -0.0

    def text(self, limit: int = 40) -> str:
        n = self.byte() % (limit + 1)
        return self.take(n).decode("utf-8", "replace")

    def number(self) -> Any:
        """A parameter as users pass it: int, float, Fraction, Decimal, NumPy scalar, or junk."""
        import numpy as np

        kind = self.byte() % 12
        if kind == 0:
            return self.int_()
        if kind in (1, 2):
            return self.float_()
        if kind == 3:
            den = self.int_()
            return Fraction(self.int_(), den if den else 1)
        if kind == 4:
            try:
                return decimal.Decimal(self.text(30))
            except decimal.InvalidOperation:
                return decimal.Decimal(self.byte())
        if kind == 5:
            return np.float64(self.float_())
        if kind == 6:
            return np.uint64(self.int_() % 2**64)
        if kind == 7:
            return [self.number() for _ in range(self.byte() % 4)]
        if kind == 8:
            return np.array([self.float_() for _ in range(self.byte() % 5)])
        if kind == 9:
            return self.text(8)
        if kind == 10:
            return (None, True, False, 1 + 1j, object())[self.byte() % 5]
        return self.byte() / 16  # small ordinary values, so the success paths run too


def collecting(one_input: Callable[[bytes], None], work: Path) -> Callable[[bytes], None]:
    """Wrap a target so that a failure is recorded (once per distinct exception type and
    place: ``failures.txt`` and a ``crash-*`` file in ``work``) and fuzzing goes on: one bounded
    run then lists every distinct defect it met, not only the first. Hangs and hard crashes
    still stop the run (libFuzzer's -timeout, or the process dying)."""
    seen: set = set()

    def wrapped(data: bytes) -> None:
        try:
            one_input(data)
        except Exception as exc:  # noqa: BLE001 - anything escaping the target is a finding
            frames = traceback.extract_tb(exc.__traceback__)
            place = next((f for f in reversed(frames) if "dpnoise" in f.filename and "/tests/" not in f.filename),
                         frames[-1])
            sig = f"{type(exc).__name__} at {place.filename}:{place.lineno}"
            if isinstance(exc, AssertionError):  # a target's own check: tell its findings apart
                sig += f" [{str(exc)[:70]}]"
            if sig in seen:
                return
            seen.add(sig)
            digest = hashlib.sha1(data).hexdigest()
            (work / f"crash-{digest}").write_bytes(data)
            first = (str(exc).splitlines() or [""])[0][:200]
            line = f"{sig}: {first} | input base64 {base64.b64encode(data[:200]).decode()}\n"
            with open(work / "failures.txt", "a", encoding="utf-8") as fh:
                fh.write(line)
            print("FUZZ FAILURE " + line, end="", file=sys.stderr, flush=True)
    return wrapped


def _array_safe_trace_cmp(atheris: Any) -> Callable[..., Any]:
    """A replacement for atheris' comparison hook that leaves NumPy array comparisons alone.

    atheris (2.3, CPython 3.11) keeps a reference to the result of every instrumented comparison
    whose result is not a bool: each ``array > 0`` in instrumented code leaks the whole boolean
    array. The PLD accountant compares arrays of a million grid points, so the budget-ledger
    target grew by ~1.7 MB per input and libFuzzer stopped it at its 4 GB limit (a false
    out-of-memory finding, not a defect of dpnoise; measured: 2.1 GB after 1,500 runs of one
    seed, 63 MB with this hook). Array comparisons carry no useful comparison feedback anyway;
    scalar ones still go to libFuzzer. atheris re-installs its native hook when Fuzz() starts,
    so the wrapper installs this one on the first input (see ``collecting``)."""
    import numpy as np
    from atheris import version_dependent

    shift = version_dependent.CMP_OP_SHIFT_AMOUNT
    ops = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
           ">": operator.gt, ">=": operator.ge}
    native = atheris._trace_cmp

    def trace_cmp(left: Any, right: Any, op: int, counter: int, is_const: bool) -> Any:
        if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
            return ops[dis.cmp_op[op >> shift]](left, right)
        return native(left, right, op, counter, is_const)
    return trace_cmp


def run_atheris(name: str, argv: List[str]) -> None:
    import atheris

    with atheris.instrument_imports(include=["dpnoise"]):
        import dpnoise  # noqa: F401  (instrumented: coverage feedback guides the fuzzer)
        import dpnoise.accounting  # noqa: F401
    module = targets()[name]
    if os.environ.get("DPNOISE_FUZZ_WORKDIR"):
        work = Path(os.environ["DPNOISE_FUZZ_WORKDIR"]) / name
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = Path(tempfile.mkdtemp(prefix=f"dpnoise-fuzz-{name}-"))
    seeds = work / "seeds"
    seeds.mkdir()
    for data in corpus_inputs(name, module):
        (seeds / hashlib.sha1(data).hexdigest()).write_bytes(data)
    # new inputs go to the first directory (a scratch one): the checked-in corpus is read-only
    args = [sys.argv[0], str(work / "new"), str(seeds), f"-artifact_prefix={work}/", *argv]
    (work / "new").mkdir()
    print(f"fuzzing {name}: scratch and crash files in {work}", flush=True)
    target = collecting(module.one_input, work)

    def with_array_safe_hook(data: bytes) -> None:
        if getattr(atheris._trace_cmp, "__name__", "") != "trace_cmp":
            atheris._trace_cmp = _array_safe_trace_cmp(atheris)
        target(data)
    atheris.Setup(args, with_array_safe_hook)
    atheris.Fuzz()


def write_seeds() -> None:
    for name, module in targets().items():
        folder = CORPUS / name
        folder.mkdir(parents=True, exist_ok=True)
        for data in getattr(module, "SEEDS", []):
            (folder / f"seed-{hashlib.sha1(data).hexdigest()[:12]}").write_bytes(data)
        print(f"{name}: {len(list(folder.iterdir()))} corpus files")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--write-seeds":
        write_seeds()
    elif len(sys.argv) >= 2 and sys.argv[1] == "--list":
        print("\n".join(targets()))
    elif len(sys.argv) >= 2:
        run_atheris(sys.argv[1], sys.argv[2:])
    else:
        sys.exit("usage: fuzzing.py NAME [libFuzzer flags] | --list | --write-seeds")
