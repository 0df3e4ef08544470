"""The pipeline's stages: pure-ish steps over paths and small dicts.

Each function here is one stage of the run; ``flows/`` wraps each in a Prefect task.
Stages read their inputs from files, write their outputs atomically, and return a
small JSON-able dict, so that tasks pass paths and summaries, never frames.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import secrets
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pipeline.artifacts import (
    git_commit,
    load_json,
    load_parquet,
    package_versions,
    save_json,
    save_parquet,
    save_text,
    write_manifest,
)
from pipeline.config import SMOTE_FAMILY, PipelineConfig
from pipeline.errors import ArtifactError
from pipeline.evaluate import compare_methods, compute_metrics, curve_points, summarise
from pipeline.ingest import TARGET, read_transactions
from pipeline.preprocess import (
    TabularTransformer,
    make_splits,
    make_temporal_split,
    subset_rows,
)

logger = logging.getLogger(__name__)

SPLITS_FILE = "splits.parquet"
SCORES_DIR = "scores"
PREDICTIONS_FILE = "predictions.parquet"
METRICS_FILE = "metrics.json"
REPORT_FILE = "report.html"
INDEX_FILE = "index.html"
LATEST_LINK = "latest"


def new_run_id(now: datetime | None = None) -> str:
    """``YYYYmmddTHHMMSSZ-xxxxxx``: sorts by time, unique across concurrent runs."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def split_dir(run_dir: str | Path, split: int) -> Path:
    return Path(run_dir) / f"split-{split}"


RUN_FILE = "run.json"
LOCK_FILE = ".lock"


def run_key(data_sha256: str, config: PipelineConfig) -> str:
    """Identifies "the same run": same input bytes, same config (seed included)."""
    return hashlib.sha256(f"{data_sha256}:{config.fingerprint()}".encode()).hexdigest()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _acquire_lock(run_dir: Path) -> bool:
    """Take ``run_dir/.lock`` unless a live process holds it (a dead holder's lock
    is stale: that run was killed). A run that fails releases its lock, so the
    next run with the same data and config resumes its folder."""
    lock = run_dir / LOCK_FILE
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = int(lock.read_text().strip() or 0)
            except (OSError, ValueError):
                holder = 0
            if holder and _pid_alive(holder):
                return False
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(str(os.getpid()))
        return True
    return False


def release_lock(run_dir: str | Path) -> None:
    (Path(run_dir) / LOCK_FILE).unlink(missing_ok=True)


