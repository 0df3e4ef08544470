"""Render a run's results (its ``metrics.json`` as
:class:`~pipeline.evaluation.records.RunMetrics`) into self-contained HTML: inline
CSS, SVG and one small inline script (allowed by hash in the page's
Content-Security-Policy), no network requests of any kind. Never touches
detectors.

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
from pipeline.evaluation.records import Record, RunMetrics, as_metrics
from pipeline.report import charts
from pipeline.report.figures import (
    _amount_charts,
    _curve_charts,
    _drift_chart,
    _fidelity_charts,
    _gan_charts,
    _summary_charts,
    amount_rows,
    fidelity_by_source,
    fidelity_columns,
    fidelity_sources,
    roles,
    rows_added,
    versus_reference,
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
    env.filters["decision"] = lambda c, **kw: decision_words(_plain(c), **kw)
    env.filters["signed"] = lambda v, d=4: "–" if v is None else f"{v:+.{d}f}"
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, sort_keys=True)
    script, csp = _script()
    env.globals.update(script=script, script_csp=csp, chart_css=charts.CHART_CSS)
    return env


def _plain(record: Any) -> Any:
    """A typed record as the mapping the comparison's wording reads."""
    return record.to_json() if isinstance(record, Record) else record


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
    metrics: RunMetrics | dict[str, Any],
    curves: dict[str, Any],
    histories: dict[int, list[dict]] | None = None,
) -> str:
    """The run's ``report.html``.

    Parameters
    ----------
    metrics : RunMetrics or dict
        The run's ``metrics.json`` (a dict is read as its model).
    curves : dict
        From :func:`pipeline.evaluation.curves.curve_points`.
    histories : dict, optional
        GAN loss history per split.
    """
    m = as_metrics(metrics)
    histories = histories or {}
    split = min((r.split for r in m.results), default=0)
    histogram_charts, heatmap_charts = _fidelity_charts(m)
    amounts = amount_rows(m)
    return (
        templates()
        .get_template("report.html.j2")
        .render(
            m=m,
            summary=m.summary,
            chosen_split=split,
            best={k: (best_method(m.summary, k) or (None,))[0] for k in METRICS},
            diffs_vs_none={c.method: c for c in versus_reference(m)},
            summary_charts=_summary_charts(m),
            roles=roles(m),
            keeps_rows=[x.name for x in registry.all_methods() if x.amount == "kept"],
            fidelity_sources=fidelity_sources(m),
            fidelity_table=fidelity_by_source(m),
            real_train=REAL_TRAIN,
            amounts=amounts,
            added=rows_added(m),
            amount_charts=_amount_charts(m, amounts),
            curve_charts=_curve_charts(m, curves, split),
            gan_charts=_gan_charts(m, histories),
            histogram_charts=histogram_charts,
            heatmap_charts=heatmap_charts,
            fidelity_columns=fidelity_columns(m),
            cost_view=any(s.net_savings_mean is not None for s in m.summary),
            colours=charts.colours(m.methods),
            environment=m.environment or {},
            primary_label=METRIC_LABELS[m.primary_metric or "auprc"],
            drift_chart=_drift_chart(m),
        )
    )


def render_monitor_page(metrics: RunMetrics | dict[str, Any]) -> str:
    """``report.html`` of a night with nothing new (``kind`` ``monitor``): what the
    source holds, the champion on the newest data."""
    m = as_metrics(metrics)
    previous = (m.data.changes or {}).get("previous_run")
    page = templates().get_template("monitor.html.j2")
    return page.render(m=m, previous=previous)
