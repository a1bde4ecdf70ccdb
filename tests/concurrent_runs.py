"""Work run concurrently for the stream tests: in several threads at once, or in a forked child."""
from __future__ import annotations

import os
import threading
from typing import Any, Callable, Iterable, List, Sequence


def gather_from_threads(work: Callable[..., Iterable[Any]], args: Sequence[tuple]) -> List[Any]:
    """Start one thread per entry of ``args`` running ``work(*entry)``, all before any is
    joined, and return the concatenation of what they returned (in no fixed order)."""
    got: List[Any] = []
    lock = threading.Lock()

    def run(*a: Any) -> None:
        local = list(work(*a))
        with lock:
            got.extend(local)

    threads = [threading.Thread(target=run, args=a) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


def in_forked_child(fn: Callable[[], bytes]) -> bytes:
    """Run ``fn()`` in a forked child and return the bytes it produced."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.write(w, fn())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return data
