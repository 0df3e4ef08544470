"""``metrics.json``: every figure of a run, built from its fits and summaries.

:func:`build_metrics` is a pure function of what the stages returned (no file is
read or written); :func:`pipeline.run.conclude.stage_metrics` gathers its inputs.
"""

from __future__ import annotations

from typing import Any

from pipeline.core.config import PipelineConfig
from pipeline.data.schema import TableSchema
from pipeline.evaluation.comparison import compare_methods, random_split_reference
from pipeline.evaluation.correlation import HEURISTIC, resolve_rho
from pipeline.evaluation.fidelity import summarise_fidelity
from pipeline.evaluation.metrics import summarise
from pipeline.evaluation.records import ChallengerChoice
from pipeline.evaluation.selection import choose_challenger
from pipeline.evaluation.topk import summarise_top_k

SCHEMA_VERSION = 2
"""2: comparisons corrected for shared training rows, with ROPE probabilities
and decisions (``ci95_corrected``, ``p_better``, ``decision``, …)."""


def gan_summary(gans: list[dict[str, Any]]) -> dict[str, Any]:
    """The GANs of every split, their non-finite steps and the device."""
    return {
        "splits": sorted(gans, key=lambda g: g["split"]),
        "nonfinite_steps": sum(int(g.get("nonfinite_steps") or 0) for g in gans),
        "device": gans[0]["device"] if gans else None,
    }


def sampling_summary(
    fits: list[dict[str, Any]], max_train_rows: int | None
) -> dict[str, Any]:
    """What the training-row budget sampled on each split (every method of a
    split reads the same rows): ``max_train_rows``, ``sampled`` (any split was),
    ``splits`` (per split ``train`` and ``validation``: ``rows_before``,
    ``rows_after``, ``legit_before``, ``legit_after``, ``share``; ``None`` where
    the rows fit in the budget)."""
    per_split = {f["split"]: f.get("sampled") for f in fits}
    return {
        "max_train_rows": max_train_rows,
        "sampled": any(v is not None for v in per_split.values()),
        "splits": [{"split": k, "rows": per_split[k]} for k in sorted(per_split)],
    }


MONITOR_KIND = "monitor"
"""``metrics.json`` -> ``kind`` of a night with nothing new: the champion was
monitored and nothing retrained (:func:`build_monitor_metrics`)."""


def build_monitor_metrics(
    *,
    run: dict[str, Any],
    data: dict[str, Any],
    config: PipelineConfig,
    schema: TableSchema,
    monitoring: dict[str, Any] | None,
    environment: dict[str, Any],
) -> dict[str, Any]:
    """The ``metrics.json`` of a night whose source has nothing new since the
    previous run (``data["changes"]``): the same run fields as
    :func:`build_metrics`, ``kind`` :data:`MONITOR_KIND`, ``status``
    ``no_new_data``, the champion's ``monitoring``, and no methods or results."""
    previous = data["changes"]["previous_run"]
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run["run_id"],
        "kind": MONITOR_KIND,
        "started_at": run["started_at"],
        "finished_at": run["finished_at"],
        "duration_seconds": run["duration_seconds"],
        "status": "no_new_data",
        "failures": [],
        "profile": config.profile,
        "seed": config.seed,
        "data": {k: v for k, v in data.items() if k != "frame_path"},
        "schema": schema.to_dict(),
        "methods": [],
        "n_splits": 0,
        "primary_metric": config.evaluation.primary_metric,
        "results": [],
        "summary": [],
        "comparison": {
            "headline": f"No new data since run {previous}: the champion was "
            "monitored, nothing was retrained."
        },
        "monitoring": monitoring,
        "config": config.model_dump(mode="json"),
        "environment": environment,
    }


