import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pipeline.config import SplitConfig
from pipeline.errors import ArtifactError, DataValidationError
from pipeline.preprocess import (
    TabularTransformer,
    make_splits,
    make_temporal_split,
    row_groups,
    split_rows,
    subset_rows,
)
from pipeline.schema import KAGGLE

FEATURES = tuple(c.name for c in KAGGLE.feature_columns)


def test_splits_are_stratified_disjoint_and_cover_every_row(demo_frame):
    y = demo_frame["Class"].to_numpy()
    splits = make_splits(y, random_states=[11, 12])
    assert set(splits.columns) == {"split", "row", "subset"}
    for split in (0, 1):
        parts = {
            s: subset_rows(splits, split, s) for s in ("train", "validation", "test")
        }
        rows = np.concatenate(list(parts.values()))
        assert sorted(rows) == list(range(len(y)))
        assert len(parts["test"]) == pytest.approx(0.2 * len(y), abs=1)
        assert len(parts["validation"]) == pytest.approx(0.2 * len(y), abs=1)
        for idx in parts.values():
            assert y[idx].mean() == pytest.approx(y.mean(), abs=0.005)
    # Different seeds give different splits; the same seeds the same.
    assert not np.array_equal(
        subset_rows(splits, 0, "test"), subset_rows(splits, 1, "test")
    )
    assert splits.equals(make_splits(y, random_states=[11, 12]))


def test_splits_need_frauds_for_every_subset():
    with pytest.raises(DataValidationError, match="only 2 fraud rows"):
        make_splits(np.array([0] * 50 + [1, 1]), random_states=[0])


def test_copies_of_a_row_never_straddle_subsets(demo_frame):
    # Copies as in the Kaggle file: a few rows repeated several times, frauds too.
    rng = np.random.default_rng(3)
    picks = rng.choice(len(demo_frame), 300, replace=True)
    frauds = np.flatnonzero(demo_frame["Class"].to_numpy() == 1)[:20]
    frame = pd.concat(
        [demo_frame, demo_frame.iloc[picks], demo_frame.iloc[frauds]],
        ignore_index=True,
    )
    groups = row_groups(frame)
    assert len(np.unique(groups)) == len(demo_frame.drop_duplicates())
    splits = split_rows(frame, SplitConfig(n_splits=3), [1, 2, 3])
    y = frame["Class"].to_numpy()
    for split in range(3):
        parts = [subset_rows(splits, split, s) for s in ("train", "validation", "test")]
        assert sorted(np.concatenate(parts)) == list(range(len(frame)))
        seen = [set(groups[p]) for p in parts]
        assert not (seen[0] & seen[1] or seen[0] & seen[2] or seen[1] & seen[2])
        for part, share in zip(parts, (0.6, 0.2, 0.2), strict=True):
            assert len(part) == pytest.approx(share * len(frame), rel=0.05)
            assert y[part].mean() == pytest.approx(y.mean(), abs=0.01)
    # Without copies the grouped split is the plain stratified one.
    plain = make_splits(demo_frame["Class"].to_numpy(), random_states=[5])
    grouped = make_splits(
        demo_frame["Class"].to_numpy(),
        random_states=[5],
        groups=row_groups(demo_frame),
    )
    assert plain.equals(grouped)


def test_temporal_boundaries_keep_equal_times_together():
    time = np.repeat(np.arange(10), 10)  # ten rows share each second
    y = np.tile([1, 0, 0, 0, 0, 0, 0, 0, 0, 0], 10)
    splits = make_temporal_split(time, y, test_size=0.25, validation_size=0.25)
    for a, b in (("train", "validation"), ("validation", "test")):
        assert (
            time[subset_rows(splits, 0, a)].max()
            < time[subset_rows(splits, 0, b)].min()
        )
    assert len(splits) == len(time)


def test_transformer_is_fitted_on_the_given_rows_only(demo_frame):
    train = demo_frame.iloc[:1000]
    transformer = TabularTransformer().fit(train)
    Z = transformer.transform(train)
    np.testing.assert_allclose(Z.mean(axis=0), 0, atol=1e-9)
    np.testing.assert_allclose(Z.std(axis=0), 1, atol=1e-9)
    assert transformer.feature("V1")["mean"] == pytest.approx(train["V1"].mean())
    assert transformer.feature("Amount")["mean"] == pytest.approx(
        np.log1p(train["Amount"]).mean()
    )


def test_transformer_json_round_trip(demo_frame):
    transformer = TabularTransformer().fit(demo_frame)
    payload = json.loads(json.dumps(transformer.to_dict()))
    again = TabularTransformer.from_dict(payload)
    np.testing.assert_array_equal(
        again.transform(demo_frame), transformer.transform(demo_frame)
    )
    with pytest.raises(ArtifactError, match="schema_version"):
        TabularTransformer.from_dict({**payload, "schema_version": 99})


