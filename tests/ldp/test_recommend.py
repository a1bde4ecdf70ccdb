"""recommend() weighs variance, server time and state size, with costs calibrated on this
machine, and never recommends a protocol that cannot estimate the domain (issue 22, item 5)."""
import pytest

from dpnoise import ldp


def test_without_limits_the_least_variance_wins_as_before():
    assert ldp.recommend(2.0, 10) == "grr"
    assert ldp.recommend(2.0, 50_000) == "olh"


def test_a_server_time_limit_moves_away_from_olh():
    # OLH's server tests every report against every item: 10^7 x 50,000 is minutes
    rows = {r["protocol"]: r for r in ldp.compare(2.0, 50_000, n=10**7)}
    assert rows["olh"]["server_seconds"] > 20 * rows["hadamard"]["server_seconds"]
    choice = ldp.recommend(2.0, 50_000, n=10**7, server_seconds=rows["olh"]["server_seconds"] / 10)
    assert choice != "olh" and rows[choice]["server_seconds"] <= rows["olh"]["server_seconds"] / 10


def test_a_memory_limit_is_respected():
    rows = {r["protocol"]: r for r in ldp.compare(2.0, 50_000)}
    choice = ldp.recommend(2.0, 50_000, memory_bytes=450_000)
    assert rows[choice]["state_bytes"] <= 450_000
    with pytest.raises(ValueError, match="within the limits"):
        ldp.recommend(2.0, 50_000, memory_bytes=300_000)  # every state here is at least 8 d bytes


@pytest.mark.parametrize("d", [2**36, 2**40])
def test_never_a_protocol_that_cannot_estimate_the_domain(d):
    # 0.4.0 returned zmatrix at d = 2^40: its estimate is d W/64 words and 8 TiB of output
    choice = ldp.recommend(1.0, d)
    rows = {r["protocol"]: r for r in ldp.compare(1.0, d)}
    assert rows[choice]["supported"] and not rows[choice]["full_estimate"]
    assert not rows["zmatrix"]["supported"] and "cannot estimate" in rows["zmatrix"]["reason"]


def test_compare_table_and_bad_input():
    rows = ldp.compare(1.0, 1000, n=5000)
    assert {r["protocol"] for r in rows} == set(ldp.protocols())
    supported = [r for r in rows if r["supported"]]
    assert [r["variance_per_user"] for r in supported] == sorted(r["variance_per_user"] for r in supported)
    assert all(r["client_seconds"] >= 0 and r["server_seconds"] >= 0 for r in supported)
    with pytest.raises(ValueError, match="n"):
        ldp.compare(1.0, 1000, n=0)
    with pytest.raises(ValueError, match="server_seconds"):
        ldp.recommend(1.0, 1000, server_seconds=-1)
    with pytest.raises(ValueError, match="within the limits"):
        ldp.recommend(1.0, 1000, memory_bytes=8)
