"""Train the conditional WGAN-GP on class-balanced batches, generate rows, save/load."""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from pipeline.artifacts import atomic_path, load_json, save_json
from pipeline.config import GANConfig
from pipeline.errors import ArtifactError, DataValidationError, TrainingError
from pipeline.gan.model import ConditionalWGANGP
from pipeline.gan.networks import build_critic, build_generator

logger = logging.getLogger(__name__)

N_CLASSES = 2
GENERATOR_FILE = "generator.keras"
META_FILE = "gan.json"
HISTORY_FILE = "history.json"


def data_fingerprint(X: np.ndarray, y: np.ndarray) -> str:
    """sha256 of the training rows and labels: ties a fitted GAN to its data."""
    digest = hashlib.sha256()
    digest.update(np.ascontiguousarray(X, dtype=np.float64).tobytes())
    digest.update(np.ascontiguousarray(y, dtype=np.int64).tobytes())
    return digest.hexdigest()


def training_device() -> str:
    gpus = tf.config.list_physical_devices("GPU")
    return f"GPU ({len(gpus)} visible)" if gpus else "CPU"


def make_training_dataset(
    X: np.ndarray,
    y: np.ndarray,
    *,
    batch_size: int,
    n_critic: int,
    fraud_fraction: float,
    seed: int,
    start_step: int = 0,
) -> tf.data.Dataset:
    """An endless dataset of class-balanced batches ("training-by-sampling").

    With 0.17 % frauds a uniform batch of 512 holds one fraud on average, and the
    critic never learns what the fraud condition means. Each element here stacks
    ``n_critic`` batches in which ``fraud_fraction`` of the rows are frauds (drawn with
    replacement) and the rest normal rows. Element ``i`` depends only on ``seed`` and
    ``i`` (stateless random ops), so training is reproducible and can resume at
    ``start_step``.
    """
    y = np.asarray(y).astype(np.int64)
    fraud_idx = np.flatnonzero(y == 1)
    normal_idx = np.flatnonzero(y == 0)
    n_fraud_rows = int(round(fraud_fraction * batch_size))
    n_normal_rows = batch_size - n_fraud_rows
    if len(fraud_idx) == 0 or (n_normal_rows > 0 and len(normal_idx) == 0):
        raise DataValidationError(
            "GAN training needs fraud rows (and normal rows unless fraud_fraction is 1)"
        )
    X_t = tf.constant(np.asarray(X, dtype=np.float32))
    y_t = tf.constant(y)
    fraud_t = tf.constant(fraud_idx)
    normal_t = tf.constant(normal_idx if len(normal_idx) else np.zeros(1, np.int64))
    seed = int(seed) % 2**31

    def sample(step):
        pick = [
            tf.random.stateless_uniform(
                (n_critic, n_fraud_rows),
                seed=tf.stack([tf.constant(seed, tf.int64), 2 * step]),
                maxval=len(fraud_idx),
                dtype=tf.int64,
            )
        ]
        idx = [tf.gather(fraud_t, pick[0])]
        if n_normal_rows:
            pick_n = tf.random.stateless_uniform(
                (n_critic, n_normal_rows),
                seed=tf.stack([tf.constant(seed, tf.int64), 2 * step + 1]),
                maxval=len(normal_idx),
                dtype=tf.int64,
            )
            idx.append(tf.gather(normal_t, pick_n))
        rows = tf.reshape(tf.concat(idx, axis=1), [-1])
        x = tf.gather(X_t, rows)
        condition = tf.one_hot(tf.gather(y_t, rows), N_CLASSES, dtype=tf.float32)
        return x, condition

    return (
        tf.data.Dataset.counter(start=start_step, dtype=tf.int64)
        .map(sample, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        .prefetch(tf.data.AUTOTUNE)
    )


class _ProgressLogger(keras.callbacks.Callback):
    """Logs steps, losses, W estimate, steps/s and ETA; keeps the loss curves."""

    def __init__(self, total_steps: int, log_every: int):
        super().__init__()
        self.total_steps = total_steps
        self.log_every = log_every
        self.history: list[dict[str, float]] = []
        self.first_step = 0
        self.per_epoch = log_every
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        logs = {k: float(v) for k, v in (logs or {}).items()}
        step = self.first_step + (epoch + 1) * self.per_epoch
        elapsed = time.perf_counter() - self._start
        rate = step / elapsed if elapsed > 0 else float("nan")
        eta = (self.total_steps - step) / rate if rate > 0 else float("nan")
        self.history.append({"step": step, "seconds": round(elapsed, 3), **logs})
        logger.info(
            "GAN step %d/%d  critic %.4f  generator %.4f  GP %.4f  W %.4f  "
            "%.1f steps/s  ETA %.0fs",
            step,
            self.total_steps,
            logs.get("critic_loss", float("nan")),
            logs.get("generator_loss", float("nan")),
            logs.get("gradient_penalty", float("nan")),
            logs.get("wasserstein", float("nan")),
            rate,
            eta,
        )


@dataclass
class TrainedGAN:
    """A fitted generator and what it takes to use and describe it."""

    generator: keras.Model
    latent_dim: int
    n_features: int
    fingerprint: str
    history: list[dict[str, float]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


def train_cwgan_gp(
    X: np.ndarray,
    y: np.ndarray,
    config: GANConfig,
    *,
    random_state: int,
    log_every: int | None = None,
) -> TrainedGAN:
    """Fit a conditional WGAN-GP on ``(X, y)`` (model space, labels 0/1).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Training rows in model space (see ``TabularTransformer``).
    y : ndarray of shape (n_samples,)
        0 = normal, 1 = fraud.
    config : GANConfig
    random_state : int
        Seeds the weights, the noise and the batch sampling.
    log_every : int, optional
        Steps between progress lines and loss-curve points (default: ~40 points).

    Raises
    ------
    DataValidationError
        Fewer training frauds than ``config.min_fraud_rows``.
    TrainingError
        The losses became non-finite.
    """
    X = np.asarray(X)
    y = np.asarray(y).astype(np.int64)
    n_fraud = int((y == 1).sum())
    if n_fraud < config.min_fraud_rows:
        raise DataValidationError(
            f"only {n_fraud} fraud rows in the GAN's training data; need at least "
            f"{config.min_fraud_rows} (gan.min_fraud_rows)"
        )
    seeds = np.random.SeedSequence(random_state).generate_state(4)
    n_features = X.shape[1]
    generator = build_generator(
        n_features,
        latent_dim=config.latent_dim,
        n_classes=N_CLASSES,
        widths=config.generator_widths,
        negative_slope=config.leaky_relu_slope,
        seed=int(seeds[0] % 2**30),
    )
    critic = build_critic(
        n_features,
        n_classes=N_CLASSES,
        widths=config.critic_widths,
        negative_slope=config.leaky_relu_slope,
        seed=int(seeds[1] % 2**30),
    )
    gan = ConditionalWGANGP(
        generator,
        critic,
        latent_dim=config.latent_dim,
        n_critic=config.n_critic,
        gp_weight=config.gp_weight,
        gp_epsilon=config.gp_epsilon,
        seed=int(seeds[2] % 2**30),
    )

    def adam():
        return keras.optimizers.Adam(
            learning_rate=config.learning_rate,
            beta_1=config.beta_1,
            beta_2=config.beta_2,
        )

    gan.compile(g_optimizer=adam(), c_optimizer=adam())
    log_every = min(log_every or max(1, config.steps // 40), config.steps)
    progress = _ProgressLogger(config.steps, log_every)
    device = training_device()
    logger.info(
        "training cWGAN-GP on %s: %d rows (%d frauds), %d steps of %d x %d",
        device,
        len(y),
        n_fraud,
        config.steps,
        config.n_critic,
        config.batch_size,
    )
    start = time.perf_counter()
    # Whole chunks of ``log_every`` steps (one Keras "epoch" each), then the rest;
    # the dataset is keyed by step number, so the remainder continues the stream.
    full, rest = divmod(config.steps, log_every)
    for first_step, epochs, per_epoch in (
        (0, full, log_every),
        (full * log_every, 1, rest),
    ):
        if epochs == 0 or per_epoch == 0:
            continue
        dataset = make_training_dataset(
            X,
            y,
            batch_size=config.batch_size,
            n_critic=config.n_critic,
            fraud_fraction=config.fraud_fraction,
            seed=int(seeds[3]),
            start_step=first_step,
        )
        progress.first_step = first_step
        progress.per_epoch = per_epoch
        gan.fit(
            dataset,
            epochs=epochs,
            steps_per_epoch=per_epoch,
            verbose=0,
            shuffle=False,
            callbacks=[progress],
        )
    seconds = time.perf_counter() - start
    last = progress.history[-1] if progress.history else {}
    if not all(np.isfinite(v) for v in last.values()):
        raise TrainingError(f"GAN losses became non-finite: {last}")
    if not all(np.all(np.isfinite(w)) for w in generator.get_weights()):
        raise TrainingError("GAN generator weights became non-finite")
    return TrainedGAN(
        generator=generator,
        latent_dim=config.latent_dim,
        n_features=n_features,
        fingerprint=data_fingerprint(X, y),
        history=progress.history,
        meta={
            "device": device,
            "train_seconds": round(seconds, 3),
            "steps": config.steps,
            "train_rows": int(len(y)),
            "train_frauds": n_fraud,
            "random_state": int(random_state),
            "config": config.model_dump(mode="json"),
        },
    )


def generate_rows(
    generator: keras.Model,
    n_samples: int,
    *,
    latent_dim: int,
    label: int = 1,
    random_state: int = 0,
    batch_size: int = 65_536,
) -> np.ndarray:
    """Draw ``n_samples`` rows of class ``label`` in model space (float64).

    The noise comes from a NumPy generator seeded by ``random_state``, so the same
    generator and seed give the same rows.
    """
    rng = np.random.default_rng(random_state)
    condition = np.zeros((min(batch_size, max(n_samples, 1)), N_CLASSES), np.float32)
    condition[:, label] = 1.0
    parts = []
    for start in range(0, n_samples, batch_size):
        n = min(batch_size, n_samples - start)
        z = rng.standard_normal((n, latent_dim), dtype=np.float32)
        out = generator([z, condition[:n]], training=False)
        parts.append(np.asarray(out, dtype=np.float64))
    if not parts:
        return np.empty((0, generator.output_shape[-1]))
    return np.concatenate(parts)


def save_gan(directory: str | Path, trained: TrainedGAN) -> Path:
    """Write ``generator.keras``, ``history.json`` and ``gan.json`` to ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_path(directory / GENERATOR_FILE, suffix=".keras") as tmp:
        trained.generator.save(tmp)
    save_json(directory / HISTORY_FILE, trained.history)
    save_json(
        directory / META_FILE,
        {
            "schema_version": 1,
            "latent_dim": trained.latent_dim,
            "n_features": trained.n_features,
            "fingerprint": trained.fingerprint,
            **trained.meta,
        },
    )
    return directory


def load_gan(directory: str | Path) -> TrainedGAN:
    """Load a GAN folder written by :func:`save_gan` (``safe_mode`` stays on)."""
    directory = Path(directory)
    meta = load_json(directory / META_FILE)
    path = directory / GENERATOR_FILE
    if not path.is_file():
        raise ArtifactError(f"{path}: missing")
    try:
        generator = keras.saving.load_model(path, compile=False)
    except Exception as exc:  # Keras raises many types for a bad file
        raise ArtifactError(f"{path}: cannot load ({exc})") from exc
    history = load_json(directory / HISTORY_FILE)
    return TrainedGAN(
        generator=generator,
        latent_dim=int(meta["latent_dim"]),
        n_features=int(meta["n_features"]),
        fingerprint=str(meta["fingerprint"]),
        history=history,
        meta={k: v for k, v in meta.items() if k not in {"latent_dim", "n_features"}},
    )