def test_to_domain_makes_valid_transactions(demo_frame):
    transformer = TabularTransformer().fit(demo_frame)
    frame = transformer.inverse_transform(np.full((3, 30), -40.0))
    fixed = transformer.to_domain(frame)
    assert (fixed["Amount"] >= 0).all()
    assert (fixed["Time"] >= demo_frame["Time"].min()).all()


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        np.float64,
        (8, len(FEATURES)),
        elements=st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False),
    )
)
def test_inverse_is_exact(values):

    frame = pd.DataFrame(values, columns=list(FEATURES))
    frame["Amount"] = frame["Amount"].abs()
    transformer = TabularTransformer().fit(frame)
    back = transformer.inverse_transform(transformer.transform(frame))
    np.testing.assert_allclose(back.to_numpy(), frame.to_numpy(), rtol=1e-9, atol=1e-8)


def test_a_transformer_saved_before_schemas_still_loads(demo_frame):
    """Registered champions keep a schema_version 1 transformer (the Kaggle
    columns): scoring with them still works, with the same numbers."""
    transformer = TabularTransformer().fit(demo_frame)
    v1 = {
        "schema_version": 1,
        "kind": "log1p+standardise",
        "columns": transformer.feature_names,
        "log_columns": ["Amount"],
        **{
            key: {f["name"]: f[key] for f in transformer.features_}
            for key in ("mean", "scale", "min", "max")
        },
    }
    old = TabularTransformer.from_dict(json.loads(json.dumps(v1)))
    assert old.schema == KAGGLE
    np.testing.assert_array_equal(
        old.transform(demo_frame), transformer.transform(demo_frame)
    )


def test_another_tables_model_space(mixed_frame, mixed_schema):
    """Categories become codes learned on the training rows (an unseen one maps to
    one extra code, counted), counts come back whole, a timestamp gives its hour
    and weekday, ids and the label are no features; the inverse is exact."""
    from pipeline.ingest import validate_frame

    frame = validate_frame(mixed_frame, "t.csv", schema=mixed_schema)
    train, rest = frame.iloc[:5000], frame.iloc[5000:].copy()
    transformer = TabularTransformer(mixed_schema).fit(train)
    names = transformer.feature_names
    assert "tx_datetime.hour" in names and "tx_datetime.dayofweek" in names
    assert not {"tx_id", "customer_id", "terminal_id", "is_fraud"} & set(names)
    assert "tx_datetime" not in names  # never a raw epoch
    channel = names.index("channel")
    assert channel in transformer.categorical_features
    assert transformer.feature_types[channel] == "c"
    rest.loc[rest.index[:7], "channel"] = "CRYPTO"
    unseen: dict[str, int] = {}
    Z = transformer.transform(rest, unseen=unseen)
    assert unseen == {"channel": 7}
    n_channels = len(transformer.feature("channel")["categories"])
    assert (Z[:7, channel] == n_channels).all()  # the one "unseen" code
    back = transformer.inverse_transform(Z[7:])
    assert (back["channel"].to_numpy() == rest["channel"].iloc[7:].to_numpy()).all()
    counts = back["customer_nb_tx_7d"]
    assert counts.dtype == np.int64
    assert (counts.to_numpy() == rest["customer_nb_tx_7d"].iloc[7:].to_numpy()).all()
    np.testing.assert_allclose(back["amount"], rest["amount"].iloc[7:], rtol=1e-9)
    again = TabularTransformer.from_dict(json.loads(json.dumps(transformer.to_dict())))
    np.testing.assert_array_equal(again.transform(rest), Z)
    assert again.schema == mixed_schema


def test_generated_rows_become_table_rows(mixed_frame, mixed_schema):
    """to_domain + to_table: within the training range, amounts to cents, whole
    counts, booleans, a timestamp rebuilt in the training period on the generated
    weekday and hour, the schema's feature columns in its order."""
    from pipeline.ingest import validate_frame

    frame = validate_frame(mixed_frame, "t.csv", schema=mixed_schema)
    transformer = TabularTransformer(mixed_schema).fit(frame)
    rng = np.random.default_rng(0)
    Z = transformer.transform(frame.sample(500, random_state=0))
    numeric = [
        j for j in range(Z.shape[1]) if j not in transformer.categorical_features
    ]
    Z[:, numeric] += rng.normal(0, 0.5, (500, len(numeric)))  # off the grid
    table = transformer.to_table(
        transformer.to_domain(transformer.inverse_transform(Z)), 0
    )
    assert list(table.columns) == [c.name for c in mixed_schema.feature_columns]
    assert table["amount"].min() >= 0
    assert (table["amount"].round(2) == table["amount"]).all()
    assert table["amount"].max() <= frame["amount"].max()
    assert table["weekend"].dtype == bool
    assert table["customer_nb_tx_7d"].dtype == np.int64
    stamps = table["tx_datetime"]
    assert stamps.min() >= frame["tx_datetime"].min().normalize()
    assert stamps.max() <= frame["tx_datetime"].max().normalize() + pd.Timedelta("1D")
    weekday = transformer.inverse_transform(Z)["tx_datetime.dayofweek"]
    assert (stamps.dt.day_of_week.to_numpy() == weekday.to_numpy()).all()


