"""The GPU check script runs end to end (on this CPU with --allow-cpu --quick) and
prints the JSON the README's GPU section is made from."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT  # noqa: E402

SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"


def _run(*args, timeout=900):
    env = {**os.environ, "FRAUDAUG_PYTHON": sys.executable}
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU is here")
def test_gpu_check_refuses_a_machine_without_a_gpu(sample_path):
    proc = _run("--data", str(sample_path))
    assert proc.returncode == 2
    assert "no NVIDIA GPU" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_gpu_check_runs_and_compares_with_the_cpu_baseline(sample_path, tmp_path):
    """One variant end to end (each variant is the same subprocess with other
    flags; training under every precision and XLA setting is test_gan_training's)."""
    out = tmp_path / "gpu.json"
    # Generous time limits: this checks what is measured, not how fast (a loaded
    # machine once ran a variant past the default 240 s).
    proc = _run(
        *("--data", str(sample_path), "--allow-cpu", "--quick", "--out", str(out)),
        *("--variant-timeout", "900", "--variant", "float32:0"),
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = json.loads(proc.stdout)
    assert printed == json.loads(out.read_text())
    (v,) = printed["variants"]
    assert (v["precision"], v["jit_compile"]) == ("float32", False)
    assert "error" not in v, v
    assert v["trainer_rows_per_s"] > 0 and v["bare_rows_per_s"] > 0
    assert v["generate_rows_per_s"] > 0
    assert v["batch_size"] == 512
    assert printed["device"]["kind"] in ("CPU", "GPU")
    assert printed["quick"] is True
    assert printed["data"]["rows"] == 20_000
    # Compared with the newest committed CPU benchmark.
    baseline = printed["cpu_baseline"]
    assert baseline and baseline["trainer_rows_per_s"] > 0
    assert printed["trainer_speedup_vs_cpu"] == pytest.approx(
        printed["trainer_rows_per_s"] / baseline["trainer_rows_per_s"], abs=0.01
    )


def test_gpu_check_measures_every_variant_by_default(
    sample_path, tmp_path, monkeypatch
):
    """Without --variant: all four, each its own `benchmarks --gan-only` process
    with its precision and XLA flag (the processes replaced by a recorder)."""
    from benchmarks import gpu_check

    commands = []

    def fake_run(command, **kwargs):
        commands.append(command)
        out = Path(command[command.index("--out") + 1])
        rate = {"trainer_rows_per_s": 1000, "bare_rows_per_s": 2000, "batch_size": 512}
        out.write_text(json.dumps({
            "trainer_vs_bare_ratio": 0.5, "trainer": rate, "generate_rows_per_s": 10,
            "device": {"kind": "CPU"}, "data": {"rows": 20_000},
        }))  # fmt: skip
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(gpu_check.subprocess, "run", fake_run)
    printed = gpu_check.main(
        ["--data", str(sample_path), "--allow-cpu", "--out", str(tmp_path / "g.json")]
    )
    measured = {(v["precision"], v["jit_compile"]) for v in printed["variants"]}
    assert measured == set(gpu_check.VARIANTS) == {
        ("float32", False), ("float32", True),
        ("mixed_bfloat16", False), ("mixed_bfloat16", True),
    }  # fmt: skip
    for command in commands:
        assert command[1:4] == ["-m", "benchmarks", "--gan-only"]
    flags = {(c[c.index("--precision") + 1], "--jit-compile" in c) for c in commands}
    assert flags == measured


@pytest.mark.slow
def test_gan_fidelity_benchmark_pairs_candidates_with_the_default(
    sample_path, tmp_path, monkeypatch
):
    from benchmarks import gan_fidelity

    monkeypatch.setattr(gan_fidelity, "RESULTS", tmp_path / "results")
    args = [
        "--data",
        str(sample_path),
        "--splits",
        "2",
        "--seed",
        "0",
        "--seed",
        "1",
        "--jobs",
        "2",
        "--set",
        "gan.steps=8",
        "--set",
        "gan.eval_every=4",
        "--candidate",
        "quantile:gan.encoding=quantile,gan.critic_widths=[32,32]",
        "--candidate",
        "filtered:gan.filter=classifier,gan.filter_share=0.5",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--tag",
        "t",
    ]
    out = gan_fidelity.main(args)
    assert set(out["summary"]) == {"default", "quantile", "filtered"}
    assert out["candidates"]["quantile"]["config"]["critic_widths"] == [32, 32]
    runs = out["runs"]["quantile"]
    assert sorted((r["split"], r["seed"]) for r in runs) == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]
    paired = out["summary"]["quantile"]["vs_default"]["test_c2st"]
    diffs = [
        r["test_c2st"] - d["test_c2st"]
        for r, d in zip(runs, out["runs"]["default"], strict=True)
    ]
    assert paired["mean"] == pytest.approx(sum(diffs) / 4) and paired["n"] == 4
    assert set(out["references"]) == {"(real_train)", "(smote)"}
    # The filter acts when rows are drawn: the filtered candidate is the default's
    # trained GAN (same training, same selection), judged on other rows.
    pairs = zip(out["runs"]["default"], out["runs"]["filtered"], strict=True)
    for plain, filtered in pairs:
        assert filtered["train_seconds"] == plain["train_seconds"]
        assert filtered["selection_c2st"] == plain["selection_c2st"]
        assert filtered["test_c2st"] != plain["test_c2st"]
        assert filtered["validation_c2st"] != plain["validation_c2st"]
    saved = json.loads(
        (tmp_path / "results").glob("gan-fidelity-*-t.json").__next__().read_text()
    )
    assert saved["table"] == out["table"]
    # A second run measures nothing again: every job comes from the cache.
    again = gan_fidelity.main(args)
    assert again["runs"] == out["runs"]


def test_the_cost_curve_is_drawn_from_a_scale_result(tmp_path):
    """benchmarks.scale --chart-of draws a result's cost curve as one standalone
    SVG (well-formed, its style inside): a line per profile through every run
    that finished, the table sizes as ticks."""
    import xml.etree.ElementTree as ET

    from benchmarks import scale

    def run(profile, rows, seconds, peak, code=0):
        return {
            "profile": profile, "rows": rows, "exit_code": code,
            "seconds_per_million_rows": seconds, "peak_rss_mb": peak,
        }  # fmt: skip

    result = {
        "runs": [
            run("smoke", 1_400_000, 120.0, 3500),
            run("smoke", 5_600_000, 80.0, 5100),
            run("default", 1_400_000, 300.0, 3900),
            run("default", 22_400_000, 150.0, 7000),
            run("default", 5_600_000, 9.0, 9000, code=1),  # failed: not drawn
        ],
        "cpu_count": 2,
        "measured_at": "2026-12-05T04:00:00+00:00",
    }
    path = tmp_path / "scale-x.json"
    path.write_text(json.dumps(result))
    scale.main(["--chart-of", str(path)])
    svg = ET.parse(path.with_suffix(".svg")).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    assert svg.find(f"{ns}style") is not None
    charts = svg.findall(f"{ns}svg")
    assert len(charts) == 2
    for chart in charts:
        lines = {p.get("data-series"): p for p in chart.iter(f"{ns}polyline")}
        assert set(lines) == {"smoke", "default"}
        assert len(json.loads(lines["default"].get("data-xy"))) == 2
        ticks = {t.text for t in chart.iter(f"{ns}text") if t.get("class") == "tick"}
        assert {"1.4", "5.6", "22.4"} <= ticks
    minutes = json.loads(
        next(p for p in charts[0].iter(f"{ns}polyline")
             if p.get("data-series") == "default").get("data-xy")
    )  # fmt: skip
    assert minutes == [[1.4, 5.0], [22.4, 2.5]]


def test_calibration_counts_each_procedures_claims():
    """The rates come from the trials' per-split AUPRCs: an A/A pair with a
    persistent offset is claimed by the plain t-test more often than by the
    corrected one; a large known loss is found by both."""
    import numpy as np

    from benchmarks.calibration import summarise_trials

    rng = np.random.default_rng(0)
    trials = []
    for _ in range(200):
        offset = rng.normal(0, 0.01)  # the trial's own (persistent) difference
        base = 0.85 + rng.normal(0, 0.02, 10)
        trials.append(
            {
                "random": {
                    "run_a": list(base + offset + rng.normal(0, 0.004, 10)),
                    "run_b": list(base + rng.normal(0, 0.004, 10)),
                    "split_a": list(base + rng.normal(0, 0.006, 10)),
                    "split_b": list(base + rng.normal(0, 0.006, 10)),
                    "flipped": list(base + offset - 0.05 + rng.normal(0, 0.004, 10)),
                }
            }
        )
    rows = summarise_trials(trials, n_splits=[3, 10], rho=0.25, ropes=[0.01])
    by = {(r["design"], r["n_splits"]): r for r in rows}
    assert {r["protocol"] for r in rows} == {"random"}  # no rotation trials
    persistent = by[("aa_seeded_per_run", 10)]
    assert persistent["trials"] == 200
    assert (
        persistent["claims_plain_t"]["rate"] > persistent["claims_corrected_t"]["rate"]
    )
    assert persistent["half_width_corrected"] > persistent["half_width_plain"]
    low, high = persistent["claims_plain_t"]["ci95"]
    assert low <= persistent["claims_plain_t"]["rate"] <= high
    assert by[("aa_seeded_per_run", 3)]["claims_wilcoxon"] is None  # below 6 splits
    known = by[("known_difference", 10)]
    assert known["mean_difference"] == pytest.approx(-0.05, abs=0.005)
    assert known["claims_corrected_t"]["rate"] > 0.9
    assert known["bayes"][0]["claims"]["rate"] > 0.9


@pytest.mark.slow
def test_calibration_runs_on_the_real_sample(sample_path, tmp_path):
    from benchmarks.calibration import main

    out = tmp_path / "calibration.json"
    result = main(
        [
            *("--data", str(sample_path), "--trials", "2", "--rotation-trials", "1"),
            *("--splits", "3", "--datasets", "2", "--jobs", "1", "--out", str(out)),
        ]
    )
    assert json.loads(out.read_text()) == result
    rows = {(r["design"], r["protocol"]) for r in result["rows"]}
    assert ("aa_seeded_per_run", "rotation") in rows
    assert ("aa_seeded_per_split", "rotation") not in rows
    assert all(r["n_splits"] == 3 for r in result["rows"])
    assert {r["pair"] for r in result["coverage"]} == {
        "class_weight_vs_none",
        "smote_vs_none",
    }
    assert all(r["datasets"] == 2 for r in result["coverage"])


def test_verdicts_restate_a_run_under_todays_statistics(tmp_path):
    from benchmarks.verdicts import main
    from tests.helpers import demo_metrics

    metrics = demo_metrics()
    metrics["comparison"] = {"headline": "the old headline", "comparisons": []}
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps(metrics))
    out = tmp_path / "verdicts.json"
    result = main([f"demo={path}", "--rope", "0.015", "--out", str(out)])
    (run,) = result["runs"]
    assert run["label"] == "demo" and run["rope"] == 0.015
    assert run["headline_then"] == "the old headline"
    assert run["headline_now"].startswith("cwgan_gp and no resampling (none)")
    assert "better: smote" in run["headline_now"]
    smote = next(c for c in run["comparisons"] if c["method"] == "smote")
    assert smote["decision"] == "better" and smote["ci95_corrected"] is not None
    assert json.loads(out.read_text()) == result


