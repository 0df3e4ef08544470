"""Reading a partitioned source: ``python -m benchmarks.partitions DATA --schema FILE``.

Writes the rows of ``DATA`` (a multi-day table with a time column, e.g.
``fraudaug demo-data --kind transactions --rows 350000``) as they are, as one
Parquet file and as one Parquet file per day (``fraudaug replay``), then
ingests, each in a fresh subprocess with an empty cache (as a first run does):
the one file, the folder of daily partitions, the folder again (the
cache hit) and the folder after one more day arrived (one partition parsed).
Prints one JSON object: wall seconds and peak RSS of each, the folder/file ratio
of the median times (the target is <= 1.2), and writes it to
``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"

_INGEST = (
    "import sys, json, resource, time\n"
    "from pipeline.data.schema import load_schema\n"
    "from pipeline.run.prepare import stage_ingest\n"
    "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
    "t = time.perf_counter()\n"
    "r = stage_ingest(sys.argv[1], sys.argv[2], load_schema(sys.argv[3]))\n"
    "print(json.dumps({'seconds': time.perf_counter() - t, 'rows': r['rows'],\n"
    "  'cached': r['cached'], 'rss_after_imports_mb': before, 'peak_rss_mb':\n"
    "  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
)


def _ingest(source: str | Path, cache: Path, schema: str) -> dict:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _INGEST, str(source), str(cache), schema],
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise RuntimeError(f"ingest of {source} failed: {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_seconds"] = time.perf_counter() - start
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="a multi-day table (.parquet or .csv)")
    parser.add_argument("--schema", required=True, help="its schema file")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    from pipeline.data.reading import read_raw
    from pipeline.data.replay import plan_partitions, replay
    from pipeline.data.schema import load_schema

    schema = load_schema(args.schema)
    n_days = sum(1 for _ in plan_partitions(args.data, schema))
    result: dict = {"data": str(args.data), "partitions": n_days - 1}
    with tempfile.TemporaryDirectory(prefix="fraudaug-bench-") as tmp:
        tmp = Path(tmp)
        # The same rows, as they are in the file: one Parquet file, and one
        # Parquet file per day (the newest day held back).
        one = tmp / "one.parquet"
        frame = read_raw(args.data, schema)
        frame.sort_values(schema.time, kind="stable").to_parquet(one, index=False)
        result["rows"] = len(frame)
        del frame
        folder = tmp / "daily"
        replay(args.data, folder, schema=schema, upto=n_days - 1)
        runs: dict[str, list[dict]] = {"file": [], "folder": []}
        for i in range(args.repeats):  # alternate, each with an empty cache
            runs["file"].append(_ingest(one, tmp / f"cache-file-{i}", args.schema))
            runs["folder"].append(
                _ingest(folder, tmp / f"cache-folder-{i}", args.schema)
            )
        cache = tmp / "cache-folder-0"
        result["folder_cached"] = _ingest(folder, cache, args.schema)
        replay(args.data, folder, schema=schema)  # the newest day arrives
        result["folder_one_new_day"] = _ingest(folder, cache, args.schema)
    result["file"] = runs["file"]
    result["folder"] = runs["folder"]
    # Medians: single runs on a shared 2-core machine move by 2x.
    median = {k: float(np.median([r["seconds"] for r in v])) for k, v in runs.items()}
    result["median_seconds"] = {k: round(v, 3) for k, v in median.items()}
    result["folder_over_file"] = round(median["folder"] / median["file"], 3)
    result["peak_rss_mb"] = {
        k: max(r["peak_rss_mb"] for r in v) for k, v in runs.items()
    }
    result["cpu_count"] = len(os.sched_getaffinity(0))
    result["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"partitions-{result['measured_at'][:10]}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
