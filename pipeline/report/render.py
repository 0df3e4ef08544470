"""Render results (plain dicts) into self-contained HTML: inline CSS, SVG and one
small inline script (allowed by hash in the page's Content-Security-Policy), no
network requests of any kind. Never touches models.

Every data-derived string goes through Jinja2's autoescaping; the SVG helpers in
:mod:`pipeline.report.charts` escape what they embed themselves. The page is complete
without JavaScript; the script only adds hover values and method toggles.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Sequence
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from pipeline.evaluation.comparison import decision_words, format_p, format_probability
from pipeline.evaluation.fidelity import REAL_TRAIN
from pipeline.evaluation.metrics import METRIC_LABELS, METRICS, best_method
from pipeline.report import charts
from pipeline.report.figures import (
    _amount_charts,
    _curve_charts,
    _drift_chart,
    _fidelity_charts,
    _gan_charts,
    _summary_charts,
    amount_rows,
    fidelity_columns,
    fidelity_sources,
    roles,
    rows_added,
)
from pipeline.resampling import registry


def _script() -> tuple[Markup, Markup]:
    """The inline script and its CSP source expression (``'sha256-...'``)."""
    text = (
        resources.files("pipeline.report")
        .joinpath("templates/report.js")
        .read_text("utf-8")
    )
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
    return Markup(text), Markup(f"'sha256-{digest}'")


def templates() -> Environment:
    env = Environment(
        loader=PackageLoader("pipeline.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = format_number
    env.filters["ci"] = format_ci
    env.filters["p"] = format_p
    env.filters["prob"] = format_probability
    env.filters["decision"] = decision_words
    env.filters["signed"] = lambda v, d=4: "–" if v is None else f"{v:+.{d}f}"
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, sort_keys=True)
    script, csp = _script()
    env.globals.update(script=script, script_csp=csp, chart_css=charts.CHART_CSS)
    return env


def format_number(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}" if abs(value) >= 1000 else f"{value:.{digits}f}"


def format_ci(interval: Sequence[float] | None, digits: int = 4) -> str:
    if not interval:
        return "n/a (one split)"
    low, high = (format_number(v, digits) for v in interval)
    return f"[{low}, {high}]"


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
        From :func:`pipeline.evaluation.curves.curve_points`.
    histories : dict, optional
        GAN loss history per split.
    """
    histories = histories or {}
    split = min((r["split"] for r in metrics["results"]), default=0)
    summary = metrics["summary"]
    histogram_charts, heatmap_charts = _fidelity_charts(metrics)
    amounts = amount_rows(metrics)
    return (
        templates()
        .get_template("report.html.j2")
        .render(
            m=metrics,
            summary=summary,
            chosen_split=split,
            best={k: (best_method(summary, k) or (None,))[0] for k in METRICS},
            diffs_vs_none={
                c["method"]: c
                for c in metrics.get("comparison", {}).get("comparisons", [])
                if c["baseline"] == roles(metrics)["reference"]
            },
            summary_charts=_summary_charts(metrics),
            roles=roles(metrics),
            compared_family=registry.roles()["compared"],
            keeps_rows=[m.name for m in registry.all_methods() if m.amount == "kept"],
            fidelity_sources=fidelity_sources(metrics),
            real_train=REAL_TRAIN,
            amounts=amounts,
            added=rows_added(metrics),
            amount_charts=_amount_charts(metrics, amounts),
            curve_charts=_curve_charts(metrics, curves, split),
            gan_charts=_gan_charts(metrics, histories),
            histogram_charts=histogram_charts,
            heatmap_charts=heatmap_charts,
            fidelity_columns=fidelity_columns(metrics),
            cost_view=any(
                s.get("net_savings_mean") is not None for s in metrics["summary"]
            ),
            colours=charts.colours(metrics["methods"]),
            environment=metrics.get("environment", {}),
            primary_label=METRIC_LABELS[metrics.get("primary_metric", "auprc")],
            drift_chart=_drift_chart(metrics),
        )
    )


def render_monitor_page(metrics: dict[str, Any]) -> str:
    """``report.html`` of a night with nothing new (``metrics["kind"] ==
    "monitor"``): what the source holds, the champion on the newest data."""
    previous = ((metrics.get("data") or {}).get("changes") or {}).get("previous_run")
    page = templates().get_template("monitor.html.j2")
    return page.render(m=metrics, previous=previous)
