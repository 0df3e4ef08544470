"""The GAN's training batches: a reproducible, endless stream of class-balanced
batches ("training-by-sampling"), keyed by the step so training can resume."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from pipeline.core.errors import DataValidationError


def batch_composition(
    counts: np.ndarray,
    fraud_fraction: float,
    batch_size: int,
    fraud_labels: list[int] | None = None,
) -> np.ndarray:
    """Rows of each class in a training batch ("training-by-sampling").

    The fraud classes (those to generate; by default the class with the fewest
    rows) share ``fraud_fraction`` of the batch equally; the other classes
    share the rest. 1.0 trains on the fraud classes alone.
    """
    counts = np.asarray(counts)
    n_classes = len(counts)
    fraud_labels = sorted(fraud_labels) if fraud_labels else [int(np.argmin(counts))]
    others = [k for k in range(n_classes) if k not in fraud_labels]
    shares = np.zeros(n_classes)
    shares[fraud_labels] = fraud_fraction / len(fraud_labels)
    if others:
        shares[others] = (1.0 - fraud_fraction) / len(others)
    rows = np.floor(shares * batch_size).astype(int)
    rows[fraud_labels[0]] += batch_size - rows.sum()
    return rows


def make_training_dataset(
    X: np.ndarray | None,
    y: np.ndarray,
    *,
    batch_size: int,
    n_critic: int,
    fraud_fraction: float,
    seed: int,
    start_step: int = 0,
    fraud_labels: list[int] | None = None,
    dequantize: tuple | None = None,
    condition: tuple[np.ndarray, int] | None = None,
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

    ``dequantize = (low, high, clip[, fixed])`` (the quantile encoding, see
    :class:`~pipeline.gan.encoding.ColumnEncoder`): each drawn row's numeric
    values are drawn anew at every step, uniformly between ``low`` and ``high``
    (its slots of the empirical CDF), kept in ``[clip, 1 - clip]`` and mapped to
    normal scores, followed by the row's ``fixed`` part (its one-hot blocks, when
    given); ``X`` is then unused.

    ``condition = (level, n_levels)``: each row's category index (0..n_levels-1)
    in the column the GAN is conditioned on. The condition vector is then the
    one-hot class followed by the one-hot category, and within a class the
    category of each drawn row is chosen first, with probability proportional to
    the log of its frequency (CTGAN's training-by-sampling, so rare categories are
    learned too), then a row of that category.
    """
    y = np.asarray(y).astype(np.int64)
    n_classes = max(int(y.max()) + 1, 2)
    counts = np.bincount(y, minlength=n_classes)
    composition = _checked_composition(counts, fraud_fraction, batch_size, fraud_labels)
    seed = int(seed) % 2**31
    n_features = int(np.shape(X if dequantize is None else dequantize[0])[1])
    features = _features(X, dequantize, n_features, seed)
    y_t = tf.constant(y)
    if condition is None:
        pick_rows = _uniform_picker(y, counts, n_critic, seed)
        level_t = n_levels = None
    else:
        level, n_levels = np.asarray(condition[0], dtype=np.int64), int(condition[1])
        level_t = tf.constant(level)
        pick_rows = _level_picker(y, level, n_classes, n_levels, n_critic, seed)

    sample = _batch_sampler(composition, pick_rows, features, y_t, level_t, n_levels)
    return (
        tf.data.Dataset.counter(start=start_step, dtype=tf.int64)
        .map(sample, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        .prefetch(tf.data.AUTOTUNE)
    )


def _batch_sampler(
    composition: np.ndarray,
    pick_rows,
    features,
    y_t: tf.Tensor,
    level_t: tf.Tensor | None,
    n_levels: int | None,
):
    """The function making step ``step``'s element: the rows of each class that
    ``composition`` draws from (``pick_rows``), their features (``features``)
    and their condition vectors (the one-hot class, then the one-hot category
    when ``level_t`` is given)."""
    n_classes = len(composition)

    def sample(step):
        idx = [
            pick_rows(step, k, int(n_rows))
            for k, n_rows in enumerate(composition)
            if n_rows > 0
        ]
        rows = tf.reshape(tf.concat(idx, axis=1), [-1])
        x = features(rows, step)
        cond = tf.one_hot(tf.gather(y_t, rows), n_classes, dtype=tf.float32)
        if level_t is not None:
            cond = tf.concat(
                [
                    cond,
                    tf.one_hot(tf.gather(level_t, rows), n_levels, dtype=tf.float32),
                ],
                axis=1,
            )
        return x, cond

    return sample


def _checked_composition(
    counts: np.ndarray,
    fraud_fraction: float,
    batch_size: int,
    fraud_labels: list[int] | None,
) -> np.ndarray:
    """The batch's rows per class (:func:`batch_composition`); every class drawn
    from must have rows, or :class:`DataValidationError`."""
    composition = batch_composition(counts, fraud_fraction, batch_size, fraud_labels)
    if any(n > 0 and c == 0 for n, c in zip(composition, counts, strict=True)):
        raise DataValidationError(
            "GAN training batches need rows of every class they draw from "
            f"(class counts {counts.tolist()})"
        )
    return composition


def _features(
    X: np.ndarray | None, dequantize: tuple | None, n_features: int, seed: int
):
    """The function giving the drawn rows' features at a step: the rows of ``X``,
    or with ``dequantize`` their values drawn anew within their CDF slots."""
    if dequantize is None:
        X_t = tf.constant(np.asarray(X, dtype=np.float32))
        return lambda rows, step: tf.gather(X_t, rows)
    low, high, clip = dequantize[:3]
    fixed = dequantize[3] if len(dequantize) > 3 else None
    low_t = tf.constant(np.asarray(low, dtype=np.float32))
    width_t = tf.constant(np.asarray(high, dtype=np.float32) - low_t.numpy())
    fixed_t = None
    if fixed is not None:
        fixed_t = tf.constant(np.asarray(fixed, dtype=np.float32))

    def dequantized(rows, step):
        u = tf.random.stateless_uniform(
            (tf.shape(rows)[0], n_features),
            seed=tf.stack([tf.constant(seed, tf.int64), -1 - step]),
        )
        u = tf.gather(low_t, rows) + u * tf.gather(width_t, rows)
        x = tf.math.ndtri(tf.clip_by_value(u, clip, 1.0 - clip))
        if fixed_t is not None:
            x = tf.concat([x, tf.gather(fixed_t, rows)], axis=1)
        return x

    return dequantized


def _uniform_picker(y: np.ndarray, counts: np.ndarray, n_critic: int, seed: int):
    """The function drawing a step's ``(n_critic, n_rows)`` row indices of class
    ``k``, uniformly with replacement among the class's rows."""
    n_classes = len(counts)
    members = [tf.constant(np.flatnonzero(y == k)) for k in range(n_classes)]

    def pick_rows(step, k: int, n_rows: int):
        key = n_classes * step + k
        pick = tf.random.stateless_uniform(
            (n_critic, n_rows),
            seed=tf.stack([tf.constant(seed, tf.int64), key]),
            maxval=int(counts[k]),
            dtype=tf.int64,
        )
        return tf.gather(members[k], pick)

    return pick_rows


def _level_picker(
    y: np.ndarray,
    level: np.ndarray,
    n_classes: int,
    n_levels: int,
    n_critic: int,
    seed: int,
):
    """The function drawing a step's ``(n_critic, n_rows)`` row indices of class
    ``k``: each row's category first, by the log of its frequency, then a row of
    that category (CTGAN's training-by-sampling)."""
    by_level = _levels_of_classes(y, level, n_classes, n_levels)

    def pick_rows(step, k: int, n_rows: int):
        key = n_classes * step + k
        rows_sorted, offsets, sizes, logits = by_level[k]
        chosen = tf.random.stateless_categorical(
            logits,
            n_critic * n_rows,
            seed=tf.stack([tf.constant(seed + 1, tf.int64), key]),
        )[0]
        u = tf.random.stateless_uniform(
            (n_critic * n_rows,), seed=tf.stack([tf.constant(seed + 2, tf.int64), key])
        )
        size = tf.gather(sizes, chosen)
        within = tf.minimum(
            tf.cast(tf.floor(u * tf.cast(size, tf.float32)), tf.int64), size - 1
        )
        pick = tf.gather(rows_sorted, tf.gather(offsets, chosen) + within)
        return tf.reshape(pick, (n_critic, n_rows))

    return pick_rows


def _levels_of_classes(
    y: np.ndarray, level: np.ndarray, n_classes: int, n_levels: int
) -> list:
    """Per class: its rows sorted by category, where each category starts, how many
    rows it has, and the log-frequency logits of choosing it (CTGAN)."""
    out = []
    for k in range(n_classes):
        rows = np.flatnonzero(y == k)
        rows = rows[np.argsort(level[rows], kind="stable")]
        sizes = np.bincount(level[rows], minlength=n_levels)
        offsets = np.r_[0, np.cumsum(sizes)[:-1]]
        weight = np.log1p(sizes.astype(np.float64))
        with np.errstate(divide="ignore"):
            logits = np.log(weight / weight.sum()) if weight.sum() > 0 else weight
        out.append(
            (
                tf.constant(rows, tf.int64),
                tf.constant(offsets, tf.int64),
                tf.constant(sizes, tf.int64),
                tf.constant(logits[None, :], tf.float32),
            )
        )
    return out
