"""The GPU check script runs end to end (on this CPU with --allow-cpu --quick) and
prints the JSON the README's GPU section is made from."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"


def _run(*args, timeout=900):
    env = {**os.environ, "FRAUDAUG_PYTHON": sys.executable}
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU is here")
def test_gpu_check_refuses_a_machine_without_a_gpu(sample_path):
    proc = _run("--data", str(sample_path))
    assert proc.returncode == 2
    assert "no NVIDIA GPU" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_gpu_check_measures_every_variant(sample_path, tmp_path):
    out = tmp_path / "gpu.json"
    proc = _run("--data", str(sample_path), "--allow-cpu", "--quick", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = json.loads(proc.stdout)
    assert printed == json.loads(out.read_text())
    variants = {(v["precision"], v["jit_compile"]): v for v in printed["variants"]}
    assert set(variants) == {
        ("float32", False),
        ("float32", True),
        ("mixed_bfloat16", False),
        ("mixed_bfloat16", True),
    }
    for v in variants.values():
        assert "error" not in v, v
        assert v["trainer_rows_per_s"] > 0 and v["bare_rows_per_s"] > 0
        assert v["generate_rows_per_s"] > 0
        assert v["batch_size"] == 512
    assert printed["device"]["kind"] in ("CPU", "GPU")
    assert printed["quick"] is True
    assert printed["data"]["rows"] == 20_000
    # Compared with the newest committed CPU benchmark.
    baseline = printed["cpu_baseline"]
    assert baseline and baseline["trainer_rows_per_s"] > 0
    assert printed["trainer_speedup_vs_cpu"] == pytest.approx(
        printed["trainer_rows_per_s"] / baseline["trainer_rows_per_s"], abs=0.01
    )
