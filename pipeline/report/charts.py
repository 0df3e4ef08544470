"""Inline SVG charts for the HTML reports: readable with no script at all.

Each chart is drawn server-side as SVG. Marks carry ``<title>`` elements (the
browser shows them on hover, no script needed) and ``data-series`` attributes; line
charts also carry their points in data units (``data-xy``) so the report's small
inline script can show the nearest value under the pointer and hide or show a method
everywhere at once. Every string embedded here is escaped.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
)


CHART_CSS = Markup(
    ".chart { background: #fff; } .chart .plot { fill: #fcfcfc; stroke: #bbb; } "
    ".chart .grid { stroke: #eee; } .chart .tick { font-size: 10px; fill: #555; } "
    ".chart .axis { font-size: 11px; fill: #333; } "
    ".chart .legend { font-size: 11px; fill: #222; } "
    ".chart .chart-title { font-size: 12px; font-weight: 600; } "
    ".chart .diagonal { stroke: #aaa; stroke-dasharray: 4 4; } "
    ".chart .reference { stroke: #444; stroke-dasharray: 3 3; } "
    ".chart .marker { fill: #000; } "
    ".chart .alert-mark { fill: #d62728; fill-opacity: .22; }"
)
"""The charts' style: the reports' stylesheet holds it, and :func:`standalone`."""


def standalone(*charts: str) -> str:
    """Charts side by side as one SVG file with its style inside (for a page
    that is not a report, e.g. a README)."""
    sizes = [
        tuple(
            float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', c).groups()
        )
        for c in charts
    ]
    width, height = sum(w for w, _ in sizes), max(h for _, h in sizes)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:g} {height:g}" '
        f'width="{width:g}" height="{height:g}"><style>{CHART_CSS} '
        "text { font-family: system-ui, -apple-system, sans-serif; }</style>"
        f'<rect width="100%" height="100%" fill="#fff"/>'
    ]
    x = 0.0
    for chart, (w, _) in zip(charts, sizes, strict=True):
        parts.append(str(chart).replace("<svg ", f'<svg x="{x:g}" ', 1))
        x += w
    parts.append("</svg>\n")
    return "".join(parts)


def colours(names: Sequence[str]) -> dict[str, str]:
    """One stable colour per name, in order."""
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}


def tick(value: float, step: float | None = None) -> str:
    """A tick label with just enough decimals to tell ticks ``step`` apart."""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if step:
        digits = max(0, min(6, 1 - math.floor(math.log10(abs(step)))))
        return f"{value:.{digits}f}"
    return f"{value:.3g}"


def _finite(v: Any) -> bool:
    return v is not None and isinstance(v, int | float) and math.isfinite(v)


def _attr(value: Any) -> str:
    return str(escape(str(value)))


def _svg_open(
    width: float,
    height: float,
    title: str,
    kind: str,
    *,
    title_x: float = 8,
    attrs: str = "",
) -> list[str]:
    """The opening of every chart: the ``<svg>`` element, its accessible title and
    the visible one."""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}" '
        f'class="{kind}"{" " + attrs if attrs else ""}>',
        f"<title>{escape(title)}</title>",
        f'<text x="{title_x}" y="18" class="chart-title">{escape(title)}</text>',
    ]


def line_chart(
    series: Sequence[dict[str, Any]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
    width: int = 460,
    height: int = 320,
    diagonal: bool = False,
    x_ticks: Sequence[tuple[float, str]] | None = None,
    legend: bool = True,
    marks: Sequence[tuple[float, str]] = (),
    level: tuple[float, str] | None = None,
) -> Markup:
    """Lines; each series is ``{"name", "x", "y", "colour"}`` (optional ``"dash"``).

    ``x_ticks`` replaces the numeric x ticks with labelled ones (e.g. dates).
    ``marks``: ``(x, why)`` drawn as a red band across the plot at ``x`` (an
    alert; ``why`` on hover). ``level``: ``(y, name)`` a dashed horizontal line
    (a threshold), kept inside the y range.
    """
    left, right, top, bottom = 56, 16, 28, 44
    pw, ph = width - left - right, height - top - bottom
    columns = max(1, pw // 150)
    legend_rows = math.ceil(len(series) / columns) if legend else 0
    height += 15 * legend_rows + (6 if legend_rows else 0)
    x0, x1, y0, y1 = _line_ranges(series, x_range, y_range, level)
    plot = _Plot(left, top, pw, ph, x0, x1, y0, y1)
    frame = {
        "x0": x0, "x1": x1, "y0": y0, "y1": y1,
        "left": left, "top": top, "pw": pw, "ph": ph,
        "xlabel": x_label, "ylabel": y_label,
    }  # fmt: skip
    data_attrs = " ".join(f'data-{k}="{_attr(v)}"' for k, v in frame.items())
    parts = [
        *_svg_open(width, height, title, "chart", title_x=left, attrs=data_attrs),
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="plot"/>',
        *_line_grid(plot, x_ticks),
        *_line_guides(plot, diagonal, marks, level),
    ]
    for s in series:
        parts.extend(_line_series(plot, s))
    if legend:  # below the plot, so it never hides a line
        parts.extend(_line_legend(plot, series, columns))
    parts.append(
        '<circle class="marker" r="4" cx="0" cy="0" visibility="hidden"/>'
        f'<text x="{left + pw / 2}" y="{top + ph + 34}" class="axis" '
        f'text-anchor="middle">{escape(x_label)}</text>'
        f'<text x="14" y="{top + ph / 2}" class="axis" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + ph / 2})">{escape(y_label)}</text></svg>'
    )
    return Markup("".join(parts))


@dataclass(frozen=True)
class _Plot:
    """A line chart's plot area (pixels) and the data ranges it spans."""

    left: int
    top: int
    pw: int
    ph: int
    x0: float
    x1: float
    y0: float
    y1: float

    def px(self, x: float) -> float:
        """The pixel column of data value ``x``."""
        return self.left + (x - self.x0) / (self.x1 - self.x0) * self.pw

    def py(self, y: float) -> float:
        """The pixel row of data value ``y``."""
        return self.top + self.ph - (y - self.y0) / (self.y1 - self.y0) * self.ph


