"""``ConditionalWGANGP``: a ``keras.Model`` with ``compile``/``train_step`` and
metric trackers, following the Keras 3 guide on custom training steps."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from pipeline.gan.penalty import gradient_penalty


class ConditionalWGANGP(keras.Model):
    """Conditional Wasserstein GAN with gradient penalty.

    Each batch handed to :meth:`train_step` holds ``n_critic`` critic batches stacked
    along the first axis: ``(x, condition)`` with ``x`` of shape
    ``(n_critic * batch_size, n_features)``. The critic is updated once on each, then
    the generator once, conditioned on the labels of the last critic batch.

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
        self.c_loss_tracker = keras.metrics.Mean(name="critic_loss")
        self.g_loss_tracker = keras.metrics.Mean(name="generator_loss")
        self.gp_tracker = keras.metrics.Mean(name="gradient_penalty")
        self.w_tracker = keras.metrics.Mean(name="wasserstein")

    def compile(self, g_optimizer, c_optimizer, **kwargs):
        super().compile(**kwargs)
        self.g_optimizer = g_optimizer
        self.c_optimizer = c_optimizer

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

    def _critic_step(self, x_real, condition):
        n = ops.shape(x_real)[0]
        with tf.GradientTape() as tape:
            x_fake = self.generator([self._noise(n), condition], training=True)
            real_score = ops.mean(self.critic([x_real, condition], training=True))
            fake_score = ops.mean(self.critic([x_fake, condition], training=True))
            wasserstein = ops.cast(real_score - fake_score, "float32")
            gp = gradient_penalty(
                self.critic,
                x_real,
                x_fake,
                condition,
                seed=self.seed_generator,
                epsilon=self.gp_epsilon,
            )
            loss = -wasserstein + self.gp_weight * gp
        grads = tape.gradient(loss, self.critic.trainable_weights)
        self.c_optimizer.apply_gradients(
            zip(grads, self.critic.trainable_weights, strict=True)
        )
        return loss, gp, wasserstein

    def _generator_step(self, condition):
        n = ops.shape(condition)[0]
        with tf.GradientTape() as tape:
            x_fake = self.generator([self._noise(n), condition], training=True)
            loss = -ops.mean(self.critic([x_fake, condition], training=True))
            loss = ops.cast(loss, "float32")
        grads = tape.gradient(loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(
            zip(grads, self.generator.trainable_weights, strict=True)
        )
        return loss

    def train_step(self, data):
        x, condition = data
        xs = ops.split(x, self.n_critic, axis=0)
        conditions = ops.split(condition, self.n_critic, axis=0)
        for x_real, cond in zip(xs, conditions, strict=True):
            c_loss, gp, wasserstein = self._critic_step(x_real, cond)
            self.c_loss_tracker.update_state(c_loss)
            self.gp_tracker.update_state(gp)
            self.w_tracker.update_state(wasserstein)
        g_loss = self._generator_step(conditions[-1])
        self.g_loss_tracker.update_state(g_loss)
        return {m.name: m.result() for m in self.metrics}
