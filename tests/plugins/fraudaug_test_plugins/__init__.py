"""fraudaug's test plugins (entry points in the dist-info beside this package;
``tests/conftest.py`` puts this folder on the path): samplers and generators that
keep their contract, and others that break it each in one way."""

import numpy as np
import pandas as pd
from imblearn.over_sampling.base import BaseOverSampler
from imblearn.under_sampling.base import BaseUnderSampler
from sklearn.utils import check_random_state


class BootstrapOverSampler(BaseOverSampler):
    """Training frauds drawn again with replacement (a test plugin)."""

    def __init__(self, *, sampling_strategy="auto", random_state=None):
        super().__init__(sampling_strategy=sampling_strategy)
        self.random_state = random_state

    def _fit_resample(self, X, y):
        rng = check_random_state(self.random_state)
        X_parts, y_parts = [X], [y]
        for label, n in self.sampling_strategy_.items():
            rows = np.flatnonzero(y == label)
            X_parts.append(X[rng.choice(rows, n)])
            y_parts.append(np.full(n, label))
        return np.vstack(X_parts), np.concatenate(y_parts)


class RandomHalfUnderSampler(BaseUnderSampler):
    """Legitimate rows kept at random, in their order (a test plugin)."""

    fraudaug_complexity = 2  # as simple as imbalanced-learn's random under-sampler

    def __init__(self, *, sampling_strategy="auto", random_state=None):
        super().__init__(sampling_strategy=sampling_strategy)
        self.random_state = random_state

    def _fit_resample(self, X, y):
        rng = check_random_state(self.random_state)
        keep = [np.flatnonzero(~np.isin(y, list(self.sampling_strategy_)))]
        for label, n in self.sampling_strategy_.items():
            keep.append(np.sort(rng.choice(np.flatnonzero(y == label), n, False)))
        self.sample_indices_ = np.sort(np.concatenate(keep))
        return X[self.sample_indices_], y[self.sample_indices_]


class RaisingSampler(BaseOverSampler):
    """A sampler that fails (a test plugin)."""

    def __init__(self, *, sampling_strategy="auto", random_state=None):
        super().__init__(sampling_strategy=sampling_strategy)
        self.random_state = random_state

    def _fit_resample(self, X, y):
        raise RuntimeError("the plugin gave up")


class ShufflingSampler(BootstrapOverSampler):
    """Rows handed back in another order: breaks the over-sampler's contract."""

    def _fit_resample(self, X, y):
        X_res, y_res = super()._fit_resample(X, y)
        order = check_random_state(0).permutation(len(y_res))
        return X_res[order], y_res[order]


class IndependentColumns:
    """Each column drawn on its own from the training frauds' values (a test
    plugin: the docs' example generator)."""

    def __init__(self, metadata, random_state):
        self.metadata = metadata
        self.rng = np.random.default_rng(random_state)

    def fit(self, frauds):
        self.frauds = frauds

    def sample(self, num_rows):
        return pd.DataFrame(
            {
                name: column.sample(
                    num_rows, replace=True, random_state=self.rng
                ).to_numpy()
                for name, column in self.frauds.items()
            }
        )


class LosesAColumn(IndependentColumns):
    """Rows without their first column: breaks the generator's contract."""

    def sample(self, num_rows):
        return super().sample(num_rows).iloc[:, 1:]
