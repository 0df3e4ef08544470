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


def _retyped_names(text: str) -> list[tuple[int, str]]:
    """``(line, constant)`` for each artifact name of pipeline.layout that
    ``text`` types again: a file name as any string literal, a folder name as a
    path part ("gan" is also a config section), and ``split-{``."""
    from pipeline import layout

    names = {
        k: v for k, v in vars(layout).items() if k.isupper() and isinstance(v, str)
    }
    names["split_dir"] = "split-{"
    found = []
    for constant, name in names.items():
        quoted = re.escape(name)
        if constant == "split_dir":
            pattern = rf"[\"'/]{quoted}"
        elif "." in name:
            pattern = rf"[\"'/]{quoted}[\"']"
        else:
            pattern = rf"/\s*[\"']{quoted}[\"']|[\"']{quoted}/|/{quoted}/"
        for match in re.finditer(pattern, text):
            found.append((text.count("\n", 0, match.start()) + 1, constant))
    return found


def test_every_artifact_name_is_spelled_once():
    """File and folder names come from pipeline.layout: no other module of the
    library or the flow types one again."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {constant}"
        for folder in ("pipeline", "flows")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.name != "layout.py"
        for line, constant in _retyped_names(path.read_text())
    ]
    assert offenders == []


def test_the_name_check_sees_a_retyped_name():
    text = (
        'history = gan_dir / "history.json"\n'
        "gan = run_dir / 'gan' / name\n"
        'split = run_dir / f"split-{k}"\n'
        'section = config["gan"]\n'
    )
    assert sorted(_retyped_names(text)) == [
        (1, "HISTORY_FILE"),
        (2, "GAN_DIR"),
        (3, "split_dir"),
    ]
