"""A run's configuration, planned: the profile and its overrides
(:func:`pipeline.core.config.build_config`, which checks shapes only) with the
methods it compares named against the method registry
(:mod:`pipeline.resampling.registry`) — the built-in ones by default, the
quick ones for the ``smoke`` profile."""

from __future__ import annotations

from typing import Any

from pipeline.core.config import PipelineConfig, build_config
from pipeline.core.errors import ConfigError
from pipeline.resampling import registry


def load_config(
    profile: str = "default",
    *,
    seed: int | None = None,
    overrides: dict[str, Any] | None = None,
) -> PipelineConfig:
    """The configuration a run of ``profile`` uses (arguments as
    :func:`pipeline.core.config.build_config`'s), its methods planned
    (:func:`with_methods`).

    Raises
    ------
    ConfigError
        Unknown profile, unknown key, a value out of range, or a method that no
        built-in method nor installed plugin has.
    """
    return with_methods(build_config(profile, seed=seed, overrides=overrides))


def with_methods(config: PipelineConfig) -> PipelineConfig:
    """``config`` with ``evaluation.methods`` named: the ones it names, each
    known to the registry, or by default every built-in method (the ``smoke``
    profile: those the registry marks as quick)."""
    methods = config.evaluation.methods
    if methods is None:
        quick = config.profile == "smoke"
        methods = registry.smoke_names() if quick else registry.built_in_names()
    unknown = registry.unknown(methods)
    if unknown:
        raise ConfigError(
            "invalid config at evaluation.methods: unknown method(s) "
            f"{', '.join(map(repr, unknown))}; `fraudaug methods` lists the "
            "built-in ones and the installed plugins'"
        )
    evaluation = config.evaluation.model_copy(update={"methods": tuple(methods)})
    return config.model_copy(update={"evaluation": evaluation})