def _line_ranges(
    series: Sequence[dict[str, Any]],
    x_range: tuple[float, float] | None,
    y_range: tuple[float, float] | None,
    level: tuple[float, str] | None,
) -> tuple[float, float, float, float]:
    """The x and y ranges ``(x0, x1, y0, y1)``: those given, else the finite
    values' (the level's included), widened by 0.5 each way when empty."""
    xs = [v for s in series for v in s["x"] if _finite(v)]
    ys = [v for s in series for v in s["y"] if _finite(v)]
    if level is not None:
        ys.append(level[0])
    x0, x1 = x_range or ((min(xs), max(xs)) if xs else (0.0, 1.0))
    y0, y1 = y_range or ((min(ys), max(ys)) if ys else (0.0, 1.0))
    if x1 == x0:
        x0, x1 = x0 - 0.5, x0 + 0.5
    if y1 == y0:
        y0, y1 = y0 - 0.5, y0 + 0.5
    return x0, x1, y0, y1


def _line_grid(plot: _Plot, x_ticks: Sequence[tuple[float, str]] | None) -> list[str]:
    """The grid lines with their tick labels: five on y, and on x ``x_ticks``
    or five numeric ones."""
    x0, x1, y0, y1 = plot.x0, plot.x1, plot.y0, plot.y1
    left, top, pw, ph = plot.left, plot.top, plot.pw, plot.ph
    parts = []
    for i in range(5):
        fy = y0 + (y1 - y0) * i / 4
        py = plot.py(fy)
        parts.append(
            f'<line x1="{left}" y1="{py:.1f}" x2="{left + pw}" y2="{py:.1f}" '
            f'class="grid"/><text x="{left - 6}" y="{py + 4:.1f}" class="tick" '
            f'text-anchor="end">{tick(fy, (y1 - y0) / 4)}</text>'
        )
    ticks = x_ticks or [
        (x0 + (x1 - x0) * i / 4, tick(x0 + (x1 - x0) * i / 4)) for i in range(5)
    ]
    for fx, label in ticks:
        px = plot.px(fx)
        parts.append(
            f'<line x1="{px:.1f}" y1="{top}" x2="{px:.1f}" y2="{top + ph}" '
            f'class="grid"/><text x="{px:.1f}" y="{top + ph + 16}" class="tick" '
            f'text-anchor="middle">{escape(label)}</text>'
        )
    return parts


