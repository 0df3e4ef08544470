"""Render results (plain dicts) into self-contained HTML: inline CSS, SVG and one
small inline script (allowed by hash in the page's Content-Security-Policy), no
network requests of any kind. Never touches models.

Every data-derived string goes through Jinja2's autoescaping; the SVG helpers in
:mod:`pipeline.charts` escape what they embed themselves. The page is complete
without JavaScript; the script only adds hover values and method toggles.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from collections.abc import Sequence
from datetime import datetime
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from pipeline import charts
from pipeline.evaluate import METRIC_LABELS, METRICS, best_method, format_p

# Report colours for the fidelity sources that are not methods.
REAL_COLOUR = "#333333"


def _script() -> tuple[Markup, Markup]:
    """The inline script and its CSP source expression (``'sha256-...'``)."""
    text = (
        resources.files("pipeline").joinpath("templates/report.js").read_text("utf-8")
    )
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
    return Markup(text), Markup(f"'sha256-{digest}'")


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
    env.filters["p"] = format_p
    env.filters["signed"] = lambda v, d=4: "–" if v is None else f"{v:+.{d}f}"
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, sort_keys=True)
    script, csp = _script()
    env.globals.update(script=script, script_csp=csp, chart_css=charts.CHART_CSS)
    return env


def _num(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}" if abs(value) >= 1000 else f"{value:.{digits}f}"


def _ci(interval: Sequence[float] | None, digits: int = 4) -> str:
    if not interval:
        return "n/a (one split)"
    return f"[{_num(interval[0], digits)}, {_num(interval[1], digits)}]"


def _curve_charts(metrics: dict, curves: dict, split: int) -> list[Markup]:
    colours = charts.colours(metrics["methods"])
    out = []
    for kind, title, xl, yl, diag in (
        ("pr", "Precision–recall", "recall", "precision", False),
        ("roc", "ROC", "false positive rate", "true positive rate", True),
    ):
        views = [(f"{title}, split {split} (test rows)", curves.get(kind, {}), True)]
        if metrics["n_splits"] > 1:
            views.append(
                (
                    f"{title}, mean of {metrics['n_splits']} splits",
                    curves.get(f"{kind}_mean", {}),
                    False,
                )
            )
        for chart_title, source, per_split in views:
            series = []
            for method in metrics["methods"]:
                points = source.get(method, {})
                points = points.get(split) if per_split else points
                if points:
                    series.append(
                        {
                            "name": method,
                            "colour": colours[method],
                            "x": points["x"],
                            "y": points["y"],
                        }
                    )
            out.append(
                charts.line_chart(
                    series,
                    title=chart_title,
                    x_label=xl,
                    y_label=yl,
                    x_range=(0.0, 1.0),
                    y_range=(0.0, 1.0),
                    diagonal=diag,
                )
            )
    return out


def _summary_charts(metrics: dict) -> list[Markup]:
    colours = charts.colours(metrics["methods"])
    per_split: dict[tuple[str, str], list[float]] = {}
    for r in metrics["results"]:
        for key in METRICS:
            per_split.setdefault((r["method"], key), []).append(r.get(key))
    out = []
    label = METRIC_LABELS[metrics.get("primary_metric", "auprc")]
    diffs = [
        c
        for c in metrics.get("comparison", {}).get("comparisons", [])
        if c["baseline"] == "none"
    ]
    if diffs:
        out.append(
            charts.interval_chart(
                [
                    {
                        "name": c["method"],
                        "mean": c["mean_diff"],
                        "ci": c.get("ci95"),
                        "points": c.get("per_split", []),
                        "colour": colours.get(c["method"], "#555"),
                        "note": (
                            f"Wilcoxon p = {format_p(c['p_wilcoxon'])}"
                            if c.get("p_wilcoxon") is not None
                            else None
                        ),
                    }
                    for c in diffs
                ],
                title=f"Paired Δ {label} vs none (mean, 95 % CI, splits)",
                x_label=f"{label} difference to no resampling (right of 0 = better)",
                reference=0.0,
                width=560,
            )
        )
    for key, title, label, digits in (
        ("auprc", "Test AUPRC (mean, 95 % CI, splits)", "AUPRC", 3),
        ("recall_at_precision_90", "Recall at precision 0.90", "recall", 3),
        (
            "precision_top_k",
            "Precision top-k per day (mean, 95 % CI, splits)",
            "precision of the day's top-k alerts",
            3,
        ),
        (
            "net_savings",
            "Net savings at the validation-chosen threshold",
            "amount saved",
            0,
        ),
    ):
        if not any(s.get(f"{key}_mean") is not None for s in metrics["summary"]):
            continue  # no cost view without an amount column
        out.append(
            charts.interval_chart(
                [
                    {
                        "name": s["method"],
                        "mean": s.get(f"{key}_mean"),
                        "ci": s.get(f"{key}_ci95"),
                        "points": per_split.get((s["method"], key), []),
                        "colour": colours.get(s["method"], "#555"),
                    }
                    for s in metrics["summary"]
                    if s.get(f"{key}_mean") is not None
                ],
                title=title,
                x_label=label,
                digits=digits,
                width=560 if key == "auprc" else 460,
            )
        )
    return out


_DRIFT_COLOURS = {"significant": "#c0392b", "moderate": "#e67e22", "stable": "#7f8c8d"}


def _drift_chart(metrics: dict, n_features: int = 15) -> Markup | None:
    """The features' PSI, largest first, the threshold as a line."""
    drift = metrics.get("drift")
    if not drift or not drift.get("features"):
        return None
    shown = drift["features"][:n_features]
    return charts.interval_chart(
        [
            {
                "name": f["feature"],
                "mean": f["psi"],
                "ci": None,
                "points": [],
                "colour": _DRIFT_COLOURS[f["level"]],
            }
            for f in shown
        ],
        title=f"Population stability index, the {len(shown)} largest",
        x_label=f"PSI (line: {drift['threshold']}, a significant shift)",
        reference=drift["threshold"],
        width=560,
    )


