"""The stages that train the GAN of each split and measure its rows'
fidelity against real frauds (beside SMOTE's)."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.core import interrupts, layout
from pipeline.core.artifacts import (
    load_json,
)
from pipeline.core.code import code_version
from pipeline.core.config import PipelineConfig
from pipeline.core.errors import one_line
from pipeline.features.rows import (
    SplitInputs,
    features_but_raw_time,
)
from pipeline.features.transformer import TabularTransformer
from pipeline.run.cache import (
    FEATURES_CODE,
    cache_get,
    cache_key,
    cache_put,
    stage_entry,
)

if TYPE_CHECKING:
    from pipeline.gan.encoding import GANColumns

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- GAN
def _gan_summary(split: int, gan_dir: Path, meta: dict, history: list) -> dict:
    last = history[-1] if history else {}
    keep = (
        "device",
        "train_seconds",
        "steps",
        "train_frauds",
        "nonfinite_steps",
        "recoveries",
        "selected_step",
        "selected_weights",
        "selection",
        "resumed_from_step",
        "encoding",
        "filter",
    )
    return {
        "split": split,
        "gan_dir": str(gan_dir),
        **{k: meta.get(k) for k in keep},
        "final": {
            k: v
            for k, v in last.items()
            if k not in {"step", "seconds", "nonfinite_steps"}
        },
    }


def stage_train_gan(
    inputs: SplitInputs,
    config: PipelineConfig,
    seed: int,
    out_dir: str | Path,
    cache_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Train the split's cWGAN-GP on its training rows only; save it to ``out_dir``.

    With ``cache_dir``, a GAN trained before on the same rows (training and
    validation), config, seed and GAN code is reused (``cached`` in the result).

    The split's validation frauds choose the checkpoint to keep (C2ST); they are
    read, never resampled. Checkpoints go to ``out_dir/checkpoint`` so an
    interrupted run resumes; a GAN already finished in ``out_dir`` for the same
    rows, seed and config is reused as it is.
    """
    from pipeline.gan.encoding import GANColumns
    from pipeline.gan.storage import save_gan  # imports TensorFlow
    from pipeline.gan.trainer import train_cwgan_gp

    out_dir = Path(out_dir)
    split = inputs.split
    data = inputs.load()
    X, y = data["train"]["X"], data["train"]["y"]
    columns = GANColumns.of(data["transformer"], config.gan)
    finished = _finished_gan(out_dir, split, X, y, config, seed)
    if finished is not None:
        return finished
    validation = data["validation"]["X"][data["validation"]["y"] == 1]
    entry = None
    if cache_dir is not None:
        key = _gan_cache_key(X, y, validation, config, columns, seed)
        entry = stage_entry(cache_dir, "gan", key)
        if cache_get(entry, out_dir):
            return _cached_gan(split, out_dir, key)
    trained = train_cwgan_gp(
        X,
        y,
        config.gan,
        random_state=seed,
        validation=validation,
        checkpoint_dir=out_dir / layout.CHECKPOINT_DIR,
        columns=columns,
    )
    save_gan(out_dir, trained, transformer=load_json(inputs.transformer_path))
    shutil.rmtree(out_dir / layout.CHECKPOINT_DIR, ignore_errors=True)
    if entry is not None:
        cache_put(entry, {p.name: p for p in out_dir.iterdir() if p.is_file()})
    return {
        **_gan_summary(split, out_dir, trained.meta, trained.history),
        "cached": False,
    }


def _finished_gan(
    out_dir: Path,
    split: int,
    X: np.ndarray,
    y: np.ndarray,
    config: PipelineConfig,
    seed: int,
) -> dict[str, Any] | None:
    """The summary of a GAN already trained in ``out_dir`` on the same rows, with
    the same seed and config (``None`` when there is none)."""
    from pipeline.gan.storage import HISTORY_FILE, META_FILE, data_fingerprint

    if not (out_dir / META_FILE).is_file():
        return None
    meta = load_json(out_dir / META_FILE)
    if (
        meta.get("fingerprint") == data_fingerprint(X, y)
        and meta.get("random_state") == seed
        and meta.get("config") == config.gan.model_dump(mode="json")
    ):
        logger.info("split %d: GAN already trained in %s; reusing it", split, out_dir)
        return {
            **_gan_summary(split, out_dir, meta, load_json(out_dir / HISTORY_FILE)),
            "cached": False,
        }
    return None