def _line_guides(
    plot: _Plot,
    diagonal: bool,
    marks: Sequence[tuple[float, str]],
    level: tuple[float, str] | None,
) -> list[str]:
    """What is drawn under the lines: the diagonal, the alert bands and the
    level line."""
    px, py, top, ph = plot.px, plot.py, plot.top, plot.ph
    parts = []
    if diagonal:
        parts.append(
            f'<line x1="{px(plot.x0):.1f}" y1="{py(plot.y0):.1f}" '
            f'x2="{px(plot.x1):.1f}" y2="{py(plot.y1):.1f}" class="diagonal"/>'
        )
    for mx, why in marks:
        parts.append(
            f'<rect x="{px(mx) - 3:.1f}" y="{top}" width="6" height="{ph}" '
            f'class="alert-mark"><title>{escape(why)}</title></rect>'
        )
    if level is not None:
        parts.append(
            f'<line x1="{plot.left}" y1="{py(level[0]):.1f}" '
            f'x2="{plot.left + plot.pw}" y2="{py(level[0]):.1f}" class="reference">'
            f"<title>{escape(level[1])}</title></line>"
        )
    return parts


def _line_series(plot: _Plot, s: dict[str, Any]) -> list[str]:
    """One series' polyline, carrying its points in data units (``data-xy``),
    and a dot when it has a single point."""
    px, py = plot.px, plot.py
    pairs = [
        (x, y) for x, y in zip(s["x"], s["y"], strict=True) if _finite(x) and _finite(y)
    ]
    points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pairs)
    xy = json.dumps(
        [[round(x, 6), round(y, 6)] for x, y in pairs], separators=(",", ":")
    )
    dash = ' stroke-dasharray="5 3"' if s.get("dash") else ""
    parts = [
        f'<polyline points="{points}" fill="none" stroke="{_attr(s["colour"])}" '
        f'stroke-width="1.8"{dash} data-series="{_attr(s["name"])}" '
        f'data-xy="{_attr(xy)}"><title>{escape(s["name"])}</title></polyline>'
    ]
    if len(pairs) == 1:  # a single run: a line would be invisible
        x, y = pairs[0]
        parts.append(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" '
            f'fill="{_attr(s["colour"])}" data-series="{_attr(s["name"])}"/>'
        )
    return parts


