"""The stages that fit the detectors: one method on one split at each amount
of new rows, scored on validation and test rows; then the amount chosen on
validation rows and the chosen fits' scores kept."""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pipeline.core import interrupts, layout
from pipeline.core.artifacts import (
    atomic_path,
    load_parquet,
    load_parquet_rows,
    save_parquet,
)
from pipeline.core.config import PipelineConfig
from pipeline.core.errors import ConfigError, TrainingError, one_line
from pipeline.core.memory import release_free_memory
from pipeline.data.schema import TableSchema
from pipeline.evaluation.metrics import compute_metrics
from pipeline.evaluation.records import FitRecord, SplitFits
from pipeline.evaluation.topk import top_k_metrics
from pipeline.features.rows import SplitInputs
from pipeline.resampling.method import Method
from pipeline.resampling.plugins import PluginError

logger = logging.getLogger(__name__)


# ----------------------------------------------------------------------- detectors
def stage_fit_detector(
    inputs: SplitInputs,
    method: str,
    config: PipelineConfig,
    *,
    sampler_seed: int,
    detector_seed: int,
    scores_path: str | Path,
    gan_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Fit one method's detectors on one split, one per amount
    (:func:`~pipeline.resampling.amounts.amounts`; a method that adds no rows: one
    fit); score validation and test rows.

    Resampling touches the training rows only; the validation rows (early
    stopping, the amount choice) and test rows (metrics) stay real and untouched.
    Returns ``{"method", "split", "grid": [record, ...]}``, one full record per
    amount, each naming its scores file (``scores_path`` with the amount's index)
    and, on split 0, its saved detector, and ``"failed"`` (each amount that
    failed, with its reason); the amount is chosen later, over every split's
    records (:func:`~pipeline.evaluation.amounts.choose_amounts`).
    """
    from pipeline.resampling import registry

    spec = registry.get(method)
    data = inputs.load(train_features=_fit_workers(inputs, spec, config) == 1)
    try:
        targets, generator = _targets(spec, inputs, data, config, sampler_seed)
    except (ConfigError, PluginError) as exc:
        # This split's rows leave the method nothing to do, or its plugin's
        # generator cannot be trained: every amount fails with that reason.
        if interrupts.stopped_by(exc):
            raise
        logger.warning("split %d %s failed: %s", inputs.split, method, one_line(exc))
        failed = [{_target_of(spec): None, "reason": one_line(exc)}]
        return {"method": method, "split": inputs.split, "grid": [], "failed": failed}
    grid, failed = _fit_grid(
        data,
        inputs.split,
        spec,
        config,
        targets,
        sampler_seed=sampler_seed,
        detector_seed=detector_seed,
        scores_path=Path(scores_path),
        gan_dir=gan_dir,
        generator=generator,
    )
    result: dict[str, Any] = {"method": method, "split": inputs.split, "grid": grid}
    if failed:
        result["failed"] = failed
    SplitFits.model_validate(result)  # every key has its owner
    return result


def _target_of(spec: Method) -> str:
    """What a method's amount counts, as its records name it."""
    return "n_majority" if spec.amount == "kept" else "n_minority"


def _fit_workers(inputs: SplitInputs, spec: Method, config: PipelineConfig) -> int:
    """The Dask workers one fit trains across: 1 (in its task's process) unless
    it resamples nothing, runs on a Dask worker, is not tuned (a search runs in
    the fit's own process) and its rows are too large for one worker."""
    from pipeline.detector.distributed import current_worker, spread_workers

    if (
        spec.resamples
        or config.detector.across_workers == "never"
        or config.detector.tune
        or current_worker() is None
    ):
        return 1
    sizes = inputs.sizes()
    return spread_workers(
        sizes["n_rows"],
        sizes["n_features"],
        placement=config.detector.across_workers,
        worker_memory_share=config.detector.worker_memory_share,
    )


def _targets(spec, inputs, data, config, sampler_seed) -> tuple[list, Any]:
    """The method's amounts on this split's training rows
    (:func:`~pipeline.resampling.amounts.amounts`) and, for a plugin generator,
    the generator trained on them."""
    from pipeline.resampling.amounts import amounts

    targets = amounts(
        spec, data["train"]["y"], config.evaluation, data["train"]["weight"]
    )
    generator = None
    if spec.generative and not spec.uses_gan:
        from pipeline.resampling.plugins import train_generator

        generator = train_generator(spec, inputs, data, sampler_seed)
    return targets, generator


def _fit_grid(
    data, split, spec, config, targets, *, scores_path, **fit
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One fit per amount (:func:`_fit_one_detector`): the records and each
    amount that failed, with its reason; a failed fit never costs the others."""
    grid: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for i, target in enumerate(targets):
        try:
            record = _fit_one_detector(
                data,
                split,
                spec,
                config,
                amount=target,
                scores_path=scores_path.with_name(f"{scores_path.stem}-{i}.parquet"),
                model_path=(
                    scores_path.with_name(f"{scores_path.stem}-{i}.ubj")
                    if split == 0  # the registry's challenger comes from split 0
                    else None
                ),
                **fit,
            )
        except Exception as exc:  # one fit never costs the night
            if interrupts.stopped_by(exc):
                raise
            reason = one_line(exc)
            logger.warning(
                "split %d %s%s failed: %s",
                split,
                spec.name,
                "" if target is None else f" ({_target_of(spec)} {target:,})",
                reason,
            )
            logger.debug("the failed fit's traceback", exc_info=True)
            failed.append({_target_of(spec): target, "reason": reason})
            continue
        finally:
            release_free_memory()  # the fit's resampled rows and matrices
        grid.append(record)
        if record["n_added"] == 0 and spec.stops_when_empty:
            # Borderline SMOTE with no fraud in danger, ADASYN with no fraud that
            # has a normal neighbour: what they find does not depend on the amount,
            # so one neighbour search says it for every amount.
            logger.warning(
                "split %d %s adds no rows (it found nothing to resample); the other "
                "amounts are skipped",
                split,
                spec.name,
            )
            break
    return grid, failed


def _fit_one_detector(
    data: dict[str, Any],
    split: int,
    method: Method,
    config: PipelineConfig,
    *,
    amount: int | None,
    sampler_seed: int,
    detector_seed: int,
    scores_path: Path,
    model_path: Path | None,
    gan_dir: str | Path | None,
    generator: Any,
) -> dict[str, Any]:
    """One detector at one amount (fraud rows to reach, legitimate rows to keep,
    or None), in four steps: build the sampler and the detector, fit, score,
    record."""
    sampler, detector = _build(
        data, method, config, amount, sampler_seed, detector_seed, gan_dir, generator
    )
    start = time.perf_counter()
    resampled, fitted, detector, tuned = _fit(
        data, method, config, sampler, detector, scores_path, detector_seed
    )
    fit_seconds = time.perf_counter() - start
    scores = _score(data, split, method.name, detector, scores_path)
    if model_path is not None:
        with atomic_path(model_path, suffix=".ubj") as tmp:
            detector.save_model(tmp)
    return _record(
        data,
        split,
        method,
        config,
        amount=amount,
        detector=detector,
        resampled=resampled,
        fitted=fitted,
        tuned=tuned,
        scores=scores,
        fit_seconds=fit_seconds,
        scores_path=scores_path,
        model_path=model_path,
    )


def _build(
    data, method, config, amount, sampler_seed, detector_seed, gan_dir, generator
):
    """The method's sampler at ``amount`` (None: it resamples nothing) and the
    shared detector (its frauds weighed up when the method reweights)."""
    from pipeline.detector.model import make_detector
    from pipeline.resampling import registry

    transformer = data["transformer"]
    sampler = registry.make_sampler(
        method.name,
        config.evaluation,
        random_state=sampler_seed,
        n_minority=amount if method.amount == "added" else None,
        n_majority=amount if method.amount == "kept" else None,
        category_counts=transformer.category_counts,
        n_features=len(transformer.feature_names),
        gan=config.gan,
        gan_dir=None if gan_dir is None else str(gan_dir),
        generator=generator,
    )
    weight = None
    if method.reweights is not None:
        weight = method.reweights(data["train"]["y"], data["train"]["weight"])
    detector = make_detector(
        config.detector,
        random_state=detector_seed,
        scale_pos_weight=weight,
        feature_types=transformer.feature_types,
    )
    return sampler, detector


def _fit(data, method, config, sampler, detector, scores_path, detector_seed):
    """Resample the training rows and fit the detector on them, early stopping on
    the validation rows (with ``detector.tune``, the best of a search on them):
    ``(Resampled or None, Fitted, the fitted detector, Tuned or None)``; no
    Resampled when the training rows are read and trained on the Dask workers
    (no resampling)."""
    from pipeline.detector.fitting import (
        Fitted,
        fit_detector,
        fit_detector_on_workers,
    )
    from pipeline.resampling.amounts import synthetic_share
    from pipeline.resampling.resample import resample

    train, validation = data["train"], data["validation"]
    if train["X"] is None:  # inputs.load(train_features=False): on the workers
        fitted = fit_detector_on_workers(
            detector,
            train["read_block"],
            train["rows"],
            train["y"],
            validation["X"],
            validation["y"],
            sample_weight=train["weight"],
            eval_weight=validation["weight"],
        )
        return None, fitted, detector, None
    transformer = data["transformer"]
    # On sampled rows, each new row stands for 1 / share (amount_targets).
    share = synthetic_share(train["y"], train["weight"])
    resampled = resample(
        sampler,
        train["X"],
        train["y"],
        sample_weight=train["weight"],
        synthetic_weight=config.evaluation.synthetic_weight / share,
        check=not method.built_in,
        categories=transformer.category_counts,
    )
    if config.detector.tune:
        from pipeline.detector.tuning import tune_detector

        detector, tuned = tune_detector(
            detector,
            resampled.X,
            resampled.y,
            validation["X"],
            validation["y"],
            trials=config.detector.tune_trials,
            random_state=detector_seed,
            sample_weight=resampled.weight,
            eval_weight=validation["weight"],
        )
        return resampled, Fitted(), detector, tuned
    fitted = fit_detector(
        detector,
        resampled.X,
        resampled.y,
        validation["X"],
        validation["y"],
        sample_weight=resampled.weight,
        eval_weight=validation["weight"],
        # Identical fits within the run (same rows, weights and settings) are
        # done once; the folder goes with the other partial files.
        reuse_dir=scores_path.parent / layout.FITS_DIR,
        across_workers=config.detector.across_workers,
    )
    return resampled, fitted, detector, None


def _score(data, split, name, detector, scores_path) -> dict[str, np.ndarray]:
    """The detector's fraud scores of the validation and test rows, saved to
    ``scores_path``."""
    from pipeline.detector.model import fraud_scores

    parts = []
    scores = {}
    for subset in ("validation", "test"):
        scores[subset] = fraud_scores(detector, data[subset]["X"])
        parts.append(
            pd.DataFrame(
                {
                    "split": np.int32(split),
                    "method": name,
                    "subset": subset,
                    "row": data[subset]["rows"].astype(np.int64),
                    "score": scores[subset].astype(np.float64),
                }
            )
        )
    save_parquet(scores_path, pd.concat(parts, ignore_index=True))
    return scores


def _validation_halves(data, scores, config) -> dict[str, list[float]] | None:
    """The fit's AUPRC (and precision top-k, with a time column) on each of the
    split's two validation halves (``data["validation"]["half"]``: the same for
    every method of the split), from which the amount's choice is cross-fitted."""
    from sklearn.metrics import average_precision_score

    validation = data["validation"]
    first = validation["half"]
    if first is None:
        return None
    y, weight = validation["y"], validation["weight"]
    out: dict[str, list[float]] = {"auprc": []}
    for half in (first, ~first):
        out["auprc"].append(
            float(
                average_precision_score(
                    y[half],
                    scores[half],
                    sample_weight=None if weight is None else weight[half],
                )
            )
        )
        top_k = top_k_metrics(
            data,
            "validation",
            scores[half],
            config.evaluation.alerts_per_day,
            where=half,
        )
        if top_k is not None:
            out.setdefault("precision_top_k", []).append(top_k["precision_top_k"])
    return out


def _record(
    data,
    split,
    method,
    config,
    *,
    amount,
    detector,
    resampled,
    fitted,
    tuned,
    scores,
    fit_seconds,
    scores_path,
    model_path,
) -> dict[str, Any]:
    """The fit's record: its amount, metrics on the test rows (the threshold
    chosen on the validation rows), its validation figures, the detector's make
    (and, tuned, the settings its search chose)."""
    from pipeline.detector.model import feature_importance
    from pipeline.resampling.amounts import reached_ratio

    y_train, train_weight = data["train"]["y"], data["train"]["weight"]
    n_resampled = len(y_train) if resampled is None else len(resampled.y)
    record = {
        "method": method.name,
        "split": split,
        # The minority/majority ratio the resampling reached (of the rows the
        # sampled rows stand for, when sampled).
        "sampling_strategy": reached_ratio(
            method.amount, amount, y_train, train_weight
        ),
        "n_added": 0 if resampled is None else resampled.n_added,
        **_validation_figures(data, scores["validation"], config),
        **_test_metrics(data, scores, config),
        "scale_pos_weight": detector.get_params()["scale_pos_weight"],
        "sampled": data["sampled"],
        "n_train": int(len(y_train)),
        "n_train_resampled": int(n_resampled),
        "best_iteration": int(
            getattr(detector, "best_iteration", detector.n_estimators - 1)
        ),
        "fit_seconds": round(fit_seconds, 3),
        "fit_workers": fitted.workers,
        "reused_fit": fitted.reused,
        "feature_importance": feature_importance(
            detector, data["transformer"].feature_names
        ),
        "scores_path": str(scores_path),
        "model_path": None if model_path is None else str(model_path),
    }
    if not method.built_in:
        record["plugin"] = method.source
    if tuned is not None:
        record["tuned"] = {
            "params": tuned.params,
            "trials": tuned.trials,
            "untuned_validation_auprc": tuned.untuned_validation_auprc,
        }
    # Every key has its owner (FitRecord): one misspelt or untyped fails here.
    FitRecord.model_validate(record)
    _log_fit(record, method, amount, len(y_train) - n_resampled)
    return record


def _validation_figures(data, scores, config) -> dict[str, Any]:
    """The fit's figures on the validation rows: AUPRC, precision top-k (with a
    time column) and both on each half (:func:`_validation_halves`)."""
    from sklearn.metrics import average_precision_score

    validation = data["validation"]
    top_k = top_k_metrics(data, "validation", scores, config.evaluation.alerts_per_day)
    return {
        "validation_auprc": float(
            average_precision_score(
                validation["y"], scores, sample_weight=validation["weight"]
            )
        ),
        "validation_precision_top_k": None
        if top_k is None
        else top_k["precision_top_k"],
        "validation_halves": _validation_halves(data, scores, config),
    }


def _test_metrics(data, scores, config) -> dict[str, Any]:
    """The fit's metrics on the test rows, its alert threshold chosen on the
    validation rows (never on test), with precision top-k (with a time column)."""
    from pipeline.evaluation.metrics import choose_threshold

    validation, test = data["validation"], data["test"]
    threshold = choose_threshold(
        validation["y"], scores["validation"], sample_weight=validation["weight"]
    )
    metrics = compute_metrics(
        test["y"],
        scores["test"],
        threshold=threshold,
        amount=test["amount"],
        review_cost=config.evaluation.review_cost,
    )
    # Its interval over bootstrap resamples of the test rows: for the chosen
    # amount only (stage_choose_fits), as each takes seconds on a bank's test window.
    metrics["auprc_bootstrap_ci95"] = None
    top_k = top_k_metrics(
        data, "test", scores["test"], config.evaluation.alerts_per_day
    )
    if top_k is not None:
        metrics.update(top_k)
    return metrics


def _log_fit(record, method, amount, n_removed) -> None:
    """One line per fit: the rows it added or removed, validation and test AUPRC."""
    rows = ""
    if method.amount == "added" and amount is not None:
        rows = f"+{record['n_added']:>6,} rows"
    elif method.amount == "kept" and amount is not None:
        rows = f"-{n_removed:>6,} rows"
    logger.info(
        "split %d %-9s %s validation AUPRC %.4f  test AUPRC %.4f  (%.1fs%s)",
        record["split"],
        method.name,
        rows,
        record["validation_auprc"],
        record["auprc"],
        record["fit_seconds"],
        ", the same rows as an earlier fit: reused" if record["reused_fit"] else "",
    )


# ------------------------------------------------------------------------ outcome
def stage_choose_fits(
    fits: list[dict[str, Any]],
    *,
    run_dir: str | Path,
    config: PipelineConfig,
    frame_path: str | Path,
    schema: TableSchema,
    detector_seeds: list[int],
) -> dict[str, Any]:
    """Choose each method's amount on the validation rows
    (``evaluation.amount_choice``;
    :func:`pipeline.evaluation.amounts.choose_amounts`) and
    keep what the chosen fits left: their split-0 detectors
    (:func:`pipeline.core.layout.detector_path`) and their scores in
    ``predictions.parquet`` (the other amounts' files go). Each chosen fit's
    test AUPRC gets its bootstrap interval here (``auprc_bootstrap_ci95``; the
    split's ``detector_seeds`` draw the resamples).

    ``fits``: what :func:`stage_fit_detector` returned, a grid of amounts per
    method and split. A method whose every amount failed on some split is left
    out of the comparison (it is compared over all splits or not at all); each
    failed fit is in ``failures``
    (:func:`pipeline.evaluation.amounts.separate_failures`).
    Returns ``{"fits": chosen records, "amount_choice", "predictions_path",
    "failures"}``."""
    from pipeline.evaluation.amounts import choose_amounts, separate_failures

    run_dir = Path(run_dir)
    fits, failures = separate_failures(fits)
    if not fits:
        raise TrainingError(
            "every method failed: "
            + "; ".join(f"{f['method']}: {f['reason']}" for f in failures)
        )
    chosen, amount_choice = choose_amounts(
        fits, config.evaluation.amount_choice, config.evaluation.primary_metric
    )
    from pipeline.evaluation.metrics import bootstrap_ci

    label = schema.label.column
    for split in sorted({r["split"] for r in chosen}):
        # A split's methods score the same test rows, each bootstrapped from the
        # split's seed.
        records = [r for r in chosen if r["split"] == split]
        tests = []
        for record in records:
            scores = load_parquet(
                record["scores_path"], columns=["subset", "row", "score"]
            )
            tests.append(scores[scores["subset"] == "test"])
        rows = tests[0]["row"].to_numpy()
        if any(not np.array_equal(t["row"].to_numpy(), rows) for t in tests):
            raise TrainingError(f"split {split}: the methods scored other test rows")
        intervals = bootstrap_ci(
            load_parquet_rows(frame_path, rows, [label])[label].to_numpy(np.int64),
            [t["score"].to_numpy() for t in tests],
            n_resamples=config.evaluation.n_bootstrap,
            random_state=detector_seeds[split],
        )
        for record, interval in zip(records, intervals, strict=True):
            record["auprc_bootstrap_ci95"] = interval
    for record in chosen:
        model = record.pop("model_path", None)
        if model is not None:
            target = layout.detector_path(run_dir, record["split"], record["method"])
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(model, target)
    path = _merge_predictions(
        run_dir,
        [(r["split"], r["method"], r.pop("scores_path")) for r in chosen],
        frame_path,
        list(schema.id_columns),
    )
    return {
        "fits": chosen,
        "amount_choice": amount_choice,
        "predictions_path": path,
        "failures": failures,
    }


def _merge_predictions(
    run_dir: Path,
    parts: list[tuple[int, str, str]],
    frame_path: str | Path,
    id_columns: list[str],
) -> str:
    """One ``predictions.parquet`` from the fits' score files (``parts``: split,
    method, path), sorted by split, method, subset and row; the input's
    ``id_columns`` (read for the scored rows only) are carried beside ``row``.
    Written a fit at a time: a bank's test windows make hundreds of millions of
    scores over the methods and folds, never all in memory."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = run_dir / layout.PREDICTIONS_FILE
    read: tuple[np.ndarray, pd.DataFrame] | None = None  # the last rows' ids
    with atomic_path(path, suffix=".parquet") as tmp:
        writer = None
        try:
            for _, _, scores in sorted(parts):
                part = load_parquet(scores).sort_values(
                    ["subset", "row"], kind="stable", ignore_index=True
                )
                if id_columns:
                    rows = part["row"].to_numpy()
                    # A split's methods score the same rows: their ids read once
                    # (at 22M rows 1.9M rows of text ids, read for every method).
                    if read is None or not np.array_equal(read[0], rows):
                        read = (rows, load_parquet_rows(frame_path, rows, id_columns))
                    ids = read[1]
                    at = part.columns.get_loc("row") + 1
                    for offset, name in enumerate(id_columns):
                        part.insert(at + offset, name, ids[name].to_numpy())
                table = pa.Table.from_pandas(part, preserve_index=False)
                if writer is None:
                    writer = pq.ParquetWriter(tmp, table.schema)
                writer.write_table(table.cast(writer.schema))
        finally:
            if writer is not None:
                writer.close()
    shutil.rmtree(run_dir / layout.SCORES_DIR, ignore_errors=True)
    return str(path)


def load_predictions(
    path: str | Path, *, method: str, split: int, subset: str
) -> pd.DataFrame:
    """One fit's scores on one subset of ``predictions.parquet`` (only the row
    groups that hold them are read)."""
    return pd.read_parquet(
        path,
        columns=["row", "score"],
        filters=[
            ("method", "==", method),
            ("split", "==", int(split)),
            ("subset", "==", subset),
        ],
    )
