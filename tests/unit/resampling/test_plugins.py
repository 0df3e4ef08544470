"""A team's own methods through entry points (pipeline.resampling.plugins): the
test plugins of tests/plugins (installed for the tests by conftest) listed, chosen,
checked, and taken through the whole protocol; a broken one costs only itself."""

import json

import numpy as np
import pytest

from pipeline.core.errors import ConfigError
from pipeline.resampling import registry
from pipeline.resampling.plugins import PluginError, TrainedGenerator, check_rows
from pipeline.resampling.resample import resample
from pipeline.run.plan import load_config

PLUGIN = "fraudaug-test-plugins 1.0"
GOOD = ["bootstrap_over", "half_under", "independent"]
BROKEN = {
    "not_importable": "cannot be imported (fraudaug_test_plugins.missing:Sampler): "
    "ModuleNotFoundError: No module named 'fraudaug_test_plugins.missing'",
    "raising": "RuntimeError: the plugin gave up",
    "shuffled": "ShufflingSampler.fit_resample did not return the training rows "
    "first, in order",
    "lost_column": "lost_column: its rows lack column(s)",
}


def test_fraudaug_methods_lists_the_built_in_ones_and_the_plugins(capsys):
    from flows.cli import main

    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for method in registry.built_in_methods():
        assert method.name in lines and "built-in" in lines[method.name]
    assert "generative" in lines["independent"] and PLUGIN in lines["independent"]
    assert "under-sampling" in lines["half_under"] and "kept" in lines["half_under"]
    assert "cannot be imported" in lines["not_importable"]
    assert main(["methods", "--json"]) == 0
    listed = {m["name"]: m for m in json.loads(capsys.readouterr().out)}
    assert listed["cwgan_gp"]["default"] and not listed["bootstrap_over"]["default"]
    assert listed["bootstrap_over"]["source"] == PLUGIN
    assert listed["bootstrap_over"]["entry_point"] == (
        "fraudaug_test_plugins:BootstrapOverSampler"
    )


def test_a_plugin_declares_its_place_in_the_order_of_simplicity(monkeypatch):
    """A plugin is the most complex kind unless its class declares a level; a
    level that is none is refused, as a plugin that breaks its contract."""
    from pipeline.resampling import plugins
    from pipeline.resampling.method import Complexity

    assert registry.get("half_under").complexity == Complexity.UNDERSAMPLING
    assert registry.get("bootstrap_over").complexity == Complexity.GENERATOR
    assert registry.get("independent").complexity == Complexity.GENERATOR
    assert registry.get("half_under").describe()["complexity"] == 2

    class Odd:
        fraudaug_complexity = 9

    level, why = plugins._complexity(Odd)
    assert level == Complexity.GENERATOR
    assert why.startswith("fraudaug_complexity 9 is not one of 0 no resampling, ")


def test_a_config_names_plugins_like_built_in_methods():
    config = load_config(
        "smoke", overrides={"evaluation": {"methods": ["none", "independent"]}}
    )
    assert config.evaluation.methods == ("none", "independent")
    # The default stays the built-in methods: a plugin is chosen, never implied.
    assert load_config("default").evaluation.methods == registry.built_in_names()
    with pytest.raises(
        ConfigError, match="unknown method.*'gan9000'.*fraudaug methods"
    ):
        load_config("smoke", overrides={"evaluation": {"methods": ["gan9000"]}})


def test_a_plugin_sampler_is_built_with_imbalanced_learns_arguments(model_space):
    X, y = model_space
    n_fraud = int(y.sum())
    sampler = registry.make_sampler(
        "bootstrap_over",
        load_config("smoke").evaluation,
        random_state=3,
        n_minority=2 * n_fraud,
    )
    assert sampler.sampling_strategy == {1: 2 * n_fraud} and sampler.random_state == 3
    rows = resample(sampler, X, y, check=True)
    assert rows.n_added == n_fraud and (rows.y[len(y) :] == 1).all()
    under = registry.make_sampler(
        "half_under", load_config("smoke").evaluation, random_state=3, n_majority=500
    )
    assert under.sampling_strategy == {0: 500}
    kept = resample(under, X, y, sample_weight=np.arange(len(y)) + 1.0, check=True)
    # Each kept row keeps its own weight; none is added.
    assert kept.n_added == 0 and (kept.y == 0).sum() == 500
    np.testing.assert_array_equal(kept.weight, under.sample_indices_ + 1.0)


