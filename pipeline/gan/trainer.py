"""Train the conditional WGAN-GP on class-balanced batches, generate rows, save/load."""

from __future__ import annotations

import hashlib
import logging
import time
import warnings
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from pipeline.artifacts import atomic_path, load_json, save_json
from pipeline.backend import describe_device
from pipeline.config import GANConfig
from pipeline.errors import (
    ArtifactError,
    ConfigError,
    DataValidationError,
    TrainingError,
)
from pipeline.gan.encoding import ColumnEncoder
from pipeline.gan.model import ConditionalWGANGP
from pipeline.gan.networks import build_critic, build_generator

logger = logging.getLogger(__name__)

GENERATOR_FILE = "generator.keras"
META_FILE = "gan.json"
HISTORY_FILE = "history.json"
TRANSFORMER_FILE = "transformer.json"
ENCODER_FILE = "encoder.json"
CRITIC_FILE = "critic.keras"
FILTER_FILE = "filter.ubj"


def data_fingerprint(X: np.ndarray, y: np.ndarray) -> str:
    """sha256 of the training rows and labels: ties a fitted GAN to its data."""
    digest = hashlib.sha256()
    digest.update(np.ascontiguousarray(X, dtype=np.float64).tobytes())
    digest.update(np.ascontiguousarray(y, dtype=np.int64).tobytes())
    return digest.hexdigest()


def batch_composition(
    counts: np.ndarray,
    target_fraction: float,
    batch_size: int,
    targets: list[int] | None = None,
) -> np.ndarray:
    """Rows of each class in a training batch ("training-by-sampling").

    The target classes (those to generate; by default the class with the fewest
    rows, fraud) share ``target_fraction`` of the batch equally; the other classes
    share the rest. 1.0 trains on the target classes alone.
    """
    counts = np.asarray(counts)
    n_classes = len(counts)
    targets = sorted(targets) if targets else [int(np.argmin(counts))]
    others = [k for k in range(n_classes) if k not in targets]
    shares = np.zeros(n_classes)
    shares[targets] = target_fraction / len(targets)
    if others:
        shares[others] = (1.0 - target_fraction) / len(others)
    rows = np.floor(shares * batch_size).astype(int)
    rows[targets[0]] += batch_size - rows.sum()
    return rows


