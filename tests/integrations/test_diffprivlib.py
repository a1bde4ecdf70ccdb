"""diffprivlib with dpnoise's random_state: tested against the real package (the interop extra,
part of the test extra); skipped only when diffprivlib is not installed."""
import numpy as np
import pytest

import dpnoise
from dpnoise.integrations.diffprivlib import random_state

mechanisms = pytest.importorskip("diffprivlib.mechanisms", reason="diffprivlib is not installed (extra 'interop')")


def test_diffprivlib_refuses_numpy_generators_and_accepts_ours():
    with pytest.raises(ValueError):
        mechanisms.Laplace(epsilon=1.0, sensitivity=1.0,
                           random_state=np.random.Generator(dpnoise.ChaCha20())).randomise(0.0)
    assert np.isfinite(mechanisms.Laplace(epsilon=1.0, sensitivity=1.0, random_state=random_state()).randomise(0.0))


@pytest.mark.parametrize("make", [
    lambda rs: mechanisms.Laplace(epsilon=1.0, sensitivity=1.0, random_state=rs),
    lambda rs: mechanisms.GaussianAnalytic(epsilon=1.0, delta=1e-5, sensitivity=1.0, random_state=rs),
])
def test_mechanisms_draw_from_chacha20(make):
    # seeded (tests only): the draws are a function of the ChaCha20 key alone, reproducible...
    a = [make(random_state(9, allow_insecure=True)).randomise(0.0) for _ in range(1)]
    mech = make(random_state(9, allow_insecure=True))
    b = [mech.randomise(0.0)]
    assert a == b
    # ...the same as over the same ChaCha20 key directly, and not what MT19937 would give
    direct = make(np.random.RandomState(dpnoise.ChaCha20(9))).randomise(0.0)
    assert direct == a[0]
    assert make(np.random.RandomState(9)).randomise(0.0) != a[0]
    # secure: fresh keys, different draws
    assert make(random_state()).randomise(0.0) != make(random_state()).randomise(0.0)


def test_laplace_scale_through_our_bits():
    # diffprivlib's Laplace(epsilon=1, sensitivity=1) has scale 1: mean |x| = 1; 20000 draws,
    # within 5 standard errors (sd of |x| is 1): false alarm < 1e-6
    mech = mechanisms.Laplace(epsilon=1.0, sensitivity=1.0, random_state=random_state(4, allow_insecure=True))
    draws = np.array([mech.randomise(0.0) for _ in range(20000)])
    assert abs(np.abs(draws).mean() - 1) < 5 / np.sqrt(draws.size)


def test_seed_refused_without_allow_insecure():
    with pytest.raises(ValueError, match="seed"):
        random_state(1)
