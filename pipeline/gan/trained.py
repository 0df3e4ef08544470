"""A fitted generator: drawing rows from it (in model space, decoded, filtered)."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from pipeline.core.errors import ConfigError
from pipeline.gan.encoding import ColumnEncoder

SAMPLE_BLOCK = 8_192
"""Rows drawn per generator call when sampling (see :meth:`TrainedGAN.iter_sample`)."""


@dataclass(frozen=True)
class Conditions:
    """The categorical column a GAN is conditioned on, beside the class.

    ``column``: its model-space position; ``levels``: the codes its training rows
    have (the condition vector holds one-hot ``levels`` after the one-hot class);
    ``frequencies``: per class index, how often each level occurs among that
    class's training rows (unconditional draws follow them).
    """

    column: int
    levels: tuple[float, ...]
    frequencies: dict[int, tuple[float, ...]]

    @classmethod
    def fit(cls, column: int, X: np.ndarray, y: np.ndarray) -> Conditions:
        values = np.asarray(X)[:, column]
        levels = np.unique(values)
        frequencies = {}
        for k in np.unique(y):
            counts = np.array([(values[y == k] == v).sum() for v in levels], float)
            frequencies[int(k)] = tuple((counts / counts.sum()).tolist())
        return cls(column, tuple(levels.tolist()), frequencies)

    def index_of(self, X: np.ndarray) -> np.ndarray:
        """Each row's level index (rows are training rows: every code is known)."""
        return np.searchsorted(np.asarray(self.levels), np.asarray(X)[:, self.column])

    def one_hot(self, index: np.ndarray) -> np.ndarray:
        return np.eye(len(self.levels), dtype=np.float32)[index]

    def draw(self, n: int, label: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` level indices as the class's training rows have them."""
        p = np.asarray(self.frequencies[label])
        return np.minimum(
            (rng.random(n)[:, None] > np.cumsum(p)).sum(axis=1), len(p) - 1
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "levels": list(self.levels),
            "frequencies": {str(k): list(v) for k, v in self.frequencies.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Conditions | None:
        if data is None:
            return None
        return cls(
            int(data["column"]),
            tuple(float(v) for v in data["levels"]),
            {int(k): tuple(v) for k, v in data["frequencies"].items()},
        )


@dataclass
class TrainedGAN:
    """A fitted generator and what it takes to use and describe it.

    ``encoder`` maps the generator's space back to model space; ``filter_model``
    (an ``XGBClassifier`` or the critic), when set, drops the most synthetic-looking
    share of each draw of class ``meta["filter_label"]`` (see :meth:`sample`).
    """

    generator: keras.Model
    latent_dim: int
    n_features: int
    fingerprint: str
    history: list[dict[str, float]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    encoder: ColumnEncoder = field(default_factory=ColumnEncoder)
    filter_model: Any = None
    conditions: Conditions | None = None

    def sample(
        self,
        n_samples: int,
        *,
        label: int = 1,
        random_state: int = 0,
        where: float | None = None,
    ) -> np.ndarray:
        """``n_samples`` generated rows of class ``label`` in model space (float64):
        the rows of :meth:`iter_sample`, concatenated."""
        parts = list(
            self.iter_sample(
                n_samples, label=label, random_state=random_state, where=where
            )
        )
        return np.concatenate(parts) if parts else np.empty((0, self.n_features))

    def iter_sample(
        self,
        n_samples: int,
        *,
        label: int = 1,
        random_state: int = 0,
        chunk_rows: int = SAMPLE_BLOCK,
        where: float | None = None,
    ) -> Iterator[np.ndarray]:
        """The rows of :meth:`sample` in chunks of ``chunk_rows`` (the last one
        shorter), produced as they are consumed: memory does not grow with
        ``n_samples``.

        Rows are drawn in blocks of :data:`SAMPLE_BLOCK` with one noise stream, so
        the same seed gives the same rows whatever ``chunk_rows``. With a filter,
        ``n_samples / (1 - filter_share)`` rows are drawn and the most
        synthetic-looking ones of each block dropped (the block's share of the
        ``n_samples`` kept); the rest keep their order.

        A GAN conditioned on a categorical column (:attr:`conditions`) draws each
        row's category as the class's training rows have them, or gives every row
        the code ``where``.
        """
        if chunk_rows < 1:
            raise ConfigError(f"chunk_rows must be at least 1, got {chunk_rows}")
        filtered, n_draw = self._draw_plan(n_samples, label)
        fixed_level = self._fixed_level(where)
        blocks = self._blocks(
            n_samples,
            n_draw,
            label=label,
            random_state=random_state,
            filtered=filtered,
            fixed_level=fixed_level,
        )
        yield from _in_chunks(blocks, chunk_rows)

    def _draw_plan(self, n_samples: int, label: int) -> tuple[bool, int]:
        """Whether draws of class ``label`` are filtered, and how many rows to draw
        for ``n_samples`` kept (``n_samples / (1 - filter_share)`` when filtered)."""
        kind = self.meta.get("filter", "none")
        share = float(self.meta.get("filter_share", 0.0))
        filtered = (
            self.filter_model is not None
            and kind != "none"
            and share > 0
            and label == self.meta.get("filter_label")
        )
        n_draw = int(np.ceil(n_samples / (1.0 - share))) if filtered else n_samples
        return filtered, n_draw

    def _fixed_level(self, where: float | None) -> int | None:
        """The level index of the conditioned column's code ``where`` (``None``
        without one); :class:`ConfigError` for a code the GAN cannot draw."""
        if where is None:
            return None
        conditions = self.conditions
        if conditions is None or where not in conditions.levels:
            raise ConfigError(
                f"this GAN cannot draw rows with code {where} of a conditioned "
                "column (see TrainedGAN.conditions)"
            )
        return conditions.levels.index(where)

    def _blocks(
        self,
        n_samples: int,
        n_draw: int,
        *,
        label: int,
        random_state: int,
        filtered: bool,
        fixed_level: int | None,
    ) -> Iterator[np.ndarray]:
        """The kept rows of each block of :data:`SAMPLE_BLOCK` drawn rows (of
        ``n_draw`` in all), decoded, in order."""
        # One generator each for the noise and the decoding, consumed block by
        # block: a block's rows do not depend on how the output is chunked.
        noise = np.random.default_rng(random_state)
        decoding = np.random.default_rng(random_state)
        temperature = float(self.meta.get("temperature", 1.0))
        drawing = None
        if self.conditions is not None:
            drawing = np.random.default_rng([random_state, 1])
        kept = 0
        for start in range(0, n_draw, SAMPLE_BLOCK):
            stop = min(start + SAMPLE_BLOCK, n_draw)
            extra, values = self._block_levels(
                stop - start, label, fixed_level, drawing
            )
            Z = generate_rows(
                self.generator,
                stop - start,
                latent_dim=self.latent_dim,
                label=label,
                random_state=noise,
                temperature=temperature,
                extra=extra,
            )
            X = self.encoder.decode(Z, random_state=decoding, condition=values)
            if filtered:
                keep_to = n_samples if stop == n_draw else stop * n_samples // n_draw
                realness = self._realness(Z, X, label, extra)
                order = np.argsort(-realness, kind="stable")[: keep_to - kept]
                X = X[np.sort(order)]
                kept = keep_to
            yield X

    def _block_levels(
        self,
        n: int,
        label: int,
        fixed_level: int | None,
        drawing: np.random.Generator | None,
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """A block's conditioned categories: one-hot (the generator's extra
        condition) and as codes (for decoding); ``(None, None)`` for a GAN
        conditioned on the class alone. Each row's is ``fixed_level``, or drawn
        as the class's training rows have them."""
        conditions = self.conditions
        if conditions is None:
            return None, None
        index = (
            np.full(n, fixed_level)
            if fixed_level is not None
            else conditions.draw(n, label, drawing)
        )
        return conditions.one_hot(index), np.asarray(conditions.levels)[index]

    def _realness(
        self,
        Z: np.ndarray,
        X: np.ndarray,
        label: int,
        extra: np.ndarray | None = None,
    ) -> np.ndarray:
        """Higher for rows that look more real to the filter (``Z``: the rows in
        the generator's space, ``X``: the same rows decoded, ``extra``: their
        conditioned category, one-hot)."""
        if self.meta["filter"] == "classifier":
            return -self.filter_model.predict_proba(X)[:, 1]
        condition = condition_matrix(self.generator, len(Z), label, extra)
        critic = inference_function(self.filter_model)
        Z = Z.astype(np.float32)
        scores = [
            np.asarray(
                critic(
                    tf.constant(Z[i : i + SAMPLE_BLOCK]),
                    tf.constant(condition[i : i + SAMPLE_BLOCK]),
                )
            )
            for i in range(0, len(Z), SAMPLE_BLOCK)
        ]
        return np.concatenate(scores).astype(np.float64)[:, 0]


def _in_chunks(blocks: Iterator[np.ndarray], chunk_rows: int) -> Iterator[np.ndarray]:
    """The rows of ``blocks`` in chunks of ``chunk_rows`` (the last one shorter),
    each produced as soon as its rows are drawn."""
    pending: list[np.ndarray] = []
    n_pending = 0
    for X in blocks:
        pending.append(X)
        n_pending += len(X)
        while n_pending >= chunk_rows:
            block = np.concatenate(pending) if len(pending) > 1 else pending[0]
            yield block[:chunk_rows]
            rest = block[chunk_rows:]
            pending, n_pending = ([rest] if len(rest) else []), len(rest)
    if n_pending:
        yield np.concatenate(pending) if len(pending) > 1 else pending[0]


_INFERENCE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def inference_function(model: keras.Model):
    """``model``'s forward pass (``training=False``) as one concrete graph for any
    batch size, traced once per network and kept while the network lives.

    A ``tf.function`` per network retraced at every new batch size (the selection
    draws as many rows as there are validation frauds, the sampler other counts),
    and TensorFlow keys its retracing statistics by the wrapped code, which all
    networks share: a few networks in one process added up to its "triggered
    tf.function retracing" warning. Tracing here is explicit, with the batch
    dimension left open, so there is nothing to retrace.
    """
    if model not in _INFERENCE:
        ref = weakref.ref(model)  # the graph holds the variables, not the network

        def forward(*inputs):
            return ref()(list(inputs), training=False)

        specs = [
            tf.TensorSpec([None, *tensor.shape[1:]], tf.float32)
            for tensor in model.inputs
        ]
        _INFERENCE[model] = tf.function(forward).get_concrete_function(*specs)
    return _INFERENCE[model]


def condition_matrix(
    generator: keras.Model, n: int, label: int, extra: np.ndarray | None = None
) -> np.ndarray:
    """The generator's condition input for ``n`` rows of class ``label``: the
    one-hot class, then ``extra`` (a conditioned category, one-hot) when given."""
    width = int(generator.inputs[1].shape[-1])
    n_classes = width - (0 if extra is None else extra.shape[1])
    condition = np.zeros((n, width), np.float32)
    condition[:, label] = 1.0
    if extra is not None:
        condition[:, n_classes:] = extra
    return condition


def generate_rows(
    generator: keras.Model,
    n_samples: int,
    *,
    latent_dim: int,
    label: int = 1,
    random_state: int | np.random.Generator = 0,
    batch_size: int = SAMPLE_BLOCK,
    temperature: float = 1.0,
    extra: np.ndarray | None = None,
) -> np.ndarray:
    """Draw ``n_samples`` rows of class ``label`` in the generator's space (float64).

    The noise comes from a NumPy generator seeded by ``random_state`` (or that
    generator itself, whose stream then continues), so the same generator and
    seed give the same rows; ``temperature`` scales it (below 1:
    rows nearer the generator's modes, the "truncation trick"). The network runs as
    one traced graph on batches small enough for the CPU caches (much faster than
    large eager calls).
    """
    rng = np.random.default_rng(random_state)
    condition = condition_matrix(generator, min(batch_size, max(n_samples, 1)), label)
    infer = inference_function(generator)
    parts = []
    for start in range(0, n_samples, batch_size):
        n = min(batch_size, n_samples - start)
        z = rng.standard_normal((n, latent_dim), dtype=np.float32)
        if temperature != 1.0:
            z *= np.float32(temperature)
        if extra is not None:
            condition = condition_matrix(generator, n, label, extra[start : start + n])
        out = infer(tf.constant(z), tf.constant(condition[:n]))
        parts.append(np.asarray(out, dtype=np.float64))
    if not parts:
        return np.empty((0, generator.output_shape[-1]))
    return np.concatenate(parts)
