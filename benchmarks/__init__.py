"""Benchmarks: scripts that print JSON and keep their results in ``results/``.

Speed, memory and quality targets live here, never as assertions in the tests.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def write_result(result: dict[str, Any], name: str, out: str | Path | None) -> Path:
    """Write ``result`` as JSON to ``out`` (default ``results/NAME-DATE.json``,
    today's UTC date) atomically, and print it."""
    from pipeline.core.artifacts import save_text

    path = Path(out) if out else RESULTS / f"{name}-{datetime.now(UTC):%Y-%m-%d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2, ensure_ascii=False)
    save_text(path, text + "\n")
    print(text)
    return path


def rounded(value: Any, digits: int = 4) -> Any:
    """``value`` with every float in it (in lists and dicts too) rounded to
    ``digits``: how results files write their figures."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, list):
        return [rounded(v, digits) for v in value]
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    return value