def test_tuning_sets_a_tables_untuned_and_tuned_runs_side_by_side(tmp_path, capsys):
    """A tuned run whose SMOTE loses its lead over ``none``: the pair says which
    decisions changed, each method's paired tuned-minus-untuned difference, what
    the searches chose, and the cost."""
    import copy

    import pytest

    from benchmarks.tuning import main
    from tests.helpers import demo_metrics

    untuned = demo_metrics()
    untuned["config"]["detector"] = {"tune": False}
    untuned["resources"] = {"stages": [{"stage": "fit-detector", "seconds": 10.0}]}
    tuned = copy.deepcopy(untuned)
    tuned["config"]["detector"] = {"tune": True}
    tuned["resources"] = {"stages": [{"stage": "fit-detector", "seconds": 150.0}]}
    for r in tuned["results"]:
        if r["method"] == "none":
            r["auprc"] += 0.02 + 0.001 * r["split"]
        r["tuned"] = {
            "params": {"max_depth": 3 + r["split"], "learning_rate": 0.1},
            "trials": 4,
            "untuned_validation_auprc": r["validation_auprc"]
            - (0.0 if r["split"] == 0 else 0.01),
        }
    paths = []
    for name, metrics in (("untuned", untuned), ("tuned", tuned)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(metrics))
    out = tmp_path / "tuning.json"
    result = main([f"demo={paths[0]},{paths[1]}", "--rope", "0.01", "--out", str(out)])
    (pair,) = result["pairs"]
    assert json.loads(out.read_text()) == result
    decisions = {d["what"]: d for d in pair["decisions"]}
    smote = decisions["smote vs none"]
    assert smote["changed"] and smote["untuned"] != smote["tuned"]
    assert smote["tuned_claim"] is not None
    assert "smote vs none" in pair["changed"]
    assert not decisions["challenger"]["changed"]
    assert "question" in decisions
    by = {m["method"]: m for m in pair["methods"]}
    assert by["none"]["tuned_minus_untuned"] == pytest.approx(0.021)
    assert by["smote"]["tuned_minus_untuned"] == pytest.approx(0.0)
    assert by["smote"]["vs_none_untuned"] == pytest.approx(0.02)
    assert by["smote"]["vs_none_tuned"] == pytest.approx(-0.001)
    searches = by["smote"]["searches"]
    assert searches["fits"] == 3 and searches["trials"] == 4
    assert searches["kept_untuned"] == pytest.approx(1 / 3, abs=1e-3)
    assert searches["median_params"]["max_depth"] == 4
    assert pair["cost"]["fit_ratio"] == 15.0
    out.unlink()
    with pytest.raises(SystemExit) as exited:
        main([f"demo={paths[1]},{paths[0]}", "--out", str(out)])
    assert exited.value.code == 2 and not out.exists()
    assert "untuned and the second tuned" in capsys.readouterr().err


