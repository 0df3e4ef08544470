"""Over-samplers: new fraud rows made from the training frauds (imbalanced-learn's
random over-sampling, SMOTE, borderline SMOTE, ADASYN).

With categorical columns SMOTE becomes imbalanced-learn's SMOTENC (SMOTEN when
every column is categorical); borderline SMOTE and ADASYN, which have no
categorical variant, run on a one-hot encoding and their rows are projected back
(:class:`~pipeline.resampling.samplers.OneHotOverSampler`). No sampler hands the
detector a fractional category.
"""

from __future__ import annotations

from pipeline.resampling.method import BuildContext, Complexity, Method


def random_over(context: BuildContext):
    from imblearn.over_sampling import RandomOverSampler

    return RandomOverSampler(
        sampling_strategy=context.minority_strategy,
        random_state=context.random_state,
    )


def smote(context: BuildContext):
    """SMOTE, or its categorical variant (also inside SMOTE-Tomek and SMOTE-ENN)."""
    from pipeline.resampling.samplers import (
        DenseNearestNeighbors,
        MinoritySMOTENC,
        RememberedSMOTE,
    )

    strategy = context.minority_strategy
    k = context.evaluation.smote_k_neighbors
    categorical = list(context.categorical_features)
    if not categorical:
        return RememberedSMOTE(
            sampling_strategy=strategy, k_neighbors=k, random_state=context.random_state
        )
    if context.n_features is not None and len(categorical) == context.n_features:
        from imblearn.over_sampling import SMOTEN

        return SMOTEN(
            sampling_strategy=strategy, k_neighbors=k, random_state=context.random_state
        )
    return MinoritySMOTENC(
        categorical,
        sampling_strategy=strategy,
        k_neighbors=DenseNearestNeighbors(n_neighbors=k + 1),
        random_state=context.random_state,
    )


def _on_numbers(sampler, context: BuildContext):
    """``sampler`` as it is, or through a one-hot encoding of the categorical
    columns."""
    if not context.categorical_features:
        return sampler
    from pipeline.resampling.samplers import OneHotOverSampler

    return OneHotOverSampler(
        sampler=sampler,
        categorical_features=list(context.categorical_features),
        sampling_strategy=context.minority_strategy,
    )


# Borderline SMOTE's and ADASYN's neighbourhoods do not depend on the amount: one
# search a split serves both (borderline SMOTE's m_neighbors, imbalanced-learn's
# 10, and the row itself; ADASYN's k and the row).
_SHARED_SEARCH = 11


def borderline_smote(context: BuildContext):
    from imblearn.over_sampling import BorderlineSMOTE

    from pipeline.core.neighbours import RememberedNeighbors

    return _on_numbers(
        BorderlineSMOTE(
            sampling_strategy=context.minority_strategy,
            k_neighbors=context.evaluation.smote_k_neighbors,
            m_neighbors=RememberedNeighbors(
                n_neighbors=_SHARED_SEARCH, search_neighbors=_SHARED_SEARCH
            ),
            random_state=context.random_state,
        ),
        context,
    )


def adasyn(context: BuildContext):
    from pipeline.core.neighbours import RememberedNeighbors
    from pipeline.resampling.samplers import TolerantADASYN

    return _on_numbers(
        TolerantADASYN(
            sampling_strategy=context.minority_strategy,
            n_neighbors=RememberedNeighbors(
                n_neighbors=context.evaluation.smote_k_neighbors + 1,
                search_neighbors=_SHARED_SEARCH,
            ),
            random_state=context.random_state,
        ),
        context,
    )


METHODS = (
    Method(
        name="random_over",
        family="over-sampling",
        complexity=Complexity.RANDOM_OVERSAMPLING,
        summary="copies of training frauds drawn at random (imbalanced-learn's "
        "RandomOverSampler)",
        build=random_over,
        role="compared",
    ),
    Method(
        name="smote",
        family="over-sampling",
        complexity=Complexity.SMOTE_FAMILY,
        summary="SMOTE: new frauds on the lines between a fraud and its nearest "
        "frauds (SMOTENC with categorical columns)",
        build=smote,
        neighbours=True,
        role="compared",
        interpolation=True,
    ),
    Method(
        name="borderline_smote",
        family="over-sampling",
        complexity=Complexity.SMOTE_FAMILY,
        summary="borderline SMOTE: SMOTE from the frauds whose neighbourhood is "
        "mostly legitimate rows",
        build=borderline_smote,
        neighbours=True,
        categorical="one-hot",
        stops_when_empty=True,
        role="compared",
    ),
    Method(
        name="adasyn",
        family="over-sampling",
        complexity=Complexity.SMOTE_FAMILY,
        summary="ADASYN: more new frauds where legitimate rows crowd a fraud's "
        "neighbourhood",
        build=adasyn,
        neighbours=True,
        categorical="one-hot",
        stops_when_empty=True,
        role="compared",
    ),
)
