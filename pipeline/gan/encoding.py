"""Column encodings the GAN learns in, on top of the shared model space.

The detectors and SMOTE work in the model space of ``TabularTransformer``
(``log1p(Amount)``, standardised). The GAN may learn in a space of its own and hand
back rows in model space, so nothing downstream changes:

- ``standard``: the model space itself.
- ``mode_specific``: CTGAN's mode-specific normalisation for the multi-modal
  columns (by default ``Time`` and ``Amount``): a Bayesian Gaussian mixture per
  column; a value becomes its mode (a one-hot block the generator produces with a
  Gumbel-softmax) and its offset within the mode, ``(x - mu_k) / (4 sigma_k)``
  (a ``tanh`` output). The other columns stay as they are.
- ``quantile``: each column through its empirical CDF on the GAN's training rows,
  then the standard normal's inverse CDF (a normal-score transform). Decoding
  interpolates between the training values, so a point mass stays a point mass:
  23 % of the Kaggle frauds have ``Amount`` exactly 1.00 and 11 % exactly 0.00 or
  99.99; in this space each is an interval the generator only has to land in, and
  every row it puts there decodes to exactly that amount. With ``dequantize`` each
  training value is drawn, at every step, uniformly within its slot of the CDF
  (a tie's whole slot), instead of always at the slot's centre.

Whatever the encoding, a categorical column (its model-space code) becomes a
one-hot block the generator produces with a Gumbel-softmax head (CTGAN's way);
decoding draws the category from the generated probabilities with the caller's
seed, so every generated value is one the training rows had. An integer column
decodes to the nearest value its training rows had (whole and within range). The
column the GAN is conditioned on (``condition``) is not generated at all: the
caller gives its value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.special import ndtr, ndtri

from pipeline.core.errors import ArtifactError

Encoding = Literal["standard", "quantile", "mode_specific"]

MODE_KEYS = ("weights", "means", "sds")

MAX_KNOTS = 2_000
"""Decoding knots per column at most (a large training set keeps its quantiles)."""


@dataclass(frozen=True)
class GANColumns:
    """Which model-space columns are what, for the GAN: ``categorical`` codes
    (one-hot blocks), ``integer`` columns (decoded whole), the ``condition``
    column (one of the categorical) and the ``mode`` columns of the
    ``mode_specific`` encoding."""

    categorical: tuple[int, ...] = ()
    integer: tuple[int, ...] = ()
    condition: int | None = None
    mode: tuple[int, ...] = ()

    @classmethod
    def of(cls, transformer, config) -> GANColumns:
        """From a fitted
        :class:`~pipeline.features.transformer.TabularTransformer` and a
        :class:`~pipeline.core.config.GANConfig` (``condition_on``, ``mode_columns``:
        column names; the mode columns default to the schema's time and amount
        columns that are numeric features).

        Raises
        ------
        ConfigError
            ``condition_on`` or a mode column is not a column of the right kind.
        """
        from pipeline.core.errors import ConfigError

        names = transformer.feature_names
        categorical = tuple(transformer.categorical_features)
        condition = None
        if config.condition_on is not None:
            if config.condition_on not in names or (
                names.index(config.condition_on) not in categorical
            ):
                options = ", ".join(names[c] for c in categorical) or "none"
                raise ConfigError(
                    f"gan.condition_on {config.condition_on!r}: not a categorical "
                    f"column of the {transformer.schema.name} schema (categorical "
                    f"columns: {options})"
                )
            condition = names.index(config.condition_on)
        numeric = [
            n for i, n in enumerate(names) if i not in categorical
        ]  # integers too
        schema = transformer.schema
        wanted = config.mode_columns
        if wanted is None:
            wanted = tuple(n for n in (schema.time, schema.amount) if n in numeric)
        bad = [n for n in wanted if n not in numeric]
        if bad and config.encoding == "mode_specific":
            raise ConfigError(
                f"gan.mode_columns {list(wanted)}: {', '.join(bad)} not a numeric "
                f"column of the {schema.name} schema"
            )
        return cls(
            categorical=categorical,
            integer=tuple(transformer.integer_features),
            condition=condition,
            mode=tuple(names.index(n) for n in wanted if n in numeric),
        )


class ColumnEncoder:
    """Model space <-> the GAN's space, fitted on the GAN's training rows.

    Parameters
    ----------
    kind : {"standard", "quantile", "mode_specific"}
        How the numeric (and integer) columns are encoded.
    mode_columns : tuple of int
        ``mode_specific``: the model-space columns normalised per mode (default:
        every numeric column, as CTGAN does).
    categorical : tuple of int
        Model-space columns holding category codes: one-hot blocks.
    integer : tuple of int
        Model-space columns of whole numbers: decoded to the nearest training value.
    condition : int, optional
        A categorical column the GAN is conditioned on: left out of the GAN's
        space; :meth:`decode` takes its values.

    Attributes
    ----------
    knots_ : ndarray of shape (n_knots, n_numeric)
        ``quantile`` only: the sorted training values (or their quantiles) of the
        numeric columns, one column each; knot ``i`` sits at CDF level
        ``(i + 0.5) / n_knots``.
    levels_ : dict of int to ndarray
        Per one-hot (or integer) column, the sorted values its training rows have.
    """

    SCHEMA_VERSION = 2

    def __init__(
        self,
        kind: Encoding = "standard",
        *,
        mode_columns: tuple[int, ...] = (),
        max_modes: int = 10,
        random_state: int = 0,
        categorical: tuple[int, ...] = (),
        integer: tuple[int, ...] = (),
        condition: int | None = None,
    ):
        if kind not in ("standard", "quantile", "mode_specific"):
            raise ValueError(f"unknown GAN encoding {kind!r}")
        self.kind = kind
        self.mode_columns = tuple(int(c) for c in mode_columns)
        self.max_modes = max_modes
        self.random_state = random_state
        self.categorical = tuple(sorted(int(c) for c in categorical))
        self.integer = tuple(sorted(int(c) for c in integer))
        self.condition = None if condition is None else int(condition)
        self.knots_: np.ndarray | None = None
        self._sorted: np.ndarray | None = None
        # mode_specific: per mode column, the kept components' weights, means, sds.
        self.modes_: list[dict[str, np.ndarray]] | None = None
        self.levels_: dict[int, np.ndarray] = {}
        self.n_features_: int | None = None

    # -- which column goes where --------------------------------------------------
    @property
    def numeric_(self) -> list[int]:
        """Model-space columns encoded as numbers (integers included), in order."""
        skip = set(self.categorical) | {self.condition}
        return [c for c in range(self.n_features_) if c not in skip]

    @property
    def blocks_(self) -> list[int]:
        """Model-space columns that are one-hot blocks of the GAN's space."""
        return [c for c in self.categorical if c != self.condition]

    @property
    def _mode_local(self) -> list[int]:
        """``mode_columns`` as positions among the numeric columns."""
        numeric = self.numeric_
        return [numeric.index(c) for c in self.mode_columns]

    def fit(self, X: np.ndarray) -> ColumnEncoder:
        X = np.asarray(X, dtype=np.float64)
        self.n_features_ = X.shape[1]
        bad = [
            c
            for c in (*self.categorical, *self.integer, self.condition)
            if c is not None and not 0 <= c < X.shape[1]
        ]
        if bad or set(self.categorical) & set(self.integer):
            raise ValueError(
                f"categorical {list(self.categorical)} / integer "
                f"{list(self.integer)} / condition {self.condition} must name distinct "
                f"columns of the {X.shape[1]} features"
            )
        if self.condition is not None and self.condition not in self.categorical:
            raise ValueError("the condition column must be one of the categorical")
        numeric = X[:, self.numeric_]
        if self.kind == "mode_specific" and not self.mode_columns:
            # CTGAN's default: every numeric column, per mode.
            self.mode_columns = tuple(self.numeric_)
        if self.kind != "standard" and not np.isfinite(numeric).all():
            row, local = np.argwhere(~np.isfinite(numeric))[0]
            column = self.numeric_[local]
            raise ValueError(
                f"{self.kind} encoding: training row {row}, column {column} is "
                f"{X[row, column]}; every value must be finite"
            )
        self.levels_ = {c: np.unique(X[:, c]) for c in (*self.blocks_, *self.integer)}
        X = numeric
        if self.kind == "mode_specific":
            self._fit_modes(X)
        if self.kind == "quantile":
            self._sorted = np.sort(X, axis=0)
            n = len(X)
            if n > MAX_KNOTS:
                levels = (np.arange(MAX_KNOTS) + 0.5) / MAX_KNOTS
                # Actual data values (inverted CDF): point masses survive.
                self.knots_ = np.quantile(X, levels, axis=0, method="inverted_cdf")
            else:
                self.knots_ = self._sorted.copy()
        return self

    # -- mode-specific normalisation -------------------------------------------
    def _fit_modes(self, X: np.ndarray) -> None:
        from sklearn.mixture import BayesianGaussianMixture

        numeric = self.numeric_
        bad = [c for c in self.mode_columns if c not in numeric]
        if bad or not self.mode_columns:
            raise ValueError(
                f"mode_columns {list(self.mode_columns)} must name numeric columns of "
                f"the {self.n_features_} features"
            )
        self.modes_ = []
        for column in self._mode_local:
            values = X[:, column : column + 1]
            # CTGAN's settings: a Dirichlet-process prior that switches off unneeded
            # components; those weighing under 0.5 % are dropped.
            mixture = BayesianGaussianMixture(
                n_components=min(self.max_modes, len(values)),
                weight_concentration_prior_type="dirichlet_process",
                weight_concentration_prior=0.001,
                max_iter=200,
                random_state=self.random_state,
            ).fit(values)
            keep = mixture.weights_ > 0.005
            weights = mixture.weights_[keep]
            self.modes_.append(
                {
                    "weights": weights / weights.sum(),
                    "means": mixture.means_[keep, 0],
                    "sds": np.sqrt(mixture.covariances_[keep].reshape(-1)),
                }
            )

    @property
    def _other_columns(self) -> list[int]:
        """Numeric columns (local positions) that are not mode columns."""
        mode = self._mode_local
        return [c for c in range(len(self.numeric_)) if c not in mode]

    def _numeric_layout(self) -> list[tuple[str, int]]:
        if self.kind != "mode_specific":
            return [("linear", len(self.numeric_))] if self.numeric_ else []
        layout = [("linear", len(self._other_columns))] if self._other_columns else []
        layout.append(("tanh", len(self.mode_columns)))
        layout += [("softmax", len(m["means"])) for m in self.modes_]
        return layout

    def output_layout(self) -> list[tuple[str, int]] | None:
        """Segments of the GAN space in order (``None``: one linear block): the
        numeric columns (``mode_specific``: the other columns, each mode column's
        offset, each mode column's modes), then one softmax block per categorical
        column."""
        blocks = [("softmax", len(self.levels_[c])) for c in self.blocks_]
        if self.kind != "mode_specific" and not blocks:
            return None
        return self._numeric_layout() + blocks

    @property
    def _n_numeric_encoded(self) -> int:
        return sum(width for _, width in self._numeric_layout())

    @property
    def n_encoded(self) -> int:
        """Width of a row in the GAN's space."""
        return self._n_numeric_encoded + sum(len(self.levels_[c]) for c in self.blocks_)

    def _one_hot(self, X: np.ndarray) -> np.ndarray:
        """The categorical columns as one-hot blocks (zero columns when none)."""
        parts = [
            (X[:, c][:, None] == self.levels_[c][None, :]).astype(np.float64)
            for c in self.blocks_
        ]
        return np.hstack(parts) if parts else np.empty((len(X), 0))

    def _posterior(self, values: np.ndarray, modes: dict) -> np.ndarray:
        z = (values[:, None] - modes["means"]) / modes["sds"]
        log_p = np.log(modes["weights"]) - np.log(modes["sds"]) - 0.5 * z**2
        log_p -= log_p.max(axis=1, keepdims=True)
        p = np.exp(log_p)
        return p / p.sum(axis=1, keepdims=True)

    def _encode_modes(
        self, X: np.ndarray, rng: np.random.Generator | None
    ) -> np.ndarray:
        """The numeric columns ``X`` (local positions) in the mode-specific space."""
        parts = [X[:, self._other_columns]]
        offsets, blocks = [], []
        for column, modes in zip(self._mode_local, self.modes_, strict=True):
            p = self._posterior(X[:, column], modes)
            if rng is None:
                k = p.argmax(axis=1)
            else:  # CTGAN: each row's mode drawn from its posterior
                k = (rng.random(len(p))[:, None] > p.cumsum(axis=1)).sum(axis=1)
                k = np.minimum(k, p.shape[1] - 1)
            offsets.append(
                np.clip(
                    (X[:, column] - modes["means"][k]) / (4 * modes["sds"][k]),
                    -0.99,
                    0.99,
                )
            )
            blocks.append(np.eye(p.shape[1])[k])
        return np.hstack([*parts, np.column_stack(offsets), *blocks])

    def _decode_modes(self, Z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n_other = len(self._other_columns)
        out = np.empty((len(Z), len(self.numeric_)))
        out[:, self._other_columns] = Z[:, :n_other]
        start = n_other + len(self.mode_columns)
        for i, (column, modes) in enumerate(
            zip(self._mode_local, self.modes_, strict=True)
        ):
            width = len(modes["means"])
            start_i = start
            start += width
            # The mode is drawn from the generator's probabilities (Gumbel-max at
            # inference), with the caller's seed.
            k = _draw(Z[:, start_i:start], rng)
            offset = np.clip(Z[:, n_other + i], -1.0, 1.0)
            out[:, column] = offset * 4 * modes["sds"][k] + modes["means"][k]
        return out

    # -- training rows ----------------------------------------------------------
    def cdf_bounds(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each numeric value of the model-space rows ``X`` its slot
        ``[F(x-), F(x)]`` of the training rows' empirical CDF (the whole block for
        tied values); ``quantile`` only. Shape ``(n_samples, n_numeric)``."""
        if self._sorted is None:
            raise ArtifactError("cdf_bounds needs the training rows (call fit first)")
        X = np.asarray(X, dtype=np.float64)[:, self.numeric_]
        n = len(self._sorted)
        low = np.empty_like(X)
        high = np.empty_like(X)
        for j in range(X.shape[1]):
            column = self._sorted[:, j]
            low[:, j] = np.searchsorted(column, X[:, j], side="left") / n
            high[:, j] = np.searchsorted(column, X[:, j], side="right") / n
        return low, high

    def uniform_clip(self) -> float:
        """CDF levels are kept in ``[c, 1 - c]`` so the normal score stays finite."""
        n = len(self._sorted) if self._sorted is not None else len(self.knots_)
        return 0.1 / n

    def fixed_rows(self, X: np.ndarray) -> np.ndarray | None:
        """The part of the training rows' GAN space that dequantisation leaves as
        it is (the one-hot blocks), or ``None`` when there is none."""
        return self._one_hot(np.asarray(X, dtype=np.float64)) if self.blocks_ else None

    def training_rows(self, X: np.ndarray) -> np.ndarray:
        """The training rows in the GAN's space (``quantile``: each at its slot's
        centre; ``mode_specific``: each row's mode drawn from its posterior)."""
        X = np.asarray(X, dtype=np.float64)
        numeric = X[:, self.numeric_]
        if self.kind == "standard":
            encoded = numeric
        elif self.kind == "mode_specific":
            rng = np.random.default_rng(self.random_state)
            encoded = self._encode_modes(numeric, rng)
        else:
            low, high = self.cdf_bounds(X)
            c = self.uniform_clip()
            encoded = ndtri(np.clip((low + high) / 2, c, 1 - c))
        return self._with_blocks(encoded, X)

    def _with_blocks(self, encoded: np.ndarray, X: np.ndarray) -> np.ndarray:
        if not self.blocks_:
            return encoded
        return np.hstack([encoded, self._one_hot(X)])

    # -- any rows ---------------------------------------------------------------
    def decode(
        self,
        Z: np.ndarray,
        random_state: int | np.random.Generator = 0,
        condition: np.ndarray | None = None,
    ) -> np.ndarray:
        """GAN space -> model space (float64). ``quantile``: values beyond the
        training range decode to its ends. Modes (``mode_specific``) and
        categories are drawn from the generated probabilities with
        ``random_state``; integer columns take the nearest training value.
        ``condition``: the values of the conditioned column, one per row."""
        Z = np.asarray(Z, dtype=np.float64)
        rng = np.random.default_rng(random_state)
        width = self._n_numeric_encoded
        numeric = self._decode_numeric(Z[:, :width], rng)
        if not (self.blocks_ or self.integer or self.condition is not None):
            return numeric
        out = np.empty((len(Z), self.n_features_))
        out[:, self.numeric_] = numeric
        start = width
        for column in self.blocks_:
            levels = self.levels_[column]
            out[:, column] = levels[_draw(Z[:, start : start + len(levels)], rng)]
            start += len(levels)
        for column in self.integer:
            out[:, column] = _nearest(out[:, column], self.levels_[column])
        if self.condition is not None:
            if condition is None or len(condition) != len(Z):
                raise ValueError("decode needs the conditioned column's values")
            out[:, self.condition] = condition
        return out

    def _decode_numeric(self, Z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.kind == "standard":
            return Z
        self._check_fitted()
        if self.kind == "mode_specific":
            return self._decode_modes(Z, rng)
        # Linear interpolation between the knots, which sit at the levels
        # (k + 0.5) / n: the knot below a value is found by arithmetic instead of
        # a search (np.interp per column took a sixth of `fraudaug generate`).
        n = len(self.knots_)
        position = ndtr(Z) * n - 0.5
        below = np.clip(np.floor(position), 0, n - 2).astype(np.intp)
        weight = np.clip(position - below, 0.0, 1.0)
        low = np.take_along_axis(self.knots_, below, axis=0)
        high = np.take_along_axis(self.knots_, below + 1, axis=0)
        return low + weight * (high - low)

    def encode(self, X: np.ndarray) -> np.ndarray:
        """Model space -> GAN space, the inverse of :meth:`decode` where it has one
        (ties map to the middle of their flat stretch; categories to their exact
        one-hot block)."""
        X = np.asarray(X, dtype=np.float64)
        numeric = X[:, self.numeric_]
        if self.kind == "standard":
            return self._with_blocks(numeric, X)
        self._check_fitted()
        if self.kind == "mode_specific":
            return self._with_blocks(self._encode_modes(numeric, None), X)
        n = len(self.knots_)
        levels = (np.arange(n) + 0.5) / n
        c = 0.5 / n
        out = np.empty_like(numeric)
        for j in range(numeric.shape[1]):
            knots = self.knots_[:, j]
            # Averaging the interpolation over ascending and descending knots puts a
            # tie in the middle of its flat stretch (as scikit-learn's
            # QuantileTransformer does).
            up = np.interp(numeric[:, j], knots, levels)
            down = -np.interp(-numeric[:, j], -knots[::-1], -levels[::-1])
            out[:, j] = ndtri(np.clip((up + down) / 2, c, 1 - c))
        return self._with_blocks(out, X)

    def _check_fitted(self) -> None:
        if (self.kind == "quantile" and self.knots_ is None) or (
            self.kind == "mode_specific" and self.modes_ is None
        ):
            raise ArtifactError("ColumnEncoder is not fitted")

    # -- JSON -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        return {
            "schema_version": self.SCHEMA_VERSION,
            "kind": self.kind,
            "n_features": self.n_features_,
            "knots": None if self.knots_ is None else self.knots_.tolist(),
            "mode_columns": list(self.mode_columns),
            "modes": None
            if self.modes_ is None
            else [{k: v.tolist() for k, v in m.items()} for m in self.modes_],
            "categorical": list(self.categorical),
            "integer": list(self.integer),
            "condition": self.condition,
            "levels": {str(c): v.tolist() for c, v in self.levels_.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ColumnEncoder:
        # Version 1 (before schemas) had numeric columns only.
        if data.get("schema_version") not in (1, cls.SCHEMA_VERSION):
            raise ArtifactError(
                f"GAN encoder schema_version {data.get('schema_version')!r} is not "
                f"supported (expected {cls.SCHEMA_VERSION})"
            )
        try:
            encoder = cls(
                data["kind"],
                mode_columns=tuple(data["mode_columns"]),
                categorical=tuple(data.get("categorical", ())),
                integer=tuple(data.get("integer", ())),
                condition=data.get("condition"),
            )
            encoder.n_features_ = data["n_features"]
            encoder.levels_ = {
                int(c): np.asarray(v, dtype=np.float64)
                for c, v in data.get("levels", {}).items()
            }
            if data["knots"] is not None:
                encoder.knots_ = np.asarray(data["knots"], dtype=np.float64)
                if encoder.knots_.ndim != 2 or not np.isfinite(encoder.knots_).all():
                    raise ValueError("knots must be a finite 2-D array")
            if data["modes"] is not None:
                encoder.modes_ = [
                    {k: np.asarray(m[k], dtype=np.float64) for k in MODE_KEYS}
                    for m in data["modes"]
                ]
        except (KeyError, TypeError, ValueError) as exc:
            raise ArtifactError(f"malformed GAN encoder JSON: {exc}") from exc
        return encoder


def _draw(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index per row, drawn from the (softmax) probabilities of a block."""
    p = np.clip(probabilities, 0.0, None) + 1e-12
    p /= p.sum(axis=1, keepdims=True)
    k = (rng.random(len(p))[:, None] > p.cumsum(axis=1)).sum(axis=1)
    return np.minimum(k, p.shape[1] - 1)


def _nearest(values: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Each value replaced by the nearest of the sorted ``levels``."""
    above = np.clip(np.searchsorted(levels, values), 1, len(levels) - 1)
    below = above - 1
    if len(levels) == 1:
        return np.full_like(values, levels[0])
    nearer_below = np.abs(values - levels[below]) <= np.abs(levels[above] - values)
    return np.where(nearer_below, levels[below], levels[above])
