"""The GAN on a table with categorical and integer columns: one-hot blocks with
Gumbel-softmax heads, integers that stay whole, a condition on one category."""

import json

import numpy as np
import pytest

from pipeline.core.config import GANConfig
from pipeline.gan.batches import make_training_dataset
from pipeline.gan.encoding import ColumnEncoder, GANColumns
from tests.helpers import TINY_GAN as TINY


@pytest.fixture(scope="module")
def mixed_space(mixed_frame, mixed_schema):
    """The mixed table in model space, with the transformer fitted on it."""
    from pipeline.data.validation import validate_frame
    from pipeline.features.transformer import TabularTransformer

    frame = validate_frame(mixed_frame, "t.csv", schema=mixed_schema)
    transformer = TabularTransformer(mixed_schema).fit(frame)
    return (
        transformer.transform(frame),
        frame["is_fraud"].to_numpy(np.int64),
        transformer,
    )


def _columns(transformer, condition_on=None):
    return GANColumns.of(transformer, GANConfig(condition_on=condition_on))


@pytest.mark.parametrize("kind", ["standard", "quantile", "mode_specific"])
def test_encoder_one_hot_blocks_decode_to_training_values(mixed_space, kind):
    X, y, transformer = mixed_space
    columns = _columns(transformer, "channel")
    encoder = ColumnEncoder(
        kind,
        mode_columns=columns.mode,
        categorical=columns.categorical,
        integer=columns.integer,
        condition=columns.condition,
    ).fit(X[y == 1])
    layout = encoder.output_layout()
    blocks = [w for k, w in layout if k == "softmax"]
    # One block per categorical column but the conditioned one (channel).
    n_blocks = (
        len(columns.categorical) - 1 + (kind == "mode_specific") * len(columns.mode)
    )
    assert len(blocks) == n_blocks
    Z = np.random.default_rng(0).normal(size=(400, encoder.n_encoded))
    condition = np.full(400, X[0, columns.condition])
    rows = encoder.decode(Z, random_state=1, condition=condition)
    for c in columns.categorical:
        assert set(np.unique(rows[:, c])) <= set(np.unique(X[:, c]))
    for c in columns.integer:
        assert set(np.unique(rows[:, c])) <= set(np.unique(X[:, c]))
    assert (rows[:, columns.condition] == X[0, columns.condition]).all()
    again = ColumnEncoder.from_dict(json.loads(json.dumps(encoder.to_dict())))
    np.testing.assert_array_equal(
        again.decode(Z, random_state=1, condition=condition), rows
    )
    # The training rows' own encoding decodes back to them, category and all.
    exact = encoder.training_rows(X[y == 1][:50])
    if kind != "mode_specific":
        back = encoder.decode(exact, condition=X[y == 1][:50, columns.condition])
        for c in columns.categorical:
            np.testing.assert_array_equal(back[:, c], X[y == 1][:50, c])


def test_conditioned_batches_say_each_rows_category(mixed_space):
    X, y, transformer = mixed_space
    columns = _columns(transformer, "merchant_category")
    values = X[:, columns.condition]
    levels = np.unique(values)
    index = np.searchsorted(levels, values)
    batches = make_training_dataset(
        X,
        y,
        batch_size=512,
        n_critic=1,
        fraud_fraction=1.0,
        seed=0,
        condition=(index, len(levels)),
    ).take(4)
    seen = []
    for x, condition in batches:
        x, condition = x.numpy(), condition.numpy()
        assert (condition[:, 1] == 1).all()  # frauds only
        level = condition[:, 2:].argmax(axis=1)
        np.testing.assert_array_equal(levels[level], x[:, columns.condition])
        seen.append(level)
    seen = np.concatenate(seen)
    # Training-by-sampling: a category is drawn by the log of its frequency, so
    # the rarest fraud category is drawn more often than its share of frauds.
    shares = np.bincount(index[y == 1], minlength=len(levels)) / (y == 1).sum()
    rare = int(np.argmin(np.where(shares > 0, shares, np.inf)))
    assert (seen == rare).mean() > shares[rare]


