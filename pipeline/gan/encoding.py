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
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from scipy.special import ndtr, ndtri

from pipeline.errors import ArtifactError

Encoding = Literal["standard", "quantile", "mode_specific"]

MODE_KEYS = ("weights", "means", "sds")

MAX_KNOTS = 2_000
"""Decoding knots per column at most (a large training set keeps its quantiles)."""


class ColumnEncoder:
    """Model space <-> the GAN's space, fitted on the GAN's training rows.

    Parameters
    ----------
    kind : {"standard", "quantile"}

    Attributes
    ----------
    knots_ : ndarray of shape (n_knots, n_features)
        ``quantile`` only: the sorted training values (or their quantiles), one
        column each; knot ``i`` sits at CDF level ``(i + 0.5) / n_knots``.
    """

    SCHEMA_VERSION = 1

    def __init__(
        self,
        kind: Encoding = "standard",
        *,
        mode_columns: tuple[int, ...] = (),
        max_modes: int = 10,
        random_state: int = 0,
    ):
        if kind not in ("standard", "quantile", "mode_specific"):
            raise ValueError(f"unknown GAN encoding {kind!r}")
        self.kind = kind
        self.mode_columns = tuple(int(c) for c in mode_columns)
        self.max_modes = max_modes
        self.random_state = random_state
        self.knots_: np.ndarray | None = None
        self._sorted: np.ndarray | None = None
        # mode_specific: per mode column, the kept components' weights, means, sds.
        self.modes_: list[dict[str, np.ndarray]] | None = None
        self.n_features_: int | None = None

    def fit(self, X: np.ndarray) -> ColumnEncoder:
        X = np.asarray(X, dtype=np.float64)
        self.n_features_ = X.shape[1]
        if self.kind != "standard" and not np.isfinite(X).all():
            row, column = np.argwhere(~np.isfinite(X))[0]
            raise ValueError(
                f"{self.kind} encoding: training row {row}, column {column} is "
                f"{X[row, column]}; every value must be finite"
            )
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

        bad = [c for c in self.mode_columns if not 0 <= c < X.shape[1]]
        if bad or not self.mode_columns:
            raise ValueError(
                f"mode_columns {list(self.mode_columns)} must name columns of the "
                f"{X.shape[1]} features"
            )
        self.modes_ = []
        for column in self.mode_columns:
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
        return [c for c in range(self.n_features_) if c not in self.mode_columns]

    def output_layout(self) -> list[tuple[str, int]] | None:
        """Segments of the GAN space in order (``None``: one linear block):
        the other columns, each mode column's offset, each mode column's modes."""
        if self.kind != "mode_specific":
            return None
        layout = [("linear", len(self._other_columns))] if self._other_columns else []
        layout.append(("tanh", len(self.mode_columns)))
        layout += [("softmax", len(m["means"])) for m in self.modes_]
        return layout

    @property
    def n_encoded(self) -> int:
        """Width of a row in the GAN's space."""
        if self.kind != "mode_specific":
            return self.n_features_
        return sum(width for _, width in self.output_layout())

    def _posterior(self, values: np.ndarray, modes: dict) -> np.ndarray:
        z = (values[:, None] - modes["means"]) / modes["sds"]
        log_p = np.log(modes["weights"]) - np.log(modes["sds"]) - 0.5 * z**2
        log_p -= log_p.max(axis=1, keepdims=True)
        p = np.exp(log_p)
        return p / p.sum(axis=1, keepdims=True)

    def _encode_modes(
        self, X: np.ndarray, rng: np.random.Generator | None
    ) -> np.ndarray:
        parts = [X[:, self._other_columns]]
        offsets, blocks = [], []
        for column, modes in zip(self.mode_columns, self.modes_, strict=True):
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
        out = np.empty((len(Z), self.n_features_))
        out[:, self._other_columns] = Z[:, :n_other]
        start = n_other + len(self.mode_columns)
        for i, (column, modes) in enumerate(
            zip(self.mode_columns, self.modes_, strict=True)
        ):
            width = len(modes["means"])
            p = np.clip(Z[:, start : start + width], 0.0, None) + 1e-12
            p /= p.sum(axis=1, keepdims=True)
            start += width
            # The mode is drawn from the generator's probabilities (Gumbel-max at
            # inference), with the caller's seed.
            k = (rng.random(len(p))[:, None] > p.cumsum(axis=1)).sum(axis=1)
            k = np.minimum(k, width - 1)
            offset = np.clip(Z[:, n_other + i], -1.0, 1.0)
            out[:, column] = offset * 4 * modes["sds"][k] + modes["means"][k]
        return out

    # -- training rows ----------------------------------------------------------
    def cdf_bounds(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each value its slot ``[F(x-), F(x)]`` of the training rows' empirical
        CDF (the whole block for tied values); ``quantile`` only."""
        if self._sorted is None:
            raise ArtifactError("cdf_bounds needs the training rows (call fit first)")
        X = np.asarray(X, dtype=np.float64)
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

    def training_rows(self, X: np.ndarray) -> np.ndarray:
        """The training rows in the GAN's space (``quantile``: each at its slot's
        centre; ``mode_specific``: each row's mode drawn from its posterior)."""
        if self.kind == "standard":
            return np.asarray(X, dtype=np.float64)
        if self.kind == "mode_specific":
            rng = np.random.default_rng(self.random_state)
            return self._encode_modes(np.asarray(X, dtype=np.float64), rng)
        low, high = self.cdf_bounds(X)
        c = self.uniform_clip()
        return ndtri(np.clip((low + high) / 2, c, 1 - c))

    # -- any rows ---------------------------------------------------------------
    def decode(self, Z: np.ndarray, random_state: int = 0) -> np.ndarray:
        """GAN space -> model space (float64). ``quantile``: values beyond the
        training range decode to its ends. ``mode_specific``: each row's mode is
        drawn from the generated probabilities with ``random_state``."""
        Z = np.asarray(Z, dtype=np.float64)
        if self.kind == "standard":
            return Z
        if self.kind == "mode_specific":
            self._check_fitted()
            return self._decode_modes(Z, np.random.default_rng(random_state))
        self._check_fitted()
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
        (ties map to the middle of their flat stretch)."""
        X = np.asarray(X, dtype=np.float64)
        if self.kind == "standard":
            return X
        self._check_fitted()
        if self.kind == "mode_specific":
            return self._encode_modes(X, None)
        n = len(self.knots_)
        levels = (np.arange(n) + 0.5) / n
        c = 0.5 / n
        out = np.empty_like(X)
        for j in range(X.shape[1]):
            knots = self.knots_[:, j]
            # Averaging the interpolation over ascending and descending knots puts a
            # tie in the middle of its flat stretch (as scikit-learn's
            # QuantileTransformer does).
            up = np.interp(X[:, j], knots, levels)
            down = -np.interp(-X[:, j], -knots[::-1], -levels[::-1])
            out[:, j] = ndtri(np.clip((up + down) / 2, c, 1 - c))
        return out

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
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ColumnEncoder:
        if data.get("schema_version") != cls.SCHEMA_VERSION:
            raise ArtifactError(
                f"GAN encoder schema_version {data.get('schema_version')!r} is not "
                f"supported (expected {cls.SCHEMA_VERSION})"
            )
        try:
            encoder = cls(data["kind"], mode_columns=tuple(data["mode_columns"]))
            encoder.n_features_ = data["n_features"]
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