def rows_added(metrics: dict) -> dict[str, float | None]:
    """Mean new minority rows over the splits, per method, at the chosen amounts
    (``None`` for the methods that add none)."""
    per_method: dict[str, list] = {}
    for r in metrics["results"]:
        per_method.setdefault(r["method"], []).append(
            None if r.get("sampling_strategy") is None else r.get("n_added")
        )
    return {
        m: None if None in v else round(sum(v) / len(v), 1)
        for m, v in per_method.items()
    }


def amount_rows(metrics: dict) -> list[dict[str, Any]]:
    """Per resampling method and grid amount: rows added, validation and test AUPRC
    (means over splits) and on how many splits the amount was chosen."""
    grids: dict[str, list[dict]] = {}
    for r in metrics["results"]:
        if len(r.get("amount_search") or []) > 1:
            grids.setdefault(r["method"], []).append(r)
    rows = []
    for method, records in grids.items():
        for i in range(min(len(r["amount_search"]) for r in records)):
            points = [r["amount_search"][i] for r in records]
            rows.append(
                {
                    "method": method,
                    "position": i,
                    "sampling_strategy": sum(p["sampling_strategy"] for p in points)
                    / len(points),
                    "n_added": sum(p["n_added"] for p in points) / len(points),
                    "validation_auprc": sum(p["validation_auprc"] for p in points)
                    / len(points),
                    "test_auprc": sum(p["test_auprc"] for p in points) / len(points),
                    "chosen": sum(
                        r["n_added"] == p["n_added"]
                        and r["sampling_strategy"] == p["sampling_strategy"]
                        for r, p in zip(records, points, strict=True)
                    ),
                    "n_splits": len(records),
                }
            )
    return rows


def _rows_label(n: float) -> str:
    return (
        f"{n / 1000:.0f}k"
        if n >= 9_500
        else (f"{n / 1000:.1f}k" if n >= 1000 else f"{n:.0f}")
    )


