"""dpnoise.integrations.numpy_random: NumPy generators over ChaCha20, exact grid noise in place."""
import math

import numpy as np
import pytest

import dpnoise
from dpnoise.integrations import numpy_random as nr


def test_numpy_generators_draw_from_chacha20():
    g = nr.numpy_generator()
    assert isinstance(g, np.random.Generator) and isinstance(g.bit_generator, dpnoise.ChaCha20)
    rs = nr.random_state()
    assert isinstance(rs, np.random.RandomState)
    assert isinstance(rs._bit_generator, dpnoise.ChaCha20)
    # secure: two states give different streams
    assert nr.random_state().random() != nr.random_state().random()
    # seeded (tests only): reproducible, and the same as NumPy over dpnoise.ChaCha20(seed)
    a = nr.numpy_generator(5, allow_insecure=True).standard_normal(4)
    b = np.random.Generator(dpnoise.ChaCha20(5)).standard_normal(4)
    assert np.array_equal(a, b)
    assert np.array_equal(nr.random_state(5, allow_insecure=True).random_sample(3),
                          np.random.RandomState(dpnoise.ChaCha20(5)).random_sample(3))


def test_seeds_are_refused_without_allow_insecure():
    for make in (nr.numpy_generator, nr.random_state):
        with pytest.raises(ValueError, match="seed"):
            make(5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gaussian_noise_in_place_is_exact_and_has_the_right_scale(dtype):
    std = 1.1
    x = np.linspace(-2, 2, 200_000).astype(dtype)
    before = x.copy()
    out = nr.gaussian_noise_(x, std, dpnoise.default_rng(3), allow_insecure=True)
    assert out is x and x.dtype == dtype
    noise = x.astype(np.float64) - before.astype(np.float64)
    # sd within 1.5% (about 9.5 standard errors), mean within 5 standard errors: false alarm < 1e-6
    assert abs(noise.std() / std - 1) < 0.015
    assert abs(noise.mean()) < 5 * std / math.sqrt(noise.size)
    if dtype == np.float64:  # the exact release: every value a multiple of 2^k
        k = nr.grid_exponent_for(std)
        units = x * 2.0 ** -k
        assert np.array_equal(units, np.round(units))
    again = before.copy()
    nr.gaussian_noise_(again, std, dpnoise.default_rng(3), allow_insecure=True)
    assert np.array_equal(again, x)  # reproducible for a seed


def test_gaussian_noise_grid():
    k = nr.grid_exponent_for(1.1)
    assert 2 ** 29 < 1.1 / 2.0 ** k <= 2 ** 30


def test_gaussian_noise_bad_input_leaves_the_array_untouched():
    g = dpnoise.default_rng()
    ro = np.zeros(4)
    ro.flags.writeable = False
    cases = [(ro, 1.0, ValueError), (np.zeros(8)[::2], 1.0, ValueError), (np.zeros(3, dtype=np.int64), 1.0, TypeError),
             ([0.0], 1.0, TypeError), (np.zeros(3), 0.0, ValueError), (np.zeros(3), -1.0, ValueError),
             (np.zeros(3), math.nan, ValueError), (np.zeros(3), math.inf, ValueError), (np.zeros(3), "1", TypeError),
             (np.array([0.0, np.nan]), 1.0, ValueError), (np.array([np.inf], dtype=np.float32), 1.0, ValueError)]
    for values, std, error in cases:
        before = np.array(values, copy=True)
        with pytest.raises(error):
            nr.gaussian_noise_(values, std, g)
        np.testing.assert_array_equal(np.asarray(values), before)
    with pytest.raises(ValueError, match="seeded"):
        nr.gaussian_noise_(np.zeros(3), 1.0, dpnoise.default_rng(1))
    with pytest.raises(TypeError, match="generator"):
        nr.gaussian_noise_(np.zeros(3), 1.0, np.random.default_rng(1))
    assert nr.gaussian_noise_(np.zeros(0, dtype=np.float32), 1.0).shape == (0,)
