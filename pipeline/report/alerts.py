"""What a run found that someone should hear about: the run's events, named here
and only here, each with the figures in its payload.

The flow emits them as Prefect events (:mod:`flows.events`); ``fraudaug alerts``
sets up the Prefect automations that turn them, and a failed or crashed nightly
run, into notifications (:mod:`flows.alerts`). This module decides *which* events
a run's ``metrics.json`` calls for and what they carry; it never imports Prefect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pipeline.data.partitions import nothing_new
from pipeline.evaluation.amounts import failed_methods, failures_line
from pipeline.evaluation.records import (
    Drift,
    Monitoring,
    RegistryDecision,
    RunMetrics,
    as_metrics,
)

RESOURCE_PREFIX = "fraudaug.run"
"""A run's event resource: ``fraudaug.run.<run id>``."""

MODEL_RESOURCE_PREFIX = "fraudaug.model"
"""A model version's related resource: ``fraudaug.model.<name>.<version>``."""


@dataclass(frozen=True)
class EventKind:
    """One kind of event: its Prefect event name, when a run emits it, the
    notification it becomes (``subject`` and ``body`` are Jinja templates over
    Prefect's ``event``, as automations render them), and whether ``fraudaug
    alerts`` notifies on it unless told which (``alert``: something to act on; a
    healthy night sends nothing)."""

    name: str
    when: str
    subject: str
    body: str
    alert: bool = True


RUN_COMPLETED = EventKind(
    "fraudaug.run.completed",
    "every run that finishes (also with failed methods)",
    "fraudaug run {{ event.payload.run_id }}: {{ event.payload.status }}",
    "{{ event.payload.headline }}\n"
    "challenger (chosen on validation rows): {{ event.payload.challenger }} "
    "{{ event.payload.metric }} {{ event.payload.challenger_value }}\n"
    "{{ event.payload.rows }} rows, {{ event.payload.frauds }} frauds; "
    "report: {{ event.payload.report }}",
    alert=False,
)
METHODS_FAILED = EventKind(
    "fraudaug.methods.failed",
    "a method's fits failed (a sampler raised or ran out of memory): the run "
    "completed without it (fraudaug run exits 3) or without some of its amounts",
    "fraudaug run {{ event.payload.run_id }}: completed with failures",
    "{{ event.payload.line }}\nreport: {{ event.payload.report }}",
)
CHAMPION_PROMOTED = EventKind(
    "fraudaug.champion.promoted",
    "the run's challenger became the champion",
    "fraudaug: a new champion (version {{ event.payload.version }}, "
    "{{ event.payload.method }})",
    "{{ event.payload.reason }}\nrun {{ event.payload.run_id }}",
    alert=False,
)
CHAMPION_DEGRADED = EventKind(
    "fraudaug.champion.degraded",
    "the champion's score on the newest data fell by more than registry.alert_drop",
    "fraudaug: the champion degraded by {{ event.payload.drop }} "
    "{{ event.payload.metric }}",
    "{{ event.payload.line }}\nallowed drop {{ event.payload.alert_drop }}; "
    "run {{ event.payload.run_id }}",
)
DRIFT_DETECTED = EventKind(
    "fraudaug.drift.detected",
    "a feature's PSI between training and test rows is above drift's threshold",
    "fraudaug: drift in {{ event.payload.features | length }} feature(s), "
    "largest PSI {{ event.payload.largest_psi }}",
    "{{ event.payload.line }}\nthreshold {{ event.payload.threshold }}; "
    "run {{ event.payload.run_id }}",
)
UNSEEN_CATEGORIES = EventKind(
    "fraudaug.categories.unseen",
    "a categorical column's validation or test rows hold categories training "
    "never saw, above the share drift allows",
    "fraudaug: unseen categories in {{ event.payload.columns | length }} column(s)",
    "{{ event.payload.line }}\nrun {{ event.payload.run_id }}",
)
NO_NEW_DATA = EventKind(
    "fraudaug.data.unchanged",
    "a partitioned source has no new or changed partition since the previous run",
    "fraudaug: no new data since run {{ event.payload.previous_run }}",
    "{{ event.payload.line }}\nrun {{ event.payload.run_id }}",
)

RUN_REFUSED = EventKind(
    "fraudaug.run.refused",
    "fraudaug run refused its input before the flow started (a corrupt or "
    "mistyped file or partition, a table that does not match the schema, a "
    "missing file or folder): no flow run exists, so no flow-run event either",
    "fraudaug: a run refused its input: {{ event.payload.file }}",
    "{{ event.payload.reason }}\ndata: {{ event.payload.data }}",
)