def stage_start_run(
    reports_dir: str | Path, data_sha256: str, config: PipelineConfig
) -> dict[str, Any]:
    """Open the run's folder: a new one, or the folder of an interrupted run with the
    same data and config (no ``metrics.json``, no live lock), whose checkpoints
    are then resumed."""
    reports_dir = Path(reports_dir)
    reports_dir.mkdir(parents=True, exist_ok=True)
    key = run_key(data_sha256, config)
    for candidate in sorted(reports_dir.iterdir(), reverse=True):
        if candidate.is_symlink() or not (candidate / RUN_FILE).is_file():
            continue
        if (candidate / METRICS_FILE).exists():
            continue
        try:
            same = load_json(candidate / RUN_FILE).get("run_key") == key
        except ArtifactError:
            continue
        if same and _acquire_lock(candidate):
            logger.info("resuming the interrupted run %s", candidate.name)
            return {
                "run_id": candidate.name,
                "run_dir": str(candidate),
                "resumed": True,
            }
    run_id = new_run_id()
    run_dir = reports_dir / run_id
    run_dir.mkdir()
    _acquire_lock(run_dir)
    save_json(
        run_dir / RUN_FILE,
        {
            "run_key": key,
            "run_id": run_id,
            "data_sha256": data_sha256,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    )
    return {"run_id": run_id, "run_dir": str(run_dir), "resumed": False}


# --------------------------------------------------------------------------- ingest
def stage_ingest(data_path: str | Path, cache_dir: str | Path) -> dict[str, Any]:
    """Validate the input and cache it as Parquet (keyed by the file's sha256).

    Nothing is written when validation fails.
    """
    frame, summary = read_transactions(data_path)
    cached = Path(cache_dir) / f"{summary.sha256}.parquet"
    save_parquet(cached, frame)
    return {**summary.to_dict(), "frame_path": str(cached)}


# ----------------------------------------------------------------------- preprocess
def stage_prepare(
    frame_path: str | Path,
    run_dir: str | Path,
    config: PipelineConfig,
    split_seeds: list[int],
) -> dict[str, Any]:
    """Make the repeated splits and fit one transformer per split on its train rows."""
    run_dir = Path(run_dir)
    frame = load_parquet(frame_path)
    if config.split.mode == "temporal":
        splits = make_temporal_split(
            frame["Time"].to_numpy(),
            frame[TARGET].to_numpy(),
            test_size=config.split.test_size,
            validation_size=config.split.validation_size,
        )
    else:
        splits = make_splits(
            frame[TARGET].to_numpy(),
            random_states=split_seeds,
            test_size=config.split.test_size,
            validation_size=config.split.validation_size,
        )
    save_parquet(run_dir / SPLITS_FILE, splits)
    transformers = []
    for split in range(len(split_seeds)):
        train = frame.iloc[subset_rows(splits, split, "train")]
        transformer = TabularTransformer().fit(train)
        path = split_dir(run_dir, split) / "transformer.json"
        save_json(path, transformer.to_dict())
        transformers.append(str(path))
    return {
        "splits_path": str(run_dir / SPLITS_FILE),
        "transformer_paths": transformers,
    }


def load_split_data(
    frame_path: str | Path,
    splits_path: str | Path,
    transformer_path: str | Path,
    split: int,
) -> dict[str, dict[str, np.ndarray]]:
    """``{subset: {"X", "y", "rows"}}`` of one split, features in model space."""
    frame = load_parquet(frame_path)
    splits = load_parquet(splits_path)
    transformer = TabularTransformer.from_dict(load_json(transformer_path))
    data = {}
    for subset in ("train", "validation", "test"):
        rows = subset_rows(splits, split, subset)
        part = frame.iloc[rows]
        data[subset] = {
            "X": transformer.transform(part),
            "y": part[TARGET].to_numpy(dtype=np.int64),
            "rows": rows,
            "amount": part["Amount"].to_numpy(dtype=np.float64),
        }
    return data


# ---------------------------------------------------------------------------- GAN
def _gan_summary(split: int, gan_dir: Path, meta: dict, history: list) -> dict:
    last = history[-1] if history else {}
    keep = (
        "device",
        "train_seconds",
        "steps",
        "train_frauds",
        "nonfinite_steps",
        "recoveries",
        "selected_step",
        "selection",
        "resumed_from_step",
    )
    return {
        "split": split,
        "gan_dir": str(gan_dir),
        **{k: meta.get(k) for k in keep},
        "final": {
            k: v
            for k, v in last.items()
            if k not in {"step", "seconds", "nonfinite_steps"}
        },
    }


def stage_train_gan(
    frame_path: str | Path,
    splits_path: str | Path,
    transformer_path: str | Path,
    split: int,
    config: PipelineConfig,
    seed: int,
    out_dir: str | Path,
) -> dict[str, Any]:
    """Train the split's cWGAN-GP on its training rows only; save it to ``out_dir``.

    The split's validation frauds choose the checkpoint to keep (C2ST); they are
    read, never resampled. Checkpoints go to ``out_dir/checkpoint`` so an
    interrupted run resumes; a GAN already finished in ``out_dir`` for the same
    rows, seed and config is reused as it is.
    """
    from pipeline.gan.trainer import (  # imports TensorFlow
        META_FILE,
        data_fingerprint,
        save_gan,
        train_cwgan_gp,
    )

    out_dir = Path(out_dir)
    data = load_split_data(frame_path, splits_path, transformer_path, split)
    X, y = data["train"]["X"], data["train"]["y"]
    if (out_dir / META_FILE).is_file():
        meta = load_json(out_dir / META_FILE)
        if (
            meta.get("fingerprint") == data_fingerprint(X, y)
            and meta.get("random_state") == seed
            and meta.get("config") == config.gan.model_dump(mode="json")
        ):
            logger.info(
                "split %d: GAN already trained in %s; reusing it", split, out_dir
            )
            return _gan_summary(
                split, out_dir, meta, load_json(out_dir / "history.json")
            )
    validation = data["validation"]["X"][data["validation"]["y"] == 1]
    trained = train_cwgan_gp(
        X,
        y,
        config.gan,
        random_state=seed,
        validation=validation,
        checkpoint_dir=out_dir / "checkpoint",
    )
    save_gan(out_dir, trained, transformer=load_json(transformer_path))
    shutil.rmtree(out_dir / "checkpoint", ignore_errors=True)
    return _gan_summary(split, out_dir, trained.meta, trained.history)


def stage_fidelity(
    frame_path: str | Path,
    splits_path: str | Path,
    transformer_path: str | Path,
    split: int,
    config: PipelineConfig,
    *,
    sampler_seed: int,
    gan_dir: str | Path | None,
) -> dict[str, Any]:
    """Fidelity of the split's synthetic fraud rows (GAN and SMOTE, same number of
    rows) against the real test frauds, with the real-vs-real floor."""
    from pipeline.detect import make_sampler
    from pipeline.fidelity import compute_fidelity

    data = load_split_data(frame_path, splits_path, transformer_path, split)
    X, y = data["train"]["X"], data["train"]["y"]
    train_frauds = X[y == 1]
    test_frauds = data["test"]["X"][data["test"]["y"] == 1]
    smote = make_sampler("smote", config.evaluation, random_state=sampler_seed)
    X_res, _ = smote.fit_resample(X, y)
    synthetic = {"smote": X_res[len(y) :]}
    result: dict[str, Any] = {"split": split}
    if gan_dir is not None:
        from pipeline.gan.trainer import generate_rows, load_gan

        gan = load_gan(gan_dir)
        synthetic["cwgan_gp"] = generate_rows(
            gan.generator,
            len(synthetic["smote"]),
            latent_dim=gan.latent_dim,
            random_state=sampler_seed,
        )
    if split == 0:  # the split the report draws
        from pipeline.fidelity import fidelity_views

        transformer = TabularTransformer.from_dict(load_json(transformer_path))
        result["views"] = fidelity_views(synthetic, test_frauds, transformer)
    # The floor: real training frauds judged the same way (DCR is 0 for them by
    # construction, so only the distribution metrics are meaningful).
    synthetic["real_train"] = train_frauds
    for name, rows in synthetic.items():
        result[name] = compute_fidelity(
            rows, test_frauds, train_frauds, random_state=sampler_seed
        )
    logger.info(
        "split %d fidelity: C2ST %s",
        split,
        ", ".join(
            f"{k} {v['c2st_auc']:.3f}"
            for k, v in result.items()
            if k not in ("split", "views")
        ),
    )
    return result


def summarise_fidelity(per_split: list[dict[str, Any]]) -> dict[str, Any]:
    """``{source: {metric: mean over splits, "per_split": [...]}}``."""
    from pipeline.fidelity import FIDELITY_METRICS

    first = per_split[0] if per_split else {}
    sources = [k for k in first if k not in ("split", "views")]
    out: dict[str, Any] = {"views": first["views"]} if "views" in first else {}
    for source in sources:
        records = [{"split": s["split"], **s[source]} for s in per_split]
        out[source] = {
            **{m: float(np.mean([r[m] for r in records])) for m in FIDELITY_METRICS},
            "per_split": records,
        }
    return out


# ----------------------------------------------------------------------- detectors
def stage_fit_detector(
    frame_path: str | Path,
    splits_path: str | Path,
    transformer_path: str | Path,
    split: int,
    method: str,
    config: PipelineConfig,
    *,
    sampler_seed: int,
    detector_seed: int,
    scores_path: str | Path,
    gan_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Fit one (method, split) detector; score validation and test rows.

    Resampling happens inside the pipeline's ``fit`` on the training rows only; the
    validation rows (early stopping) and test rows (metrics) stay real and untouched.
    """
    from pipeline.detect import (
        fit_detection_pipeline,
        fraud_scores,
        make_detection_pipeline,
        make_detector,
        make_sampler,
        resampled_size,
    )
    from pipeline.evaluate import bootstrap_ci, choose_threshold

    data = load_split_data(frame_path, splits_path, transformer_path, split)
    y_train = data["train"]["y"]
    sampler = make_sampler(
        method,
        config.evaluation,
        random_state=sampler_seed,
        gan=config.gan,
        gan_dir=gan_dir,
    )
    weight = None
    if method == "class_weight":
        # Reweight instead of resampling: negatives per positive in the training rows.
        weight = float((y_train == 0).sum() / max((y_train == 1).sum(), 1))
    detector = make_detector(
        config.detector, random_state=detector_seed, scale_pos_weight=weight
    )
    pipeline = make_detection_pipeline(sampler, detector)
    start = time.perf_counter()
    fit_detection_pipeline(
        pipeline,
        data["train"]["X"],
        data["train"]["y"],
        data["validation"]["X"],
        data["validation"]["y"],
    )
    fit_seconds = time.perf_counter() - start
    parts = []
    scores = {}
    for subset in ("validation", "test"):
        scores[subset] = fraud_scores(pipeline, data[subset]["X"])
        parts.append(
            pd.DataFrame(
                {
                    "split": np.int32(split),
                    "method": method,
                    "subset": subset,
                    "row": data[subset]["rows"].astype(np.int64),
                    "score": scores[subset].astype(np.float64),
                }
            )
        )
    # The alert threshold is chosen on the validation rows, never on test.
    threshold = choose_threshold(data["validation"]["y"], scores["validation"])
    metrics = compute_metrics(
        data["test"]["y"],
        scores["test"],
        threshold=threshold,
        amount=data["test"]["amount"],
        review_cost=config.evaluation.review_cost,
    )
    metrics["auprc_bootstrap_ci95"] = bootstrap_ci(
        data["test"]["y"],
        scores["test"],
        n_resamples=config.evaluation.n_bootstrap,
        random_state=detector_seed,
    )
    save_parquet(scores_path, pd.concat(parts, ignore_index=True))
    xgb = pipeline.named_steps["xgb"]
    n_resampled = resampled_size(pipeline)
    record = {
        "method": method,
        "split": split,
        **metrics,
        "scale_pos_weight": weight,
        "n_train": int(len(data["train"]["y"])),
        "n_train_resampled": n_resampled,
        "best_iteration": int(getattr(xgb, "best_iteration", xgb.n_estimators - 1)),
        "fit_seconds": round(fit_seconds, 3),
    }
    logger.info(
        "split %d %-9s AUPRC %.4f  ROC-AUC %.4f  (%.1fs)",
        split,
        method,
        record["auprc"],
        record["roc_auc"],
        fit_seconds,
    )
    return record


# -------------------------------------------------------------------------- report
def _merge_predictions(run_dir: Path, score_paths: list[str]) -> pd.DataFrame:
    parts = [load_parquet(p) for p in score_paths]
    predictions = pd.concat(parts, ignore_index=True).sort_values(
        ["split", "method", "subset", "row"], kind="stable", ignore_index=True
    )
    save_parquet(run_dir / PREDICTIONS_FILE, predictions)
    shutil.rmtree(run_dir / SCORES_DIR, ignore_errors=True)
    return predictions


def update_latest(reports_dir: Path, run_id: str) -> None:
    """Point ``reports/latest`` at ``run_id``, atomically."""
    link = reports_dir / LATEST_LINK
    tmp = reports_dir / f".{LATEST_LINK}.{secrets.token_hex(4)}"
    try:
        os.symlink(run_id, tmp, target_is_directory=True)
        os.replace(tmp, link)
    except OSError:
        tmp.unlink(missing_ok=True)
        save_text(reports_dir / "LATEST", run_id + "\n")


def load_run_summaries(reports_dir: str | Path) -> list[dict[str, Any]]:
    """The ``metrics.json`` of every finished run in ``reports_dir``, newest first."""
    runs = []
    for path in sorted(Path(reports_dir).glob(f"*/{METRICS_FILE}")):
        if path.parent.is_symlink():
            continue
        try:
            runs.append(load_json(path))
        except ArtifactError as exc:
            logger.warning("skipping %s in the run index: %s", path, exc)
    return sorted(runs, key=lambda r: r.get("run_id", ""), reverse=True)


def write_index(reports_dir: str | Path) -> Path:
    from pipeline.report import render_index

    reports_dir = Path(reports_dir)
    return save_text(
        reports_dir / INDEX_FILE, render_index(load_run_summaries(reports_dir))
    )


def stage_report(
    *,
    run_id: str,
    run_dir: str | Path,
    reports_dir: str | Path,
    data: dict[str, Any],
    config: PipelineConfig,
    seeds: dict[str, list[int]],
    results: list[dict[str, Any]],
    gans: list[dict[str, Any]],
    fidelity: list[dict[str, Any]],
    score_paths: list[str],
    started_at: str,
    started_monotonic: float | None = None,
) -> dict[str, Any]:
    """Write ``predictions.parquet``, ``metrics.json``, ``report.html``,
    ``manifest.json``; then refresh ``reports/index.html`` and ``reports/latest``."""
    from pipeline.report import render_report

    run_dir = Path(run_dir)
    reports_dir = Path(reports_dir)
    predictions = _merge_predictions(run_dir, score_paths)
    labels = load_parquet(data["frame_path"], columns=[TARGET])[TARGET].to_numpy()
    order = {m: i for i, m in enumerate(config.evaluation.methods)}
    results = sorted(results, key=lambda r: (order.get(r["method"], 99), r["split"]))
    duration = (
        time.perf_counter() - started_monotonic
        if started_monotonic is not None
        else None
    )
    metrics = {
        "schema_version": 1,
        "run_id": run_id,
        "started_at": started_at,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_seconds": round(duration, 1) if duration is not None else None,
        "profile": config.profile,
        "seed": config.seed,
        "data": {k: v for k, v in data.items() if k != "frame_path"},
        "methods": list(config.evaluation.methods),
        "n_splits": config.split.n_splits,
        "primary_metric": "auprc",
        "results": results,
        "summary": summarise(results),
        "comparison": compare_methods(results, SMOTE_FAMILY),
        "gan": {
            "splits": sorted(gans, key=lambda g: g["split"]),
            "nonfinite_steps": sum(int(g.get("nonfinite_steps") or 0) for g in gans),
            "device": gans[0]["device"] if gans else None,
        },
        "fidelity": summarise_fidelity(sorted(fidelity, key=lambda f: f["split"])),
        "config": config.model_dump(mode="json"),
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "package_versions": package_versions(),
            "git_commit": git_commit(),
        },
    }
    save_json(run_dir / METRICS_FILE, metrics)
    histories = {
        g["split"]: load_json(Path(g["gan_dir"]) / "history.json") for g in gans
    }
    curves = curve_points(predictions, labels, subset="test")
    save_text(run_dir / REPORT_FILE, render_report(metrics, curves, histories))
    write_manifest(
        run_dir,
        run_id=run_id,
        config=config.model_dump(mode="json"),
        config_sha256=config.fingerprint(),
        seed=config.seed,
        seeds=seeds,
        data={k: v for k, v in data.items() if k != "frame_path"},
    )
    write_index(reports_dir)
    update_latest(reports_dir, run_id)
    release_lock(run_dir)
    return {"run_dir": str(run_dir), "report": str(run_dir / REPORT_FILE)}