def test_a_timestamp_column_orders_a_temporal_split(mixed_frame, mixed_schema):
    from pipeline.config import SplitConfig
    from pipeline.errors import ConfigError
    from pipeline.ingest import validate_frame

    frame = validate_frame(mixed_frame, "t.csv", schema=mixed_schema)
    splits = split_rows(frame, SplitConfig(mode="temporal"), [0], mixed_schema)
    times = {
        subset: frame["tx_datetime"].iloc[subset_rows(splits, 0, subset)]
        for subset in ("train", "validation", "test")
    }
    assert times["train"].max() <= times["validation"].min()
    assert times["validation"].max() <= times["test"].min()
    untimed = mixed_schema.model_copy(update={"time": None})
    with pytest.raises(ConfigError, match="needs a time column"):
        split_rows(frame, SplitConfig(mode="temporal"), [0], untimed)


def test_rolling_folds_are_out_of_time_with_a_delay(mixed_frame, mixed_schema):
    from pipeline.config import SplitConfig
    from pipeline.ingest import validate_frame
    from pipeline.preprocess import describe_folds, rolling_folds

    frame = validate_frame(mixed_frame, "t.csv", schema=mixed_schema)
    config = SplitConfig(
        mode="rolling",
        n_splits=2,
        train_window="10d",
        validation_window="2d",
        delay="3d",
        test_window="5d",
    )
    time = frame["tx_datetime"]
    folds = rolling_folds(time, config)
    splits = split_rows(frame, config, [0, 0], mixed_schema)
    newest = time.max()
    day = pd.Timedelta(days=1)
    for fold in folds:
        k = fold["fold"]
        rows = {s: subset_rows(splits, k, s) for s in ("train", "validation", "test")}
        t = {s: time.iloc[r] for s, r in rows.items()}
        # Fold 0's test window ends at the newest row; each fold shifts back 5 days.
        assert fold["test"][1] - pd.Timedelta(nanoseconds=1) == newest - k * 5 * day
        assert t["test"].max() <= newest - k * 5 * day
        assert t["test"].min() >= fold["test"][0]
        # The delay: 3 days between the newest validation row and the test window.
        assert fold["test"][0] - fold["validation"][1] == 3 * day
        assert t["validation"].max() < fold["validation"][1] <= t["test"].min()
        assert t["train"].max() < t["validation"].min()  # validation is the newest
        assert fold["validation"][1] - fold["train"][0] == 10 * day
        assert not set(rows["train"]) & set(rows["test"])
    assert folds[1]["test"][1] == folds[0]["test"][0]
    described = describe_folds(folds)
    assert described[0]["test"][1].startswith(str(newest.date()))


def test_rolling_folds_on_a_numeric_time_column(demo_frame):
    from pipeline.config import SplitConfig
    from pipeline.preprocess import rolling_folds

    config = SplitConfig(
        mode="rolling",
        n_splits=3,
        train_window="24h",
        validation_window="4h",
        delay="2h",
        test_window="6h",
    )
    folds = rolling_folds(demo_frame["Time"], config)
    assert folds[0]["test"][1] > demo_frame["Time"].max()
    assert folds[0]["test"][0] == pytest.approx(demo_frame["Time"].max() - 6 * 3600)
    splits = split_rows(demo_frame, config, [0] * 3)
    assert set(splits["split"]) == {0, 1, 2}


def test_a_table_shorter_than_the_windows_is_refused(demo_frame, mixed_frame):
    from pipeline.config import SplitConfig
    from pipeline.errors import DataValidationError

    config = SplitConfig(mode="rolling", n_splits=4)  # 21 + 7 + 4 x 7 days
    with pytest.raises(DataValidationError, match=r"need 56\.0 days .*spans 2\.0 days"):
        split_rows(demo_frame, config, [0] * 4)
    scarce = demo_frame.assign(Class=0)
    scarce.loc[scarce.index[0], "Class"] = 1  # the one fraud is the oldest row
    hours = SplitConfig(
        mode="rolling", train_window="12h", validation_window="2h", delay="1h",
        test_window="6h",
    )  # fmt: skip
    with pytest.raises(DataValidationError, match="fold 0's train window .* no fraud"):
        split_rows(scarce, hours, [0])


@pytest.mark.parametrize(
    ("values", "pattern"),
    [
        ({"train_window": "3 weeks"}, "not a duration"),
        ({"validation_window": "21d"}, "validation_window must be shorter"),
        ({"test_window": "0d"}, "longer than 0"),
    ],
)
def test_rolling_windows_are_checked(values, pattern):
    from pipeline.config import load_config
    from pipeline.errors import ConfigError

    with pytest.raises(ConfigError, match=pattern):
        load_config("smoke", overrides={"split": {"mode": "rolling", **values}})