RUN_TERMINATED = EventKind(
    "fraudaug.run.terminated",
    "fraudaug run was stopped (SIGTERM: a scheduler's timeout, a stopped service; "
    "or Ctrl-C): its flow run ends Cancelled, not Failed or Crashed, so this is "
    "the one message it sends",
    "fraudaug: run {{ event.payload.run_id }} terminated ({{ event.payload.signal }})",
    "stopped during {{ event.payload.stages | join(', ') or 'its start' }}; "
    "{{ event.payload.resume }}\ndata: {{ event.payload.data }}",
)

EVENTS: tuple[EventKind, ...] = (
    RUN_COMPLETED,
    METHODS_FAILED,
    CHAMPION_PROMOTED,
    CHAMPION_DEGRADED,
    DRIFT_DETECTED,
    UNSEEN_CATEGORIES,
    NO_NEW_DATA,
)
"""Every event a run emits, in the order a run emits them."""

RUN_FAILED = EventKind(
    "prefect.flow-run.Failed",
    "a run of the flow failed or crashed (Prefect's own events: "
    "prefect.flow-run.Failed and prefect.flow-run.Crashed)",
    "fraudaug: flow run {{ flow_run.name }} {{ flow_run.state.name }}",
    "{{ flow_run.state.message }}\n"
    "deployment: {{ deployment.name if deployment else 'none' }}; "
    "flow run {{ flow_run.id }}",
)
RUN_FAILED_EVENTS = ("prefect.flow-run.Failed", "prefect.flow-run.Crashed")

NOTIFIABLE: tuple[EventKind, ...] = (*EVENTS, RUN_REFUSED, RUN_TERMINATED, RUN_FAILED)
"""What ``fraudaug alerts`` can notify on."""


