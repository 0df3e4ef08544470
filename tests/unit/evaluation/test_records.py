"""The run's records as typed models (pipeline.evaluation.records): metrics.json
owned key by key, a file written before the models read the same, a key no model
owns refused with its place."""

import gzip
import json
from pathlib import Path

import pytest

from pipeline.core.errors import ArtifactError
from pipeline.evaluation.records import (
    FitRecord,
    check_metrics,
    load_metrics,
    metrics_json_schema,
    save_metrics,
)

WRITTEN_BEFORE = Path(__file__).parent / "data" / "metrics-c9544d7.json.gz"
"""The metrics.json of the 350,000-row transactions smoke run, written by commit
c9544d7 (the code before the records were typed)."""


@pytest.fixture(scope="module")
def before() -> dict:
    return json.loads(gzip.decompress(WRITTEN_BEFORE.read_bytes()))


def test_a_metrics_json_written_before_the_models_reads_the_same(before, tmp_path):
    metrics = check_metrics(before)
    assert metrics.to_json() == before  # nothing added, dropped or changed
    assert metrics.results[0].confusion.tp >= 0
    assert (
        metrics.comparison.best_smote_family
        == before["comparison"]["best_smote_family"]
    )
    written = save_metrics(tmp_path / "metrics.json", before)
    assert written == before
    assert load_metrics(tmp_path / "metrics.json").to_json() == before


def test_a_key_no_model_owns_is_refused_where_it_is(before, tmp_path):
    bad = json.loads(json.dumps(before))
    bad["results"][1]["n_addded"] = 3
    with pytest.raises(ArtifactError, match=r"metrics\.json: results\.1\.n_addded"):
        save_metrics(tmp_path / "metrics.json", bad)
    assert not (tmp_path / "metrics.json").exists()  # nothing half-written
    with pytest.raises(Exception, match="n_train"):
        FitRecord.model_validate({**before["results"][0], "n_train": "many"})


def test_the_json_schema_names_every_top_level_key(before):
    schema = metrics_json_schema()
    assert set(before) <= set(schema["properties"])
    assert "schema_version" in schema["required"]
    fit = schema["$defs"]["FitRecord"]
    assert fit["additionalProperties"] is False
    assert "auprc_bootstrap_ci95" in fit["properties"]
