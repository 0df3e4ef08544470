"""The suite's own hygiene: what a test starts ends with the test (a test that
passed yet left a process running fails), and a session that leaves a process
running fails, names it and stops it."""

import os
import subprocess
import sys

import psutil

from tests.helpers import ROOT

LEAKS = """
import subprocess, sys

import pytest


def test_leaves_a_process_behind():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(301)"],
                     start_new_session=True)  # an orphan once the session ends


@pytest.fixture(scope="session")
def leaky():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(302)"])


def test_uses_a_session_fixture_that_is_never_stopped(leaky):
    pass
"""


def _pytest(test_file):
    """A pytest session of its own, with the suite's conftest, on ``test_file``."""
    env = {k: v for k, v in os.environ.items() if k != "FRAUDAUG_TEST_SESSION"}
    return subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "tests.conftest", "-q"),
            *("-p", "no:cacheprovider", "--rootdir", str(test_file.parent)),
            str(test_file),
        ],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_leaked_process_is_stopped_and_failed_per_test_and_per_session(tmp_path):
    (tmp_path / "test_leak.py").write_text(LEAKS)
    out = _pytest(tmp_path / "test_leak.py")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "2 passed, 1 error" in out.stdout, out.stdout
    assert "left running by the test (now stopped): " in out.stdout
    assert "ERROR" in out.stdout and "test_leaves_a_process_behind" in out.stdout
    session = out.stdout.split("processes left running by the tests (now killed):")
    assert len(session) == 2, out.stdout
    named = session[1].strip().split("\n\n")[0]  # its lines, before the summary
    assert "time.sleep(302)" in named and "time.sleep(301)" not in named, named
    for seconds in (301, 302):
        left = [
            p.pid
            for p in psutil.process_iter(["cmdline"])
            if f"time.sleep({seconds})" in " ".join(p.info["cmdline"] or [])
        ]
        assert left == [], seconds


def test_a_test_that_fails_still_has_what_it_started_stopped(tmp_path):
    """A failing assertion leaves nothing running either; the test's own
    failure is the one reported."""
    (tmp_path / "test_one.py").write_text(
        "import subprocess, sys\n"
        "def test_one():\n"
        "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(303)'])\n"
        "    assert False\n"
    )
    out = _pytest(tmp_path / "test_one.py")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "1 failed" in out.stdout and " error" not in out.stdout, out.stdout
    assert "processes left running by the tests" not in out.stdout
    assert not [
        p
        for p in psutil.process_iter(["cmdline"])
        if "time.sleep(303)" in " ".join(p.info["cmdline"] or [])
    ]
