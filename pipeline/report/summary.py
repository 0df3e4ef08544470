"""A run's summary as Markdown and as a table (the Prefect artifacts the flow
publishes)."""

from __future__ import annotations

import html
from typing import Any

from pipeline.evaluation.records import RunMetrics, as_metrics
from pipeline.report.figures import rows_added, versus_reference
from pipeline.report.render import format_ci


def _md_code(text: str) -> str:
    """Untrusted text as inline Markdown code: no markup, no HTML, no way out."""
    return "`" + html.escape(str(text).replace("`", "'"), quote=False) + "`"


def summary_markdown(
    metrics: RunMetrics | dict[str, Any], report_path: str | None = None
) -> str:
    """A short Markdown summary of a run (for a Prefect artifact): the generated
    headline and verdicts, the registry decision, the cached stages."""
    m = as_metrics(metrics)
    lines = [f"# fraudaug run {m.run_id}", ""]
    if m.data.demo:
        lines += ["**DEMO DATA: synthetic, not real transactions.**", ""]
    lines += [f"**{m.comparison.headline}**", ""]
    lines += [f"- {v}" for v in m.comparison.verdicts]
    registry = m.registry
    if registry is not None:
        state = "promoted" if registry.promoted else "unchanged"
        lines += ["", f"**Champion {state}.** {registry.reason}."]
        if registry.model_uri:
            aliases = ", ".join(registry.aliases or [])
            lines.append(f"Registered as `{registry.model_uri}` ({aliases}).")
    if m.cached_stages:
        lines += ["", "Cached stages: " + ", ".join(m.cached_stages) + "."]
    data = m.data
    lines += [
        "",
        f"Data: {_md_code(data.path)} ({data.rows:,} rows, {data.frauds:,} "
        f"frauds, sha256 `{data.sha256[:12]}`); profile `{m.profile}`, "
        f"{m.n_splits} split(s), seed {m.seed}, "
        f"{m.duration_seconds or 0:.0f} s.",
    ]
    if report_path:
        lines += ["", f"Report: {_md_code(report_path)}"]
    return "\n".join(lines) + "\n"


def summary_table(metrics: RunMetrics | dict[str, Any]) -> list[dict[str, Any]]:
    """One row per method: means, corrected CIs, and the paired difference to
    the reference (no resampling) with its corrected CI and decision."""
    m = as_metrics(metrics)
    diffs = {c.method: c for c in versus_reference(m)}
    added = rows_added(m)
    rows = []
    for s in m.summary:
        d = diffs.get(s.method)
        rows.append(
            {
                "method": s.method,
                "rows_added_mean": added.get(s.method),
                "auprc_mean": round(s.auprc_mean, 4),
                "auprc_ci95": format_ci(s.auprc_ci95),
                "delta_vs_none": None if d is None else round(d.mean_diff, 4),
                "delta_ci95": None if d is None else format_ci(d.ci95_corrected),
                "decision": None if d is None else d.decision,
                "p_better": None if d is None else d.p_better,
                "roc_auc_mean": round(s.roc_auc_mean, 4),
                "recall_at_precision_90_mean": round(s.recall_at_precision_90_mean, 4),
                "net_savings_mean": None
                if s.net_savings_mean is None
                else round(s.net_savings_mean, 2),
            }
        )
    return rows
