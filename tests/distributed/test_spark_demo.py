"""The telemetry demo on the shared local session, small: it runs end to end and returns what
it printed."""


def test_run_telemetry_demo(spark):
    from dpnoise.demos.spark import run_telemetry_demo

    printed = []
    res = run_telemetry_demo(spark, devices=20_000, apps=64, epsilon=2.0, partitions=2, out=printed.append)
    assert res["lines"] == printed and len(printed) > 10
    assert res["malformed"] == 0 and len(res["top"]) == 10
    # 20,000 devices, 64 apps: the LDP error is a few hundred at most, central DP's about 1
    assert res["ldp_rms_error"] < 1000 and res["central_rms_error"] < 10


def test_cli_demo_spark_runs_the_spark_scenario(spark, capsys, monkeypatch):
    """`dpnoise demo --spark --devices N` runs run_telemetry_demo with N devices (here on the
    shared session, so that the test does not start a second JVM) and nothing else."""
    from dpnoise.cli import main
    from dpnoise.demos import spark as demo

    real = demo.run_telemetry_demo
    seen = {}

    def on_shared_session(**kwargs):
        seen.update(kwargs)
        return real(spark, apps=64, partitions=2, **kwargs)

    monkeypatch.setattr(demo, "run_telemetry_demo", on_shared_session)
    assert main(["demo", "--spark", "--devices", "20000"]) == 0
    out = capsys.readouterr().out
    assert seen == {"devices": 20_000}
    assert "local Spark session" in out and "exact discrete noise" not in out  # only the Spark scenario


def test_cli_demo_spark_usage_errors(capsys, monkeypatch):
    import sys

    from dpnoise.cli import main

    monkeypatch.setitem(sys.modules, "pyspark", None)  # as if the extra were not installed
    assert main(["demo", "--spark"]) == 2
    assert "pip install pyspark pyarrow 'pandas>=2.2,<3'" in capsys.readouterr().err
