"""The commands around `run` as users meet them: quiet, fast to refuse, streaming."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.core.artifacts import TableWriter
from pipeline.core.backend import is_native_log_line
from pipeline.core.errors import ConfigError, DataValidationError
from pipeline.data.batches import iter_unlabelled
from pipeline.data.ingest import read_transactions
from pipeline.data.schema import KAGGLE
from tests.helpers import foreign_lines

COLUMNS = KAGGLE.names
FEATURES = tuple(c.name for c in KAGGLE.feature_columns)

from tests.helpers import ROOT  # noqa: E402

FRAUDAUG = str(Path(sys.executable).with_name("fraudaug"))


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL",)}
    return {**env, **extra}


# -- refusing before loading ------------------------------------------------------
REFUSALS = [
    (["generate", "--run", "{tmp}", "-n", "0", "--out", "{tmp}/x.csv"], "-n must be"),
    (["generate", "--run", "{tmp}", "-n", "5", "--out", "{tmp}/x.txt"], ".csv or"),
    (["generate", "--run", "{tmp}/nope", "-n", "5", "--out", "{tmp}/x.csv"], "no such"),
    (["generate", "--run", "{tmp}", "-n", "5", "--out", "{tmp}/x.csv"], "no GAN"),
    (["score", "--in", "{tmp}/nope.csv", "--out", "{tmp}/s.csv"], "no such file"),
    (["score", "--in", "{sample}", "--out", "{tmp}/s.json"], ".csv or"),
    (["score", "--in", "{sample}", "--out", "{tmp}/s.csv",
      "--tracking-uri", "sqlite:///{tmp}/none.db"], "no champion model yet"),
    (["score", "--in", "{sample}", "--out", "{tmp}/s.csv", "--model-uri", "m:/x"],
     "expected models:/NAME@ALIAS"),
    (["run", "--data", "{tmp}/nope.csv"], "no such file"),
    (["run", "--data", "{sample}", "--dask-address", "tcp://h:1"], "needs --task"),
    (["run", "--data", "{sample}", "--task-runner", "dask", "--dask-address", "h:x"],
     "bad port"),
    (["run", "--data", "{sample}", "--tracking-uri", "http://127.0.0.1:9"],
     "not reachable"),
    (["serve", "--data", "{sample}", "--cron", "61 * * * *"], "not a cron"),
    (["serve", "--data", "{sample}", "--timezone", "Mars/Base"], "time zone"),
]  # fmt: skip


@pytest.mark.parametrize("argv, message", REFUSALS)
def test_refusals_come_before_any_heavy_import(tmp_path, sample_path, argv, message):
    argv = [a.format(tmp=tmp_path, sample=sample_path) for a in argv]
    probe = (
        "import sys, json; from flows.cli import main; rc = main(sys.argv[1:]); "
        "heavy = [m for m in ('tensorflow', 'keras', 'xgboost', 'prefect', 'pandas') "
        "if m in sys.modules]; print(json.dumps([rc, heavy]))"
    )
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )
    elapsed = time.perf_counter() - started
    rc, heavy = json.loads(proc.stdout.strip().splitlines()[-1])
    assert rc == 2 and heavy == [], (proc.stderr, heavy)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert elapsed < 60  # (a hang guard; the latency itself is benchmarked)


# -- streaming generation -----------------------------------------------------------
@pytest.mark.slow
def test_chunked_generation_equals_one_generation(finished_run):
    from pipeline.gan.generate import gan_dir_of_run, iter_transactions

    result, reports = finished_run
    gan_dir = gan_dir_of_run(reports / result["run_id"], 0)
    n = 20_001  # crosses the sampler's 8,192-row blocks
    whole = list(iter_transactions(gan_dir, n, random_state=3, chunk_rows=n))
    assert len(whole) == 1
    for chunk_rows in (1_000, 8_192, 12_345):
        chunks = list(
            iter_transactions(gan_dir, n, random_state=3, chunk_rows=chunk_rows)
        )
        assert [len(c) for c in chunks[:-1]] == [chunk_rows] * (len(chunks) - 1)
        pd.testing.assert_frame_equal(
            pd.concat(chunks, ignore_index=True), whole[0], check_exact=True
        )
    other = next(iter_transactions(gan_dir, 100, random_state=4))
    assert not np.allclose(other.to_numpy(), whole[0].head(100).to_numpy())


@pytest.mark.slow
def test_generate_is_quiet_and_its_chunks_make_one_file(finished_run, tmp_path):
    result, reports = finished_run
    run_dir = str(reports / result["run_id"])
    outs = {}
    for chunk_rows in ("700", "32768"):
        out = tmp_path / f"g{chunk_rows}.parquet"
        proc = subprocess.run(
            [FRAUDAUG, "generate", "--run", run_dir, "-n", "5000", "--out", str(out),
             "--seed", "2", "--chunk-rows", chunk_rows],
            capture_output=True, text=True, timeout=300, env=_env(),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert foreign_lines(proc.stderr) == [], proc.stderr
        assert "on CPU" in proc.stderr or "on GPU 0" in proc.stderr
        assert "generating: done, 5,000 rows" in proc.stderr  # not a TTY: plain lines
        outs[chunk_rows] = pd.read_parquet(out)
    assert list(outs["700"].columns) == list(COLUMNS) and len(outs["700"]) == 5000
    pd.testing.assert_frame_equal(outs["700"], outs["32768"])
    assert not list(tmp_path.glob(".*"))  # no temporary file left


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killing_generate_midway_leaves_no_output(finished_run, tmp_path, sig):
    result, reports = finished_run
    out = tmp_path / "big.parquet"
    proc = subprocess.Popen(
        [FRAUDAUG, "generate", "--run", str(reports / result["run_id"]),
         "-n", "30000000", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip
    deadline = time.monotonic() + 240
    # Wait until rows are being written into the temporary file.
    while not any(p.stat().st_size > 1 << 20 for p in tmp_path.glob(".big.parquet*")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "generate never started writing"
        time.sleep(0.2)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert not out.exists()
    if sig == signal.SIGKILL:
        # Nothing can run on SIGKILL: only the hidden temporary file remains.
        assert proc.returncode == -signal.SIGKILL
        assert all(p.name.startswith(".big.parquet.") for p in tmp_path.iterdir())
    else:
        assert proc.returncode == 143, stderr  # (Ctrl-C unwinds the same way: 130)
        assert "nothing was written" in stderr.strip().splitlines()[-1]
        assert list(tmp_path.iterdir()) == []


def test_table_writer_appends_chunks_and_leaves_nothing_on_error(tmp_path):
    frame = pd.DataFrame({"a": np.arange(10) / 4 + 0.1, "flag": np.arange(10) % 2 == 0})
    for name in ("t.csv", "t.parquet"):
        with TableWriter(tmp_path / name) as writer:
            writer.write(frame.iloc[:4])
            writer.write(frame.iloc[4:])
            assert not (tmp_path / name).exists()  # not before it is complete
        read = pd.read_csv if name.endswith(".csv") else pd.read_parquet
        pd.testing.assert_frame_equal(read(tmp_path / name), frame)
    assert (tmp_path / "t.csv").read_text().startswith('"a","flag"\n')
    with pytest.raises(RuntimeError), TableWriter(tmp_path / "u.parquet") as writer:
        writer.write(frame)
        raise RuntimeError("boom")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.parquet"]
    with pytest.raises(ConfigError, match="expected a .csv or .parquet"):
        TableWriter(tmp_path / "t.json")


# -- streaming scoring --------------------------------------------------------------
def test_batches_are_the_file_and_errors_name_the_files_row(tmp_path, sample_path):
    full, _ = read_transactions(sample_path)
    features = full.drop(columns="Class")
    batches = list(iter_unlabelled(sample_path, batch_bytes=1 << 20))
    assert len(batches) > 5
    assert [first for _, first, _ in batches] == list(
        np.cumsum([0] + [len(f) for f, _, _ in batches[:-1]])
    )
    assert batches[-1][2] == pytest.approx(1.0)
    pd.testing.assert_frame_equal(
        pd.concat([f for f, _, _ in batches], ignore_index=True), features
    )
    parquet = tmp_path / "x.parquet"
    full.to_parquet(parquet)
    parts = [f for f, _, _ in iter_unlabelled(parquet, batch_rows=3_000)]
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), features)

    lines = features.to_csv(index=False).splitlines()
    cases = {
        # a text cell, a short line, an empty cell, a negative amount: all far past
        # the first batch, so the row and line are the file's, not the batch's
        15_000: ("abc", r"column V3, row 15000 \(line 15002\): found 'abc'"),
        12_000: ("short", r"line 12002: found 28 fields, expected 30"),
        18_000: ("", r"column V3, row 18000 \(line 18002\): missing value"),
        19_000: ("-5", r"column Amount, row 19000 \(line 19002\): found -5"),
    }
    for row, (value, message) in cases.items():
        bad = list(lines)
        cells = bad[row + 1].split(",")
        if value == "short":
            cells = cells[:-2]
        elif value == "-5":
            cells[FEATURES.index("Amount")] = "-5"
        else:
            cells[FEATURES.index("V3")] = value
        bad[row + 1] = ",".join(cells)
        path = tmp_path / f"bad{row}.csv"
        path.write_text("\n".join(bad) + "\n")
        with pytest.raises(DataValidationError, match=message):
            for _ in iter_unlabelled(path, batch_bytes=1 << 20):
                pass


@pytest.mark.slow
def test_score_streams_the_input_and_matches_the_champion(finished_run, tmp_path):
    from tests.helpers import champion_scores

    result, reports = finished_run
    metrics = json.loads((reports / result["run_id"] / "metrics.json").read_text())
    sample = metrics["data"]["path"]
    out = tmp_path / "scores.parquet"
    # By alias, from the MLflow server the run registered its champion on.
    proc = subprocess.run(
        [FRAUDAUG, "score", "--in", sample, "--out", str(out),
         "--tracking-uri", result["tracking_uri"]],
        capture_output=True, text=True, timeout=300, env=_env(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert foreign_lines(proc.stderr) == [], proc.stderr
    scores = pd.read_parquet(out)
    frame, _ = read_transactions(sample)
    expected, _ = champion_scores(frame.drop(columns="Class"), result["tracking_uri"])
    pd.testing.assert_frame_equal(scores, expected)
    assert "scored 20,000 rows with models:/fraudaug-detector/" in proc.stdout
    assert f"from run {result['run_id']}" in proc.stdout


# -- quiet by default ---------------------------------------------------------------
def test_native_log_lines_are_recognised():
    assert is_native_log_line(
        "I0000 00:00:1796313064.534659    3034 cudart_stub.cc:31] Could not find cuda"
    )
    assert is_native_log_line(
        "E0000 00:00:1796313079.561689    3040 cuda_platform.cc:52] failed call"
    )
    assert is_native_log_line(
        "WARNING: All log messages before absl::InitializeLog() is called are written"
    )
    assert is_native_log_line(
        "2025-09-17 14:44:05.157831: I external/local_xla/xla/tsl/cuda/cudart_stub.cc:"
        "32] Could not find cuda drivers"
    )
    assert not is_native_log_line("fraudaug: error: x.csv: no such file")
    assert not is_native_log_line("12:00:01.123 | INFO    | pipeline.run.fit - split 0")


def test_tensorflow_loads_quietly_and_keeps_other_lines(tmp_path):
    code = (
        "import os, sys; os.write(2, b'before\\n'); "
        "from pipeline.core.backend import load_tensorflow, describe_device; "
        "tf = load_tensorflow(); print(describe_device()); "
        "import warnings; warnings.warn('a warning of ours')"
    )
    quiet = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(),
        timeout=300,
    )  # fmt: skip
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.strip() == "CPU" or quiet.stdout.startswith("GPU 0: ")
    assert not [line for line in quiet.stderr.splitlines() if is_native_log_line(line)]
    assert "before" in quiet.stderr and "a warning of ours" in quiet.stderr
    loud = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True,
        env=_env(FRAUDAUG_TF_LOGS="1"), timeout=300,
    )  # fmt: skip
    if quiet.stdout.strip() == "CPU":  # the CUDA stub logs only without a GPU
        assert [line for line in loud.stderr.splitlines() if is_native_log_line(line)]


# -- Dask workers must see the paths ---------------------------------------------------
@pytest.mark.slow
def test_a_dask_worker_that_cannot_see_the_paths_fails_with_one_line(
    tmp_path, sample_path, capsys
):
    from distributed import Client

    from flows.cli import main
    from pipeline.core.paths import check_workers

    here = tmp_path / "flow"
    elsewhere = tmp_path / "elsewhere"
    (here / "reports").mkdir(parents=True)
    elsewhere.mkdir()
    (here / "frame.parquet").write_bytes(b"PAR1")
    dask = str(Path(sys.executable).with_name("dask"))
    env = _env()
    scheduler = subprocess.Popen(
        [dask, "scheduler", "--host", "127.0.0.1", "--port", "0",
         "--dashboard-address", ":0", "--scheduler-file", str(tmp_path / "s.json")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    workers = []
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "s.json").is_file():
            assert time.monotonic() < deadline and scheduler.poll() is None
            time.sleep(0.2)
        for cwd in (here, elsewhere):  # the second stands for another machine
            workers.append(
                subprocess.Popen(
                    [
                        dask,
                        "worker",
                        "--scheduler-file",
                        str(tmp_path / "s.json"),
                        "--nworkers",
                        "1",
                        "--nthreads",
                        "1",
                        "--host",
                        "127.0.0.1",
                        "--no-dashboard",
                    ],
                    cwd=cwd,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=env,
                )  # fmt: skip
            )
        with Client(scheduler_file=str(tmp_path / "s.json"), timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
            absolute = {"read": [str(here / "frame.parquet")], "write": [str(here)]}
            check_workers(client, **absolute)  # both see absolute paths
            address = client.scheduler.address
            os.chdir(here)
            try:
                with pytest.raises(ConfigError) as info:
                    check_workers(client, read=["frame.parquet"], write=["reports"])
                # As a user meets it: relative paths (the cache is data/interim),
                # refused before Prefect starts.
                code = main(
                    ["run", "--data", str(sample_path), "--task-runner", "dask",
                     "--dask-address", address]
                )  # fmt: skip
            finally:
                os.chdir(ROOT)
            assert code == 2
            last = capsys.readouterr().err.strip().splitlines()[-1]
            assert re.match(
                r"fraudaug: error: Dask worker tcp://127\.0\.0\.1:\d+: cannot read "
                r"data/interim/stages/ingest/\w+/table\.parquet",
                last,
            )
            assert list((here / "reports").iterdir()) == []  # no run was started
    finally:
        for proc in (*workers, scheduler):
            proc.terminate()
        for proc in (*workers, scheduler):
            proc.wait(30)
    message = str(info.value)
    assert "\n" not in message
    assert re.match(
        r"Dask worker tcp://127\.0\.0\.1:\d+: cannot read frame\.parquet", message
    )
    assert "same paths" in message and "absolute" in message
