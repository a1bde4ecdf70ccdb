"""The C API (dpnoise/capi.h, dpnoise/capi.pxd) as another extension sees it.

Builds, at test time with Cython and the C compiler, the example of docs/cython.md
(docs/examples/cython/noise_loops.pyx) and a probe of every table entry (capi_probe.pyx), then
checks that their draws follow the laws, match what the core gives for the same stream, never
repeat the generator's other output, and that bad input gives error codes, not crashes.
Skipped when Cython, setuptools or a C compiler is missing (Cython is a build-time tool only).
"""
import math
import os
import shutil
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import dpnoise
from dpnoise import _core
from cython_build import built_extensions

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "cython" / "noise_loops.pyx"
PROBE = Path(__file__).with_name("capi_probe.pyx")

# Status codes and laws of dpnoise/capi.h.
OK, ERR_VALUE, ERR_OVERFLOW, ERR_TYPE, ERR_FORKED = 0, 1, 2, 3, 4
LAPLACE, GAUSSIAN, GEOMETRIC = 1, 2, 3


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(noise_loops, capi_probe): the two extensions, compiled against this dpnoise."""
    pytest.importorskip("Cython", reason="Cython is needed to build Cython users of the C API")
    pytest.importorskip("setuptools", reason="setuptools is needed to build the test extensions")
    if not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")):
        pytest.skip("no C compiler")
    if not EXAMPLE.is_file():
        pytest.skip("needs the source tree (docs/examples)")
    with built_extensions([EXAMPLE, PROBE], tmp_path_factory.mktemp("cython_capi")) as modules:
        yield tuple(modules)


def zeros(n):
    return np.zeros(n, dtype=np.int64)


# -- the example of docs/cython.md ----------------------------------------------------------
def bulk_reference_seed(seed, stream=1):
    """The seed of the family a bulk call draws from: the first 256 bits of the C API stream
    (stream `stream` of the seeded key), read as the little-endian key of dpnoise.ChaCha20."""
    words = keystream_words(seed, stream, 4)
    return int.from_bytes(b"".join(w.to_bytes(8, "little") for w in words), "little")


def test_example_draws_exactly_what_the_core_draws_from_the_derived_key(built):
    noise_loops, _ = built
    # A bulk call keys a family with 256 bits of its stream; the core, keyed with the same
    # bits, serves a table-path request of the same size from the same streams and tables:
    # the outputs must be identical, value for value (and for 2 threads as for 1).
    n = 150_000  # three chunks of 65,536
    for law, value, threads in (("laplace", Fraction(3, 2), 1), ("gaussian", Fraction(9, 4), 2)):
        via_capi = noise_loops.add_noise(zeros(n), dpnoise.default_rng(11), law, value.numerator,
                                         value.denominator, threads=threads, allow_insecure=True)
        g = dpnoise.default_rng(bulk_reference_seed(11))
        via_core = g.discrete_laplace(value, size=n) if law == "laplace" else \
            g.discrete_gaussian(variance=value, size=n)
        assert np.array_equal(via_capi, via_core)


def test_example_output_does_not_depend_on_threads(built):
    noise_loops, _ = built
    one = noise_loops.add_noise(zeros(200_000), dpnoise.default_rng(4), "laplace", 7, 3, threads=1,
                                allow_insecure=True)
    two = noise_loops.add_noise(zeros(200_000), dpnoise.default_rng(4), "laplace", 7, 3, threads=2,
                                allow_insecure=True)
    assert np.array_equal(one, two) and np.any(one != 0)


def test_example_refuses_a_seeded_generator(built):
    noise_loops, _ = built
    for g in (dpnoise.default_rng(5), dpnoise.ChaCha20(5)):
        with pytest.raises(ValueError, match="seeded"):
            noise_loops.add_noise(zeros(3), g, "laplace", 1, 1)
        with pytest.raises(ValueError, match="seeded"):
            noise_loops.add_gaussian_noise_(np.zeros(3), g, 1.0)
    # the refusal draws nothing: the generator's next output is unchanged... except for the
    # stream id the refused open reserved (ids are never reused), as for any opened stream
    assert noise_loops.add_noise(zeros(3), dpnoise.default_rng(), "laplace", 1, 1).shape == (3,)


def test_example_adds_noise_to_counts(built):
    noise_loops, _ = built
    counts = np.arange(-50, 50, dtype=np.int64)
    noisy = noise_loops.add_noise(counts, dpnoise.default_rng(5), "gaussian", 4, 1, allow_insecure=True)
    noise = noise_loops.add_noise(zeros(100), dpnoise.default_rng(5), "gaussian", 4, 1, allow_insecure=True)
    assert np.array_equal(noisy, counts + noise)
    assert np.any(noise != 0)
    assert noise_loops.add_noise(zeros(0), dpnoise.default_rng(), "laplace", 1, 1).shape == (0,)


def chi_square_pvalue(samples, pmf, k):
    """Pearson chi-square of samples against pmf(x) on bins -k..k, the tails pooled into the end bins."""
    from scipy import stats

    xs = np.arange(-k, k + 1)
    clipped = np.clip(samples, -k, k)
    observed = np.array([(clipped == x).sum() for x in xs])
    support = np.arange(-400, 401)
    p = np.array([pmf(x) for x in support])
    p /= p.sum()
    expected = np.array([p[support == x].sum() if abs(x) < k else
                         p[(support >= k) if x > 0 else (support <= -k)].sum() for x in xs])
    return stats.chisquare(observed, expected * len(samples)).pvalue


def test_example_draws_follow_the_laws(built):
    noise_loops, _ = built
    n = 20000
    # alpha = 1e-4 for each of the two chi-square tests (fixed seeds: the outcome is deterministic)
    laplace = noise_loops.add_noise(zeros(n), dpnoise.default_rng(101), "laplace", 3, 2, allow_insecure=True)
    assert chi_square_pvalue(laplace, lambda x: math.exp(-abs(x) * 2 / 3), 8) > 1e-4
    gaussian = noise_loops.add_noise(zeros(n), dpnoise.default_rng(102), "gaussian", 9, 4, allow_insecure=True)
    assert chi_square_pvalue(gaussian, lambda x: math.exp(-x * x / (2 * 9 / 4)), 4) > 1e-4
    # and the test can fail: the Laplace draws do not pass as scale 2
    assert chi_square_pvalue(laplace, lambda x: math.exp(-abs(x) / 2), 8) < 1e-4


def test_example_reports_bad_input_as_python_errors(built):
    noise_loops, _ = built
    g = dpnoise.default_rng()
    with pytest.raises(ValueError, match="scale"):
        noise_loops.add_noise(zeros(3), g, "laplace", 1, 0)
    with pytest.raises(OverflowError, match="variance"):
        noise_loops.add_noise(zeros(3), g, "gaussian", 1 << 63, 1)
    with pytest.raises(ValueError, match="law"):
        noise_loops.add_noise(zeros(3), g, "uniform", 1, 1)
    with pytest.raises(TypeError, match="generator"):
        noise_loops.add_noise(zeros(3), np.random.default_rng(1), "laplace", 1, 1)
    with pytest.raises(OverflowError, match="int64"):
        noise_loops.add_noise(np.full(200, np.iinfo(np.int64).max), g, "laplace", 5, 1)


def test_example_accepts_a_secure_generator_and_a_chacha20(built):
    noise_loops, _ = built
    a = noise_loops.add_noise(zeros(64), dpnoise.default_rng(), "laplace", 10, 1)
    b = noise_loops.add_noise(zeros(64), dpnoise.ChaCha20(), "laplace", 10, 1)
    assert not np.array_equal(a, b)
    seeded = noise_loops.add_noise(zeros(64), dpnoise.ChaCha20(3), "laplace", 10, 1, allow_insecure=True)
    assert np.array_equal(seeded, noise_loops.add_noise(zeros(64), dpnoise.default_rng(3), "laplace", 10, 1,
                                                        allow_insecure=True))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_example_gaussian_step_in_place(built, dtype):
    noise_loops, _ = built
    k = -10
    grad = np.linspace(-3, 3, 100_000).astype(dtype)
    before = grad.copy()
    out = noise_loops.add_gaussian_noise_(grad, dpnoise.default_rng(7), 1.1, grid_exponent=k, threads=2,
                                          allow_insecure=True)
    assert out is grad and grad.dtype == dtype
    units = grad.astype(np.float64) * 2.0 ** -k
    assert np.array_equal(units, np.round(units))  # every value on the grid, exactly
    noise = units - np.round(before.astype(np.float64) * 2.0 ** -k)
    # sigma = 1.1 * 2^10 grid units: the sample sd within 2% (about 9 standard errors) and the
    # mean within 5 standard errors (false alarm < 1e-6)
    sigma = 1.1 * 2 ** -k
    assert abs(noise.std() / sigma - 1) < 0.02
    assert abs(noise.mean()) < 5 * sigma / math.sqrt(noise.size)
    again = before.copy()
    noise_loops.add_gaussian_noise_(again, dpnoise.default_rng(7), 1.1, grid_exponent=k, threads=1,
                                    allow_insecure=True)
    assert np.array_equal(again, grad)  # reproducible for a seed, for any number of threads


def test_example_gaussian_step_refuses_bad_buffers(built):
    noise_loops, _ = built
    g = dpnoise.default_rng()
    read_only = np.zeros(10, dtype=np.float32)
    read_only.flags.writeable = False
    for bad, error in ((read_only, ValueError), (np.zeros(20, dtype=np.float32)[::2], ValueError),
                       (np.zeros(10, dtype=np.int64), TypeError), ([0.0, 1.0], ValueError)):
        with pytest.raises(error):
            noise_loops.add_gaussian_noise_(bad, g, 1.0)
    nan = np.array([0.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="NaN"):
        noise_loops.add_gaussian_noise_(nan, g, 1.0)
    assert np.isnan(nan[1]) and nan[0] == 0.0 and nan[2] == 1.0  # untouched: refused before any draw
    with pytest.raises(ValueError, match="sigma"):
        noise_loops.add_gaussian_noise_(np.zeros(3), g, 0.0)


# -- every entry of the table (capi_probe.pyx) ----------------------------------------------
def test_table_version_and_size(built):
    _, probe = built
    (version, size), (compiled_version, compiled_size) = probe.table_version()
    assert version == compiled_version == 2
    assert size == compiled_size


def keystream_words(seed, stream, n):
    """n 64-bit words of the seeded key's ChaCha20 stream, straight from the block function."""
    raw = _core.chacha20_stream_words(seed.to_bytes(32, "little"), stream, 0, (n + 7) // 8)
    raw = raw.astype(np.uint64)
    return [int(w) for w in (raw[0::2] | (raw[1::2] << np.uint64(32)))[:n]]


def test_streams_are_fresh_stream_ids_of_the_generator(built):
    _, probe = built
    g = dpnoise.default_rng(77)
    first, second = probe.Stream(g), probe.Stream(g)
    assert [first.draw("next_uint64")[1] for _ in range(20)] == keystream_words(77, 1, 20)
    assert [second.draw("next_uint64")[1] for _ in range(20)] == keystream_words(77, 2, 20)
    # the generator's next request reads stream 3: opening a stream consumed an id, so nothing
    # the generator hands out later repeats the stream's words
    after = g.discrete_laplace(5, size=50)
    reference = dpnoise.default_rng(77)
    reference.discrete_laplace(5, size=50)
    reference.discrete_laplace(5, size=50)
    assert np.array_equal(after, reference.discrete_laplace(5, size=50))


@pytest.mark.parametrize("name, a, b, status, words", [
    ("discrete_laplace", 1, 0, ERR_VALUE, "scale"),
    ("discrete_laplace", 1 << 62 | 1, 1, ERR_OVERFLOW, "scale"),
    ("geometric", 1, 0, ERR_VALUE, "scale"),
    ("geometric", 1, (1 << 62) + 1, ERR_OVERFLOW, "scale"),
    # above 2^56 an int64 draw could overflow after moving the stream: refused before any draw
    ("discrete_laplace", (1 << 56) + 1, 1, ERR_OVERFLOW, "scale"),
    ("geometric", 1 << 60, 3, ERR_OVERFLOW, "scale"),
    ("discrete_gaussian", 1, 0, ERR_VALUE, "variance"),
    ("discrete_gaussian", 1 << 63, 1, ERR_OVERFLOW, "variance"),
    ("bernoulli", 3, 2, ERR_VALUE, "p"),
    ("bernoulli", 0, 0, ERR_VALUE, "p"),
    ("bernoulli", 1, 1 << 63, ERR_OVERFLOW, "p"),
    ("bernoulli_exp", 1, 0, ERR_VALUE, "gamma"),
    ("bernoulli_exp", 1 << 63, 1, ERR_OVERFLOW, "gamma"),
])
def test_bad_parameters_give_a_status_and_draw_nothing(built, name, a, b, status, words):
    _, probe = built
    stream = probe.Stream(dpnoise.default_rng(9))
    got_status, _, message = stream.draw(name, a, b)
    assert got_status == status
    assert message.startswith(words)
    assert str(a) not in message and str(b) not in message  # names the argument, not the value
    # nothing was drawn: the stream still starts at its first word
    assert stream.draw("next_uint64")[1] == keystream_words(9, 1, 1)[0]
    with pytest.raises(OverflowError if status == ERR_OVERFLOW else ValueError):
        stream.draws(name, a, b, 1)


def test_null_arguments_give_a_status(built):
    _, probe = built
    assert probe.null_statuses() == [ERR_TYPE] + [ERR_VALUE] * 7
    assert probe.Stream(dpnoise.default_rng(1)).draw_null_out() == (ERR_VALUE, "out: must not be NULL")


@pytest.mark.parametrize("obj", [None, object(), 3, "ChaCha20", np.random.PCG64(1), np.random.default_rng(1)])
def test_open_refuses_anything_but_a_chacha20_generator(built, obj):
    _, probe = built
    status, message = probe.open_status(obj)
    assert status == ERR_TYPE
    assert "dpnoise.Generator" in message
    with pytest.raises(TypeError):
        probe.Stream(obj)


def test_open_accepts_generators_chacha20_and_the_core_object(built):
    _, probe = built
    for obj in (dpnoise.default_rng(1), dpnoise.ChaCha20(1), dpnoise.ChaCha20(1)._core):
        assert probe.open_status(obj)[0] == OK
    assert probe.Stream(dpnoise.default_rng()).is_secure == 1
    assert probe.Stream(dpnoise.default_rng(1)).is_secure == 0


def test_other_samplers(built):
    _, probe = built
    stream = probe.Stream(dpnoise.default_rng(21))
    n = 20000
    # Bernoulli(1/4): |count - n/4| within 5 standard deviations (alpha < 1e-6)
    count = sum(stream.draws("bernoulli", 1, 4, n))
    assert abs(count - n / 4) < 5 * math.sqrt(n * 0.25 * 0.75)
    # Bernoulli(exp(-1/2))
    p = math.exp(-0.5)
    count = sum(stream.draws("bernoulli_exp", 1, 2, n))
    assert abs(count - n * p) < 5 * math.sqrt(n * p * (1 - p))
    assert set(stream.draws("bernoulli_exp", 0, 1, 100)) == {1}
    assert set(stream.draws("bernoulli", 0, 5, 100)) == {0}
    # geometric, scale 2: mean q/(1-q) with q = exp(-1/2); sd of the mean within 6
    q = math.exp(-0.5)
    geo = np.array(stream.draws("geometric", 2, 1, n))
    assert geo.min() >= 0
    assert abs(geo.mean() - q / (1 - q)) < 6 * math.sqrt(q / (1 - q) ** 2 / n)
    # uniform on {0..6}: every value, none outside (alpha < 1e-6 for the counts)
    uni = np.array(stream.draws("uniform_at_most", 6, 0, 7000))
    assert set(uni.tolist()) == set(range(7))
    assert np.all(np.abs(np.bincount(uni) - 1000) < 5 * math.sqrt(7000 / 7 * 6 / 7))
    assert all(0 <= w < 1 << 64 for w in stream.draws("uniform_at_most", (1 << 64) - 1, 0, 10))
    assert stream.draws("discrete_laplace", 0, 1, 50) == [0] * 50
    assert stream.draws("discrete_gaussian", 0, 1, 50) == [0] * 50


# -- prepared samplers -----------------------------------------------------------------------
def test_prepared_samplers_follow_the_laws(built):
    _, probe = built
    n = 20000
    # alpha = 1e-4 for each chi-square test; fixed seeds
    stream = probe.Stream(dpnoise.default_rng(201))
    laplace = np.array(probe.Sampler(LAPLACE, 3, 2).sample(stream, n))
    assert chi_square_pvalue(laplace, lambda x: math.exp(-abs(x) * 2 / 3), 8) > 1e-4
    assert chi_square_pvalue(laplace, lambda x: math.exp(-abs(x) / 2), 8) < 1e-4  # the test can fail
    gaussian = np.array(probe.Sampler(GAUSSIAN, 9, 4).sample(stream, n))
    assert chi_square_pvalue(gaussian, lambda x: math.exp(-x * x / (2 * 9 / 4)), 4) > 1e-4
    # geometric, scale 2: mean q/(1-q), q = exp(-1/2), within 6 standard errors
    q = math.exp(-0.5)
    geometric = np.array(probe.Sampler(GEOMETRIC, 2, 1).sample(stream, n))
    assert geometric.min() >= 0
    assert abs(geometric.mean() - q / (1 - q)) < 6 * math.sqrt(q / (1 - q) ** 2 / n)
    # a large scale (the core's large-scale table path): the standard deviation of the
    # discrete Laplace of scale 1000 is about 1000 sqrt(2); within 10% for 20000 draws
    wide = np.array(probe.Sampler(LAPLACE, 1000, 1).sample(stream, n), dtype=float)
    assert abs(wide.std() / (1000 * math.sqrt(2)) - 1) < 0.1
    assert probe.Sampler(LAPLACE, 0, 1).sample(stream, 20) == [0] * 20
    assert probe.Sampler(GAUSSIAN, 0, 1).sample(stream, 20) == [0] * 20


def test_prepared_samplers_match_the_cores_table_path(built):
    _, probe = built
    # 5000 draws is a request the core serves from the same tables, reading stream 1
    for law, value in ((LAPLACE, Fraction(3, 2)), (GAUSSIAN, Fraction(9, 4))):
        stream = probe.Stream(dpnoise.default_rng(31))
        via_capi = probe.Sampler(law, value.numerator, value.denominator).sample(stream, 5000)
        g = dpnoise.default_rng(31)
        via_core = g.discrete_laplace(value, size=5000) if law == LAPLACE else g.discrete_gaussian(
            variance=value, size=5000)
        assert via_capi == via_core.tolist()


def test_one_sampler_serves_several_streams(built):
    _, probe = built
    sampler = probe.Sampler(GAUSSIAN, 25, 1)
    g = dpnoise.default_rng(8)
    a, b = probe.Stream(g), probe.Stream(g)
    first, second = sampler.sample(a, 100), sampler.sample(b, 100)
    assert first != second
    again = probe.Stream(dpnoise.default_rng(8))
    assert sampler.sample(again, 100) == first


@pytest.mark.parametrize("law, num, den, status", [
    (0, 1, 1, ERR_VALUE), (4, 1, 1, ERR_VALUE), (LAPLACE, 1, 0, ERR_VALUE), (GAUSSIAN, 1, 0, ERR_VALUE),
    (GEOMETRIC, 1, 0, ERR_VALUE), (LAPLACE, (1 << 62) + 1, 1, ERR_OVERFLOW),
    (GAUSSIAN, 1, (1 << 62) + 1, ERR_OVERFLOW), (LAPLACE, 1, 1, OK),
    (LAPLACE, (1 << 56) + 1, 1, ERR_OVERFLOW), (GEOMETRIC, 1 << 60, 3, ERR_OVERFLOW),
])
def test_sampler_new_checks_its_arguments(built, law, num, den, status):
    _, probe = built
    assert probe.sampler_status(law, num, den)[0] == status


def test_sampler_draw_with_null_arguments(built):
    _, probe = built
    stream = probe.Stream(dpnoise.default_rng(1))
    assert probe.Sampler(LAPLACE, 1, 1).draw_null(stream) == (ERR_VALUE, "sampler: must not be NULL",
                                                             ERR_VALUE, ERR_VALUE)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
@pytest.mark.parametrize("secure", [True, False])
def test_a_secure_stream_refuses_to_draw_in_a_forked_child(built, secure):
    _, probe = built
    stream = probe.Stream(dpnoise.default_rng() if secure else dpnoise.default_rng(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads (Python >= 3.12)
        pid = os.fork()
    if pid == 0:  # the child: exit with the status of one draw
        os._exit(stream.draw("next_uint64")[0])
    _, wait_status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(wait_status) == (ERR_FORKED if secure else OK)
    assert stream.draw("next_uint64")[0] == OK  # the parent's stream is unaffected


# -- bulk fills (version 2) ------------------------------------------------------------------
def test_bulk_fill_follows_the_law_and_ignores_threads(built):
    _, probe = built
    sampler = probe.Sampler(GAUSSIAN, 9, 4)
    results = []
    for threads in (1, 2, 3):
        status, message, out = sampler.fill(probe.Stream(dpnoise.default_rng(61)), 140_000, threads)
        assert status == OK and message == ""
        results.append(out)
    assert all(np.array_equal(results[0], r) for r in results[1:])
    # alpha = 1e-4 (fixed seed)
    assert chi_square_pvalue(results[0][:20000], lambda x: math.exp(-x * x / (2 * 9 / 4)), 4) > 1e-4
    # the stream moves on: a second fill from the same stream differs from the first
    stream = probe.Stream(dpnoise.default_rng(61))
    first, second = sampler.fill(stream, 1000)[2], sampler.fill(stream, 1000)[2]
    assert not np.array_equal(first, second)
    assert sampler.fill(stream, 0)[0] == OK


def test_bulk_entries_check_their_arguments(built):
    _, probe = built
    assert probe.bulk_null_statuses() == [ERR_VALUE] * 3
    stream = probe.Stream(dpnoise.default_rng(62))
    geometric = probe.Sampler(GEOMETRIC, 2, 1)
    assert geometric.fill(stream, 10)[0] == OK  # any law fills
    x = np.ones(4)
    assert geometric.grid_add(stream, x, 0, 10)[0] == ERR_VALUE  # one-sided noise: refused
    laplace = probe.Sampler(LAPLACE, 2, 1)
    for values, k, bound, words in (
            (np.ones(4), 1024, 10, "grid_exponent"), (np.ones(4), -1075, 10, "grid_exponent"),
            (np.ones(4, dtype=np.float32), 1024, 10, "grid_exponent"),
            (np.ones(4, dtype=np.float32), -1075, 10, "grid_exponent"),
            (np.ones(4), 0, -1, "bound"), (np.ones(4), 0, (1 << 52) + 1, "bound"),
            (np.ones(4, dtype=np.float32), 0, (1 << 52) + 1, "bound"),
            (np.array([1.0, np.inf]), 0, 10, "values"), (np.array([np.nan], dtype=np.float32), 0, 10, "values")):
        before = values.copy()
        status, message = laplace.grid_add(stream, values, k, bound)
        assert status == ERR_VALUE and message.startswith(words)
        np.testing.assert_array_equal(values, before)  # refused before anything was written


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grid_kernel_is_exact_clamped_and_ignores_threads(built, dtype):
    _, probe = built
    sampler = probe.Sampler(LAPLACE, 4, 1)  # scale 4 grid units
    k = -3
    x = np.linspace(-100, 100, 150_001).astype(dtype)
    outs = []
    for threads in (1, 2):
        y = x.copy()
        assert sampler.grid_add(probe.Stream(dpnoise.default_rng(63)), y, k, 400, threads)[0] == OK
        outs.append(y)
    assert np.array_equal(outs[0], outs[1])
    y = outs[0].astype(np.float64) * 2.0 ** -k
    assert np.array_equal(y, np.round(y))
    v = np.clip(np.round(x.astype(np.float64) * 2.0 ** -k), -400, 400)  # ties to even, clamped
    noise = y - v
    # discrete Laplace of scale 4: variance 2 e^{-1/4} / (1 - e^{-1/4})^2 ~ 31.5; the sample
    # variance within 5% (about 8 standard errors) and the mean within 5 standard errors
    q = math.exp(-0.25)
    var = 2 * q / (1 - q) ** 2
    assert abs(noise.var() / var - 1) < 0.05
    assert abs(noise.mean()) < 5 * math.sqrt(var / noise.size)


@pytest.mark.parametrize("dtype, k", [(np.float32, 100), (np.float64, 1000)])
def test_grid_kernel_overflow_leaves_nothing_unnoised(built, dtype, k):
    _, probe = built
    # noise of scale 2^30 grid units on the grid 2^k: |y| 2^k passes the type's largest value
    # (2^128 for float32, 2^1024 for float64) for most draws
    sampler = probe.Sampler(LAPLACE, 1 << 30, 1)
    x = np.arange(1000, dtype=dtype)
    status, message = sampler.grid_add(probe.Stream(dpnoise.default_rng(64)), x, k, 1 << 20)
    assert status == ERR_OVERFLOW and "grid" in message
    assert np.all(np.isnan(x))


def test_grid_kernel_float32_rounds_the_exact_value(built):
    _, probe = built
    # a fine grid (2^-40) on float32: the exact double y 2^k, rounded to float32
    sampler = probe.Sampler(GAUSSIAN, 1 << 60, 1)  # sigma = 2^30 grid units = 2^-10
    x32 = np.linspace(-50, 50, 10_001).astype(np.float32)
    x64 = x32.astype(np.float64)
    assert sampler.grid_add(probe.Stream(dpnoise.default_rng(65)), x32, -40, 1 << 52)[0] == OK
    assert sampler.grid_add(probe.Stream(dpnoise.default_rng(65)), x64, -40, 1 << 52)[0] == OK
    assert np.array_equal(x32, x64.astype(np.float32))  # same draws: float32 = rounded double
    assert not np.array_equal(x32.astype(np.float64), np.linspace(-50, 50, 10_001).astype(np.float32))
