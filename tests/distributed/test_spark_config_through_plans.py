"""A DataFrame over dpnoise Parquet files that is not a plain scan (a filter) still carries
the files' configuration: aggregating it with another one is refused, naming both (issue 21:
ε = 4 Hadamard reports aggregated as ε = 1). Review finding: the flat layout (the public
``reports.to_arrow()`` form) lost the check on both DataFrame routes."""
import numpy as np
import pytest

pq = pytest.importorskip("pyarrow.parquet")

import dpnoise  # noqa: E402
from dpnoise.ldp import FrequencyOracle  # noqa: E402

from spark_oracles import COUNT_ROUTES, force_route  # noqa: E402


@pytest.mark.parametrize("route", COUNT_ROUTES)
def test_a_filtered_flat_parquet_dataframe_of_another_configuration_is_refused(spark, tmp_path, route, monkeypatch):
    from dpnoise.distributed.spark import aggregate_reports

    eps4, eps1 = FrequencyOracle("hadamard", 4.0, 1000), FrequencyOracle("hadamard", 1.0, 1000)
    rep = eps4.client(dpnoise.default_rng(2), allow_insecure=True).privatize(np.zeros(2000, dtype=np.int64))
    pq.write_table(rep.to_arrow(), str(tmp_path / "flat.parquet"))
    force_route(monkeypatch, route)
    df = spark.read.parquet(str(tmp_path / "flat.parquet")).where("rows >= 0")
    with pytest.raises(ValueError, match=r"another configuration \(FrequencyOracle\('hadamard', epsilon=4\.0"):
        aggregate_reports(df, None, eps1)
    agg = aggregate_reports(df, None, eps4)
    assert agg.n == 2000 and agg.spark.route == route