def build_metrics(
    *,
    run: dict[str, Any],
    data: dict[str, Any],
    config: PipelineConfig,
    schema: TableSchema,
    fits: list[dict[str, Any]],
    amount_choice: dict[str, Any],
    failures: list[dict[str, Any]] | None = None,
    gans: list[dict[str, Any]],
    fidelity: list[dict[str, Any]],
    drift: dict[str, Any],
    monitoring: dict[str, Any] | None,
    folds: list[dict[str, Any]] | None,
    cached_stages: list[str],
    environment: dict[str, Any],
    methods: list[dict[str, Any]],
    roles: dict[str, Any],
    random_split_run: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The run's ``metrics.json`` (without the registry decision and the MLflow
    run, added when they exist).

    ``run``: ``run_id``, ``started_at``, ``finished_at``, ``duration_seconds``;
    ``data``: the ingest summary; ``fits``: one record per method and split at
    its chosen amount (:func:`pipeline.evaluation.amounts.choose_amounts`), in any
    order;
    ``random_split_run``: out of time, the newest random-split run on the same
    data, whose figures are quoted beside (``None``: none was run);
    ``methods``: each compared method's description
    (:meth:`pipeline.resampling.registry.Method.describe`: family, complexity,
    source — a plugin's distribution and version —, summary); the challenger is
    chosen on validation rows by their complexity
    (:func:`pipeline.evaluation.selection.choose_challenger`: ``selection``);
    ``roles``: the comparison's
    (:func:`pipeline.evaluation.comparison.compare_methods`);
    ``failures``: the fits that failed
    (:func:`pipeline.evaluation.amounts.separate_failures`): ``status`` is
    ``completed_with_failures`` when there is one, else ``completed``.
    """
    order = {m: i for i, m in enumerate(config.evaluation.methods)}
    fits = sorted(fits, key=lambda r: (order.get(r["method"], 99), r["split"]))
    selection, comparison = _challenger_and_comparison(fits, config, methods, roles)
    metrics = {
        **_run_fields(run, data, config, schema, failures),
        "methods": list(config.evaluation.methods),
        "n_splits": config.split.n_splits,
        "folds": folds,
        "sampling": sampling_summary(fits, config.sampling.max_train_rows),
        "primary_metric": config.evaluation.primary_metric,
        "results": fits,
        "summary": summarise(fits),
        "method_details": methods,
        "comparison": comparison,
        "selection": selection.to_json() if selection is not None else None,
        "precision_top_k": summarise_top_k(
            fits, config.evaluation.alerts_per_day, schema
        ),
        "amount_choice": amount_choice,
        "gan": gan_summary(gans),
        "fidelity": summarise_fidelity(sorted(fidelity, key=lambda f: f["split"])),
        "drift": drift,
        "monitoring": monitoring,
        "cached_stages": list(cached_stages),
        "config": config.model_dump(mode="json"),
        "environment": environment,
    }
    if config.split.mode == "rolling":
        # How much a random split of the same data flatters the same methods.
        metrics["random_split_reference"] = random_split_reference(random_split_run)
    return metrics


def _run_fields(
    run: dict[str, Any],
    data: dict[str, Any],
    config: PipelineConfig,
    schema: TableSchema,
    failures: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    """The run's own fields of its ``metrics.json``, from ``schema_version`` to
    ``schema``: its id and times, status and failures, profile, seed, data."""
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run["run_id"],
        "started_at": run["started_at"],
        "finished_at": run["finished_at"],
        "duration_seconds": run["duration_seconds"],
        "status": "completed_with_failures" if failures else "completed",
        "failures": list(failures or []),
        "profile": config.profile,
        "seed": config.seed,
        "data": {k: v for k, v in data.items() if k != "frame_path"},
        "schema": schema.to_dict(),
    }


def _challenger_and_comparison(
    fits: list[dict[str, Any]],
    config: PipelineConfig,
    methods: list[dict[str, Any]],
    roles: dict[str, Any],
) -> tuple[ChallengerChoice | None, dict[str, Any]]:
    """The challenger chosen on validation rows by the methods' complexity
    (:func:`~pipeline.evaluation.selection.choose_challenger`) and the methods'
    comparison (:func:`~pipeline.evaluation.comparison.compare_methods`), both
    at the run's ``rho`` and the primary metric's ROPE."""
    primary = config.evaluation.primary_metric
    rope = config.evaluation.primary_rope()
    rho, rho_source = resolve_rho(
        config.evaluation.correlation, fits, config.split.mode
    )
    unit = "fold" if config.split.mode == "rolling" else "split"
    selection = choose_challenger(
        fits, {d["name"]: d["complexity"] for d in methods}, primary, rope, unit, rho
    )
    comparison = compare_methods(
        fits,
        roles,
        primary,
        rope=rope,
        unit=unit,
        rho=rho,
        rho_source=rho_source,
        heuristic_rho=resolve_rho(HEURISTIC, fits, config.split.mode)[0],
    )
    return selection, comparison


def is_random_split_of(
    run: dict[str, Any], data_sha256: str, schema: dict[str, Any]
) -> bool:
    """``run`` (a ``metrics.json``) is a random-split run of the same data read by
    the same schema."""
    return (
        run.get("kind") != MONITOR_KIND
        and run.get("data", {}).get("sha256") == data_sha256
        and run.get("config", {}).get("split", {}).get("mode") == "stratified"
        and run.get("schema") == schema
    )
