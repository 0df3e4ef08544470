"""The morning page, ``reports/index.html``: every night's status, what
arrived, the champion, drift and alerts, night by night."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from markupsafe import Markup

from pipeline.core.errors import ArtifactError
from pipeline.evaluation.records import as_metrics
from pipeline.report import charts
from pipeline.report.render import templates


def _date(run_id: str) -> str:
    try:
        return datetime.strptime(run_id[:16], "%Y%m%dT%H%M%SZ").strftime("%m-%d %H:%M")
    except ValueError:
        return run_id[:12]


def night_figures(run: dict[str, Any]) -> dict[str, Any]:
    """What the morning page shows of one run (a ``metrics.json``, read as its
    model): its challenger (chosen on validation rows) and its test mean, the
    decision its headline states (the GAN against ``none``), the champion on the
    newest data, drift's largest PSI, the rows and frauds that arrived (a
    partitioned source's new and changed partitions; a single file: all of it),
    and its alerts — the events ``fraudaug alerts``
    notifies on by default (:mod:`pipeline.report.alerts`). A night whose
    ``metrics.json`` no model reads (written by a much older fraudaug) shows its
    run and status only."""
    from pipeline.report.alerts import run_events

    try:
        m = as_metrics(run)
    except ArtifactError:
        return {**_UNREAD, "primary": run.get("primary_metric") or "auprc"}
    primary = m.primary_metric or "auprc"
    means = {
        s.method: getattr(s, f"{primary}_mean")
        for s in m.summary
        if getattr(s, f"{primary}_mean") is not None
    }
    challenger = m.selection.chosen if m.selection else None
    mon = m.monitoring
    scored = mon is not None and mon.status == "scored"
    now = (mon.now or {}) if scored else {}
    psi = [
        f["psi"]
        for f in (m.drift.features if m.drift else [])
        if f.get("psi") is not None
    ]
    rows, frauds = m.data.rows, m.data.frauds
    changes = m.data.changes or {}
    if m.data.partitions and changes.get("previous_run"):
        arrived = set(changes.get("new") or []) | set(changes.get("changed") or [])
        parts = [p for p in m.data.partitions if p["path"] in arrived]
        rows = sum(p.get("rows") or 0 for p in parts)
        frauds = sum(p.get("frauds") or 0 for p in parts)
    decision = m.comparison.decision if m.comparison else None
    return {
        "primary": primary,
        "challenger": challenger,
        "challenger_value": means.get(challenger) if challenger else None,
        "decision": decision.to_json() if decision is not None else None,
        "means": means,
        "champion": now.get(mon.metric or primary) if scored else None,
        "champion_top_k": now.get("precision_top_k") if scored else None,
        "champion_version": (mon.champion or {}).get("version") if scored else None,
        "decayed": bool(mon is not None and mon.alert),
        "psi": max(psi) if psi else None,
        "psi_threshold": m.drift.threshold if m.drift else None,
        "rows": rows,
        "frauds": frauds,
        "alerts": [e.name for e in run_events(m) if e.kind.alert],
    }


_UNREAD = {
    "challenger": None,
    "challenger_value": None,
    "decision": None,
    "means": {},
    "champion": None,
    "champion_top_k": None,
    "champion_version": None,
    "decayed": False,
    "psi": None,
    "psi_threshold": None,
    "rows": None,
    "frauds": None,
    "alerts": [],
}
"""A night whose ``metrics.json`` no model reads: nothing but its run."""


def render_index(runs: list[dict[str, Any]]) -> str:
    """``reports/index.html``, the morning page: every run, newest first, with what
    a morning read asks first (the champion on the newest data, drift, what
    arrived, the alerts), charts of those night by night with the alerts marked,
    and each method's mean test score run by run. Fits a 1280-pixel window."""
    methods = _methods(runs)
    nights = {id(run): night_figures(run) for run in runs}
    rows = [{"run": run, **nights[id(run)]} for run in runs]
    chronological = sorted(runs, key=lambda r: r.get("run_id", ""))
    figures = [nights[id(run)] for run in chronological]
    every = max(1, math.ceil(len(chronological) / 5))  # labels that fit 530 px
    ticks = [
        (i, _date(r.get("run_id", "")))
        for i, r in enumerate(chronological)
        if i % every == 0
    ]
    marks = [(i, "; ".join(f["alerts"])) for i, f in enumerate(figures) if f["alerts"]]
    primary = figures[-1]["primary"] if figures else "auprc"
    night_charts = _night_charts(figures, ticks, marks)
    colours = charts.colours(methods)
    methods_chart = _methods_chart(figures, methods, colours, primary, ticks, marks)
    return (
        templates()
        .get_template("index.html.j2")
        .render(
            rows=rows,
            methods=methods,
            night_charts=[c for c in night_charts if c is not None],
            chart=methods_chart,
            colours=colours,
            short_path=_short_path,
        )
    )


