"""Architecture rules: the floors (each package imports only those below it, no
circle), the library never imports Prefect, nothing uses pickle, every artifact
name is spelled once."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT  # noqa: E402


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter's contracts of ``root``'s pyproject.toml, on its packages."""
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(no_cache=True, no_logo=True))"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_floors_hold():
    out = _lint_imports(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_the_floors_catch_an_import_up_a_floor(tmp_path):
    for folder in ("pipeline", "flows"):
        shutil.copytree(
            ROOT / folder,
            tmp_path / folder,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    errors = tmp_path / "pipeline" / "core" / "errors.py"
    errors.write_text(errors.read_text() + "\nfrom pipeline.run import folders\n")
    out = _lint_imports(tmp_path)
    assert out.returncode != 0
    assert "pipeline.core is not allowed to import pipeline.run" in out.stdout
    assert "pipeline.core.errors -> pipeline.run.folders" in out.stdout


def _circles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others
    (strongly connected components of more than one module; Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(imports.get(module, ())):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_itself_through_others():
    """No circle, and no exception in the floors contract: every import goes
    down (the config holds method names; the run's plan checks them against the
    registry, a floor above)."""
    import tomllib

    import grimp

    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert [
        c.get("ignore_imports")
        for c in contract["tool"]["importlinter"]["contracts"]
        if c.get("ignore_imports")
    ] == []
    graph = grimp.build_graph("pipeline", "flows", cache_dir=None)
    imports = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    assert _circles(imports) == []


def test_the_circle_check_sees_a_circle():
    imports = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert _circles(imports) == [["a", "b", "c"]]


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
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert out.stdout.strip() == "[]"


def test_validate_does_not_import_tensorflow():
    code = (
        "import sys, flows.cli, pipeline.data.ingest, pipeline.core.config\n"
        "import pipeline.run.prepare, pipeline.run.fit, pipeline.run.conclude\n"
        "print('tensorflow' in sys.modules, 'keras' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
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
    """``(line, constant)`` for each artifact name of pipeline.core.layout that
    ``text`` types again: a file name as any string literal, a folder name as a
    path part ("gan" is also a config section), and ``split-{``."""
    from pipeline.core import layout

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
    """File and folder names come from pipeline.core.layout: no other module of the
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


METHOD_MODULES = {
    "baseline.py",
    "over_sampling.py",
    "under_sampling.py",
    "combine.py",
    "generative.py",
}
"""Where the built-in methods are declared (pipeline/resampling/)."""


def _typed_method_names(text: str, suffix: str) -> list[tuple[int, str]]:
    """``(line, name)`` for each built-in method's name that ``text`` types: a
    Python string constant that is exactly the name, or a quoted name in a
    template. ``none`` is also a plain word (a GAN filter, a status, an amount
    kind): for it, only a record's method or baseline compared with it counts."""
    import ast

    from pipeline.resampling import registry

    names = set(registry.built_in_names()) - {"none"}
    found: list[tuple[int, str]] = []
    if suffix == ".py":
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append((node.lineno, node.value))
    else:
        for match in re.finditer(r"[\"']([a-z_]+)[\"']", text):
            if match.group(1) in names:
                found.append((text.count("\n", 0, match.start()) + 1, match.group(1)))
    pattern = (
        r"""(\[["'](method|baseline)["']\]|\.(method|baseline))\s*[!=]=\s*"""
        r"""["']none["']"""
    )
    for match in re.finditer(pattern, text):
        found.append((text.count("\n", 0, match.start()) + 1, "none"))
    return found


def test_no_method_name_is_typed_outside_its_declaration():
    """The built-in methods are declared once (their family's module under
    pipeline/resampling/); the config, the run, the comparison, the report, the
    CLI and the flow read the registry."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for folder in ("pipeline", "flows")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in (".py", ".j2")
        and not (path.parent.name == "resampling" and path.name in METHOD_MODULES)
        for line, name in _typed_method_names(path.read_text(), path.suffix)
    ]
    assert offenders == []


def test_the_method_name_check_sees_a_typed_name():
    python = (
        'if method == "smote_enn":\n'
        '    kind = "none"\n'
        'plain = [r for r in rows if r["method"] == "none"]\n'
    )
    assert _typed_method_names(python, ".py") == [(1, "smote_enn"), (3, "none")]
    template = '{% for name in ("cwgan_gp", "real_train") %}{{ c.baseline == "none" }}'
    assert _typed_method_names(template, ".j2") == [(1, "cwgan_gp"), (1, "none")]


LONGEST_FUNCTION = 80
"""Lines from a function's ``def`` (or first decorator) to its end, docstring
included: past it, a function does more than one job."""


def _long_functions(text: str) -> list[tuple[str, int]]:
    """The functions of a module's ``text`` longer than :data:`LONGEST_FUNCTION`
    lines: (name, lines)."""
    import ast

    return [
        (node.name, node.end_lineno - first + 1)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for first in [min([d.lineno for d in node.decorator_list] + [node.lineno])]
        if node.end_lineno - first + 1 > LONGEST_FUNCTION
    ]


def test_no_function_is_longer_than_eighty_lines():
    offenders = [
        f"{path.relative_to(ROOT)}: {name} ({lines} lines)"
        for folder in ("pipeline", "flows")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for name, lines in _long_functions(path.read_text())
    ]
    assert offenders == []


def test_the_length_check_sees_a_long_function():
    body = "".join(f"    x{i} = {i}\n" for i in range(LONGEST_FUNCTION))
    text = f"@cache\ndef long():\n{body}\n\ndef short():\n    return 1\n"
    assert _long_functions(text) == [("long", LONGEST_FUNCTION + 2)]