@dataclass
class RunEvent:
    """An event to emit: its kind, the figures, the related resources."""

    kind: EventKind
    payload: dict[str, Any]
    related: list[dict[str, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.kind.name


def run_events(
    metrics: RunMetrics | dict[str, Any], *, report: str | None = None
) -> list[RunEvent]:
    """The events a finished run's ``metrics.json`` calls for (:data:`EVENTS`), in
    that order; ``report``: the report's path or address for the payload."""
    m = as_metrics(metrics)
    related = _model_resources(m)
    out = [RunEvent(RUN_COMPLETED, _completed(m, report), related)]
    failures = [f.to_json() for f in m.failures or []]
    if failures:
        out.append(RunEvent(METHODS_FAILED, _methods_failed(failures, report)))
    registry = m.registry
    if registry is not None and registry.promoted:
        out.append(RunEvent(CHAMPION_PROMOTED, _promoted(registry), related))
    monitoring = m.monitoring
    if monitoring is not None and monitoring.alert:
        out.append(RunEvent(CHAMPION_DEGRADED, _degraded(monitoring), related))
    if m.drift is not None:
        out.extend(_drift_events(m.drift))
    changes = m.data.changes
    if nothing_new(changes):
        out.append(
            RunEvent(
                NO_NEW_DATA,
                {
                    "previous_run": changes["previous_run"],
                    "removed": list(changes.get("removed") or []),
                    "line": changes.get("line"),
                },
            )
        )
    for event in out:
        event.payload = {"run_id": m.run_id, **event.payload}
    return out


def _methods_failed(
    failures: list[dict[str, Any]], report: str | None
) -> dict[str, Any]:
    """:data:`METHODS_FAILED`'s payload: the failed methods and one line on them."""
    return {
        "methods": failed_methods(failures),
        "line": failures_line(failures),
        "report": report,
    }


def _promoted(registry: RegistryDecision) -> dict[str, Any]:
    """:data:`CHAMPION_PROMOTED`'s payload: the new champion's version and why."""
    return {
        "version": str(registry.version),
        "model": registry.model,
        "method": (registry.challenger or {}).get("method"),
        "reason": registry.reason,
    }


def _degraded(monitoring: Monitoring) -> dict[str, Any]:
    """:data:`CHAMPION_DEGRADED`'s payload: the champion's drop, its scores now
    and at registration, and which champion it is."""
    champion = monitoring.champion or {}
    return {
        "metric": monitoring.metric,
        "drop": _round(monitoring.drop),
        "alert_drop": monitoring.alert_drop,
        "now": monitoring.now,
        "at_registration": monitoring.at_registration,
        "version": str(champion.get("version")),
        "method": champion.get("method"),
        "champion_run_id": champion.get("run_id"),
        "rows": monitoring.rows,
        "frauds": monitoring.frauds,
        "line": monitoring.line,
    }


def _drift_events(drift: Drift) -> list[RunEvent]:
    """:data:`DRIFT_DETECTED` when features are flagged, then
    :data:`UNSEEN_CATEGORIES` when columns are."""
    out = []
    psi = {f["feature"]: f["psi"] for f in drift.features}
    flagged = {name: psi.get(name) for name in drift.flagged}
    if flagged:
        largest = max((v for v in flagged.values() if v is not None), default=None)
        out.append(
            RunEvent(
                DRIFT_DETECTED,
                {
                    "features": flagged,
                    "largest_psi": _round(largest),
                    "threshold": drift.threshold,
                    "split": drift.split,
                    "line": f"PSI above {drift.threshold}: "
                    + ", ".join(f"{n} {_round(v)}" for n, v in flagged.items()),
                },
            )
        )
    unseen = drift.unseen or {}
    if unseen.get("flagged"):
        out.append(
            RunEvent(
                UNSEEN_CATEGORIES,
                {
                    "columns": list(unseen["flagged"]),
                    "share_threshold": unseen.get("share_threshold"),
                    "subsets": unseen.get("subsets"),
                    "line": _unseen_line(unseen),
                },
            )
        )
    return out


def refused_event(reason: str, *, data: str, at: str) -> RunEvent:
    """The event of a run that refused its input: ``reason`` is the one line
    the command printed (it names the file, and the column, row and line where
    there is one), ``data`` the source the run was given, ``at`` the UTC time
    (``YYYYmmddTHHMMSSZ``), which names the resource (there is no run id)."""
    file = reason.split(": ", 1)[0] if ": " in reason else data
    line = re.search(r"\(line (\d+)\)", reason)
    return RunEvent(
        RUN_REFUSED,
        {
            "run_id": f"refused-{at}",
            "file": file,
            "line": int(line.group(1)) if line else None,
            "reason": reason,
            "data": data,
        },
    )


def terminated_event(
    *, signal: str, stages: list[str], run_id: str | None, data: str, at: str
) -> RunEvent:
    """The event of a run that was stopped: ``signal`` (``SIGTERM`` or
    ``Ctrl-C``), the ``stages`` that were running, the run's id (``None``
    when it was stopped before its run folder existed: then it is named by
    ``at``, the UTC time ``YYYYmmddTHHMMSSZ``) and its ``data``."""
    return RunEvent(
        RUN_TERMINATED,
        {
            "run_id": run_id or f"terminated-{at}",
            "signal": signal,
            "stages": list(stages),
            "resume": (
                "its MLflow run is KILLED; the same command resumes it"
                if run_id
                else "no run folder had been made; the same command starts again"
            ),
            "data": data,
        },
    )


def resource(run_id: str) -> dict[str, str]:
    """A run's event resource."""
    return {
        "prefect.resource.id": f"{RESOURCE_PREFIX}.{run_id}",
        "prefect.resource.name": run_id,
    }


def _completed(m: RunMetrics, report: str | None) -> dict[str, Any]:
    metric = m.primary_metric or "auprc"
    challenger = m.selection.chosen if m.selection else None
    means = {s.method: getattr(s, f"{metric}_mean") for s in m.summary or []}
    failed = sorted({f.method for f in m.failures or []})
    comparison = m.comparison
    decision = comparison.decision if comparison is not None else None
    return {
        "status": m.status,
        "headline": comparison.headline if comparison is not None else None,
        "decision": decision.to_json() if decision is not None else None,
        "metric": metric,
        "challenger": challenger,
        "challenger_value": _round(means.get(challenger)) if challenger else None,
        "rows": m.data.rows,
        "frauds": m.data.frauds,
        "failed_methods": failed,
        "report": report,
    }


def _model_resources(m: RunMetrics) -> list[dict[str, str]]:
    registry = m.registry
    if registry is None or not registry.model or registry.version is None:
        return []
    return [
        {
            "prefect.resource.id": f"{MODEL_RESOURCE_PREFIX}.{registry.model}"
            f".{registry.version}",
            "prefect.resource.role": "model-version",
            "prefect.resource.name": f"{registry.model} {registry.version}",
        }
    ]


def _unseen_line(unseen: dict[str, Any]) -> str:
    parts = []
    for subset, info in (unseen.get("subsets") or {}).items():
        for column in info.get("columns") or []:
            if column.get("column") in unseen["flagged"]:
                parts.append(
                    f"{column['column']} {subset} {column.get('share', 0):.1%}"
                )
    return "rows with a category training never saw: " + (
        ", ".join(parts) or ", ".join(unseen["flagged"])
    )


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)
