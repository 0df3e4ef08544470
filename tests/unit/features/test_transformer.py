"""The feature transformer: fitted on training rows only, exact inverse, JSON."""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pipeline.core.errors import ArtifactError
from pipeline.data.schema import KAGGLE
from pipeline.features.transformer import TabularTransformer

FEATURES = tuple(c.name for c in KAGGLE.feature_columns)


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
    from pipeline.data.validation import validate_frame

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
    # Number columns read in one block, or (a text column among them) one by
    # one: the same model space, bit for bit.
    assert len(transformer._direct_block(rest)) > 0
    as_text = rest.assign(amount=rest["amount"].astype(object))
    assert transformer._direct_block(as_text) == {}
    np.testing.assert_array_equal(transformer.transform(as_text), Z)
    # A large frame goes column by column (no second copy of its numbers).
    import pipeline.features.transformer as module

    assert len(rest) > 10
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "BLOCK_ROWS", 10)
        assert transformer._direct_block(rest) == {}
        np.testing.assert_array_equal(transformer.transform(rest), Z)


def test_generated_rows_become_table_rows(mixed_frame, mixed_schema):
    """to_domain + to_table: within the training range, amounts to cents, whole
    counts, booleans, a timestamp rebuilt in the training period on the generated
    weekday and hour, the schema's feature columns in its order."""
    from pipeline.data.validation import validate_frame

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


def test_codes_of_numbers_are_looked_up_as_the_text_path_does():
    """Booleans, counts and weekdays take the numeric lookup; an unseen value
    takes the extra code, as through pandas' index."""
    from pipeline.features.transformer import _codes

    cases = [
        (np.array([True, False, True]), [False, True]),
        (np.array([3, 0, 6, 9, -1, 3]), [0, 1, 2, 3, 4, 5, 6]),
        (np.array([5, 2, 7]), [7, 2]),  # a vocabulary in its own order
    ]
    for values, categories in cases:
        by_index = pd.Index(categories).get_indexer(pd.Index(values.astype(object)))
        expected = np.where(by_index < 0, len(categories), by_index)
        np.testing.assert_array_equal(_codes(values, categories), expected)


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_timestamps_derive_their_hour_and_weekday_as_pandas_does(unit):
    """A naive timestamp's hour and weekday from its ticks, bit for bit what
    pandas' ``dt`` fields give (before 1970 and within a second too); one with a
    time zone keeps its local hour."""
    from pipeline.features.transformer import _derived

    rng = np.random.default_rng(0)
    seconds = rng.integers(-3 * 10**9, 3 * 10**9, 5000)  # 1875 to 2065
    ticks = seconds * {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    ticks[::2] += rng.integers(0, 10**3 if unit != "s" else 1, 2500)  # fractions
    series = pd.Series(ticks.astype(f"datetime64[{unit}]"))
    assert series.dtype == f"datetime64[{unit}]"
    hour = series.dt.hour + series.dt.minute / 60.0 + series.dt.second / 3600.0
    for values in (series, series.to_numpy()):
        np.testing.assert_array_equal(_derived(values, "hour"), hour.to_numpy())
        np.testing.assert_array_equal(
            _derived(values, "dayofweek"), series.dt.day_of_week.to_numpy()
        )
    with_nat = series.copy()
    with_nat.iloc[3] = pd.NaT  # never after validation; as pandas, if ever
    np.testing.assert_array_equal(
        _derived(with_nat, "hour"),
        (
            with_nat.dt.hour + with_nat.dt.minute / 60.0 + with_nat.dt.second / 3600.0
        ).to_numpy(dtype=np.float64),
    )
    local = series.dt.tz_localize("UTC").dt.tz_convert("Asia/Kolkata")  # +5:30
    local_hour = local.dt.hour + local.dt.minute / 60.0 + local.dt.second / 3600.0
    np.testing.assert_array_equal(_derived(local, "hour"), local_hour.to_numpy())
    assert not np.array_equal(_derived(local, "hour"), hour.to_numpy())


def test_codes_of_text_are_looked_up_as_pandas_index_does():
    """Text categories, as object arrays or pandas' text dtype: each value's
    vocabulary position, the extra code for a value never seen or missing."""
    from pipeline.features.transformer import _codes

    categories = ["atm", "online", "pos", "3"]  # a vocabulary in its own order
    values = ["pos", "atm", "crypto", "pos", None, "3", "online", "", "ATM"]
    by_index = pd.Index(categories).get_indexer(pd.Index(values, dtype=object))
    expected = np.where(by_index < 0, len(categories), by_index)
    for given_as in (
        np.array(values, dtype=object),
        pd.Series(values, dtype=object),
        pd.Series(values, dtype="str"),
    ):
        np.testing.assert_array_equal(_codes(given_as, categories), expected)


def test_checked_columns_give_the_frames_model_space(
    mixed_frame, mixed_schema, sample_path
):
    """A request's rows checked into columns (no frame: how a served request is
    scored) reach the model space of the checked frame bit for bit, unseen
    categories counted alike: on another table's shape and on the real Kaggle
    rows."""
    from pipeline.data.validation import validate_frame, validated_columns

    tables = [(mixed_frame, mixed_schema), (pd.read_csv(sample_path), KAGGLE)]
    for table, schema in tables:
        train = validate_frame(table.iloc[:5000], "t", schema=schema)
        transformer = TabularTransformer(schema).fit(train)
        rest = table.iloc[5000:6000].drop(columns=[schema.label.column])
        if "channel" in rest:
            rest.loc[rest.index[:5], "channel"] = "CRYPTO"
        counted: list[dict[str, int]] = [{}, {}]
        frame = validate_frame(rest, "r", "rows", schema=schema, labelled=False)
        columns = validated_columns(rest, "r", "rows", schema=schema, labelled=False)
        assert list(columns) == list(frame.columns)
        np.testing.assert_array_equal(
            transformer.transform(columns, unseen=counted[0]),
            transformer.transform(frame, unseen=counted[1]),
        )
        assert counted[0] == counted[1]
        assert counted[0] == ({"channel": 5} if schema is mixed_schema else {})
