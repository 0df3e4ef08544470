"""The splits: stratified, temporal and rolling out of time; copies of a row never
straddle subsets."""

import numpy as np
import pandas as pd
import pytest

from pipeline.core.config import SplitConfig
from pipeline.core.errors import DataValidationError
from pipeline.data.schema import KAGGLE
from pipeline.features.splits import (
    make_splits,
    make_temporal_split,
    row_groups,
    split_rows,
    subset_rows,
)

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


def test_a_timestamp_column_orders_a_temporal_split(mixed_frame, mixed_schema):
    from pipeline.core.config import SplitConfig
    from pipeline.core.errors import ConfigError
    from pipeline.data.validation import validate_frame

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
    from pipeline.core.config import SplitConfig
    from pipeline.data.validation import validate_frame
    from pipeline.features.splits import describe_folds, rolling_folds

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
    from pipeline.core.config import SplitConfig
    from pipeline.features.splits import rolling_folds

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
    from pipeline.core.config import SplitConfig
    from pipeline.core.errors import DataValidationError

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
    from pipeline.core.errors import ConfigError
    from pipeline.run.plan import load_config

    with pytest.raises(ConfigError, match=pattern):
        load_config("smoke", overrides={"split": {"mode": "rolling", **values}})
