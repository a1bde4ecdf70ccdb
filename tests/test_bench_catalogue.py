"""Issue 38 item 3 (per-call rows) and the catalogue's families: each new row runs in --quick and
carries its utility metric; rows of one family with utility share one size."""
from dataclasses import replace

import pytest

from dpnoise import bench

PER_CALL = {"per call: one discrete-Laplace draw": ("variance_ratio",),
            "per call: one Laplace mechanism release": ("mse_over_2b2",),
            "per call: ldp grr client, one report": ("rms_error", "ci_coverage")}


def test_per_call_rows_run_in_quick_with_their_utility_and_a_reference():
    rec = bench.run(quick=True, repeats=1, only="per call", seed=2, utility_repeats=2)
    rows = {r["workload"]: r for r in rec["results"]}
    for prefix, metrics in PER_CALL.items():
        (name,) = [n for n in rows if n.startswith(prefix)]
        row = rows[name]
        assert "error" not in row and row["items"] == 2_000 and row["unit"] == "ops"
        assert tuple(row["utility"]) == metrics and all(v is not None for v in row["utility"].values())
        assert row["reference"] is not None and row["ratio"] > 0
        assert row["family"].startswith("per call")
    # sanity of the figures (2,000 calls, 2 repetitions): the sd of a variance ratio from 4,000
    # Laplace draws is about 0.04 and of MSE/2b^2 about 0.05: 0.25 is > 5 sd (false alarm < 1e-6)
    assert abs(rows[[n for n in rows if "draw" in n][0]]["utility"]["variance_ratio"] - 1) < 0.25
    assert abs(rows[[n for n in rows if "release" in n][0]]["utility"]["mse_over_2b2"] - 1) < 0.25


NEW_ROWS = {"constant-time discrete Laplace": ("variance_ratio", "exact samplers"),
            "constant-time discrete Gaussian": ("variance_ratio", "exact samplers"),
            "DP-SGD step": ("mse_over_sigma2", "DP-SGD step")}


@pytest.mark.parametrize("only", sorted(NEW_ROWS))
def test_constant_time_and_dp_sgd_rows_run_in_quick_with_their_utility(only):
    metric, family = NEW_ROWS[only]
    (row,) = bench.run(quick=True, repeats=1, only=only, seed=2, utility_repeats=2)["results"]
    assert "error" not in row and row["family"] == family and row["ratio"] > 0
    # 2 x 100,000-200,000 draws: the sd of the ratio is below 0.01, so 0.05 is > 5 sd (false alarm < 1e-6)
    assert abs(row["utility"][metric] - 1) < 0.05


def test_rows_of_a_family_with_utility_share_one_size():
    by_family = {}
    ctx = bench.make_context(quick=True)
    for w in bench.workloads():
        if w.family is not None and w.utility is not None:
            eps = w.epsilon
            by_family.setdefault(w.family, set()).add(w.items(replace(ctx, epsilon=eps, workload=w.name)))
    assert "ldp frequency oracle servers, d=1024" in by_family
    for family, sizes in by_family.items():
        if family.startswith("per call"):
            continue  # calls, not items: one size too, checked above
        assert len(sizes) == 1, (family, sizes)  # OLH's server had 1/10 of the reports before


def test_mean_oracle_rows_cover_every_method_and_carry_utility():
    from dpnoise.ldp.numeric.mean import MeanConfiguration

    rows = bench.run(quick=True, repeats=1, only="ldp mean oracle", seed=3)["results"]
    assert sorted(r["workload"].split()[3].rstrip(":") for r in rows) == sorted(MeanConfiguration.registered())
    for row in rows:
        assert "error" not in row and row["family"].startswith("ldp mean oracles") and row["items"] == 20_000
        # 2,500 reports per coordinate at epsilon 1: per-coordinate sd <= 0.05 (Duchi et al. 2018,
        # the largest variance of the methods), so rms over 8 coordinates > 0.12 has chance < 1e-6
        assert 0 < row["utility"]["rms_error"] < 0.12
        assert 0 <= row["utility"]["ci_coverage"] <= 1


def test_string_heavy_hitters_rows_run_in_quick_with_recall_and_time():
    rows = {r["workload"]: r for r in bench.run(quick=True, repeats=1, only="strings of up to 64 bytes", seed=4,
                                                 utility_repeats=2)["results"]}
    (client,) = [r for n, r in rows.items() if "client:" in n]
    (server,) = [r for n, r in rows.items() if "top(10)" in n]
    for row in (client, server):
        assert "error" not in row and row["items"] == 100_000 and row["throughput"] > 0
        assert "64" in row["size"] and row["family"].startswith("ldp heavy hitters over strings")
    assert client["utility"] is None
    # seeded, so deterministic; over 10 seeds the recall at 10^5 devices was 0.3-0.4 (3-4 of the
    # top 10 found): 0 would mean string_pem found none of its 10 most frequent names
    assert 0.1 <= server["utility"]["recall"] <= 1 and server["utility_stats"]["recall"]["n"] == 2


def test_daily_collection_rows_run_in_quick_with_attack_and_rms_against_one_shot():
    rows = bench.run(quick=True, repeats=1, only="ldp daily collection", seed=5, utility_repeats=2)["results"]
    by = {("fresh" if "fresh" in r["workload"] else "memo"): r for r in rows}
    assert sorted(by) == ["fresh", "memo"]
    for row in rows:
        assert "error" not in row and row["items"] == 20_000 and row["family"].startswith("ldp daily collection")
        assert set(row["utility"]) == {"attack_success_30d", "rms_over_one_shot"}
    fresh, memo = by["fresh"]["utility"], by["memo"]["utility"]
    # 2 x 500 attacked devices: the binomial sd of a success rate is <= 0.016; fresh daily reports
    # give the item away (about 0.97), memoised ones stay near one day's (about 0.2), so a gap of
    # 0.4 is > 10 sd (false alarm < 1e-9)
    assert fresh["attack_success_30d"] - memo["attack_success_30d"] > 0.4
    # fresh randomness is the one-shot protocol itself: the ratio of two RMS errors over 1,024
    # counts has sd about 0.03, so 0.15 is 5 sd (false alarm < 1e-6); the instantaneous layer
    # (epsilon_1 = 1) adds noise: about 5.7 here
    assert abs(fresh["rms_over_one_shot"] - 1) < 0.15 and memo["rms_over_one_shot"] > 1.5


def test_every_issue_38_family_is_in_quick_with_utility():
    """Issue 38 item 3: string heavy hitters, mean oracles, daily collection, constant-time samplers,
    a DP-SGD step and the per-call rows: each runs in --quick and carries a utility metric."""
    wanted = ("strings of up to 64 bytes", "ldp mean oracle", "ldp daily collection", "constant-time discrete",
              "DP-SGD step", "per call:")
    every = bench.workloads()
    for text in wanted:
        chosen = [w for w in every if text in w.name and w.utility is not None]
        assert chosen and all(w.in_quick for w in chosen), text