def make_training_dataset(
    X: np.ndarray,
    y: np.ndarray,
    *,
    batch_size: int,
    n_critic: int,
    fraud_fraction: float,
    seed: int,
    start_step: int = 0,
    targets: list[int] | None = None,
    dequantize: tuple[np.ndarray, np.ndarray, float] | None = None,
) -> tf.data.Dataset:
    """An endless dataset of class-balanced batches ("training-by-sampling").

    With 0.17 % frauds a uniform batch of 512 holds one fraud on average, and the
    critic never learns what the fraud condition means. Each element here stacks
    ``n_critic`` batches in which ``fraud_fraction`` of the rows come from the
    target classes (default: the minority class, fraud), drawn with replacement,
    and the rest from the other classes (see :func:`batch_composition`). ``y``
    holds class indices 0..K-1. Element ``i`` depends only on ``seed`` and ``i``
    (stateless random ops), so training is reproducible and can resume at
    ``start_step``.

    ``dequantize = (low, high, clip)`` (the quantile encoding, see
    :class:`~pipeline.gan.encoding.ColumnEncoder`): each drawn row's values are
    drawn anew at every step, uniformly between ``low`` and ``high`` (its slots
    of the empirical CDF), kept in ``[clip, 1 - clip]`` and mapped to normal
    scores; ``X`` is then unused.
    """
    y = np.asarray(y).astype(np.int64)
    n_classes = max(int(y.max()) + 1, 2)
    counts = np.bincount(y, minlength=n_classes)
    composition = batch_composition(counts, fraud_fraction, batch_size, targets)
    if any(n > 0 and c == 0 for n, c in zip(composition, counts, strict=True)):
        raise DataValidationError(
            "GAN training batches need rows of every class they draw from "
            f"(class counts {counts.tolist()})"
        )
    if dequantize is not None:
        low, high, clip = dequantize
        low_t = tf.constant(np.asarray(low, dtype=np.float32))
        width_t = tf.constant(np.asarray(high, dtype=np.float32) - low_t.numpy())
    else:
        X_t = tf.constant(np.asarray(X, dtype=np.float32))
    n_features = int(np.shape(X if dequantize is None else dequantize[0])[1])
    y_t = tf.constant(y)
    members = [tf.constant(np.flatnonzero(y == k)) for k in range(n_classes)]
    seed = int(seed) % 2**31

    def sample(step):
        idx = []
        for k, n_rows in enumerate(composition):
            if n_rows == 0:
                continue
            pick = tf.random.stateless_uniform(
                (n_critic, int(n_rows)),
                seed=tf.stack([tf.constant(seed, tf.int64), n_classes * step + k]),
                maxval=int(counts[k]),
                dtype=tf.int64,
            )
            idx.append(tf.gather(members[k], pick))
        rows = tf.reshape(tf.concat(idx, axis=1), [-1])
        if dequantize is None:
            x = tf.gather(X_t, rows)
        else:
            u = tf.random.stateless_uniform(
                (tf.shape(rows)[0], n_features),
                seed=tf.stack([tf.constant(seed, tf.int64), -1 - step]),
            )
            u = tf.gather(low_t, rows) + u * tf.gather(width_t, rows)
            x = tf.math.ndtri(tf.clip_by_value(u, clip, 1.0 - clip))
        condition = tf.one_hot(tf.gather(y_t, rows), n_classes, dtype=tf.float32)
        return x, condition

    return (
        tf.data.Dataset.counter(start=start_step, dtype=tf.int64)
        .map(sample, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        .prefetch(tf.data.AUTOTUNE)
    )


SAMPLE_BLOCK = 8_192
"""Rows drawn per generator call when sampling (see :meth:`TrainedGAN.iter_sample`)."""


@dataclass
class TrainedGAN:
    """A fitted generator and what it takes to use and describe it.

    ``encoder`` maps the generator's space back to model space; ``filter_model``
    (an ``XGBClassifier`` or the critic), when set, drops the most synthetic-looking
    share of each draw of class ``meta["filter_label"]`` (see :meth:`sample`).
    """

    generator: keras.Model
    latent_dim: int
    n_features: int
    fingerprint: str
    history: list[dict[str, float]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    encoder: ColumnEncoder = field(default_factory=ColumnEncoder)
    filter_model: Any = None

    def sample(
        self, n_samples: int, *, label: int = 1, random_state: int = 0
    ) -> np.ndarray:
        """``n_samples`` generated rows of class ``label`` in model space (float64):
        the rows of :meth:`iter_sample`, concatenated."""
        parts = list(
            self.iter_sample(n_samples, label=label, random_state=random_state)
        )
        return np.concatenate(parts) if parts else np.empty((0, self.n_features))

    def iter_sample(
        self,
        n_samples: int,
        *,
        label: int = 1,
        random_state: int = 0,
        chunk_rows: int = SAMPLE_BLOCK,
    ) -> Iterator[np.ndarray]:
        """The rows of :meth:`sample` in chunks of ``chunk_rows`` (the last one
        shorter), produced as they are consumed: memory does not grow with
        ``n_samples``.

        Rows are drawn in blocks of :data:`SAMPLE_BLOCK` with one noise stream, so
        the same seed gives the same rows whatever ``chunk_rows``. With a filter,
        ``n_samples / (1 - filter_share)`` rows are drawn and the most
        synthetic-looking ones of each block dropped (the block's share of the
        ``n_samples`` kept); the rest keep their order.
        """
        if chunk_rows < 1:
            raise ConfigError(f"chunk_rows must be at least 1, got {chunk_rows}")
        kind = self.meta.get("filter", "none")
        share = float(self.meta.get("filter_share", 0.0))
        filtered = (
            self.filter_model is not None
            and kind != "none"
            and share > 0
            and label == self.meta.get("filter_label")
        )
        n_draw = int(np.ceil(n_samples / (1.0 - share))) if filtered else n_samples
        # One generator each for the noise and the decoding, consumed block by
        # block: a block's rows do not depend on how the output is chunked.
        noise = np.random.default_rng(random_state)
        decoding = np.random.default_rng(random_state)
        temperature = float(self.meta.get("temperature", 1.0))
        pending: list[np.ndarray] = []
        n_pending = kept = 0
        for start in range(0, n_draw, SAMPLE_BLOCK):
            stop = min(start + SAMPLE_BLOCK, n_draw)
            Z = generate_rows(
                self.generator,
                stop - start,
                latent_dim=self.latent_dim,
                label=label,
                random_state=noise,
                temperature=temperature,
            )
            X = self.encoder.decode(Z, random_state=decoding)
            if filtered:
                keep_to = n_samples if stop == n_draw else stop * n_samples // n_draw
                realness = self._realness(Z, X, label)
                order = np.argsort(-realness, kind="stable")[: keep_to - kept]
                X = X[np.sort(order)]
                kept = keep_to
            pending.append(X)
            n_pending += len(X)
            while n_pending >= chunk_rows:
                block = np.concatenate(pending) if len(pending) > 1 else pending[0]
                yield block[:chunk_rows]
                rest = block[chunk_rows:]
                pending, n_pending = ([rest] if len(rest) else []), len(rest)
        if n_pending:
            yield np.concatenate(pending) if len(pending) > 1 else pending[0]

    def _realness(self, Z: np.ndarray, X: np.ndarray, label: int) -> np.ndarray:
        """Higher for rows that look more real to the filter (``Z``: the rows in
        the generator's space, ``X``: the same rows decoded)."""
        if self.meta["filter"] == "classifier":
            return -self.filter_model.predict_proba(X)[:, 1]
        n_classes = int(self.generator.inputs[1].shape[-1])
        condition = np.zeros((len(Z), n_classes), np.float32)
        condition[:, label] = 1.0
        critic = inference_function(self.filter_model)
        Z = Z.astype(np.float32)
        scores = [
            np.asarray(
                critic(
                    tf.constant(Z[i : i + 8_192]), tf.constant(condition[i : i + 8_192])
                )
            )
            for i in range(0, len(Z), 8_192)
        ]
        return np.concatenate(scores).astype(np.float64)[:, 0]


CHECKPOINT_ARRAYS = "checkpoint.npz"
CHECKPOINT_STATE = "checkpoint.json"
BEST_ARRAYS = "best.npz"


class _Trainer:
    """The training loop around :class:`ConditionalWGANGP`.

    Training runs in chunks of ``log_every`` steps (one ``fit`` call each, so the
    Keras ``train_step`` does the work); between chunks the loop logs progress,
    checks for runs of non-finite steps, scores the generator for model selection,
    and writes checkpoints. Every piece of state that affects later steps (weights,
    optimizer moments, the noise generator's state, the step number: the batch
    stream is keyed by it) is in the checkpoint, so a resumed run continues exactly
    where the killed one stopped.
    """

    def __init__(self, X, y, config: GANConfig, random_state: int, targets=None):
        self.X = np.asarray(X)
        self.y = np.asarray(y).astype(np.int64)
        self.n_classes = max(int(self.y.max()) + 1, 2)
        counts = np.bincount(self.y, minlength=self.n_classes)
        self.minority = int(np.argmin(counts))
        self.targets = targets
        self.config = config
        self.random_state = int(random_state)
        seeds = np.random.SeedSequence(random_state).generate_state(5)
        self.data_seed = int(seeds[3])
        self.select_seed = selection_seed(random_state)
        # The encoding is fitted on the classes the batches draw from (with
        # fraud_fraction 1.0: the frauds alone).
        drawn = batch_composition(
            counts, config.fraud_fraction, config.batch_size, targets
        )
        self.encoder = ColumnEncoder(
            config.encoding,
            mode_columns=config.mode_columns,
            random_state=int(seeds[4] % 2**31),
        ).fit(self.X[np.isin(self.y, np.flatnonzero(drawn > 0))])
        self.dequantize = None
        if config.encoding == "quantile" and config.dequantize:
            low, high = self.encoder.cdf_bounds(self.X)
            self.dequantize = (low, high, self.encoder.uniform_clip())
        self.X_encoded = None if self.dequantize else self.encoder.training_rows(self.X)
        n_features = self.encoder.n_encoded
        common = {
            "n_classes": self.n_classes,
            "negative_slope": config.leaky_relu_slope,
            "dtype": config.precision,
        }

        def generator():
            return build_generator(
                n_features,
                latent_dim=config.latent_dim,
                widths=config.generator_widths,
                seed=int(seeds[0] % 2**30),
                residual=config.residual,
                output_layout=self.encoder.output_layout(),
                **common,
            )

        self.generator = generator()
        # Starts equal to the generator (same seeds), then averages its updates.
        self.ema_generator = generator() if config.ema_decay else None
        self.critic = build_critic(
            n_features,
            widths=config.critic_widths,
            seed=int(seeds[1] % 2**30),
            dropout=config.critic_dropout,
            pac=config.pac,
            **common,
        )
        self.gan = ConditionalWGANGP(
            self.generator,
            self.critic,
            latent_dim=config.latent_dim,
            n_critic=config.n_critic,
            gp_weight=config.gp_weight,
            gp_epsilon=config.gp_epsilon,
            seed=int(seeds[2] % 2**30),
            pac=config.pac,
            ema_generator=self.ema_generator,
            ema_decay=config.ema_decay or 0.0,
        )
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Model doesn't support `jit_compile")
            self.gan.compile(
                g_optimizer=self._adam(config.learning_rate),
                c_optimizer=self._adam(
                    config.critic_learning_rate or config.learning_rate
                ),
                jit_compile=config.jit_compile,
            )
        if config.jit_compile and not self.gan.jit_compile:
            # Keras turns XLA off (with a warning only) while TensorFlow op
            # determinism is on in the process; asked-for XLA must not vanish.
            raise ConfigError(
                "gan.jit_compile is on but Keras disables XLA in a process with "
                "TensorFlow op determinism enabled; train in a fresh process (the "
                "flow leaves determinism off when gan.jit_compile is on)"
            )
        self.step = 0
        self.history: list[dict[str, float]] = []
        self.selection: list[dict[str, float]] = []
        self.best: dict[str, Any] | None = None
        self.recoveries = 0
        self.resumed_from = 0

    def _adam(self, learning_rate: float):
        return keras.optimizers.Adam(
            learning_rate=learning_rate,
            beta_1=self.config.beta_1,
            beta_2=self.config.beta_2,
        )

    @property
    def _optimizers(self) -> tuple:
        return (self.gan.g_optimizer, self.gan.c_optimizer)

    # -- state ------------------------------------------------------------------
    def _variables(self) -> list:
        ema = [] if self.ema_generator is None else self.ema_generator.weights
        return [
            *self.generator.weights,
            *ema,
            *self.critic.weights,
            *self.gan.g_optimizer.variables,
            *self.gan.c_optimizer.variables,
            self.gan.seed_generator.state,
            # Dropout and Gumbel-softmax layers draw from seed generators of
            # their own.
            *(
                layer.seed_generator.state
                for model in (self.generator, self.ema_generator, self.critic)
                if model is not None
                for layer in model.layers
                if getattr(layer, "seed_generator", None) is not None
            ),
            self.gan.nonfinite_steps,
            self.gan.generator_updates,
        ]

    def _snapshot(self) -> list[np.ndarray]:
        return [np.array(v.numpy()) for v in self._variables()]

    def _restore(self, arrays: list[np.ndarray]) -> None:
        variables = self._variables()
        if len(arrays) != len(variables):
            raise ArtifactError("checkpoint does not match the GAN's architecture")
        for variable, value in zip(variables, arrays, strict=True):
            if tuple(variable.shape) != value.shape:
                raise ArtifactError("checkpoint does not match the GAN's architecture")
            variable.assign(value)

    def _state(self, fingerprint: str) -> dict[str, Any]:
        return {
            "schema_version": 2,
            "step": self.step,
            "fingerprint": fingerprint,
            "random_state": self.random_state,
            "config": self.config.model_dump(mode="json"),
            "history": self.history,
            "selection": self.selection,
            "best": None
            if self.best is None
            else {k: v for k, v in self.best.items() if k != "weights"},
            "recoveries": self.recoveries,
            "learning_rates": [
                float(o.learning_rate.numpy()) for o in self._optimizers
            ],
        }

    def save_checkpoint(self, directory: Path, fingerprint: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        _save_arrays(directory / CHECKPOINT_ARRAYS, self._snapshot())
        if self.best is not None:
            _save_arrays(directory / BEST_ARRAYS, self.best["weights"])
        # The JSON goes last: it is what marks the checkpoint as complete.
        save_json(directory / CHECKPOINT_STATE, self._state(fingerprint))

    def try_resume(self, directory: Path, fingerprint: str) -> bool:
        state_path = directory / CHECKPOINT_STATE
        if not state_path.is_file():
            return False
        state = load_json(state_path)
        same = (
            state.get("schema_version") == 2
            and state.get("fingerprint") == fingerprint
            and state.get("random_state") == self.random_state
            and state.get("config") == self.config.model_dump(mode="json")
        )
        if not same:
            logger.warning(
                "ignoring checkpoint in %s: other data, seed, config or version",
                directory,
            )
            return False
        self._restore(_load_arrays(directory / CHECKPOINT_ARRAYS))
        self.step = int(state["step"])
        self.history = list(state["history"])
        self.selection = list(state["selection"])
        self.recoveries = int(state["recoveries"])
        for optimizer, rate in zip(
            self._optimizers, state["learning_rates"], strict=True
        ):
            optimizer.learning_rate.assign(rate)
        if state.get("best") is not None:
            self.best = {
                **state["best"],
                "weights": _load_arrays(directory / BEST_ARRAYS),
            }
        self.resumed_from = self.step
        logger.info("resuming GAN training from the checkpoint at step %d", self.step)
        return True

    # -- the loop ---------------------------------------------------------------
    def _score(self, generator: keras.Model, validation: np.ndarray) -> float | None:
        from pipeline.fidelity import c2st_auc

        rows = self.encoder.decode(
            generate_rows(
                generator,
                len(validation),
                latent_dim=self.config.latent_dim,
                label=self.minority,
                random_state=self.select_seed,
                temperature=self.config.temperature,
            ),
            random_state=self.select_seed,
        )
        if not np.isfinite(rows).all():
            return None
        return c2st_auc(rows, validation, random_state=self.select_seed)

    def _select(self, validation: np.ndarray) -> None:
        """Score the generator (and its moving average) on the validation frauds;
        keep the best weights seen so far."""
        candidates = {"generator": self.generator}
        if self.ema_generator is not None:
            candidates["ema"] = self.ema_generator
        record: dict[str, Any] = {"step": self.step}
        for name, model in candidates.items():
            score = self._score(model, validation)
            if score is None:
                continue
            record["c2st_auc" if name == "generator" else "ema_c2st_auc"] = score
            if self.best is None or score < self.best["c2st_auc"]:
                self.best = {
                    "step": self.step,
                    "c2st_auc": score,
                    "weights_of": name,
                    "weights": [np.array(w) for w in model.get_weights()],
                }
        if len(record) == 1:
            return
        self.selection.append(record)
        logger.info(
            "GAN step %d: validation C2ST %s (best %.3f at step %d%s)",
            self.step,
            ", ".join(
                f"{'EMA ' if k.startswith('ema') else ''}{v:.3f}"
                for k, v in record.items()
                if k != "step"
            ),
            self.best["c2st_auc"],
            self.best["step"],
            ", EMA" if self.best["weights_of"] == "ema" else "",
        )

    def _recover(self, good: list[np.ndarray]) -> None:
        self.recoveries += 1
        if self.recoveries > 1:
            raise TrainingError(
                f"GAN training produced non-finite losses or gradients for "
                f"{self.config.max_consecutive_nonfinite} steps in a row again after "
                "restoring the last good state and halving the learning rate; "
                "stopping. Check the input scaling or lower gan.learning_rate."
            )
        self._restore(good)
        for optimizer in self._optimizers:
            optimizer.learning_rate.assign(optimizer.learning_rate * 0.5)
        logger.warning(
            "GAN step %d: %d non-finite steps in a row; restored the last good state "
            "and halved the learning rate to %.3g",
            self.step,
            self.config.max_consecutive_nonfinite,
            float(self.gan.g_optimizer.learning_rate.numpy()),
        )

    def run(
        self,
        *,
        log_every: int,
        eval_every: int,
        validation: np.ndarray | None,
        checkpoint_dir: Path | None,
        fingerprint: str,
    ) -> None:
        total = self.config.steps
        start = time.perf_counter()
        deadline = start + self.config.timeout_seconds
        first = self.step
        good = self._snapshot()
        try:
            while self.step < total:
                if time.perf_counter() > deadline:
                    self._time_out(checkpoint_dir, fingerprint)
                n = min(log_every, total - self.step)
                dataset = make_training_dataset(
                    self.X_encoded,
                    self.y,
                    batch_size=self.config.batch_size,
                    n_critic=self.config.n_critic,
                    fraud_fraction=self.config.fraud_fraction,
                    seed=self.data_seed,
                    start_step=self.step,
                    targets=self.targets,
                    dequantize=self.dequantize,
                )
                self.gan.max_consecutive_nonfinite.assign(0)
                out = self.gan.fit(
                    dataset, epochs=1, steps_per_epoch=n, verbose=0, shuffle=False
                )
                self.step += n
                logs = {k: float(v[-1]) for k, v in out.history.items()}
                self._log_progress(logs, start, first)
                longest = int(self.gan.max_consecutive_nonfinite.numpy())
                if longest >= self.config.max_consecutive_nonfinite:
                    self._recover(good)
                    continue
                good = self._snapshot()
                at_eval = self.step % eval_every == 0 or self.step == total
                if at_eval and validation is not None:
                    self._select(validation)
                if at_eval and checkpoint_dir is not None:
                    self.save_checkpoint(checkpoint_dir, fingerprint)
        except KeyboardInterrupt:
            # Ctrl-C leaves a usable model: the last good state, checkpointed.
            if checkpoint_dir is not None:
                self._restore(good)
                self.save_checkpoint(checkpoint_dir, fingerprint)
                logger.warning(
                    "interrupted at step %d; checkpoint saved to %s",
                    self.step,
                    checkpoint_dir,
                )
            raise
        if self.best is not None:
            self.generator.set_weights(self.best["weights"])

    def _time_out(self, checkpoint_dir: Path | None, fingerprint: str) -> None:
        """Stop between two chunks of steps, past ``config.timeout_seconds``.

        Checked here, between ``fit`` calls, rather than by interrupting a running
        step: an exception raised into TensorFlow from a signal handler (Prefect's
        task timeout in the main thread) crashed the process with a segfault in CI.
        """
        saved = ""
        if checkpoint_dir is not None:
            self.save_checkpoint(checkpoint_dir, fingerprint)
            saved = "; its checkpoint is saved, so a rerun resumes from there"
        raise TrainingError(
            f"GAN training ran past gan.timeout_seconds = "
            f"{self.config.timeout_seconds} s at step {self.step} of "
            f"{self.config.steps}{saved} (raise it with --set gan.timeout_seconds=N)"
        )

    def _log_progress(self, logs: dict[str, float], start: float, first: int) -> None:
        elapsed = time.perf_counter() - start
        done = self.step - first
        rate = done / elapsed if elapsed > 0 else float("nan")
        eta = (self.config.steps - self.step) / rate if rate > 0 else float("nan")
        nonfinite = int(self.gan.nonfinite_steps.numpy())
        self.history.append(
            {
                "step": self.step,
                "seconds": round(elapsed, 3),
                "nonfinite_steps": nonfinite,
                **logs,
            }
        )
        logger.info(
            "GAN step %d/%d  critic %.4f  generator %.4f  GP %.4f  W %.4f  "
            "non-finite %d  %.1f steps/s  ETA %.0fs",
            self.step,
            self.config.steps,
            logs.get("critic_loss", float("nan")),
            logs.get("generator_loss", float("nan")),
            logs.get("gradient_penalty", float("nan")),
            logs.get("wasserstein", float("nan")),
            nonfinite,
            rate,
            eta,
        )


def _save_arrays(path: Path, arrays: list[np.ndarray]) -> None:
    # Plain numeric arrays in an .npz, read back with allow_pickle=False.
    with atomic_path(path, suffix=".npz") as tmp:
        np.savez(tmp, *arrays)


def _load_arrays(path: Path) -> list[np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return [data[f"arr_{i}"] for i in range(len(data.files))]
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{path}: unreadable checkpoint ({exc})") from exc


def train_cwgan_gp(
    X: np.ndarray,
    y: np.ndarray,
    config: GANConfig,
    *,
    random_state: int,
    validation: np.ndarray | None = None,
    checkpoint_dir: str | Path | None = None,
    log_every: int | None = None,
    targets: list[int] | None = None,
) -> TrainedGAN:
    """Fit a conditional WGAN-GP on ``(X, y)`` (model space, class indices).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Training rows in model space (see ``TabularTransformer``).
    y : ndarray of shape (n_samples,)
        Class indices 0..K-1 (here 0 = normal, 1 = fraud); the rarest class is the
        one ``config.fraud_fraction`` and model selection refer to.
    config : GANConfig
    random_state : int
        Seeds the weights, the noise, the batch sampling and model selection.
    validation : ndarray of shape (n_val_frauds, n_features), optional
        Real rows of the rarest class (frauds) held out from training. Every
        ``config.eval_every`` steps the generator's rows are scored against them
        (C2ST) and the best-scoring weights are kept, not simply the last.
    checkpoint_dir : str or Path, optional
        Checkpoints go here every ``config.eval_every`` steps; a checkpoint left by
        an interrupted run with the same data, seed and config is resumed.
    log_every : int, optional
        Steps between progress lines and loss-curve points (default: ~40 points).
    targets : list of int, optional
        The classes that will be generated (default: the rarest class); they get
        ``config.fraud_fraction`` of every batch.

    Raises
    ------
    DataValidationError
        Fewer training frauds than ``config.min_fraud_rows``.
    TrainingError
        Non-finite steps persisted after one recovery.
    """
    X = np.asarray(X)
    y = np.asarray(y).astype(np.int64)
    n_fraud = int(np.bincount(y).min()) if len(y) else 0
    if n_fraud < config.min_fraud_rows:
        raise DataValidationError(
            f"only {n_fraud} fraud rows in the GAN's training data; need at least "
            f"{config.min_fraud_rows} (gan.min_fraud_rows)"
        )
    fingerprint = data_fingerprint(X, y)
    log_every = max(1, min(log_every or config.steps // 40, config.steps))
    eval_every = config.eval_every or max(log_every, config.steps // 10)
    # Checks happen at chunk ends, so round the interval to whole chunks.
    eval_every = max(log_every, eval_every // log_every * log_every)
    trainer = _Trainer(X, y, config, random_state, targets)
    checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
    if checkpoint_dir is not None:
        trainer.try_resume(checkpoint_dir, fingerprint)
    device = describe_device()
    logger.info(
        "training cWGAN-GP: %d rows (%d frauds), steps %d..%d of %d x %d, %s%s",
        len(y),
        n_fraud,
        trainer.step,
        config.steps,
        config.n_critic,
        config.batch_size,
        config.precision,
        ", XLA" if config.jit_compile else "",
    )
    start = time.perf_counter()
    trainer.run(
        log_every=log_every,
        eval_every=eval_every,
        validation=validation,
        checkpoint_dir=checkpoint_dir,
        fingerprint=fingerprint,
    )
    seconds = time.perf_counter() - start
    if not all(np.all(np.isfinite(w)) for w in trainer.generator.get_weights()):
        raise TrainingError("GAN generator weights became non-finite")
    best = trainer.best or {}
    trained = TrainedGAN(
        generator=trainer.generator,
        latent_dim=config.latent_dim,
        n_features=X.shape[1],
        fingerprint=fingerprint,
        history=trainer.history,
        encoder=trainer.encoder,
        meta={
            "device": device,
            "train_seconds": round(seconds, 3),
            "steps": config.steps,
            "resumed_from_step": trainer.resumed_from,
            "train_rows": int(len(y)),
            "train_frauds": n_fraud,
            "nonfinite_steps": int(trainer.gan.nonfinite_steps.numpy()),
            "recoveries": trainer.recoveries,
            "selected_step": best.get("step", config.steps),
            "selected_weights": best.get("weights_of", "generator"),
            "selection": trainer.selection,
            "encoding": config.encoding,
            "temperature": config.temperature,
            "filter": config.filter,
            "filter_share": config.filter_share,
            "filter_label": trainer.minority,
            "random_state": int(random_state),
            "config": config.model_dump(mode="json"),
        },
    )
    if config.filter == "critic":
        trained.filter_model = trainer.critic
    elif config.filter == "classifier":
        trained.filter_model = fit_filter_classifier(
            trained, X[y == trainer.minority], trainer.minority, trainer.select_seed
        )
    return trained


def selection_seed(random_state: int) -> int:
    """The seed of model selection's C2ST and of the classifier filter: the last
    of the five child seeds the trainer derives from the GAN's seed."""
    return int(np.random.SeedSequence(random_state).generate_state(5)[4])


def fit_filter_classifier(
    trained: TrainedGAN, real: np.ndarray, label: int, random_state: int
):
    """A classifier telling the generator's rows from the real training frauds
    (never validation or test rows); ``TrainedGAN.sample`` drops the rows it finds
    most synthetic. Equal numbers of each, as in the C2ST."""
    from pipeline.fidelity import make_c2st_classifier

    generated = trained.sample(len(real), label=label, random_state=random_state + 1)
    X = np.vstack([real, generated])
    y = np.r_[np.zeros(len(real)), np.ones(len(generated))]
    return make_c2st_classifier(random_state).fit(X, y)


_INFERENCE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def inference_function(model: keras.Model):
    """``model``'s forward pass (``training=False``) as one concrete graph for any
    batch size, traced once per network and kept while the network lives.

    A ``tf.function`` per network retraced at every new batch size (the selection
    draws as many rows as there are validation frauds, the sampler other counts),
    and TensorFlow keys its retracing statistics by the wrapped code, which all
    networks share: a few networks in one process added up to its "triggered
    tf.function retracing" warning. Tracing here is explicit, with the batch
    dimension left open, so there is nothing to retrace.
    """
    if model not in _INFERENCE:
        ref = weakref.ref(model)  # the graph holds the variables, not the network

        def forward(*inputs):
            return ref()(list(inputs), training=False)

        specs = [
            tf.TensorSpec([None, *tensor.shape[1:]], tf.float32)
            for tensor in model.inputs
        ]
        _INFERENCE[model] = tf.function(forward).get_concrete_function(*specs)
    return _INFERENCE[model]


def generate_rows(
    generator: keras.Model,
    n_samples: int,
    *,
    latent_dim: int,
    label: int = 1,
    random_state: int | np.random.Generator = 0,
    batch_size: int = 8_192,
    temperature: float = 1.0,
) -> np.ndarray:
    """Draw ``n_samples`` rows of class ``label`` in the generator's space (float64).

    The noise comes from a NumPy generator seeded by ``random_state`` (or that
    generator itself, whose stream then continues), so the same generator and
    seed give the same rows; ``temperature`` scales it (below 1:
    rows nearer the generator's modes, the "truncation trick"). The network runs as
    one traced graph on batches small enough for the CPU caches (measured: 8,192
    rows per batch in graph mode is 2.7x faster than 65,536-row eager calls on 2
    cores).
    """
    rng = np.random.default_rng(random_state)
    n_classes = int(generator.inputs[1].shape[-1])
    condition = np.zeros((min(batch_size, max(n_samples, 1)), n_classes), np.float32)
    condition[:, label] = 1.0
    infer = inference_function(generator)
    parts = []
    for start in range(0, n_samples, batch_size):
        n = min(batch_size, n_samples - start)
        z = rng.standard_normal((n, latent_dim), dtype=np.float32)
        if temperature != 1.0:
            z *= np.float32(temperature)
        out = infer(tf.constant(z), tf.constant(condition[:n]))
        parts.append(np.asarray(out, dtype=np.float64))
    if not parts:
        return np.empty((0, generator.output_shape[-1]))
    return np.concatenate(parts)


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
            "schema_version": 2,
            "latent_dim": trained.latent_dim,
            "n_features": trained.n_features,
            "fingerprint": trained.fingerprint,
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
        raise ArtifactError(f"{path}: cannot load ({exc})") from exc


def load_gan(directory: str | Path) -> TrainedGAN:
    """Load a GAN folder written by :func:`save_gan` (``safe_mode`` stays on; the
    filter classifier is XGBoost's own format)."""
    directory = Path(directory)
    meta = load_json(directory / META_FILE)
    if meta.get("schema_version") != 2:
        raise ArtifactError(
            f"{directory / META_FILE}: GAN folder schema_version "
            f"{meta.get('schema_version')!r} is not supported (expected 2); "
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
        meta={k: v for k, v in meta.items() if k not in {"latent_dim", "n_features"}},
        encoder=encoder,
        filter_model=filter_model,
    )
