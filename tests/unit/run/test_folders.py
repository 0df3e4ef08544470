import json
import os
import platform
import sys

from pipeline.run.folders import LOCK_FILE, RUN_FILE, start_run
from pipeline.run.plan import load_config


def test_a_new_run_gets_a_locked_folder(tmp_path):
    run = start_run(tmp_path, "a" * 64, load_config("smoke"))
    run_dir = tmp_path / run["run_id"]
    assert not run["resumed"] and (run_dir / RUN_FILE).is_file()
    assert (run_dir / LOCK_FILE).read_text() == str(os.getpid())


def test_an_interrupted_run_with_the_same_data_and_config_is_resumed(tmp_path):
    config = load_config("smoke")
    first = start_run(tmp_path, "a" * 64, config)
    # The first run was killed: its lock names a process that no longer exists.
    (tmp_path / first["run_id"] / LOCK_FILE).write_text("999999999")
    again = start_run(tmp_path, "a" * 64, config)
    assert again == {**first, "resumed": True}
    # Other data or another seed start a new run.
    (tmp_path / first["run_id"] / LOCK_FILE).write_text("999999999")
    assert not start_run(tmp_path, "b" * 64, config)["resumed"]
    (tmp_path / first["run_id"] / LOCK_FILE).write_text("999999999")
    assert not start_run(tmp_path, "a" * 64, load_config("smoke", seed=1))["resumed"]
    # A night that only monitors never resumes a training run's folder.
    assert not start_run(tmp_path, "a" * 64, config, kind="monitor")["resumed"]


def test_a_finished_or_running_run_is_never_reused(tmp_path):
    config = load_config("smoke")
    first = start_run(tmp_path, "a" * 64, config)
    run_dir = tmp_path / first["run_id"]
    (run_dir / LOCK_FILE).write_text(str(os.getppid()))  # alive: still running
    assert not start_run(tmp_path, "a" * 64, config)["resumed"]
    (run_dir / LOCK_FILE).unlink()
    (run_dir / "metrics.json").write_text(json.dumps({"run_id": first["run_id"]}))
    assert not start_run(tmp_path, "a" * 64, config)["resumed"]


def test_output_folders_stay_inside_the_output_root(tmp_path, monkeypatch):
    import pytest

    from pipeline.core.errors import ConfigError
    from pipeline.core.paths import check_output_paths

    monkeypatch.chdir(tmp_path)
    check_output_paths(None, reports_dir="/etc")  # no root: anything goes (CLI runs)
    check_output_paths(tmp_path, reports_dir="reports", cache_dir=tmp_path / "c")
    for bad in ("/etc", "../outside", "reports/../../x"):
        with pytest.raises(ConfigError, match="outside the output root"):
            check_output_paths(tmp_path, reports_dir=bad)
    (tmp_path / "link").symlink_to("/tmp")
    with pytest.raises(ConfigError, match="cache_dir"):
        check_output_paths(tmp_path, cache_dir="link/cache")


def test_malloc_arenas_are_capped_for_the_run_and_its_children(monkeypatch):
    from pipeline.core.memory import limit_malloc_arenas

    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    applied = limit_malloc_arenas(2)
    assert os.environ["MALLOC_ARENA_MAX"] == "2"
    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        assert applied
