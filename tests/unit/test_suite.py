"""The suite's own hygiene: a test session that leaves a process running fails,
names it and stops it."""

import os
import subprocess
import sys

import psutil

from tests.helpers import ROOT

LEAKS = """
import subprocess, sys

def test_leaves_a_process_behind():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                     start_new_session=True)  # an orphan once the session ends
"""


def test_a_session_that_leaves_a_process_running_fails(tmp_path):
    (tmp_path / "test_leak.py").write_text(LEAKS)
    env = {k: v for k, v in os.environ.items() if k != "FRAUDAUG_TEST_SESSION"}
    out = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "tests.conftest", "-q"),
            *("-p", "no:cacheprovider", "--rootdir", str(tmp_path)),
            str(tmp_path / "test_leak.py"),
        ],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "1 passed" in out.stdout
    assert "processes left running by the tests (now killed):" in out.stdout
    assert "time.sleep(300)" in out.stdout
    left = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if "time.sleep(300)" in " ".join(p.info["cmdline"] or [])
    ]
    assert left == []
