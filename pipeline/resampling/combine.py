"""Over-sampling then cleaning: SMOTE's rows, then Tomek links or edited nearest
neighbours removed (imbalanced-learn's SMOTE-Tomek and SMOTE-ENN; the cleaning is
imbalanced-learn's exact rule, faster: :mod:`pipeline.resampling.cleaning`)."""

from __future__ import annotations

from pipeline.resampling.method import BuildContext, Complexity, Method
from pipeline.resampling.over_sampling import smote


def _cleaning(context: BuildContext) -> dict:
    # imbalanced-learn's defaults (clean every class), exact but ~3.5x faster
    return dict(
        sampling_strategy="all",
        n_jobs=context.evaluation.n_jobs,
        random_state=context.random_state,
        block_rows=context.evaluation.cleaning_block_rows,
    )


def smote_tomek(context: BuildContext):
    from imblearn.combine import SMOTETomek

    from pipeline.resampling.cleaning import FastTomekLinks

    return SMOTETomek(
        sampling_strategy=context.minority_strategy,
        smote=smote(context),
        tomek=FastTomekLinks(**_cleaning(context)),
        random_state=context.random_state,
    )


def smote_enn(context: BuildContext):
    from imblearn.combine import SMOTEENN

    from pipeline.resampling.cleaning import FastEditedNearestNeighbours

    return SMOTEENN(
        sampling_strategy=context.minority_strategy,
        smote=smote(context),
        enn=FastEditedNearestNeighbours(**_cleaning(context)),
        random_state=context.random_state,
    )


METHODS = (
    Method(
        name="smote_tomek",
        family="combined",
        complexity=Complexity.SMOTE_FAMILY,
        summary="SMOTE, then the Tomek links (a fraud and a legitimate row that are "
        "each other's nearest) removed",
        build=smote_tomek,
        neighbours=True,
        role="compared",
        in_smoke=False,
    ),
    Method(
        name="smote_enn",
        family="combined",
        complexity=Complexity.SMOTE_FAMILY,
        summary="SMOTE, then every row whose nearest neighbours mostly disagree "
        "with its class removed (edited nearest neighbours)",
        build=smote_enn,
        neighbours=True,
        role="compared",
        in_smoke=False,
    ),
)
