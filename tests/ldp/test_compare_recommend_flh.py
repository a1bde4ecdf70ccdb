"""Issue #33, item 9: compare() states each protocol's own error, FLH's pool term included (its
largest value over all data sets, since compare() never sees the data), and recommend()
considers every protocol compare() lists and says so when, without n, it picks a server whose
work grows as n·d."""
import pickle

import numpy as np
import pytest

import dpnoise
from dpnoise import ldp
from dpnoise.ldp._choose import TIE, Recommendation
from dpnoise.ldp.local_hashing import pool_variance_bound

EPS, D, N = 2.0, 2000, 200_000


def flh_row(n=N, d=D, eps=EPS):
    return {r["protocol"]: r for r in ldp.compare(eps, d, n=n)}["flh"]


def run_flh(items, seed):
    fo = ldp.FrequencyOracle("flh", EPS, D, pool_key=1000 + seed)  # default k′ and g, as compare()'s
    agg = fo.aggregator().add(fo.client(dpnoise.default_rng(seed), allow_insecure=True).privatize(items))
    return fo, agg


def test_flh_rms_is_its_own_worst_case_and_matches_a_simulation_of_it():
    # the worst data for an item no device holds: every device holds item 0. Over the d − 1 other
    # items (one seeded run, one fixed pool) the measured rms estimates sqrt(E error²); its
    # relative standard deviation is about sqrt(1/(2·1999)) ≈ 1.6%, so a 10% tolerance is 6 sd:
    # a false alarm below 1e-8. 0.7.1 stated OLH's rms here (381 against about 850 measured).
    row = flh_row()
    fo, agg = run_flh(np.zeros(N, dtype=np.int64), seed=1)
    g, k = fo.g, fo.options["k_prime"]
    want = N * fo.variance_per_user() + pool_variance_bound(N, g, k)
    assert row["rms_error"] == pytest.approx(np.sqrt(want), rel=1e-12)
    assert row["variance_per_user"] == pytest.approx(want / N, rel=1e-12)
    olh = {r["protocol"]: r for r in ldp.compare(EPS, D, n=N)}["olh"]
    assert row["rms_error"] > 2 * olh["rms_error"]  # the pool term dominates at this n
    rare = agg.estimate()[1:]
    measured = float(np.sqrt(np.mean(rare ** 2)))
    assert measured == pytest.approx(row["rms_error"], rel=0.10)
    # the aggregator's own stated error (pool term estimated from its state) agrees with it
    assert float(np.median(agg.stderr()[1:])) == pytest.approx(row["rms_error"], rel=0.10)


def test_flh_bound_is_never_below_real_data():
    # Zipf(1.1) over the domain: the measured rms and every stated stderr stay below compare()'s
    # bound (here by a wide margin: deterministic given the seeds, no tolerance needed)
    g = np.random.default_rng(7)
    p = 1.0 / np.arange(1, D + 1) ** 1.1
    items = g.choice(D, size=N, p=p / p.sum()).astype(np.int64)
    true = np.bincount(items, minlength=D)
    row = flh_row()
    fo, agg = run_flh(items, seed=2)
    measured = float(np.sqrt(np.mean((agg.estimate() - true) ** 2)))
    assert measured <= row["rms_error"]
    assert float(agg.stderr().max()) <= row["rms_error"]


def test_the_issue_setting_states_flh_above_its_measured_error():
    # ε = 2, d = 50,000, n = 10^7: 0.7.1 stated 2,692 (OLH's) against 6,969 measured, 6,978 stderr
    row = flh_row(n=10**7, d=50_000)
    assert row["rms_error"] > 6_978
    fo = ldp.FrequencyOracle("flh", 2.0, 50_000)
    assert row["rms_error"] ** 2 == pytest.approx(fo.worst_case_variance(10**7), rel=1e-12)


def test_pooled_olh_states_its_pool_term_too():
    fo = ldp.FrequencyOracle("olh", 2.0, 1000, pool_size=1024)
    plain = ldp.FrequencyOracle("olh", 2.0, 1000)
    assert plain.worst_case_variance(N) == pytest.approx(N * plain.variance_per_user())
    assert fo.worst_case_variance(N) == pytest.approx(N * fo.variance_per_user()
                                                      + pool_variance_bound(N, fo.g, 1024))


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0, 8.0])
@pytest.mark.parametrize("d", [4, 16, 1024, 65_536])
@pytest.mark.parametrize("n", [None, 10**4, 10**7])
def test_recommend_takes_the_least_error_of_every_protocol_compare_lists(eps, d, n):
    # property: the choice is within TIE of the least variance of ALL supported rows (FLH, SUE
    # and dBitFlip included, not only protocols that declare a cost rank)
    rows = [r for r in ldp.compare(eps, d, n=n) if r["supported"]]
    choice = ldp.recommend(eps, d, n=n)
    chosen = next(r for r in rows if r["protocol"] == choice)
    assert chosen["variance_per_user"] <= (1 + TIE) * min(r["variance_per_user"] for r in rows)
    # without n, an O(n·d) server is never picked silently
    assert bool(choice.note) == (n is None and chosen["server_grows_with_d"])


def test_recommend_can_pick_flh():
    # 0.7.1 never considered FLH: here only its state (k′ g counters) fits a 1 MB limit with a
    # small error, so it was "no protocol" (ValueError)
    assert ldp.recommend(2.0, 2**20, n=10**4, memory_bytes=10**6) == "flh"


def test_without_n_an_n_times_d_server_is_said_so():
    rows = {r["protocol"]: r for r in ldp.compare(2.0, 50_000)}
    assert rows["olh"]["server_grows_with_d"] and rows["oue"]["server_grows_with_d"]
    assert not rows["flh"]["server_grows_with_d"] and not rows["hadamard"]["server_grows_with_d"]
    choice = ldp.recommend(2.0, 50_000)
    assert isinstance(choice, Recommendation) and choice == "olh"
    assert "n·d" in choice.note and "pass n=" in choice.note and repr(choice) == "'olh'"
    with_n = ldp.recommend(2.0, 50_000, n=10**5)
    assert with_n == "olh" and with_n.note == "" and repr(with_n) == "'olh'"
    assert ldp.recommend(2.0, 10).note == ""  # GRR: O(n + d)
    again = pickle.loads(pickle.dumps(choice))
    assert again == choice and again.note == choice.note
    assert ldp.FrequencyOracle(choice, 2.0, 50_000).name == "olh"