def test_a_plugin_samplers_rows_are_held_to_the_contract(model_space):
    X, y = model_space
    evaluation = load_config("smoke").evaluation
    target = 2 * int(y.sum())
    shuffled = registry.make_sampler(
        "shuffled", evaluation, random_state=0, n_minority=target
    )
    with pytest.raises(PluginError, match="training rows first, in order"):
        resample(shuffled, X, y, check=True)
    with pytest.raises(RuntimeError, match="the plugin gave up"):
        raising = registry.make_sampler(
            "raising", evaluation, random_state=0, n_minority=target
        )
        resample(raising, X, y, check=True)
    with pytest.raises(PluginError, match="cannot be imported"):
        registry.make_sampler("not_importable", evaluation, random_state=0)
    # A category code the training rows never had (column 0 read as codes 0..1).
    good = registry.make_sampler(
        "bootstrap_over", evaluation, random_state=0, n_minority=target
    )
    with pytest.raises(PluginError, match="in column 0, which holds category codes"):
        resample(good, X, y, check=True, categories={0: 2})


@pytest.fixture(scope="module")
def validated(mixed_csv, mixed_schema):
    """The mixed table as the pipeline reads it (validated: its own dtypes), and
    its fitted transformer."""
    from pipeline.data.ingest import read_transactions
    from pipeline.features.transformer import TabularTransformer

    frame, _ = read_transactions(mixed_csv, mixed_schema)
    return frame, TabularTransformer(schema=mixed_schema).fit(frame)


def test_a_generators_rows_are_checked_against_the_schema(validated):
    frame, mixed_transformer = validated
    columns = [c.name for c in mixed_transformer.schema.feature_columns]
    frauds = frame[columns]
    method = registry.get("independent")
    trained = TrainedGenerator.train(method, frauds, mixed_transformer, 0)
    rows = trained.draw(50)
    assert rows.shape == (50, len(mixed_transformer.feature_names))
    # Every category one the table has, every count whole, in the model space.
    assert not any(m.any() for m in mixed_transformer.unseen(rows).values())
    kinds = {c.kind: c.name for c in mixed_transformer.schema.feature_columns}
    categorical, integer = kinds["categorical"], kinds["integer"]
    good = frauds.head(3).reset_index(drop=True)
    for change, message in [
        (lambda f: f.drop(columns=[categorical]), f"lack column.*{categorical}"),
        (lambda f: f.assign(**{integer: f[integer] + 0.5}), f"{integer} is integer"),
        (lambda f: f.assign(**{integer: "many"}), f"{integer} is integer but"),
        (lambda f: f.head(2), r"sample\(3\) returned 2 rows"),
    ]:
        with pytest.raises(PluginError, match=message):
            check_rows(change(good.copy()), mixed_transformer, 3, "g")
    trained.generator.sample = lambda num_rows: good.assign(
        **{categorical: "not-a-category"}
    )
    with pytest.raises(PluginError, match="'not-a-category', a category the table"):
        trained.draw(3)


@pytest.mark.slow
def test_plugins_go_through_the_whole_protocol_and_a_broken_one_costs_itself(
    harness, sample_path, tmp_path
):
    """On the real sample: a plugin sampler, a plugin under-sampler and a plugin
    generator each at the amount its validation rows chose, compared with none,
    the generator's fidelity measured, named with their distribution in
    metrics.json, the report and MLflow; the broken plugins are each that method
    failed with its reason, and the run completes."""
    from flows.fraud_flow import fraud_augmentation
    from pipeline.core.artifacts import load_json
    from tests.helpers import FAST, mlflow_runs_named

    reports = tmp_path / "reports"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    methods = ["none", "smote", *GOOD, *BROKEN]
    result = fraud_augmentation(
        data_path=str(sample_path),
        profile="smoke",
        reports_dir=str(reports),
        tracking_uri=uri,
        overrides={
            **FAST,
            "data": {"cache_dir": str(tmp_path / "cache")},
            "split": {"n_splits": 2},
            "evaluation": {"methods": methods, "amount_grid": [1.0, 4.0]},
        },
    )
    assert result["status"] == "completed_with_failures"
    assert set(result["failed_methods"]) == set(BROKEN)
    for name, reason in BROKEN.items():
        assert reason in result["failed_methods"][name]
    metrics = load_json(reports / "latest" / "metrics.json")
    assert [s["method"] for s in metrics["summary"]] == ["none", "smote", *GOOD]
    details = {m["name"]: m for m in metrics["method_details"]}
    assert {details[m]["source"] for m in (*GOOD, *BROKEN)} == {PLUGIN}
    assert details["smote"]["source"] == "built-in"
    # Amounts chosen on validation rows, as for SMOTE: every grid point was fitted.
    chosen = {(r["method"], r["split"]): r for r in metrics["results"]}
    for method in ("bootstrap_over", "half_under", "independent"):
        record = chosen[(method, 0)]
        assert record["plugin"] == PLUGIN
        search = record["amount_search"]
        assert len(search) >= 2
        best = max(search, key=lambda a: a["validation_auprc"])
        assert record["validation_auprc"] == best["validation_auprc"]
    assert chosen[("half_under", 0)]["n_added"] == 0
    assert chosen[("independent", 1)]["n_added"] > 0
    compared = {
        c["method"]
        for c in metrics["comparison"]["comparisons"]
        if c["baseline"] == "none"
    }
    assert set(GOOD) <= compared
    assert 0.5 <= metrics["fidelity"]["independent"]["c2st_auc"] <= 1.0
    # The broken generator's rows failed in the fidelity stage too: said, not fatal.
    assert "lost_column" not in metrics["fidelity"]
    assert "lost_column (split 0)" in metrics["fidelity"]["failed"]
    assert {(f["method"], f["left_out"]) for f in metrics["failures"]} == {
        (name, True) for name in BROKEN
    }
    assert metrics["registry"]["challenger"]["method"] in ["none", "smote", *GOOD]
    report = (reports / "latest" / "report.html").read_text()
    assert PLUGIN in report and 'data-source="independent"' in report
    assert 'id="failures"' in report and "the plugin gave up" in report
    assert "failed — left out of the comparison" in report
    assert 'id="fidelity-failed"' in report
    for name in BROKEN:
        assert name in report
    assert (reports / "index.html").is_file()
    (tracked,) = mlflow_runs_named(result["run_id"], uri=uri)
    assert tracked.info.status == "FINISHED"
    assert tracked.data.tags["fraudaug.status"] == "completed_with_failures"
    assert tracked.data.tags["fraudaug.plugins"] == (
        "bootstrap_over, half_under, independent, lost_column, not_importable, "
        f"raising, shuffled: {PLUGIN}"
    )
    assert set(tracked.data.tags["fraudaug.failed_methods"].split(", ")) == set(BROKEN)


