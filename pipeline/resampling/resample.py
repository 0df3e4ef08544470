"""A method's sampler run on the training rows: the rows it hands the detector,
which of them it added, and each one's weight. Samplers touch training rows only;
validation and test rows never pass through here."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.core.compat import imblearn_under_samples
from pipeline.core.memory import bounded_neighbour_search
from pipeline.resampling.plugins import OneHotCategories, PluginError, not_codes


@dataclass(frozen=True)
class Resampled:
    """Training rows after resampling.

    Attributes
    ----------
    X, y : arrays
    weight : array or None
        Per row (None: every row weighs 1).
    n_added : int
        Rows the sampler added.
    """

    X: np.ndarray
    y: np.ndarray
    weight: np.ndarray | None
    n_added: int


def resample(
    sampler,
    X: np.ndarray,
    y: np.ndarray,
    *,
    sample_weight: np.ndarray | None = None,
    synthetic_weight: float = 1.0,
    check: bool = False,
    categories: dict[int, int] | None = None,
) -> Resampled:
    """Run ``sampler`` (``None``: no resampling) on training rows ``X``, ``y``.

    The rows it added weigh ``synthetic_weight`` (real rows 1). ``sample_weight``
    (per training row: sampled rows, :func:`pipeline.features.rows.sample_rows`)
    stays with each kept row through the sampler.

    With ``check`` (a plugin's sampler) its output is held to the contract
    fraudaug relies on, and a breach raises :class:`PluginError`: as many columns
    and labels as rows, finite values, every category code one the training rows
    have (``categories``: column -> its number of categories), and (an
    over-sampler) the training rows first, in order.
    """
    if sampler is None:
        return Resampled(X, y, sample_weight, 0)
    with bounded_neighbour_search():
        X_res, y_res = sampler.fit_resample(X, y)
    if check:
        _check_output(sampler, X, X_res, y_res, categories or {})
    added = added_rows(sampler, len(y), len(y_res))
    if sample_weight is None:
        weight = (
            None if synthetic_weight == 1.0 else np.where(added, synthetic_weight, 1.0)
        )
    else:
        origin = kept_rows(sampler, len(y), len(y_res))
        weight = np.where(
            origin >= 0, np.asarray(sample_weight)[origin], synthetic_weight
        )
    return Resampled(X_res, y_res, weight, int(added.sum()))


def _cleaner(sampler):
    return getattr(sampler, "enn_", None) or getattr(sampler, "tomek_", None)


def added_rows(sampler, n_original: int, n_resampled: int) -> np.ndarray:
    """Which rows of a fitted sampler's output it added (True) rather than kept.

    imbalanced-learn's over-samplers and ``GANOverSampler`` return the original
    rows first and the new ones after them; the combined samplers then clean that
    output, and their cleaner's ``sample_indices_`` say which of its rows survived.
    (An under-sampler returns fewer rows than it was given: none added.)
    """
    if sampler is None:
        return np.zeros(n_resampled, dtype=bool)
    cleaner = _cleaner(sampler)
    if cleaner is not None:
        return np.asarray(cleaner.sample_indices_) >= n_original
    return np.arange(n_resampled) >= n_original


def kept_rows(sampler, n_original: int, n_resampled: int) -> np.ndarray:
    """For each row of a fitted sampler's output, the original row it is (-1 for a
    row it added): under-samplers say which rows they kept (``sample_indices_``);
    over-samplers keep the original rows first, in order; the combined samplers'
    cleaner says which of those survived."""
    if sampler is None:
        return np.arange(n_resampled)
    if imblearn_under_samples(sampler):
        return np.asarray(sampler.sample_indices_)
    cleaner = _cleaner(sampler)
    position = np.arange(n_resampled)
    if cleaner is not None:
        position = np.asarray(cleaner.sample_indices_)
    return np.where(position < n_original, position, -1)


def _check_output(sampler, X, X_res, y_res, categories: dict[int, int]) -> None:
    inner = sampler.sampler if isinstance(sampler, OneHotCategories) else sampler
    name = type(inner).__name__
    X_res = np.asarray(X_res)
    if X_res.ndim != 2 or X_res.shape[1] != np.shape(X)[1]:
        raise PluginError(
            f"{name}.fit_resample returned rows of shape {X_res.shape}; the "
            f"training rows have {np.shape(X)[1]} columns"
        )
    if len(y_res) != len(X_res):
        raise PluginError(
            f"{name}.fit_resample returned {len(X_res)} rows and {len(y_res)} labels"
        )
    if not np.isfinite(X_res).all():
        raise PluginError(f"{name}.fit_resample returned missing or infinite values")
    for column, n_categories in categories.items():
        codes = X_res[:, column]
        bad = not_codes(codes, n_categories)
        if bad.any():
            raise PluginError(
                f"{name}.fit_resample returned {codes[bad][0]!r} in column {column}, "
                f"which holds category codes 0 to {n_categories - 1}"
            )
    if imblearn_under_samples(sampler):
        if not hasattr(sampler, "sample_indices_"):
            raise PluginError(
                f"{name} is an under-sampler but does not say which rows it kept "
                "(sample_indices_)"
            )
        return
    if _cleaner(sampler) is None and not (
        len(X_res) >= len(X) and np.array_equal(X_res[: len(X)], np.asarray(X))
    ):
        raise PluginError(
            f"{name}.fit_resample did not return the training rows first, in order "
            "(an over-sampler keeps them and adds its rows after them; an "
            "under-sampler says which it kept in sample_indices_)"
        )
