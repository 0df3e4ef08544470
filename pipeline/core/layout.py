"""The name of every file and folder fraudaug writes, defined once.

A light module (no TensorFlow, no pandas): any command may import it. The modules
that write these files import their names from here; ``tests/unit/test_architecture.py``
checks that no other module spells one of them again.

A run folder (``reports/<run_id>/``)::

    run.json  .lock         identity and lock (pipeline.run.folders)
    schema.json             the table's schema (pipeline.data.schema)
    splits.parquet          every row's subset in every split
                            (pipeline.features.splits)
    split-K/transformer.json    split K's fitted transformer
    split-K/gan/            split K's trained GAN (pipeline.gan.storage)
    split-K/detectors/      split 0's chosen detectors: registry candidates
    scores/                 the fits' partial score files (deleted at the end)
    predictions.parquet     validation and test scores of the chosen fits
    metrics.json            every figure (pipeline.evaluation.run_metrics)
    report.html  manifest.json

``reports/`` also holds ``index.html`` and ``latest``.
"""

from __future__ import annotations

from pathlib import Path

# ------------------------------------------------------------------ reports/
INDEX_FILE = "index.html"
INDEX_LOCK = ".index.lock"
LATEST_LINK = "latest"

# ---------------------------------------------------------------- a run folder
RUN_FILE = "run.json"
LOCK_FILE = ".lock"
SCHEMA_FILE = "schema.json"
SPLITS_FILE = "splits.parquet"
DAY_TOTALS_FILE = "day_totals.json"  # rows per day of the whole table (alert budget)
TRANSFORMER_FILE = "transformer.json"
GAN_DIR = "gan"
DETECTORS_DIR = "detectors"
SCORES_DIR = "scores"
# Identical detector fits of a run, done once (pipeline.detector.fitting).
FITS_DIR = "fits"
PREDICTIONS_FILE = "predictions.parquet"
METRICS_FILE = "metrics.json"
REPORT_FILE = "report.html"
MANIFEST_FILE = "manifest.json"

# ---------------------------------------------------------------- a GAN folder
GENERATOR_FILE = "generator.keras"
GAN_META_FILE = "gan.json"  # written last: the folder is complete
HISTORY_FILE = "history.json"
ENCODER_FILE = "encoder.json"
CRITIC_FILE = "critic.keras"
FILTER_FILE = "filter.ubj"
CHECKPOINT_DIR = "checkpoint"  # an interrupted training's state
CHECKPOINT_ARRAYS = "checkpoint.npz"
CHECKPOINT_STATE = "checkpoint.json"
BEST_ARRAYS = "best.npz"

# ------------------------------------------------- a registered detector version
MODEL_FILE = "model.ubj"
MODEL_FILES_DIR = "artifacts"  # a served version's files (MLflow pyfunc artifacts)
EXTRA_DIR = "extra_files"  # those of a version registered before serving
FIT_ROWS_FILE = "fit_rows.json"
DETECTOR_META_FILE = "detector.json"

# ------------------------------------------------------------------ data.cache_dir
CACHE_STAGES_DIR = "stages"
CACHE_DONE_FILE = "done.json"
INGESTED_TABLE = "table.parquet"  # the ingest stage's entry: the validated table
INGESTED_SUMMARY = "summary.json"  # and what was read


def split_dir(run_dir: str | Path, split: int) -> Path:
    """``<run_dir>/split-K``: what belongs to split K."""
    return Path(run_dir) / f"split-{split}"


def transformer_path(run_dir: str | Path, split: int) -> Path:
    return split_dir(run_dir, split) / TRANSFORMER_FILE


def gan_dir(run_dir: str | Path, split: int) -> Path:
    return split_dir(run_dir, split) / GAN_DIR


def detector_path(run_dir: str | Path, split: int, method: str) -> Path:
    return split_dir(run_dir, split) / DETECTORS_DIR / f"{method}.ubj"


def scores_path(run_dir: str | Path, method: str, split: int) -> Path:
    """The stem of a fit's score files (one per amount: ``-<i>.parquet``)."""
    return Path(run_dir) / SCORES_DIR / f"{method}-split-{split}.parquet"
