"""The telemetry demo on the shared local session, small: it runs end to end and returns what
it printed."""


def test_run_telemetry_demo(spark):
    from dpnoise.distributed.spark.demo import run_telemetry_demo

    printed = []
    res = run_telemetry_demo(spark, devices=20_000, apps=64, epsilon=2.0, partitions=2, out=printed.append)
    assert res["lines"] == printed and len(printed) > 10
    assert res["malformed"] == 0 and len(res["top"]) == 10
    # 20,000 devices, 64 apps: the LDP error is a few hundred at most, central DP's about 1
    assert res["ldp_rms_error"] < 1000 and res["central_rms_error"] < 10
