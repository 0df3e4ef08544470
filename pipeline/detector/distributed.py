"""A detector fit across the workers of a Dask cluster (``xgboost.dask``), when one
worker's memory cannot hold it.

Under ``--task-runner dask`` each fit is a task on one worker, which reads its
split's rows, resamples the training rows and fits XGBoost.
When a fit's task would take more than ``detector.worker_memory_share`` of its
worker's memory limit (:func:`spread_workers`), it trains across the workers
(``xgboost.dask.DaskXGBClassifier``, with the same parameters, early stopping and
weights): a fit without resampling has each worker read and transform its block
of the training rows (the task reads only the validation and test rows it
scores); the trained booster comes back into the task's detector, which then
scores and saves as any other. Blocks are float32, the precision XGBoost trains
in, so they hold exactly the values it would see.

A resampled fit needs its training rows in one place (the samplers' neighbour
searches), so only ``across_workers: always`` spreads it: its task hands the rows
it resampled out in blocks and keeps them, so its worker is no lighter
(measured), only XGBoost's part is shared. One spread fit runs at a time on a
cluster (a :class:`distributed.Lock`): XGBoost's training needs a thread on every
worker at once, and two spread fits on single-threaded workers would each hold a
thread the other waits for.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import numpy as np

logger = logging.getLogger(__name__)

TASK_MEMORY_FACTOR = 4.5
"""A one-process fit's task peaks at about this many times the model-space bytes
(float64) of its split's rows — training, validation and test — above its
worker's own: reading them, transforming them, XGBoost's matrices. Measured 4.54
on 2.4M rows x 24 features (``benchmarks/results/distributed-2026-12-04.json``)."""

LOCK_NAME = "fraudaug-xgboost-dask"

Placement = Literal["auto", "never", "always"]


def current_worker() -> Any | None:
    """The Dask worker running this code, or ``None`` (a thread or the flow's own
    process; also when Dask is not installed)."""
    try:
        from distributed import get_worker
    except ImportError:  # pragma: no cover - dask is a dependency
        return None
    try:
        return get_worker()
    except ValueError:
        return None


def worker_memory_limit(worker: Any) -> int | None:
    """The worker's memory limit in bytes (``None``: it has none)."""
    manager = getattr(worker, "memory_manager", None)
    limit = getattr(manager, "memory_limit", None)
    return int(limit) if limit else None


def task_bytes(n_rows: int, n_features: int) -> int:
    """Memory a one-process fit's task takes for a split of ``n_rows`` rows
    (training, validation and test) of ``n_features`` model-space columns."""
    return int(n_rows * n_features * 8 * TASK_MEMORY_FACTOR)


def cluster_workers(worker: Any | None = None) -> int:
    """The workers a fit on this Dask worker can train across: the cluster's,
    or 1 outside a Dask worker and on a cluster of one worker."""
    worker = current_worker() if worker is None else worker
    if worker is None:
        return 1
    n_workers = _n_workers()
    return n_workers if n_workers >= 2 else 1


def _n_workers() -> int:
    from distributed import get_client

    return len(get_client().ncores())


def spread_workers(
    n_rows: int,
    n_features: int,
    *,
    placement: Placement,
    worker_memory_share: float,
    worker: Any | None = None,
) -> int:
    """How many workers a fit should train on: 1 (in the task's process) or the
    cluster's workers (:func:`cluster_workers`).

    ``placement``: ``never`` (always one process), ``always`` (every fit on a
    Dask worker trains across the workers), ``auto``: across the workers when
    the task would take (:func:`task_bytes` of its split's ``n_rows``) more than
    ``worker_memory_share`` of its worker's memory limit. Outside a Dask worker,
    or on a cluster of one worker, always 1.
    """
    worker = current_worker() if worker is None else worker
    if placement == "never" or worker is None:
        return 1
    n_workers = cluster_workers(worker)
    if n_workers == 1 or placement == "always":
        return n_workers
    limit = worker_memory_limit(worker)
    if limit is None:
        return 1
    need = task_bytes(n_rows, n_features)
    return n_workers if need > worker_memory_share * limit else 1


