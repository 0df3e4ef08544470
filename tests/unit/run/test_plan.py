"""A run planned before any stage works (pipeline.run.plan.preflight): what it
refuses, with one line each, and what it writes (nothing)."""

from __future__ import annotations

import json

import pytest

from pipeline.core.errors import ConfigError, PipelineError
from pipeline.core.paths import OUTPUT_ROOT_ENV
from pipeline.run.plan import preflight


def _plan(tmp_path, **given):
    arguments = {
        "profile": "smoke",
        "seed": 3,
        "overrides": {"data": {"cache_dir": str(tmp_path / "cache")}},
        "schema_path": None,
        "reports_dir": str(tmp_path / "reports"),
        "tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}",
    }
    return preflight(**{**arguments, **given})


def test_a_plan_holds_the_config_its_schema_and_the_store_and_writes_nothing(
    tmp_path,
):
    plan = _plan(tmp_path)
    assert plan.config.seed == 3
    assert plan.config.evaluation.methods  # named against the registry
    assert plan.schema.label.column == "Class"
    assert plan.tracking_uri == f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert plan.reports_dir == str(tmp_path / "reports")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_plan_is_refused_for_each_thing_a_run_cannot_do(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="unknown method"):
        _plan(tmp_path, overrides={"evaluation": {"methods": ["no_such"]}})
    with pytest.raises(ConfigError, match="unknown profile|profile"):
        _plan(tmp_path, profile="nightly-ish")
    (tmp_path / "taken").write_text("a file")
    with pytest.raises(ConfigError, match="cannot create the reports folder"):
        _plan(tmp_path, reports_dir=str(tmp_path / "taken" / "reports"))
    with pytest.raises(ConfigError, match="cannot create the cache folder"):
        _plan(
            tmp_path,
            overrides={"data": {"cache_dir": str(tmp_path / "taken" / "c")}},
        )
    bad_schema = tmp_path / "schema.json"
    bad_schema.write_text(json.dumps({"name": "t"}))
    with pytest.raises(PipelineError):
        _plan(tmp_path, schema_path=str(bad_schema))
    with pytest.raises(ConfigError, match="tracking"):
        _plan(tmp_path, tracking_uri="http://127.0.0.1:9/")
    # A served deployment's runs write only inside the folder serve started in.
    monkeypatch.setenv(OUTPUT_ROOT_ENV, str(tmp_path / "root"))
    with pytest.raises(ConfigError, match="outside the output root"):
        _plan(tmp_path)
