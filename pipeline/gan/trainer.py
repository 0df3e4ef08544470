"""Train the conditional WGAN-GP: the loop around :class:`ConditionalWGANGP`, its
state, recovery from non-finite steps, time limit and progress."""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path
from typing import Any

import keras
import numpy as np

from pipeline.core import interrupts
from pipeline.core.backend import describe_device
from pipeline.core.config import GANConfig
from pipeline.core.errors import (
    ArtifactError,
    ConfigError,
    DataValidationError,
    TrainingError,
)
from pipeline.core.layout import BEST_ARRAYS, CHECKPOINT_ARRAYS
from pipeline.gan.batches import batch_composition, make_training_dataset
from pipeline.gan.checkpoints import (
    STATE_VERSION,
    load_arrays,
    read_checkpoint_state,
    write_checkpoint,
)
from pipeline.gan.encoding import ColumnEncoder, GANColumns
from pipeline.gan.model import ConditionalWGANGP
from pipeline.gan.networks import build_critic, build_generator
from pipeline.gan.selection import (
    ModelSelection,
    fit_filter_classifier,
    selection_seed,
)
from pipeline.gan.storage import data_fingerprint
from pipeline.gan.trained import Conditions, TrainedGAN

logger = logging.getLogger(__name__)


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

    def __init__(
        self,
        X,
        y,
        config: GANConfig,
        random_state: int,
        fraud_labels=None,
        columns: GANColumns | None = None,
    ):
        columns = columns or GANColumns()
        self.X = np.asarray(X)
        self.y = np.asarray(y).astype(np.int64)
        self.n_classes = max(int(self.y.max()) + 1, 2)
        counts = np.bincount(self.y, minlength=self.n_classes)
        self.fraud_label = int(np.argmin(counts))
        self.fraud_labels = fraud_labels
        self.config = config
        self.random_state = int(random_state)
        seeds = np.random.SeedSequence(random_state).generate_state(5)
        self.data_seed = int(seeds[3])
        self.select_seed = selection_seed(random_state)
        self._fit_encoding(columns, counts, int(seeds[4] % 2**31))
        self._build_networks(seeds)
        self._compile()
        self.step = 0
        self.history: list[dict[str, float]] = []
        self.selector = ModelSelection(
            self.encoder,
            latent_dim=config.latent_dim,
            label=self.fraud_label,
            temperature=config.temperature,
            random_state=self.select_seed,
            conditions=self.conditions,
        )
        self.recoveries = 0
        self.resumed_from = 0

    def _fit_encoding(
        self, columns: GANColumns, counts: np.ndarray, encoder_seed: int
    ) -> None:
        """Fit the column encoding and the conditioned column's levels; set the
        training rows the batches draw from (encoded, or their dequantization
        bounds)."""
        config = self.config
        # The encoding is fitted on the classes the batches draw from (with
        # fraud_fraction 1.0: the frauds alone).
        drawn = batch_composition(
            counts, config.fraud_fraction, config.batch_size, self.fraud_labels
        )
        self.encoder = ColumnEncoder(
            config.encoding,
            mode_columns=columns.mode,
            random_state=encoder_seed,
            categorical=columns.categorical,
            integer=columns.integer,
            condition=columns.condition,
        ).fit(self.X[np.isin(self.y, np.flatnonzero(drawn > 0))])
        self.conditions = (
            None
            if columns.condition is None
            else Conditions.fit(columns.condition, self.X, self.y)
        )
        self.dequantize = None
        if config.encoding == "quantile" and config.dequantize:
            low, high = self.encoder.cdf_bounds(self.X)
            fixed = self.encoder.fixed_rows(self.X)
            self.dequantize = (low, high, self.encoder.uniform_clip())
            if fixed is not None:
                self.dequantize += (fixed,)
        self.X_encoded = None if self.dequantize else self.encoder.training_rows(self.X)

    def _build_networks(self, seeds: np.ndarray) -> None:
        """Build the generator (and its moving average), the critic and the
        :class:`ConditionalWGANGP` around them, in that order (the order their
        weights are created in)."""
        config = self.config
        n_features = self.encoder.n_encoded
        n_levels = 0 if self.conditions is None else len(self.conditions.levels)
        common = {
            # The condition: the one-hot class, then the conditioned category.
            "n_classes": self.n_classes + n_levels,
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

    def _compile(self) -> None:
        """Compile the GAN with its two Adam optimizers; refuse an XLA that Keras
        turned off."""
        config = self.config
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
            "schema_version": STATE_VERSION,
            "step": self.step,
            "fingerprint": fingerprint,
            "random_state": self.random_state,
            "config": self.config.model_dump(mode="json"),
            "history": self.history,
            "selection": self.selector.records,
            "best": None
            if self.selector.best is None
            else {k: v for k, v in self.selector.best.items() if k != "weights"},
            "recoveries": self.recoveries,
            "learning_rates": [
                float(o.learning_rate.numpy()) for o in self._optimizers
            ],
        }

    def save_checkpoint(self, directory: Path, fingerprint: str) -> None:
        best = self.selector.best
        write_checkpoint(
            directory,
            self._snapshot(),
            None if best is None else best["weights"],
            self._state(fingerprint),
        )

    def try_resume(self, directory: Path, fingerprint: str) -> bool:
        state = read_checkpoint_state(directory)
        if state is None:
            return False
        same = (
            state.get("schema_version") == STATE_VERSION
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
        self._restore(load_arrays(directory / CHECKPOINT_ARRAYS))
        self.step = int(state["step"])
        self.history = list(state["history"])
        self.selector.records = list(state["selection"])
        self.recoveries = int(state["recoveries"])
        for optimizer, rate in zip(
            self._optimizers, state["learning_rates"], strict=True
        ):
            optimizer.learning_rate.assign(rate)
        if state.get("best") is not None:
            self.selector.best = {
                **state["best"],
                "weights": load_arrays(directory / BEST_ARRAYS),
            }
        self.resumed_from = self.step
        logger.info("resuming GAN training from the checkpoint at step %d", self.step)
        return True

    # -- the loop ---------------------------------------------------------------

    def _candidates(self) -> dict[str, keras.Model]:
        """The networks model selection scores: the generator and its moving
        average (when kept)."""
        candidates = {"generator": self.generator}
        if self.ema_generator is not None:
            candidates["ema"] = self.ema_generator
        return candidates

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
                    fraud_labels=self.fraud_labels,
                    dequantize=self.dequantize,
                    condition=None
                    if self.conditions is None
                    else (
                        self.conditions.index_of(self.X),
                        len(self.conditions.levels),
                    ),
                )
                self.gan.max_consecutive_nonfinite.assign(0)
                out = self.gan.fit(
                    dataset,
                    epochs=1,
                    steps_per_epoch=n,
                    verbose=0,
                    shuffle=False,
                    callbacks=[_StopWhenAsked()],
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
                    self.selector.check(self.step, self._candidates(), validation)
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
        if self.selector.best is not None:
            self.generator.set_weights(self.selector.best["weights"])

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


class _StopWhenAsked(keras.callbacks.Callback):
    """A stop (SIGTERM, Ctrl-C) asked for ends training at the next step, even
    where its exception was swallowed inside TensorFlow
    (:mod:`pipeline.core.interrupts`). At a batch's beginning, which has no logs
    to fetch from the device: the steps are not synchronised by it."""

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        interrupts.check()


def train_cwgan_gp(
    X: np.ndarray,
    y: np.ndarray,
    config: GANConfig,
    *,
    random_state: int,
    validation: np.ndarray | None = None,
    checkpoint_dir: str | Path | None = None,
    log_every: int | None = None,
    fraud_labels: list[int] | None = None,
    columns: GANColumns | None = None,
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
    fraud_labels : list of int, optional
        The classes that will be generated (default: the rarest class); they get
        ``config.fraud_fraction`` of every batch.
    columns : GANColumns, optional
        Which columns are categorical codes, integers, the condition and the
        mode-specific columns (default: every column numeric).

    Raises
    ------
    DataValidationError
        Fewer training frauds than ``config.min_fraud_rows``.
    TrainingError
        Non-finite steps persisted after one recovery.
    """
    X = np.asarray(X)
    y = np.asarray(y).astype(np.int64)
    n_fraud = _checked_frauds(y, config)
    fingerprint = data_fingerprint(X, y)
    log_every, eval_every = _intervals(config, log_every)
    trainer = _Trainer(X, y, config, random_state, fraud_labels, columns)
    checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
    if checkpoint_dir is not None:
        trainer.try_resume(checkpoint_dir, fingerprint)
    device = describe_device()
    _log_start(trainer, len(y), n_fraud)
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
    meta = _meta(trainer, len(y), n_fraud, device=device, seconds=seconds)
    return _trained_gan(trainer, X, y, fingerprint, meta)


def _checked_frauds(y: np.ndarray, config: GANConfig) -> int:
    """The fraud (rarest class) rows in ``y``; at least ``config.min_fraud_rows``
    or :class:`DataValidationError`."""
    n_fraud = int(np.bincount(y).min()) if len(y) else 0
    if n_fraud < config.min_fraud_rows:
        raise DataValidationError(
            f"only {n_fraud} fraud rows in the GAN's training data; need at least "
            f"{config.min_fraud_rows} (gan.min_fraud_rows)"
        )
    return n_fraud


def _intervals(config: GANConfig, log_every: int | None) -> tuple[int, int]:
    """Steps between progress lines, and between checks (model selection and
    checkpoints): whole chunks of the former."""
    log_every = max(1, min(log_every or config.steps // 40, config.steps))
    eval_every = config.eval_every or max(log_every, config.steps // 10)
    # Checks happen at chunk ends, so round the interval to whole chunks.
    eval_every = max(log_every, eval_every // log_every * log_every)
    return log_every, eval_every


def _log_start(trainer: _Trainer, n_rows: int, n_fraud: int) -> None:
    """Log what the training is about to run: rows, steps, batches, precision."""
    config = trainer.config
    logger.info(
        "training cWGAN-GP: %d rows (%d frauds), steps %d..%d of %d x %d, %s%s",
        n_rows,
        n_fraud,
        trainer.step,
        config.steps,
        config.n_critic,
        config.batch_size,
        config.precision,
        ", XLA" if config.jit_compile else "",
    )


def _meta(
    trainer: _Trainer, n_rows: int, n_fraud: int, *, device: str, seconds: float
) -> dict[str, Any]:
    """What the trained GAN says of its training (its ``meta``)."""
    config = trainer.config
    best = trainer.selector.best or {}
    return {
        "device": device,
        "train_seconds": round(seconds, 3),
        "steps": config.steps,
        "resumed_from_step": trainer.resumed_from,
        "train_rows": int(n_rows),
        "train_frauds": n_fraud,
        "nonfinite_steps": int(trainer.gan.nonfinite_steps.numpy()),
        "recoveries": trainer.recoveries,
        "selected_step": best.get("step", config.steps),
        "selected_weights": best.get("weights_of", "generator"),
        "selection": trainer.selector.records,
        "encoding": config.encoding,
        "temperature": config.temperature,
        "filter": config.filter,
        "filter_share": config.filter_share,
        "filter_label": trainer.fraud_label,
        "random_state": trainer.random_state,
        "config": config.model_dump(mode="json"),
    }


def _trained_gan(
    trainer: _Trainer,
    X: np.ndarray,
    y: np.ndarray,
    fingerprint: str,
    meta: dict[str, Any],
) -> TrainedGAN:
    """The trained generator as a :class:`TrainedGAN`, with its filter (the critic,
    or a classifier fitted on the training frauds) when the config asks for one."""
    config = trainer.config
    trained = TrainedGAN(
        generator=trainer.generator,
        latent_dim=config.latent_dim,
        n_features=X.shape[1],
        fingerprint=fingerprint,
        history=trainer.history,
        encoder=trainer.encoder,
        conditions=trainer.conditions,
        meta=meta,
    )
    if config.filter == "critic":
        trained.filter_model = trainer.critic
    elif config.filter == "classifier":
        trained.filter_model = fit_filter_classifier(
            trained,
            X[y == trainer.fraud_label],
            trainer.fraud_label,
            trainer.select_seed,
        )
    return trained
