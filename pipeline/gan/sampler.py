"""``GANOverSampler``: the conditional WGAN-GP as an imbalanced-learn over-sampler.

It sits in an ``imblearn.pipeline.Pipeline`` slot beside SMOTE. Samplers run only
during ``fit``, so generated rows can reach the training rows and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from imblearn.over_sampling.base import BaseOverSampler
from scipy import sparse
from sklearn.utils import check_random_state

from pipeline.core.config import GANConfig
from pipeline.core.errors import ArtifactError
from pipeline.gan.encoding import GANColumns
from pipeline.gan.storage import data_fingerprint, load_gan_once
from pipeline.gan.trainer import train_cwgan_gp


class GANOverSampler(BaseOverSampler):
    """Over-sample the fraud class with rows from a conditional WGAN-GP.

    Parameters
    ----------
    sampling_strategy : float, str, dict or callable, default="auto"
        As in imbalanced-learn; a float is the minority/majority ratio after
        resampling.
    random_state : int, RandomState instance or None
        Seeds GAN training and generation.
    gan_params : dict, optional
        Fields of :class:`~pipeline.core.config.GANConfig` (defaults otherwise).
    pretrained : str or Path, optional
        A GAN folder (from :func:`~pipeline.gan.storage.save_gan`) fitted on exactly
        the rows given to ``fit_resample``: the GAN is loaded instead of retrained,
        so one GAN per split serves every consumer. Its data fingerprint is checked;
        a GAN fitted on other rows is refused, which also rules out leakage.
    categorical_features : list of int, optional
        Columns holding category codes (one-hot blocks with Gumbel-softmax heads;
        every generated code is one the training rows have), as in SMOTENC.
    integer_features : list of int, optional
        Columns of whole numbers (generated rows keep values the training rows
        have).
    condition_feature : int, optional
        One of ``categorical_features`` to condition the GAN on, beside the class.

    Attributes
    ----------
    sampling_strategy_ : dict
        Rows to generate per class.
    gan_ : TrainedGAN
        The fitted (or loaded) GAN.
    """

    _parameter_constraints: dict = {
        **BaseOverSampler._parameter_constraints,
        "gan_params": [dict, None],
        "pretrained": [str, Path, None],
        "categorical_features": ["array-like", None],
        "integer_features": ["array-like", None],
        "condition_feature": [int, None],
    }

    def __init__(
        self,
        *,
        sampling_strategy="auto",
        random_state=None,
        gan_params=None,
        pretrained=None,
        categorical_features=None,
        integer_features=None,
        condition_feature=None,
    ):
        super().__init__(sampling_strategy=sampling_strategy)
        self.random_state = random_state
        self.gan_params = gan_params
        self.pretrained = pretrained
        self.categorical_features = categorical_features
        self.integer_features = integer_features
        self.condition_feature = condition_feature

    def _fit_resample(self, X, y):
        rng = check_random_state(self.random_state)
        train_seed, sample_seed = (int(s) for s in rng.randint(0, 2**31 - 1, size=2))
        is_sparse = sparse.issparse(X)
        X_in = X
        # A neural network needs dense rows; sparse input comes back sparse.
        X = X.toarray() if is_sparse else np.asarray(X)
        # The GAN is conditioned on class indices; any labels (strings too) work.
        self.classes_, y_index = np.unique(y, return_inverse=True)
        if self.pretrained is not None:
            self.gan_ = load_gan_once(self.pretrained)
            if self.gan_.fingerprint != data_fingerprint(X, y_index):
                raise ArtifactError(
                    f"{self.pretrained}: this GAN was fitted on other rows than the "
                    "ones given to fit_resample; refusing to reuse it"
                )
        else:
            config = GANConfig(**(self.gan_params or {}))
            # The classes to generate are the ones the batches concentrate on.
            fraud_labels = [
                int(np.searchsorted(self.classes_, label))
                for label, n in self.sampling_strategy_.items()
                if n > 0
            ]
            columns = GANColumns(
                categorical=tuple(int(c) for c in self.categorical_features or ()),
                integer=tuple(int(c) for c in self.integer_features or ()),
                condition=self.condition_feature,
            )
            self.gan_ = train_cwgan_gp(
                X,
                y_index,
                config,
                random_state=train_seed,
                fraud_labels=fraud_labels or None,
                columns=columns,
            )
        X_parts, y_parts = [X], [np.asarray(y)]
        for offset, (label, n_samples) in enumerate(
            sorted(self.sampling_strategy_.items())
        ):
            if n_samples == 0:
                continue
            rows = self.gan_.sample(
                n_samples,
                label=int(np.searchsorted(self.classes_, label)),
                random_state=sample_seed + offset,
            )
            X_parts.append(rows.astype(X.dtype, copy=False))
            y_parts.append(np.full(n_samples, label, dtype=np.asarray(y).dtype))
        y_out = np.concatenate(y_parts)
        if is_sparse:
            new = [sparse.csr_matrix(part) for part in X_parts[1:]]
            return sparse.vstack([X_in, *new]).asformat(X_in.format), y_out
        return np.vstack(X_parts), y_out
