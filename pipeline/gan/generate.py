"""Generate fraud transactions in the table's own columns and units from a saved
GAN folder (its ``transformer.json`` carries the table's schema)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.core import layout
from pipeline.core.artifacts import load_json, verify_artifact
from pipeline.core.errors import ConfigError
from pipeline.core.layout import MANIFEST_FILE
from pipeline.core.streaming import CHUNK_ROWS
from pipeline.data.schema import TableSchema, parse_where
from pipeline.features.transformer import TabularTransformer
from pipeline.gan.storage import META_FILE, TRANSFORMER_FILE, gan_files, load_gan
from pipeline.gan.trained import SAMPLE_BLOCK

MIN_WHERE_SHARE = 1e-3
"""``--where`` on a column the GAN was not conditioned on keeps the generated rows
of that category; below this share of them it gives up."""


def gan_dir_of_run(run_dir: str | Path, split: int = 0) -> Path:
    """The GAN folder of one split of a run, after checking its files against the
    run's manifest (a changed file is refused with ``ArtifactError``)."""
    run_dir = Path(run_dir)
    gan_dir = layout.gan_dir(run_dir, split)
    inside = gan_dir.relative_to(run_dir).as_posix()
    if (run_dir / MANIFEST_FILE).is_file():
        verify_artifact(run_dir, f"{inside}/{META_FILE}")
        meta = load_json(gan_dir / META_FILE)
        for name in (*gan_files(meta), TRANSFORMER_FILE):
            verify_artifact(run_dir, f"{inside}/{name}")
    return gan_dir


def left_out(schema: TableSchema) -> list[str]:
    """The schema's columns a generated row does not have, each with the reason."""
    notes = []
    ids = schema.id_columns
    if ids:
        notes.append(f"{', '.join(ids)} (identifiers of real transactions)")
    ignored = [c.name for c in schema.columns if c.kind == "ignore"]
    if ignored:
        notes.append(f"{', '.join(ignored)} (ignored by the schema)")
    plain = [c.name for c in schema.columns if c.kind == "datetime" and not c.derive]
    if plain:
        notes.append(f"{', '.join(plain)} (not a feature: nothing learned)")
    return notes


def iter_transactions(
    gan_dir: str | Path,
    n_samples: int,
    *,
    random_state: int = 0,
    chunk_rows: int = CHUNK_ROWS,
    where: str | None = None,
) -> Iterator[pd.DataFrame]:
    """``n_samples`` generated fraud rows with the table's columns, order and
    dtypes, in frames of ``chunk_rows`` rows (memory does not grow with
    ``n_samples``).

    Rows are mapped back with the transformer saved beside the generator and made
    valid values (:meth:`~pipeline.features.transformer.TabularTransformer.to_domain`:
    within the training range, amounts >= 0 to cents, whole integers,
    categories the training rows had; a datetime column rebuilt from the
    generated hour and weekday); the label is its positive value; id columns are
    left out (:func:`left_out`). ``where="COLUMN=VALUE"`` draws rows of one
    category: directly when the GAN was conditioned on that column
    (``gan.condition_on``), else by keeping the generated rows that have it. The
    same seed gives the same rows whatever ``chunk_rows``. The GAN is loaded (and
    a bad argument refused) at the call, not at the first frame.
    """
    if n_samples < 1:
        raise ConfigError(f"-n must be at least 1, got {n_samples}")
    gan_dir = Path(gan_dir)
    gan = load_gan(gan_dir)
    transformer = TabularTransformer.from_dict(load_json(gan_dir / TRANSFORMER_FILE))
    rows = _model_rows(gan, transformer, n_samples, random_state, where)
    return _frames(rows, transformer, n_samples, random_state, chunk_rows)


def _model_rows(gan, transformer, n_samples, random_state, where):
    """Generated rows in model space, in blocks (see :func:`iter_transactions`)."""
    if where is None:
        return gan.iter_sample(n_samples, random_state=random_state)
    column, code = parse_where(where, transformer.features_)
    conditions = gan.conditions
    if conditions is not None and conditions.column == column:
        return gan.iter_sample(n_samples, random_state=random_state, where=code)
    return _kept_rows(gan, column, code, n_samples, random_state, where)


def _kept_rows(gan, column, code, n_samples, random_state, where):
    drawn = kept = 0
    limit = max(int(n_samples / MIN_WHERE_SHARE), 20 * SAMPLE_BLOCK)
    for block in gan.iter_sample(limit, random_state=random_state):
        drawn += len(block)
        block = block[block[:, column] == code][: n_samples - kept]
        kept += len(block)
        if len(block):
            yield block
        if kept == n_samples:
            return
        if drawn >= 20 * SAMPLE_BLOCK and kept < MIN_WHERE_SHARE * drawn:
            break
    raise ConfigError(
        f"--where {where}: only {kept:,} of {drawn:,} generated rows have it; "
        "condition the GAN on that column (--set gan.condition_on=COLUMN) and "
        "rerun"
    )


def _frames(
    blocks, transformer: TabularTransformer, n_samples, random_state, chunk_rows
) -> Iterator[pd.DataFrame]:
    schema = transformer.schema
    label = schema.label.positive
    label_dtype = (
        bool if isinstance(label, bool) else np.int8 if isinstance(label, int) else None
    )
    # One generator for the rebuilt dates, consumed row by row in order: the same
    # rows whatever the chunking.
    dates = np.random.default_rng([random_state, 2])
    pending: list[np.ndarray] = []
    n_pending = done = 0
    for block in blocks:
        pending.append(block)
        n_pending += len(block)
        while n_pending >= chunk_rows or (n_pending and done + n_pending == n_samples):
            rows = np.concatenate(pending) if len(pending) > 1 else pending[0]
            take = min(chunk_rows, n_pending)
            chunk, rest = rows[:take], rows[take:]
            pending, n_pending = ([rest] if len(rest) else []), len(rest)
            done += take
            frame = transformer.to_table(
                transformer.to_domain(transformer.inverse_transform(chunk)), dates
            )
            values = np.full(len(frame), label, dtype=label_dtype)
            frame[schema.label.column] = values
            yield frame