def _amount_charts(metrics: dict, rows: list[dict]) -> list[Markup]:
    """The dose-response charts: AUPRC against rows added (log scale), per method,
    on validation rows (what chose the amount) and on test rows. (Undersampling
    adds no rows: its amounts are in the table beside, by the ratio reached.)"""
    added = sorted({r["n_added"] for r in rows if r["n_added"] > 0})
    if not added:
        return []
    colours = charts.colours(metrics["methods"])
    lo, hi = math.log10(min(added)), math.log10(max(added))
    ticks = [
        (math.log10(v), _rows_label(v))
        for v in (100, 300, 1_000, 3_000, 10_000, 30_000, 100_000)
        if lo - 0.05 <= math.log10(v) <= hi + 0.05
    ]
    baseline = {
        key: [r[key] for r in metrics["results"] if r["method"] == "none"]
        for key in ("validation_auprc", "auprc")
    }
    out = []
    for key, subset in (("validation_auprc", "validation"), ("test_auprc", "test")):
        series = []
        for method in dict.fromkeys(r["method"] for r in rows if r["n_added"] > 0):
            points = [r for r in rows if r["method"] == method and r["n_added"] > 0]
            series.append(
                {
                    "name": method,
                    "colour": colours.get(method, "#555"),
                    "x": [math.log10(p["n_added"]) for p in points],
                    "y": [p[key] for p in points],
                }
            )
        none = baseline["validation_auprc" if subset == "validation" else "auprc"]
        if none:
            level = sum(none) / len(none)
            series.append(
                {
                    "name": "none",
                    "colour": colours.get("none", "#555"),
                    "x": [lo, hi],
                    "y": [level, level],
                    "dash": True,
                }
            )
        out.append(
            charts.line_chart(
                series,
                title=f"{subset.capitalize()} AUPRC against rows added (mean over "
                "splits)",
                x_label="new minority rows added (log scale)",
                y_label=f"{subset} AUPRC",
                x_range=(lo - 0.05, hi + 0.05),
                x_ticks=ticks,
                width=560,
            )
        )
    return out


def _gan_charts(metrics: dict, histories: dict[int, list[dict]]) -> list[Markup]:
    if not histories:
        return []
    split = min(histories)
    history = histories[split]
    steps = [h["step"] for h in history]
    out = []
    for keys, title in (
        (("critic_loss", "generator_loss"), "losses"),
        (
            ("wasserstein", "gradient_penalty"),
            "W estimate and GP",
        ),
    ):
        out.append(
            charts.line_chart(
                [
                    {
                        "name": k.replace("_", " "),
                        "colour": charts.PALETTE[i],
                        "x": steps,
                        "y": [h.get(k) for h in history],
                    }
                    for i, k in enumerate(keys)
                ],
                title=f"GAN split {split}: {title}",
                x_label="generator step",
                y_label="value",
            )
        )
    splits = sorted(histories)
    palette = charts.colours([f"split {s}" for s in splits])
    selection = {g["split"]: g.get("selection") or [] for g in metrics["gan"]["splits"]}
    if any(selection.values()):
        out.append(
            charts.line_chart(
                [
                    {
                        "name": f"split {s}{label}",
                        "colour": palette[f"split {s}"],
                        "x": [p["step"] for p in selection.get(s, [])],
                        "y": [p.get(key) for p in selection.get(s, [])],
                        **({"dash": True} if key == "ema_c2st_auc" else {}),
                    }
                    for s in splits
                    for key, label in (
                        ("c2st_auc", ""),
                        ("ema_c2st_auc", " moving average"),
                    )
                    if any(key in p for p in selection.get(s, []))
                ],
                title="Validation C2ST while training (0.5 = ideal)",
                x_label="generator step",
                y_label="C2ST AUC",
            )
        )
    out.append(
        charts.line_chart(
            [
                {
                    "name": f"split {s}",
                    "colour": palette[f"split {s}"],
                    "x": [h["step"] for h in histories[s]],
                    "y": [h.get("nonfinite_steps", 0) for h in histories[s]],
                }
                for s in splits
            ],
            title="Non-finite updates skipped (cumulative)",
            x_label="generator step",
            y_label="skipped updates",
        )
    )
    return out


