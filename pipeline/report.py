"""Render results (plain dicts) into self-contained HTML: inline CSS and SVG, no
scripts from anywhere, no network requests. Never touches models.

Every data-derived string goes through Jinja2's autoescaping; the SVG helpers escape
what they embed themselves.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from pipeline.evaluate import METRICS

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


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("pipeline", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _num
    env.filters["ci"] = _ci
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, sort_keys=True)
    return env


def _num(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}f}"


def _ci(interval: Sequence[float] | None, digits: int = 4) -> str:
    if not interval:
        return "n/a (one split)"
    return f"[{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]"


def _tick(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def method_colours(methods: Sequence[str]) -> dict[str, str]:
    return {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(methods)}


def svg_line_chart(
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
) -> Markup:
    """An inline SVG line chart; each series is ``{"name", "x", "y", "colour"}``.

    Each line carries a ``<title>`` so hovering shows its name in any browser,
    with no script.
    """
    left, right, top, bottom = 56, 16, 28, 44
    pw, ph = width - left - right, height - top - bottom
    xs = [v for s in series for v in s["x"]]
    ys = [v for s in series for v in s["y"] if v is not None and math.isfinite(v)]
    x0, x1 = x_range or ((min(xs), max(xs)) if xs else (0.0, 1.0))
    y0, y1 = y_range or ((min(ys), max(ys)) if ys else (0.0, 1.0))
    if x1 == x0:
        x1 = x0 + 1.0
    if y1 == y0:
        y1 = y0 + 1.0

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + ph - (y - y0) / (y1 - y0) * ph

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}" '
        'class="chart">',
        f'<text x="{left}" y="18" class="chart-title">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="plot"/>',
    ]
    for i in range(5):
        fx = x0 + (x1 - x0) * i / 4
        fy = y0 + (y1 - y0) * i / 4
        parts.append(
            f'<line x1="{px(fx):.1f}" y1="{top}" x2="{px(fx):.1f}" y2="{top + ph}" '
            'class="grid"/>'
            f'<text x="{px(fx):.1f}" y="{top + ph + 16}" class="tick" '
            f'text-anchor="middle">{_tick(fx)}</text>'
            f'<line x1="{left}" y1="{py(fy):.1f}" x2="{left + pw}" y2="{py(fy):.1f}" '
            'class="grid"/>'
            f'<text x="{left - 6}" y="{py(fy) + 4:.1f}" class="tick" '
            f'text-anchor="end">{_tick(fy)}</text>'
        )
    if diagonal:
        parts.append(
            f'<line x1="{px(x0):.1f}" y1="{py(y0):.1f}" x2="{px(x1):.1f}" '
            f'y2="{py(y1):.1f}" class="diagonal"/>'
        )
    for s in series:
        points = " ".join(
            f"{px(x):.1f},{py(y):.1f}"
            for x, y in zip(s["x"], s["y"], strict=True)
            if y is not None and math.isfinite(y)
        )
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{escape(s["colour"])}" '
            f'stroke-width="1.8"><title>{escape(s["name"])}</title></polyline>'
        )
    for i, s in enumerate(series):
        ly = top + 14 + 16 * i
        parts.append(
            f'<line x1="{left + pw - 120}" y1="{ly - 4}" x2="{left + pw - 104}" '
            f'y2="{ly - 4}" stroke="{escape(s["colour"])}" stroke-width="3"/>'
            f'<text x="{left + pw - 98}" y="{ly}" class="legend">'
            f"{escape(s['name'])}</text>"
        )
    parts.append(
        f'<text x="{left + pw / 2}" y="{height - 6}" class="axis" '
        f'text-anchor="middle">{escape(x_label)}</text>'
        f'<text x="14" y="{top + ph / 2}" class="axis" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + ph / 2})">{escape(y_label)}</text></svg>'
    )
    return Markup("".join(parts))


def _curve_charts(metrics: dict, curves: dict, split: int) -> list[Markup]:
    colours = method_colours(metrics["methods"])
    charts = []
    for kind, title, xl, yl, diag in (
        ("pr", "Precision–recall (test rows)", "recall", "precision", False),
        ("roc", "ROC (test rows)", "false positive rate", "true positive rate", True),
    ):
        series = [
            {
                "name": method,
                "colour": colours[method],
                **curves[kind][method][split],
            }
            for method in metrics["methods"]
            if split in curves.get(kind, {}).get(method, {})
        ]
        charts.append(
            svg_line_chart(
                series,
                title=f"{title}, split {split}",
                x_label=xl,
                y_label=yl,
                x_range=(0.0, 1.0),
                y_range=(0.0, 1.0),
                diagonal=diag,
            )
        )
    return charts


def _gan_charts(histories: dict[int, list[dict]]) -> list[Markup]:
    if not histories:
        return []
    split = min(histories)
    history = histories[split]
    steps = [h["step"] for h in history]
    charts = []
    for keys, title in (
        (("critic_loss", "generator_loss"), "Losses"),
        (("wasserstein", "gradient_penalty"), "Wasserstein estimate and GP"),
    ):
        series = [
            {
                "name": key.replace("_", " "),
                "colour": PALETTE[i],
                "x": steps,
                "y": [h.get(key) for h in history],
            }
            for i, key in enumerate(keys)
        ]
        charts.append(
            svg_line_chart(
                series,
                title=f"GAN training, split {split}: {title}",
                x_label="generator step",
                y_label="value",
            )
        )
    return charts


def _best(summary: list[dict], key: str) -> str | None:
    values = [(s[key], s["method"]) for s in summary if s.get(key) is not None]
    return max(values)[1] if values else None


def render_report(
    metrics: dict[str, Any],
    curves: dict[str, Any],
    histories: dict[int, list[dict]] | None = None,
) -> str:
    """The run's ``report.html``.

    Parameters
    ----------
    metrics : dict
        The run's ``metrics.json`` content.
    curves : dict
        From :func:`pipeline.evaluate.curve_points`.
    histories : dict, optional
        GAN loss history per split.
    """
    histories = histories or {}
    split = min((r["split"] for r in metrics["results"]), default=0)
    summary = metrics["summary"]
    return (
        _env()
        .get_template("report.html.j2")
        .render(
            m=metrics,
            summary=summary,
            best={k: _best(summary, f"{k}_mean") for k in METRICS},
            diffs_vs_none={
                c["method"]: c
                for c in metrics.get("comparison", {}).get("comparisons", [])
                if c["baseline"] == "none"
            },
            curve_charts=_curve_charts(metrics, curves, split),
            gan_charts=_gan_charts(histories),
            colours=method_colours(metrics["methods"]),
        )
    )


def render_index(runs: list[dict[str, Any]]) -> str:
    """``reports/index.html``: every run, newest first, with its headline numbers."""
    methods: list[str] = []
    for run in runs:
        for method in run.get("methods", []):
            if method not in methods:
                methods.append(method)
    rows = []
    for run in runs:
        means = {s["method"]: s.get("auprc_mean") for s in run.get("summary", [])}
        rows.append({"run": run, "auprc": means})
    chronological = sorted(runs, key=lambda r: r.get("run_id", ""))
    colours = method_colours(methods)
    series = []
    for method in methods:
        points = [
            (i, s["auprc_mean"])
            for i, run in enumerate(chronological)
            for s in run.get("summary", [])
            if s["method"] == method
        ]
        if points:
            series.append(
                {
                    "name": method,
                    "colour": colours[method],
                    "x": [p[0] for p in points],
                    "y": [p[1] for p in points],
                }
            )
    chart = (
        svg_line_chart(
            series,
            title="Mean test AUPRC per method, run by run (oldest left)",
            x_label="run (chronological)",
            y_label="AUPRC",
            width=720,
        )
        if len(chronological) > 1
        else None
    )
    return (
        _env()
        .get_template("index.html.j2")
        .render(rows=rows, methods=methods, chart=chart)
    )
