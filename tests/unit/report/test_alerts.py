"""A run's events: which a run's metrics call for, what they carry, and the
notifications they render to (the Prefect server test: test_alerts_server.py)."""

import copy

import jinja2
import pytest

from pipeline.report import alerts
from pipeline.report.alerts import (
    CHAMPION_DEGRADED,
    CHAMPION_PROMOTED,
    DRIFT_DETECTED,
    EVENTS,
    METHODS_FAILED,
    NO_NEW_DATA,
    NOTIFIABLE,
    RUN_COMPLETED,
    RUN_REFUSED,
    RUN_TERMINATED,
    UNSEEN_CATEGORIES,
    refused_event,
    run_events,
    terminated_event,
)

HEALTHY = {
    "schema_version": 1,
    "run_id": "20261205T030000Z-abc123",
    "status": "completed",
    "primary_metric": "auprc",
    "comparison": {
        "headline": "No method is better than no resampling (none) with P ≥ 0.95. …",
        "decision": {
            "method": "cwgan_gp",
            "baseline": "none",
            "decision": "undecided",
            "p_better": 0.42,
            "p_equivalent": 0.26,
            "p_worse": 0.32,
        },
    },
    "summary": [
        {"method": "none", "auprc_mean": 0.8403},
        {"method": "smote", "auprc_mean": 0.8512},
        {"method": "cwgan_gp", "auprc_mean": 0.8377},
    ],
    # The challenger chosen on validation rows (not the best test mean, smote's).
    "selection": {
        "metric": "auprc",
        "on": "validation",
        "rope": 0.02,
        "candidates": [],
        "simplest": "none",
        "chosen": "none",
        "equivalents": ["smote", "cwgan_gp"],
        "reason": "none: the simplest method of the run; …",
    },
    "data": {"rows": 284807, "frauds": 492},
    "failures": [],
    "registry": {
        "model": "fraudaug-detector",
        "version": "5",
        "promoted": False,
        "reason": "not a clear win: the champion stays",
        "challenger": {"method": "smote"},
    },
    "monitoring": {
        "status": "scored",
        "alert": False,
        "alert_drop": 0.05,
        "drop": 0.01,
        "metric": "auprc",
        "now": {"auprc": 0.83},
        "at_registration": {"auprc": 0.84},
        "champion": {"method": "none", "run_id": "r0", "version": "4"},
        "rows": 56960,
        "frauds": 95,
        "line": "the champion on the newest test rows: AUPRC 0.8300 (0.8400, -0.0100)",
    },
    "drift": {
        "threshold": 0.25,
        "split": 0,
        "features": [{"feature": "V1", "psi": 0.01}, {"feature": "Amount", "psi": 0.1}],
        "flagged": [],
        "unseen": {"flagged": [], "share_threshold": 0.01, "subsets": {}},
    },
}


def _names(metrics):
    return [e.name for e in run_events(metrics, report="file:///r/report.html")]


def test_a_healthy_run_emits_only_that_it_completed_with_its_figures():
    (event,) = run_events(HEALTHY, report="file:///r/report.html")
    assert event.kind is RUN_COMPLETED
    assert event.payload == {
        "run_id": HEALTHY["run_id"],
        "status": "completed",
        "headline": HEALTHY["comparison"]["headline"],
        "decision": HEALTHY["comparison"]["decision"],
        "metric": "auprc",
        "challenger": "none",
        "challenger_value": 0.8403,
        "rows": 284807,
        "frauds": 492,
        "failed_methods": [],
        "report": "file:///r/report.html",
    }
    # The model version is a related resource of the run's events.
    assert (
        event.related[0]["prefect.resource.id"] == "fraudaug.model.fraudaug-detector.5"
    )
    assert not any(k.alert for k in (RUN_COMPLETED, CHAMPION_PROMOTED))