def _methods(runs: list[dict[str, Any]]) -> list[str]:
    """Every method of the runs, once each, in the order they first appear."""
    methods: list[str] = []
    for run in runs:
        for method in run.get("methods", []):
            if method not in methods:
                methods.append(method)
    return methods


def _night_series(
    figures: list[dict[str, Any]], name: str, key: str, colour: str, dash: bool = False
) -> dict | None:
    """A line of the nights' figure ``key`` (None when no night has one)."""
    points = [(i, f[key]) for i, f in enumerate(figures) if f[key] is not None]
    if not points:
        return None
    return {
        "name": name,
        "colour": colour,
        "dash": dash,
        "x": [p[0] for p in points],
        "y": [p[1] for p in points],
    }


def _night_chart(
    title: str,
    y_label: str,
    lines: list,
    ticks: list[tuple[int, str]],
    marks: list[tuple[int, str]],
    **kw: Any,
) -> Markup | None:
    """A night-by-night chart of ``lines`` (those not None), the alerts marked;
    None when there is no line."""
    lines = [s for s in lines if s is not None]
    if not lines:
        return None
    return charts.line_chart(
        lines,
        title=title,
        x_label="night (run started, UTC)",
        y_label=y_label,
        width=530,
        height=260,
        x_ticks=ticks,
        marks=marks,
        **kw,
    )


def _night_charts(
    figures: list[dict[str, Any]],
    ticks: list[tuple[int, str]],
    marks: list[tuple[int, str]],
) -> list[Markup | None]:
    """The champion, drift, rows and frauds charts, night by night (None for a
    chart with nothing to show)."""
    thresholds = [f["psi_threshold"] for f in figures if f["psi_threshold"] is not None]
    level = (thresholds[-1], f"threshold {thresholds[-1]}") if thresholds else None
    return [
        _night_chart(
            "The champion on each night's newest data",
            "score",
            [
                _night_series(figures, "champion", "champion", "#111111"),
                _night_series(
                    figures,
                    "champion precision top-k",
                    "champion_top_k",
                    "#1f77b4",
                    True,
                ),
            ],
            ticks,
            marks,
            y_range=(0.0, 1.0),
        ),
        _night_chart(
            "Drift: the largest PSI, training vs test rows",
            "PSI",
            [_night_series(figures, "largest PSI", "psi", "#9467bd")],
            ticks,
            marks,
            level=level,
        ),
        _night_chart(
            "Rows that arrived",
            "rows",
            [_night_series(figures, "rows", "rows", "#2ca02c")],
            ticks,
            marks,
        ),
        _night_chart(
            "Frauds that arrived",
            "frauds",
            [_night_series(figures, "frauds", "frauds", "#d62728")],
            ticks,
            marks,
        ),
    ]


def _methods_chart(
    figures: list[dict[str, Any]],
    methods: list[str],
    colours: dict[str, str],
    primary: str,
    ticks: list[tuple[int, str]],
    marks: list[tuple[int, str]],
) -> Markup | None:
    """Each method's mean test score run by run (None when no run has one)."""
    method_series = []
    for method in methods:
        points = [
            (i, f["means"][method])
            for i, f in enumerate(figures)
            if f["means"].get(method) is not None
        ]
        if points:
            method_series.append(
                {
                    "name": method,
                    "colour": colours[method],
                    "x": [p[0] for p in points],
                    "y": [p[1] for p in points],
                }
            )
    if not method_series:
        return None
    return charts.line_chart(
        method_series,
        title=f"Mean test {primary} per method, run by run",
        x_label="run started (UTC)",
        y_label=primary,
        width=1076,
        height=300,
        x_ticks=ticks,
        marks=marks,
    )


def _short_path(path: str | None, keep: int = 26) -> str:
    """A long path's last ``keep`` characters after an ellipsis (the index shows
    the whole one on hover)."""
    path = str(path or "")
    return path if len(path) <= keep else "…" + path[-keep:]
