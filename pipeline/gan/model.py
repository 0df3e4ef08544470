"""``ConditionalWGANGP``: a ``keras.Model`` with ``compile``/``train_step`` and
metric trackers, following the Keras 3 guide on custom training steps."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from pipeline.gan.penalty import gradient_penalty


class ConditionalWGANGP(keras.Model):
    """Conditional Wasserstein GAN with gradient penalty and a non-finite guard.

    Each batch handed to :meth:`train_step` holds ``n_critic`` critic batches stacked
    along the first axis: ``(x, condition)`` with ``x`` of shape
    ``(n_critic * batch_size, n_features)``. The critic is updated once on each, then
    the generator once, conditioned on the labels of the last critic batch.

    An update whose loss or gradients are not finite is not applied (the weights and
    the optimizer state stay untouched) and is counted in ``nonfinite_steps``;
    ``consecutive_nonfinite`` counts train steps in a row with such an update, and
    ``max_consecutive_nonfinite`` the longest such run since the last reset.

    Parameters
    ----------
    generator, critic : keras.Model
        From :func:`~pipeline.gan.networks.build_generator` / ``build_critic``.
    latent_dim : int
        Width of the generator's noise input.
    n_critic : int
        Critic updates per generator update.
    gp_weight : float
        Weight of the gradient penalty (lambda).
    gp_epsilon : float
        Epsilon inside the penalty's square root.
    seed : int
        Seeds the noise and interpolation weights (a ``SeedGenerator``).
    pac : int
        PacGAN packing: the critic judges ``pac`` rows at once (concatenated), so
        a generator that collapses onto few modes is easier to catch. Batches must
        be a multiple of ``pac``; the critic's input is ``pac`` rows wide.
    ema_generator : keras.Model, optional
        Same architecture as ``generator``; after every applied generator update
        its weights move to ``decay * ema + (1 - decay) * weights`` (an exponential
        moving average of the generator, with the warm-up
        ``decay_t = min(ema_decay, (1 + t) / (10 + t))`` so that early weights
        fade out fast).
    ema_decay : float
        See ``ema_generator``.
    """

    def __init__(
        self,
        generator: keras.Model,
        critic: keras.Model,
        *,
        latent_dim: int,
        n_critic: int = 5,
        gp_weight: float = 10.0,
        gp_epsilon: float = 1e-12,
        seed: int = 0,
        pac: int = 1,
        ema_generator: keras.Model | None = None,
        ema_decay: float = 0.999,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.generator = generator
        self.critic = critic
        self.latent_dim = latent_dim
        self.n_critic = n_critic
        self.gp_weight = gp_weight
        self.gp_epsilon = gp_epsilon
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.pac = pac
        self.ema_generator = ema_generator
        self.ema_decay = ema_decay
        self.generator_updates = tf.Variable(
            0, name="generator_updates", dtype="int64", trainable=False
        )
        self.c_loss_tracker = keras.metrics.Mean(name="critic_loss")
        self.g_loss_tracker = keras.metrics.Mean(name="generator_loss")
        self.gp_tracker = keras.metrics.Mean(name="gradient_penalty")
        self.w_tracker = keras.metrics.Mean(name="wasserstein")
        counter = {"dtype": "int64", "trainable": False}
        self.nonfinite_steps = tf.Variable(0, name="nonfinite_steps", **counter)
        self.consecutive_nonfinite = tf.Variable(0, name="consecutive", **counter)
        self.max_consecutive_nonfinite = tf.Variable(0, name="max_consec", **counter)

    def compile(self, g_optimizer, c_optimizer, **kwargs):
        super().compile(**kwargs)
        self.g_optimizer = g_optimizer
        self.c_optimizer = c_optimizer
        # Built up front: the guard applies updates inside tf.cond, where an
        # optimizer must not create its slot variables.
        g_optimizer.build(self.generator.trainable_variables)
        c_optimizer.build(self.critic.trainable_variables)

    @property
    def metrics(self):
        return [
            self.c_loss_tracker,
            self.g_loss_tracker,
            self.gp_tracker,
            self.w_tracker,
        ]

    def call(self, inputs, training=False):
        return self.generator(inputs, training=training)

    def _noise(self, n):
        return keras.random.normal((n, self.latent_dim), seed=self.seed_generator)

    @staticmethod
    def _apply_if_finite(optimizer, loss, grads, variables):
        finite = tf.math.is_finite(loss)
        for grad in grads:
            if grad is not None:
                finite = tf.logical_and(finite, tf.reduce_all(tf.math.is_finite(grad)))

        def apply():
            optimizer.apply_gradients(zip(grads, variables, strict=True))
            return tf.constant(True)

        return tf.cond(finite, apply, lambda: tf.constant(False))

    def _pack(self, x):
        """``(n, d)`` -> ``(n / pac, pac * d)``: ``pac`` rows side by side."""
        if self.pac == 1:
            return x
        return ops.reshape(x, (-1, self.pac * ops.shape(x)[-1]))

    def _critic_step(self, x_real, condition):
        n = ops.shape(x_real)[0]
        with tf.GradientTape() as tape:
            x_fake = self.generator([self._noise(n), condition], training=True)
            packed_real = self._pack(x_real)
            packed_fake = self._pack(x_fake)
            packed_condition = self._pack(condition)
            real_score = ops.mean(
                self.critic([packed_real, packed_condition], training=True)
            )
            fake_score = ops.mean(
                self.critic([packed_fake, packed_condition], training=True)
            )
            wasserstein = ops.cast(real_score - fake_score, "float32")
            gp = gradient_penalty(
                self.critic,
                packed_real,
                packed_fake,
                packed_condition,
                seed=self.seed_generator,
                epsilon=self.gp_epsilon,
            )
            loss = -wasserstein + self.gp_weight * gp
        grads = tape.gradient(loss, self.critic.trainable_weights)
        applied = self._apply_if_finite(
            self.c_optimizer, loss, grads, self.critic.trainable_weights
        )
        return loss, gp, wasserstein, applied

    def _generator_step(self, condition):
        n = ops.shape(condition)[0]
        with tf.GradientTape() as tape:
            x_fake = self.generator([self._noise(n), condition], training=True)
            score = self.critic(
                [self._pack(x_fake), self._pack(condition)], training=True
            )
            loss = ops.cast(-ops.mean(score), "float32")
        grads = tape.gradient(loss, self.generator.trainable_weights)
        applied = self._apply_if_finite(
            self.g_optimizer, loss, grads, self.generator.trainable_weights
        )
        if self.ema_generator is not None:
            tf.cond(applied, self._update_ema, lambda: tf.constant(False))
        return loss, applied

    def _update_ema(self):
        self.generator_updates.assign_add(1)
        t = ops.cast(self.generator_updates, "float32")
        decay = ops.minimum(self.ema_decay, (1.0 + t) / (10.0 + t))
        for average, current in zip(
            self.ema_generator.weights, self.generator.weights, strict=True
        ):
            if current.trainable:
                average.assign(decay * average + (1.0 - decay) * current)
            else:  # e.g. BatchNormalization's moving statistics
                average.assign(current)
        return tf.constant(True)

    @staticmethod
    def _track(tracker, value, applied):
        # A skipped update's NaN must not poison the running mean.
        weight = tf.cast(applied, "float32")
        tracker.update_state(tf.where(applied, value, 0.0), sample_weight=weight)

    def train_step(self, data):
        x, condition = data
        xs = ops.split(x, self.n_critic, axis=0)
        conditions = ops.split(condition, self.n_critic, axis=0)
        all_applied = tf.constant(True)
        for x_real, cond in zip(xs, conditions, strict=True):
            c_loss, gp, wasserstein, applied = self._critic_step(x_real, cond)
            all_applied = tf.logical_and(all_applied, applied)
            self._track(self.c_loss_tracker, c_loss, applied)
            self._track(self.gp_tracker, gp, applied)
            self._track(self.w_tracker, wasserstein, applied)
        g_loss, applied = self._generator_step(conditions[-1])
        all_applied = tf.logical_and(all_applied, applied)
        self._track(self.g_loss_tracker, g_loss, applied)
        bad = 1 - tf.cast(all_applied, "int64")
        self.nonfinite_steps.assign_add(bad)
        self.consecutive_nonfinite.assign((self.consecutive_nonfinite + 1) * bad)
        self.max_consecutive_nonfinite.assign(
            tf.maximum(self.max_consecutive_nonfinite, self.consecutive_nonfinite)
        )
        return {m.name: m.result() for m in self.metrics}
