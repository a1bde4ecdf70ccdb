"""Limits of the arguments every sampling call shares: size (element count) and threads.

Defect 12 (issue #10): size=(2**32, 2**32) wrapped to 0 elements in int64 and failed later with
an unrelated reshape error. Defect 5: a thread the system refuses to create aborted the process
(std::terminate) instead of running the work on the threads it had.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dpnoise
from dpnoise import _validate

HUGE_SHAPES = [(2**32, 2**32), (2**31, 2**31, 4), (2**60,), (2**30, 2**30, 2**30), (0, 2**70)]


@pytest.mark.parametrize("shape", HUGE_SHAPES)
def test_shape_beyond_the_limit_is_refused_naming_size(shape):
    with pytest.raises(ValueError, match="size"):
        _validate.shape_of(shape)


@pytest.mark.parametrize("call", [
    lambda g, s: g.discrete_laplace(1, s),
    lambda g, s: g.discrete_gaussian(1, s),
    lambda g, s: g.geometric(scale=1, size=s),
    lambda g, s: g.bernoulli(0.5, s),
    lambda g, s: g.bernoulli_exp(1, s),
    lambda g, s: g.integers(0, 10, s),
    lambda g, s: g.random_raw(s),
])
def test_samplers_refuse_wrapping_sizes_before_drawing(call):
    g = dpnoise.default_rng(5)
    before = dpnoise.default_rng(5).random_raw(4)
    with pytest.raises(ValueError, match="size"):
        call(g, (2**32, 2**32))
    assert np.array_equal(g.random_raw(4), before)  # nothing was drawn


def test_shape_count_is_exact_at_the_limit():
    assert _validate.count_of(_validate.shape_of((2**29, 2**30))) == _validate.MAX_SIZE
    assert _validate.count_of(None) == 1 and _validate.count_of(()) == 1
    with pytest.raises(ValueError, match="size"):
        _validate.count_of((2**30, 2**30))  # a hand-made shape is checked too
    with pytest.raises(ValueError, match="size"):
        _validate.shape_of((2**29, 2**30, 2))


def test_bad_size_types_and_threads():
    with pytest.raises(TypeError, match="size"):
        _validate.shape_of(2.0)
    with pytest.raises(TypeError, match="size"):
        _validate.shape_of((True, 2))
    with pytest.raises(ValueError, match="size"):
        _validate.shape_of(-1)
    with pytest.raises(ValueError, match="threads"):
        _validate.check_threads(_validate.MAX_THREADS + 1)
    with pytest.raises(ValueError, match="threads"):
        _validate.check_threads(0)


# Under a low address-space limit only a few of the 4096 requested threads can be created
# (each reserves a stack). The call must still finish, with exactly the words of threads=1.
_RLIMIT_SCRIPT = textwrap.dedent("""
    import resource
    import numpy as np
    import dpnoise
    n = 1 << 22
    raw_ref = dpnoise.ChaCha20(7).random_raw(n, threads=1)
    lap_ref = dpnoise.default_rng(7).discrete_laplace(10, n, threads=1)
    def vm_bytes():
        for line in open("/proc/self/status"):
            if line.startswith("VmSize"):
                return int(line.split()[1]) * 1024
    limit = vm_bytes() + 8 * n + (96 << 20)  # the output plus room for about a dozen stacks
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    raw = dpnoise.ChaCha20(7).random_raw(n, threads=4096)
    lap = dpnoise.default_rng(7).discrete_laplace(10, n, threads=4096)
    print("raw", bool(np.array_equal(raw, raw_ref)), "laplace", bool(np.array_equal(lap, lap_ref)))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and RLIMIT_AS")
@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="AddressSanitizer reserves terabytes of shadow address space: RLIMIT_AS cannot be low")
def test_thread_creation_failure_falls_back_without_losing_work():
    res = subprocess.run([sys.executable, "-c", _RLIMIT_SCRIPT], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"exit {res.returncode}: {res.stderr[-2000:]}"
    assert res.stdout.split() == ["raw", "True", "laplace", "True"]