def _line_legend(
    plot: _Plot, series: Sequence[dict[str, Any]], columns: int
) -> list[str]:
    """The legend below the plot, ``columns`` entries a row."""
    col_w = plot.pw / columns
    parts = []
    for i, s in enumerate(series):
        lx = plot.left + (i % columns) * col_w
        ly = plot.top + plot.ph + 50 + 15 * (i // columns)
        parts.append(
            f'<g class="legend-item" data-series="{_attr(s["name"])}">'
            f'<line x1="{lx:.1f}" y1="{ly - 4}" x2="{lx + 16:.1f}" y2="{ly - 4}" '
            f'stroke="{_attr(s["colour"])}" stroke-width="3"/>'
            f'<text x="{lx + 21:.1f}" y="{ly}" class="legend">'
            f"{escape(s['name'])}</text></g>"
        )
    return parts


def interval_chart(
    rows: Sequence[dict[str, Any]],
    *,
    title: str,
    x_label: str,
    width: int = 460,
    reference: float | None = None,
    digits: int = 3,
) -> Markup:
    """A dot-and-whisker chart: one row per ``{"name", "mean", "ci": [lo, hi] | None,
    "points": [...], "colour"}``; ``reference`` draws a vertical line (e.g. 0)."""
    left, right, top, row_h = 132, 20, 30, 22
    height = top + row_h * len(rows) + 40
    pw = width - left - right
    values = [
        v
        for r in rows
        for v in [r["mean"], *(r.get("ci") or []), *r.get("points", [])]
        if _finite(v)
    ]
    if reference is not None:
        values.append(reference)
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    pad = (hi - lo) * 0.06 or 0.5
    lo, hi = lo - pad, hi + pad

    def px(x: float) -> float:
        return left + (x - lo) / (hi - lo) * pw

    fmt = f"{{:+.{digits}f}}" if reference == 0 else f"{{:.{digits}f}}"
    parts = _svg_open(width, height, title, "chart interval")
    for i in range(5):
        fx = lo + (hi - lo) * i / 4
        parts.append(
            f'<line x1="{px(fx):.1f}" y1="{top - 4}" x2="{px(fx):.1f}" '
            f'y2="{top + row_h * len(rows)}" class="grid"/>'
            f'<text x="{px(fx):.1f}" y="{top + row_h * len(rows) + 14}" class="tick" '
            f'text-anchor="middle">{tick(fx, (hi - lo) / 4)}</text>'
        )
    if reference is not None:
        parts.append(
            f'<line x1="{px(reference):.1f}" y1="{top - 4}" x2="{px(reference):.1f}" '
            f'y2="{top + row_h * len(rows)}" class="reference"/>'
        )
    for i, r in enumerate(rows):
        cy = top + row_h * i + row_h / 2
        ci = r.get("ci")
        label = f"{r['name']}: " + fmt.format(r["mean"])
        if ci:
            label += " (95 % CI " + fmt.format(ci[0]) + " to " + fmt.format(ci[1]) + ")"
        if r.get("note"):
            label += f", {r['note']}"
        colour = _attr(r["colour"])
        parts.append(
            f'<g data-series="{_attr(r["name"])}"><title>{escape(label)}</title>'
            f'<text x="{left - 8}" y="{cy + 4:.1f}" class="legend" text-anchor="end">'
            f"{escape(r['name'])}</text>"
        )
        if ci:
            parts.append(
                f'<line x1="{px(ci[0]):.1f}" y1="{cy:.1f}" x2="{px(ci[1]):.1f}" '
                f'y2="{cy:.1f}" stroke="{colour}" stroke-width="2"/>'
            )
        for v in r.get("points", []):
            if _finite(v):
                parts.append(
                    f'<circle cx="{px(v):.1f}" cy="{cy + 6:.1f}" r="2" fill="{colour}" '
                    'opacity=".55"/>'
                )
        if _finite(r["mean"]):
            parts.append(
                f'<circle cx="{px(r["mean"]):.1f}" cy="{cy:.1f}" r="4.5" '
                f'fill="{colour}"/>'
            )
        parts.append("</g>")
    parts.append(
        f'<text x="{left + pw / 2}" y="{height - 6}" class="axis" '
        f'text-anchor="middle">{escape(x_label)}</text></svg>'
    )
    return Markup("".join(parts))


OUTCOME_COLOURS = {"worse": "#c0392b", "equivalent": "#95a5a6", "better": "#27ae60"}
"""The three outcomes of a comparison, in the order drawn (left to right)."""


def probability_chart(
    rows: Sequence[dict[str, Any]],
    *,
    title: str,
    level: float = 0.95,
    width: int = 560,
) -> Markup:
    """Stacked bars from 0 to 1, one row per ``{"name", "p_worse",
    "p_equivalent", "p_better", "decision"}``: the probability of each outcome
    (:data:`OUTCOME_COLOURS`), each segment with its ``<title>``; ``level``
    marks where an outcome is decided (a dashed line from each end)."""
    left, right, top, row_h = 132, 20, 30, 22
    legend_h = 22
    height = top + row_h * len(rows) + 24 + legend_h
    pw = width - left - right
    bottom = top + row_h * len(rows)

    def px(x: float) -> float:
        return left + x * pw

    parts = _svg_open(width, height, title, "chart probabilities")
    for i in range(5):
        fx = i / 4
        parts.append(
            f'<line x1="{px(fx):.1f}" y1="{top - 4}" x2="{px(fx):.1f}" '
            f'y2="{bottom}" class="grid"/><text x="{px(fx):.1f}" y="{bottom + 14}" '
            f'class="tick" text-anchor="middle">{fx:.2f}</text>'
        )
    for i, r in enumerate(rows):
        y = top + row_h * i + 3
        parts.append(
            f'<g data-series="{_attr(r["name"])}"><text x="{left - 8}" '
            f'y="{y + row_h / 2 + 1:.1f}" class="legend" text-anchor="end">'
            f"{escape(r['name'])}</text>"
        )
        start = 0.0
        for outcome, colour in OUTCOME_COLOURS.items():
            p = r.get(f"p_{outcome}")
            if not _finite(p):
                continue
            label = f"{r['name']}: P({outcome}) = {p:.3f}"
            if r.get("decision"):
                label += f" (decision: {r['decision']})"
            parts.append(
                f'<rect x="{px(start):.1f}" y="{y:.1f}" width="{p * pw:.1f}" '
                f'height="{row_h - 6}" fill="{colour}"><title>{escape(label)}</title>'
                "</rect>"
            )
            start += p
        parts.append("</g>")
    for x in (level, 1.0 - level):  # over the bars
        parts.append(
            f'<line x1="{px(x):.1f}" y1="{top - 4}" x2="{px(x):.1f}" y2="{bottom}" '
            'class="reference"/>'
        )
    lx = left
    for outcome, colour in OUTCOME_COLOURS.items():
        parts.append(
            f'<rect x="{lx}" y="{height - 15}" width="12" height="9" '
            f'fill="{colour}"/><text x="{lx + 17}" y="{height - 7}" class="legend">'
            f"{outcome}</text>"
        )
        lx += 110
    parts.append("</svg>")
    return Markup("".join(parts))


def _diverging(value: float) -> str:
    """White at 0, red for positive, blue for negative; saturated at |1|."""
    v = max(-1.0, min(1.0, value))
    strength = abs(v) ** 0.6
    target = (214, 39, 40) if v > 0 else (31, 119, 180)
    r, g, b = (round(255 + (c - 255) * strength) for c in target)
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap(
    matrix: Sequence[Sequence[float]],
    labels: Sequence[str],
    *,
    title: str,
    cell: int = 12,
) -> Markup:
    """A square diverging heat map (scale -1..1) with a ``<title>`` on each cell."""
    n = len(labels)
    top = 30
    # Room for the longest row label (about 6 px a character at the tick size).
    left = max(44, 8 + 6 * max((len(str(name)) for name in labels), default=0))
    size = n * cell
    width = left + size + 70
    height = top + size + 14 + 5 * max((len(str(n)) for n in labels), default=6)
    parts = _svg_open(width, height, title, "chart heatmap")
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            parts.append(
                f'<rect x="{left + j * cell}" y="{top + i * cell}" width="{cell}" '
                f'height="{cell}" fill="{_diverging(value)}"><title>'
                f"{escape(labels[i])} × {escape(labels[j])}: {value:+.2f}"
                "</title></rect>"
            )
    for i, name in enumerate(labels):
        if i % 2 == 0 or n <= 16:
            cx, by = left + i * cell + cell / 2, top + size + 10
            parts.append(
                f'<text x="{left - 4}" y="{top + i * cell + cell - 2}" class="tick" '
                f'text-anchor="end">{escape(name)}</text>'
                f'<text x="{cx}" y="{by}" class="tick" text-anchor="end" '
                f'transform="rotate(-60 {cx} {by})">{escape(name)}</text>'
            )
    for k, v in enumerate((1.0, 0.5, 0.0, -0.5, -1.0)):
        y = top + k * (size / 4)
        parts.append(
            f'<rect x="{left + size + 14}" y="{y - 6:.1f}" width="12" height="12" '
            f'fill="{_diverging(v)}" stroke="#ccc"/><text x="{left + size + 30}" '
            f'y="{y + 4:.1f}" class="tick">{v:+.1f}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def bar_chart(
    categories: Sequence[str],
    series: Sequence[dict[str, Any]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    width: int = 360,
    height: int = 250,
) -> Markup:
    """Grouped bars: one group per category, one bar per series
    ``{"name", "values": [...], "colour"}`` (optional ``"dash"``: an outlined
    bar), each with a ``<title>`` and ``data-series``."""
    left, right, top, bottom = 56, 12, 28, 56
    pw, ph = width - left - right, height - top - bottom
    columns = max(1, pw // 150)
    legend_rows = math.ceil(len(series) / columns)
    height += 15 * legend_rows + 6
    values = [v for s in series for v in s["values"] if _finite(v)]
    y1 = max(values) if values else 1.0
    y1 = y1 if y1 > 0 else 1.0
    group = pw / max(len(categories), 1)
    bar = group * 0.8 / max(len(series), 1)
    parts = [
        *_svg_open(width, height, title, "chart bars", title_x=left),
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="plot"/>',
    ]
    for i in range(5):
        fy = y1 * i / 4
        y = top + ph - ph * i / 4
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" '
            f'class="grid"/><text x="{left - 6}" y="{y + 4:.1f}" class="tick" '
            f'text-anchor="end">{tick(fy, y1 / 4)}</text>'
        )
    for k, category in enumerate(categories):
        gx = left + k * group + group * 0.1
        for j, s in enumerate(series):
            value = s["values"][k]
            if not _finite(value):
                continue
            h = ph * value / y1
            style = (
                f'fill="none" stroke="{_attr(s["colour"])}" stroke-width="1.5"'
                if s.get("dash")
                else f'fill="{_attr(s["colour"])}"'
            )
            parts.append(
                f'<rect x="{gx + j * bar:.1f}" y="{top + ph - h:.1f}" '
                f'width="{max(bar - 1, 1):.1f}" height="{h:.1f}" {style} '
                f'data-series="{_attr(s["name"])}"><title>{escape(s["name"])}, '
                f"{escape(category)}: {value:.3f}</title></rect>"
            )
        cx, cy = left + k * group + group / 2, top + ph + 12
        parts.append(
            f'<text x="{cx:.1f}" y="{cy}" class="tick" text-anchor="end" '
            f'transform="rotate(-30 {cx:.1f} {cy})">{escape(category)}</text>'
        )
    col_w = pw / columns
    for i, s in enumerate(series):
        lx = left + (i % columns) * col_w
        ly = top + ph + bottom + 4 + 15 * (i // columns)
        parts.append(
            f'<g class="legend-item" data-series="{_attr(s["name"])}">'
            f'<rect x="{lx:.1f}" y="{ly - 9}" width="12" height="9" '
            f'fill="{_attr(s["colour"])}"/><text x="{lx + 17:.1f}" y="{ly}" '
            f'class="legend">{escape(s["name"])}</text></g>'
        )
    parts.append(
        f'<text x="{left + pw / 2}" y="{top + ph + bottom - 6}" class="axis" '
        f'text-anchor="middle">{escape(x_label)}</text>'
        f'<text x="14" y="{top + ph / 2}" class="axis" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + ph / 2})">{escape(y_label)}</text></svg>'
    )
    return Markup("".join(parts))


def step_series(edges: Sequence[float], heights: Sequence[float]) -> tuple[list, list]:
    """A histogram's outline as a line: ``(x, y)`` for :func:`line_chart`."""
    xs, ys = [edges[0]], [0.0]
    for i, h in enumerate(heights):
        xs += [edges[i], edges[i + 1]]
        ys += [h, h]
    xs.append(edges[-1])
    ys.append(0.0)
    return xs, ys
