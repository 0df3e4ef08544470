"""The GAN's own column encodings: exact point masses, dequantisation, JSON."""

import json

import numpy as np
import pytest

from pipeline.core.errors import ArtifactError
from pipeline.gan.encoding import ColumnEncoder


@pytest.fixture
def columns():
    rng = np.random.default_rng(0)
    amount = np.where(rng.random(300) < 0.3, 1.0, rng.lognormal(3, 1, 300))
    return np.column_stack([rng.normal(size=300), amount, rng.standard_t(2, 300)])


def test_standard_encoding_is_the_model_space(columns):
    encoder = ColumnEncoder("standard").fit(columns)
    np.testing.assert_array_equal(encoder.decode(columns), columns)
    np.testing.assert_array_equal(encoder.training_rows(columns), columns)


def test_quantile_decoding_keeps_point_masses_and_the_range(columns):
    encoder = ColumnEncoder("quantile").fit(columns)
    Z = encoder.training_rows(columns)
    assert np.isfinite(Z).all()
    # Normal scores: roughly standard normal whatever the column's shape.
    assert np.abs(Z.mean(axis=0)).max() < 0.1
    rng = np.random.default_rng(1)
    decoded = encoder.decode(rng.standard_normal((20_000, 3)))
    share = (decoded[:, 1] == 1.0).mean()
    assert share == pytest.approx((columns[:, 1] == 1.0).mean(), abs=0.03)
    assert decoded.min(axis=0) == pytest.approx(columns.min(axis=0))
    assert decoded.max(axis=0) == pytest.approx(columns.max(axis=0))
    # Every training row's own slot centre decodes back to it.
    np.testing.assert_allclose(encoder.decode(Z), columns, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(encoder.encode(columns[:, :]), Z, atol=1e-6)


def test_cdf_slots_cover_ties_whole(columns):
    encoder = ColumnEncoder("quantile").fit(columns)
    low, high = encoder.cdf_bounds(columns)
    ones = columns[:, 1] == 1.0
    assert (low[ones, 1] == low[ones, 1][0]).all()
    assert high[ones, 1][0] - low[ones, 1][0] == pytest.approx(ones.mean())
    assert (high - low)[~ones, 0] == pytest.approx(1 / len(columns))
    assert (low >= 0).all() and (high <= 1).all() and (low < high).all()


def test_many_rows_keep_a_bounded_number_of_knots():
    rng = np.random.default_rng(2)
    X = np.column_stack([np.round(rng.exponential(size=50_000), 1)])
    encoder = ColumnEncoder("quantile").fit(X)
    assert encoder.knots_.shape == (2_000, 1)
    # The knots are data values, so ties (0.0, 0.1, ...) still decode exactly.
    decoded = encoder.decode(rng.standard_normal((5_000, 1)))
    assert np.isin(decoded, np.unique(X)).mean() > 0.5


def test_json_round_trip_and_bad_json(columns):
    encoder = ColumnEncoder("quantile").fit(columns)
    again = ColumnEncoder.from_dict(json.loads(json.dumps(encoder.to_dict())))
    Z = np.random.default_rng(3).standard_normal((50, 3))
    np.testing.assert_array_equal(again.decode(Z), encoder.decode(Z))
    with pytest.raises(ArtifactError, match="schema_version"):
        ColumnEncoder.from_dict({**encoder.to_dict(), "schema_version": 9})
    with pytest.raises(ArtifactError, match="malformed"):
        ColumnEncoder.from_dict({**encoder.to_dict(), "knots": [[float("nan")]]})
    with pytest.raises(ValueError, match="unknown GAN encoding"):
        ColumnEncoder("fancy")


@pytest.mark.parametrize("kind", ["quantile", "mode_specific"])
def test_a_non_finite_training_value_is_refused_with_its_place(columns, kind):
    bad = columns.copy()
    bad[7, 1] = np.nan
    with pytest.raises(ValueError, match="training row 7, column 1 is nan"):
        ColumnEncoder(kind, mode_columns=(0,)).fit(bad)


def test_mode_specific_rows_are_mode_and_offset_and_decode_back():
    rng = np.random.default_rng(4)
    # Two clear modes in column 1 (like Time's two days), a plain column 0.
    bimodal = np.r_[rng.normal(-3, 0.3, 200), rng.normal(2, 0.5, 300)]
    X = np.column_stack([rng.normal(size=500), bimodal, rng.normal(size=500)])
    encoder = ColumnEncoder("mode_specific", mode_columns=(1,), random_state=0).fit(X)
    layout = encoder.output_layout()
    assert layout[0] == ("linear", 2) and layout[1] == ("tanh", 1)
    assert layout[2][0] == "softmax" and layout[2][1] >= 2
    Z = encoder.training_rows(X)
    assert Z.shape == (500, encoder.n_encoded)
    blocks = Z[:, 3:]
    assert set(np.unique(blocks)) == {0.0, 1.0} and (blocks.sum(axis=1) == 1).all()
    assert (np.abs(Z[:, 2]) <= 0.99).all()
    # A one-hot block decodes to its own mode, so the rows come back exactly.
    np.testing.assert_allclose(encoder.decode(Z, random_state=1), X, atol=1e-9)
    again = ColumnEncoder.from_dict(json.loads(json.dumps(encoder.to_dict())))
    np.testing.assert_array_equal(
        again.decode(Z, random_state=1), encoder.decode(Z, random_state=1)
    )
    with pytest.raises(ValueError, match="mode_columns"):
        ColumnEncoder("mode_specific", mode_columns=(7,)).fit(X)
