"""A run, planned before any stage works: its configuration (the profile and
its overrides, :func:`pipeline.core.config.build_config`, which checks shapes
only, with the methods it compares named against the method registry — the
built-in ones by default, the quick ones for the ``smoke`` profile), its
table's schema, its output folders and its tracking store, each checked
(:func:`preflight`). The command line and the flow plan a run the same way."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from pipeline.core.config import PipelineConfig, build_config
from pipeline.core.errors import ConfigError
from pipeline.core.paths import OUTPUT_ROOT_ENV, check_output_paths, check_writable
from pipeline.data.schema import TableSchema, load_schema
from pipeline.registry import tracking
from pipeline.resampling import registry


@dataclass(frozen=True)
class RunPlan:
    """A run's checked plan (:func:`preflight`).

    Attributes
    ----------
    config : PipelineConfig
        Its methods named (:func:`with_methods`).
    schema : TableSchema
        The table's schema, checked against the config.
    reports_dir : str
    tracking_uri : str
        The MLflow store, resolved and reachable.
    """

    config: PipelineConfig
    schema: TableSchema
    reports_dir: str
    tracking_uri: str


def preflight(
    *,
    profile: str,
    seed: int | None,
    overrides: dict[str, Any] | None,
    schema_path: str | None,
    reports_dir: str,
    tracking_uri: str | None,
) -> RunPlan:
    """Everything a run can be refused for before it reads its data: the
    config (:func:`load_config`), the schema and the config together, the
    output folders (writable, and inside the output root a served deployment
    set: :func:`pipeline.core.paths.check_output_paths`) and the tracking
    store (:func:`pipeline.registry.tracking.check_tracking_uri`). No stage
    work: nothing is read but the schema file, nothing is written.

    Raises
    ------
    ConfigError
        With one line naming what is wrong (a schema file's own errors are
        :class:`~pipeline.core.errors.SchemaError`).
    """
    config = load_config(profile, seed=seed, overrides=overrides)
    schema = load_schema(schema_path)
    schema.check_config(config)
    check_output_paths(
        os.environ.get(OUTPUT_ROOT_ENV),
        reports_dir=reports_dir,
        cache_dir=config.data.cache_dir,
    )
    check_writable(reports_dir, "reports")
    check_writable(config.data.cache_dir, "cache")
    uri = tracking.resolve_tracking_uri(tracking_uri)
    tracking.check_tracking_uri(uri)
    return RunPlan(config, schema, reports_dir, uri)


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