def test_coverage_of_a_difference_that_varies_from_dataset_to_dataset():
    """Datasets whose own difference strays from the population's (correlated
    splits, here 0.25 of the variance): the plain interval misses the
    population difference far more often than 5 %, the corrected one about as
    often as it should, and the implied correlation is read back."""
    import numpy as np

    from benchmarks.calibration import summarise_coverage

    rng = np.random.default_rng(1)
    datasets = []
    for _ in range(400):
        own = rng.normal(0, 0.5)  # the dataset's own difference: variance 0.25
        datasets.append(
            {
                "none": [0.0] * 10,
                "class_weight": list(-1.0 + own + rng.normal(0, np.sqrt(0.75), 10)),
                "smote": list(0.2 + rng.normal(0, 1.0, 10)),  # independent splits
            }
        )
    rows = summarise_coverage(datasets, n_splits=[3, 10], rho=0.25)
    by = {(r["pair"], r["n_splits"]): r for r in rows}
    shared = by[("class_weight_vs_none", 10)]
    assert shared["population_difference"] == pytest.approx(-1.0, abs=0.1)
    assert shared["implied_correlation"] == pytest.approx(0.25, abs=0.1)
    assert shared["missed_plain"]["rate"] > 0.15
    assert shared["missed_corrected"]["rate"] < 0.1
    alone = by[("smote_vs_none", 10)]
    assert alone["implied_correlation"] == pytest.approx(0.0, abs=0.1)
    assert alone["missed_plain"]["rate"] < 0.1


