"""The report's server-drawn SVG charts."""

import math
import re
import xml.etree.ElementTree as ET

from pipeline.report.charts import bar_chart, colours, line_chart, standalone, tick

SVG = "{http://www.w3.org/2000/svg}"


def _svg(markup) -> ET.Element:
    return ET.fromstring(str(markup))


def test_a_line_chart_draws_each_series_its_alerts_and_its_threshold():
    chart = line_chart(
        [
            {"name": "none", "x": [0, 1, 2], "y": [0.7, math.nan, 0.8], "colour": "#1"},
            {"name": "smote", "x": [1], "y": [0.75], "colour": "#2"},
        ],
        title="AUPRC <by night>",
        x_label="night",
        y_label="AUPRC",
        marks=[(1, "champion degraded")],
        level=(0.9, "threshold"),
    )
    svg = _svg(chart)
    assert svg.find(f"{SVG}title").text == "AUPRC <by night>"  # escaped, whole
    lines = {p.get("data-series"): p for p in svg.iter(f"{SVG}polyline")}
    assert len(lines["none"].get("points").split()) == 2  # the NaN point left out
    # A single point is drawn as a dot, or it would not show.
    dots = [c for c in svg.iter(f"{SVG}circle") if c.get("data-series") == "smote"]
    assert len(dots) == 1
    alert = [r for r in svg.iter(f"{SVG}rect") if r.get("class") == "alert-mark"]
    assert [a.find(f"{SVG}title").text for a in alert] == ["champion degraded"]
    threshold = [x for x in svg.iter(f"{SVG}line") if x.get("class") == "reference"]
    # The y range stretches to hold the threshold: its line is inside the plot.
    plot = next(r for r in svg.iter(f"{SVG}rect") if r.get("class") == "plot")
    top, height = float(plot.get("y")), float(plot.get("height"))
    assert top <= float(threshold[0].get("y1")) <= top + height


def test_bars_have_one_titled_bar_per_value():
    chart = bar_chart(
        ["split 0", "split 1"],
        [{"name": "none", "values": [0.5, 0.6], "colour": "#1"}],
        title="t",
        x_label="split",
        y_label="AUPRC",
    )
    bars = [r for r in _svg(chart).iter(f"{SVG}rect") if r.get("data-series")]
    assert len(bars) == 2


def test_ticks_show_just_enough_decimals():
    assert tick(0.8125, 0.5) == "0.81"
    assert tick(0.8125, 0.05) == "0.812"  # steps of 0.05 need a third decimal
    assert tick(12_345.6) == "12,346"
    assert tick(0.5) == "0.5"


def test_colours_are_stable_and_charts_sit_side_by_side_in_one_file():
    assert list(colours(["a", "b"])) == ["a", "b"]
    assert colours(["a", "b"])["a"] == colours(["a", "z"])["a"]
    one = line_chart(
        [{"name": "a", "x": [0, 1], "y": [0, 1], "colour": "#1"}],
        title="a",
        x_label="x",
        y_label="y",
        width=300,
    )
    two = line_chart(
        [{"name": "b", "x": [0, 1], "y": [0, 1], "colour": "#1"}],
        title="b",
        x_label="x",
        y_label="y",
        width=200,
    )
    both = standalone(one, two)
    assert re.search(r'viewBox="0 0 500 ', both)
    assert '<svg x="300" ' in both and "<style>" in both
    ET.fromstring(both)  # well-formed