def test_each_finding_emits_its_event_with_the_figures():
    m = copy.deepcopy(HEALTHY)
    m["registry"]["promoted"] = True
    m["monitoring"].update(alert=True, drop=0.0812)
    m["drift"]["features"].append({"feature": "V4", "psi": 0.4123456})
    m["drift"]["flagged"] = ["V4"]
    m["drift"]["unseen"] = {
        "flagged": ["merchant"],
        "share_threshold": 0.01,
        "subsets": {
            "test": {"rows": 1000, "columns": [{"column": "merchant", "share": 0.034}]}
        },
    }
    m["data"]["changes"] = {
        "previous_run": "20261204T030000Z-aaaaaa",
        "new": [],
        "changed": [],
        "removed": [],
        "line": "30 partition(s); since run 20261204T030000Z-aaaaaa: nothing new",
    }
    m["failures"] = [
        {"method": "adasyn", "split": 1, "n_minority": 900, "reason": "x",
         "left_out": True},
    ]  # fmt: skip
    events = {e.name: e for e in run_events(m)}
    assert list(events) == [k.name for k in EVENTS]  # every kind, in order
    assert events[RUN_COMPLETED.name].payload["failed_methods"] == ["adasyn"]
    failed = events[METHODS_FAILED.name].payload
    assert failed["methods"] == {"adasyn": "split 1: x"}
    assert failed["line"] == "adasyn left out (split 1: x)"
    degraded = events[CHAMPION_DEGRADED.name].payload
    assert (degraded["drop"], degraded["alert_drop"], degraded["version"]) == (
        0.0812,
        0.05,
        "4",
    )
    assert degraded["now"] == {"auprc": 0.83}
    drift = events[DRIFT_DETECTED.name].payload
    assert drift["features"] == {"V4": 0.4123456}
    assert drift["largest_psi"] == 0.4123
    assert "V4 0.4123" in drift["line"]
    unseen = events[UNSEEN_CATEGORIES.name].payload
    assert unseen["columns"] == ["merchant"]
    assert "merchant test 3.4%" in unseen["line"]
    assert events[NO_NEW_DATA.name].payload["previous_run"] == "20261204T030000Z-aaaaaa"
    assert events[CHAMPION_PROMOTED.name].payload["method"] == "smote"
    for event in events.values():
        assert event.payload["run_id"] == m["run_id"]


@pytest.mark.parametrize(
    "changes, unchanged",
    [
        (None, False),  # a single file
        ({"previous_run": None, "new": ["a"], "changed": [], "removed": []}, False),
        ({"previous_run": "r", "new": ["d=2"], "changed": [], "removed": []}, False),
        ({"previous_run": "r", "new": [], "changed": ["d=1"], "removed": []}, False),
        ({"previous_run": "r", "new": [], "changed": [], "removed": ["d=1"]}, True),
    ],
)
def test_no_new_data_means_nothing_new_or_changed_since_a_previous_run(
    changes, unchanged
):
    m = copy.deepcopy(HEALTHY)
    if changes is not None:
        m["data"]["changes"] = {**changes, "line": "…"}
    assert (NO_NEW_DATA.name in _names(m)) is unchanged


def test_without_a_registry_or_monitoring_a_run_still_completes():
    m = copy.deepcopy(HEALTHY)
    del m["registry"], m["monitoring"]
    m["summary"], m["selection"] = [], None
    (event,) = run_events(m)
    assert event.related == [] and event.payload["challenger"] is None


