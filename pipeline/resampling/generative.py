"""Generative models: new fraud rows drawn from a model trained once per split on
the training frauds (fraudaug's conditional WGAN-GP, :mod:`pipeline.gan`; a
team's own generator arrives as a plugin, :mod:`pipeline.resampling.plugins`).
Every amount draws from the split's model, and its rows' fidelity is measured."""

from __future__ import annotations

from pipeline.resampling.method import BuildContext, Complexity, Method


def cwgan_gp(context: BuildContext):
    """The split's GAN (``gan_dir``: fitted once per split and checked against the
    training rows), or one trained here."""
    from pipeline.gan.sampler import GANOverSampler  # imports TensorFlow

    return GANOverSampler(
        sampling_strategy=context.minority_strategy,
        random_state=context.random_state,
        gan_params=context.gan.model_dump() if context.gan else None,
        pretrained=context.gan_dir,
    )


METHODS = (
    Method(
        name="cwgan_gp",
        family="generative",
        complexity=Complexity.GENERATOR,
        summary="fraudaug's conditional WGAN-GP, trained on the split's training "
        "frauds (the product's question)",
        build=cwgan_gp,
        uses_gan=True,
        role="question",
    ),
)
