"""Architecture rules: the library never imports Prefect; nothing uses pickle."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_pipeline_never_imports_prefect():
    modules = sorted(
        "pipeline." + ".".join(p.relative_to(ROOT / "pipeline").with_suffix("").parts)
        for p in (ROOT / "pipeline").rglob("*.py")
        if p.name not in {"__init__.py", "__main__.py"}
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'prefect'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_validate_does_not_import_tensorflow():
    code = (
        "import sys, pipeline.cli, pipeline.ingest, pipeline.config, pipeline.stages\n"
        "print('tensorflow' in sys.modules, 'keras' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False False"


def test_no_pickle_anywhere():
    names = r"(c?pickle|joblib|cloudpickle|dill|shelve)"
    pattern = re.compile(
        rf"\b(import {names}\b|from {names} import|safe_mode\s*=\s*False)"
    )
    offenders = [
        str(p)
        for folder in ("pipeline", "flows")
        for p in (ROOT / folder).rglob("*.py")
        if pattern.search(p.read_text())
    ]
    assert offenders == []