@pytest.mark.slow
def test_serving_benchmark_measures_a_registered_version(
    candidates, mlflow_store, demo_csv, tmp_path
):
    """benchmarks.serving end to end on a small champion, as few rounds as it
    takes: each figure measured, its targets compared, one JSON printed and
    written."""
    from tests.helpers import offer_challenger

    offer_challenger(mlflow_store, candidates, "good", "run-1")
    out = tmp_path / "serving.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.serving", "--tracking-uri", mlflow_store,
         "--data", str(demo_csv), "--name", "demo", "--requests", "30",
         "--batches", "2", "--rounds", "1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert json.loads(proc.stdout[proc.stdout.index("{") :]) == result
    assert result["model"]["method"] == "good"
    assert result["model"]["code"] == "version"  # not this checkout's pipeline
    for where in ("in_process", "over_http"):
        for key in ("scores", "reasons_3"):
            figures = result[where][key]
            assert figures["one_row"]["n"] == 30
            assert 0 < figures["one_row"]["p50_ms"] <= figures["one_row"]["p99_ms"]
            assert figures["batch_1000_rows_per_s"] > 0
    stages = result["in_process"]["batch_1000_stages"]
    assert set(stages) == {
        "check_ms", "transform_ms", "xgboost_ms", "answer_ms", "pyfunc_predict_ms"
    }  # fmt: skip
    assert all(ms > 0 for ms in stages.values())
    # A 3,000-row table fills no batch of 10,000: not measured, not relabelled.
    assert result["in_process"]["scores"]["batch_10000_rows_per_s"] is None
    assert result["targets"]["batch_10000_vs_score"] is None
    score = result["fraudaug_score"]
    assert score["scores"]["rows"] == 3000 and score["scores"]["rounds"] == 1
    assert score["scores"]["streaming_rows_per_s"] > 0
    assert score["scores"]["ms_per_1000_rows"] == round(
        1e6 / score["scores"]["streaming_rows_per_s"], 3
    )
    assert score["reasons_3"]["rows"] == 3000
    targets = result["targets"]
    assert targets["batch_vs_score"] == round(
        result["in_process"]["scores"]["batch_1000_rows_per_s"]
        / score["scores"]["streaming_rows_per_s"],
        2,
    )
    assert targets["in_process_p99_met"] == (
        result["in_process"]["scores"]["one_row"]["p99_ms"] <= 20.0
    )


def test_the_correlation_benchmark_estimates_rho_from_independent_runs(tmp_path):
    """Runs' per-split differences become each pair's ICC with its bounds, beside
    the heuristic's rho of the same runs; the Kaggle file is cut into disjoint
    stratified subsamples."""
    import numpy as np

    from benchmarks.correlation import _estimate, _kaggle
    from pipeline.evaluation.statistics import split_correlation

    rng = np.random.default_rng(0)
    runs = []
    for k in range(6):
        own = rng.normal(0, 0.01)  # the data set's own difference
        results = []
        for split in range(4):
            for m, shift in (
                ("none", 0.0),
                ("class_weight", -0.01 + own),
                ("random_over", 0.0),
                ("smote", 0.002),
            ):
                results.append(
                    {
                        "method": m,
                        "split": split,
                        "n_train": 600,
                        "n_test": 200,
                        "n_test_frauds": 20,
                        "auprc": 0.8 + shift + rng.normal(0, 0.01),
                    }
                )
        runs.append(
            {
                "data": {
                    "path": f"t{k}.parquet",
                    "rows": 1000,
                    "frauds": 100,
                    "demo": True,
                },
                "results": results,
            }
        )
    cell = _estimate(runs)
    assert cell["heuristic_rho"] == pytest.approx(0.25)
    weights = cell["pairs"]["class_weight_vs_none"]
    diffs = [d["diffs"]["class_weight"] for d in cell["per_dataset"]]
    assert weights["rho"] == pytest.approx(split_correlation(diffs)["rho"], abs=1e-4)
    assert cell["upper95"] == max(p["upper95"] for p in cell["pairs"].values())
    assert weights["n_datasets"] == 6 and weights["n_splits"] == 4

    source = tmp_path / "creditcard.csv"
    y = np.r_[np.ones(8, int), np.zeros(40, int)]
    rows = "\n".join(f'{i},{i * 0.5},"{v}"' for i, v in enumerate(y))
    source.write_text('"Time","V1","Class"\n' + rows + "\n")
    parts = _kaggle(tmp_path / "work", 4, source, seed=0)
    import pandas as pd

    frames = [pd.read_csv(p) for p, schema in parts]
    assert all(schema == "kaggle" for _, schema in parts)
    assert sorted(pd.concat(frames)["Time"]) == list(range(48))  # disjoint, whole
    assert [int(f["Class"].sum()) for f in frames] == [2, 2, 2, 2]  # stratified
    assert all(f["Time"].is_monotonic_increasing for f in frames)  # file order


def test_calibration_in_the_run_design_counts_false_claims_by_the_truths_zone():
    """From a correlation result's independent runs: a pair whose true difference
    is inside the ROPE has its better/worse claims counted false, one beyond it
    its equivalent claims; each design's numbers of splits, each rho setting."""
    import numpy as np

    from benchmarks.calibration import summarise_run_design

    rng = np.random.default_rng(0)
    per_dataset = [
        {
            "diffs": {
                "flat": list(rng.normal(0.0, 0.01, 10)),
                "loss": list(rng.normal(-0.06, 0.01, 10)),
            }
        }
        for _ in range(12)
    ]
    cell = {
        "kind": "transactions",
        "design": "random",
        "heuristic_rho": 0.25,
        "pairs": {"flat_vs_none": {}, "loss_vs_none": {}},
        "per_dataset": per_dataset,
    }
    rows = summarise_run_design({"cells": [cell]}, rope=0.02)
    by = {(r["pair"], r["n_splits"], r["rho_setting"]): r for r in rows}
    flat = by[("flat_vs_none", 10, "nadeau_bengio")]
    assert flat["zone"] == "inside" and flat["datasets"] == 12
    claims = flat["better"] + flat["worse"]
    assert flat["false_claims"]["rate"] == pytest.approx(claims / 12)
    loss = by[("loss_vs_none", 10, "nadeau_bengio")]
    assert loss["zone"] == "beyond" and loss["worse"] > 0
    assert loss["false_claims"]["rate"] == pytest.approx(
        (loss["equivalent"] + loss["better"]) / 12
    )
    assert {r["n_splits"] for r in rows} == {3, 10}
