"""The ChaCha20 keystream into a preallocated buffer against OpenSSL's ChaCha20 on this CPU.

Issue #35 item 1: ``rng.random_raw(out=buf)`` of 2^21 words (16 MiB), one thread, against
``openssl speed -evp chacha20`` (its 16 KiB column), both measured in this run. Prints the
ratio and the machine's load; skips with a message when ``openssl`` is not installed.
Run: ``PYTHONPATH=src:benchmarks pytest benchmarks/test_bench_keystream.py -s``.
"""
import os
import re
import shutil
import subprocess
import time

import numpy as np
import pytest

import dpnoise

WORDS = 2**21


def _openssl_bytes_per_second() -> float:
    out = subprocess.run(["openssl", "speed", "-evp", "chacha20", "-bytes", "16384", "-seconds", "2"],
                         capture_output=True, text=True, check=True).stdout
    # the result line: "ChaCha20   <rate for 16384 bytes>k" (thousands of bytes per second)
    line = [ln for ln in out.splitlines() if ln.lower().startswith("chacha20")][-1]
    rate = re.findall(r"([0-9.]+)k", line)[-1]
    return float(rate) * 1000.0


def _dpnoise_bytes_per_second(rounds: int = 15) -> float:
    rng = dpnoise.default_rng()
    buf = np.empty(WORDS, dtype=np.uint64)
    rng.random_raw(out=buf, threads=1)  # first touch of the buffer, outside the timing
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        rng.random_raw(out=buf, threads=1)
        best = min(best, time.perf_counter() - t)
    return buf.nbytes / best


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_keystream_against_openssl(benchmark):
    ours, theirs = [], []
    for _ in range(2):  # interleaved, best of each
        ours.append(_dpnoise_bytes_per_second())
        theirs.append(_openssl_bytes_per_second())
    ratio = max(ours) / max(theirs)
    print(f"\nkeystream, 2^21 words into a preallocated buffer, one thread: dpnoise {max(ours) / 1e9:.2f} GB/s, "
          f"openssl speed -evp chacha20 (16 KiB) {max(theirs) / 1e9:.2f} GB/s, ratio {ratio:.2f} "
          f"(target >= 0.8); load {os.getloadavg()[0]:.1f}")
    rng = dpnoise.default_rng()
    buf = np.empty(WORDS, dtype=np.uint64)
    benchmark(rng.random_raw, out=buf, threads=1)
