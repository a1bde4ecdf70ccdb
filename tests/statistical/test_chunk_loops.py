"""The table samplers' chunk loops (docs/samplers.md, "Chunk loops") against the same samplers
drawn one by one, and the buffer kernel's vectorised combination against its definition.

A scalar parameter with size=n fills whole chunks through Law::fill_table; an array of n equal
parameters goes through the per-element path, which draws the same table sample by sample
(draw_table). Both read the same streams (one per 65,536 outputs), so on one seed they must give
identical arrays: the chunk loops are the samplers step for step. The exact laws themselves are
checked by the chi-square tests of this package, which run through the chunk loops. Every check
here is an equality (no false-alarm rate)."""
from fractions import Fraction

import numpy as np
import pytest

import dpnoise
from dpnoise import _core
from dpnoise import _rational as R

N = 2 * 2**16 + 4321  # three chunks, the last one short


def _pair(draw, param):
    a = draw(dpnoise.default_rng(21), param, N)
    b = draw(dpnoise.default_rng(21), np.full(N, param), N)
    return a, b


# sigma: 3.5 (B = 1: the per-draw loop), 146.5 and 1000 (buckets), 5.9e8 (the DP-SGD grid),
# 2^31 - 1 (the largest σ the generator accepts)
@pytest.mark.parametrize("sigma", [3.5, 146.5, 1000.0, 590558208.0, 2.0**31 - 1])
def test_discrete_gaussian_chunk_loop_equals_draw_by_draw(sigma):
    a, b = _pair(lambda g, s, n: g.discrete_gaussian(s, n), sigma)
    assert a.dtype == b.dtype == np.int64 and np.array_equal(a, b)


# scale: 0.5 and 100 (direct path), 1025 and 1e6 (H 2^k + L), 2^45 (k + guide bits > 63)
@pytest.mark.parametrize("scale", [0.5, 100.0, 1025.0, 1e6, 2.0**45])
@pytest.mark.parametrize("law", ["discrete_laplace", "geometric"])
def test_laplace_and_geometric_chunk_loops_equal_draw_by_draw(law, scale):
    if law == "geometric":
        a, b = _pair(lambda g, s, n: g.geometric(scale=s, size=n), scale)
    else:
        a, b = _pair(lambda g, s, n: g.discrete_laplace(s, n), scale)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("law, param", [("laplace", Fraction(1025)), ("gaussian", 4000.5), ("laplace", Fraction(2**50))])
def test_buffer_kernel_equals_its_definition(dtype, law, param):
    """out = float((clamp(round(x / 2^k)) + clamp(noise)) 2^k), clamped to +-2^53 grid steps; the
    scale 2^50 makes most chunks' noise exceed 2^51 grid steps somewhere (the per-element
    combination) and some sums reach the 2^53 clamp."""
    k, bound = -3, 2**40
    x = np.random.default_rng(7).normal(scale=3.0, size=N).astype(dtype)
    x[:6] = [0.5, 1.5, 2.5, -2.5, 1e30, -1e30]  # ties and the clamp
    if law == "laplace":
        num, den = R.scale_pair(param, "scale")
    else:
        num, den = R.sigma_to_variance_pair(param, "sigma")
    out = x.copy()
    _core.noisy_grid_into(dpnoise.default_rng(5)._core, law, out, k, num, den, bound, out, 2)
    rng = dpnoise.default_rng(5)
    noise = rng.discrete_laplace(param, N) if law == "laplace" else rng.discrete_gaussian(param, N)
    grid = np.clip(np.rint(np.ldexp(x.astype(np.float64), -k)), -bound, bound).astype(np.int64)
    y = np.clip(grid + np.clip(noise, -2**53, 2**53), -2**53, 2**53)
    assert np.array_equal(out, np.ldexp(y.astype(np.float64), k).astype(dtype))
