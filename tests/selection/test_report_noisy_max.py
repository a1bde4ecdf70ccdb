"""report_noisy_max / ReportNoisyMax / ExponentialMechanism: shapes, dtypes and strides, threads,
budgets, privacy descriptors, bad input, memory. (The selection laws themselves are checked in
test_selection_law.py.)"""
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dpnoise
from dpnoise import _core
from dpnoise.accounting import PrivacyBudget
from dpnoise.accounting.losses import ReportNoisyMax as ReportNoisyMaxLoss

NOISES = ("exponential", "gumbel", "laplace")


def rng(seed=7):
    return dpnoise.default_rng(seed)


def rnm(scores, epsilon=1.0, seed=7, **kw):
    return dpnoise.report_noisy_max(scores, epsilon, rng=rng(seed), allow_insecure=True, **kw)


# -- shapes -----------------------------------------------------------------------------------
@pytest.mark.parametrize("noise", NOISES)
def test_shapes_and_types(noise):
    one = rnm([0, 1, 2, 5], noise=noise)
    assert isinstance(one, int) and 0 <= one < 4
    top = rnm([0, 1, 2, 5], noise=noise, k=3)
    assert top.shape == (3,) and top.dtype == np.int64 and len(set(top.tolist())) == 3
    S = np.arange(24).reshape(4, 6)
    assert rnm(S, noise=noise).shape == (4,)
    assert rnm(S, noise=noise, k=2).shape == (4, 2)
    by_column = rnm(S, noise=noise, axis=0, k=2)  # 6 candidate sets of 4 candidates
    assert by_column.shape == (6, 2) and by_column.max() < 4


def test_every_candidate_selected_with_k_equal_n():
    out = rnm(np.array([[5, 1, 3], [0, 0, 0]]), k=3)
    assert sorted(out[0].tolist()) == [0, 1, 2] and sorted(out[1].tolist()) == [0, 1, 2]


def test_clear_winner_wins():
    S = np.zeros((200, 50), dtype=np.int64)
    S[np.arange(200), np.arange(200) % 50] = 10_000
    for noise in NOISES:
        assert (rnm(S, noise=noise) == np.arange(200) % 50).all()


# -- dtypes and strides: read in place, same answer as a contiguous int64 copy ----------------
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("noise", NOISES)
def test_integer_dtypes_and_strides_match_int64(dtype, noise):
    base = (np.arange(40 * 30).reshape(40, 30) * 7919) % (2 if dtype == np.bool_ else 100)
    S = base.astype(dtype)
    want = rnm(base.astype(np.int64), noise=noise, k=2)
    assert (rnm(S, noise=noise, k=2) == want).all()
    big = np.zeros((80, 60), dtype=dtype)
    big[::2, ::2] = S  # a strided view: every other row and column
    assert (rnm(big[::2, ::2], noise=noise, k=2) == want).all()
    assert (rnm(np.ascontiguousarray(S.T), noise=noise, k=2, axis=0) == want).all()  # transposed
    flipped = np.ascontiguousarray(S[:, ::-1])[:, ::-1]  # negative column stride
    assert (rnm(flipped, noise=noise, k=2) == want).all()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.longdouble])
def test_real_dtypes(dtype):
    S = np.array([[0.0, 0.25, 3.5, 1.0]] * 50, dtype=dtype)
    out = rnm(S, epsilon=20.0, sensitivity=0.1)
    assert out.shape == (50,) and (out == 2).mean() > 0.9


def test_non_native_byte_order():
    S = np.arange(12, dtype=">i4").reshape(3, 4)
    assert (rnm(S) == rnm(S.astype(np.int32))).all()


def test_extreme_integers_do_not_wrap():
    info = np.iinfo(np.int64)
    out = rnm(np.array([[info.min, info.max, 0, info.max]] * 100), noise="laplace")
    assert set(out.tolist()) <= {1, 3}
    out = rnm(np.array([[0, np.iinfo(np.uint64).max, 5]], dtype=np.uint64))
    assert out.tolist() == [1]


# -- threads and reproducibility --------------------------------------------------------------
@pytest.mark.parametrize("noise", NOISES)
def test_output_does_not_depend_on_threads(noise):
    S = (np.arange(500 * 40).reshape(500, 40) * 2654435761) % 97
    a = rnm(S, noise=noise, k=2, threads=1)
    b = rnm(S, noise=noise, k=2, threads=2)
    assert (a == b).all()


