"""Conditional generator and critic: MLPs with LeakyReLU, the class label as input."""

from __future__ import annotations

from collections.abc import Sequence

import keras
from keras import layers, ops


def _dense(units: int, seed: int, name: str, dtype=None) -> layers.Dense:
    return layers.Dense(
        units,
        kernel_initializer=keras.initializers.GlorotUniform(seed=seed),
        name=name,
        dtype=dtype,
    )


@keras.saving.register_keras_serializable(package="fraudaug")
class GumbelSoftmax(layers.Layer):
    """Softmax over one categorical block; while training with Gumbel noise at
    temperature ``tau`` (CTGAN's 0.2), so generated blocks look like the real rows'
    one-hot vectors. At inference it gives the plain probabilities, from which the
    encoder draws the category with a seeded generator (so rows stay reproducible).
    """

    def __init__(self, tau: float = 0.2, seed: int | None = None, **kwargs):
        super().__init__(**kwargs)
        self.tau = tau
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, logits, training=False):
        if not training:
            return ops.softmax(logits, axis=-1)
        u = keras.random.uniform(
            ops.shape(logits), minval=1e-10, maxval=1.0, seed=self.seed_generator
        )
        gumbel = -ops.log(-ops.log(u))
        return ops.softmax((logits + gumbel) / self.tau, axis=-1)

    def get_config(self):
        return {**super().get_config(), "tau": self.tau, "seed": self.seed}


def _output_heads(h, n_features, layout, seed, names="row"):
    """The generator's output: one linear layer, or one head per segment of the
    encoder's layout (``linear``, ``tanh`` or ``softmax`` blocks), concatenated."""
    if not layout:
        return _dense(n_features, seed, names, "float32")(h)
    heads = []
    for i, (kind, width) in enumerate(layout):
        out = _dense(width, seed + i, f"{names}_{i}_{kind}", "float32")(h)
        if kind == "tanh":
            out = layers.Activation("tanh", name=f"{names}_{i}_tanh_act")(out)
        elif kind == "softmax" and width == 1:
            # A block of one (a mode or a category that is the only one): nothing
            # to choose; a softmax over one value only warns.
            out = layers.Activation("sigmoid", name=f"{names}_{i}_one")(out)
        elif kind == "softmax":
            out = GumbelSoftmax(seed=seed + 100 + i, name=f"{names}_{i}_gumbel")(out)
        heads.append(out)
    return layers.Concatenate(name=names)(heads) if len(heads) > 1 else heads[0]


def build_generator(
    n_features: int,
    *,
    latent_dim: int,
    n_classes: int = 2,
    widths: Sequence[int] = (256, 256),
    negative_slope: float = 0.2,
    seed: int = 0,
    dtype: str = "float32",
    residual: bool = False,
    output_layout: Sequence[tuple[str, int]] | None = None,
) -> keras.Model:
    """Generator ``[z, one_hot(label)] -> row`` in the GAN's space (linear output).

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
    residual : bool
        CTGAN's residual blocks: each hidden layer is Dense -> BatchNorm ->
        LeakyReLU, concatenated with its own input.
    output_layout : sequence of (kind, width), optional
        Segments of the output (see ``ColumnEncoder.output_layout``): ``linear``,
        ``tanh`` and ``softmax`` (Gumbel-softmax) heads; default one linear layer.
    """
    z = keras.Input((latent_dim,), name="z")
    condition = keras.Input((n_classes,), name="condition")
    h = layers.Concatenate(name="z_condition")([z, condition])
    for i, width in enumerate(widths):
        block = _dense(width, seed + i, f"dense_{i}", dtype)(h)
        if residual:
            block = layers.BatchNormalization(name=f"batch_norm_{i}", dtype=dtype)(
                block
            )
        block = layers.LeakyReLU(
            negative_slope=negative_slope, name=f"leaky_{i}", dtype=dtype
        )(block)
        h = layers.Concatenate(name=f"residual_{i}")([block, h]) if residual else block
    out = _output_heads(h, n_features, output_layout, seed + len(widths))
    return keras.Model([z, condition], out, name="generator")


def build_critic(
    n_features: int,
    *,
    n_classes: int = 2,
    widths: Sequence[int] = (256, 256),
    negative_slope: float = 0.2,
    seed: int = 0,
    dtype: str = "float32",
    dropout: float = 0.0,
    pac: int = 1,
) -> keras.Model:
    """Critic ``[rows, one_hot(labels)] -> score`` (no BatchNorm: it breaks the GP,
    which assumes each row's score depends on that row alone).

    ``dropout`` after each hidden layer (CTGAN's critic uses 0.5); ``pac`` rows are
    judged together (PacGAN): the inputs are ``pac`` rows and labels side by side.
    """
    x = keras.Input((n_features * pac,), name="row")
    condition = keras.Input((n_classes * pac,), name="condition")
    h = layers.Concatenate(name="row_condition")([x, condition])
    for i, width in enumerate(widths):
        h = _dense(width, seed + 1000 + i, f"dense_{i}", dtype)(h)
        h = layers.LeakyReLU(
            negative_slope=negative_slope, name=f"leaky_{i}", dtype=dtype
        )(h)
        if dropout > 0:
            h = layers.Dropout(
                dropout, seed=seed + 2000 + i, name=f"dropout_{i}", dtype=dtype
            )(h)
    out = _dense(1, seed + 1000 + len(widths), "score", "float32")(h)
    return keras.Model([x, condition], out, name="critic")
