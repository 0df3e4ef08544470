"""A trained GAN's folder: its files, :func:`save_gan` and :func:`load_gan`
(``.keras`` with safe mode on, JSON, XGBoost's own format; never pickle)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import keras
import numpy as np

from pipeline.core.artifacts import atomic_path, load_json, save_json
from pipeline.core.errors import ArtifactError
from pipeline.core.layout import (
    CRITIC_FILE,
    ENCODER_FILE,
    FILTER_FILE,
    GENERATOR_FILE,
    HISTORY_FILE,
    TRANSFORMER_FILE,
)
from pipeline.core.layout import GAN_META_FILE as META_FILE
from pipeline.core.memory import LastAnswers
from pipeline.gan import networks  # noqa: F401 (registers GumbelSoftmax for loading)
from pipeline.gan.encoding import ColumnEncoder
from pipeline.gan.trained import Conditions, TrainedGAN

SCHEMA_VERSION = 2
"""The GAN folder's format (``gan.json``'s ``schema_version``)."""


def data_fingerprint(X: np.ndarray, y: np.ndarray) -> str:
    """sha256 of the training rows and labels: ties a fitted GAN to its data."""
    digest = hashlib.sha256()
    digest.update(np.ascontiguousarray(X, dtype=np.float64).tobytes())
    digest.update(np.ascontiguousarray(y, dtype=np.int64).tobytes())
    return digest.hexdigest()


def gan_files(meta: dict[str, Any]) -> list[str]:
    """The files of a GAN folder that its use depends on (besides ``gan.json``)."""
    files = [GENERATOR_FILE, ENCODER_FILE]
    if meta.get("filter") == "critic":
        files.append(CRITIC_FILE)
    elif meta.get("filter") == "classifier":
        files.append(FILTER_FILE)
    return files


def save_gan(
    directory: str | Path,
    trained: TrainedGAN,
    transformer: dict[str, Any] | None = None,
) -> Path:
    """Write a self-contained GAN folder.

    ``generator.keras`` (the network), ``encoder.json`` (its space -> model space),
    the filter when there is one (``critic.keras`` or the classifier's
    ``filter.ubj``), ``history.json`` (loss curves), ``gan.json`` (config, data
    fingerprint, training facts) and, when given, ``transformer.json`` (to turn
    rows back into Kaggle units). ``gan.json`` is written last: its presence marks
    the folder as complete.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if transformer is not None:
        save_json(directory / TRANSFORMER_FILE, transformer)
    with atomic_path(directory / GENERATOR_FILE, suffix=".keras") as tmp:
        trained.generator.save(tmp)
    save_json(directory / ENCODER_FILE, trained.encoder.to_dict())
    kind = trained.meta.get("filter", "none")
    if kind == "critic":
        with atomic_path(directory / CRITIC_FILE, suffix=".keras") as tmp:
            trained.filter_model.save(tmp)
    elif kind == "classifier":
        with atomic_path(directory / FILTER_FILE, suffix=".ubj") as tmp:
            trained.filter_model.save_model(tmp)
    save_json(directory / HISTORY_FILE, trained.history)
    save_json(
        directory / META_FILE,
        {
            "schema_version": SCHEMA_VERSION,
            "latent_dim": trained.latent_dim,
            "n_features": trained.n_features,
            "fingerprint": trained.fingerprint,
            "conditions": None
            if trained.conditions is None
            else trained.conditions.to_dict(),
            **trained.meta,
        },
    )
    return directory


def _load_keras(path: Path) -> keras.Model:
    if not path.is_file():
        raise ArtifactError(f"{path}: missing")
    try:
        return keras.saving.load_model(path, compile=False, safe_mode=True)
    except Exception as exc:  # Keras raises many types for a bad file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ArtifactError(
            f"{path}: cannot load ({type(exc).__name__}: {first[:300]})"
        ) from exc


_LOADED = LastAnswers(keep=4)  # a run holds one GAN per split


def load_gan_once(directory: str | Path) -> TrainedGAN:
    """:func:`load_gan`, once per process for a folder whose ``gan.json`` is
    unchanged: the detector fits of every amount and the fidelity of one split
    share one loaded GAN (sampling draws from the ``random_state`` it is given,
    so sharing does not change the rows)."""
    meta = Path(directory).resolve() / META_FILE
    try:
        stat = meta.stat()
    except OSError:
        return load_gan(directory)  # its one-line error
    key = (str(meta), stat.st_mtime_ns, stat.st_size)
    return _LOADED.answer(key, lambda: load_gan(directory))


def load_gan(directory: str | Path) -> TrainedGAN:
    """Load a GAN folder written by :func:`save_gan` (``safe_mode`` stays on; the
    filter classifier is XGBoost's own format)."""
    directory = Path(directory)
    meta = load_json(directory / META_FILE)
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise ArtifactError(
            f"{directory / META_FILE}: GAN folder schema_version "
            f"{meta.get('schema_version')!r} is not supported "
            f"(expected {SCHEMA_VERSION}); "
            "retrain the GAN with this version"
        )
    generator = _load_keras(directory / GENERATOR_FILE)
    encoder = ColumnEncoder.from_dict(load_json(directory / ENCODER_FILE))
    filter_model = None
    if meta.get("filter") == "critic":
        filter_model = _load_keras(directory / CRITIC_FILE)
    elif meta.get("filter") == "classifier":
        from xgboost import XGBClassifier

        path = directory / FILTER_FILE
        filter_model = XGBClassifier()
        try:
            filter_model.load_model(path)
        except Exception as exc:  # XGBoostError and OSError
            raise ArtifactError(f"{path}: cannot load ({exc})") from exc
    history = load_json(directory / HISTORY_FILE)
    return TrainedGAN(
        generator=generator,
        latent_dim=int(meta["latent_dim"]),
        n_features=int(meta["n_features"]),
        fingerprint=str(meta["fingerprint"]),
        history=history,
        meta={
            k: v
            for k, v in meta.items()
            if k not in {"latent_dim", "n_features", "conditions"}
        },
        encoder=encoder,
        filter_model=filter_model,
        conditions=Conditions.from_dict(meta.get("conditions")),
    )
