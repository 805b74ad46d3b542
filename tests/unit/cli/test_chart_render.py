"""`--chart out.svg|png`: each chart kind drawn in-process, and the picture is what it
claims (its marks in the SVG, a non-blank PNG of a sensible size)."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from matplotlib import image

from services.cli._client import describe_chart, render_chart
from services.sql.results._charts import choose_chart
from tandem.v1 import sql_service_pb2 as spb

CASES = [
    ("line", [("quarter", "date"), ("total", "numeric")],
     [("2024-01-01", 1), ("2024-04-01", 3), ("2024-07-01", 2)], "mark-line", 3),
    ("bar", [("industry", "text"), ("count", "bigint")],
     [("Retail", 4), ("Health", 9), ("Energy", 2)], "mark-rect", 3),
    ("scatter", [("price", "numeric"), ("quantity", "integer")],
     [(1, 2), (2, 3), (3, 5), (4, 4)], "mark-symbol", 4),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "columns", "rows", "mark", "count"), CASES)
def test_each_kind_draws_its_marks(kind, columns, rows, mark, count):
    choice = choose_chart(columns, rows)
    assert choice.kind == kind
    svg = render_chart(choice.vega_lite(), ".svg").decode("utf-8")
    assert svg.startswith("<svg")
    group = re.search(rf'<g class="{mark}[^"]*"[^>]*>(.*?)</g>', svg, re.S)
    assert group is not None, f"no {mark} in the drawing"
    if kind != "line":  # one mark per row (a line is one path through them all)
        assert group.group(1).count("<path") == count
    for name, _ in columns:
        assert name in svg  # the axes are titled with the columns


@pytest.mark.parametrize(("kind", "columns", "rows", "mark", "count"), CASES)
def test_each_kind_draws_a_png_that_is_not_blank(kind, columns, rows, mark, count):
    png = render_chart(choose_chart(columns, rows).vega_lite(), ".png")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    pixels = image.imread(io.BytesIO(png), format="png")
    height, width = pixels.shape[:2]
    assert 150 <= width <= 2000 and 150 <= height <= 2000
    colours = np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)
    assert len(colours) > 10  # marks, axes and text, not one flat colour


def test_the_cli_draws_to_the_file_it_was_given(tmp_path):
    choice = choose_chart(
        [("industry", "text"), ("count", "bigint")], [("Retail", 4), ("Health", 9)]
    )
    chart = spb.Chart(kind=spb.CHART_KIND_BAR, vega_lite=choice.vega_lite(), reason=choice.reason)
    out = tmp_path / "chart.png"
    assert describe_chart(chart, out) == f"Chart: bar — count per industry; drawn to {out}"
    assert out.read_bytes().startswith(b"\x89PNG")


def test_a_per_year_line_is_drawn_on_an_axis_of_years():
    """Year numbers (a grouping per year shows 2023) read as years on the time axis: left
    to Vega-Lite's default they are milliseconds after 1970 (an axis of ".024")."""
    choice = choose_chart(
        [("year", "integer"), ("count", "bigint")], [(2024, 3), (2022, 1), (2023, 2)]
    )
    svg = render_chart(choice.vega_lite(), ".svg").decode("utf-8")
    assert '<g class="mark-line' in svg
    assert re.findall(r">(\d{4})</text>", svg) == ["2022", "2023", "2024"]