REPORT_FEATURES = 6
"""Distribution charts in the report: the features the detectors rank highest."""


def top_features(metrics: dict, k: int = REPORT_FEATURES) -> list[str]:
    """The ``k`` features with the largest mean share of the detectors' total gain
    (``none``'s detectors when it ran, else every method's), over the splits."""
    records = [r for r in metrics["results"] if r.get("feature_importance")]
    plain = [r for r in records if r["method"] == "none"]
    records = plain or records
    totals: dict[str, float] = {}
    for r in records:
        for name, share in r["feature_importance"].items():
            totals[name] = totals.get(name, 0.0) + share
    return [n for n, _ in sorted(totals.items(), key=lambda kv: -kv[1])][:k]


def _axis_label(metrics: dict, feature: str) -> str:
    schema = metrics.get("schema") or {}
    if feature == schema.get("amount"):
        return f"{feature} (amount)"
    if feature == schema.get("time"):
        return f"{feature} (time)"
    if feature.endswith(".hour"):
        return f"{feature} (hour of day)"
    return feature


def _fidelity_charts(metrics: dict) -> tuple[list[Markup], list[Markup]]:
    views = metrics.get("fidelity", {}).get("views")
    if not views:
        return [], []
    method_colours = charts.colours(metrics["methods"])
    source_colour = {"real": REAL_COLOUR, **method_colours}
    reference = metrics.get("fidelity", {}).get("reference", "test")
    label = {"real": f"real {reference} frauds (n={views['n_real']})"}
    shown = [f for f in top_features(metrics) if f in views["histograms"]]
    histograms = []
    for feature in shown or list(views["histograms"])[:REPORT_FEATURES]:
        h = views["histograms"][feature]
        title = f"{feature}: real vs synthetic frauds"
        if h.get("kind") == "categorical":
            histograms.append(
                charts.bar_chart(
                    h["categories"],
                    [
                        {
                            "name": label.get(
                                source, f"{source} (n={h['n'][source]:,})"
                            ),
                            "colour": source_colour.get(source, "#555"),
                            "values": share,
                        }
                        for source, share in h["share"].items()
                    ],
                    title=title,
                    x_label=_axis_label(metrics, feature),
                    y_label="share of rows",
                )
            )
            continue
        series = []
        for source, density in h["density"].items():
            x, y = charts.step_series(h["edges"], density)
            name = label.get(source, f"{source} (n={h['n'][source]:,})")
            series.append(
                {
                    "name": name,
                    "colour": source_colour.get(source, "#555"),
                    "x": x,
                    "y": y,
                    "dash": source != "real",
                }
            )
        histograms.append(
            charts.line_chart(
                series,
                title=title,
                x_label=_axis_label(metrics, feature),
                y_label="density",
                width=360,
                height=250,
            )
        )
    heatmaps = [
        charts.heatmap(
            matrix,
            views["features"],
            title=f"{source}: association minus real frauds' association",
        )
        for source, matrix in views["corr_diff"].items()
    ]
    return histograms, heatmaps