def test_forced_exact_path_has_the_same_law():
    # the exponential mechanism with every coin decided by exact refinement against its closed
    # form; chi-square with 3 degrees of freedom at alpha = 1e-6 (critical value 30.66)
    g = rng(11)
    scores = np.array([[0, 1, 2, 5]] * 20_000, dtype=np.int64)
    out = _core._select_rows_forced(g._core, "exponential_mechanism", scores, None, 1, 2, 1, 1)[:, 0]
    w = np.exp(np.array([0, 1, 2, 5]) / 2)
    expected = w / w.sum() * len(out)
    chi2 = float((((np.bincount(out, minlength=4) - expected) ** 2) / expected).sum())
    assert chi2 < 30.66


# -- privacy accounting and budgets -----------------------------------------------------------
def test_privacy_loss_descriptors():
    m = dpnoise.ReportNoisyMax(0.5, noise="gumbel", k=3, rng=rng(), allow_insecure=True)
    loss = m.privacy_loss((10, 7))
    assert loss == ReportNoisyMaxLoss(0.5, "exponential_mechanism", selections=30)
    assert math.isclose(loss.pure_epsilon(), 15.0) and math.isclose(loss.zcdp_rho(), 30 * 0.25 / 8)
    assert m.privacy_loss((7,)).pure_epsilon() == pytest.approx(1.5)
    d = dpnoise.ReportNoisyMax(0.5, disjoint_rows=True, rng=rng(), allow_insecure=True)
    assert d.privacy_loss((10, 7)) == ReportNoisyMaxLoss(0.5, "permute_and_flip", selections=1)
    assert dpnoise.ReportNoisyMax(1.0, noise="laplace", rng=rng(), allow_insecure=True).privacy_loss((4,)).method == "laplace"


def test_budget_charged_once_per_release_before_noise():
    budget = PrivacyBudget(epsilon=10.0)
    m = dpnoise.ReportNoisyMax(1.0, k=2, rng=rng(3), budget=budget, allow_insecure=True)
    m.release(np.arange(12).reshape(3, 4))  # 3 rows x 2 selections = 6
    assert budget.spent_epsilon == pytest.approx(6.0)
    g = rng(3)
    m2 = dpnoise.ReportNoisyMax(1.0, k=2, rng=g, budget=budget, allow_insecure=True)
    with pytest.raises(dpnoise.BudgetExceededError):
        m2.release(np.arange(12).reshape(3, 4))
    assert budget.spent_epsilon == pytest.approx(6.0)
    assert g.random_raw() == rng(3).random_raw()  # no noise was drawn


BAD = [
    (dict(scores=[]), ValueError, "zero-size"),
    (dict(scores=np.zeros((0, 3))), ValueError, "zero-size"),
    (dict(scores=np.zeros((3, 0))), ValueError, "zero-size"),
    (dict(scores=[1.0, np.nan]), ValueError, "finite"),
    (dict(scores=[1.0, np.inf]), ValueError, "finite"),
    (dict(scores=[1, 2], epsilon=0), ValueError, "epsilon"),
    (dict(scores=[1, 2], epsilon=-1.0), ValueError, "epsilon"),
    (dict(scores=[1, 2], epsilon=float("nan")), ValueError, "epsilon"),
    (dict(scores=[1, 2], epsilon=float("inf")), ValueError, "epsilon"),
    (dict(scores=[1, 2], k=0), ValueError, "k"),
    (dict(scores=[1, 2], k=3), ValueError, "k"),
    (dict(scores=[1, 2], k=1.0), TypeError, "k"),
    (dict(scores=[1, 2], k=True), TypeError, "k"),
    (dict(scores=[1, 2], axis=1), ValueError, "axis"),
    (dict(scores=[[1, 2]], axis=2), ValueError, "axis"),
    (dict(scores=[[1, 2]], axis=0.0), TypeError, "axis"),
    (dict(scores=np.zeros((2, 2, 2))), ValueError, "2-D"),
    (dict(scores=5), ValueError, "1-D"),
    (dict(scores=np.array([1, "a"], dtype=object)), TypeError, "scores"),
    (dict(scores=["a", "b"]), TypeError, "scores"),
    (dict(scores=[1 + 2j, 3]), TypeError, "scores"),
    (dict(scores=[1, 2], noise="gauss"), ValueError, "noise"),
    (dict(scores=[1, 2], monotonic=1), TypeError, "monotonic"),
    (dict(scores=[1, 2], sensitivity=0), ValueError, "sensitivity"),
    (dict(scores=[1, 2], sensitivity=float("nan")), ValueError, "sensitivity"),
    (dict(scores=[1, 2], threads=0), ValueError, "threads"),
]


