"""The report's figures, drawn from a run's ``metrics.json`` as its model
(:class:`~pipeline.evaluation.records.RunMetrics`): the summary, amount, curve,
GAN, fidelity and drift charts and the tables beside them."""

from __future__ import annotations

import math
from typing import Any

from markupsafe import Markup

from pipeline.evaluation.comparison import format_p
from pipeline.evaluation.fidelity import REAL_TRAIN
from pipeline.evaluation.metrics import METRIC_LABELS, METRICS
from pipeline.evaluation.records import RunMetrics
from pipeline.report import charts
from pipeline.resampling import registry


def roles(m: RunMetrics) -> dict[str, str]:
    """The run's comparison roles: ``reference`` (what every method must beat),
    ``question`` (the method the headline speaks of) and ``interpolation`` (the
    rows the generators' fidelity is judged beside). A ``metrics.json`` written
    before they were recorded has the built-in ones."""
    comparison = m.comparison
    built_in = registry.roles()
    return {
        "reference": (comparison and comparison.reference) or built_in["reference"],
        "question": (comparison and comparison.question) or built_in["question"],
        "interpolation": registry.interpolation(),
    }


def _listed(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else list(interval)


def versus_reference(m: RunMetrics) -> list:
    """The paired comparisons of each method with the reference."""
    reference = roles(m)["reference"]
    comparisons = m.comparison.comparisons if m.comparison else []
    return [c for c in comparisons if c.baseline == reference]


# Report colours for the fidelity sources that are not methods.
REAL_COLOUR = "#333333"


def _curve_charts(m: RunMetrics, curves: dict, split: int) -> list[Markup]:
    colours = charts.colours(m.methods)
    out = []
    for kind, title, xl, yl, diag in (
        ("pr", "Precision–recall", "recall", "precision", False),
        ("roc", "ROC", "false positive rate", "true positive rate", True),
    ):
        views = [(f"{title}, split {split} (test rows)", curves.get(kind, {}), True)]
        if m.n_splits > 1:
            views.append(
                (
                    f"{title}, mean of {m.n_splits} splits",
                    curves.get(f"{kind}_mean", {}),
                    False,
                )
            )
        for chart_title, source, per_split in views:
            series = []
            for method in m.methods:
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


def _summary_charts(m: RunMetrics) -> list[Markup]:
    """The summary's charts: the paired differences to the reference (and their
    probabilities), then each metric's mean with its interval and splits."""
    colours = charts.colours(m.methods)
    per_split = _per_split(m)
    out = _reference_charts(m, colours)
    out.extend(_metric_charts(m, colours, per_split))
    return out


def _per_split(m: RunMetrics) -> dict[tuple[str, str], list[float]]:
    """Each method's value of each metric, split by split."""
    per_split: dict[tuple[str, str], list[float]] = {}
    for r in m.results:
        for key in METRICS:
            per_split.setdefault((r.method, key), []).append(getattr(r, key))
    return per_split


def _reference_charts(m: RunMetrics, colours: dict[str, str]) -> list[Markup]:
    """Each method's paired difference to the reference on the primary metric
    and, where decided, its chances of being worse, equivalent or better."""
    out = []
    label = METRIC_LABELS[m.primary_metric or "auprc"]
    diffs = versus_reference(m)
    if not diffs:
        return out
    rope = diffs[0].rope
    out.append(
        charts.interval_chart(
            [
                {
                    "name": c.method,
                    "mean": c.mean_diff,
                    "ci": _listed(c.ci95_corrected),
                    "points": c.per_split,
                    "colour": colours.get(c.method, "#555"),
                    "note": (
                        f"Holm p = {format_p(c.p_holm)}, {c.claim or c.decision}"
                        if c.p_holm is not None
                        else None
                    ),
                }
                for c in diffs
            ],
            title=f"Paired Δ {label} vs none (mean, corrected 95 % CI, splits)",
            x_label=f"{label} difference to no resampling (right of 0 = better)",
            reference=0.0,
            width=560,
        )
    )
    decided = [c for c in diffs if c.p_better is not None]
    if decided:
        out.append(
            charts.probability_chart(
                [{"name": c.method, **c.to_json()} for c in decided],
                title=f"P(worse / equivalent / better than none), ROPE ±{rope:g} "
                f"{label}",
            )
        )
    return out


def _metric_charts(
    m: RunMetrics,
    colours: dict[str, str],
    per_split: dict[tuple[str, str], list[float]],
) -> list[Markup]:
    """Each method's test AUPRC, recall at precision 0.90, precision top-k and
    net savings (those the run has): mean, corrected 95 % CI and splits."""
    out = []
    for key, title, label, digits in (
        ("auprc", "Test AUPRC (mean, corrected 95 % CI, splits)", "AUPRC", 3),
        ("recall_at_precision_90", "Recall at precision 0.90", "recall", 3),
        (
            "precision_top_k",
            "Precision top-k per day (mean, corrected 95 % CI, splits)",
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
        if not any(getattr(s, f"{key}_mean") is not None for s in m.summary):
            continue  # no cost view without an amount column
        out.append(
            charts.interval_chart(
                [
                    {
                        "name": s.method,
                        "mean": getattr(s, f"{key}_mean"),
                        "ci": _listed(getattr(s, f"{key}_ci95")),
                        "points": per_split.get((s.method, key), []),
                        "colour": colours.get(s.method, "#555"),
                    }
                    for s in m.summary
                    if getattr(s, f"{key}_mean") is not None
                ],
                title=title,
                x_label=label,
                digits=digits,
                width=560 if key == "auprc" else 460,
            )
        )
    return out


_DRIFT_COLOURS = {"significant": "#c0392b", "moderate": "#e67e22", "stable": "#7f8c8d"}


def _drift_chart(m: RunMetrics, n_features: int = 15) -> Markup | None:
    """The features' PSI, largest first, the threshold as a line."""
    drift = m.drift
    if drift is None or not drift.features:
        return None
    shown = drift.features[:n_features]
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
        x_label=f"PSI (line: {drift.threshold}, a significant shift)",
        reference=drift.threshold,
        width=560,
    )


def rows_added(m: RunMetrics) -> dict[str, float | None]:
    """Mean new minority rows over the splits, per method, at the chosen amounts
    (``None`` for the methods that add none)."""
    per_method: dict[str, list] = {}
    for r in m.results:
        per_method.setdefault(r.method, []).append(
            None if r.sampling_strategy is None else r.n_added
        )
    return {
        m: None if None in v else round(sum(v) / len(v), 1)
        for m, v in per_method.items()
    }


def amount_rows(m: RunMetrics) -> list[dict[str, Any]]:
    """Per resampling method and grid amount: rows added, validation and test AUPRC
    (means over splits) and on how many splits the amount was chosen."""
    grids: dict[str, list] = {}
    for r in m.results:
        if len(r.amount_search or []) > 1:
            grids.setdefault(r.method, []).append(r)
    rows = []
    for method, records in grids.items():
        for i in range(min(len(r.amount_search) for r in records)):
            points = [r.amount_search[i] for r in records]
            rows.append(
                {
                    "method": method,
                    "position": i,
                    "sampling_strategy": sum(p.sampling_strategy for p in points)
                    / len(points),
                    "n_added": sum(p.n_added for p in points) / len(points),
                    "validation_auprc": sum(p.validation_auprc for p in points)
                    / len(points),
                    "test_auprc": sum(p.test_auprc for p in points) / len(points),
                    "chosen": sum(
                        r.n_added == p.n_added
                        and r.sampling_strategy == p.sampling_strategy
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


def _amount_charts(m: RunMetrics, rows: list[dict]) -> list[Markup]:
    """The dose-response charts: AUPRC against rows added (log scale), per method,
    on validation rows (what chose the amount) and on test rows. (Undersampling
    adds no rows: its amounts are in the table beside, by the ratio reached.)"""
    added = sorted({r["n_added"] for r in rows if r["n_added"] > 0})
    if not added:
        return []
    colours = charts.colours(m.methods)
    lo, hi = math.log10(min(added)), math.log10(max(added))
    ticks = [
        (math.log10(v), _rows_label(v))
        for v in (100, 300, 1_000, 3_000, 10_000, 30_000, 100_000)
        if lo - 0.05 <= math.log10(v) <= hi + 0.05
    ]
    reference = roles(m)["reference"]
    baseline = {
        key: [getattr(r, key) for r in m.results if r.method == reference]
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
                    "name": reference,
                    "colour": colours.get(reference, "#555"),
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


def _gan_charts(m: RunMetrics, histories: dict[int, list[dict]]) -> list[Markup]:
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
    selection = {g["split"]: g.get("selection") or [] for g in m.gan.splits}
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


def top_features(m: RunMetrics, k: int = REPORT_FEATURES) -> list[str]:
    """The ``k`` features with the largest mean share of the detectors' total gain
    (the reference's detectors when it ran, else every method's), over the
    splits."""
    records = [r for r in m.results if r.feature_importance]
    plain = [r for r in records if r.method == roles(m)["reference"]]
    records = plain or records
    totals: dict[str, float] = {}
    for r in records:
        for name, share in r.feature_importance.items():
            totals[name] = totals.get(name, 0.0) + share
    return [n for n, _ in sorted(totals.items(), key=lambda kv: -kv[1])][:k]


def _axis_label(m: RunMetrics, feature: str) -> str:
    schema = m.schema_ or {}
    if feature == schema.get("amount"):
        return f"{feature} (amount)"
    if feature == schema.get("time"):
        return f"{feature} (time)"
    if feature.endswith(".hour"):
        return f"{feature} (hour of day)"
    return feature


def _fidelity_charts(m: RunMetrics) -> tuple[list[Markup], list[Markup]]:
    views = m.fidelity.views if m.fidelity else None
    if not views:
        return [], []
    method_colours = charts.colours(m.methods)
    source_colour = {"real": REAL_COLOUR, **method_colours}
    reference = m.fidelity.reference or "test"
    label = {"real": f"real {reference} frauds (n={views['n_real']})"}
    shown = [f for f in top_features(m) if f in views["histograms"]]
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
                    x_label=_axis_label(m, feature),
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
                x_label=_axis_label(m, feature),
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


def fidelity_by_source(m: RunMetrics) -> dict[str, Any]:
    """Each judged source's fidelity (:class:`FidelitySource`), by its name."""
    return dict(m.fidelity.model_extra or {}) if m.fidelity else {}


def fidelity_sources(m: RunMetrics) -> list[str]:
    """The fidelity's sources in the report's order: the generators compared (the
    question first), the interpolation (SMOTE's rows), the real training frauds."""
    named = roles(m)
    order = [named["question"]]
    order += [
        k
        for k in fidelity_by_source(m)
        if k not in (named["question"], named["interpolation"], REAL_TRAIN)
    ]
    return [*order, named["interpolation"], REAL_TRAIN]


def fidelity_columns(m: RunMetrics) -> list[dict[str, Any]]:
    """Per feature, each source's KS statistic (numeric) or total-variation
    distance (categorical), mean over splits: the report's per-column table."""
    fidelity = fidelity_by_source(m)
    sources = [k for k in fidelity_sources(m) if k in fidelity]
    if not sources:
        return []
    names = list(fidelity[sources[0]].per_column)
    rows = []
    for name in names:
        entry = fidelity[sources[0]].per_column[name]
        kind = "tvd" if "tvd" in entry else "ks"
        rows.append(
            {
                "feature": name,
                "statistic": "total variation" if kind == "tvd" else "KS",
                **{s: fidelity[s].per_column[name][kind] for s in sources},
            }
        )
    return rows