def _gan_cache_key(
    X: np.ndarray,
    y: np.ndarray,
    validation: np.ndarray,
    config: PipelineConfig,
    columns: GANColumns,
    seed: int,
) -> str:
    """The stage cache's key of a GAN: its training and validation rows, its
    config (but the time limit), columns, seed and code."""
    from pipeline.gan.storage import data_fingerprint

    return cache_key(
        train=data_fingerprint(X, y),
        validation=hashlib.sha256(validation.tobytes()).hexdigest(),
        gan=config.gan.model_dump(mode="json", exclude={"timeout_seconds"}),
        columns=dataclasses.asdict(columns),
        seed=seed,
        code=code_version("pipeline.gan", *FEATURES_CODE),
    )


def _cached_gan(split: int, out_dir: Path, key: str) -> dict[str, Any]:
    """The summary of a GAN the stage cache put in ``out_dir``."""
    from pipeline.gan.storage import HISTORY_FILE, META_FILE

    logger.info("split %d: GAN reused from the stage cache (%s)", split, key[:12])
    return {
        **_gan_summary(
            split,
            out_dir,
            load_json(out_dir / META_FILE),
            load_json(out_dir / HISTORY_FILE),
        ),
        "cached": True,
    }


def stage_fidelity(
    inputs: SplitInputs,
    config: PipelineConfig,
    *,
    sampler_seed: int,
    gan_dir: str | Path | None,
) -> dict[str, Any]:
    """Fidelity of the split's synthetic fraud rows (GAN and SMOTE, same number of
    rows) against the real test frauds, with the real-vs-real floor.

    A diagnostic never costs the night: if it fails, the split's fidelity is
    ``{"split", "failed": {"fidelity": reason}}`` and the run goes on."""
    from pipeline.core.memory import bounded_neighbour_search

    try:
        with bounded_neighbour_search():
            return _fidelity(inputs, config, sampler_seed=sampler_seed, gan_dir=gan_dir)
    except Exception as exc:
        if interrupts.stopped_by(exc):
            raise
        reason = one_line(exc)
        logger.warning("split %d fidelity failed: %s", inputs.split, reason)
        logger.debug("the failed fidelity's traceback", exc_info=True)
        return {"split": inputs.split, "failed": {"fidelity": reason}}


def _fidelity(
    inputs: SplitInputs,
    config: PipelineConfig,
    *,
    sampler_seed: int,
    gan_dir: str | Path | None,
) -> dict[str, Any]:
    """The fidelity of :func:`stage_fidelity`, its failures raised (those of a
    source of rows excepted: they are said in ``failed``)."""
    from pipeline.evaluation.fidelity import REAL_TRAIN
    from pipeline.resampling.amounts import amount_targets

    split = inputs.split
    data = inputs.load()
    transformer = data["transformer"]
    X, y = data["train"]["X"], data["train"]["y"]
    # As many new rows as the samplers add at their largest amount, the shared
    # ratio (of the rows a sampled fold stands for, drawn at its share: on a
    # bank's fold the sample's own ratio can already exceed it).
    n_rows = amount_targets(y, config.evaluation, data["train"]["weight"])[-1] - int(
        y.sum()
    )
    train_frauds = X[y == 1]
    # Out of time, frauds drift between periods: judged against the test window
    # the generators would be blamed for the drift, so rolling folds compare with
    # the training period's own held-out frauds (the validation rows).
    reference = "validation" if config.split.mode == "rolling" else "test"
    test_frauds = data[reference]["X"][data[reference]["y"] == 1]
    result: dict[str, Any] = {"split": split, "reference": reference}
    synthetic, failed = _synthetic_frauds(
        inputs, data, config, sampler_seed=sampler_seed, gan_dir=gan_dir, n_rows=n_rows
    )
    if failed:
        result["failed"] = failed
    if split == 0:  # the split the report draws
        from pipeline.evaluation.fidelity import fidelity_views

        result["views"] = fidelity_views(synthetic, test_frauds, transformer)
    # The floor: real training frauds judged the same way (DCR is 0 for them by
    # construction, so only the distribution metrics are meaningful).
    synthetic[REAL_TRAIN] = train_frauds
    result.update(
        _fidelity_scores(
            synthetic,
            test_frauds,
            train_frauds,
            transformer,
            by_time=reference == "validation",
            random_state=sampler_seed,
        )
    )
    _log_fidelity(split, result)
    return result


