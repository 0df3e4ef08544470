import os
import subprocess
import sys

import pytest

from flows.cli import main


def _run_cli(*args, cwd=None):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run(
        [sys.executable, "-m", "flows", *args],
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


def test_a_full_disk_is_one_line_exit_2(tmp_path, sample_path, monkeypatch, capsys):
    """ENOSPC (or EROFS) while writing: a one-line error naming the file, exit 2."""
    import errno

    import pipeline.core.artifacts as artifacts
    import pipeline.run.prepare  # noqa: F401  (bound to the real save_parquet first)

    def full(*args, **kwargs):
        raise OSError(
            errno.ENOSPC, "No space left on device", str(tmp_path / "x.parquet")
        )

    monkeypatch.setattr(artifacts, "save_parquet", full)
    monkeypatch.setattr("pipeline.run.prepare.save_parquet", full)
    cache = f"data.cache_dir={tmp_path / 'c'}"  # a bare word is a string
    code = main(
        ["run", "--data", str(sample_path), "--reports", str(tmp_path / "r"),
         "--set", cache]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    # (Earlier tests in this process may have left the library's INFO lines on.)
    last = err.strip().splitlines()[-1]
    assert last == f"fraudaug: error: {tmp_path / 'x.parquet'}: No space left on device"
    assert "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_rolling_windows_longer_than_the_table_are_refused_before_the_flow(
    tmp_path, sample_path
):
    proc = _run_cli(
        "run", "--data", str(sample_path), "--profile", "smoke",
        "--split-mode", "rolling", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "need 35.0 days of data" in lines[0]  # 21d + 7d + 1 x 7d
    assert "the table spans 2.0 days" in lines[0]
    assert not (tmp_path / "reports").exists()  # no run folder: nothing started


@pytest.mark.parametrize(
    "args, says",
    [
        (["alerts", "setup"], "give --webhook URL or --block TYPE/NAME"),
        (
            [
                "alerts",
                "setup",
                "--webhook",
                "http://h/x",
                "--block",
                "slack-webhook/x",
            ],
            "give --webhook URL or --block TYPE/NAME",
        ),
        (
            ["alerts", "setup", "--webhook", "http://h/x", "--on", "fraudaug.nope"],
            "unknown event fraudaug.nope",
        ),
    ],
)
def test_alerts_setup_refuses_bad_arguments_in_one_line(args, says, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_alerts_events_lists_every_event(capsys):
    from pipeline.report.alerts import NOTIFIABLE

    assert main(["alerts", "events"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()] == [
        k.name for k in NOTIFIABLE
    ]
