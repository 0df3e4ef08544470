"""Generate fraud transactions in Kaggle units from a saved GAN folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.artifacts import MANIFEST, load_json, verify_artifact
from pipeline.errors import ConfigError
from pipeline.gan.storage import META_FILE, TRANSFORMER_FILE, gan_files, load_gan
from pipeline.ingest import FEATURES, TARGET
from pipeline.preprocess import TabularTransformer

CHUNK_ROWS = 32_768
"""Rows per chunk of :func:`iter_transactions` (a Parquet row group, ~8 MB)."""


def gan_dir_of_run(run_dir: str | Path, split: int = 0) -> Path:
    """The GAN folder of one split of a run, after checking its files against the
    run's manifest (a changed file is refused with ``ArtifactError``)."""
    run_dir = Path(run_dir)
    gan_dir = run_dir / f"split-{split}" / "gan"
    if (run_dir / MANIFEST).is_file():
        verify_artifact(run_dir, f"split-{split}/gan/{META_FILE}")
        meta = load_json(gan_dir / META_FILE)
        for name in (*gan_files(meta), TRANSFORMER_FILE):
            verify_artifact(run_dir, f"split-{split}/gan/{name}")
    return gan_dir


def iter_transactions(
    gan_dir: str | Path,
    n_samples: int,
    *,
    random_state: int = 0,
    chunk_rows: int = CHUNK_ROWS,
) -> Iterator[pd.DataFrame]:
    """``n_samples`` generated fraud rows with the Kaggle columns and units, in
    frames of ``chunk_rows`` rows (memory does not grow with ``n_samples``).

    Rows are mapped back with the transformer saved beside the generator, then made
    valid transactions: ``Amount`` >= 0 rounded to cents, ``Time`` within the range
    seen in training, ``Class`` = 1. The same seed gives the same rows whatever
    ``chunk_rows``. The GAN is loaded (and a bad argument refused) at the call, not
    at the first frame.
    """
    if n_samples < 1:
        raise ConfigError(f"-n must be at least 1, got {n_samples}")
    gan_dir = Path(gan_dir)
    gan = load_gan(gan_dir)
    transformer = TabularTransformer.from_dict(load_json(gan_dir / TRANSFORMER_FILE))
    return _frames(gan, transformer, n_samples, random_state, chunk_rows)


def _frames(
    gan, transformer, n_samples: int, random_state: int, chunk_rows: int
) -> Iterator[pd.DataFrame]:
    for rows in gan.iter_sample(
        n_samples, random_state=random_state, chunk_rows=chunk_rows
    ):
        frame = transformer.to_domain(transformer.inverse_transform(rows))
        if list(frame.columns) != list(FEATURES):
            frame = frame[list(FEATURES)]
        frame[TARGET] = np.int8(1)
        yield frame
