"""Issue 38 item 2: figures a reviewer accepts. --plot writes PNG, PDF or SVG by extension; one
panel per (family, metric) with the family's rows and peers overlaid against a log epsilon axis,
error bars from the utility repetitions, a legend, labelled axes, a caption line; a row of
another size than its family is marked. Panels and pages are counted by parsing the files."""
import re
import zlib

import pytest

from dpnoise import bench
from dpnoise.cli import main

pytest.importorskip("matplotlib")

FAMILY = "tmp-plot family"
NAMES = ("tmp-plot alpha row", "tmp-plot beta row", "tmp-plot lone row")


def _utility(ctx, s):
    rng = ctx.numpy_rng("u")
    return {"rms_error": float(10 / ctx.epsilon * (1 + 0.1 * rng.random())), "recall": float(rng.random())}


@pytest.fixture
def fakes():
    for name, family, n in ((NAMES[0], FAMILY, 100), (NAMES[1], FAMILY, 10), (NAMES[2], None, 100)):
        bench.register(bench.Workload(
            name=name, unit="ops", items=lambda ctx, n=n: n, setup=lambda ctx: None, run=lambda ctx, s: None,
            reference_name="nothing", reference=lambda ctx, s: None, epsilon=1.0, family=family,
            metrics=("rms_error", "recall") if family else ("rms_error",), utility=_utility))
    yield
    for name in NAMES:
        bench._REGISTRY.pop(name, None)


def record(**kw):
    return bench.run(quick=True, repeats=2, only="tmp-plot", epsilons=[0.1, 1, 10], seed=1, utility_repeats=3, **kw)


def svg_axes(text):
    return len(re.findall(r'<g id="axes_\d+">', text))


def pdf_pages(data):
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", data))


def test_one_panel_per_family_and_metric_in_every_format(fakes, tmp_path):
    rec = record()
    expected = ["speed", f"{FAMILY}: rms_error", f"{FAMILY}: recall", f"{NAMES[2]}: rms_error"]
    for ext in ("svg", "pdf", "png"):
        path = tmp_path / f"fig.{ext}"
        assert bench.plot(rec, str(path)) == expected
        data = path.read_bytes()
        if ext == "svg":
            text = data.decode()
            assert svg_axes(text) == len(expected)
            # error bars (a LineCollection per series with intervals), the legend, the log epsilon axis
            assert text.count("LineCollection") >= 5 and "legend_" in text
            assert "privacy parameter ε (log scale)" in text and "RMS error (value units" in text
            # the caption line, with R and the sizes
            assert "R=3 repetitions" in text and "error bars 95% Student-t" in text
            # the family's row of another size is marked, in the legend and with hollow markers
            assert "dpnoise beta [n=10; others 100]" in text and "dpnoise alpha</text>" in text
            # every utility panel states its rows' size (the caption's sizes are the defaults only)
            assert text.count("n = 100 ops per call") == 3
        elif ext == "pdf":
            assert data.startswith(b"%PDF") and pdf_pages(data) == 1
            assert b"/Subject" in data  # the caption, beside the figure, in the metadata
        else:
            assert data.startswith(b"\x89PNG")


def test_every_epsilon_is_a_point_and_missing_metrics_are_not(fakes, tmp_path):
    rec = record()
    (panel,) = [p for p in bench._utility_panels(rec) if p["title"] == f"{FAMILY}: rms_error"]
    alpha = panel["series"][NAMES[0]]
    assert [p[0] for p in alpha["points"]] == [0.1, 1, 10]
    assert all(p[2] is not None and p[2][0] <= p[1] <= p[2][1] for p in alpha["points"])  # 95% intervals
    rec["results"][0]["utility"]["rms_error"] = None  # missing at epsilon = 0.1
    (panel,) = [p for p in bench._utility_panels(rec) if p["title"] == f"{FAMILY}: rms_error"]
    assert [p[0] for p in panel["series"][NAMES[0]]["points"]] == [1, 10]


def test_cli_plot_format_by_extension(fakes, tmp_path, capsys):
    bad = tmp_path / "fig.jpg"
    assert main(["bench", "--quick", "--only", "tmp-plot", "--plot", str(bad)]) == 2
    assert ".png, .pdf or .svg" in capsys.readouterr().err and not bad.exists()
    with pytest.raises(ValueError, match="path"):
        bench.plot(record(), str(bad))
    path = tmp_path / "fig.pdf"
    assert main(["bench", "--quick", "--only", "tmp-plot", "--plot", str(path), "--utility-repeats", "2",
                 "--repeats", "1", "--no-progress"]) == 0
    assert pdf_pages(path.read_bytes()) == 1


def _pdf_text_streams(data):
    out = []
    for m in re.finditer(rb"stream\r?\n(.*?)endstream", data, re.S):
        try:
            out.append(zlib.decompress(m.group(1)))
        except zlib.error:
            out.append(m.group(1))
    return b"".join(out)


@pytest.mark.slow  # the whole --quick catalogue with 10 utility repetitions: about 20-60 s
def test_quick_catalogue_pdf_has_one_panel_per_family_metric(tmp_path):
    rec = bench.run(quick=True, repeats=1, seed=1, utility_repeats=10)
    pdf, svg = tmp_path / "fig.pdf", tmp_path / "fig.svg"
    titles = bench.plot(rec, str(pdf))
    assert bench.plot(rec, str(svg)) == titles
    families = {(r.get("family") or r["workload"], m) for r in rec["results"] if r.get("utility")
                for m in r["utility"]}
    assert len(titles) == 1 + len(families) and svg_axes(svg.read_text()) == len(titles)
    data = pdf.read_bytes()
    assert pdf_pages(data) == 1
    assert len(_pdf_text_streams(data)) > 10_000  # drawn, not an empty page
