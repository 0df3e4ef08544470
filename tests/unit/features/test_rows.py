"""One split's rows as the per-split stages read them (``SplitInputs``)."""

import numpy as np
import pandas as pd
import pytest

from pipeline.core.config import run_seeds
from pipeline.core.memory import forget_answers
from pipeline.features.rows import SplitInputs, load_split_data
from pipeline.features.splits import SUBSETS
from pipeline.run.plan import load_config
from pipeline.run.prepare import stage_ingest, stage_preprocess


@pytest.fixture(scope="module")
def prepared(demo_frame, tmp_path_factory):
    """The demo table ingested and split (3 stratified splits)."""
    root = tmp_path_factory.mktemp("rows")
    demo_frame.to_csv(root / "demo.csv", index=False)
    ingested = stage_ingest(root / "demo.csv", root / "cache")
    config = load_config("smoke")
    seeds = run_seeds(config.seed, config.split.n_splits)
    result = stage_preprocess(
        ingested["frame_path"], root / "run", config, seeds["split"]
    )
    return {**result, "frame_path": ingested["frame_path"]}


def _inputs(prepared, split=0, **kwargs) -> SplitInputs:
    return SplitInputs(
        prepared["frame_path"],
        prepared["splits_path"],
        prepared["transformer_paths"][split],
        split,
        **kwargs,
    )


def test_a_split_is_read_once_and_shared_read_only(prepared):
    forget_answers()
    inputs = _inputs(prepared)
    first, second = inputs.load(), inputs.load()
    assert first["test"]["X"] is second["test"]["X"]
    with pytest.raises(ValueError, match="read-only"):
        first["train"]["y"][0] = 1
    assert inputs.sizes()["n_rows"] == sum(len(first[s]["y"]) for s in SUBSETS)
    assert inputs.sizes()["n_features"] == first["train"]["X"].shape[1]
    forget_answers()


def test_the_validation_halves_are_drawn_once_with_the_rows_from_their_seed(
    prepared,
):
    """Every task of a split (each method's fit) reads the same two stratified
    halves of the validation rows, drawn from the split's ``halves`` seed."""
    from pipeline.features.splits import validation_halves

    forget_answers()
    data = _inputs(prepared, halves_seed=7).load()
    y, first = data["validation"]["y"], data["validation"]["half"]
    assert first.dtype == bool and len(first) == len(y)
    assert abs(int(first.sum()) - len(y) / 2) <= 1
    assert abs(int(y[first].sum()) - int(y[~first].sum())) <= 1  # stratified
    np.testing.assert_array_equal(first, validation_halves(y, 7))
    other = load_split_data(_inputs(prepared, halves_seed=8))["validation"]["half"]
    assert (other != first).any()
    forget_answers()


def test_above_the_budget_training_and_validation_rows_are_sampled_not_test_rows(
    prepared,
):
    whole = load_split_data(_inputs(prepared))
    n_train = len(whole["train"]["y"])
    budget = n_train // 2
    part = load_split_data(_inputs(prepared, max_train_rows=budget, rows_seed=3))
    train = part["train"]
    assert len(train["y"]) == budget
    assert train["y"].sum() == whole["train"]["y"].sum()  # every fraud kept
    legit = train["weight"][train["y"] == 0]
    # Each kept legitimate row stands for the legitimate rows it replaces.
    assert legit.sum() == pytest.approx((whole["train"]["y"] == 0).sum())
    assert part["validation"]["weight"] is not None
    assert part["test"]["weight"] is None
    np.testing.assert_array_equal(part["test"]["rows"], whole["test"]["rows"])
    assert part["sampled"]["train"]["rows_after"] == budget
    again = load_split_data(_inputs(prepared, max_train_rows=budget, rows_seed=3))
    np.testing.assert_array_equal(again["train"]["rows"], train["rows"])


def test_card_ids_read_as_codes_give_the_same_card_precision():
    from pipeline.evaluation.topk import precision_top_k_of_rows
    from pipeline.features.rows import entity_codes

    rng = np.random.default_rng(0)
    n = 3_000
    cards = pd.Series(rng.choice([f"C{i:05d}" for i in range(400)], n), dtype=object)
    cards[rng.random(n) < 0.02] = None  # a few rows without a card
    y = (rng.random(n) < 0.05).astype(int)
    scores = y * 0.5 + rng.random(n)
    days = np.repeat(np.arange(10), n // 10)
    totals = {d: 300 for d in range(10)}
    codes = entity_codes(cards)
    assert codes.dtype == np.float64 and np.isnan(codes).sum() == cards.isna().sum()
    as_text = precision_top_k_of_rows(y, scores, days, totals, 20, entity=cards)
    as_codes = precision_top_k_of_rows(y, scores, days, totals, 20, entity=codes)
    assert as_codes == as_text
    whole = entity_codes(cards.fillna("none"))
    assert (
        whole.dtype == np.int32
        and len(np.unique(whole)) == cards.fillna("none").nunique()
    )