def test_every_notification_renders_from_its_payload():
    """The subjects and bodies are the Jinja templates Prefect renders: each
    renders from a real payload with no undefined name, and carries the figures."""
    m = copy.deepcopy(HEALTHY)
    m["registry"]["promoted"] = True
    m["monitoring"].update(alert=True, drop=0.0812)
    m["drift"]["features"].append({"feature": "V4", "psi": 0.41})
    m["drift"]["flagged"] = ["V4"]
    m["drift"]["unseen"]["flagged"] = ["merchant"]
    m["data"]["changes"] = {
        "previous_run": "p",
        "new": [],
        "changed": [],
        "removed": [],
        "line": "nothing new",
    }
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    rendered = {}
    for event in run_events(m, report="file:///r.html"):
        context = {"event": {"payload": event.payload}}
        rendered[event.name] = (
            env.from_string(event.kind.subject).render(context)
            + "\n"
            + env.from_string(event.kind.body).render(context)
        )
    assert "0.0812" in rendered[CHAMPION_DEGRADED.name]
    assert "AUPRC 0.8300" in rendered[CHAMPION_DEGRADED.name]
    assert "largest PSI 0.41" in rendered[DRIFT_DETECTED.name]
    assert (
        "challenger (chosen on validation rows): none auprc 0.8403"
        in rendered[RUN_COMPLETED.name]
    )
    assert "no new data since run p" in rendered[NO_NEW_DATA.name]
    failed = alerts.RUN_FAILED
    text = env.from_string(failed.subject + failed.body).render(
        flow_run={"name": "nimble-fox", "id": "1", "state": {"name": "Failed",
                                                             "message": "boom"}},
        deployment=None,
    )  # fmt: skip
    assert "nimble-fox Failed" in text and "boom" in text


def test_event_names_are_unique_and_namespaced():
    names = [k.name for k in NOTIFIABLE]
    assert len(set(names)) == len(names)
    assert all(n.startswith("fraudaug.") for n in names[:-1])
    assert names[-1] == "prefect.flow-run.Failed"


def test_a_refused_run_names_the_file_the_line_and_the_reason():
    """What ``fraudaug run`` printed when it refused its input becomes the
    event's reason; the file and the line are read from it, and the message
    renders from the payload."""
    reason = (
        "landing/day=2026-12-04/part.csv: column amount, row 7 (line 9): found "
        "'12,5', expected a number"
    )
    event = refused_event(reason, data="landing/", at="20261205T030000Z")
    assert event.kind is RUN_REFUSED and RUN_REFUSED.alert  # notified by default
    assert event.payload == {
        "run_id": "refused-20261205T030000Z",
        "file": "landing/day=2026-12-04/part.csv",
        "line": 9,
        "reason": reason,
        "data": "landing/",
    }
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    context = {"event": {"payload": event.payload}}
    subject = env.from_string(RUN_REFUSED.subject).render(context)
    body = env.from_string(RUN_REFUSED.body).render(context)
    assert subject == (
        "fraudaug: a run refused its input: landing/day=2026-12-04/part.csv"
    )
    assert body.startswith(reason)
    bare = refused_event("nothing to read", data="x.csv", at="20261205T030000Z")
    assert (bare.payload["file"], bare.payload["line"]) == ("x.csv", None)


@pytest.mark.parametrize(
    "run_id, resume",
    [
        ("20261205T030000Z-ab12cd", "its MLflow run is KILLED; the same command"),
        (None, "no run folder had been made"),
    ],
)
def test_a_terminated_run_says_how_where_and_what_the_next_night_does(run_id, resume):
    event = terminated_event(
        signal="SIGTERM",
        stages=["train-gan", "fit-detector"],
        run_id=run_id,
        data="landing/",
        at="20261205T031500Z",
    )
    assert event.kind is RUN_TERMINATED and RUN_TERMINATED.alert
    assert event.payload["run_id"] == (run_id or "terminated-20261205T031500Z")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    context = {"event": {"payload": event.payload}}
    subject = env.from_string(RUN_TERMINATED.subject).render(context)
    body = env.from_string(RUN_TERMINATED.body).render(context)
    assert subject == f"fraudaug: run {event.payload['run_id']} terminated (SIGTERM)"
    first, second = body.split("\n")
    assert first.startswith("stopped during train-gan, fit-detector; " + resume)
    assert second == "data: landing/"
    early = terminated_event(
        signal="Ctrl-C", stages=[], run_id=None, data="x.csv", at="20261205T031500Z"
    )
    context = {"event": {"payload": early.payload}}
    assert (
        env.from_string(RUN_TERMINATED.body)
        .render(context)
        .startswith("stopped during its start; ")
    )
