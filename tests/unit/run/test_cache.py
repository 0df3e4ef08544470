"""The stage cache: entries keyed by inputs and code, files checked by sha256."""

from pathlib import Path

import pytest

from pipeline.run.cache import cache_filling, cache_get, cache_put, cache_valid


def test_an_entry_is_whole_or_absent(tmp_path):
    entry = tmp_path / "stages" / "x" / "key"
    with pytest.raises(RuntimeError), cache_filling(entry) as tmp:
        (tmp / "a.txt").write_text("a")
        raise RuntimeError("interrupted")
    assert not entry.exists() and list(entry.parent.iterdir()) == []
    with cache_filling(entry) as tmp:
        (tmp / "a.txt").write_text("a")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "b.txt").write_text("b")
    assert cache_valid(entry)
    out = tmp_path / "out"
    assert cache_get(entry, out)
    assert (out / "sub" / "b.txt").read_text() == "b"
    # A changed file makes it a miss, never a wrong hit.
    (entry / "a.txt").write_text("changed")
    assert not cache_valid(entry) and not cache_get(entry, tmp_path / "again")


def test_an_entry_completed_meanwhile_is_kept(tmp_path):
    """Two runs filling one entry: the second keeps the first's files (a run may
    be reading them) and drops its own copy."""
    entry = tmp_path / "key"
    with cache_filling(entry) as tmp:
        (tmp / "a.txt").write_text("first")
        cache_put(entry, {"a.txt": _file(tmp_path / "src.txt", "second")})
    assert (entry / "a.txt").read_text() == "second"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def _file(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_stage_cache_reuses_and_recomputes_deleted_files(tmp_path, sample_path):
    from pipeline.run.plan import load_config
    from pipeline.run.prepare import stage_ingest, stage_preprocess

    cache = tmp_path / "cache"
    first = stage_ingest(sample_path, cache)
    assert first["cached"] is False
    again = stage_ingest(sample_path, cache)
    assert again["cached"] is True and again["sha256"] == first["sha256"]
    assert again["rows"] == 20_000 and again["frauds"] == 492
    config = load_config("smoke")
    a = stage_preprocess(again["frame_path"], tmp_path / "run-a", config, [1], cache)
    b = stage_preprocess(again["frame_path"], tmp_path / "run-b", config, [1], cache)
    assert (a["cached"], b["cached"]) == (False, True)
    assert (tmp_path / "run-a" / "splits.parquet").read_bytes() == (
        tmp_path / "run-b" / "splits.parquet"
    ).read_bytes()
    # Another seed is another key.
    c = stage_preprocess(again["frame_path"], tmp_path / "run-c", config, [2], cache)
    assert c["cached"] is False
    # A cached result whose files were deleted is recomputed, not trusted.
    for entry in (cache / "stages" / "preprocess").iterdir():
        (entry / "splits.parquet").unlink()
    d = stage_preprocess(again["frame_path"], tmp_path / "run-d", config, [1], cache)
    assert d["cached"] is False
    # A changed cached Parquet is not trusted either.
    parquet = Path(first["frame_path"])
    parquet.write_bytes(parquet.read_bytes()[:-10])
    assert stage_ingest(sample_path, cache)["cached"] is False


KEYS = """
import json
from pipeline.data.schema import KAGGLE
from pipeline.core.code import code_version, source_files
from pipeline.run.cache import FEATURES_CODE, INGEST_CODE
from pipeline.run.prepare import _ingest_entry
print(json.dumps({
    "ingest": _ingest_entry("cache", "0" * 64, KAGGLE).name,
    "features": code_version(*FEATURES_CODE),
    "read": sorted(source_files(INGEST_CODE)),
}))
"""


def test_a_change_in_any_module_the_code_imports_makes_its_cache_stale(tmp_path):
    """The ingest entry's key covers the modules ``data.ingest`` imports, however
    deep (it once hashed ``data.ingest`` and ``data.partitions`` only, and a fix
    in ``data/validation.py`` reused tables the old code had cached); a change
    elsewhere leaves it."""
    import json
    import shutil
    import subprocess
    import sys

    from tests.helpers import ROOT

    shutil.copytree(ROOT / "pipeline", tmp_path / "pipeline")

    def keys() -> dict:
        out = subprocess.run(
            [sys.executable, "-c", KEYS],
            cwd=tmp_path,
            env={"PYTHONPATH": str(tmp_path), "PATH": ""},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    before = keys()
    assert {"pipeline.data.validation", "pipeline.data.reading"} <= set(before["read"])
    with open(tmp_path / "pipeline" / "data" / "validation.py", "a") as f:
        f.write("\n# a fix in how a cell is checked\n")
    after = keys()
    assert after["ingest"] != before["ingest"]
    assert after["features"] == before["features"]  # it does not import validation
    with open(tmp_path / "pipeline" / "gan" / "trainer.py", "a") as f:
        f.write("\n# a change the ingest does not import\n")
    assert keys()["ingest"] == after["ingest"]
    # A method's code is read by the config's validation, but makes no table,
    # split or transformer: changing it leaves those entries.
    with open(tmp_path / "pipeline" / "resampling" / "over_sampling.py", "a") as f:
        f.write("\n# a new sampler\n")
    again = keys()
    assert again["ingest"] == after["ingest"]
    assert again["features"] == after["features"]


def test_an_upgrade_of_a_package_the_code_imports_makes_its_cache_stale(monkeypatch):
    """A TensorFlow upgrade retrains cached GANs; it leaves the cached tables,
    whose code never imports it. A pandas upgrade makes both stale."""
    from importlib import metadata

    from pipeline.core.code import code_version, third_party_versions
    from pipeline.run.cache import FEATURES_CODE, INGEST_CODE

    gan = ("pipeline.gan", *FEATURES_CODE)
    assert {"tensorflow", "keras", "scikit-learn"} <= set(third_party_versions(gan))
    assert {"pandas", "pyarrow"} <= set(third_party_versions(INGEST_CODE))
    assert "tensorflow" not in third_party_versions(INGEST_CODE)
    before = {"gan": code_version(*gan), "ingest": code_version(*INGEST_CODE)}
    installed = metadata.version

    def upgraded(name: str) -> str:
        return "99.0" if name == upgrade else installed(name)

    for upgrade, stale in (("tensorflow", {"gan"}), ("pandas", {"gan", "ingest"})):
        monkeypatch.setattr(metadata, "version", upgraded)
        after = {"gan": code_version(*gan), "ingest": code_version(*INGEST_CODE)}
        assert {k for k in before if after[k] != before[k]} == stale, upgrade
        monkeypatch.setattr(metadata, "version", installed)
