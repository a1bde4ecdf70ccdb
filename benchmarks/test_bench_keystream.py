"""The ChaCha20 keystream into a preallocated buffer against OpenSSL's ChaCha20 on this CPU.

Issue #35 item 1: ``rng.random_raw(out=buf)`` of 2^21 words (16 MiB), one thread, against
``openssl speed -evp chacha20`` (its 16 KiB column), both measured in this run. Prints the
ratio and the machine's load; skips with a message when ``openssl`` is not installed. Beside
it, the same fill with each ChaCha20 kernel this CPU has (16-block AVX-512F, 8-block
AVX-512VL / AVX2, portable; forced through the test hook), also in this run.
Beside it, the per-call and small-array costs against NumPy's own ``random_raw`` (PCG64, not
secure) in the same run: one word, 100 words (allocating) and 100 words into a buffer.
Run: ``PYTHONPATH=src:benchmarks pytest benchmarks/test_bench_keystream.py -s``.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from typing import Any, Callable

import numpy as np
import pytest

import dpnoise
from dpnoise import _core

WORDS = 2**21


def _openssl_bytes_per_second() -> float:
    out = subprocess.run(["openssl", "speed", "-evp", "chacha20", "-bytes", "16384", "-seconds", "2"],
                         capture_output=True, text=True, check=True).stdout
    # the result line: "ChaCha20   <rate for 16384 bytes>k" (thousands of bytes per second)
    line = [ln for ln in out.splitlines() if ln.lower().startswith("chacha20")][-1]
    rate = re.findall(r"([0-9.]+)k", line)[-1]
    return float(rate) * 1000.0


def _dpnoise_bytes_per_second(rounds: int = 15, kernel: str | None = None) -> float:
    rng = dpnoise.default_rng()
    buf = np.empty(WORDS, dtype=np.uint64)
    _core._force_chacha20_kernel_for_testing(kernel)  # None: the fastest this CPU has
    try:
        rng.random_raw(out=buf, threads=1)  # first touch of the buffer, outside the timing
        best = float("inf")
        for _ in range(rounds):
            t = time.perf_counter()
            rng.random_raw(out=buf, threads=1)
            best = min(best, time.perf_counter() - t)
    finally:
        _core._force_chacha20_kernel_for_testing(None)
    return buf.nbytes / best


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_keystream_against_openssl(benchmark: Any) -> None:
    ours, theirs = [], []
    for _ in range(2):  # interleaved, best of each
        ours.append(_dpnoise_bytes_per_second())
        theirs.append(_openssl_bytes_per_second())
    ratio = max(ours) / max(theirs)
    print(f"\nkeystream, 2^21 words into a preallocated buffer, one thread: dpnoise {max(ours) / 1e9:.2f} GB/s, "
          f"openssl speed -evp chacha20 (16 KiB) {max(theirs) / 1e9:.2f} GB/s, ratio {ratio:.2f} "
          f"(target >= 0.8); load {os.getloadavg()[0]:.1f}")
    rates = {k: max(_dpnoise_bytes_per_second(3 if k == "portable" else 7, k) for _ in range(2))
             for k in _core._chacha20_kernels_for_testing()}
    print("  each kernel, same fill and run: " + ", ".join(f"{k} {r / 1e9:.2f} GB/s" for k, r in rates.items()))
    # the answer: a seeded fill is the RFC 8439 keystream of stream 0, as the portable kernel computes it
    rng = dpnoise.ChaCha20(1234)
    buf = np.empty(WORDS, dtype=np.uint64)
    benchmark(rng.random_raw, out=buf, threads=1)
    raw = _core.chacha20_stream_words((1234).to_bytes(32, "little"), 0, 0, WORDS // 8, False)
    first = raw[0::2].astype(np.uint64) | (raw[1::2].astype(np.uint64) << np.uint64(32))
    assert np.array_equal(dpnoise.ChaCha20(1234).random_raw(out=np.empty(WORDS, dtype=np.uint64)), first)


def _best_per_call(call: Callable[[], object], calls: int = 20_000, rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - t) / calls)
    return best


def test_keystream_per_call_and_small_arrays(benchmark: Any) -> None:
    rng = dpnoise.default_rng()
    pcg = np.random.PCG64(1)
    buf, nbuf = np.empty(100, dtype=np.uint64), np.empty(100, dtype=np.uint64)
    rows: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
            ("one word", rng.random_raw, pcg.random_raw),
            ("100 words", lambda: rng.random_raw(100), lambda: pcg.random_raw(100)),
            ("100 words, out=", lambda: rng.random_raw(out=buf), lambda: nbuf.__setitem__(slice(None), pcg.random_raw(100)))]
    print(f"\nraw words per call, dpnoise ChaCha20 (secure) vs NumPy PCG64.random_raw; load {os.getloadavg()[0]:.1f}")
    for name, ours, theirs in rows:
        a, b = _best_per_call(ours), _best_per_call(theirs)
        print(f"  {name:16s} dpnoise {a * 1e9:7.0f} ns, NumPy {b * 1e9:7.0f} ns, ratio (dpnoise/NumPy) {a / b:5.2f}")
    benchmark(rng.random_raw)
