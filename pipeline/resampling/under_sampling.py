"""Under-samplers: fewer legitimate training rows instead of more frauds (every
fraud kept); their amount is the legitimate rows kept
(:func:`pipeline.resampling.amounts.keep_targets`)."""

from __future__ import annotations

from pipeline.resampling.method import BuildContext, Complexity, Method


def random_under(context: BuildContext):
    from imblearn.under_sampling import RandomUnderSampler

    return RandomUnderSampler(
        sampling_strategy=context.majority_strategy,
        random_state=context.random_state,
    )


METHODS = (
    Method(
        name="random_under",
        family="under-sampling",
        complexity=Complexity.UNDERSAMPLING,
        summary="legitimate training rows dropped at random, every fraud kept "
        "(imbalanced-learn's RandomUnderSampler)",
        amount="kept",
        build=random_under,
        categorical="-",
    ),
)
