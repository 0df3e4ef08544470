import os
import subprocess
import sys

import pytest

from pipeline.cli import main


def _run_cli(*args, cwd=None):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def test_validate_the_real_sample(sample_path):
    proc = _run_cli("validate", str(sample_path))
    assert proc.returncode == 0, proc.stderr
    assert "20,000 rows, 492 frauds" in proc.stdout


def test_validate_without_class_is_one_line_exit_2(tmp_path, demo_frame):
    path = tmp_path / "noclass.csv"
    demo_frame.drop(columns="Class").to_csv(path, index=False)
    proc = _run_cli("validate", str(path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert str(path) in lines[0] and "missing column(s) Class" in lines[0]


def test_demo_data_then_validate_says_demo(tmp_path, capsys):
    out = tmp_path / "demo.csv.gz"
    assert (
        main(
            ["demo-data", "--rows", "3000", "--fraud-share", "0.02", "--out", str(out)]
        )
        == 0
    )
    assert main(["validate", str(out)]) == 0
    assert "[demo data]" in capsys.readouterr().out


def test_run_with_a_missing_file_exits_2_before_starting_anything(tmp_path, capsys):
    assert (
        main(
            [
                "run",
                "--data",
                str(tmp_path / "nope.csv"),
                "--reports",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    assert "no such file" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_bad_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["run", "--profile", "fast"])
    assert info.value.code == 2
