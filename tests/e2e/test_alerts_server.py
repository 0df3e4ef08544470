"""``fraudaug alerts`` against a real Prefect server and a local HTTP receiver:
a run's findings post exactly one notification each, carrying the figures; a
failed flow run posts one, a run that refused its input one; a healthy run posts
none."""

import copy
import json
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.helpers import fraudaug_held_at, prefect_server, wait_until_held

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


class Receiver:
    """A webhook endpoint on a free loopback port: every POST's JSON body."""

    def __init__(self):
        received = self.received = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                received.append(json.loads(body or b"null"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, n: int, timeout: float = 90.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while len(self.received) < n and time.monotonic() < deadline:
            time.sleep(0.5)
        return list(self.received)


def fraudaug(env, *args, cwd=None):
    return subprocess.run(
        [str(BIN / "fraudaug"), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )


EMIT = """
import json, sys
from flows.alerts import emit_run_events
from prefect.events.worker import EventsWorker
for path in sys.argv[1:]:
    print(emit_run_events(json.load(open(path)), report="file:///report.html"))
EventsWorker.drain_all()
"""


def test_alerts_notify_each_finding_once_and_a_healthy_night_not_at_all(
    finished_run, tmp_path, sample_path
):
    result, reports = finished_run
    real = json.loads((Path(result["run_dir"]) / "metrics.json").read_text())
    from pipeline.report.alerts import run_events

    # The real run is healthy: nothing to alert on.
    assert [e.name for e in run_events(real) if e.kind.alert] == []
    degraded = copy.deepcopy(real)
    degraded["run_id"] = real["run_id"] + "-night2"
    degraded["monitoring"] = {
        **(real.get("monitoring") or {}),
        "alert": True,
        "alert_drop": 0.05,
        "metric": "auprc",
        "drop": 0.0731,
        "now": {"auprc": 0.7942},
        "at_registration": {"auprc": 0.8673},
        "champion": {"method": "none", "run_id": real["run_id"], "version": "1"},
        "line": "the champion (version 1, none) on the newest test rows: "
        "AUPRC 0.7942 (0.8673 at registration, -0.0731)",
    }
    files = []
    for name, metrics in (("healthy", real), ("degraded", degraded)):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps(metrics))
    receiver = Receiver()
    with prefect_server(tmp_path) as env:
        unset = {k: v for k, v in env.items() if k != "PREFECT_API_URL"}
        no_server = fraudaug(unset, "alerts", "list")
        assert no_server.returncode == 2
        assert no_server.stderr.count("\n") == 1
        assert "PREFECT_API_URL" in no_server.stderr

        setup = fraudaug(env, "alerts", "setup", "--webhook", receiver.url)
        assert setup.returncode == 0, setup.stderr
        assert setup.stdout.count("created ") == 8
        again = fraudaug(env, "alerts", "setup", "--webhook", receiver.url)
        assert again.stdout.count("updated ") == 8 and "created " not in again.stdout
        listed = fraudaug(env, "alerts", "list")
        assert listed.stdout.count("fraudaug: ") == 8, listed.stdout
        assert "fraudaug.champion.degraded" in listed.stdout

        emitted = subprocess.run(
            [sys.executable, "-c", EMIT, *map(str, files)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert emitted.returncode == 0, emitted.stderr
        (message,) = receiver.wait_for(1)
        assert "the champion degraded by 0.0731 auprc" in message["text"]
        assert "0.7942" in message["text"] and degraded["run_id"] in message["text"]

        # A fraud-augmentation flow run that fails (a table without the schema's
        # columns): Prefect's own event, one notification.
        bad = tmp_path / "bad.csv"
        bad.write_text("a,b\n1,2\n")
        failed = subprocess.run(
            [
                sys.executable, "-c",
                "import sys; from flows.fraud_flow import fraud_augmentation; "
                "fraud_augmentation(data_path=sys.argv[1], reports_dir=sys.argv[2], "
                "tracking_uri='sqlite:///' + sys.argv[3])",
                str(bad), str(tmp_path / "reports"), str(tmp_path / "mlflow.db"),
            ],
            env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300,
        )  # fmt: skip
        assert failed.returncode != 0
        messages = receiver.wait_for(2)
        assert len(messages) == 2, messages
        assert "Failed" in messages[1]["text"]

        # Nights refused before any flow run exists (a table that does not match
        # the schema, a corrupt Parquet file): one line, exit 2, and one message
        # each naming the file and the reason.
        corrupt = tmp_path / "corrupt.parquet"
        corrupt.write_bytes(b"PAR1 but not a Parquet file" * 10)
        for source, reason in ((bad, "missing column(s)"), (corrupt, "not a readable")):
            refused = fraudaug(
                env, "run", "--data", str(source), "--reports", "reports",
                "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", cwd=tmp_path,
            )  # fmt: skip
            assert refused.returncode == 2, refused.stderr
            assert refused.stderr.count("\n") == 1, refused.stderr  # its one line
            assert reason in refused.stderr
        messages = receiver.wait_for(4)
        assert len(messages) == 4, messages
        for message, source, reason in (
            (messages[2], bad, "missing column(s)"),
            (messages[3], corrupt, "not a readable Parquet file"),
        ):
            subject, body = message["text"].split("\n", 1)
            assert subject == f"fraudaug: a run refused its input: {source}"
            assert reason in body and f"data: {source}" in body

        # A night whose method fails (SMOTE asked for more neighbours than the
        # training frauds have), through the real command: exit 3 and one
        # message saying which method and why, with what else the run found.
        common = [
            "run", "--data", str(sample_path), "--profile", "smoke",
            "--reports", "reports", "--tracking-uri", f"sqlite:///{tmp_path / 'm.db'}",
            "--set", 'evaluation.methods=["none","smote"]',
            "--set", "detector.n_estimators=100",
            "--set", f"data.cache_dir={json.dumps(str(tmp_path / 'cache'))}",
        ]  # fmt: skip
        failing = fraudaug(
            env, *common, "--set", "evaluation.smote_k_neighbors=1000", cwd=tmp_path
        )
        # (fraudaug run's exit 3, through the real command: the report's path,
        # then which method was left out and why as its last line.)
        assert failing.returncode == 3, failing.stderr[-3000:]
        report = tmp_path / failing.stdout.strip()
        assert report.name == "report.html" and report.is_file()
        last = failing.stderr.strip().splitlines()[-1]
        assert last.startswith("fraudaug: completed with failures: smote left out (")
        assert "n_neighbors" in last and last.endswith("(see the report)")
        from pipeline.report.alerts import METHODS_FAILED

        night = json.loads((report.parent / "metrics.json").read_text())
        assert night["status"] == "completed_with_failures"
        assert {f["method"] for f in night["failures"]} == {"smote"}
        found = [e for e in run_events(night) if e.kind.alert]
        assert METHODS_FAILED in [e.kind for e in found]
        messages = receiver.wait_for(4 + len(found))
        assert len(messages) == 4 + len(found), messages
        (failed_message,) = [
            m for m in messages[4:] if "completed with failures" in m["text"]
        ]
        assert "smote left out (split 0: " in failed_message["text"]

        # A night stopped by its scheduler (SIGTERM, here while it preprocesses):
        # one message naming the run, the signal and the stage; its flow run is
        # Cancelled, so the "run failed" automation stays silent.
        held = tmp_path / "held"
        stopped = subprocess.Popen(
            [*fraudaug_held_at("run.prepare.stage_preprocess", held), *common],
            env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_until_held(stopped, held)
        stopped.send_signal(signal.SIGTERM)
        assert stopped.wait(120) == 143, stopped.stderr.read()[-3000:]
        said = stopped.stderr.read()  # (what it started: conftest checks it ended)
        assert "Traceback" not in said, said[-3000:]
        last = said.strip().splitlines()[-1]
        assert last.startswith("fraudaug: terminated; the run stopped"), last
        assert "Cancelled('stopped by SIGTERM during preprocess')" in said
        from pipeline.registry.tracking import mlflow_client

        client = mlflow_client(f"sqlite:///{tmp_path / 'm.db'}")
        experiment = client.get_experiment_by_name("fraud-augmentation")
        nights = client.search_runs([experiment.experiment_id])
        # The failing night's MLflow run, and this one's.
        assert sorted(r.info.status for r in nights) == ["FINISHED", "KILLED"]
        messages = receiver.wait_for(5 + len(found))
        subject, body = messages[-1]["text"].split("\n", 1)
        assert subject.startswith("fraudaug: run ") and subject.endswith(
            " terminated (SIGTERM)"
        )
        assert body.startswith("stopped during preprocess; its MLflow run is KILLED")
        time.sleep(10)  # nothing more arrives: one message per finding
        assert len(receiver.received) == 5 + len(found), receiver.received
        assert not any("Crashed" in m["text"] for m in receiver.received)

        removed = fraudaug(env, "alerts", "remove")
        assert removed.returncode == 0 and "removed 8 automation(s)" in removed.stdout
        assert "no fraudaug automations" in fraudaug(env, "alerts", "list").stdout
    receiver.server.shutdown()


NIGHTS = """
import json, sys
from pathlib import Path

import numpy as np
import pandas as pd

from flows.fraud_flow import fraud_augmentation
from pipeline.data.replay import replay
from pipeline.data.schema import load_schema

csv, root = Path(sys.argv[1]), Path(sys.argv[2])
overrides = json.loads(sys.argv[3])
schema = load_schema(str(root / "schema.json"))
frame = pd.read_csv(csv)
days = pd.to_datetime(frame["tx_datetime"]).dt.strftime("%Y-%m-%d")
order = sorted(days.unique())
first = 21  # days in the folder before the first night
results = []
for night in range(10):
    if night == 7:
        pass  # the night's file did not arrive
    elif night == 9:
        # The newest day's labels shuffled: the champion cannot rank it.
        day = order[first + night - 2]
        rows = frame[days == day].copy()
        labels = rows["is_fraud"].to_numpy()
        rows["is_fraud"] = np.random.default_rng(0).permutation(labels)
        folder = root / "transactions" / f"date={day}"
        folder.mkdir(parents=True)
        rows.to_parquet(folder / "part-0.parquet", index=False)
    else:
        replay(csv, root / "transactions", schema=schema,
               upto=first + night - (1 if night > 7 else 0))
    result = fraud_augmentation(
        data_path=str(root / "transactions"), profile="smoke", seed=0,
        reports_dir=str(root / "reports"), overrides=overrides,
        tracking_uri="sqlite:///" + str(root / "mlflow.db"),
        schema_path=str(root / "schema.json"),
    )
    results.append({k: result[k] for k in ("run_id", "status", "events")})
print(json.dumps(results))
"""


def test_ten_nights_show_on_the_morning_page_and_notify_as_expected(
    mixed_csv, mixed_schema, tmp_path
):
    """Ten nightly runs on a folder that grows a day a night, against a real
    Prefect server with `fraudaug alerts` set up: night 8's file never arrives
    (a monitor-only night), night 10's labels are shuffled (the champion
    degrades). Both show on the index; the receiver gets exactly the alerts the
    nights' metrics call for — those two among them — and nothing else."""
    from pipeline.data.schema import save_schema
    from pipeline.report.alerts import CHAMPION_DEGRADED, NO_NEW_DATA, run_events
    from tests.helpers import ROLLING_SMOKE

    save_schema(tmp_path / "schema.json", mixed_schema)
    overrides = {
        "gan": {"steps": 60},
        "detector": {"n_estimators": 100},
        "evaluation": {"methods": ["none", "random_under"], "n_bootstrap": 0},
        # A team's tiny table: a 2-day test window of ~65 frauds, whose AUPRC
        # moves by up to 0.2 between honest nights (the shuffled night drops by
        # ~0.4): alerts past a 0.3 drop.
        "split": {**ROLLING_SMOKE, "test_window": "2d"},
        "registry": {"alert_drop": 0.3},
        "data": {"cache_dir": str(tmp_path / "cache")},
    }
    receiver = Receiver()
    with prefect_server(tmp_path) as env:
        setup = fraudaug(env, "alerts", "setup", "--webhook", receiver.url)
        assert setup.returncode == 0, setup.stderr
        nights = subprocess.run(
            [sys.executable, "-c", NIGHTS, str(mixed_csv), str(tmp_path),
             json.dumps(overrides)],
            env=env, capture_output=True, text=True, cwd=tmp_path, timeout=1200,
        )  # fmt: skip
        assert nights.returncode == 0, nights.stderr[-3000:]
        results = json.loads(nights.stdout.strip().splitlines()[-1])
        reports = tmp_path / "reports"
        metrics = [
            json.loads((reports / r["run_id"] / "metrics.json").read_text())
            for r in results
        ]
        expected = sorted(
            (e.name, m["run_id"])
            for m in metrics
            for e in run_events(m)
            if e.kind.alert
        )
        messages = receiver.wait_for(len(expected), timeout=120)
        time.sleep(10)  # and nothing more
        messages = list(receiver.received)
    receiver.server.shutdown()
    assert [r["status"] for r in results].count("no_new_data") == 1
    assert results[7]["status"] == "no_new_data"
    assert (NO_NEW_DATA.name, results[7]["run_id"]) in expected
    assert (CHAMPION_DEGRADED.name, results[9]["run_id"]) in expected
    degraded = [m for m in metrics if (m.get("monitoring") or {}).get("alert")]
    assert [m["run_id"] for m in degraded] == [results[9]["run_id"]]
    subjects = {
        CHAMPION_DEGRADED.name: "the champion degraded",
        NO_NEW_DATA.name: "no new data since run",
        "fraudaug.drift.detected": "drift in",
        "fraudaug.categories.unseen": "unseen categories in",
    }
    # Each message: its subject names the finding, its last line "run <id>".
    got = sorted(
        (name, text.rsplit("run ", 1)[1].strip())
        for text in (message["text"] for message in messages)
        for name, prefix in subjects.items()
        if text.startswith("fraudaug: " + prefix)
    )
    assert len(messages) == len(expected), messages
    assert got == expected
    # The morning page: both nights marked.
    index = (tmp_path / "reports" / "index.html").read_text()
    assert index.count('<tr class="alerted">') == len({run for _, run in expected})
    assert "no new data" in index and "<b>decayed</b>" in index
