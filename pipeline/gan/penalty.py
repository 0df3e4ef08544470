"""The gradient penalty, with a norm whose gradient is finite at zero.

``tf.norm`` (and ``keras.ops.norm`` on TensorFlow) differentiates ``sqrt(sum(g**2))``
as ``g / norm``, which is 0/0 = NaN when a row's gradient is exactly zero. In a
WGAN-GP that happens whenever an interpolated row lands where the critic is flat
(dead units, a saturated output), and one NaN then poisons every critic weight
through the optimizer. :func:`safe_norm` puts a small epsilon inside the square root.
"""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops


def safe_norm(x, axis: int = -1, epsilon: float = 1e-12):
    """Euclidean norm along ``axis`` whose gradient is finite everywhere.

    Computed in float32 whatever the input dtype: under mixed precision an epsilon
    of 1e-12 underflows to zero in float16 and the NaN comes back.

    Parameters
    ----------
    x : tensor of shape (n_samples, n_features)
    axis : int
        Axis to reduce; the default gives one norm per row.
    epsilon : float
        Added to the sum of squares inside the square root.

    Returns
    -------
    tensor of shape (n_samples,), float32
    """
    x = ops.cast(x, "float32")
    return ops.sqrt(ops.sum(ops.square(x), axis=axis) + epsilon)


def gradient_penalty(
    critic: keras.Model,
    real,
    fake,
    labels,
    *,
    seed: keras.random.SeedGenerator | int | None = None,
    epsilon: float = 1e-12,
):
    """WGAN-GP penalty ``mean((||grad critic(x_hat)|| - 1)**2)``.

    ``x_hat`` interpolates each real row with a fake row using one weight per row
    drawn from U(0, 1) (not a normal, as in the Keras example), and the norm is taken
    per row (not over the whole batch, as in ydata-synthetic).

    Parameters
    ----------
    critic : keras.Model
        Called as ``critic([x, labels])``.
    real, fake : tensor of shape (n_samples, n_features)
    labels : tensor of shape (n_samples, n_classes)
        The condition, one-hot.
    seed : SeedGenerator or int, optional
        For the interpolation weights.
    epsilon : float
        See :func:`safe_norm`.

    Returns
    -------
    scalar tensor, float32
    """
    real = ops.cast(real, "float32")
    fake = ops.cast(fake, "float32")
    alpha = keras.random.uniform((ops.shape(real)[0], 1), seed=seed, dtype="float32")
    interpolated = real + alpha * (fake - real)
    with tf.GradientTape() as tape:
        tape.watch(interpolated)
        score = critic([interpolated, labels], training=True)
    grads = tape.gradient(score, interpolated)
    norms = safe_norm(grads, axis=-1, epsilon=epsilon)
    return ops.mean(ops.square(norms - 1.0))
