"""The model registry: the champion detector, its history, and scoring with it.

Layout of ``models/``::

    champion.json            which version is champion (written atomically)
    history.json             every decision, newest last
    versions/<version>/      one promoted detector, never changed once written:
        detector.ubj         XGBoost (UBJSON)
        transformer.json     the split's TabularTransformer
        fit_rows.json        rows of the input the detector was fitted or tuned on
        model.json           method, threshold, metrics it won with, data sha256,
                             file hashes
    .lock                    held while a decision is made and written

A run's best method (mean test AUPRC over splits) is the challenger: its split-0
detector. It replaces the champion only if it beats it on the same held-out rows
(rows neither of them was fitted, early-stopped or thresholded on) by
``registry.margin`` AUPRC, with the paired bootstrap interval's lower bound above 0.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import average_precision_score

from pipeline.artifacts import atomic_dir, file_lock, file_sha256, load_json, save_json
from pipeline.errors import ArtifactError, PipelineError
from pipeline.evaluate import bootstrap_auprc
from pipeline.preprocess import TabularTransformer

CHAMPION = "champion.json"
HISTORY = "history.json"
VERSIONS = "versions"
_FILES = ("detector.ubj", "transformer.json", "fit_rows.json")


@contextmanager
def registry_lock(models_dir: str | Path) -> Iterator[Path]:
    """An exclusive lock on ``models_dir`` (blocks until free); two runs can never
    interleave their decisions or writes."""
    models_dir = Path(models_dir)
    try:
        with file_lock(models_dir / ".lock"):
            yield models_dir
    except OSError as exc:
        raise PipelineError(
            f"{models_dir}: cannot write the model registry ({exc.strerror})"
        ) from exc


def load_champion(models_dir: str | Path) -> dict[str, Any] | None:
    """The champion's ``model.json`` (plus its folder as ``path``), files verified;
    ``None`` when there is no champion yet.

    Raises
    ------
    ArtifactError
        A champion file is missing or its sha256 differs from ``model.json``.
    """
    models_dir = Path(models_dir)
    pointer = models_dir / CHAMPION
    if not pointer.is_file():
        return None
    version_dir = models_dir / VERSIONS / load_json(pointer)["version"]
    meta = load_json(version_dir / "model.json")
    for name, expected in meta["sha256"].items():
        path = version_dir / name
        if not path.is_file():
            raise ArtifactError(f"{path}: champion file is missing")
        if file_sha256(path) != expected:
            raise ArtifactError(
                f"{path}: sha256 differs from the registry's record; "
                "refusing to load it"
            )
    return {**meta, "path": str(version_dir)}


def load_detector(version_dir: str | Path):
    """The XGBoost classifier and transformer of a registry version."""
    from xgboost import XGBClassifier

    version_dir = Path(version_dir)
    model = XGBClassifier()
    model.load_model(version_dir / "detector.ubj")
    transformer = TabularTransformer.from_dict(
        load_json(version_dir / "transformer.json")
    )
    return model, transformer


def paired_bootstrap(
    y: np.ndarray,
    challenger: np.ndarray,
    champion: np.ndarray,
    *,
    n_resamples: int,
    random_state: int,
) -> dict[str, Any]:
    """AUPRC of both on the same rows, and a stratified paired bootstrap 95 %
    interval of the difference (challenger - champion)."""
    values = bootstrap_auprc(
        y, [challenger, champion], n_resamples=n_resamples, random_state=random_state
    )
    diffs = values[:, 0] - values[:, 1]
    a, b = average_precision_score(y, challenger), average_precision_score(y, champion)
    ci = (
        [float(np.percentile(diffs, 2.5)), float(np.percentile(diffs, 97.5))]
        if len(diffs)
        else None
    )
    return {
        "challenger_auprc": float(a),
        "champion_auprc": float(b),
        "diff": float(a - b),
        "ci95": ci,
        "n_rows": int(len(y)),
        "n_frauds": int((y == 1).sum()),
        "n_resamples": int(n_resamples),
    }


def _write_version(
    models_dir: Path,
    version: str,
    *,
    detector_path: Path,
    transformer_path: Path,
    fit_rows: np.ndarray,
    meta: dict[str, Any],
) -> Path:
    """Write a version folder completely in a temporary folder, then rename it;
    a rerun of the same run keeps the first, complete copy."""
    final = models_dir / VERSIONS / version
    with atomic_dir(final, replace=False) as tmp:
        shutil.copyfile(detector_path, tmp / "detector.ubj")
        shutil.copyfile(transformer_path, tmp / "transformer.json")
        save_json(tmp / "fit_rows.json", {"rows": [int(r) for r in np.sort(fit_rows)]})
        meta = {
            **meta,
            "version": version,
            "sha256": {n: file_sha256(tmp / n) for n in _FILES},
        }
        save_json(tmp / "model.json", meta)
    return final


def decide_and_record(
    models_dir: str | Path,
    *,
    run_id: str,
    method: str,
    detector_path: str | Path,
    transformer_path: str | Path,
    threshold: float,
    metrics: dict[str, Any],
    data_sha256: str,
    frame: pd.DataFrame,
    fit_rows: np.ndarray,
    test_rows: np.ndarray,
    test_scores: np.ndarray,
    margin: float,
    n_resamples: int,
    random_state: int,
) -> dict[str, Any]:
    """Compare the challenger with the champion on shared held-out rows; promote it
    or keep the champion; append the decision to the history. Holds the registry
    lock throughout.

    ``frame`` is the run's input (Kaggle columns); ``test_rows`` the challenger's
    held-out rows and ``test_scores`` its scores on them.
    """
    from pipeline.evaluate import compute_metrics

    models_dir = Path(models_dir)
    with registry_lock(models_dir):
        champion = load_champion(models_dir)
        decision: dict[str, Any] = {
            "run_id": run_id,
            "decided_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "challenger": {"method": method, "run_id": run_id, "metrics": metrics},
            "margin": margin,
        }
        if champion is None:
            decision.update(
                promoted=True, reason="no champion yet: the challenger becomes champion"
            )
        else:
            decision["champion"] = {
                k: champion[k] for k in ("version", "method", "run_id", "data_sha256")
            }
            rows = np.asarray(test_rows)
            scores = np.asarray(test_scores)
            if champion["data_sha256"] == data_sha256:
                # Only rows the champion never fitted, early-stopped or thresholded on.
                seen = load_json(Path(champion["path"]) / "fit_rows.json")["rows"]
                keep = ~np.isin(rows, seen)
                rows, scores = rows[keep], scores[keep]
                decision["held_out"] = (
                    "test rows of the challenger's split the champion never saw"
                )
            else:
                decision["held_out"] = (
                    "the challenger's test rows (new data: the champion was trained on "
                    "another file)"
                )
            y = frame["Class"].to_numpy()[rows]
            if len(rows) == 0 or y.sum() < 5 or y.sum() == len(y):
                decision.update(
                    promoted=False,
                    reason=f"only {len(rows)} shared held-out rows with {int(y.sum())} "
                    "frauds: too few to compare; the champion stays",
                )
            else:
                model, transformer = load_detector(champion["path"])
                champion_scores = model.predict_proba(
                    transformer.transform(frame.iloc[rows])
                )[:, 1]
                comparison = paired_bootstrap(
                    y,
                    scores,
                    champion_scores,
                    n_resamples=n_resamples,
                    random_state=random_state,
                )
                comparison["champion_at_its_threshold"] = compute_metrics(
                    y, champion_scores, threshold=champion["threshold"]
                )
                decision["comparison"] = comparison
                ci = comparison["ci95"]
                wins = comparison["diff"] >= margin and ci is not None and ci[0] > 0
                decision["promoted"] = bool(wins)
                verdict = (
                    f"challenger {method} {comparison['challenger_auprc']:.4f} "
                    "vs champion "
                    f"{champion['method']} {comparison['champion_auprc']:.4f} AUPRC on "
                    f"{comparison['n_rows']:,} shared held-out rows "
                    f"({comparison['n_frauds']} frauds): {comparison['diff']:+.4f}"
                )
                if ci is not None:
                    verdict += f", 95 % CI [{ci[0]:+.4f}, {ci[1]:+.4f}]"
                decision["reason"] = verdict + (
                    f"; beats the champion by >= {margin} with the interval above 0: "
                    "promoted"
                    if wins
                    else f"; not a clear win (margin {margin}, the interval must "
                    "exclude 0): the champion stays"
                )
        if decision["promoted"]:
            version = f"{run_id}-{method}"
            _write_version(
                models_dir,
                version,
                detector_path=Path(detector_path),
                transformer_path=Path(transformer_path),
                fit_rows=fit_rows,
                meta={
                    "method": method,
                    "run_id": run_id,
                    "threshold": float(threshold),
                    "metrics": metrics,
                    "data_sha256": data_sha256,
                    "promoted_at": decision["decided_at"],
                },
            )
            save_json(models_dir / CHAMPION, {"version": version})
            decision["version"] = version
        history_path = models_dir / HISTORY
        history = load_json(history_path) if history_path.is_file() else []
        history.append(decision)
        save_json(history_path, history)
    return decision


class ChampionScorer:
    """The champion detector, loaded and checked once, scoring batch after batch.

    Raises
    ------
    PipelineError
        There is no champion yet.
    ArtifactError
        A champion file is missing or changed since it was recorded.
    """

    def __init__(self, models_dir: str | Path):
        champion = load_champion(models_dir)
        if champion is None:
            raise PipelineError(
                f"{models_dir}: no champion model yet; run the pipeline first "
                "(fraudaug run)"
            )
        self.champion = champion
        self.threshold = float(champion["threshold"])
        self.model, self.transformer = load_detector(champion["path"])

    def score(self, frame: pd.DataFrame, first_row: int = 0) -> pd.DataFrame:
        """``row`` (``first_row`` + position), ``fraud_probability`` and
        ``flagged`` (at the champion's threshold) for each row of ``frame``."""
        probability = self.model.predict_proba(self.transformer.transform(frame))[:, 1]
        return pd.DataFrame(
            {
                "row": np.arange(first_row, first_row + len(frame), dtype=np.int64),
                "fraud_probability": probability.astype(np.float64),
                "flagged": probability >= self.threshold,
            }
        )


def score_transactions(
    models_dir: str | Path, frame: pd.DataFrame
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Fraud probability and flag (at the champion's threshold) for each row."""
    scorer = ChampionScorer(models_dir)
    return scorer.score(frame), scorer.champion
