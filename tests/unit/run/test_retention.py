"""A year of nights keeps disk bounded: the retention rule over 30 nights."""

import os
import time

import pytest

from pipeline.run.retention import apply_retention, run_folders

DAY = 86_400.0
RUN_BYTES = 200_000


def _night(root, i, start, client, experiment_id):
    """What one nightly run leaves: its run folder, its MLflow run, the cache
    entry it used (stamped at its night)."""
    run_id = f"202601{i + 1:02d}T030000Z-{i:06x}"
    folder = root / "reports" / run_id
    folder.mkdir(parents=True)
    (folder / "run.json").write_text("{}")
    (folder / "predictions.parquet").write_bytes(os.urandom(RUN_BYTES))
    run = client.create_run(experiment_id, tags={"fraudaug.run_id": run_id})
    client.set_terminated(run.info.run_id)
    entry = root / "cache" / "stages" / "gan" / f"key-{i}"
    entry.mkdir(parents=True)
    (entry / "generator.keras").write_bytes(os.urandom(50_000))
    (entry / "done.json").write_text("{}")
    os.utime(entry / "done.json", (start + i * DAY, start + i * DAY))
    return run_id, run.info.run_id


def _size(path):
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def test_thirty_nights_keep_disk_bounded_and_the_champions_run(tmp_path):
    from pipeline.registry.store import MODEL_NAME
    from pipeline.registry.tracking import EXPERIMENT, mlflow_client

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow_client(uri)
    experiment_id = client.create_experiment(EXPERIMENT)
    client.create_registered_model(MODEL_NAME)
    start = time.time() - 40 * DAY
    keep_runs, cache_days = 5, 3.0
    runs, mlflow_ids, sizes = [], {}, []
    for i in range(30):
        run_id, mlflow_id = _night(tmp_path, i, start, client, experiment_id)
        runs.append(run_id)
        mlflow_ids[run_id] = mlflow_id
        if i in (2, 4):  # a model version from nights 2 and 4; night 2's is champion
            version = client.create_model_version(
                MODEL_NAME, "file:///nowhere", run_id=mlflow_id,
                tags={"fraudaug.run_id": run_id},
            )  # fmt: skip
            if i == 2:
                client.set_registered_model_alias(
                    MODEL_NAME, "champion", version.version
                )
        if i == 28:  # night 25's entry, used again on night 28
            os.utime(
                tmp_path / "cache/stages/gan/key-25/done.json",
                (start + i * DAY, start + i * DAY),
            )
        removed = apply_retention(
            tmp_path / "reports",
            keep_runs=keep_runs,
            cache_dir=tmp_path / "cache",
            cache_days=cache_days,
            tracking_uri=uri,
            keep={run_id},
            now=start + i * DAY,
        )
        assert run_id not in removed["runs"]
        sizes.append(_size(tmp_path / "reports") + _size(tmp_path / "cache"))
    # Disk stays bounded: at most keep_runs + the champion's run folder, and the
    # cache entries used within cache_days.
    bound = (keep_runs + 1) * (RUN_BYTES + 10_000) + (cache_days + 2) * 60_000
    assert max(sizes) <= bound
    assert sizes[-1] == pytest.approx(sizes[10], rel=0.05)  # flat, not growing
    kept = [p.name for p in run_folders(tmp_path / "reports")]
    assert kept == runs[-keep_runs:][::-1] + [runs[2]]
    # MLflow: the removed nights' runs are deleted, the kept ones are not; night
    # 4's version (no alias) went with its run, the champion's stays.
    for run_id, mlflow_id in mlflow_ids.items():
        stage = client.get_run(mlflow_id).info.lifecycle_stage
        assert stage == ("active" if run_id in kept else "deleted"), run_id
    versions = client.search_model_versions(f"name = '{MODEL_NAME}'")
    assert [v.tags["fraudaug.run_id"] for v in versions] == [runs[2]]
    # Cache: the entries used within cache_days: the last nights', and night 25's
    # (4 days old, but used again on night 28).
    entries = sorted(p.name for p in (tmp_path / "cache/stages/gan").iterdir())
    assert entries == sorted(f"key-{i}" for i in range(25, 30))


def test_a_dry_run_says_what_the_run_does_and_a_missing_folder_is_one_line(
    tmp_path, capsys
):
    """The dry run names the same runs, MLflow runs (a monitor night's among
    them) and entries as the real one, removes nothing, and both say it in
    their one line, with nothing on stderr."""
    from flows.cli import main
    from pipeline.registry.tracking import EXPERIMENT, mlflow_client

    reports = tmp_path / "reports"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow_client(uri)
    experiment_id = client.create_experiment(EXPERIMENT)
    for i in range(3):
        run_id = f"2026010{i + 1}T030000Z-00000{i}"
        folder = reports / run_id
        folder.mkdir(parents=True)
        (folder / "run.json").write_text("{}")
        kind = {"fraudaug.kind": "monitor"} if i == 1 else {}
        run = client.create_run(experiment_id, tags={"fraudaug.run_id": run_id, **kind})
        client.set_terminated(run.info.run_id)
    args = ["retention", "--reports", str(reports), "--keep-runs", "1",
            "--cache-dir", str(tmp_path / "cache"), "--tracking-uri", uri]  # fmt: skip
    assert main([*args, "--dry-run"]) == 0
    dry = capsys.readouterr()
    assert dry.out.startswith("would remove 2 run(s) (") and dry.err == ""
    assert ", 2 MLflow run(s), 0 cache entries" in dry.out
    assert len(run_folders(reports)) == 3
    assert len(client.search_runs([experiment_id])) == 3
    assert main(args) == 0
    real = capsys.readouterr()
    assert real.out == dry.out.replace("would remove", "removed", 1)
    assert real.err == ""
    assert [p.name for p in run_folders(reports)] == ["20260103T030000Z-000002"]
    assert len(client.search_runs([experiment_id])) == 1
    assert main(["retention", "--reports", str(tmp_path / "nope")]) == 2
    assert "no such reports folder" in capsys.readouterr().err
    assert main(["retention", "--reports", str(reports), "--keep-runs", "0"]) == 2
    assert "--keep-runs must be at least 1" in capsys.readouterr().err