@pytest.fixture(scope="module")
def conditioned_gan(mixed_space):
    from pipeline.gan.trainer import train_cwgan_gp

    X, y, transformer = mixed_space
    columns = _columns(transformer, "channel")
    config = GANConfig(**{**TINY, "steps": 30})
    trained = train_cwgan_gp(
        X, y, config, random_state=0, validation=X[y == 1][:60], columns=columns
    )
    return trained, columns


def test_generated_rows_have_valid_categories_and_whole_counts(
    mixed_space, conditioned_gan
):
    X, y, transformer = mixed_space
    trained, columns = conditioned_gan
    rows = trained.sample(3000, random_state=4)
    assert np.isfinite(rows).all()
    for c in columns.categorical:
        assert set(np.unique(rows[:, c])) <= set(np.unique(X[:, c]))
    table = transformer.inverse_transform(rows)
    for c in columns.integer:
        name = transformer.feature_names[c]
        assert table[name].dtype == np.int64
    # The channel follows the frauds' own mix when it is not asked for.
    channel = columns.condition
    real = np.unique(X[y == 1][:, channel], return_counts=True)
    drawn = {v: (rows[:, channel] == v).mean() for v in real[0]}
    for value, count in zip(*real, strict=True):
        assert drawn[value] == pytest.approx(count / (y == 1).sum(), abs=0.05)


def test_where_draws_frauds_of_one_category(tmp_path, mixed_space, conditioned_gan):
    from pipeline.gan.storage import load_gan, save_gan

    X, y, transformer = mixed_space
    trained, columns = conditioned_gan
    code = float(np.unique(X[:, columns.condition])[1])
    rows = trained.sample(500, random_state=2, where=code)
    assert (rows[:, columns.condition] == code).all()
    save_gan(tmp_path / "gan", trained)
    loaded = load_gan(tmp_path / "gan")
    assert loaded.conditions == trained.conditions
    np.testing.assert_array_equal(loaded.sample(500, random_state=2, where=code), rows)
    from pipeline.core.errors import ConfigError

    with pytest.raises(ConfigError, match="cannot draw rows"):
        trained.sample(5, where=99.0)


def test_gan_sampler_with_categorical_features(mixed_space):
    from pipeline.gan.sampler import GANOverSampler

    X, y, transformer = mixed_space
    cats = transformer.categorical_features
    sampler = GANOverSampler(
        sampling_strategy={1: int((y == 1).sum()) + 200},
        random_state=0,
        gan_params={**TINY, "steps": 4},
        categorical_features=cats,
        integer_features=transformer.integer_features,
    )
    X_res, y_res = sampler.fit_resample(X, y)
    new = X_res[len(X) :]
    assert len(new) == 200 and (y_res[len(X) :] == 1).all()
    for c in cats:
        assert set(np.unique(new[:, c])) <= set(np.unique(X[:, c]))


@pytest.mark.parametrize("method", ["smote", "borderline_smote", "adasyn", "smote_enn"])
def test_the_smote_family_never_hands_over_a_fractional_category(mixed_space, method):
    from pipeline.core.config import EvaluationConfig
    from pipeline.resampling.registry import make_sampler

    X, y, transformer = mixed_space
    cats = transformer.categorical_features
    target = int((y == 1).sum()) * 3
    sampler = make_sampler(
        method,
        EvaluationConfig(),
        random_state=0,
        n_minority=target,
        category_counts=transformer.category_counts,
        n_features=X.shape[1],
    )
    X_res, y_res = sampler.fit_resample(X, y)
    if method != "smote_enn":  # (its cleaning then removes rows)
        # (ADASYN spreads its rows over the frauds' neighbourhoods: about target.)
        assert int((y_res == 1).sum()) == pytest.approx(target, rel=0.1)
        np.testing.assert_array_equal(X_res[: len(X)], X)  # originals first
    for c in cats:
        assert set(np.unique(X_res[:, c])) <= set(np.unique(X[:, c]))
