"""The GAN's training batches: a reproducible, endless stream of class-balanced
batches ("training-by-sampling"), keyed by the step so training can resume."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from pipeline.errors import DataValidationError


def batch_composition(
    counts: np.ndarray,
    target_fraction: float,
    batch_size: int,
    targets: list[int] | None = None,
) -> np.ndarray:
    """Rows of each class in a training batch ("training-by-sampling").

    The target classes (those to generate; by default the class with the fewest
    rows, fraud) share ``target_fraction`` of the batch equally; the other classes
    share the rest. 1.0 trains on the target classes alone.
    """
    counts = np.asarray(counts)
    n_classes = len(counts)
    targets = sorted(targets) if targets else [int(np.argmin(counts))]
    others = [k for k in range(n_classes) if k not in targets]
    shares = np.zeros(n_classes)
    shares[targets] = target_fraction / len(targets)
    if others:
        shares[others] = (1.0 - target_fraction) / len(others)
    rows = np.floor(shares * batch_size).astype(int)
    rows[targets[0]] += batch_size - rows.sum()
    return rows


def make_training_dataset(
    X: np.ndarray,
    y: np.ndarray,
    *,
    batch_size: int,
    n_critic: int,
    fraud_fraction: float,
    seed: int,
    start_step: int = 0,
    targets: list[int] | None = None,
    dequantize: tuple[np.ndarray, np.ndarray, float] | None = None,
) -> tf.data.Dataset:
    """An endless dataset of class-balanced batches ("training-by-sampling").

    With 0.17 % frauds a uniform batch of 512 holds one fraud on average, and the
    critic never learns what the fraud condition means. Each element here stacks
    ``n_critic`` batches in which ``fraud_fraction`` of the rows come from the
    target classes (default: the minority class, fraud), drawn with replacement,
    and the rest from the other classes (see :func:`batch_composition`). ``y``
    holds class indices 0..K-1. Element ``i`` depends only on ``seed`` and ``i``
    (stateless random ops), so training is reproducible and can resume at
    ``start_step``.

    ``dequantize = (low, high, clip)`` (the quantile encoding, see
    :class:`~pipeline.gan.encoding.ColumnEncoder`): each drawn row's values are
    drawn anew at every step, uniformly between ``low`` and ``high`` (its slots
    of the empirical CDF), kept in ``[clip, 1 - clip]`` and mapped to normal
    scores; ``X`` is then unused.
    """
    y = np.asarray(y).astype(np.int64)
    n_classes = max(int(y.max()) + 1, 2)
    counts = np.bincount(y, minlength=n_classes)
    composition = batch_composition(counts, fraud_fraction, batch_size, targets)
    if any(n > 0 and c == 0 for n, c in zip(composition, counts, strict=True)):
        raise DataValidationError(
            "GAN training batches need rows of every class they draw from "
            f"(class counts {counts.tolist()})"
        )
    if dequantize is not None:
        low, high, clip = dequantize
        low_t = tf.constant(np.asarray(low, dtype=np.float32))
        width_t = tf.constant(np.asarray(high, dtype=np.float32) - low_t.numpy())
    else:
        X_t = tf.constant(np.asarray(X, dtype=np.float32))
    n_features = int(np.shape(X if dequantize is None else dequantize[0])[1])
    y_t = tf.constant(y)
    members = [tf.constant(np.flatnonzero(y == k)) for k in range(n_classes)]
    seed = int(seed) % 2**31

    def sample(step):
        idx = []
        for k, n_rows in enumerate(composition):
            if n_rows == 0:
                continue
            pick = tf.random.stateless_uniform(
                (n_critic, int(n_rows)),
                seed=tf.stack([tf.constant(seed, tf.int64), n_classes * step + k]),
                maxval=int(counts[k]),
                dtype=tf.int64,
            )
            idx.append(tf.gather(members[k], pick))
        rows = tf.reshape(tf.concat(idx, axis=1), [-1])
        if dequantize is None:
            x = tf.gather(X_t, rows)
        else:
            u = tf.random.stateless_uniform(
                (tf.shape(rows)[0], n_features),
                seed=tf.stack([tf.constant(seed, tf.int64), -1 - step]),
            )
            u = tf.gather(low_t, rows) + u * tf.gather(width_t, rows)
            x = tf.math.ndtri(tf.clip_by_value(u, clip, 1.0 - clip))
        condition = tf.one_hot(tf.gather(y_t, rows), n_classes, dtype=tf.float32)
        return x, condition

    return (
        tf.data.Dataset.counter(start=start_step, dtype=tf.int64)
        .map(sample, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        .prefetch(tf.data.AUTOTUNE)
    )