def fidelity_columns(metrics: dict) -> list[dict[str, Any]]:
    """Per feature, each source's KS statistic (numeric) or total-variation
    distance (categorical), mean over splits: the report's per-column table."""
    fidelity = metrics.get("fidelity") or {}
    sources = [k for k in ("cwgan_gp", "smote", "real_train") if k in fidelity]
    if not sources:
        return []
    names = list(fidelity[sources[0]].get("per_column") or {})
    rows = []
    for name in names:
        entry = fidelity[sources[0]]["per_column"][name]
        kind = "tvd" if "tvd" in entry else "ks"
        rows.append(
            {
                "feature": name,
                "statistic": "total variation" if kind == "tvd" else "KS",
                **{s: fidelity[s]["per_column"][name][kind] for s in sources},
            }
        )
    return rows


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
    histogram_charts, heatmap_charts = _fidelity_charts(metrics)
    amounts = amount_rows(metrics)
    return (
        _env()
        .get_template("report.html.j2")
        .render(
            m=metrics,
            summary=summary,
            chosen_split=split,
            best={k: (best_method(summary, k) or (None,))[0] for k in METRICS},
            diffs_vs_none={
                c["method"]: c
                for c in metrics.get("comparison", {}).get("comparisons", [])
                if c["baseline"] == "none"
            },
            summary_charts=_summary_charts(metrics),
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


def _date(run_id: str) -> str:
    try:
        return datetime.strptime(run_id[:16], "%Y%m%dT%H%M%SZ").strftime("%m-%d %H:%M")
    except ValueError:
        return run_id[:12]


def night_figures(run: dict[str, Any]) -> dict[str, Any]:
    """What the morning page shows of one run (a ``metrics.json``): its best
    method, the champion on the newest data, drift's largest PSI, the rows and
    frauds that arrived (a partitioned source's new and changed partitions; a
    single file: all of it), and its alerts — the events ``fraudaug alerts``
    notifies on by default (:mod:`pipeline.alerts`)."""
    from pipeline.alerts import run_events

    primary = run.get("primary_metric") or "auprc"
    summary = run.get("summary") or []
    means = {
        s["method"]: s[f"{primary}_mean"]
        for s in summary
        if s.get(f"{primary}_mean") is not None
    }
    best = (best_method(summary, primary) or (None,))[0]
    mon = run.get("monitoring") or {}
    scored = mon.get("status") == "scored"
    drift = run.get("drift") or {}
    psi = [f["psi"] for f in drift.get("features") or [] if f.get("psi") is not None]
    data = run.get("data") or {}
    rows, frauds = data.get("rows"), data.get("frauds")
    changes = data.get("changes") or {}
    if data.get("partitions") and changes.get("previous_run"):
        arrived = set(changes.get("new") or []) | set(changes.get("changed") or [])
        parts = [p for p in data["partitions"] if p["path"] in arrived]
        rows = sum(p.get("rows") or 0 for p in parts)
        frauds = sum(p.get("frauds") or 0 for p in parts)
    try:
        alerts = [e.name for e in run_events(run) if e.kind.alert]
    except (KeyError, TypeError, ValueError):  # an older run's metrics.json
        alerts = []
    return {
        "primary": primary,
        "best": best,
        "best_value": means.get(best) if best else None,
        "means": means,
        "champion": mon.get("now", {}).get(mon.get("metric") or primary)
        if scored
        else None,
        "champion_top_k": mon.get("now", {}).get("precision_top_k") if scored else None,
        "champion_version": (mon.get("champion") or {}).get("version")
        if scored
        else None,
        "decayed": bool(mon.get("alert")),
        "psi": max(psi) if psi else None,
        "psi_threshold": drift.get("threshold"),
        "rows": rows,
        "frauds": frauds,
        "alerts": alerts,
    }


def render_index(runs: list[dict[str, Any]]) -> str:
    """``reports/index.html``, the morning page: every run, newest first, with what
    a morning read asks first (the champion on the newest data, drift, what
    arrived, the alerts), charts of those night by night with the alerts marked,
    and each method's mean test score run by run. Fits a 1280-pixel window."""
    methods: list[str] = []
    for run in runs:
        for method in run.get("methods", []):
            if method not in methods:
                methods.append(method)
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

    def series(name: str, key: str, colour: str, dash: bool = False) -> dict | None:
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

    def chart(title: str, y_label: str, lines: list, **kw) -> Markup | None:
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

    thresholds = [f["psi_threshold"] for f in figures if f["psi_threshold"] is not None]
    level = (thresholds[-1], f"threshold {thresholds[-1]}") if thresholds else None
    night_charts = [
        chart(
            "The champion on each night's newest data",
            "score",
            [
                series("champion", "champion", "#111111"),
                series("champion precision top-k", "champion_top_k", "#1f77b4", True),
            ],
            y_range=(0.0, 1.0),
        ),
        chart(
            "Drift: the largest PSI, training vs test rows",
            "PSI",
            [series("largest PSI", "psi", "#9467bd")],
            level=level,
        ),
        chart("Rows that arrived", "rows", [series("rows", "rows", "#2ca02c")]),
        chart("Frauds that arrived", "frauds", [series("frauds", "frauds", "#d62728")]),
    ]
    colours = charts.colours(methods)
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
    methods_chart = (
        charts.line_chart(
            method_series,
            title=f"Mean test {primary} per method, run by run",
            x_label="run started (UTC)",
            y_label=primary,
            width=1076,
            height=300,
            x_ticks=ticks,
            marks=marks,
        )
        if method_series
        else None
    )
    return (
        _env()
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


def _short_path(path: str | None, keep: int = 26) -> str:
    """A long path's last ``keep`` characters after an ellipsis (the index shows
    the whole one on hover)."""
    path = str(path or "")
    return path if len(path) <= keep else "…" + path[-keep:]


def render_monitor_page(metrics: dict[str, Any]) -> str:
    """``report.html`` of a night with nothing new (``metrics["kind"] ==
    "monitor"``): what the source holds, the champion on the newest data."""
    previous = ((metrics.get("data") or {}).get("changes") or {}).get("previous_run")
    return _env().get_template("monitor.html.j2").render(m=metrics, previous=previous)


def _md_code(text: str) -> str:
    """Untrusted text as inline Markdown code: no markup, no HTML, no way out."""
    return "`" + html.escape(str(text).replace("`", "'"), quote=False) + "`"


def summary_markdown(metrics: dict[str, Any], report_path: str | None = None) -> str:
    """A short Markdown summary of a run (for a Prefect artifact): the generated
    headline and verdicts, the registry decision, the cached stages."""
    lines = [f"# fraudaug run {metrics['run_id']}", ""]
    if metrics["data"].get("demo"):
        lines += ["**DEMO DATA: synthetic, not real transactions.**", ""]
    lines += [f"**{metrics['comparison']['headline']}**", ""]
    lines += [f"- {v}" for v in metrics["comparison"]["verdicts"]]
    registry = metrics.get("registry")
    if registry:
        state = "promoted" if registry["promoted"] else "unchanged"
        lines += ["", f"**Champion {state}.** {registry['reason']}."]
        if registry.get("model_uri"):
            aliases = ", ".join(registry.get("aliases") or [])
            lines.append(f"Registered as `{registry['model_uri']}` ({aliases}).")
    if metrics.get("cached_stages"):
        lines += ["", "Cached stages: " + ", ".join(metrics["cached_stages"]) + "."]
    data = metrics["data"]
    lines += [
        "",
        f"Data: {_md_code(data['path'])} ({data['rows']:,} rows, {data['frauds']:,} "
        f"frauds, sha256 `{data['sha256'][:12]}`); profile `{metrics['profile']}`, "
        f"{metrics['n_splits']} split(s), seed {metrics['seed']}, "
        f"{metrics.get('duration_seconds') or 0:.0f} s.",
    ]
    if report_path:
        lines += ["", f"Report: {_md_code(report_path)}"]
    return "\n".join(lines) + "\n"


def summary_table(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per method: means, CIs and the paired difference to ``none``."""
    diffs = {
        c["method"]: c
        for c in metrics.get("comparison", {}).get("comparisons", [])
        if c["baseline"] == "none"
    }
    added = rows_added(metrics)
    rows = []
    for s in metrics["summary"]:
        d = diffs.get(s["method"])
        rows.append(
            {
                "method": s["method"],
                "rows_added_mean": added.get(s["method"]),
                "auprc_mean": round(s["auprc_mean"], 4),
                "auprc_ci95": _ci(s.get("auprc_ci95")),
                "delta_vs_none": None if d is None else round(d["mean_diff"], 4),
                "delta_ci95": None if d is None else _ci(d.get("ci95")),
                "significant": None if d is None else bool(d.get("significant")),
                "roc_auc_mean": round(s["roc_auc_mean"], 4),
                "recall_at_precision_90_mean": round(
                    s["recall_at_precision_90_mean"], 4
                ),
                "net_savings_mean": None
                if s.get("net_savings_mean") is None
                else round(s["net_savings_mean"], 2),
            }
        )
    return rows