@pytest.fixture(scope="module")
def mixed_space(validated):
    """The mixed table in model space (categorical columns as codes) and its
    fitted transformer."""
    frame, transformer = validated
    y = frame[transformer.schema.label.column].to_numpy(np.int64)
    return transformer.transform(frame), y, transformer


@pytest.mark.parametrize("name", ["stock_kmeans_smote", "stock_svm_smote"])
def test_a_stock_interpolating_sampler_runs_on_a_mixed_table_one_hot(mixed_space, name):
    """imbalanced-learn's own over-samplers, installed as plugins (no fraudaug
    code): on a table with categorical columns each sees them one-hot and its
    rows come back as codes the table has — whole, in range, the training rows
    first — so the contract check passes where the codes alone failed."""
    from pipeline.resampling.plugins import OneHotCategories

    X, y, transformer = mixed_space
    counts = transformer.category_counts
    assert counts  # (the table has categorical columns)
    target = 2 * int(y.sum())
    evaluation = load_config("smoke").evaluation
    sampler = registry.make_sampler(
        name, evaluation, random_state=0, n_minority=target, category_counts=counts
    )
    assert isinstance(sampler, OneHotCategories)
    rows = resample(sampler, X, y, check=True, categories=counts)
    assert rows.n_added > 0 and (rows.y[len(y) :] == 1).all()
    np.testing.assert_array_equal(rows.X[: len(X)], X)
    new = rows.X[len(X) :]
    for j, k in counts.items():
        assert set(np.unique(new[:, j])) <= set(range(k))
    # Numeric columns are the sampler's own: interpolated, not copied rows.
    numeric = [j for j in range(X.shape[1]) if j not in counts]
    assert len(np.unique(new[:, numeric], axis=0)) > len(new) // 2
    # On the codes themselves (what a plugin sampler used to get) it fails.
    bare = sampler.sampler
    with pytest.raises(PluginError, match="which holds category codes"):
        resample(bare, X, y, check=True, categories=counts)


def test_a_sampler_that_takes_codes_gets_them_and_their_columns(mixed_space):
    """A sampler whose constructor takes imbalanced-learn's categorical_features
    (SMOTENC) is handed the codes and their columns, not one-hot; a class may
    say either way itself, and a declaration that is neither is refused."""
    from pipeline.resampling import plugins

    X, y, transformer = mixed_space
    counts = transformer.category_counts
    sampler = registry.make_sampler(
        "stock_smotenc",
        load_config("smoke").evaluation,
        random_state=0,
        n_minority=2 * int(y.sum()),
        category_counts=counts,
    )
    assert not isinstance(sampler, plugins.OneHotCategories)
    assert list(sampler.categorical_features) == sorted(counts)
    rows = resample(sampler, X, y, check=True, categories=counts)
    assert rows.n_added == int(y.sum())

    class Declared:
        fraudaug_categories = "codes"

    class Odd:
        fraudaug_categories = "ordinal"

    assert plugins.takes_codes(Declared) == (True, "")
    assert plugins.takes_codes(type("Plain", (), {})) == (False, "")
    assert plugins.takes_codes(Odd)[1] == (
        "fraudaug_categories 'ordinal' is not one of ('one-hot', 'codes')"
    )
    # On a table of numbers only nothing is wrapped.
    plain = registry.make_sampler(
        "stock_kmeans_smote", load_config("smoke").evaluation, random_state=0
    )
    assert not isinstance(plain, plugins.OneHotCategories)
