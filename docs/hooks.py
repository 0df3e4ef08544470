"""MkDocs hooks: the pages made from the code and the measurements, so that no
option and no figure is typed by hand twice.

* ``api/<package>.md``: one page per package of ``pipeline`` (and ``flows``),
  every module of it rendered by mkdocstrings from its docstrings;
* ``cli.md``: the command reference appended from ``flows.cli.build_parser()``;
* ``methods.md``: the built-in methods appended from the method registry;
* ``metrics-schema.md`` (and ``metrics.schema.json``): the JSON Schema of
  ``metrics.json``, from the models that write it;
* ``results.md``: every ``benchmarks/results/*.json`` as tables (their charts
  beside it, ``results/*.svg``).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PACKAGES = [
    "core",
    "data",
    "features",
    "evaluation",
    "gan",
    "resampling",
    "detector",
    "registry",
    "report",
    "run",
]


def api_page(package: str) -> str:
    """The API page of ``pipeline.<package>`` (or ``flows``): its modules, read
    from the folder (nothing is imported: importing ``pipeline.gan`` would load
    TensorFlow)."""
    name = "flows" if package == "flows" else f"pipeline.{package}"
    folder = ROOT.joinpath(*name.split("."))
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
    modules = sorted(
        p.relative_to(folder).with_suffix("").as_posix().replace("/", ".")
        for p in [*folder.glob("*.py"), *folder.glob("*/*.py")]
        if not p.stem.startswith("_") and p.stem != "__main__"
    )
    # A subpackage (flows.commands): its own docstring, then its modules.
    modules = sorted({*modules, *(p.parent.name for p in folder.glob("*/__init__.py"))})
    lines = [f"# `{name}`", "", " ".join(doc.split("\n\n")[0].split()), ""]
    for module in modules:
        lines += [f"::: {name}.{module}", "    options:", "      heading_level: 2", ""]
    return "\n".join(lines)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def cli_reference() -> str:
    """Every command of ``fraudaug`` with its arguments, from the parser itself."""
    from flows.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub._choices_actions}
    lines = ["## Reference", "", "Generated from `flows.cli.build_parser()`.", ""]
    for name, command in sub.choices.items():
        lines += [f"### `fraudaug {name}`", "", _cell(helps.get(name) or ""), ""]
        usage = command.format_usage().removeprefix("usage: ").strip()
        lines += ["```", usage, "```", ""]
        rows = []
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            flags = ", ".join(action.option_strings) or action.dest
            default = action.default
            shown = (
                ""
                if default in (None, False, [], argparse.SUPPRESS) or action.required
                else f"`{default}`"
            )
            choices = (
                " (" + ", ".join(map(str, action.choices)) + ")"
                if action.choices
                else ""
            )
            rows.append(
                f"| `{flags}` | {_cell((action.help or '') + choices)} | {shown} |"
            )
        if rows:
            lines += ["| argument | what | default |", "|---|---|---|", *rows, ""]
    return "\n".join(lines)


def _is_cell(value: Any) -> bool:
    """A scalar, or a short list of scalars (an interval): one table cell."""
    if isinstance(value, list):
        return len(value) <= 4 and all(not isinstance(v, (dict, list)) for v in value)
    return not isinstance(value, dict)


def _table(records: list[dict[str, Any]]) -> list[str]:
    """A list of records as a table of their scalar fields (and intervals)."""
    columns: list[str] = []
    for record in records:
        for key, value in record.items():
            if key not in columns and _is_cell(value):
                columns.append(key)
    if not columns:
        return []
    lines = [
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for record in records:
        lines.append("| " + " | ".join(_value(record.get(c)) for c in columns) + " |")
    return lines + [""]


def _value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return _cell(value)


def _section(value: Any, title: str, level: int) -> list[str]:
    """A JSON value under a heading: scalars as a two-column table, lists of
    records as a table, nested objects as subsections (three levels deep)."""
    lines = [f"{'#' * level} {title}", ""]
    if isinstance(value, list):
        records = [v for v in value if isinstance(v, dict)]
        nested = any(not _is_cell(v) for r in records for v in r.values())
        if nested and len(records) <= 12 and level < 5:
            # A few records holding tables of their own (e.g. runs): one
            # subsection each, named by its label.
            for i, record in enumerate(records):
                name = record.get("label") or record.get("name") or f"{title} {i}"
                lines += _section(record, _cell(name), level + 1)
            return lines
        lines += _table(records) if records else [_cell(value), ""]
        return lines
    if not isinstance(value, dict):
        return lines + [_value(value), ""]
    scalars = {k: v for k, v in value.items() if _is_cell(v)}
    if scalars:
        lines += ["| | |", "|---|---|"]
        lines += [f"| {_cell(k)} | {_value(v)} |" for k, v in scalars.items()]
        lines.append("")
    for key, inner in value.items():
        if not _is_cell(inner):
            if level >= 5:
                lines += [f"`{key}`: see the JSON file.", ""]
            else:
                lines += _section(inner, _cell(key), level + 1)
    return lines


def results_page() -> str:
    """Every benchmark result file, newest name last, as tables."""
    lines = [
        "# Results",
        "",
        "Every file of `benchmarks/results/` as it was written by its benchmark "
        "(generated: the figures are the JSON's own). What each benchmark measures "
        "and how to run it: [Benchmarks](benchmarks.md).",
        "",
    ]
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        data = json.loads(path.read_text())
        lines += _section(data, f"`{path.name}`", 2)
    return "\n".join(lines)


def metrics_schema_page() -> str:
    """``metrics-schema.md``: how to read ``metrics.json`` from a dashboard, then
    its JSON Schema, generated from the models that write it
    (``pipeline.evaluation.records``); the schema also as a file beside it."""
    from pipeline.evaluation.records import metrics_json_schema

    schema = json.dumps(metrics_json_schema(), indent=2)
    return "\n".join(
        [
            "# metrics.json: its schema",
            "",
            "Every run writes `reports/<run_id>/metrics.json`; a dashboard reads",
            "it as plain JSON. Its shape is owned by typed models: every key is",
            "declared once, a run that would write a key no model owns fails",
            "instead of writing it, and `schema_version` changes when a key",
            "changes meaning.",
            "",
            "In Python, read and check one with the models:",
            "",
            "```python",
            "from pipeline.evaluation.records import load_metrics",
            "",
            'metrics = load_metrics("reports/latest/metrics.json")',
            "print(metrics.comparison.headline)",
            "for fit in metrics.results:",
            "    print(fit.method, fit.split, fit.auprc)",
            "```",
            "",
            "From another language, validate against the JSON Schema:",
            "[metrics.schema.json](metrics.schema.json) (JSON Schema draft 2020-12).",
            "",
            "## Reference",
            "",
            "Generated from `pipeline.evaluation.records.RunMetrics`.",
            "",
            "```json",
            schema,
            "```",
            "",
        ]
    )


def on_files(files, config):
    from pipeline.evaluation.records import metrics_json_schema

    files.append(
        File.generated(config, "metrics-schema.md", content=metrics_schema_page())
    )
    files.append(
        File.generated(
            config,
            "metrics.schema.json",
            content=json.dumps(metrics_json_schema(), indent=2),
        )
    )
    for package in [*PACKAGES, "flows"]:
        files.append(
            File.generated(config, f"api/{package}.md", content=api_page(package))
        )
    files.append(File.generated(config, "results.md", content=results_page()))
    for chart in sorted((ROOT / "benchmarks" / "results").glob("*.svg")):
        files.append(
            File.generated(config, f"results/{chart.name}", content=chart.read_bytes())
        )
    return files


_ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|exc):<code>~?([\w.]+)</code>")


def on_page_content(html, page, config, files):
    """Docstrings speak Sphinx (``:func:`pipeline.x.y```): shown as code, the
    name shortened as Sphinx shortens ``~`` names."""
    if not page.file.src_uri.startswith("api/"):
        return html
    return _ROLE.sub(lambda m: f"<code>{m.group(1).rsplit('.', 1)[-1]}</code>", html)


def methods_reference() -> str:
    """Every built-in method, from the registry that the config, the run and the
    report read (its declarations import no sampler)."""
    from pipeline.resampling import registry

    lines = [
        "## Reference: the built-in methods",
        "",
        "Generated from `pipeline.resampling.registry`, in report order.",
        "",
        "| method | family | amount | neighbours | categorical columns | "
        "what it does |",
        "|---|---|---|---|---|---|",
    ]
    for m in registry.built_in_methods():
        lines.append(
            f"| `{m.name}` | {m.family} | {m.amount} | "
            f"{'yes' if m.neighbours else 'no'} | {_cell(m.categorical)} | "
            f"{_cell(m.summary)} |"
        )
    return "\n".join(lines)


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "cli.md":
        return markdown.rstrip("\n") + "\n\n" + cli_reference() + "\n"
    if page.file.src_uri == "methods.md":
        return markdown.rstrip("\n") + "\n\n" + methods_reference() + "\n"
    return markdown