@pytest.mark.parametrize("case,error,word", BAD)
def test_bad_input_refused_before_charge_and_draw(case, error, word):
    case = dict(case)
    scores = case.pop("scores")
    epsilon = case.pop("epsilon", 1.0)
    g = rng(5)
    with pytest.raises(error, match=word):
        dpnoise.report_noisy_max(scores, epsilon, rng=g, allow_insecure=True, **case)
    assert g.random_raw() == rng(5).random_raw()


def test_bad_release_leaves_budget_untouched():
    budget = PrivacyBudget(epsilon=10.0)
    m = dpnoise.ReportNoisyMax(1.0, k=2, rng=rng(), budget=budget, allow_insecure=True)
    for bad in ([1.0, np.nan], [3], np.zeros((2, 2, 2)), ["x", "y"]):
        with pytest.raises((ValueError, TypeError)):
            m.release(bad)
    assert budget.spent_epsilon == 0.0


def test_insecure_generator_refused_and_secure_default():
    with pytest.raises(dpnoise.InsecureGeneratorError):
        dpnoise.report_noisy_max([1, 2], 1.0, rng=rng())
    assert dpnoise.report_noisy_max([0, 10**6], 1.0) == 1  # default_rng(): secure
    with pytest.raises(TypeError, match="rng"):
        dpnoise.report_noisy_max([1, 2], 1.0, rng=np.random.default_rng(1))


def test_accuracy_bound():
    m = dpnoise.ReportNoisyMax(1.0, rng=rng(), allow_insecure=True)
    a = m.accuracy(0.05, (1000,))
    assert a == pytest.approx(2 * math.log(1000 / 0.05))  # ln(n/beta)/gamma, gamma = 1/2
    assert m.accuracy(0.01, (1000,)) > a
    lap = dpnoise.ReportNoisyMax(1.0, noise="laplace", rng=rng(), allow_insecure=True)
    assert lap.accuracy(0.05, (1000,)) == pytest.approx(2 * 2 * math.log(2000 / 0.05))
    # empirical: the selected score is within the bound in (far) more than 95% of rows
    rs = np.random.default_rng(0)
    S = rs.integers(0, 100, size=(2000, 1000))
    for mech in (m, lap):
        picked = S[np.arange(2000), mech.release(S)]
        assert np.mean(S.max(axis=1) - picked <= mech.accuracy(0.05, (1000,))) >= 0.95


def test_exponential_mechanism_select():
    em = dpnoise.ExponentialMechanism(5.0, 1.0, rng=rng(), allow_insecure=True)
    assert em.select(["a", "b", "c"], [0, 0, 100]) == "c"
    assert em.utility_sensitivity == 1.0
    assert sorted(dpnoise.ExponentialMechanism(5.0, k=2, rng=rng(), allow_insecure=True)
                  .select(["a", "b", "c"], [0, 100, 100])) == ["b", "c"]
    with pytest.raises(ValueError, match="differ in length"):
        em.select(["a", "b"], [1, 2, 3])
    with pytest.raises(ValueError, match="1-D"):
        em.select(["a"], [[1]])


# -- memory: no copy of the scores, no noise matrix -------------------------------------------
def test_memory_stays_o_rows_plus_columns():
    """Peak resident memory grows by well under the size of the scores (80 MB) for every method,
    k = 2 and real scores (measured in a fresh process: ru_maxrss is a high-water mark)."""
    code = textwrap.dedent("""
        import resource, numpy as np, dpnoise
        def peak(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        S = np.random.default_rng(0).integers(0, 1000, size=(4000, 5000), dtype=np.int32)
        F = S[:, :2500].astype(np.float64)  # 80 MB too; a strided view
        g = dpnoise.default_rng(1)
        dpnoise.report_noisy_max(S[:10], 1.0, rng=g, allow_insecure=True)  # warm up
        base = peak()
        for noise in ("exponential", "gumbel", "laplace"):
            dpnoise.report_noisy_max(S, 1.0, noise=noise, k=2, rng=g, allow_insecure=True, threads=2)
            dpnoise.report_noisy_max(F[:, ::2], 1.0, noise=noise, rng=g, allow_insecure=True)
        print(peak() - base)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    grown = int(out.stdout.strip())
    assert grown < 8 * 2**20, f"peak memory grew by {grown / 2**20:.1f} MiB for 80 MB of scores"
