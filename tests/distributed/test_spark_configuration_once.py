"""Issue 34 item 4: Spark normalises a configuration once per entry point, asks the configuration
(not its class) what its items are, and maps report fields to Arrow types in one place.

The structural tests read the source (no Spark needed); the last one runs on the shared session.
"""
import ast
import pathlib

import pytest

import dpnoise
from dpnoise.ldp import Configuration

SPARK = pathlib.Path(dpnoise.__file__).parent / "distributed" / "spark"

# the public entry points, and privatize_column's check of its client argument
ENTRY_POINTS = {"aggregate_reports", "aggregate_stream", "stream_state", "dataframe_to_reports", "reports_table",
                "reports_to_dataframe", "_check_client"}


def _functions_calling(name):
    found = []
    for path in sorted(SPARK.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == name:
                        found.append((path.name, fn.name))
    return found


def test_only_entry_points_normalise_the_configuration():
    callers = _functions_calling("protocol_of")
    assert callers, "protocol_of is no longer called at all: update this test"
    inner = [c for c in callers if c[1] not in ENTRY_POINTS]
    assert not inner, f"helpers that normalise again (the entry point did it once): {inner}"
    assert len(callers) == len(set(callers)), f"an entry point normalises twice: {callers}"


def test_no_family_class_checks_in_spark():
    # the configuration says what its items are (item_domain) and which family made a batch
    # (Reports.family); Spark names no family's class
    for path in sorted(SPARK.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for name in ("is_heavy_hitters", "HHProtocol", "HeavyHittersConfiguration", "HHReports", "subset_names",
                     "_Unpickle"):
            assert name not in text, f"{path.name} names {name}"


def test_item_domain_is_declared_by_every_family():
    from dpnoise.ldp import HeavyHitters, MeanOracle

    assert dpnoise.ldp.FrequencyOracle("olh", 2.0, 1000).item_domain() == ("int", 1000)
    assert HeavyHitters("pem", 4.0, item_bits=20).item_domain() == ("int", 1 << 20)
    assert HeavyHitters("pem", 4.0, item_type="str", max_length=8).item_domain() == ("str", 8)
    assert HeavyHitters("pem", 4.0, item_type="bytes", max_length=8, long_items="hash").item_domain() == ("bytes", None)
    assert MeanOracle("duchi", 1.0, bounds=(0, 1)).item_domain() == ("real", None)
    with pytest.raises(NotImplementedError):
        Configuration.item_domain(object.__new__(Configuration))


def test_the_spark_struct_is_the_arrow_schema_with_rows_as_binary():
    pa = pytest.importorskip("pyarrow")
    from dpnoise.distributed.spark._arrow import struct_type
    from dpnoise.ldp import arrow as ldp_arrow

    for cls in Configuration.families()["frequency"].registered().values():
        config = cls.example()
        file_types = [f.type for f in ldp_arrow.schema(config)]
        spark_types = [f.type for f in struct_type(config)]
        want = [pa.binary() if pa.types.is_fixed_size_binary(t) else t for t in file_types]
        assert spark_types == want, config.name


def test_privatize_column_refuses_a_mean_client_by_name(spark):
    from dpnoise.distributed.spark import privatize_column

    oracle = dpnoise.ldp.MeanOracle("duchi", 1.0, bounds=(0, 1))
    df = spark.createDataFrame([(0.5,), (0.25,)], "v double")
    # 0.8.0: AttributeError from inside the column check (a mean configuration has no domain_size)
    with pytest.raises(TypeError, match="client: privatize_column takes integer or string items"):
        privatize_column(df, "v", oracle.client(dpnoise.default_rng(1), allow_insecure=True))


def test_field_type_refuses_what_is_not_a_report_field():
    pytest.importorskip("pyarrow")
    from dpnoise.ldp import arrow as ldp_arrow

    config = dpnoise.ldp.FrequencyOracle("oue", 2.0, 100)
    assert str(ldp_arrow.field_type(config.report_fields[0], config)) == "fixed_size_binary[16]"
    with pytest.raises(TypeError, match="f must be a dpnoise.ldp.ReportField"):
        ldp_arrow.field_type("bits", config)
