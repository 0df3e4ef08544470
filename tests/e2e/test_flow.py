"""The whole flow on the real 20k-row sample, under Prefect's test harness."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from pipeline.core.artifacts import file_sha256
from pipeline.core.errors import DataValidationError, TrainingError
from pipeline.data.ingest import read_transactions
from pipeline.data.schema import KAGGLE
from pipeline.evaluation.metrics import bootstrap_ci, choose_threshold, compute_metrics
from pipeline.run.plan import load_config

pytestmark = pytest.mark.slow


def test_run_writes_the_four_files(finished_run):
    result, reports = finished_run
    run_dir = reports / result["run_id"]
    for name in ("report.html", "metrics.json", "predictions.parquet", "manifest.json"):
        assert (run_dir / name).is_file(), name
    assert result["report"] == str(run_dir / "report.html")
    assert not (run_dir / "scores").exists()  # partial score files were merged
    assert (reports / "latest").resolve() == run_dir.resolve()
    assert result["run_id"] in (reports / "index.html").read_text()
    # Nothing of the run stays in the process (its splits' rows, GANs, new rows,
    # neighbours): a long-lived process that runs night after night stays flat.
    assert result["remembered"] == 0


def test_metrics_and_predictions_agree_and_recompute(finished_run, sample_path):
    result, reports = finished_run
    run_dir = reports / result["run_id"]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    frame, summary = read_transactions(sample_path)
    assert metrics["data"]["sha256"] == summary.sha256
    assert metrics["data"]["rows"] == 20_000 and metrics["data"]["frauds"] == 492
    assert metrics["data"]["demo"] is False
    smoke_methods = load_config("smoke").evaluation.methods
    assert [s["method"] for s in metrics["summary"]] == list(smoke_methods)

    predictions = pd.read_parquet(run_dir / "predictions.parquet")
    assert list(predictions.columns) == ["split", "method", "subset", "row", "score"]
    labels = frame["Class"].to_numpy()
    amounts = frame["Amount"].to_numpy()
    for record in metrics["results"]:
        chosen = predictions[
            (predictions["method"] == record["method"])
            & (predictions["split"] == record["split"])
            & (predictions["subset"] == "test")
        ]
        y = labels[chosen["row"].to_numpy()]
        scores = chosen["score"].to_numpy()
        validation = predictions[
            (predictions["method"] == record["method"])
            & (predictions["split"] == record["split"])
            & (predictions["subset"] == "validation")
        ]
        # Every reported number recomputes from the predictions and the input file.
        threshold = choose_threshold(
            labels[validation["row"].to_numpy()], validation["score"].to_numpy()
        )
        again = compute_metrics(
            y,
            scores,
            threshold=threshold,
            amount=amounts[chosen["row"].to_numpy()],
            review_cost=metrics["config"]["evaluation"]["review_cost"],
        )
        assert record["auprc"] == pytest.approx(average_precision_score(y, scores))
        assert record["roc_auc"] == pytest.approx(roc_auc_score(y, scores))
        for key in (
            "recall_at_precision_90",
            "precision_at_recall_80",
            "threshold",
            "precision",
            "recall",
            "f1",
            "confusion",
            "alerts",
            "fraud_amount_caught",
            "net_savings",
        ):
            assert record[key] == pytest.approx(again[key]), key
        assert 0.5 < record["auprc"] < 1.0
        low, high = record["auprc_bootstrap_ci95"]
        assert low <= record["auprc"] <= high
        # The interval is the bootstrap of these test rows with the split's
        # detector seed (the manifest's), exactly.
        seeds = json.loads((run_dir / "manifest.json").read_text())["seeds"]
        assert [record["auprc_bootstrap_ci95"]] == bootstrap_ci(
            y,
            [scores],
            n_resamples=metrics["config"]["evaluation"]["n_bootstrap"],
            random_state=seeds["detector"][record["split"]],
        )
    for entry in metrics["summary"]:
        mine = [
            r["auprc"] for r in metrics["results"] if r["method"] == entry["method"]
        ]
        assert entry["auprc_mean"] == pytest.approx(np.mean(mine))
    assert metrics["comparison"]["headline"].startswith("One split only")


def test_each_method_is_reported_at_the_amount_its_validation_rows_chose(
    finished_run,
):
    result, reports = finished_run
    run_dir = reports / result["run_id"]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    resampled = 0
    for record in metrics["results"]:
        search = record["amount_search"]
        if record["method"] in ("none", "class_weight"):
            assert record["sampling_strategy"] is None and record["n_added"] == 0
            assert len(search) == 1
            continue
        resampled += 1
        # The grid: increasing amounts up to the shared ratio; the chosen one has
        # the best validation AUPRC (test AUPRC plays no part).
        added = [e["n_added"] for e in search]
        ratios = [e["sampling_strategy"] for e in search]
        if record["method"] == "random_under":  # removes rows: the ratio grows
            assert len(search) >= 2 and ratios == sorted(ratios) and added[-1] == 0
        else:
            assert len(search) >= 2 and added == sorted(added) and added[0] > 0
        assert search[-1]["sampling_strategy"] == pytest.approx(
            metrics["config"]["evaluation"]["sampling_strategy"], abs=1e-4
        )
        best = max(search, key=lambda e: e["validation_auprc"])
        assert record["sampling_strategy"] == best["sampling_strategy"]
        assert record["n_added"] == best["n_added"]
        assert record["validation_auprc"] == best["validation_auprc"]
        assert record["auprc"] == best["test_auprc"]
        assert record["amount_rule"] == "per_split"
        assert "scores_path" not in record and "model_path" not in record
    assert resampled == len(metrics["results"]) - 2
    assert set(metrics["amount_choice"]["methods"]) == {
        r["method"] for r in metrics["results"] if len(r["amount_search"]) > 1
    }
    html = (run_dir / "report.html").read_text()
    assert 'id="amounts"' in html and "AUPRC against rows added" in html
    # The registry's candidates are the chosen detectors of split 0, one a method.
    detectors = sorted(p.name for p in (run_dir / "split-0" / "detectors").iterdir())
    assert detectors == sorted(f"{m}.ubj" for m in metrics["methods"])


def test_scored_rows_are_real_held_out_rows(finished_run):
    result, reports = finished_run
    run_dir = reports / result["run_id"]
    splits = pd.read_parquet(run_dir / "splits.parquet")
    predictions = pd.read_parquet(run_dir / "predictions.parquet")
    train = set(splits.loc[splits["subset"] == "train", "row"])
    for subset in ("validation", "test"):
        rows = set(predictions.loc[predictions["subset"] == subset, "row"])
        expected = set(splits.loc[splits["subset"] == subset, "row"])
        assert rows == expected and not rows & train
    # Every method scored exactly the same rows.
    counts = predictions.groupby(["method", "subset"]).size().unstack()
    assert (counts.nunique() == 1).all()


def test_manifest_records_hashes_seeds_and_config(finished_run):
    result, reports = finished_run
    run_dir = reports / result["run_id"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["seed"] == 0 and manifest["config"]["profile"] == "smoke"
    assert set(manifest["seeds"]) == {
        "split", "gan", "sampler", "detector", "rows", "halves"
    }  # fmt: skip
    assert manifest["package_versions"]["tensorflow"]
    for rel, sha in manifest["artifacts"].items():
        assert file_sha256(run_dir / rel) == sha
    assert "split-0/gan/generator.keras" in manifest["artifacts"]
    assert "report.html" in manifest["artifacts"]


def test_report_shows_methods_and_gan(finished_run):
    result, reports = finished_run
    html = (reports / result["run_id"] / "report.html").read_text()
    for method in load_config("smoke").evaluation.methods:
        assert f'data-method="{method}"' in html
    assert "GAN split 0: losses" in html
    assert "real vs synthetic frauds" in html  # distributions of real, GAN, SMOTE
    assert html.count("<script") == 1  # the one hashed inline script, nothing loaded


def test_bad_data_fails_the_flow_and_writes_nothing(harness, tmp_path, demo_frame):
    from flows.fraud_flow import fraud_augmentation

    bad = tmp_path / "bad.csv"
    demo_frame.drop(columns="Class").to_csv(bad, index=False)
    reports = tmp_path / "reports"
    cache = tmp_path / "cache"
    with pytest.raises(DataValidationError, match="missing column"):
        fraud_augmentation(
            data_path=str(bad),
            profile="smoke",
            reports_dir=str(reports),
            overrides={"data": {"cache_dir": str(cache)}},
        )
    assert not reports.exists() and not cache.exists()


def test_gan_timeout_fails_the_run_with_one_clear_error(harness, sample_path, tmp_path):
    """The trainer stops between steps once past gan.timeout_seconds and fails the
    run with one TrainingError (no signal-driven interruption of TensorFlow)."""
    from flows.fraud_flow import fraud_augmentation

    with pytest.raises(
        TrainingError, match="ran past gan.timeout_seconds = 1 s at step"
    ):
        fraud_augmentation(
            data_path=str(sample_path),
            profile="smoke",
            reports_dir=str(tmp_path / "reports"),
            overrides={
                "data": {"cache_dir": str(tmp_path / "cache")},
                "gan": {"timeout_seconds": 1, "steps": 5000},
            },
        )
    # Its MLflow run is closed as failed, not left running or marked finished.
    from tests.helpers import mlflow_runs_named

    (run_dir,) = [p for p in (tmp_path / "reports").iterdir() if p.name[:2] == "20"]
    (found,) = mlflow_runs_named(run_dir.name)
    assert found.info.status == "FAILED"
    assert found.data.tags["fraudaug.state"] == "failed"
    # And it registered nothing.
    from tests.helpers import mlflow_client

    registered = mlflow_client().search_model_versions(
        f"run_id = '{found.info.run_id}'"
    )
    assert list(registered) == []


def test_gan_facts_and_fidelity_are_reported(finished_run):
    result, reports = finished_run
    run_dir = reports / result["run_id"]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["gan"]["nonfinite_steps"] == 0
    (gan,) = metrics["gan"]["splits"]
    assert gan["selected_step"] in [s["step"] for s in gan["selection"]]
    for source in ("cwgan_gp", "smote", "real_train"):
        fid = metrics["fidelity"][source]
        assert set(fid) >= {
            "c2st_auc",
            "ks_mean",
            "corr_diff",
            "dcr_median",
            "near_copy_share",
        }
        assert 0.0 <= fid["c2st_auc"] <= 1.0
    # SMOTE interpolates between real frauds: many near copies; the real floor
    # is close to chance.
    assert metrics["fidelity"]["smote"]["near_copy_share"] > 0.3
    assert metrics["fidelity"]["real_train"]["c2st_auc"] < 0.65
    html = (run_dir / "report.html").read_text()
    assert 'data-source="cwgan_gp"' in html and 'data-source="smote"' in html
    assert not (run_dir / "split-0" / "gan" / "checkpoint").exists()
    assert not (run_dir / ".lock").exists()


def test_precision_top_k_and_drift_on_the_kaggle_sample(finished_run, sample_path):
    result, reports = finished_run
    run_dir = reports / result["run_id"]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    frame, _ = read_transactions(sample_path)
    predictions = pd.read_parquet(run_dir / "predictions.parquet")
    # Precision top-k by hand: Time counts seconds, so two days; each day's
    # budget is the test rows' share of that day's rows of 100 alerts.
    day = (frame["Time"] // 86_400).astype(int).to_numpy()
    labels = frame["Class"].to_numpy()
    per_day = np.bincount(day)
    for record in metrics["results"]:
        test = predictions[
            (predictions["method"] == record["method"])
            & (predictions["split"] == record["split"])
            & (predictions["subset"] == "test")
        ]
        daily = []
        for d, group in test.assign(day=day[test["row"].to_numpy()]).groupby("day"):
            k = max(1, round(100 * len(group) / per_day[d]))
            top = group.sort_values("score", ascending=False, kind="stable").head(k)
            daily.append(labels[top["row"].to_numpy()].mean())
        assert record["precision_top_k"] == pytest.approx(np.mean(daily))
        assert record["n_days"] == 2
    assert metrics["precision_top_k"]["entity"] is None  # Kaggle names no card
    assert "card_precision_top_k" not in metrics["results"][0]
    # Drift: every feature but the raw time column (seconds differ between any
    # two periods by construction); a random split moves nothing far.
    drift = metrics["drift"]
    assert drift["left_out"] == ["Time"]
    assert {f["feature"] for f in drift["features"]} == {
        f"V{i}" for i in range(1, 29)
    } | {"Amount"}
    assert drift["flagged"] == [] and drift["features"][0]["psi"] < 0.1


def test_generate_writes_kaggle_rows_from_the_run(finished_run, tmp_path):
    from flows.cli import main

    result, reports = finished_run

    def generate(out):
        argv = ["generate", "--run", str(reports / "latest"), "-n", "500"]
        assert main([*argv, "--out", str(out)]) == 0

    out = tmp_path / "gen.csv"
    generate(out)
    frame = pd.read_csv(out)
    assert list(frame.columns) == list(KAGGLE.names) and len(frame) == 500
    assert (frame["Class"] == 1).all() and (frame["Amount"] >= 0).all()
    assert (frame["Amount"] == frame["Amount"].round(2)).all()
    assert out.read_text().startswith('"Time","V1"')
    again = tmp_path / "again.parquet"
    generate(again)
    pd.testing.assert_frame_equal(pd.read_parquet(again), frame, check_dtype=False)


def test_generate_refuses_a_tampered_generator(finished_run, tmp_path, capsys):
    import shutil

    from flows.cli import main

    result, reports = finished_run
    copy = tmp_path / "run"
    shutil.copytree(reports / result["run_id"], copy)
    with open(copy / "split-0" / "gan" / "generator.keras", "ab") as fh:
        fh.write(b"tampered")
    assert (
        main(
            [
                "generate",
                "--run",
                str(copy),
                "-n",
                "5",
                "--out",
                str(tmp_path / "x.csv"),
            ]
        )
        == 2
    )
    assert "does not match the manifest" in capsys.readouterr().err


def test_task_runner_choice():
    from prefect.task_runners import ThreadPoolTaskRunner
    from prefect_dask import DaskTaskRunner

    from flows.fraud_flow import fraud_augmentation, with_task_runner

    assert with_task_runner("threads") is fraud_augmentation
    assert isinstance(fraud_augmentation.task_runner, ThreadPoolTaskRunner)
    local = with_task_runner("dask").task_runner
    assert isinstance(local, DaskTaskRunner)
    assert local.cluster_kwargs["host"] == "127.0.0.1"  # never listens beyond loopback
    remote = with_task_runner("dask", "tcp://10.0.0.5:8786").task_runner
    assert remote.address == "tcp://10.0.0.5:8786"
    with pytest.raises(ValueError, match="threads' or 'dask"):
        with_task_runner("ray")


def test_same_seed_data_and_config_give_identical_results(
    finished_run, harness, sample_path, tmp_path
):
    """A second run with nothing cached (its own cache folder) reproduces every
    number and every score of the first, on CPU; on the same MLflow server, its
    detector is the same as the champion's, so the champion stays."""
    from flows.fraud_flow import fraud_augmentation
    from tests.helpers import FAST

    first, reports = finished_run
    second = fraud_augmentation(
        data_path=str(sample_path),
        profile="smoke",
        seed=0,
        reports_dir=str(tmp_path / "reports"),
        overrides={**FAST, "data": {"cache_dir": str(tmp_path / "cache")}},
        tracking_uri=first["tracking_uri"],
    )
    a = json.loads((reports / first["run_id"] / "metrics.json").read_text())
    b = json.loads(
        (tmp_path / "reports" / second["run_id"] / "metrics.json").read_text()
    )
    assert b["cached_stages"] == []

    def numbers(m):
        drop = {"fit_seconds", "train_seconds", "gan_dir", "seconds"}

        def clean(obj):
            if isinstance(obj, dict):
                return {k: clean(v) for k, v in obj.items() if k not in drop}
            if isinstance(obj, list):
                return [clean(v) for v in obj]
            return obj

        return clean(
            {k: m[k] for k in ("results", "summary", "comparison", "fidelity")}
        )

    assert numbers(a) == numbers(b)
    pa = pd.read_parquet(reports / first["run_id"] / "predictions.parquet")
    pb = pd.read_parquet(
        tmp_path / "reports" / second["run_id"] / "predictions.parquet"
    )
    pd.testing.assert_frame_equal(pa, pb)
    # The registry on the server: a new version, the newest challenger; no clear
    # win over the identical champion, so the champion alias stays where it was.
    assert b["registry"]["promoted"] is False
    assert b["registry"]["comparison"]["diff"] == 0
    assert b["registry"]["champion"]["version"] == a["registry"]["version"]
    from tests.helpers import mlflow_client

    model = mlflow_client(first["tracking_uri"]).get_registered_model(
        "fraudaug-detector"
    )
    aliases = {alias: str(version) for alias, version in model.aliases.items()}
    assert aliases == {
        "champion": a["registry"]["version"],
        "challenger": b["registry"]["version"],
    }