def _synthetic_frauds(
    inputs: SplitInputs,
    data: dict[str, Any],
    config: PipelineConfig,
    *,
    sampler_seed: int,
    gan_dir: str | Path | None,
    n_rows: int,
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """``n_rows`` new fraud rows of each source: the interpolation every
    generator's rows are judged beside (SMOTE's), then the generative methods;
    and the sources that failed, with why (left out, the others go on)."""
    from pipeline.resampling import registry

    split = inputs.split
    X, y = data["train"]["X"], data["train"]["y"]
    interpolation = registry.interpolation()
    generators = [
        m for m in map(registry.get, config.evaluation.methods) if m.generative
    ]
    sampler = registry.make_sampler(
        interpolation,
        config.evaluation,
        random_state=sampler_seed,
        n_minority=int(y.sum()) + n_rows,
        category_counts=data["transformer"].category_counts,
        n_features=X.shape[1],
    )
    synthetic: dict[str, np.ndarray] = {}
    failed: dict[str, str] = {}

    def generate(source: str, draw) -> None:
        try:
            synthetic[source] = draw()
        except Exception as exc:  # a source that fails is left out, said why
            if interrupts.stopped_by(exc):
                raise
            failed[source] = one_line(exc)
            logger.warning(
                "split %d fidelity: %s failed: %s", split, source, failed[source]
            )

    generate(interpolation, lambda: sampler.fit_resample(X, y)[0][len(y) :])
    for method in generators:
        if method.uses_gan and gan_dir is not None:
            from pipeline.gan.storage import load_gan_once

            generate(
                method.name,
                lambda: load_gan_once(gan_dir).sample(
                    n_rows, random_state=sampler_seed
                ),
            )
        elif not method.uses_gan:
            from pipeline.resampling.plugins import train_generator

            generate(
                method.name,
                lambda method=method: train_generator(
                    method, inputs, data, sampler_seed
                ).draw(n_rows),
            )
    return synthetic, failed


def _fidelity_scores(
    synthetic: dict[str, np.ndarray],
    test_frauds: np.ndarray,
    train_frauds: np.ndarray,
    transformer: TabularTransformer,
    *,
    by_time: bool,
    random_state: int,
) -> dict[str, Any]:
    """Each source's rows scored against the reference frauds
    (:func:`~pipeline.evaluation.fidelity.compute_fidelity`), after ``left_out``
    (the columns left out of the comparison) when any are."""
    from pipeline.evaluation.fidelity import compute_fidelity

    scores: dict[str, Any] = {}
    # Out of time, the raw time column is left out of the comparison.
    keep = list(range(train_frauds.shape[1]))
    if by_time:
        keep = features_but_raw_time(transformer)
    if len(keep) < train_frauds.shape[1]:
        scores["left_out"] = [transformer.schema.time]
    categorical = [keep.index(j) for j in transformer.categorical_features]

    def kept(rows: np.ndarray) -> np.ndarray:
        # All columns: the array itself (a copy would change the float sums'
        # order in the last bit).
        return rows if len(keep) == rows.shape[1] else rows[:, keep]

    for name, rows in synthetic.items():
        scores[name] = compute_fidelity(
            kept(rows),
            kept(test_frauds),
            kept(train_frauds),
            random_state=random_state,
            categorical=categorical,
            names=[transformer.feature_names[j] for j in keep],
        )
    return scores


def _log_fidelity(split: int, result: dict[str, Any]) -> None:
    """Log each source's C2ST AUC of the split."""
    logger.info(
        "split %d fidelity: C2ST %s",
        split,
        ", ".join(
            f"{k} {v['c2st_auc']:.3f}"
            for k, v in result.items()
            if k not in ("split", "views", "reference", "left_out", "failed")
        ),
    )
