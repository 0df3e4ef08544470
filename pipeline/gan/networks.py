"""Conditional generator and critic: MLPs with LeakyReLU, the class label as input."""

from __future__ import annotations

from collections.abc import Sequence

import keras
from keras import layers


def _dense(units: int, seed: int, name: str, dtype=None) -> layers.Dense:
    return layers.Dense(
        units,
        kernel_initializer=keras.initializers.GlorotUniform(seed=seed),
        name=name,
        dtype=dtype,
    )


def build_generator(
    n_features: int,
    *,
    latent_dim: int,
    n_classes: int = 2,
    widths: Sequence[int] = (256, 256),
    negative_slope: float = 0.2,
    seed: int = 0,
    dtype: str = "float32",
) -> keras.Model:
    """Generator ``[z, one_hot(label)] -> row`` in model space (linear output).

    Parameters
    ----------
    n_features : int
        Width of a generated row.
    latent_dim : int
        Width of the noise input ``z``.
    n_classes : int
        Width of the one-hot condition.
    widths : sequence of int
        Hidden layer widths (their number is the depth).
    negative_slope : float
        LeakyReLU slope.
    seed : int
        Seeds the weight initialisers (layer ``i`` uses ``seed + i``).
    dtype : str
        Dtype policy of the hidden layers (``"mixed_bfloat16"`` on a GPU); the
        output layer always computes in float32.
    """
    z = keras.Input((latent_dim,), name="z")
    condition = keras.Input((n_classes,), name="condition")
    h = layers.Concatenate(name="z_condition")([z, condition])
    for i, width in enumerate(widths):
        h = _dense(width, seed + i, f"dense_{i}", dtype)(h)
        h = layers.LeakyReLU(
            negative_slope=negative_slope, name=f"leaky_{i}", dtype=dtype
        )(h)
    out = _dense(n_features, seed + len(widths), "row", "float32")(h)
    return keras.Model([z, condition], out, name="generator")


def build_critic(
    n_features: int,
    *,
    n_classes: int = 2,
    widths: Sequence[int] = (256, 256),
    negative_slope: float = 0.2,
    seed: int = 0,
    dtype: str = "float32",
) -> keras.Model:
    """Critic ``[row, one_hot(label)] -> score`` (no BatchNorm: it breaks the GP,
    which assumes each row's score depends on that row alone)."""
    x = keras.Input((n_features,), name="row")
    condition = keras.Input((n_classes,), name="condition")
    h = layers.Concatenate(name="row_condition")([x, condition])
    for i, width in enumerate(widths):
        h = _dense(width, seed + 1000 + i, f"dense_{i}", dtype)(h)
        h = layers.LeakyReLU(
            negative_slope=negative_slope, name=f"leaky_{i}", dtype=dtype
        )(h)
    out = _dense(1, seed + 1000 + len(widths), "score", "float32")(h)
    return keras.Model([x, condition], out, name="critic")
