"""The documentation site builds offline with no warning, and a broken link
fails the build (``make docs``)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT  # noqa: E402

pytestmark = pytest.mark.slow


def _build(docs: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(docs / "mkdocs.yml"),
         "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip


def test_the_site_builds_with_no_warning_and_its_generated_pages(tmp_path):
    out = _build(ROOT / "docs", tmp_path / "site")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "WARNING" not in out.stderr
    cli = (tmp_path / "site" / "cli.html").read_text()
    for command in ("fetch-data", "run", "serve", "score", "alerts", "retention"):
        assert f"fraudaug {command}</code>" in cli
    results = (tmp_path / "site" / "results.html").read_text()
    for name in (ROOT / "benchmarks" / "results").glob("*.json"):
        assert name.name in results
    api = (tmp_path / "site" / "api" / "registry.html").read_text()
    assert "pipeline.registry.champion.decide" in api


def test_a_broken_link_fails_the_build(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(
        ROOT / "docs", docs, ignore=shutil.ignore_patterns("site", "__pycache__")
    )
    page = docs / "pages" / "failures.md"
    page.write_text(page.read_text() + "\nSee [the missing page](missing.md).\n")
    # The hooks find the project from their own folder: point them back at it.
    hooks = docs / "hooks.py"
    hooks.write_text(
        hooks.read_text().replace(
            "ROOT = Path(__file__).resolve().parent.parent",
            f"ROOT = Path({str(ROOT)!r})",
        )
    )
    config = docs / "mkdocs.yml"
    config.write_text(config.read_text().replace("paths: [..]", f"paths: [{ROOT}]"))
    out = _build(docs, tmp_path / "site")
    assert out.returncode != 0
    assert "contains a link 'missing.md', but the target is not found" in out.stderr