def _partitions(client, array, dtype, workers: list[str], here: str):
    """``array`` as a Dask array of ``dtype``, one row block per worker, each block
    held by its worker: the task's own block is a view of ``array`` when it already
    has that type; the others are sent to their workers, and the task keeps no copy
    of them."""
    import dask.array as da
    from distributed import wait

    bounds = np.linspace(0, len(array), len(workers) + 1).astype(int)
    blocks = []
    for start, stop, address in zip(bounds[:-1], bounds[1:], workers, strict=True):
        block = np.asarray(array[start:stop], dtype=dtype)
        # From a task: onto its own worker. A fresh key (not the content hash):
        # another fit may hold, or be releasing, the same rows (a split's
        # validation rows are every method's).
        future = client.scatter(block, hash=False)
        if address != here:
            local = future
            future = client.submit(
                _same, local, workers=[address], allow_other_workers=False, pure=False
            )
            wait(future)
            del local  # released: the block now lives on its worker only
        blocks.append(
            da.from_delayed(
                future, shape=block.shape, dtype=block.dtype, meta=block[:0]
            )
        )
    return da.concatenate(blocks)


def _same(block):
    return block


def _read_partitions(client, read_block, rows, weight, workers, n_features: int):
    """The training rows as Dask arrays ``(X, y, weight)``, one row block per
    worker, each read by its worker (``read_block(rows, weight)`` ->
    ``(X, y, weight)``): no process holds them all."""
    import dask.array as da

    fields = (("X", np.float32), ("y", np.int64), ("weight", np.float64))
    blocks: dict[str, list] = {name: [] for name, _ in fields}
    bounds = np.linspace(0, len(rows), len(workers) + 1).astype(int)
    for start, stop, address in zip(bounds[:-1], bounds[1:], workers, strict=True):
        pinned = {"workers": [address], "allow_other_workers": False, "pure": False}
        block = client.submit(
            read_block,
            rows[start:stop],
            None if weight is None else weight[start:stop],
            **pinned,
        )
        n = stop - start
        shapes = {"X": (n, n_features), "y": (n,), "weight": (n,)}
        for i, (name, dtype) in enumerate(fields):
            if name == "weight" and weight is None:
                continue
            item = client.submit(_item, block, i, **pinned)
            blocks[name].append(da.from_delayed(item, shape=shapes[name], dtype=dtype))
    return [
        da.concatenate(blocks[name]) if blocks[name] else None for name, _ in fields
    ]


def _item(values, i):
    return values[i]


def _train(client, detector, train, evaluation, eval_weight) -> None:
    """XGBoost across the workers holding ``train``'s blocks; the booster is
    loaded into ``detector``."""
    from xgboost import dask as dxgb

    X, y, weight = train
    model = dxgb.DaskXGBClassifier(**detector.get_params())
    model.client = client
    model.fit(
        X,
        y,
        sample_weight=weight,
        eval_set=[evaluation],
        sample_weight_eval_set=None if eval_weight is None else [eval_weight],
        verbose=False,
    )
    detector.load_model(bytearray(model.get_booster().save_raw("ubj")))


def fit_across_workers(
    detector,
    X: np.ndarray | None,
    y: np.ndarray,
    X_val: np.ndarray,
    y_val: np.ndarray,
    *,
    sample_weight: np.ndarray | None = None,
    eval_weight: np.ndarray | None = None,
    read_block=None,
    rows: np.ndarray | None = None,
) -> int:
    """Fit ``detector`` (an ``XGBClassifier``) on the cluster's workers, from a task
    on one of them: same parameters, validation rows for early stopping, weights.
    The trained booster is loaded into ``detector``. Returns the number of workers
    it trained on.

    The training rows: ``X`` (held by the task, handed out in blocks), or, with
    ``X=None``, read by each worker itself: ``read_block(rows[i:j], weight[i:j])``
    returns that block's ``(X, y, weight)`` (``y`` and ``sample_weight`` here are
    the task's copy of the labels and weights, in ``rows``' order).
    """
    from distributed import Lock, get_worker, worker_client

    here = get_worker().address
    # worker_client: the task leaves its worker's thread pool while it waits, so
    # the XGBoost tasks of this fit can run on its worker too.
    with worker_client() as client, Lock(LOCK_NAME):
        workers = sorted(client.ncores())

        def spread(array, dtype):
            if array is None:
                return None
            return _partitions(client, array, dtype, workers, here)

        if X is None:
            train = _read_partitions(
                client, read_block, rows, sample_weight, workers, X_val.shape[1]
            )
        else:
            train = [
                spread(X, np.float32),
                spread(y, np.int64),
                spread(sample_weight, np.float64),
            ]
        evaluation = (spread(X_val, np.float32), spread(y_val, np.int64))
        _train(client, detector, train, evaluation, spread(eval_weight, np.float64))
    logger.info(
        "detector trained across %d Dask workers (%d training rows)",
        len(workers),
        len(y),
    )
    return len(workers)
