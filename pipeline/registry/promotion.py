"""A run's challenger offered to the registry (:func:`record_challenger`): logged
into its MLflow run, judged against the champion on shared held-out rows
(:func:`judge`, by the rule of :mod:`pipeline.registry.champion`), registered as
a new version of ``fraudaug-detector`` with the decision as its tags; alias
``challenger`` on it, ``champion`` too if it won."""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.registry.champion import decide, never_fitted
from pipeline.registry.serving import load_detector
from pipeline.registry.store import (
    ARTIFACT_PATH,
    CHALLENGER,
    CHAMPION,
    MODEL_NAME,
    SHA_TAG,
    fetch_version,
    fitted_rows,
    save_candidate,
    version_of,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from pipeline.data.schema import TableSchema

logger = logging.getLogger(__name__)

_RETRIES = 5
"""Decisions taken again when another machine moved the champion meanwhile."""


@dataclass(frozen=True)
class HeldOut:
    """The challenger's held-out rows, where it is judged: their positions in the
    run's input (``rows``), those rows of the input (``frame``, validated by the
    schema; ``frame.iloc[i]`` is row ``rows[i]``), the challenger's ``scores`` on
    them, and the input's rows per day (``day_totals``: precision top-k's alert
    budget)."""

    rows: np.ndarray
    frame: pd.DataFrame
    scores: np.ndarray
    day_totals: dict[int, int] | None = None


@dataclass(frozen=True)
class ChampionRule:
    """The champion rule's settings: the region of practical equivalence of the
    compared ``metric`` (``evaluation.rope``), the paired bootstrap's resamples and
    seed, and precision top-k's alerts per day."""

    rope: float
    n_resamples: int
    random_state: int
    metric: str = "auprc"
    alerts_per_day: int = 100


def judge(
    champion: dict[str, Any] | None,
    *,
    method: str,
    data_sha256: str,
    schema: TableSchema,
    held_out: HeldOut,
    rule: ChampionRule,
) -> dict[str, Any]:
    """Should the challenger (``method``, on the input ``data_sha256`` read by
    ``schema``) replace ``champion`` (a
    :func:`~pipeline.registry.store.fetch_version` result, or ``None``), judged
    on its ``held_out`` rows by ``rule``? No champion yet, or one that reads
    another schema and cannot score these rows: the challenger replaces it.
    Otherwise the champion scores the rows it never saw and
    :func:`pipeline.registry.champion.decide` rules, a simpler challenger (by
    the methods' declared complexity) replacing an equivalent champion."""
    import numpy as np

    from pipeline.core.days import day_numbers
    from pipeline.core.errors import ConfigError
    from pipeline.resampling import registry

    if champion is None:
        return {
            "rope": rule.rope,
            "promoted": True,
            "reason": "no champion yet: the challenger becomes champion",
        }
    model, transformer = load_detector(champion["path"])
    if transformer.schema != schema:
        return {
            "rope": rule.rope,
            "champion": {
                k: champion[k] for k in ("version", "method", "run_id", "data_sha256")
            },
            "promoted": True,
            "reason": f"the champion (version {champion['version']}) reads the "
            f"{transformer.schema.name} schema, not this run's {schema.name} schema, "
            "and cannot score its rows: the challenger becomes champion",
        }
    scores = np.asarray(held_out.scores)
    keep = never_fitted(np.asarray(held_out.rows), fitted_rows(champion, data_sha256))
    part = held_out.frame.iloc[np.flatnonzero(keep)]
    if not keep.all():
        scores = scores[keep]
    same = champion["data_sha256"] == data_sha256
    levels = []
    for name in (method, champion["method"]):
        try:
            levels.append(int(registry.get(name).complexity))
        except ConfigError:  # a plugin no longer installed: its level is unknown
            levels.append(None)
    return decide(
        champion,
        method=method,
        y=part[schema.label.column].to_numpy(),
        challenger_scores=scores,
        champion_scores=model.predict_proba(transformer.transform(part))[:, 1]
        if len(part)
        else np.zeros(0),
        held_out="test rows of the challenger's split the champion never saw"
        if same
        else "the challenger's test rows (new data: the champion was trained on "
        "another file)",
        rope=rule.rope,
        n_resamples=rule.n_resamples,
        random_state=rule.random_state,
        metric=rule.metric,
        days=day_numbers(part[schema.time])
        if rule.metric == "precision_top_k"
        else None,
        alerts_per_day=rule.alerts_per_day,
        day_totals=held_out.day_totals,
        complexity=(levels[0], levels[1]),
    )


def champion_view(
    folder: Path,
    *,
    version: str,
    method: str,
    held_out: HeldOut,
    fitted: list[int] | None,
    random_state: int,
    view_rows: int,
) -> dict[str, Any] | None:
    """The global view of the version in ``folder`` (the champion once the
    decision is taken): what drives its scores on the ``held_out`` rows it never
    saw (not among its ``fitted`` rows; at most ``view_rows`` of them, drawn
    with ``random_state``: ``registry.view_rows``), column by column
    (:func:`pipeline.registry.reasons.global_view`); ``None`` without such rows."""
    import numpy as np

    from pipeline.registry.reasons import global_view

    keep = np.flatnonzero(never_fitted(np.asarray(held_out.rows), fitted))
    if len(keep) == 0:
        return None
    eligible = len(keep)
    if eligible > view_rows:
        rng = np.random.default_rng(random_state)
        keep = np.sort(rng.choice(keep, view_rows, replace=False))
    model, transformer = load_detector(folder)
    frame = held_out.frame.iloc[keep]
    return {
        "version": version,
        "method": method,
        "rows": len(frame),
        "held_out_rows": eligible,
        "columns": global_view(model, transformer, frame),
    }


def _version_tags(
    decision: dict[str, Any], meta: dict[str, Any], files: dict[str, str]
) -> dict[str, str]:
    tags = {
        "fraudaug.run_id": meta["run_id"],
        "fraudaug.method": meta["method"],
        "fraudaug.threshold": repr(meta["threshold"]),
        "fraudaug.data_sha256": meta["data_sha256"],
        "fraudaug.decision": "promoted" if decision["promoted"] else "kept",
        "fraudaug.reason": decision["reason"][:5000],
        "fraudaug.rope": repr(decision["rope"]),
        "fraudaug.compared_with": (decision.get("champion") or {}).get(
            "version", "none"
        ),
        **{f"fraudaug.test.{k}": repr(v) for k, v in meta["metrics"].items()},
    }
    comparison = decision.get("comparison") or {}
    for key in (
        "challenger_auprc",
        "champion_auprc",
        "diff",
        "p_better",
        "n_rows",
        "n_frauds",
    ):
        if key in comparison:
            tags[f"fraudaug.{key}"] = repr(comparison[key])
    if comparison.get("ci95"):
        tags["fraudaug.ci95_low"], tags["fraudaug.ci95_high"] = (
            repr(v) for v in comparison["ci95"]
        )
    tags.update({SHA_TAG + rel: sha for rel, sha in files.items()})
    return tags


def record_challenger(
    mlflow_run: dict[str, str],
    *,
    run_id: str,
    method: str,
    detector_path: str | Path,
    transformer_path: str | Path,
    schema: TableSchema,
    threshold: float,
    metrics: dict[str, Any],
    data_sha256: str,
    fit_rows: np.ndarray,
    held_out: HeldOut,
    rule: ChampionRule,
    view_rows: int,
) -> dict[str, Any]:
    """Log the challenger into its MLflow run (``mlflow_run``, from
    :func:`pipeline.registry.tracking.start_tracking`), decide against the champion on
    its ``held_out`` rows by ``rule`` (:func:`judge`), register it as a new version of
    ``fraudaug-detector`` with the decision as tags, point ``challenger`` at it,
    and ``champion`` too if it won. Returns the decision (also the version and
    its URI) and the champion's global view on at most ``view_rows`` of the
    held-out rows (:func:`champion_view`)."""
    from pipeline.registry.tracking import mlflow_client, store_lock

    uri = mlflow_run["uri"]
    client = mlflow_client(uri)
    meta = {
        "method": method,
        "run_id": run_id,
        "mlflow_run_id": mlflow_run["run_id"],
        "threshold": float(threshold),
        "metrics": metrics,
        "data_sha256": data_sha256,
    }
    with tempfile.TemporaryDirectory(prefix="fraudaug-registry-") as tmp:
        tmp = Path(tmp)
        with store_lock(uri):
            files = save_candidate(
                tmp / ARTIFACT_PATH,
                detector_path=detector_path,
                transformer_path=transformer_path,
                schema=schema,
                fit_rows=fit_rows,
                meta=meta,
                example=held_out.frame,
            )
            champion, decision, version = _decide_and_register(
                client, mlflow_run, tmp, meta, files, schema, held_out, rule
            )
        # The champion's global view, the store unlocked (it scores rows).
        explained = _view_of_champion(
            tmp, champion, decision, version, meta, held_out, rule, view_rows
        )
    return {
        "explained": explained,
        **decision,
        "run_id": run_id,
        "decided_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "challenger": {"method": method, "run_id": run_id, "metrics": metrics},
        "model": MODEL_NAME,
        "version": str(version.version),
        "model_uri": f"models:/{MODEL_NAME}/{version.version}",
        "aliases": [CHALLENGER, CHAMPION] if decision["promoted"] else [CHALLENGER],
    }


def _decide_and_register(
    client: Any,
    mlflow_run: dict[str, str],
    tmp: Path,
    meta: dict[str, Any],
    files: dict[str, str],
    schema: TableSchema,
    held_out: HeldOut,
    rule: ChampionRule,
) -> tuple[dict[str, Any] | None, dict[str, Any], Any]:
    """With the store locked and the candidate's files saved under ``tmp``: log
    them into the MLflow run, decide against the champion, register the version
    with the decision as tags and set its aliases. Returns the champion (as
    fetched), the decision and the new version."""
    # Complete files first; the version (with all its tags) after; aliases
    # last.
    client.log_artifacts(mlflow_run["run_id"], str(tmp / ARTIFACT_PATH), ARTIFACT_PATH)
    run_artifacts = client.get_run(mlflow_run["run_id"]).info.artifact_uri
    source = f"{run_artifacts}/{ARTIFACT_PATH}"
    champion, decision = _decide_on_current(
        client, mlflow_run["uri"], tmp, meta, schema, held_out, rule
    )
    _ensure_registered_model(client)
    version = client.create_model_version(
        MODEL_NAME,
        source,
        run_id=mlflow_run["run_id"],
        tags=_version_tags(decision, meta, files),
        description=decision["reason"],
    )
    client.set_registered_model_alias(MODEL_NAME, CHALLENGER, version.version)
    if decision["promoted"]:
        client.set_registered_model_alias(MODEL_NAME, CHAMPION, version.version)
    return champion, decision, version


def _decide_on_current(
    client: Any,
    uri: str,
    tmp: Path,
    meta: dict[str, Any],
    schema: TableSchema,
    held_out: HeldOut,
    rule: ChampionRule,
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The champion (fetched under ``tmp``) and :func:`judge`'s decision against
    it, taken again (up to :data:`_RETRIES` times) while another machine's run
    moved the champion meanwhile."""
    for attempt in range(_RETRIES):
        champion = fetch_version(uri, dst=tmp / f"champion-{attempt}")
        decision = judge(
            champion,
            method=meta["method"],
            data_sha256=meta["data_sha256"],
            schema=schema,
            held_out=held_out,
            rule=rule,
        )
        # Another machine's run may have moved the champion meanwhile.
        now = version_of(client, MODEL_NAME, alias=CHAMPION)
        if (now and str(now.version)) == (champion and champion["version"]):
            break
        logger.info("the champion changed while deciding; deciding again")
    return champion, decision


def _ensure_registered_model(client: Any) -> None:
    """Create ``fraudaug-detector`` in the registry unless it already exists."""
    from mlflow.exceptions import MlflowException

    try:
        client.create_registered_model(
            MODEL_NAME,
            description="fraudaug's fraud detector: alias champion scores, "
            "challenger is the newest candidate",
        )
    except MlflowException as exc:
        if exc.error_code != "RESOURCE_ALREADY_EXISTS":
            raise


def _view_of_champion(
    tmp: Path,
    champion: dict[str, Any] | None,
    decision: dict[str, Any],
    version: Any,
    meta: dict[str, Any],
    held_out: HeldOut,
    rule: ChampionRule,
    view_rows: int,
) -> dict[str, Any] | None:
    """:func:`champion_view` of whichever is champion once decided: the new
    ``version`` (its files under ``tmp``) if promoted, else the fetched
    ``champion`` on the held-out rows it never saw."""
    promoted = decision["promoted"]
    return champion_view(
        tmp / ARTIFACT_PATH if promoted else Path(champion["path"]),
        version=str(version.version) if promoted else champion["version"],
        method=meta["method"] if promoted else champion["method"],
        held_out=held_out,
        fitted=None if promoted else fitted_rows(champion, meta["data_sha256"]),
        random_state=rule.random_state,
        view_rows=view_rows,
    )
